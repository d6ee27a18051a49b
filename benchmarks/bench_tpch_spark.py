"""Benchmark: the TPC-H user-level queries of ``bench_tpch`` on Spark tables, with a 64 MiB driver result cap.

The tables (lineitem, orders, customer: the columns the queries read; decimals cast
to double, dates kept as ``DateType``) are read from the parquet files by Spark on the
executors, in a session of its own (``local[2]``, ``spark.driver.maxResultSize=64m``).
Each query (Q5, Q12, Q10, Q18 of ``bench_tpch``) is released once by
``Laplace(query | ClipPerUser(0, 2^18))``, ``AutoClipSum`` and ``R2T`` (seeded), and
the outcome (released, or the error), the time, and whether the value equals the same
seeded release on the polars tables are printed, next to the time of the same joins,
filter and per-user group-by written directly in Spark SQL (``sum`` of the per-user
totals, one row collected): the ratio is what compares across machines.

Run: ``python -m benchmarks.bench_tpch_spark [--data /tmp/tpch_sf1] [--cap-mib 64]``
(needs pyspark, Java, and the parquet files of ``bench_tpch``).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_tpch import COLUMNS, load, queries
from dpalg import ClipPerUser, DPAlgError, PureDP, Session
from dpalg.mechanisms import R2T, AutoClipSum, Laplace


def _plans(query: Any) -> dict[str, Callable[[], Any]]:
    return {
        "Laplace | ClipPerUser(0, 2^18)": lambda: Laplace(query | ClipPerUser(0, 2**18), epsilon=1),
        "AutoClipSum": lambda: AutoClipSum(query, epsilon=1),
        "R2T": lambda: R2T(query, epsilon=1),
    }


def _run(plan: Any, data: object) -> tuple[str, object, float]:
    session = Session(PureDP(1))
    start = time.perf_counter()
    try:
        value: object = session.run(plan, data, rng=11).value
        outcome = "released"
    except DPAlgError as exc:
        value, outcome = None, ("failed after the charge: " if session.charges else "refused: ") + type(exc).__name__
    return outcome, value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("/tmp/tpch_sf1"))
    parser.add_argument("--cap-mib", type=int, default=64)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded randomness warns; a benchmark seeds on purpose
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType

    spark = (
        SparkSession.builder.master("local[2]").appName("dpalg-bench-tpch")
        .config("spark.driver.maxResultSize", f"{args.cap_mib}m").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "6g")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("OFF")
    tables = {}
    for name, columns in COLUMNS.items():
        frame = spark.read.parquet(str(args.data / f"{name}.parquet")).select(*columns)
        frame = frame.select(*[F.col(f.name).cast("double") if isinstance(f.dataType, DecimalType) else F.col(f.name) for f in frame.schema.fields])
        tables[name] = frame.persist()
        tables[name].count()
    frames, public = load(args.data)
    print(f"TPC-H from {args.data} on Spark local[2], spark.driver.maxResultSize={args.cap_mib}m; load average {os.getloadavg()[0]:.2f}")
    li, o, c = tables["lineitem"], tables["orders"], tables["customer"]
    base_sql = li.join(o, li.l_orderkey == o.o_orderkey).join(c, o.o_custkey == c.c_custkey)
    start = time.perf_counter()
    base_sql.groupBy("o_custkey").agg(F.sum("l_quantity").alias("t")).agg(F.sum(F.least(F.col("t"), F.lit(2**18)))).collect()
    base = time.perf_counter() - start
    print(f"baseline: Spark joins + per-user group-by + clipped sum (Q18's question) {base:.2f} s")
    print(f"{'query':5s} {'mechanism':32s} {'outcome':30s} {'seconds':>8s} {'/ base':>7s}  same as polars")
    for qname, (query, _, _, _) in queries(public).items():
        for label, make in _plans(query).items():
            outcome, value, seconds = _run(make(), tables)
            _, on_polars, _ = _run(make(), frames)
            same = "yes" if value == on_polars else "NO"
            print(f"{qname:5s} {label:32s} {outcome:30s} {seconds:8.2f} {seconds / base:7.1f}  {same}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
