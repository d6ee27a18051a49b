"""Benchmark: a GroupBy on Spark (group codes and grouped exact sums on the executors) against Spark's own group-by.

The plan is a per-group Laplace mean, public int keys, row level:
``GroupBy("k", keys=KeySet(range(K)), aggregates={"m": Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)})``
on a frame of N rows with ``k`` uniform over K keys and ``x`` ~ N(50, 10). The
baseline is what Spark itself does for the same statistics, on the same cached
frame: ``df.groupBy("k").agg(count(1), sum("x")).collect()`` (a float sum, which
is not exact; dpalg's is an exact integer sum on a lattice). Goal: dpalg within 2x.

Three lines per size, interleaved rounds (one call of each per round, the median
kept, so that every line sees the same machine load):

* ``plan.run``: the whole release (schema check, the pre-charge evaluation pass
  over the read columns, the grouped job, noise for every group);
* ``grouped sums``: the grouped reduction alone (``group_coding(...).released(...)
  .clipped_sums(spec)``, one aggregate job), the part that replaces the old
  collect-to-driver path;
* ``Spark groupBy.agg``: the baseline.

What is excluded: the session's start and filling the cache (the frame is
persisted and counted before timing; a frame the caller persisted is read as it
is by ``plan.run``). The load average is printed at the start and at the end: the
machine is shared, so only the ratios mean anything.

Run: ``python -m benchmarks.bench_groupby_spark [--rows N] [--keys K] [--small] [--repeat R]``
(needs pyspark and Java).
"""

from __future__ import annotations

import os
import time
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

from benchmarks._common import interleaved_medians, parse_arguments
from benchmarks.bench_spark import session
from dpalg import Clip, GroupBy, KeySet, Query
from dpalg.data import SumSpec, as_dataset
from dpalg.data._grouping import group_coding
from dpalg.mechanisms import Laplace


def _plan(keys: int) -> Any:
    mean = Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)
    plan = GroupBy("k", keys=KeySet(range(keys)), aggregates={"m": mean})
    plan.check(plan.cost())
    return plan


def measure(spark: Any, rows: int, keys: int, repeat: int) -> list[float]:
    """Median seconds of: plan.run, the grouped sums alone, Spark's groupBy.agg (same cached frame)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import functions as F

    rng = np.random.default_rng(1)
    table = pa.table({"k": pa.array(rng.integers(0, keys, rows)), "x": pa.array(rng.normal(50, 10, rows))})
    frame = spark.createDataFrame(table).coalesce(spark.sparkContext.defaultParallelism).persist()
    assert frame.count() == rows  # the cache is filled before timing
    spec = SumSpec("x", Fraction(0), Fraction(100), -20)

    def release() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seeded: not secure (a benchmark)
            return _plan(keys).run(frame, rng=1).value

    def grouped() -> object:
        coding = group_coding(as_dataset(frame), ["k"], tuple(range(keys)), reads=("k", "x"))
        try:
            return coding.released(list(range(keys))).clipped_sums(spec)
        finally:
            coding.close()

    def baseline() -> object:
        return frame.groupBy("k").agg(F.count(F.lit(1)), F.sum("x")).collect()

    for fn in (release, grouped, baseline):  # warm-up (and a check that the release has every group)
        fn()
    assert len(release()) == keys  # type: ignore[arg-type]
    out = interleaved_medians([release, grouped, baseline], repeat)
    frame.unpersist()
    return out


def main() -> None:
    args = parse_arguments({"small": "10^6 rows and 10^3 keys (a quick check)"}, rows=10_000_000, keys=10_000, repeat=3)
    sizes = [(1_000_000, 1_000)] if args.small else [(1_000_000, 1_000), (args.rows, args.keys)]
    started = time.perf_counter()
    spark = session()
    import pyspark

    print(f"pyspark {pyspark.__version__}, Spark {spark.version}, local[2], {os.cpu_count()} cores; "
          f"session start {time.perf_counter() - started:.0f} s (not timed); load average {os.getloadavg()[0]:.2f} at start")  # fmt: skip
    print("| rows / keys | plan.run | grouped sums | Spark groupBy.agg | plan.run / Spark | grouped sums / Spark | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for rows, keys in sizes:
        t_run, t_grouped, t_spark = measure(spark, rows, keys, args.repeat)
        print(
            f"| {rows:,} / {keys:,} | {t_run:.2f} s | {t_grouped:.2f} s | {t_spark:.2f} s | {t_run / t_spark:.2f}x | "
            f"{t_grouped / t_spark:.2f}x | <= 2x | load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    spark.stop()


if __name__ == "__main__":
    main()
