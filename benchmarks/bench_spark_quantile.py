"""Benchmark: the exponential-mechanism median on Spark against the Laplace mean, same frame, same run.

The mean (``Laplace(Query.mean(x) | Clip(0, 1))``) reads one aggregate; the median
(``ExponentialQuantile(Query.median(x) | Clip(0, 1))``, a 2**20 grid) reads the grid
in two passes (``SparkReductions.grid_view``: the counts of about 2**10 blocks of
cells, then the cells of the blocks within reach of the median). For comparison,
the same release with the whole grid counted (one group-by of every occupied cell,
up to 2**20 + 1 of them collected: what the median read before the blocked view).
Each line is a seeded release in a :class:`~dpalg.Session` (its persist and
evaluation job included), timed in interleaved rounds (median kept), with the
Spark jobs of one release (status tracker). The frame is generated on the
executors (``spark.range(n)``, ``x = rand(7)``), cached and counted before timing.
The machine is shared: the ratios to the mean, measured in the same rounds, are
the result; the load average is printed at the start and at the end.

| line | what it reads |
| --- | --- |
| mean | one aggregate (exact long sums and the count) |
| median (blocked grid) | block counts, then a few blocks' cells |
| median (whole grid) | every occupied cell's count |

Run: ``python -m benchmarks.bench_spark_quantile [--rows N] [--repeat R]`` (pyspark and Java).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import parse_arguments


def session() -> Any:
    """A local[2] SparkSession: UI off, 4 shuffle partitions, no progress bars, a 64 MiB result cap (no column reaches the driver)."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-bench-spark-quantile")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.maxResultSize", "64m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(spark: Any, rows: int, repeat: int) -> dict[str, tuple[float, int]]:
    """For each line: the median seconds of a seeded release and the Spark jobs it ran."""
    import warnings

    from pyspark.sql import functions as F

    from dpalg import Clip, PureDP, Query, Session
    from dpalg.data._source_reductions import SourceReductions
    from dpalg.data._spark_reductions import SparkReductions
    from dpalg.mechanisms import ExponentialQuantile, Laplace

    frame = spark.range(rows).select(F.rand(7).alias("x")).cache()
    assert frame.count() == rows
    session = Session(PureDP(10**6))
    median = ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1)
    mean = Laplace(Query.mean("x") | Clip(0, 1), epsilon=1)
    blocked = SparkReductions._grid_view

    def whole_grid() -> object:
        SparkReductions._grid_view = SourceReductions._grid_view  # type: ignore[method-assign]
        try:
            return session.run(median, frame, rng=1).value
        finally:
            SparkReductions._grid_view = blocked  # type: ignore[method-assign]

    lines: dict[str, Callable[[], object]] = {
        "mean": lambda: session.run(mean, frame, rng=1).value,
        "median (blocked grid)": lambda: session.run(median, frame, rng=1).value,
        "median (whole grid)": whole_grid,
    }
    tracker = spark.sparkContext.statusTracker()
    times: dict[str, list[float]] = {name: [] for name in lines}
    jobs: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded generator's NOT SECURE warning (a benchmark)
        values = {}
        for name, release in lines.items():  # warm-up; the two medians must agree
            spark.sparkContext.setJobGroup(f"bench-{name}", name)
            values[name] = release()
            jobs[name] = len(list(tracker.getJobIdsForGroup(f"bench-{name}")))
        spark.sparkContext.setJobGroup("bench-timed", "timed")
        assert values["median (blocked grid)"] == values["median (whole grid)"], values
        for _ in range(repeat):
            for name, release in lines.items():
                start = time.perf_counter()
                release()
                times[name].append(time.perf_counter() - start)
    frame.unpersist()
    return {name: (sorted(ts)[len(ts) // 2], jobs[name]) for name, ts in times.items()}


def main() -> None:
    args = parse_arguments(rows=3_000_000, repeat=3)
    started = time.perf_counter()
    spark = session()
    print(f"{args.rows:,} rows; Spark {spark.version}, local[2], {os.cpu_count()} cores; session start "
          f"{time.perf_counter() - started:.0f} s (not timed); load average {os.getloadavg()[0]:.2f} at start")  # fmt: skip
    got = measure(spark, args.rows, args.repeat)
    base = got["mean"][0]
    print("| release | time | jobs | / mean | goal |")
    print("| --- | --- | --- | --- | --- |")
    for name, (t, jobs) in got.items():
        goal = "<= 3x" if name == "median (blocked grid)" else "-"
        print(f"| {name} | {t:.2f} s | {jobs} | {t / base:.2f}x | {goal} |")
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    spark.stop()


if __name__ == "__main__":
    main()
