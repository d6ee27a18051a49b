"""Benchmark: every exported mechanism on a large Spark frame with a small driver result cap, and the same seeded
release as the numpy backend on a sample small enough for both.

The plans are those of ``tests/totality/scale_spark_run.py`` (one or two per exported
mechanism, the user-level caps, GroupBy with public and private keys); the frame is
made on the executors (``spark.range``: random doubles ``x``, ``y``, ``v``, a 0/1
``c``, string keys ``k``, user ids ``u``), persisted and counted, in a session of its
own (``local[2]``, ``spark.driver.maxResultSize`` as given: 64m by default, a driver
that cannot hold one column of 3·10^7 doubles in one job).

For each plan: its outcome on the large frame (released, refused before the charge,
or failed after it) and its run time against the time of a plain Spark
``agg(sum(x))`` over the same cached frame (measured in the same run: the ratio is
what is comparable across machines); then the seeded release (``rng=7``) on a
``--sample-rows`` frame made the same way, on Spark and on its columns collected as a
dict of numpy arrays, compared value for value.

Run: ``python -m benchmarks.bench_spark_scale [--rows 30000000] [--cap-mib 64] [--sample-rows 20000]``
(needs pyspark and Java; several minutes per 10^7 rows on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks._common import parse_arguments
from dpalg import DPAlgError, Session


def _plans_module() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "tests" / "totality" / "scale_spark_run.py"
    spec = importlib.util.spec_from_file_location("scale_spark_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(plan: Any, data: object) -> tuple[str, object, float]:
    session = Session(plan.cost())
    start = time.perf_counter()
    try:
        value: object = session.run(plan, data, rng=7).value
        outcome = "released"
    except DPAlgError as exc:
        value = None
        outcome = ("failed: " if session.charges else "refused: ") + type(exc).__name__
    return outcome, value, time.perf_counter() - start


def main() -> None:
    args = parse_arguments(rows=30_000_000, cap_mib=64, sample_rows=20_000)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    module = _plans_module()
    spark = (
        SparkSession.builder.master("local[2]").appName("dpalg-bench-scale")
        .config("spark.driver.maxResultSize", f"{args.cap_mib}m").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "6g")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("OFF")
    warnings.simplefilter("ignore")  # the seeded generator's warning: benchmark runs, not releases
    big = module._frame(spark, args.rows).persist()
    big.count()
    small = module._frame(spark, args.sample_rows).persist()
    small.count()
    columns = small.toPandas()
    local = {name: columns[name].to_numpy() for name in columns.columns}
    start = time.perf_counter()
    big.agg(F.sum("x")).collect()
    base = time.perf_counter() - start
    print(f"{args.rows:,} rows, spark.driver.maxResultSize={args.cap_mib}m, local[2]; load average {os.getloadavg()[0]:.2f}")
    print(f"baseline: Spark agg(sum(x)) over the cached frame {base:.2f} s")
    print(f"{'plan':40s} {'outcome':22s} {'seconds':>8s} {'/ sum':>7s}  same seeded release as numpy ({args.sample_rows:,} rows)")
    records = []
    for name in sorted(module.PLANS, key=lambda n: (n.startswith("PTRMode"), n)):  # the mode of 3·10^7 distinct doubles last
        outcome, _, seconds = _run(module.PLANS[name](), big)
        _, on_spark, _ = _run(module.PLANS[name](), small)
        _, on_numpy, _ = _run(module.PLANS[name](), local)
        same = repr(on_spark) == repr(on_numpy)
        records.append({"plan": name, "outcome": outcome, "seconds": round(seconds, 2), "ratio": round(seconds / base, 2), "same": same})
        print(f"{name:40s} {outcome:22s} {seconds:8.2f} {seconds / base:7.1f}  {'yes' if same else 'NO'}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print(json.dumps(records))
    spark.stop()


if __name__ == "__main__":
    main()
