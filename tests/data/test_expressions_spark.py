"""Row expressions on Spark (local mode) give numpy's values bit for bit, computed on the executors.

Hypothesis expressions and adversarial frames (``expr_support``) in the four layouts of the
conformance suite; then a seeded plan with ``| Where`` and a derived column gives the dict's release,
with its certificate audited, and the transformation is checked not to collect a column.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import numpy as np
from expr_support import conditions, date_days, numpy_frame, outcome, same_values, tables, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend_support import spark_module_marks

pytestmark = spark_module_marks()

import pytest  # noqa: E402

from dpalg import Clip, PureDP, Query, Where, col  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.data._expr import Expr  # noqa: E402
from dpalg.mechanisms import Laplace  # noqa: E402
from dpalg.release import audit_certificate  # noqa: E402

LAYOUTS = ("as created", "repartition(1)", "repartition(7)", "repartition(7, id)")


def _spark(session: Any, table: dict[str, list[Any]], layout: str) -> Any:
    from pyspark.sql import functions as F

    rows = list(zip(table["x"], table["y"], table["b"], table["s"], date_days(table), table["id"]))
    frame = session.createDataFrame(rows, "x double, y double, b boolean, s string, d_days int, id long")
    # a DateType column from day numbers: days outside years 1 to 9999 too (Python's date cannot hold them)
    frame = frame.withColumn("d", F.date_from_unix_date("d_days")).drop("d_days")
    if layout == "repartition(1)":
        return frame.repartition(1)
    if layout == "repartition(7)":
        return frame.repartition(7)
    if layout == "repartition(7, id)":
        return frame.repartition(7, "id")
    return frame


def _by_id(ids: list[int], v: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[list[int], np.ndarray[Any, np.dtype[np.float64]]]:
    order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
    return [ids[i] for i in order], v[order]


@pytest.mark.usefixtures("spark_defaults")  # Spark's default evaluation, what a user runs (tests/conftest.py)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # about a second each (the Spark step of CI stays under five minutes); the adversarial frames below are fixed
@given(table=tables(max_rows=10), where=conditions, value=values, layout=st.sampled_from(LAYOUTS))
def test_spark_equals_numpy_bit_for_bit(spark: Any, table: dict[str, list[Any]], where: Expr, value: Expr, layout: str) -> None:
    ids, got = _by_id(*outcome(as_dataset(numpy_frame(table)), where, value))
    sids, sgot = _by_id(*outcome(as_dataset(_spark(spark, table, layout)), where, value))
    assert ids == sids
    assert same_values(got, sgot), (repr(where), repr(value), got, sgot)


@pytest.mark.usefixtures("spark_defaults")  # Spark's default evaluation, what a user runs (tests/conftest.py)
def test_adversarial_values_on_spark(spark: Any) -> None:
    """Division by zero (ANSI mode would raise), overflow, -0.0, NaN and null, floor above 2**52."""
    table: dict[str, list[Any]] = {
        "x": [0.0, -0.0, None, math.nan, 1e308, 4503599627370497.5, -0.5, 2.5],
        "y": [0.0, -1.0, 1.0, 1.0, 0.1, 1.0, 0.0, 2.0],
        "b": [True] * 8,
        "s": ["a", None, "B", "é", "", "z", "a", "b"],
        "d": [8766, None, -1, -719162, 2932896, 2932897, -(2**31) + 1, 11016],  # 1994-01-01, null, 1969-12-31, years 1, 9999, 10000, ...
        "id": list(range(8)),
    }
    cases = [
        (col("b"), col("x") / col("y")),
        (col("s") < "b", -col("x")),
        (col("x").is_null() | (col("y") > 0), col("x").floor() + col("x").ceil()),
        (col("s").is_in(["a", "é"]), col("x").minimum(col("y"))),
        (~(col("x") > 0), col("x").bin([-1, 0, 1, 1e300])),
        ("1994-01-01" > col("d"), col("d").year() * 100 + col("d").month()),
        (col("d").is_in(["0001-01-01", "2000-02-29"]) | col("d").is_null(), col("d").day()),
    ]
    for where, value in cases:
        ids, got = outcome(as_dataset(numpy_frame(table)), where, value)
        for layout in ("as created", "repartition(7, id)"):
            sids, sgot = _by_id(*outcome(as_dataset(_spark(spark, table, layout)), where, value))
            assert sids == ids and same_values(got, sgot), (repr(where), repr(value), layout, got, sgot)


def test_a_seeded_plan_with_row_steps_gives_the_dicts_release_without_collecting(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    table = {
        "x": rng.uniform(0, 100, n).tolist(), "y": rng.uniform(0, 1, n).tolist(), "b": (rng.uniform(size=n) < 0.7).tolist(),
        "s": rng.choice(["a", "b", "c"], n).tolist(), "id": list(range(n)),
    }  # fmt: skip

    def run(data: Any) -> tuple[object, dict[str, Any]]:
        plan = Laplace(Query.sum(col("x") * (1 - col("y"))) | Where(col("b") & col("s").is_in(["a", "b"])) | Clip(0, 100), epsilon=1)
        plan.check(PureDP(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            release = plan.run(data, rng=11)
        return release.value, json.loads(json.dumps(release.certificate))

    value, _ = run(numpy_frame(table))
    from dpalg.data._spark import SparkSource

    def refuse(self: Any, name: str) -> Any:
        raise AssertionError(f"column {name!r} collected to the driver")

    monkeypatch.setattr(SparkSource, "materialise", refuse)
    monkeypatch.setattr(SparkSource, "numeric", refuse)
    got, cert = run(_spark(spark, table, "repartition(7, id)"))
    assert got == value
    assert audit_certificate(cert).status == "cost_confirmed"


@pytest.mark.parametrize("mechanism", ["R2T", "AutoClipSum", "AutoClipSum count"])
def test_a_join_of_spark_tables_runs_on_the_executors_and_gives_the_dicts_release(spark: Any, monkeypatch: pytest.MonkeyPatch, mechanism: str) -> None:
    from dpalg.data._spark import SparkSource
    from dpalg.data._tables import From, Join
    from dpalg.mechanisms import R2T, AutoClipSum

    rng = np.random.default_rng(0)  # synthetic data only
    db: dict[str, dict[str, Any]] = {
        "customer": {"c_custkey": list(range(40)), "c_nation": rng.integers(0, 5, 40).tolist()},
        "orders": {"o_orderkey": rng.integers(0, 150, 200).tolist(), "o_custkey": rng.integers(0, 41, 200).tolist()},  # keys repeat, dangle
        "lineitem": {"l_orderkey": rng.integers(0, 160, 900).tolist(), "l_price": rng.uniform(0, 100, 900).tolist()},
    }
    relation = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey"))

    def run(data: Any) -> tuple[object, dict[str, Any]]:
        kept = Where(col("c_nation") < 3)
        plan = {
            "R2T": R2T(Query.sum("l_price", user="o_custkey") | relation | kept, epsilon=1, upper_limit=10**4),
            "AutoClipSum": AutoClipSum(Query.sum(col("l_price") * 2, user="o_custkey") | relation | kept, epsilon=1, upper_limit=10**4),
            "AutoClipSum count": AutoClipSum(Query.count(user="o_custkey") | relation | kept, epsilon=1, upper_limit=10**4),
        }[mechanism]
        plan.check(PureDP(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            release = plan.run(data, rng=5)
        return release.value, json.loads(json.dumps(release.certificate))

    value, _ = run({k: {c: np.asarray(v) for c, v in t.items()} for k, t in db.items()})

    def refuse(self: Any, name: str) -> Any:
        raise AssertionError(f"column {name!r} collected to the driver")

    monkeypatch.setattr(SparkSource, "materialise", refuse)
    monkeypatch.setattr(SparkSource, "numeric", refuse)
    frames = {
        "customer": spark.createDataFrame(list(zip(*db["customer"].values())), "c_custkey long, c_nation long"),
        "orders": spark.createDataFrame(list(zip(*db["orders"].values())), "o_orderkey long, o_custkey long").repartition(7),
        "lineitem": spark.createDataFrame(list(zip(*db["lineitem"].values())), "l_orderkey long, l_price double").repartition(5),
    }
    got, cert = run(frames)
    assert got == value
    assert audit_certificate(cert).status == "cost_confirmed"
