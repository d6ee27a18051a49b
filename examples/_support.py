"""What the example scripts share: the command line, CSV output and the end of a figure.

Not an example itself (tests/test_examples.py runs only the scripts without a leading
underscore). Every script runs as ``python examples/NAME.py``, so this directory is
first on ``sys.path`` and ``from _support import ...`` finds this module. matplotlib is
imported only by the figure helpers, so a script that plots optionally stays usable
without it.
"""

from __future__ import annotations

import argparse
import csv
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

OUT = Path(__file__).parent / "out"


def parse_arguments(
    doc: str | None, small_help: str, *, out: bool = True, more: Callable[[argparse.ArgumentParser], object] | None = None
) -> argparse.Namespace:
    """``--small`` (alias ``--quick``; ``DPALG_EXAMPLES_SMALL=1`` means the same) and, if ``out``, ``--out DIR``.

    ``more`` adds a script's own options. ``args.small`` is True when either the flag or
    the environment variable asks for the small setting.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", "--quick", action="store_true", help=small_help)
    if out:
        parser.add_argument("--out", type=Path, default=OUT, help=f"output directory (default {OUT})")
    if more is not None:
        more(parser)
    args = parser.parse_args()
    args.small = args.small or os.environ.get("DPALG_EXAMPLES_SMALL") == "1"
    return args


def number(value: object) -> float:
    """A table cell that holds a number, as a float."""
    assert isinstance(value, (int, float)), type(value)
    return float(value)


def write_csv(path: Path, rows: Sequence[Mapping[str, object]], fieldnames: Sequence[str] | None = None) -> None:
    """``rows`` as a CSV file with a header (the keys of the first row unless ``fieldnames`` is given)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(fieldnames if fieldnames is not None else rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def label_panel(ax: Axes, title: str, xlabel: str, ylabel: str, *, title_size: float | None = None, legend_size: float = 7) -> None:
    """Title, axis labels and legend of one panel."""
    if title_size is None:
        ax.set_title(title)
    else:
        ax.set_title(title, fontsize=title_size)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=legend_size)


def save(fig: Figure, path: Path, dpi: int = 100) -> None:
    """Lay out ``fig``, write it to ``path`` and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
