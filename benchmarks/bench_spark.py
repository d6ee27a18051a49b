"""Benchmark: the Spark backend of the reductions seam (issue 17, part 1) against the numpy backend, same run.

Issue 17's goals in local mode, as ratios against numpy on the same data: a clipped
sum with its count within 5x, the order window around the median within 20x. Each
line times one reduction of :class:`~dpalg.data.NumpyReductions` (on the numpy
column, in memory) and of ``SparkReductions`` on a Spark DataFrame holding the same
values in the same row order, in interleaved rounds (one call of each per round, the
median kept), so that both backends see the same machine load. The column is
N(50, 10) with 1% nulls and 1% NaN (a null in Spark, NaN in numpy).

| reduction | what it asks |
| --- | --- |
| clipped sum + count | ``clipped_sums([SumSpec(x, 0, 100, -10)])``: the exact lattice sum and the present count |
| order window (median) | ``order_window(x, 0, 100, n/2 - 1000, n/2 + 1000)``: 2001 order statistics (k = 1000) |
| grid counts | ``grid_counts(x, 0, 100, 20)``: ExponentialQuantile's default grid (no goal in the issue) |
| extremes | ``extremes(x, 0, 100, 1000)``: what ProposeTest on a mean reads (no goal in the issue) |

What is excluded: the session's start (25-60 s on a loaded 2-core machine) and
filling the cache. The frame is persisted and counted before timing, as a run
persists its input once (``SparkSource``); every question is then asked once
before the timed rounds (a warm-up, which also checks that Spark's answer equals
numpy's bit for bit). The load average is printed at the start and at the end:
the machine is shared, so only the ratios mean anything.

Run: ``python -m benchmarks.bench_spark [--rows N] [--small] [--repeat R]`` (needs
pyspark and Java: ``pip install -e '.[spark]'``).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from benchmarks._common import gappy_column, parse_arguments, time_reductions
from dpalg.data import NumpyReductions, Reductions, as_dataset, as_reductions

GOALS = {"clipped sum + count": "<= 5x", "order window (median, 2001 ranks)": "<= 20x"}


def session() -> Any:
    """A local[2] SparkSession: UI off, 4 shuffle partitions, no progress bars, 4 GiB for the driver (the data passes through it)."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(spark: Any, rows: int, repeat: int) -> list[tuple[str, list[float]]]:
    """For each reduction: the median seconds of numpy and of Spark (on a cached frame)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    x, nulls = gappy_column(rows)
    frame = spark.createDataFrame(pa.table({"x": pa.array(x, mask=nulls)}))  # the same values in the same row order
    # one partition per Arrow batch of 10 000 rows would make every job 1000 tasks: one partition per core
    # (coalesce concatenates neighbours, so the row order stays numpy's)
    frame = frame.coalesce(spark.sparkContext.defaultParallelism).persist()
    assert frame.count() == rows  # the cache is filled before timing
    x[nulls] = np.nan  # the numpy column holds the same values (null -> NaN, the data policy)
    backends: list[Reductions] = [NumpyReductions(as_dataset({"x": x})), as_reductions(as_dataset(frame))]
    out = time_reductions(backends, rows, repeat, "Spark")
    frame.unpersist()
    return out


def main() -> None:
    args = parse_arguments({"small": "10^6 rows (a quick check)"}, rows=10_000_000, repeat=3)
    rows = 1_000_000 if args.small else args.rows
    started = time.perf_counter()
    spark = session()
    import pyspark

    print(f"{rows:,} rows; pyspark {pyspark.__version__}, Spark {spark.version}, local[2], {os.cpu_count()} cores; "
          f"session start {time.perf_counter() - started:.0f} s (not timed); load average {os.getloadavg()[0]:.2f} at start")  # fmt: skip
    print("| reduction | numpy | Spark | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    for name, (t_np, t_spark) in measure(spark, rows, args.repeat):
        print(f"| {name} | {t_np * 1e3:.1f} ms | {t_spark * 1e3:.0f} ms | {t_spark / t_np:.1f}x | {GOALS.get(name, '-')} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    spark.stop()


if __name__ == "__main__":
    main()
