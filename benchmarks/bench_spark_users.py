"""Benchmark: users' bounded totals on Spark executors against Spark's own group-by on the same cached frame.

Each line times one question of the reductions seam on a Spark frame (``uid``:
``n/10`` users, ``x``: uniform on [0, 100) with 1% nulls), against the plain Spark
baseline ``df.groupBy("uid").agg(F.sum("x"))`` then ``agg(sum(clip(total, 0, 1000)))``
(float sums, not exact; no missing-value policy). The frame is cached and counted
before timing; every question runs once as a warm-up, then ``repeat`` interleaved
rounds (the median is kept). The session's ``spark.driver.maxResultSize`` is 64m:
no path may collect a column. The load average is printed: the machine is shared.

| line | what it asks |
| --- | --- |
| ClipPerUser sum | ``unit_total_sum`` of ``sum(x) | ClipPerUser(0, 1000)`` at k = -11 (SQL group-by, exact long sums) |
| MaxRowsPerUser count | ``unit_total_sum`` of ``count | MaxRowsPerUser(5)`` (SQL: ``least(count, 5)`` per user) |
| capped sum (Arrow) | ``sum(x) | Clip(0, 100) | MaxRowsPerUser(5) | ClipPerUser(0, 1000)``: the keyed row choice per user group |
| AutoClipSum totals | ``unit_totals`` (one long per user reaches the driver) |

Run: ``python -m benchmarks.bench_spark_users [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np


def session() -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-bench-spark-users")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.maxResultSize", "64m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(spark: Any, rows: int, repeat: int) -> None:
    from pyspark.sql import functions as F

    from dpalg.data import as_dataset, as_reductions
    from dpalg.data._unit_totals import UnitTotalSpec

    users = max(1, rows // 10)
    frame = spark.range(rows).select(
        F.concat(F.lit("u"), (F.xxhash64("id") % users).cast("string")).alias("uid"),
        F.when(F.rand(7) < 0.01, F.lit(None)).otherwise(F.rand(11) * 100).alias("x"),
    ).cache()
    frame.count()
    reductions = as_reductions(as_dataset(frame))
    secret = bytes(range(32))
    k = -11
    questions: dict[str, Callable[[], object]] = {
        "spark groupBy sum + clipped sum": lambda: frame.groupBy("uid").agg(F.sum("x").alias("t"))
        .agg(F.sum(F.least(F.greatest(F.coalesce(F.col("t"), F.lit(0.0)), F.lit(0.0)), F.lit(1000.0)))).collect(),
        "ClipPerUser sum": lambda: reductions.unit_total_sum(UnitTotalSpec("uid", "x", "sum", k, 0, 1000 * 2**11), secret),
        "MaxRowsPerUser count": lambda: reductions.unit_total_sum(UnitTotalSpec("uid", None, "count", 0, 0, 5, max_rows=5), secret),
        "capped sum (Arrow)": lambda: reductions.unit_total_sum(
            UnitTotalSpec("uid", "x", "sum", k, 0, 1000 * 2**11, Fraction(0), Fraction(100), max_rows=5), secret),
        "AutoClipSum totals": lambda: reductions.unit_totals(UnitTotalSpec("uid", "x", "sum", -40, 0, 2**60), secret),
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in questions}
    for ask in questions.values():
        ask()  # warm-up
    for _ in range(repeat):
        for name, ask in questions.items():
            start = time.perf_counter()
            ask()
            times[name].append(time.perf_counter() - start)
    base = float(np.median(times["spark groupBy sum + clipped sum"]))
    print(f"rows={rows} users~{users} load={os.getloadavg()}")
    for name, ts in times.items():
        t = float(np.median(ts))
        print(f"  {name:34s} {t:8.2f} s   {t / base:5.2f}x the Spark baseline")
    frame.unpersist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10**6])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = session()
    print(f"load at start: {os.getloadavg()}")
    for rows in args.rows:
        measure(spark, rows, args.repeat)
    print(f"load at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
