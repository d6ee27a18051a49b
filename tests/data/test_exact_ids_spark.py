"""Spark ids are compared exactly (the Spark half of ``test_exact_ids.py``), in local mode.

A ``DecimalType(38, s)`` id column -- what most SQL sources give Spark for a numeric key -- is
collected and read by the key policy value by value; ``LongType`` and ``DoubleType`` ids are grouped
on the executors. Either way ``unit_count`` and the per-unit reductions must equal the brute force over
``fractions.Fraction`` of the values, whatever the layout, and the colliding Decimal pair must change
a ``ClipPerUser(-10, 10)`` total by at most 10. Before, ``DecimalType`` ids went through ``float``:
five ids from 2**53 on were three users.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from backend_support import spark_module_marks
from exact_ids_support import BIG, EXACT_VALUES, brute_sums, brute_units, decimal, exact, id_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import ClipPerUser, Query  # noqa: E402
from dpalg.data import as_dataset, as_reductions  # noqa: E402

_POOLS: dict[str, list[Fraction]] = {
    "decimal(38,0)": [v for v in EXACT_VALUES if v.denominator == 1 and abs(v) < 10**38],
    "decimal(38,10)": [v for v in EXACT_VALUES if (v * 10**10).denominator == 1 and abs(v * 10**10) < 10**38],
    "long": [v for v in EXACT_VALUES if v.denominator == 1 and -(2**63) <= v < 2**63],
    "double": [v for v in EXACT_VALUES if Fraction(v.numerator / v.denominator) == v],
}


def _cell(value: object, id_type: str) -> object:
    e = exact(value)
    if e is None:
        return None
    if id_type.startswith("decimal"):
        return decimal(e, int(id_type.split(",")[1].rstrip(")")))
    return int(e) if id_type == "long" else e.numerator / e.denominator


def frame(spark: Any, id_type: str, ids: list[object], x: list[float], layout: str) -> Any:
    rows = [(v, _cell(u, id_type)) for u, v in zip(ids, x)]
    df = spark.createDataFrame(rows, f"x double, u {id_type}")
    return df.repartition(3, "u") if layout == "repartition(3, u)" else df


def assert_exact_units(df: Any, ids: list[object], x: list[float]) -> None:
    reductions = as_reductions(as_dataset(df))
    assert type(reductions).__name__ == "SparkReductions"
    brute = brute_units(ids)
    assert reductions.unit_count("u") == len(brute)
    assert reductions.per_unit_row_counts("u", None).tolist() == sorted(brute.values())
    assert reductions.per_unit_row_counts("u", "x").tolist() == sorted(brute.values())
    assert reductions.per_unit_sums("u", "x", None, None, 0).tolist() == brute_sums(ids, x)
    keys, counts = reductions.key_histogram("u")
    assert len(keys) == len(brute) and sorted(counts.tolist()) == sorted(brute.values())


@pytest.mark.parametrize("id_type", sorted(_POOLS))
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_spark_ids_count_exact_users(spark: Any, id_type: str, data: st.DataObject) -> None:
    ids = data.draw(id_rows(pool=_POOLS[id_type]))
    x = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(ids), max_size=len(ids)))
    layout = data.draw(st.sampled_from(["as created", "repartition(3, u)"]))
    assert_exact_units(frame(spark, id_type, ids, x, layout), ids, x)


def test_five_decimal_ids_from_two_to_53_are_five_users(spark: Any) -> None:
    ids: list[object] = [Decimal(BIG + k) for k in range(5) for _ in range(2)]
    x = [1.0] * len(ids)
    for id_type in ("decimal(38,0)", "decimal(38,10)"):
        assert_exact_units(frame(spark, id_type, ids, x, "as created"), ids, x)


def test_the_colliding_pair_on_spark_changes_the_clamped_total_within_the_sensitivity(spark: Any) -> None:
    query = Query.sum("x", user="u") | ClipPerUser(-10, 10)
    before_ids: list[object] = [Decimal(BIG), Decimal(BIG + 2), Decimal(BIG + 4)]
    first = frame(spark, "decimal(38,0)", before_ids, [-10.0, 1.0, 2.0], "as created")
    second = frame(spark, "decimal(38,0)", [*before_ids, Decimal(BIG + 1)], [-10.0, 1.0, 2.0, 20.0], "as created")
    before, after = query.evaluate(as_dataset(first)), query.evaluate(as_dataset(second))
    assert isinstance(before, float) and isinstance(after, float)
    assert after - before == 10  # the new user's own clamped total (through float: 20)
