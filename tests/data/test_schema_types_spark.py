"""Schema mistakes on a Spark DataFrame cost nothing: the Spark type decides, before the charge, with no job run.

The Spark half of ``tests/foundation/test_schema_types.py`` (the table of
``docs/data_policy.md``): string, boolean, date, timestamp, decimal, binary,
bigint and double columns, each read in each role.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from backend_support import ACCEPTS, spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import Clip, InvalidArgument, PureDP, Query, Session  # noqa: E402
from dpalg.graph._node import AbstractMeasurement  # noqa: E402
from dpalg.mechanisms import Laplace, StableHistogram  # noqa: E402

# column -> (Spark DDL type, kind of the schema table, the values: distinctive, never to be printed)
COLUMNS: dict[str, tuple[str, str, list[Any]]] = {
    "c_string": ("string", "str", ["zq7", "xk9", None]),
    "c_boolean": ("boolean", "bool", [True, False, None]),
    "c_date": ("date", "time", [dt.date(2031, 7, 19), None, dt.date(2031, 8, 1)]),
    "c_timestamp": ("timestamp", "time", [dt.datetime(2031, 7, 19), None, dt.datetime(2031, 8, 1)]),
    "c_decimal": ("decimal(10,2)", "object", [Decimal("735.25"), None, Decimal("860.75")]),
    "c_binary": ("binary", "bytes", [b"zq7", None, b"xk9"]),
    "c_bigint": ("bigint", "int", [73519, None, 86023]),
    "c_double": ("double", "float", [735.25, None, 860.75]),
}
SECRETS = ("zq7", "xk9", "2031", "735.25", "860.75", "73519", "86023")

PLANS: dict[str, tuple[str, Callable[[str], AbstractMeasurement[Any]]]] = {
    "mean": ("numeric", lambda c: Laplace(Query.mean(c) | Clip(0, 10), epsilon="0.3")),
    "stable-histogram": ("key", lambda c: StableHistogram(Query.histogram(c), epsilon=1, delta="0.05")),
    "histogram-int-keys": ("int-keys", lambda c: Laplace(Query.histogram(c, keys=(1984, 1990)), epsilon="0.2")),
    "histogram-str-keys": ("str-keys", lambda c: Laplace(Query.histogram(c, keys=("1984", "1990")), epsilon="0.2")),
    "user-count": ("id", lambda c: Laplace(Query.user_count(user=c), epsilon=1)),
}


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    schema = ", ".join(f"{name} {ddl}" for name, (ddl, _, _) in COLUMNS.items())
    rows = [tuple(values[i] for _, _, values in COLUMNS.values()) for i in range(3)]
    return spark.createDataFrame(rows, schema)


def test_each_spark_type_is_accepted_or_refused_by_its_role_before_the_charge(frame: Any) -> None:
    for column, (ddl, kind, _) in COLUMNS.items():
        for plan_name, (role, build) in PLANS.items():
            session = Session(PureDP(10))
            if kind in ACCEPTS[role]:
                if plan_name in ("mean", "user-count"):  # one release per role kind is enough on Spark (each runs jobs)
                    session.run(build(column), frame)
                    assert session.charges == 1, (column, plan_name)
                continue
            with pytest.raises(InvalidArgument) as info:
                session.run(build(column), frame)
            assert session.spent == PureDP(0) and session.charges == 0, (column, plan_name)
            message = str(info.value)
            assert f"column='{column}'" in message and f"({'spark'})" in message, message
            assert ddl.split("(")[0] in message, message
            public = {"1984", "1990"}
            assert not [s for s in SECRETS if s in message and s not in public], message
