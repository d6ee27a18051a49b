"""One plan, three backends: the same seeded release from a dict, a polars frame and a Spark DataFrame.

The plan does not change when the data moves: ``plan.run(spark_df)`` asks the
executors for exact reductions (fixed-point sums, grid and key counts, an order
window around the median, per-user totals, block outputs of sample-and-aggregate)
and draws every noise in the driver, from dpalg's noise layer. A seeded run gives
the same value, bit for bit, on every backend; the certificates differ only in
their ``backend`` field (and their time stamp and digest).

Data: synthetic visits of ``n`` rows by ``n/10`` users (a skewed number of visits
per user, a spend per visit with missing values, a region key).

Run: ``python examples/spark_run.py [--small]`` (needs ``pip install "dpalg[spark]"``
and Java 17+; ``--small`` or ``DPALG_EXAMPLES_SMALL=1`` uses 20,000 rows). Noise:
the seeded generator (reproducible, NOT secure: examples only).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from dpalg import ApproxDP, Clip, Compose, PureToApprox, Query
from dpalg.graph import AbstractMeasurement
from dpalg.mechanisms import Laplace, SmoothBound
from _support import parse_arguments

SEED = 20261126


def synthetic(n: int) -> dict[str, npt.NDArray[Any]]:
    """Rows of (user, spend, region): users with skewed visit counts, ~2% of spends missing."""
    gen = np.random.default_rng(17)  # synthetic population only, not privacy noise
    users = max(n // 10, 1)
    user = np.minimum(gen.zipf(1.6, size=n), users * 7) % users
    spend = np.round(gen.lognormal(3.0, 0.8, size=n), 2)
    spend[gen.random(n) < 0.02] = np.nan
    region = np.array(["north", "south", "east", "west"], dtype=object)[gen.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])]
    return {"user": user.astype(np.int64), "spend": spend, "region": region}


def the_plan() -> AbstractMeasurement[ApproxDP]:
    """A mean, a median and a histogram under (ε = 3, δ = 10⁻⁶), row level."""
    return Compose(
        PureToApprox(Laplace(Query.mean("spend") | Clip(0, 500), epsilon=1)),
        SmoothBound(Query.median("spend") | Clip(0, 500), epsilon=1, delta="1e-6"),
        PureToApprox(Laplace(Query.histogram("region", keys=("north", "south", "east", "west")), epsilon=1)),
    )


def released(data: object) -> tuple[object, dict[str, Any], float]:
    """The seeded release on ``data``, its certificate without the fields that must differ, and the wall time."""
    plan = the_plan()
    plan.check(ApproxDP(3, "1e-6"))
    start = time.perf_counter()
    release = plan.run(data, rng=SEED)
    seconds = time.perf_counter() - start
    certificate = json.loads(release.certificate_json())
    # the backend, and the declared types (this dict's region column is an object array, Spark's a string)
    for field in ("created", "digest", "backend", "schema"):
        certificate.pop(field, None)
    return release.value, certificate, seconds


def main() -> None:
    args = parse_arguments(__doc__, "20,000 rows (for the test suite)", out=False)
    small = args.small
    n = 20_000 if small else 1_000_000
    columns = synthetic(n)
    print(f"{n:,} rows, {len(np.unique(columns['user'])):,} users")

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = list(zip(columns["user"].tolist(), [None if np.isnan(v) else v for v in columns["spend"].tolist()], columns["region"].tolist()))
        frame = spark.createDataFrame(rows, "user long, spend double, region string").repartition(7, "user")
        value_dict, cert_dict, t_dict = released(columns)
        value_spark, cert_spark, t_spark = released(frame)
        print(f"dict:   {value_dict}  ({t_dict:.2f} s)")
        print(f"spark:  {value_spark}  ({t_spark:.2f} s, Spark local[2]; includes the persist of the input)")
        assert repr(value_spark) == repr(value_dict), "the Spark release differs from the numpy release"
        assert cert_spark == cert_dict, "the certificates differ beyond the backend and schema fields"
        try:
            import polars as pl
        except ImportError:
            print("polars is not installed: skipped (pip install 'dpalg[polars]')")
        else:
            value_polars, cert_polars, t_polars = released(pl.LazyFrame(columns))
            print(f"polars: {value_polars}  ({t_polars:.2f} s)")
            assert repr(value_polars) == repr(value_dict) and cert_polars == cert_dict, "the polars release differs"
        print("same release and certificate (up to the backend and schema fields) on every backend")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
