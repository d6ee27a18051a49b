"""A Spark DataFrame is evaluated before the charge, and its column names are checked under Spark's resolution.

The Spark half of ``test_lazy_inputs.py`` (``dpalg.data._evaluation``; DESIGN §3,
"Releases are total"):

* a frame whose plan fails on one value of a read column (an ANSI ``cast``, a
  Python UDF that raises) is refused after the schema check, before the charge:
  the session spends nothing, and no dpalg message, warning or Python log record
  shows the value (Spark's own log4j output is Spark's; the test session logs at
  ERROR); the same frame without that row releases;
* a frame with columns ``v`` and ``V`` is refused before the charge under Spark's
  default case-insensitive resolution, naming both; a case-sensitive session
  reads ``v`` as ``v`` (the same release as the numpy columns);
* after the charge a backend failure is a ``BackendError`` naming its type only.

The ANSI setting is set and restored within its test (it is read when a frame is
analysed, so the frame is built inside).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from backend_support import LAZY_BUDGET, LAZY_IDS, LAZY_RAW, SECRET, lazy_plans, no_secret_shown, spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from pyspark.sql import functions as F  # noqa: E402

from dpalg import ApproxDP, BackendError, Clip, InvalidArgument, PureDP, Query, Session  # noqa: E402
from dpalg.mechanisms import Laplace  # noqa: E402

PLANS = lazy_plans()


@contextmanager
def conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """The session's ``key`` set to ``value`` for the block, then restored (or unset)."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _raw(spark: Any, *, without_secret: bool = False) -> Any:
    frame = spark.createDataFrame(list(zip(LAZY_RAW, LAZY_IDS)), "s string, u long")
    return frame.where(F.col("s") != SECRET) if without_secret else frame


def _ansi_cast(spark: Any, *, without_secret: bool = False) -> Any:
    return _raw(spark, without_secret=without_secret).withColumn("x", F.col("s").cast("int"))


def _udf(spark: Any, *, without_secret: bool = False) -> Any:
    def parse(value: Any) -> Any:  # nested: cloudpickle ships it by value (the workers cannot import the test helpers)
        if not value.isdigit():
            raise ValueError(f"not a number: {value!r}")  # user code quotes the value, as parse_or_quote does
        return int(value)

    return _raw(spark, without_secret=without_secret).withColumn("x", F.udf(parse, "int")(F.col("s")))


FAILING = {"ansi-cast": _ansi_cast, "python-udf": _udf}


@pytest.mark.parametrize("plan", ["sum", "keys", "user-sum", "compose"])
@pytest.mark.parametrize("failing", sorted(FAILING))
def test_a_failing_spark_frame_is_refused_before_the_charge(spark: Any, failing: str, plan: str, caplog: pytest.LogCaptureFixture) -> None:
    with conf(spark, "spark.sql.ansi.enabled", "true"):
        session = Session(LAZY_BUDGET)
        with no_secret_shown(caplog) as raised:
            with pytest.raises(InvalidArgument, match=r"could not be computed by the spark backend .*nothing was charged") as info:
                session.run(PLANS[plan](), FAILING[failing](spark), rng=1)
            raised.append(info.value)
        assert session.spent == ApproxDP(0, 0) and session.charges == 0
        with no_secret_shown(caplog):
            session.run(PLANS[plan](), FAILING[failing](spark, without_secret=True), rng=1)  # x' releases
        assert session.charges == 1


def test_a_failing_spark_frame_leaves_no_cache(spark: Any) -> None:
    """The refusal ends the run: the cache it made is released (the run's lifecycle, ``run_data``)."""
    with conf(spark, "spark.sql.ansi.enabled", "true"):
        frame = _ansi_cast(spark)
        with pytest.raises(InvalidArgument):
            Session(LAZY_BUDGET).run(PLANS["sum"](), frame, rng=1)
        assert not frame.is_cached


def _v_and_V(spark: Any) -> Any:
    with conf(spark, "spark.sql.caseSensitive", "true"):  # a case-sensitive session can make such a frame
        return spark.createDataFrame([(float(i), 100.0 + i) for i in range(8)], "v double, V double")


def test_columns_equal_but_for_case_are_refused_before_the_charge(spark: Any) -> None:
    frame = _v_and_V(spark)
    session = Session(PureDP(10))
    with pytest.raises(InvalidArgument, match=r"numeric column='v' and \['V'\] are one column name to Spark"):
        session.run(Laplace(Query.sum("v") | Clip(0, 1000), epsilon=1), frame, rng=1)
    assert session.spent == PureDP(0) and session.charges == 0


def test_a_case_sensitive_session_reads_v_as_v(spark: Any) -> None:
    frame = _v_and_V(spark)
    plan = Laplace(Query.sum("v") | Clip(0, 1000), epsilon=1)
    with conf(spark, "spark.sql.caseSensitive", "true"):
        got = Session(PureDP(10)).run(plan, frame, rng=7).value
    expected = Session(PureDP(10)).run(plan, {"v": [float(i) for i in range(8)]}, rng=7).value
    assert got == expected


def test_two_columns_of_one_name_are_refused_before_the_charge(spark: Any) -> None:
    base = spark.createDataFrame([(1.0, 2.0)], "a double, b double")
    frame = base.select(F.col("a").alias("v"), F.col("b").alias("v"))
    session = Session(PureDP(10))
    with pytest.raises(InvalidArgument, match=r"names 2 columns of the data"):
        session.run(Laplace(Query.sum("v") | Clip(0, 10), epsilon=1), frame, rng=1)
    assert session.charges == 0


def test_a_spark_failure_after_the_charge_is_withheld(spark: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg.data._spark_reductions import SparkReductions

    def fail(self: Any, specs: Any) -> Any:
        raise RuntimeError(f"[CAST_INVALID_INPUT] The value {SECRET!r} of the type STRING cannot be cast")

    monkeypatch.setattr(SparkReductions, "clipped_sums", fail)
    session = Session(LAZY_BUDGET)
    with no_secret_shown(caplog) as raised:
        with pytest.raises(BackendError, match=r"spark backend failed after the charge \(RuntimeError; its message is withheld") as info:
            session.run(PLANS["sum"](), _ansi_cast(spark, without_secret=True), rng=1)
        raised.append(info.value)
    assert session.spent == ApproxDP(1, 0)  # charged before the failure, never refunded (DESIGN §3)
