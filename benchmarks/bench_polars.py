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

Before timing, every polars answer is checked bit-identical to the numpy one. The load
average is printed at the start and at the end: the machine is shared, so only
the ratios mean anything.

Run: ``python -m benchmarks.bench_polars [--rows N] [--small] [--repeat R]``
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

from benchmarks._common import gappy_column, parse_arguments, time_reductions
from dpalg.data import NumpyReductions, Reductions, as_dataset, as_reductions


def measure(rows: int, repeat: int) -> list[tuple[str, list[float]]]:
    """For each reduction: the median seconds of numpy, polars DataFrame and polars LazyFrame."""
    x, nulls = gappy_column(rows)
    frame = pl.DataFrame({"x": x}).with_columns(pl.when(pl.Series(nulls)).then(None).otherwise(pl.col("x")).alias("x"))
    x[nulls] = np.nan  # the numpy column holds the same values (null -> NaN, the data policy)
    backends: list[Reductions] = [
        NumpyReductions(as_dataset({"x": x})),
        as_reductions(as_dataset(frame)),
        as_reductions(as_dataset(frame.lazy())),
    ]
    return time_reductions(backends, rows, repeat, "polars")


def main() -> None:
    args = parse_arguments({"small": "10^6 rows (a quick check)"}, rows=10_000_000, repeat=5)
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
