"""GroupBy on a Spark frame (local mode): the same seeded release as on numpy columns, computed on the executors.

The group codes, the per-user bound, the distinct users per group and the grouped
exact sums run on the executors (:mod:`dpalg.data._spark_grouping`); what must hold:
the release is bit-identical to numpy's for public keys (str, int, float, two
columns, "other"), private keys, the user-level bound and aggregates without a
grouped release, after a repartition too; no column is collected to the driver;
a grouping computed per partition instead of per row or per user is caught; and
the schema refuses keys of the wrong kind before the charge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from backend_support import spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import (  # noqa: E402
    ClipPerUser, GroupBy, InvalidArgument, KeySet, MaxGroupsPerUser, MaxRowsPerUser, PartitionSelection, PureDP, PureToApprox, Query, Session,
)
from dpalg import Clip  # noqa: E402
from dpalg.data import _spark_grouping  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.mechanisms import ExponentialQuantile, Laplace, SmoothBound  # noqa: E402


def _frame() -> dict[str, Any]:
    rng = np.random.default_rng(5)
    n = 2000
    return {
        "uid": rng.integers(0, 200, n).astype(np.int64), "g": rng.choice(np.array(["a", "b", "c", "d"], dtype=object), n),
        "x": rng.normal(5, 3, n),
    }


def _plans() -> list[object]:
    count = Laplace(Query.count(user="uid") | MaxRowsPerUser(4), epsilon=1)
    mean = Laplace(Query.mean("x", user="uid") | ClipPerUser(0, 40), epsilon=1)
    return [
        GroupBy("g", keys=KeySet(["a", "b", "z"], other="rest"), aggregates={"n": count, "m": mean}, bound=MaxGroupsPerUser(2)),
        GroupBy("g", keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"n": PureToApprox(count)}, bound=MaxGroupsPerUser(1)),
    ]


@pytest.mark.parametrize("layout", ["as is", "repartition(3, g)"])
def test_a_seeded_group_by_is_the_same_on_spark_and_numpy(spark: Any, layout: str) -> None:
    data = _frame()
    rows = list(zip(data["uid"].tolist(), data["g"].tolist(), data["x"].tolist()))
    df = spark.createDataFrame(rows, "uid long, g string, x double")
    if layout != "as is":
        df = df.repartition(3, "g")
    for i in range(len(_plans())):
        values = []
        for source in (data, df):
            plan = _plans()[i]
            plan.check(plan.cost())  # type: ignore[attr-defined]
            with pytest.warns(Warning):  # seeded: not secure
                values.append(plan.run(source, rng=3).value)  # type: ignore[attr-defined]
        assert values[0] == values[1]


def test_keys_of_the_wrong_kind_are_refused_before_the_charge_on_spark(spark: Any) -> None:
    df = spark.createDataFrame([(1, 2.0)], "g long, x double")
    session = Session(PureDP(3))
    with pytest.raises(InvalidArgument, match="str key never matches a number"):
        session.run(GroupBy("g", keys=KeySet(["a"]), aggregates={"n": Laplace(Query.count(), epsilon=1)}), df)
    assert session.spent == PureDP(0)


# -- the grouping on the executors ----------------------------------------------------------------

_SCHEMA = "uid long, g string, k long, f double, x double"


def _columns(n: int = 1500) -> dict[str, Any]:
    """Synthetic rows: str, int and float keys (the float keys hold NaN, -0.0 and integral values), ids, values."""
    rng = np.random.default_rng(11)
    f = rng.choice(np.array([0.0, -0.0, 1.0, 2.5, np.nan, 7.0]), n)
    x = rng.normal(5, 3, n)
    x[rng.random(n) < 0.05] = np.nan
    return {
        "uid": rng.integers(0, 150, n).astype(np.int64), "g": rng.choice(np.array(["a", "b", "c", "d", "e"], dtype=object), n),
        "k": rng.integers(0, 8, n).astype(np.int64), "f": f, "x": x,
    }


def _spark_frame(spark: Any, data: dict[str, Any]) -> Any:
    rows = list(zip(*(data[c].tolist() for c in ("uid", "g", "k", "f", "x"))))
    return spark.createDataFrame([tuple(None if isinstance(v, float) and v != v and i == 4 else v for i, v in enumerate(r)) for r in rows], _SCHEMA)


def _row_plans() -> dict[str, Any]:
    """GroupBy plans whose aggregates read through the reductions seam only (nothing is collected on Spark)."""
    count = Laplace(Query.count(), epsilon=1)
    mean = Laplace(Query.mean("x") | Clip(0, 10), epsilon=1)
    total = Laplace(Query.sum("x") | Clip(-2, 10), epsilon=1)
    median = SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="1e-6")
    users = Laplace(Query.user_count(user="uid"), epsilon=1)
    return {
        "str keys, other": GroupBy("g", keys=KeySet(["a", "b", "zz"], other="rest"), aggregates={"n": count, "m": mean, "s": total}),
        "int keys": GroupBy("k", keys=KeySet([0, 1, 2, 3, 99]), aggregates={"n": count, "m": mean, "c": Laplace(Query.count("x"), epsilon=1)}),
        "int keys, other": GroupBy("k", keys=KeySet([1, 2], other=-1), aggregates={"s": total}),
        "float keys, other": GroupBy("f", keys=KeySet([0, 1, 2.5, 3], other=-1), aggregates={"n": count, "m": mean}),
        "two columns": GroupBy(("g", "k"), keys=KeySet([("a", 1), ("b", 2), ("e", 7), ("zz", 0)]), aggregates={"n": count, "s": total}),
        "private keys": GroupBy("g", keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"n": PureToApprox(count)}),
        "private two columns": GroupBy(("g", "k"), keys=PartitionSelection(epsilon=2, delta="1e-5"), aggregates={"n": PureToApprox(count)}),
        "private float keys": GroupBy("f", keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"m": PureToApprox(mean)}),
        "smooth bound": GroupBy("g", keys=KeySet(["a", "c", "zz"]), aggregates={"q": median}),
        "exponential quantile": GroupBy("k", keys=KeySet([0, 4, 5]), aggregates={"q": ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1)}),
        "user bound": GroupBy("k", keys=KeySet(list(range(8))), aggregates={"u": users}, bound=MaxGroupsPerUser(2)),
        "user bound, private": GroupBy("g", keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"u": PureToApprox(users)}, bound=MaxGroupsPerUser(1)),
    }


def _release(plan_name: str, source: object) -> object:
    plan = _row_plans()[plan_name]
    plan.check(plan.cost())
    with pytest.warns(Warning):  # seeded: not secure
        return plan.run(source, rng=7).value


@pytest.fixture(scope="module")
def frames(spark: Any) -> dict[str, Any]:
    data = _columns()
    df = _spark_frame(spark, data)
    return {"data": data, "as is": df, "repartition(3)": df.repartition(3), "repartition(4, uid)": df.repartition(4, "uid"), "repartition(4, g)": df.repartition(4, "g")}


def _plan_layouts() -> list[tuple[str, str]]:
    """Each plan in two layouts: hashed by the group key ``g`` (the rows of a group together), and one of the other
    three in turn (as created, round-robin, hashed by the user id), so that each of those runs under four plans."""
    others = ["as is", "repartition(3)", "repartition(4, uid)"]
    return [(name, layout) for i, name in enumerate(_row_plans()) for layout in ("repartition(4, g)", others[i % 3])]


@pytest.mark.parametrize(("name", "layout"), _plan_layouts())
def test_the_grouping_on_the_executors_gives_numpy_s_release(frames: dict[str, Any], name: str, layout: str) -> None:
    want = _release(name, frames["data"])
    assert want, name  # some group is released (the comparison is not vacuous)
    assert _release(name, frames[layout]) == want


def test_no_column_is_collected_to_the_driver(frames: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    want = {name: _release(name, frames["data"]) for name in _row_plans()}
    monkeypatch.setattr(SparkSource, "values", refuse)  # every column a Spark source collects passes through it
    for name in _row_plans():
        assert _release(name, frames["repartition(3)"]) == want[name], name


def test_the_no_collect_check_sees_a_collected_column(frames: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: the driver path (the seam refusing the frame) collects, and is caught."""
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    monkeypatch.setattr(SparkSource, "values", refuse)
    monkeypatch.setattr(SparkSource, "grouping", lambda self, *args, **kwargs: None)
    with pytest.raises(Exception, match="collected|BackendError|failed"):
        _release("int keys", frames["as is"])


def test_a_bound_ranked_per_partition_is_caught(frames: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken variant: each user's groups ranked within a partition of the rows, not over all the user's rows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    want = _release("user bound", frames["data"])
    assert _release("user bound", frames["repartition(3)"]) == want
    monkeypatch.setattr(
        _spark_grouping, "_user_window",
        lambda column, kind: Window.partitionBy(F.col(column), F.spark_partition_id(), F.col("code") >= 0).orderBy("p", "h", "code"),
    )  # fmt: skip
    assert _release("user bound", frames["repartition(3)"]) != want


def test_codes_numbered_per_batch_are_caught(frames: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken variant: private keys coded by each batch's own sorted keys, not by the labels."""
    want = _release("private two columns", frames["data"])
    assert _release("private two columns", frames["repartition(4, g)"]) == want  # a partition holds some keys only

    original = _spark_grouping._RowCodes.__init__

    def broken(self: Any, *args: Any, **kwargs: Any) -> None:  # the driver builds it; the instance is pickled with its function
        original(self, *args, **kwargs)
        names, types, by = self.names, self.types, self.by

        def per_batch(batch: Any) -> Any:  # a nested function: pickled by value to the executors
            from dpalg.data import Dataset
            from dpalg.data._groups import group_index
            from dpalg.data._spark_types import arrow_to_numpy

            columns = {names[j]: arrow_to_numpy(batch.column(j), types[j]) for j in by}
            return group_index(Dataset(columns), [names[j] for j in by], None)[1]

        self.codes = per_batch

    monkeypatch.setattr(_spark_grouping._RowCodes, "__init__", broken)
    assert _release("private two columns", frames["repartition(4, g)"]) != want
