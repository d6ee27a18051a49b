"""Decimal, null and date key and id columns on Spark: grouped on the executors, bit for bit the numpy backend.

A ``DecimalType(p, s)`` column is grouped by Spark exactly (one fixed scale per
column, so equal values are equal decimals) and the key policy's canonical key
(``Decimal('1.00')`` is the key ``1``) is applied in the driver to one record per
distinct key; a ``NullType`` column holds only missing values. What must hold:

* seeded releases of ``GroupBy`` (public keys, "other", two key columns, private
  keys with a per-user bound), user-level histograms (public and private keys),
  ``Parallel(by=...)`` at user level and per-user sums (``ClipPerUser``, the kept
  rows under ``MaxRowsPerUser``, both) and sample-and-aggregate's user blocks over
  decimal keys and ids (``2**53`` and ``2**53 + 1`` in ``decimal(38,0)``; ``1.00``,
  ``1.10``, ``-2.50``, ``0.00`` in ``decimal(10,2)``; negative; null) and over a
  null-typed key or id are the numpy backend's on the same values: every plan in
  ``repartition(7)``, those whose executors read whole users per partition also in
  ``repartition(1)`` and ``repartition(7, uid)`` (:data:`PER_USER`);
* with the source's collecting reads refused, every one of these plans still
  releases (no column reaches the driver);
* a date key or id is refused by the schema check before the charge, on Spark as
  on numpy (``datetime64`` is not a key dtype), and no column is collected for it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from backend_support import USER_LAYOUTS, comparable, seeded_release, spark_module_marks, user_layout

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import (  # noqa: E402
    Clip, ClipPerUser, GroupBy, InvalidArgument, KeySet, MaxGroupsPerUser, MaxKeysPerUser, MaxRowsPerUser,
    Parallel, PartitionSelection, PureToApprox, Query,
)  # fmt: skip
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.mechanisms import Laplace, SampleAggregateMean, StableHistogram  # noqa: E402

BIG = 2**53

#: ids: decimal(38,0), with 2**53 and 2**53 + 1 (one double), a negative, zero, 10**30 and a null
IDS: list[Decimal | None] = [Decimal(BIG), Decimal(BIG + 1), Decimal(-7), Decimal(0), Decimal(10**30), None] + [Decimal(i) for i in range(1, 55)]
#: keys in decimal(38,0)
WIDE: list[Decimal | None] = [Decimal(BIG), Decimal(BIG + 1), Decimal(-3), Decimal(0), Decimal(5), None]
#: keys in decimal(10,2): 1.00 is the key 1, 0.50 the key 0.5, 1.10 the key Fraction(11, 10)
SCALED: list[Decimal | None] = [Decimal("1.00"), Decimal("1.10"), Decimal("-2.50"), Decimal("0.00"), Decimal("0.50"), Decimal("3.00"), None]

SCHEMA = "uid decimal(38,0), k decimal(38,0), d decimal(10,2), z void, x double"


def _columns() -> dict[str, list[Any]]:
    gen = np.random.default_rng(11)
    n = 300
    uid = [IDS[i] for i in gen.integers(0, len(IDS), n)]
    for i in range(0, 24):  # the twins 2**53 and 2**53 + 1 hold many rows: merging them changes the releases
        uid[i * 10] = IDS[i % 2]
    k = [WIDE[i] for i in gen.integers(0, len(WIDE), n)]
    d = [SCALED[i] for i in gen.integers(0, len(SCALED), n)]
    x = [float(v) for v in gen.integers(0, 12, n)]
    return {"uid": uid, "k": k, "d": d, "z": [None] * n, "x": x}


def _frame(spark: Any, columns: dict[str, list[Any]]) -> Any:
    return spark.createDataFrame(list(zip(*(columns[c] for c in ("uid", "k", "d", "z", "x")))), SCHEMA)


Make = Callable[[], Any]


def _user_sum() -> Any:
    return Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 30), epsilon=1)


def _user_count() -> Any:
    return Laplace(Query.count(user="uid") | MaxRowsPerUser(3), epsilon=1)


PLANS: dict[str, Make] = {  # a checked plan runs once: each run builds its own
    "GroupBy decimal(38,0) public, other": lambda: (
        GroupBy("k", keys=KeySet([BIG, BIG + 1, -3, 0, 99], other=-1), aggregates={"n": _user_count(), "s": _user_sum()})
    ),
    "GroupBy decimal(10,2) public": lambda: (
        GroupBy("d", keys=KeySet([1, Fraction(11, 10), 1.1, -2.5, 0, 0.5, 7]), aggregates={"n": Laplace(Query.count(), epsilon=1)})
    ),
    "GroupBy two decimal columns": lambda: (
        GroupBy(("k", "d"), keys=KeySet([(BIG, 1), (BIG + 1, 1), (-3, -2.5), (0, 0)]), aggregates={"n": _user_count()})
    ),
    "GroupBy private, user bound": lambda: (
        GroupBy("k", keys=PartitionSelection(epsilon=3, delta="1e-5"), aggregates={"n": PureToApprox(_user_count())}, bound=MaxGroupsPerUser(1))
    ),
    "GroupBy private decimal(10,2)": lambda: (
        GroupBy("d", keys=PartitionSelection(epsilon=3, delta="1e-5"), aggregates={"n": PureToApprox(Laplace(Query.count(), epsilon=1))})
    ),
    "histogram public": lambda: (
        Laplace(Query.histogram("d", keys=(1, 0, 3, -2), user="uid") | MaxKeysPerUser(2), epsilon=1)
    ),
    "histogram private": lambda: (
        StableHistogram(Query.histogram("k", user="uid") | MaxKeysPerUser(2) | MaxRowsPerUser(4), epsilon=10, delta="0.1")
    ),
    "row-level histogram": lambda: StableHistogram(Query.histogram("k"), epsilon=10, delta="0.1"),
    "Parallel by decimal": lambda: Parallel(by="d", parts={1: _user_sum(), 3: _user_count(), 0: _user_sum()}),
    "Parallel by decimal(38,0)": lambda: Parallel(by="k", parts={BIG: _user_sum(), BIG + 1: _user_sum(), -3: _user_count()}),
    "sum ClipPerUser": lambda: _user_sum(),
    "sample-and-aggregate": lambda: SampleAggregateMean(np.median, blocks=4, lower=0, upper=12, epsilon=1, unit="uid", column="x"),
    "sum MaxRowsPerUser": lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(2), epsilon=1),
    "sum MaxRowsPerUser ClipPerUser": lambda: (
        Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(2) | ClipPerUser(0, 15), epsilon=1)
    ),
    # a null-typed key or id: every value missing
    "GroupBy null public": lambda: GroupBy("z", keys=KeySet([1, 2], other=-1), aggregates={"n": _user_count()}),
    "GroupBy null private": lambda: (
        GroupBy("z", keys=PartitionSelection(epsilon=3, delta="1e-5"), aggregates={"n": PureToApprox(_user_count())}, bound=MaxGroupsPerUser(1))
    ),
    "GroupBy decimal by null id": lambda: (
        GroupBy("k", keys=KeySet([BIG, BIG + 1]), aggregates={"n": Laplace(Query.count(user="z") | MaxRowsPerUser(3), epsilon=1)})
    ),
    "histogram null key": lambda: Laplace(Query.histogram("z", keys=(1, 2), user="uid") | MaxKeysPerUser(2), epsilon=1),
    "histogram null key, private": lambda: StableHistogram(Query.histogram("z", user="uid") | MaxKeysPerUser(2), epsilon=10, delta="0.1"),
    "histogram null id": lambda: (
        StableHistogram(Query.histogram("k", user="z") | MaxKeysPerUser(2), epsilon=10, delta="0.1")
    ),
    "Parallel by null": lambda: Parallel(by="z", parts={1: _user_sum(), 2: _user_count()}),
    "sum null id": lambda: Laplace(Query.sum("x", user="z") | Clip(0, 10) | MaxRowsPerUser(2) | ClipPerUser(0, 15), epsilon=1),
}


def _run(make: Make, data: object) -> tuple[str, dict[str, Any]]:
    plan = make()
    return seeded_release(plan, plan.cost(), data)


def _releases(data: object, names: list[str] | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in names or list(PLANS):
        value, certificate = _run(PLANS[name], data)
        out[name] = (value, comparable(certificate))
    return out


@pytest.fixture(scope="module")
def numpy_releases() -> dict[str, tuple[str, dict[str, Any]]]:
    return _releases(_columns())


def test_the_decimal_twins_are_two_keys_and_two_users(numpy_releases: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """Not vacuous: the numpy releases list 2**53 and 2**53 + 1 apart, and 1 and 11/10 apart."""
    assert f"{BIG}: " in numpy_releases["GroupBy private, user bound"][0] and f"{BIG + 1}: " in numpy_releases["GroupBy private, user bound"][0]
    assert "Fraction(11, 10)" in numpy_releases["GroupBy private decimal(10,2)"][0]


def _refuse_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)


#: the plans whose executor side reads whole users per partition (``mapInArrow`` after a ``repartition`` by the id,
#: or a window by the user): run in every layout; every plan runs in ``repartition(7)``
PER_USER = ("GroupBy private, user bound", "histogram private", "sum MaxRowsPerUser ClipPerUser")


@pytest.mark.parametrize("layout", USER_LAYOUTS)
def test_seeded_releases_equal_numpy_without_a_collected_column(
    spark: Any, monkeypatch: pytest.MonkeyPatch, numpy_releases: dict[str, tuple[str, dict[str, Any]]], layout: str
) -> None:
    _refuse_collection(monkeypatch)
    frame = user_layout(_frame(spark, _columns()), layout)
    names = list(PLANS) if layout == "repartition(7)" else list(PER_USER)
    got = _releases(frame, names)
    assert {n: v for n, v in got.items() if v != numpy_releases[n]} == {}


def test_the_check_sees_a_collected_decimal_column(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: with the decimal kind taken away again (the numpy fallback, which collects), a release fails."""
    from dpalg.data import _spark_units

    _refuse_collection(monkeypatch)
    real = _spark_units.unit_key_kind
    monkeypatch.setattr(_spark_units, "unit_key_kind", lambda dtype: None if type(dtype).__name__ == "DecimalType" else real(dtype))
    frame = _frame(spark, _columns())
    with pytest.raises(Exception, match="collected|BackendError|failed"):
        _run(PLANS["sum ClipPerUser"], frame)


# -- dates -------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["key", "id", "group", "part"])
def test_a_date_key_or_id_is_refused_before_the_charge_without_a_collected_column(spark: Any, monkeypatch: pytest.MonkeyPatch, role: str) -> None:
    day = datetime.date(2024, 1, 1)
    rows = [(day + datetime.timedelta(days=i % 5), i % 7, float(i)) for i in range(30)]
    frame = spark.createDataFrame(rows, "t date, u long, x double")
    numpy_columns = {"t": np.array([r[0] for r in rows], dtype="datetime64[D]"), "u": [r[1] for r in rows], "x": [r[2] for r in rows]}
    plans: dict[str, Make] = {
        "key": lambda: Laplace(Query.histogram("t", keys=(1,), user="u") | MaxKeysPerUser(1), epsilon=1),
        "id": lambda: Laplace(Query.sum("x", user="t") | ClipPerUser(0, 10), epsilon=1),
        "group": lambda: GroupBy("t", keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"n": PureToApprox(Laplace(Query.count(), epsilon=1))}),
        "part": lambda: Parallel(by="t", parts={1: Laplace(Query.count(), epsilon=1)}),
    }
    for data in (numpy_columns, frame):  # the same refusal (the dtype printed as each backend names it)
        if data is frame:
            _refuse_collection(monkeypatch)
        with pytest.raises(InvalidArgument, match=r"column='t' has dtype (datetime64\[D\] \(numpy\)|date \(spark\)): keys and ids must be"):
            _run(plans[role], data)
