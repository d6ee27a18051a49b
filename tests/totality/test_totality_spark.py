"""Totality with Spark ``DecimalType(38, 0)`` ids (DESIGN §3 "Releases are total"), in local mode.

The Spark half of ``test_totality.py``'s Decimal ids: user-level releases on frames whose id column
is ``decimal(38,0)`` (nulls, ids that share a double, the largest 38-digit values) and whose values are
hostile (null, NaN, ±inf, ±1e308) must never raise and must return their plan's output type. The
plans are a few of ``test_totality.py``'s user-level ones (test modules cannot import one another).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from backend_support import spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import Clip, ClipPerUser, MaxRowsPerUser, Query  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.mechanisms import Laplace, ShiftedInverseSearch, StableHistogram  # noqa: E402

PLANS: dict[str, Callable[[], Any]] = {
    "Laplace-user-count": lambda: Laplace(Query.user_count(user="u"), epsilon=1),
    "Laplace-user-sum-clip": lambda: Laplace(Query.sum("x", user="u") | ClipPerUser(0, 100), epsilon=1),
    "Laplace-user-mean-rows": lambda: Laplace(Query.mean("x", user="u") | Clip(0, 10) | MaxRowsPerUser(3), epsilon=1),
    "ShiftedInverseSearch-user-count": lambda: ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 63), epsilon=1),
    "StableHistogram-user": lambda: StableHistogram(Query.histogram("k", user="u") | MaxRowsPerUser(2), epsilon=1, delta="0.05"),
}  # fmt: skip

_IDS: list[Any] = [None, Decimal(2**53), Decimal(2**53 + 1), Decimal(2**53 + 2), Decimal(10**38 - 1), Decimal(-(10**38) + 1), Decimal(0)]
_X: list[Any] = [None, math.nan, math.inf, -math.inf, 1e308, -1e308, 0.5]
ROWS = [(_X[i % len(_X)], _IDS[(3 * i) % len(_IDS)], ["a", "b", None][i % 3]) for i in range(21)]
CLEAN = [(1.0, Decimal(i % 4), "a") for i in range(8)]


def _kind(value: object) -> str:
    return "dict" if isinstance(value, dict) else type(value).__name__


@pytest.mark.parametrize("name", sorted(PLANS))
def test_user_level_releases_are_total_on_spark_decimal_ids(spark: Any, name: str) -> None:
    kinds = []
    for rows in (CLEAN, ROWS, ROWS[:1], []):
        frame = spark.createDataFrame(rows, "x double, u decimal(38,0), k string")
        plan = PLANS[name]()
        plan.check(plan.cost())
        kinds.append(_kind(plan.run(as_dataset(frame), rng=3).value))  # must not raise
    assert len(set(kinds)) == 1, kinds
