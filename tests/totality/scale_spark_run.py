"""Every exported mechanism on a Spark frame larger than ``spark.driver.maxResultSize`` (the catalog of ``test_scale_spark.py``).

:func:`one_shot` checks that one column of the frame cannot be collected in one
job, through Arrow or as rows (the cap is effective); :func:`run_plans` runs each
plan of :data:`PLANS` on the frame and gives one record per plan: its name, its
outcome (``released``; ``refused`` before the charge, with the error's type; or
``failed`` after it) and its run time. ``test_scale_spark.py`` runs them in the
test suite's session, with the cap set to ``1m`` (Spark's smallest non-zero cap)
for the test; run as a script, this starts its own SparkSession (``local[2]``,
``spark.driver.maxResultSize=1m``) and prints one JSON line per record. The frame
(:func:`_frame`, ``ROWS`` rows made on the executors) is also the frame of
``benchmarks/bench_spark_scale.py``. Importing this module runs nothing.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpalg import (
    Clip, DPAlgError, GroupBy, KeySet, MaxGroupsPerUser, MaxKeysPerUser, MaxRowsPerUser,
    PartitionSelection, PureDP, PureToApprox, Query, Session,
)
from dpalg.mechanisms import (
    R2T, AutoClipSum, BoundedLS, BoundedLSRatio, CalibratedGaussianSum, CalibratedLaplaceSum, ExponentialQuantile, Gaussian, KSWRatio,
    Laplace, LocalSensAtDistance, NaiveRatio, NoisyCount, NoisyMax, PrivateRatio, ProposeTest, PTRMode, SampleAggregateMean,
    SampleAggregateMedian, SampleAggregateMode, ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP, SmoothBound,
    SmoothBoundCauchy, StableHistogram,
)

#: rows of the frame: a double column is 1.2 MB in Arrow, 2.4 MB as collected rows, over the 1 MB cap
ROWS = 150_000
CAP = "1m"


def _rounded_median(values: npt.NDArray[np.float64]) -> float:
    return float(np.round(np.median(values)))


def _log1p_mean(values: npt.NDArray[np.float64]) -> float:
    return float(np.mean(np.log1p(values)))


def _user_statistic() -> LocalSensAtDistance:
    return LocalSensAtDistance(Query.function(_log1p_mean, column="x") | Clip(0, 10), "log(11)/Max(n - k, 1) + log(11)/2**45")


# name -> a fresh plan; the prefix before "-" is the mechanism (one or two plans per mechanism of tests/totality/test_totality.py's
# catalog, those that collect or group by key first, and the user-level caps)
PLANS: dict[str, Callable[[], Any]] = {
    "Laplace-count": lambda: Laplace(Query.count(), epsilon=1),
    "Laplace-histogram": lambda: Laplace(Query.histogram("k", keys=("a", "b", "c")), epsilon=1),
    "ExponentialQuantile-median": lambda: ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1, grid_bits=8),
    "NoisyMax-histogram": lambda: NoisyMax(Query.histogram("k", keys=("a", "b", "c")), epsilon=1),
    "ProposeTest-median": lambda: ProposeTest(Query.median("x") | Clip(0, 10), bound=1, epsilon=1, delta="0.01"),
    "PTRMode-mode": lambda: PTRMode(Query.mode("x"), epsilon="0.5", delta="0.01"),
    "StableHistogram-keys": lambda: StableHistogram(Query.histogram("k"), epsilon=1, delta="0.05"),
    "ShiftedInverse-user-sum": lambda: ShiftedInverse(Query.user_sum("v", user="u") | Clip(0, 4), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearch-user-count": lambda: ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearchZCDP-user-max": lambda: ShiftedInverseSearchZCDP(Query.user_max("v", user="u"), domain=(0, 63), rho=1),
    "BoundedLS-ratio": lambda: BoundedLS("a/b", "1/(b_lo - 1)", (NoisyCount("a", where="c"), NoisyCount("b")),
                                         epsilon_bound="0.5", epsilon_release="0.5", delta="0.01", domain={"b": 2}),
    "NaiveRatio-c": lambda: NaiveRatio(PrivateRatio("c"), 1),
    "KSWRatio-c": lambda: KSWRatio(PrivateRatio("c"), 1),
    "BoundedLSRatio-c": lambda: BoundedLSRatio(PrivateRatio("c"), "0.5", "0.5", "0.01"),
    "CalibratedGaussianSum-xy": lambda: CalibratedGaussianSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), rho="0.5"),
    "CalibratedLaplaceSum-xy": lambda: CalibratedLaplaceSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), epsilon=1),
    "SmoothBound-median": lambda: SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    "SmoothBoundCauchy-median": lambda: SmoothBoundCauchy(Query.median("x") | Clip(0, 10), epsilon=1),
    "SmoothBound-function": lambda: SmoothBound(_user_statistic(), epsilon=1, delta="0.01"),
    "SampleAggregateMean-function": lambda: SampleAggregateMean(_user_statistic().query, blocks=4, lower=0, upper=3, epsilon=1),
    "SampleAggregateMedian-column": lambda: SampleAggregateMedian(np.mean, blocks=8, lower=-1e200, upper=1e200, epsilon=1,
                                                                  delta="0.01", column="x"),
    "SampleAggregateMode-users": lambda: SampleAggregateMode(_rounded_median, blocks=8, epsilon=1, delta="0.01", unit="u", column="x"),
    "AutoClipSum-user-sum": lambda: AutoClipSum(Query.sum("x", user="u"), epsilon=1, upper_limit=2**20),
    "R2T-user-sum": lambda: R2T(Query.sum("x", user="u"), epsilon=1, upper_limit=2**20, thresholds=20),
    "Laplace-user-mean-rows": lambda: Laplace(Query.mean("x", user="u") | Clip(0, 10) | MaxRowsPerUser(3), epsilon=1),
    "Gaussian-user-histogram": lambda: Gaussian(Query.histogram("k", keys=("a", "b", "c"), user="u") | MaxKeysPerUser(2), rho="0.5"),
    "NoisyMax-user-histogram": lambda: NoisyMax(Query.histogram("k", keys=("a", "b", "c"), user="u") | MaxRowsPerUser(2), epsilon=1),
    "StableHistogram-user": lambda: StableHistogram(Query.histogram("k", user="u") | MaxKeysPerUser(2), epsilon=1, delta="0.05"),
    "GroupBy-public-other": lambda: GroupBy("k", keys=KeySet(["a", "b"], other="rest"), aggregates={
        "n": PureToApprox(Laplace(Query.count(), epsilon=1)), "median": SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    }),
    "GroupBy-private-users": lambda: GroupBy("k", keys=PartitionSelection(epsilon=1, delta="0.05"), aggregates={
        "n": PureToApprox(Laplace(Query.count(user="u") | MaxRowsPerUser(2), epsilon=1)),
    }, bound=MaxGroupsPerUser(2)),
}  # fmt: skip


def _frame(spark: Any, rows: int) -> Any:
    """``rows`` rows made on the executors: doubles ``x``, ``y``, ``v``, a 0/1 int ``c``, string keys ``k``, long user ids ``u``."""
    from pyspark.sql import functions as F

    i = F.col("id")
    return spark.range(rows, numPartitions=4).select(  # random doubles: a collected row compresses little
        (F.rand(1) * 10).alias("x"), (F.rand(2) * 8 - 4).alias("y"), F.floor(F.rand(3) * 5).cast("double").alias("v"),
        (i % 2).cast("int").alias("c"), F.element_at(F.array(F.lit("a"), F.lit("b"), F.lit("c")), (i % 3 + 1).cast("int")).alias("k"),
        (i % 5000).alias("u"),
    )  # fmt: skip


def one_shot(frame: Any) -> list[dict[str, object]]:
    """Whether one job can collect the column ``x`` of ``frame``, through Arrow and as rows: a record per way (the cap is effective if both failed)."""
    records: list[dict[str, object]] = []
    for how in ("toArrow", "collect"):
        try:
            getattr(frame.select("x"), how)()
            records.append({"name": f"(one-shot {how})", "outcome": "collected"})
        except Exception as exc:  # noqa: BLE001
            records.append({"name": f"(one-shot {how})", "outcome": "failed", "error": type(exc).__name__})
    return records


def run_plans(frame: Any, names: list[str]) -> Iterator[dict[str, object]]:
    """Each plan of ``names`` (all of :data:`PLANS` if empty) run once on ``frame``: a record of its outcome and run time."""
    for name in names or sorted(PLANS):
        plan = PLANS[name]()
        session = Session(plan.cost())
        start = time.perf_counter()
        record: dict[str, object] = {"name": name}
        try:
            session.run(plan, frame, rng=7)
            record["outcome"] = "released"
        except DPAlgError as exc:
            record["outcome"] = "failed" if session.charges else "refused"
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            if session.charges:
                record["ledger"] = session.history()[0].failure
        record["seconds"] = round(time.perf_counter() - start, 2)
        yield record


def main(names: list[str]) -> int:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]").appName("dpalg-scale")
        .config("spark.driver.maxResultSize", CAP).config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("OFF")
    warnings.simplefilter("ignore")  # the seeded generator's warning: a test's runs, not releases
    frame = _frame(spark, ROWS).persist()  # the caller's cache: each run collects afresh, none recomputes the rows
    frame.count()
    for record in [*one_shot(frame), *run_plans(frame, names)]:
        print(json.dumps(record), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
