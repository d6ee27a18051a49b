"""Shared helpers: the command line, the table row, timing, peer discovery, printing, and the backend benchmarks' column and questions."""

from __future__ import annotations

import argparse
import importlib
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from fractions import Fraction
from types import ModuleType

import numpy as np
import numpy.typing as npt

from dpalg.data import OrderWindow, Reductions, SumSpec


def parse_arguments(flags: dict[str, str] | None = None, **integers: int) -> argparse.Namespace:
    """A benchmark script's command line: ``--NAME N`` for each integer keyword (its default; ``_`` is spelt ``-``)
    and an on/off ``--FLAG`` for each entry of ``flags`` (flag name -> help)."""
    parser = argparse.ArgumentParser()
    for name, default in integers.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    for flag, help_text in (flags or {}).items():
        parser.add_argument("--" + flag, action="store_true", help=help_text)
    return parser.parse_args()


@dataclass(frozen=True)
class Row:
    """One line of the table: a dpalg figure next to its baseline from the same run.

    ``ratio`` is always dpalg / baseline; ``better`` says which direction is good
    for this figure ("lower" for errors and times, "higher" for throughputs).
    """

    group: str
    figure: str
    dpalg: float | None
    baseline: float | None
    baseline_name: str
    better: str = "lower"
    unit: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.dpalg is None or self.baseline is None or self.baseline == 0:
            return None
        return self.dpalg / self.baseline


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` wall-clock timings of ``fn()``, in seconds."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def interleaved_medians(fns: Sequence[Callable[[], object]], repeat: int = 5) -> list[float]:
    """Median wall-clock seconds of each function, run in interleaved rounds (one call of each per round).

    Interleaving exposes every function to the same machine load (this machine is
    shared); the median ignores a round disturbed by a burst.
    """
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [sorted(ts)[len(ts) // 2] for ts in times]


@dataclass(frozen=True)
class Releases:
    """Repeated releases of one mechanism: outputs and the mean time of one release."""

    outputs: list[float]
    seconds_each: float

    @property
    def count(self) -> int:
        return len(self.outputs)

    def mae(self, truth: float) -> float:
        return sum(abs(o - truth) for o in self.outputs) / len(self.outputs)

    def mae_se(self, truth: float) -> float:
        """Standard error of the MAE estimate (0 with fewer than two releases)."""
        errs = [abs(o - truth) for o in self.outputs]
        if len(errs) < 2:
            return 0.0
        mean = sum(errs) / len(errs)
        var = sum((e - mean) ** 2 for e in errs) / (len(errs) - 1)
        return math.sqrt(var / len(errs))


def repeat_release(release: Callable[[], float], *, max_releases: int, min_releases: int, time_budget: float) -> Releases:
    """Call ``release`` until ``max_releases`` calls, or ``time_budget`` seconds once ``min_releases`` are done."""
    outputs: list[float] = []
    start = time.perf_counter()
    while len(outputs) < max_releases:
        outputs.append(float(release()))
        if len(outputs) >= min_releases and time.perf_counter() - start > time_budget:
            break
    return Releases(outputs, (time.perf_counter() - start) / len(outputs))


def peer(module: str, distribution: str) -> tuple[ModuleType, str] | tuple[None, str]:
    """Import a peer library: ``(module, "name version")`` or ``(None, reason)``."""
    try:
        dist_version = version(distribution)
    except PackageNotFoundError:
        return None, f"{distribution} not installed (pip install -e '.[compare]')"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = importlib.import_module(module)
    except Exception as exc:  # a broken install must not stop the other figures
        return None, f"{distribution} {dist_version} failed to import: {type(exc).__name__}: {str(exc)[:80]}"
    return mod, f"{distribution} {dist_version}"


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    mag = abs(value)
    if mag >= 1e6 or mag < 1e-3:
        return f"{value:.3g}"
    if mag >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def render(rows: Sequence[Row], *, markdown: bool = False) -> str:
    """The one table (plain text, or Markdown with ``markdown=True``)."""
    header = ["figure", "dpalg", "baseline", "ratio", "better", "baseline is"]
    body = []
    for r in rows:
        unit = f" [{r.unit}]" if r.unit else ""
        ratio = r.ratio
        body.append([
            f"{r.figure}{unit}", _fmt(r.dpalg), _fmt(r.baseline),
            "n/a" if ratio is None else f"{ratio:.3g}", r.better, r.baseline_name + (f" ({r.note})" if r.note else ""),
        ])  # fmt: skip
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)), "  ".join("-" * w for w in widths)]
    for row in body:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:4], widths[1:4])] + [row[4].ljust(widths[4]), row[5]]
        out.append("  ".join(cells))
    return "\n".join(out)


# --- the backends of the reductions seam (bench_polars, bench_spark) -------------------------------


def gappy_column(rows: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """The synthetic column of the backend benchmarks: ``(x, nulls)``, N(50, 10) with 1% NaN in ``x`` and 1% nulls.

    A frame is built from ``x`` with the rows of ``nulls`` null; the numpy column is
    ``x`` with those rows NaN as well (null -> NaN, the data policy).
    """
    gen = np.random.default_rng(0)  # synthetic data only
    x = gen.normal(50, 10, rows)
    x[gen.random(rows) < 0.01] = np.nan
    nulls = gen.random(rows) < 0.01
    return x, nulls


def _bits(x: object) -> object:
    """A value whose equality is bit identity (arrays by their dtype and bytes)."""
    if isinstance(x, OrderWindow):
        return (x.n, x.first, _bits(x.values))
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.tobytes())
    if isinstance(x, (tuple, list)):
        return [_bits(v) for v in x]
    return x


def time_reductions(backends: Sequence[Reductions], rows: int, repeat: int, name: str) -> list[tuple[str, list[float]]]:
    """For each reduction, the interleaved median seconds of every backend (``backends[0]`` is numpy).

    Every backend's answer is first checked bit-identical to numpy's (which is also the warm-up).
    """
    lo, hi = Fraction(0), Fraction(100)
    mid = rows // 2
    questions: list[tuple[str, Callable[[Reductions], object]]] = [
        ("clipped sum + count", lambda r: r.clipped_sums([SumSpec("x", lo, hi, -10)])),
        ("order window (median, 2001 ranks)", lambda r: r.order_window("x", lo, hi, mid - 1000, mid + 1000)),
        ("grid counts (2**20 grid)", lambda r: r.grid_counts("x", lo, hi, 20)),
        ("extremes (k = 1000)", lambda r: r.extremes("x", lo, hi, 1000)),
    ]
    out = []
    for question, ask in questions:
        want = _bits(ask(backends[0]))
        for backend in backends[1:]:
            assert _bits(ask(backend)) == want, f"{question}: {name} differs from numpy"
        calls = [lambda b=b: ask(b) for b in backends]
        out.append((question, interleaved_medians(calls, repeat)))
    return out
