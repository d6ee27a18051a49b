"""Sample-and-aggregate on Spark (issue 17, part 2): the same seeded release as numpy, bit for bit.

Labels are keyed PRFs computed on the executors, the block function runs per block
in ``applyInArrow``, and only the m outputs reach the driver. For the mean, the
median and the mode; the column form, the Dataset form and a
``Query.function | Clip``; row and user level; an order-sensitive block function
that fails on some blocks: the release on a Spark frame, also after
``repartition(7)`` and ``repartition(7, "id")``, equals the release on the same
data as a dict, and the certificates agree except for the backend. A column type
the executors do not read (decimal) takes the numpy path, with the same release. A ``BoundedLS`` with a Python value
function is ``Unsupported`` on Spark.

``@pytest.mark.spark``; skipped only where pyspark or Java is absent. The block
functions of this module are pickled by value (the executors cannot import a
test module).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
import os
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from backend_support import spark_module_marks  # tests/data/backend_support.py (tests/conftest.py puts it on sys.path)

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from pyspark import cloudpickle  # noqa: E402

from dpalg import ApproxDP, Clip, Compose, PureDP, PureToApprox, Query, Session, Unsupported  # noqa: E402
from dpalg.data import Dataset  # noqa: E402
from dpalg.mechanisms import BoundedLS, NoisyCount, SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode  # noqa: E402

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python: this interpreter, with dpalg
_by_value: Any = cloudpickle.register_pickle_by_value  # untyped
_by_value(sys.modules[__name__])

ROWS = 900


def _columns() -> dict[str, list[Any]]:
    gen = np.random.default_rng(11)  # synthetic data only
    x: list[Any] = np.round(gen.normal(5, 2, ROWS)).tolist()  # many identical rows: occurrences matter
    for i in range(0, ROWS, 41):
        x[i] = None
    for i in range(7, ROWS, 53):
        x[i] = math.nan
    x[1:4] = [-0.0, 0.0, math.inf]
    s: list[Any] = [None if v == 0 else "abc"[: int(v)] for v in gen.integers(0, 4, ROWS)]
    ids: list[Any] = gen.integers(0, 150, ROWS).tolist()
    d: list[Any] = [Decimal(int(v)) for v in gen.integers(0, 10, ROWS)]
    return {"id": ids, "x": x, "s": s, "d": d}


def _as_dict(columns: dict[str, list[Any]]) -> dict[str, npt.NDArray[Any]]:
    """The same data as numpy columns, as the Spark source reads them (floats with NaN, str and decimal as objects)."""
    out: dict[str, npt.NDArray[Any]] = {"id": np.array(columns["id"], dtype=np.int64)}
    out["x"] = np.array([math.nan if v is None else v for v in columns["x"]], dtype=np.float64)
    for name in ("s", "d"):
        out[name] = np.empty(ROWS, dtype=object)
        out[name][:] = columns[name]
    return out


def _ordered(block: Dataset) -> float:
    """Order-sensitive (weights by position) and failing on some blocks: both must agree across backends."""
    x = np.nan_to_num(block.numeric("x"), nan=0.0, posinf=50.0)
    s = block.column("s").tolist()
    if s.count("ab") % 5 == 4:
        raise ValueError("fails on some blocks")
    return float(np.sum(x * np.arange(1, x.size + 1)) % 97) + 0.001 * sum(len(str(v)) for v in s if v is not None)


def _rounded_median(x: npt.NDArray[np.float64]) -> float:
    return float(round(float(np.median(x))))


QUERY = Query.function(_rounded_median, column="x", fallback=0) | Clip(0, 10)


def _row_level() -> Compose[ApproxDP]:
    return Compose(
        PureToApprox(SampleAggregateMean(np.median, blocks=6, lower=0, upper=10, epsilon=1, column="x")),
        SampleAggregateMedian(_ordered, blocks=6, lower=0, upper=100, epsilon=1, delta="1e-6", reads=("s", "x")),
        SampleAggregateMode(QUERY, blocks=8, epsilon=1, delta="0.05"),
    )


def _user_level() -> Compose[ApproxDP]:
    return Compose(
        PureToApprox(SampleAggregateMean(_ordered, blocks=6, lower=0, upper=100, epsilon=1, unit="id", reads=("x", "s"))),
        SampleAggregateMedian(QUERY, blocks=6, lower=0, upper=10, epsilon=1, delta="1e-6", unit="id"),
        SampleAggregateMode(np.max, blocks=8, epsilon=1, delta="0.05", unit="id", column="x"),
    )


def _release(plan: Any, budget: Any, data: object) -> tuple[str, dict[str, Any]]:
    plan.check(budget)
    release = plan.run(data, rng=20240917)
    certificate = json.loads(release.certificate_json())
    for field in ("created", "digest", "backend", "schema"):  # the schema's declared types differ between backends
        certificate.pop(field, None)
    return repr(release.value), certificate


@pytest.mark.parametrize(
    ("make", "budget"),
    [(_row_level, ApproxDP(3, "0.050001")), (_user_level, ApproxDP(3, "0.050001"))],
    ids=["row-level", "user-level"],
)
def test_seeded_release_is_the_same_on_spark_and_a_dict(spark: Any, make: Callable[[], Compose[ApproxDP]], budget: ApproxDP) -> None:
    columns = _columns()
    frame = spark.createDataFrame(list(zip(*columns.values())), "id long, x double, s string, d decimal(10,0)")
    expected = _release(make(), budget, _as_dict(columns))
    assert expected[0] != repr((None,) * 3)
    for shuffled in (frame, frame.repartition(7), frame.repartition(7, "id")):
        assert _release(make(), budget, shuffled) == expected


def test_a_type_the_executors_do_not_read_takes_the_numpy_path(spark: Any) -> None:
    columns = _columns()
    frame = spark.createDataFrame(list(zip(*columns.values())), "id long, x double, s string, d decimal(10,0)")
    def node() -> SampleAggregateMean:
        return SampleAggregateMean(np.mean, blocks=4, lower=0, upper=10, epsilon=1, column="d")

    assert _release(node(), PureDP(1), frame.repartition(7)) == _release(node(), PureDP(1), _as_dict(columns))


def test_bounded_ls_with_a_python_value_function_is_unsupported_on_spark(spark: Any) -> None:
    frame = spark.createDataFrame([(1.0,)], "in_a double")
    counts = (NoisyCount("a", where="in_a"), NoisyCount("b"))
    node = BoundedLS(lambda d: Fraction(1), "1/(b_lo - 1)", counts, epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
    node.check(node.cost())
    with pytest.raises(Unsupported, match="Python function.*Spark"):
        node.run(frame, rng=1)
    session = Session(node.cost())  # refused with the schema check, before the charge: nothing is spent
    with pytest.raises(Unsupported, match="Python function.*Spark"):
        session.run(node, frame, rng=1)
    assert session.charges == 0
