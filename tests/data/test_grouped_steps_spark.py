"""GROUP BY over row steps and over several tables on Spark: the numpy backend's seeded release, grouped on the executors.

The companion of ``tests/data/test_grouped_steps.py``: the filter, the derived
columns and the joins run on the executors before the grouping, and no column is
collected to the driver (``SparkSource.materialise``/``numeric`` patched to raise).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from backend_support import spark_module_marks

pytestmark = spark_module_marks()

import pytest  # noqa: E402

from dpalg import ClipPerUser, GroupBy, KeySet, MaxGroupsPerUser, PureDP, Query, Where, col  # noqa: E402
from dpalg.data._tables import From, Join  # noqa: E402
from dpalg.mechanisms import Laplace  # noqa: E402
from dpalg.release import audit_certificate  # noqa: E402

RELATION = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey"))


def _plan() -> Any:
    revenue = Query.sum(col("l_price") * (1 - col("l_disc")), user="c_custkey") | RELATION | Where(col("l_price") > 20) | ClipPerUser(0, 2000)
    count = Query.count(user="c_custkey") | RELATION | Where(col("l_price") > 20) | ClipPerUser(0, 40)
    return GroupBy("c_nation", keys=KeySet([0, 1, 2]), aggregates={"revenue": Laplace(revenue, epsilon=1), "n": Laplace(count, epsilon=1)}, bound=MaxGroupsPerUser(1))


def _run(data: object) -> tuple[object, dict[str, Any]]:
    plan = _plan()
    plan.check(PureDP(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = plan.run(data, rng=7)
    return release.value, json.loads(json.dumps(release.certificate))


def test_a_grouped_release_over_spark_tables_is_the_numpy_release_without_collecting(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg.data._spark import SparkSource

    rng = np.random.default_rng(3)  # synthetic data only
    db: dict[str, dict[str, list[Any]]] = {
        "customer": {"c_custkey": list(range(50)), "c_nation": rng.integers(0, 3, 50).tolist()},
        "orders": {"o_orderkey": list(range(200)), "o_custkey": rng.integers(0, 51, 200).tolist()},  # 50 dangles
        "lineitem": {"l_orderkey": rng.integers(0, 210, 800).tolist(), "l_price": rng.uniform(0, 100, 800).tolist(), "l_disc": rng.uniform(0, 0.1, 800).tolist()},
    }  # fmt: skip
    expected, _ = _run({t: {c: np.asarray(v) for c, v in cols.items()} for t, cols in db.items()})

    def refuse(self: Any, name: str) -> Any:
        raise AssertionError(f"column {name!r} collected to the driver")

    monkeypatch.setattr(SparkSource, "materialise", refuse)
    monkeypatch.setattr(SparkSource, "numeric", refuse)
    frames = {t: spark.createDataFrame(list(zip(*cols.values())), list(cols)).repartition(5) for t, cols in db.items()}
    got, cert = _run(frames)
    assert got == expected
    assert audit_certificate(cert).status == "cost_confirmed"
