"""Benchmark: the polars backend of the reductions seam (issue 17, part 3) against the numpy backend, same run.

Issue 17's goal for polars is "the same reductions <= 2x numpy". Each line times one
reduction of :class:`~dpalg.data.NumpyReductions` (on the numpy column, already in
memory) and of :class:`~dpalg.data.PolarsReductions` on a polars DataFrame and on
a LazyFrame holding the same values (``df.lazy()``), in interleaved rounds (one call
of each per round, the median kept), so that every backend sees the same machine
load. The column is N(50, 10) with 1% nulls and 1% NaN.

| reduction | what it asks |
| --- | --- |
| clipped sum + count | ``clipped_sums([SumSpec(x, 0, 100, -10)])``: the exact lattice sum and the present count |
| order window (median) | ``order_window(x, 0, 100, n/2 - 1000, n/2 + 1000)``: 2001 order statistics |
| grid counts | ``grid_counts(x, 0, 100, 20)``: ExponentialQuantile's default grid |
| extremes | ``extremes(x, 0, 100, 1000)``: what ProposeTest on a mean reads (no goal in the issue) |

Before timing, every polars answer is checked equal to the numpy one. The load
average is printed at the start and at the end: the machine is shared, so only
the ratios mean anything.

Run: ``python -m benchmarks.bench_polars [--rows N] [--small] [--repeat R]``
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import polars as pl

from benchmarks._common import interleaved_medians
from dpalg.data import NumpyReductions, OrderWindow, Reductions, SumSpec, as_dataset, as_reductions


def _same(a: object, b: object) -> bool:
    if isinstance(a, OrderWindow) and isinstance(b, OrderWindow):
        return (a.n, a.first) == (b.n, b.first) and a.values.tobytes() == b.values.tobytes()
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a == b


def measure(rows: int, repeat: int) -> list[tuple[str, list[float]]]:
    """For each reduction: the median seconds of numpy, polars DataFrame and polars LazyFrame."""
    gen = np.random.default_rng(0)  # synthetic data only
    x = gen.normal(50, 10, rows)
    x[gen.random(rows) < 0.01] = np.nan
    nulls = gen.random(rows) < 0.01
    frame = pl.DataFrame({"x": x}).with_columns(pl.when(pl.Series(nulls)).then(None).otherwise(pl.col("x")).alias("x"))
    x[nulls] = np.nan  # the numpy column holds the same values (null -> NaN, the data policy)
    backends: list[Reductions] = [
        NumpyReductions(as_dataset({"x": x})),
        as_reductions(as_dataset(frame)),
        as_reductions(as_dataset(frame.lazy())),
    ]
    lo, hi = Fraction(0), Fraction(100)
    mid = rows // 2
    questions: list[tuple[str, Callable[[Reductions], object]]] = [
        ("clipped sum + count", lambda r: r.clipped_sums([SumSpec("x", lo, hi, -10)])),
        ("order window (median, 2001 ranks)", lambda r: r.order_window("x", lo, hi, mid - 1000, mid + 1000)),
        ("grid counts (2**20 grid)", lambda r: r.grid_counts("x", lo, hi, 20)),
        ("extremes (k = 1000; not a goal of the issue)", lambda r: r.extremes("x", lo, hi, 1000)),
    ]
    out = []
    for name, ask in questions:
        want = ask(backends[0])
        for backend in backends[1:]:
            assert _same(ask(backend), want), f"{name}: polars differs from numpy"
        calls = [lambda b=b: ask(b) for b in backends]
        out.append((name, interleaved_medians(calls, repeat)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--small", action="store_true", help="10^6 rows (a quick check)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = 1_000_000 if args.small else args.rows
    print(f"{rows:,} rows; polars {pl.__version__}, {pl.thread_pool_size()} threads, {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.2f} at start")  # fmt: skip
    print("| reduction | numpy | polars DataFrame | ratio | polars LazyFrame | ratio | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (t_np, t_df, t_lf) in measure(rows, args.repeat):
        print(f"| {name} | {t_np * 1e3:.1f} ms | {t_df * 1e3:.1f} ms | {t_df / t_np:.2f}x | {t_lf * 1e3:.1f} ms | "
              f"{t_lf / t_np:.2f}x | <= 2x |", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
