"""The figure and table of ``docs/pipelines.md``: mean absolute error per TPC-H query and mechanism.

Reads the errors ``benchmarks/bench_tpch.py --json FILE`` wrote (default
``docs/figures/tpch_sf1.json``, the SF 1 measurement the page shows), draws a bar chart
of the mean absolute error per query and mechanism on a log scale into
``docs/figures/tpch_errors.png``, and prints the page's Markdown table (mean and median
absolute error, and each mechanism's mean error over the best fixed clip's).

Run: ``python -m benchmarks.tpch_figure [--json FILE] [--out PNG]`` (needs matplotlib, the
``plots`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"

#: the mechanisms in the order drawn, with their short labels
MECHANISMS = (
    ("R2T (upper_limit 2^30, L=30)", "R2T"),
    ("shifted inverse, EM", "shifted inverse (EM)"),
    ("shifted inverse, binary search", "shifted inverse (binary search)"),
    ("AutoClipSum (no bound, defaults)", "AutoClipSum (private clip)"),
    ("fixed ClipPerUser(0, C), best", "ClipPerUser(0, C), best C = 2^j in hindsight"),
)
BEST = "fixed ClipPerUser(0, C), best"
AUTO = "AutoClipSum (no bound, defaults)"


def _short(x: float) -> str:
    """Three significant digits, thousands separated (``1,230,000``, ``8.64``)."""
    if x >= 1000:
        return f"{float(f'{x:.3g}'):,.0f}"
    return f"{x:.3g}"


def table(results: dict[str, Any]) -> str:
    """The Markdown table: one row per query and mechanism."""
    lines = [
        "| query | mechanism | mean abs. error | median abs. error | mean / best fixed | in expectation |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, q in results["queries"].items():
        best = q["mean_abs_error"][BEST]
        expected = q["expected_abs_error"]
        for key, label in MECHANISMS:
            shown = f"`ClipPerUser(0, 2^{q['best_fixed_clip'].bit_length() - 1})`, best in hindsight" if key == BEST else label
            mean, median = q["mean_abs_error"][key], q["median_abs_error"][key]
            exact = f"{expected['AutoClipSum'] / expected['best fixed']:.2f}×" if key == AUTO else ""
            lines.append(f"| {name} | {shown} | {_short(mean)} | {_short(median)} | {_short(mean / best)}× | {exact} |")
    return "\n".join(lines)


def figure(results: dict[str, Any], out: Path) -> Path:
    """Grouped bars, one group per query, log-scale mean absolute error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(results["queries"])
    width = 0.8 / len(MECHANISMS)
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    x = np.arange(len(names))
    for i, (key, label) in enumerate(MECHANISMS):
        values = [results["queries"][n]["mean_abs_error"][key] for n in names]
        ax.bar(x + (i - (len(MECHANISMS) - 1) / 2) * width, values, width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{n} ({results['queries'][n]['kind']})" for n in names])
    ax.set_ylabel("mean absolute error (log scale)")
    ax.set_title(f"TPC-H SF {results['sf']:g}, customer = user, ε = {results['epsilon']}, {results['releases']} releases each")
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path, default=FIGURES / "tpch_sf1.json")
    parser.add_argument("--out", type=Path, default=FIGURES / "tpch_errors.png")
    args = parser.parse_args()
    results = json.loads(args.json.read_text())
    print(table(results))
    print(f"wrote {figure(results, args.out)}")


if __name__ == "__main__":
    main()
