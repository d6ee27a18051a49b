"""A string column with a non-binary collation on Spark: read in the binary collation, on the executors, bit for bit numpy.

Under ``UTF8_LCASE`` Spark groups ``"a"`` with ``"A"``, and ``isin`` and joins
match them; the data policy compares strings by code points.
:func:`~dpalg.data._spark.binary_strings` re-reads each such column as
``collate(column, 'UTF8_BINARY')`` when the frame becomes a dataset, so what must
hold:

* seeded releases of plans that group, list, filter on and join by a collated key
  or id equal the numpy backend's on the same strings, with the source's collecting
  reads refused (no column reaches the driver);
* the check is not vacuous: the strings differ only by case, so a grouping in the
  column's own collation changes the releases (the broken variant of reading the
  collated column on the executors as it is, checked below), and without the
  re-reading the column would be collected (also checked);
* a frame without a collated column is returned as it is, and one whose column
  names repeat is re-read all the same (by position, its names given back).

Needs Spark 4 (collations); on an older Spark the module's tests are skipped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from backend_support import comparable, seeded_release, spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import ClipPerUser, From, GroupBy, Join, KeySet, MaxKeysPerUser, MaxRowsPerUser, PartitionSelection, PureToApprox, Query, Where, col  # noqa: E402
from dpalg.data import _spark_types, _spark_units  # noqa: E402
from dpalg.data._spark import SparkSource, binary_strings  # noqa: E402
from dpalg.mechanisms import Laplace, StableHistogram  # noqa: E402

KEYS = ["a", "A", "b", "B", "ß", "SS", "", None]
N = 160

Make = Callable[[], Any]


def _columns() -> dict[str, list[Any]]:
    k = [KEYS[(i * 7) % len(KEYS)] for i in range(N)]
    uid = [["u", "U", "v", "V"][(i * 3) % 4] + str(i % 6) if i % 5 != 4 else None for i in range(N)]
    return {"k": k, "uid": uid, "x": [float(i % 9) for i in range(N)]}


PLANS: dict[str, Make] = {
    "histogram public": lambda: Laplace(Query.histogram("k", keys=("a", "A", "ß", "ss")), epsilon=1),
    "histogram private, user level": lambda: StableHistogram(Query.histogram("k", user="uid") | MaxKeysPerUser(2), epsilon=10, delta="0.1"),
    "where eq": lambda: Laplace(Query.count() | Where(col("k").eq("a")), epsilon=1),
    "GroupBy private": lambda: GroupBy("k", keys=PartitionSelection(epsilon=5, delta="1e-5"), aggregates={"n": PureToApprox(Laplace(Query.count(), epsilon=1))}),
    "GroupBy public by user": lambda: GroupBy("k", keys=KeySet(["a", "B"], other="?"), aggregates={"n": Laplace(Query.count(user="uid") | MaxRowsPerUser(2), epsilon=1)}),
    "sum ClipPerUser": lambda: Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 30), epsilon=1),
}


def _frame(spark: Any, columns: dict[str, list[Any]]) -> Any:
    try:
        return spark.createDataFrame(list(zip(columns["k"], columns["uid"], columns["x"])), "k string collate UTF8_LCASE, uid string collate UTF8_LCASE, x double")
    except Exception as exc:  # noqa: BLE001 -- collations need Spark 4
        pytest.skip(f"this Spark has no collations ({type(exc).__name__})")


def _releases(data: object) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, make in PLANS.items():
        plan = make()
        value, certificate = seeded_release(plan, plan.cost(), data)
        out[name] = (value, comparable(certificate))
    return out


def _refuse_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)


@pytest.fixture(scope="module")
def numpy_releases() -> dict[str, tuple[str, dict[str, Any]]]:
    return _releases(_columns())


def test_collated_keys_and_ids_give_numpy_s_releases_without_a_collected_column(
    spark: Any, monkeypatch: pytest.MonkeyPatch, numpy_releases: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    _refuse_collection(monkeypatch)
    got = _releases(_frame(spark, _columns()).repartition(7, "uid"))
    assert {n: v for n, v in got.items() if v != numpy_releases[n]} == {}


def test_a_join_on_a_collated_key_matches_by_code_points(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tables joined on collated string keys: a case-insensitive join would pair "a" with "A" and "ss" with "SS"."""
    orders: dict[str, list[Any]] = {"oid": [float(i) for i in range(12)], "cust": ["a", "A", "b", "B", "a", "ß", "SS", "ss", "A", "b", "x", "ẞ"]}
    customers: dict[str, list[Any]] = {"ckey": ["a", "b", "ss", "SS"], "region": [1.0, 2.0, 3.0, 4.0]}
    relation = From("orders", Join("customers", "cust", "ckey"))

    def plan() -> Any:
        return Laplace(Query.sum("region", user="cust") | relation | ClipPerUser(0, 16), epsilon=1)

    expected = seeded_release(plan(), plan().cost(), {"orders": orders, "customers": customers})
    _refuse_collection(monkeypatch)
    schema = "{} string collate UTF8_LCASE, {} double"
    frames = {
        "orders": spark.createDataFrame(list(zip(orders["cust"], orders["oid"])), schema.format("cust", "oid")).repartition(3),
        "customers": spark.createDataFrame(list(zip(customers["ckey"], customers["region"])), schema.format("ckey", "region")),
    }
    got = seeded_release(plan(), plan().cost(), frames)
    assert (got[0], comparable(got[1])) == (expected[0], comparable(expected[1]))


def test_the_strings_differ_only_by_case_so_a_case_insensitive_grouping_would_be_caught(
    spark: Any, monkeypatch: pytest.MonkeyPatch, numpy_releases: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    """Not vacuous: the collated column read on the executors as it is (no re-reading, and the kind gate taken away) changes releases."""
    from dpalg.data import _spark as spark_module

    monkeypatch.setattr(spark_module, "binary_strings", lambda frame: frame)
    real_kind, real_unit_kind = _spark_types.spark_kind, _spark_units.unit_key_kind
    for module in [m for name, m in sys.modules.items() if name.startswith("dpalg.") and m is not None]:
        if getattr(module, "spark_kind", None) is real_kind:  # every module that imported the classification by name
            monkeypatch.setattr(module, "spark_kind", lambda dtype: "str" if type(dtype).__name__ == "StringType" else real_kind(dtype))
        if getattr(module, "unit_key_kind", None) is real_unit_kind:
            monkeypatch.setattr(module, "unit_key_kind", lambda dtype: "str" if type(dtype).__name__ == "StringType" else real_unit_kind(dtype))
    got = _releases(_frame(spark, _columns()).repartition(7, "uid"))
    assert {n for n, v in got.items() if v != numpy_releases[n]} >= {"histogram public", "GroupBy private"}


def test_without_the_re_reading_the_collated_column_is_collected(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg.data import _spark as spark_module

    monkeypatch.setattr(spark_module, "binary_strings", lambda frame: frame)
    _refuse_collection(monkeypatch)
    plan = PLANS["histogram public"]()
    with pytest.raises(Exception, match="collected|BackendError|failed"):
        seeded_release(plan, plan.cost(), _frame(spark, _columns()))


def test_a_frame_without_a_collated_column_is_returned_as_it_is(spark: Any) -> None:
    frame = spark.createDataFrame([("a", 1.0)], "k string, x double")
    assert binary_strings(frame) is frame
    collated = _frame(spark, _columns())
    read = binary_strings(collated)
    assert read.columns == collated.columns
    assert [getattr(f.dataType, "collation", "UTF8_BINARY") for f in read.schema.fields[:2]] == ["UTF8_BINARY", "UTF8_BINARY"]


def test_a_frame_with_repeated_names_is_re_read_too(
    spark: Any, monkeypatch: pytest.MonkeyPatch, numpy_releases: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    """Two unread columns of one name beside the collated ones: the collated columns are re-read all the same (by
    position), the names come back as they were, and the public histogram is numpy's with no column collected."""
    from pyspark.sql import functions as F

    frame = _frame(spark, _columns()).withColumn("pad", F.lit(1)).crossJoin(spark.range(1).toDF("pad"))  # a second column named "pad"
    read = binary_strings(frame)
    assert read.columns == ["k", "uid", "x", "pad", "pad"]
    assert [getattr(f.dataType, "collation", "UTF8_BINARY") for f in read.schema.fields[:2]] == ["UTF8_BINARY", "UTF8_BINARY"]
    _refuse_collection(monkeypatch)
    plan = PLANS["histogram public"]()
    value, certificate = seeded_release(plan, plan.cost(), frame)
    assert (value, comparable(certificate)) == numpy_releases["histogram public"]

