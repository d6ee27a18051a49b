"""Schema mistakes cost nothing: a column type its role cannot read is refused before the charge.

DESIGN §3 ("the public schema (column names, dtypes) is validated *before* the
charge") and ``docs/data_policy.md`` (the table of column kind x role). Table
driven over input type x query kind x column dtype: every refused combination
raises ``InvalidArgument`` in ``Session.run`` with nothing spent, and in a
checked plan's ``run`` without using its one run; the message names the node,
the column and its type, and no value. Every accepted combination passes the
check, and one plan per role still releases.

The decision depends on the type alone: each case's column holds one missing
value next to ordinary ones, and the same decision holds for the column with
no missing value (a nullable pandas column converts to a different numpy array
then, so the dataset's declared type, not the array, must decide).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest

from backend_support import ACCEPTS  # the schema table, shared with tests/data/test_schema_types_spark.py (tests/conftest.py puts tests/data on sys.path)
from dpalg import (
    ApproxDP,
    Clip,
    ClipPerUser,
    Compose,
    GroupPrivacy,
    InvalidArgument,
    MaxKeysPerUser,
    Parallel,
    PureDP,
    Query,
    Session,
    ZCDP,
)
from dpalg.data import as_dataset
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._schema import validate_schema
from dpalg.mechanisms import (
    CalibratedLaplaceSum,
    ExponentialQuantile,
    Gaussian,
    KSWRatio,
    Laplace,
    LocalSensAtDistance,
    NoisyMax,
    PrivateRatio,
    ProposeTest,
    PTRMode,
    SampleAggregateMean,
    ShiftedInverse,
    SmoothBound,
    SmoothBoundCauchy,
    StableHistogram,
)

C = "col_c"  # the column under test
N = 6
# the values of the column under test, by kind: distinctive, so that a message that printed one is caught
INTS = [73519, 86023, 73519, None, 86023, 73519]
FLOATS = [735.25, 860.75, 735.25, None, 860.75, 735.25]
BOOLS = [True, False, True, None, False, True]
STRS = ["zq7", "xk9", "zq7", None, "xk9", "zq7"]
SECRETS = ("73519", "86023", "735.25", "860.75", "zq7", "xk9", "2031", "4242")
DATES = [dt.date(2031, 7, 19), dt.date(2031, 8, 1), None, dt.date(2031, 7, 19), dt.date(2031, 7, 19), dt.date(2031, 8, 1)]
INT_KEYS = (73519, 86023)
STR_KEYS = ("zq7", "xk9")


def _present(values: list[Any], fill: Any) -> list[Any]:
    return [fill if v is None else v for v in values]


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# --- the inputs: (library, builder of the column under test, kind of the schema table) ----------------------------

Build = Callable[[bool], Any]  # missing: whether the column holds a missing value -> the column


def _np(kind: str, make: Callable[[bool], Any]) -> tuple[str, Build]:
    return kind, make


def _pd(values: list[Any], dtype: Any, fill: Any) -> Build:
    return lambda missing: pd.Series(values if missing else _present(values, fill), dtype=dtype)


def _arrow(values: list[Any], arrow_type: Callable[[], Any], fill: Any) -> Build:
    def build(missing: bool) -> Any:
        return pd.Series(values if missing else _present(values, fill), dtype=pd.ArrowDtype(arrow_type()))

    return build


def _arrow_dict(missing: bool) -> Any:
    pa: Any = importlib.import_module("pyarrow")  # untyped

    array = pa.array(STRS if missing else _present(STRS, "zq7")).dictionary_encode()
    return pd.Series(pd.arrays.ArrowExtensionArray(array))


NUMPY_CASES: dict[str, tuple[str, Build]] = {
    "numpy-int64": ("int", lambda m: np.array(_present(INTS, 73519), dtype=np.int64)),
    "numpy-uint8": ("int", lambda m: np.array([1, 2, 1, 2, 1, 2], dtype=np.uint8)),
    "numpy-float64": ("float", lambda m: np.array([np.nan if v is None else v for v in FLOATS] if m else _present(FLOATS, 1.0))),
    "numpy-bool": ("bool", lambda m: np.array(_present(BOOLS, False), dtype=bool)),
    "numpy-str": ("str", lambda m: np.array(_present(STRS, "zq7"))),
    "numpy-bytes": ("bytes", lambda m: np.array([s.encode() for s in _present(STRS, "zq7")])),
    "numpy-object-str": ("object", lambda m: _objects(STRS if m else _present(STRS, "zq7"))),
    "numpy-object-decimal": ("object", lambda m: _objects([None if v is None else Decimal(str(v)) for v in FLOATS])),
    "numpy-datetime64": ("time", lambda m: np.array(["2031-07-19"] * N, dtype="datetime64[D]")),
    "numpy-timedelta64": ("time", lambda m: np.array([4242] * N, dtype="timedelta64[s]")),
    "numpy-complex": ("complex", lambda m: np.array([4242 + 1j] * N)),
    "list-int": ("int", lambda m: _present(INTS, 73519)),
    "list-float": ("float", lambda m: _present(FLOATS, 1.5)),
    "list-str": ("str", lambda m: _present(STRS, "zq7")),
    # a Python list has no declared type: numpy infers one from the values (str with a None is object);
    # docs/data_policy.md says so, and recommends typed arrays or frames
    "list-str-with-none": ("object", lambda m: list(STRS)),
}
PANDAS_CASES: dict[str, tuple[str, Build]] = {
    "pandas-int64": ("int", _pd(_present(INTS, 73519), "int64", 0)),
    "pandas-float64": ("float", _pd(FLOATS, "float64", 1.0)),
    "pandas-bool": ("bool", _pd(_present(BOOLS, False), "bool", False)),
    "pandas-Int64": ("int", _pd(INTS, "Int64", 73519)),
    "pandas-UInt8": ("int", _pd([1, 2, None, 1, 2, 1], "UInt8", 1)),
    "pandas-Float64": ("float", _pd(FLOATS, "Float64", 1.0)),
    "pandas-boolean": ("bool", _pd(BOOLS, "boolean", False)),
    "pandas-str": ("str", _pd(STRS, "str", "zq7")),
    "pandas-string": ("str", _pd(STRS, "string", "zq7")),
    "pandas-string-pyarrow": ("str", _pd(STRS, "string[pyarrow]", "zq7")),
    "pandas-category-str": ("str", _pd(STRS, "category", "zq7")),
    "pandas-category-int": ("int", _pd(INTS, "category", 73519)),
    "pandas-object-str": ("object", _pd(STRS, object, "zq7")),
    "pandas-object-decimal": ("object", _pd([None if v is None else Decimal(str(v)) for v in FLOATS], object, Decimal(1))),
    "pandas-object-mixed": ("object", _pd([73519, "zq7", None, 735.25, Decimal("860.75"), True], object, 0)),
    "pandas-datetime64": ("time", lambda m: pd.Series(pd.to_datetime(["2031-07-19"] * N))),
    "pandas-datetime64-tz": ("time", lambda m: pd.Series(pd.to_datetime(["2031-07-19"] * N)).dt.tz_localize("UTC")),
    "pandas-timedelta64": ("time", lambda m: pd.Series(pd.to_timedelta([4242] * N, unit="s"))),
    "pandas-period": ("other", lambda m: pd.Series(pd.period_range("2031-07", periods=N, freq="M"))),
}
ARROW_CASES: dict[str, tuple[str, Build]] = {
    "arrow-int64": ("int", _arrow(INTS, lambda: __import__("pyarrow").int64(), 73519)),
    "arrow-bool": ("bool", _arrow(BOOLS, lambda: __import__("pyarrow").bool_(), False)),
    "arrow-double": ("float", _arrow(FLOATS, lambda: __import__("pyarrow").float64(), 1.0)),
    "arrow-large-string": ("str", _arrow(STRS, lambda: __import__("pyarrow").large_string(), "zq7")),
    "arrow-dictionary-string": ("str", _arrow_dict),
    "arrow-binary": ("bytes", _arrow([None if s is None else s.encode() for s in STRS], lambda: __import__("pyarrow").binary(), b"a")),
    "arrow-decimal": ("object", _arrow([None if v is None else Decimal(str(v)) for v in FLOATS], lambda: __import__("pyarrow").decimal128(10, 2), Decimal(1))),
    "arrow-date32": ("time", _arrow(DATES, lambda: __import__("pyarrow").date32(), dt.date(2031, 1, 1))),
    "arrow-timestamp": ("time", _arrow([pd.Timestamp(2031, 7, 19)] * N, lambda: __import__("pyarrow").timestamp("us"), None)),
}  # fmt: skip


def _polars(kind: str, values: list[Any], dtype: Callable[[], Any], fill: Any) -> tuple[str, Build]:
    def build(missing: bool) -> Any:
        import polars as pl

        return pl.Series(C, values if missing else _present(values, fill), dtype=dtype())

    return kind, build


def _pl(name: str, *args: Any) -> Callable[[], Any]:
    def make() -> Any:
        import polars as pl

        return getattr(pl, name)(*args)

    return make


POLARS_CASES: dict[str, tuple[str, Build]] = {
    "polars-Int64": _polars("int", INTS, _pl("Int64"), 73519),
    "polars-Float64": _polars("float", FLOATS, _pl("Float64"), 1.0),
    "polars-Boolean": _polars("bool", BOOLS, _pl("Boolean"), False),
    "polars-String": _polars("str", STRS, _pl("String"), "zq7"),
    "polars-Categorical": _polars("str", STRS, _pl("Categorical"), "zq7"),
    "polars-Enum": _polars("str", STRS, _pl("Enum", ["zq7", "xk9"]), "zq7"),
    "polars-Binary": _polars("bytes", [None if s is None else s.encode() for s in STRS], _pl("Binary"), b"a"),
    "polars-Decimal": _polars("object", [None if v is None else Decimal(str(v)) for v in FLOATS], _pl("Decimal", 10, 2), Decimal(1)),
    "polars-Date": _polars("time", DATES, _pl("Date"), dt.date(2031, 1, 1)),
    "polars-Datetime": _polars("time", [dt.datetime(2031, 7, 19)] * N, _pl("Datetime"), None),
}  # fmt: skip


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


CASES: dict[str, tuple[str, Build]] = {**NUMPY_CASES, **PANDAS_CASES}
if _has("pyarrow"):
    CASES.update(ARROW_CASES)
if _has("polars"):
    CASES.update(POLARS_CASES)


def frame(case: str, missing: bool = True) -> Any:
    """The input of ``case``: the column under test next to a numeric ``x`` and int user ids ``uid``, in the case's library."""
    column = CASES[case][1](missing)
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    uid = [1, 1, 2, 3, 3, 4]
    if case.startswith("polars"):
        import polars as pl

        return pl.DataFrame([column, pl.Series("x", x), pl.Series("uid", uid)])
    if case.startswith(("pandas", "arrow")):
        return pd.DataFrame({C: column, "x": x, "uid": uid})
    return {C: column, "x": np.array(x), "uid": np.array(uid)}


# --- the queries: (role of the column under test, plan builder) ---------------------------------------------------


def _log1p_mean(values: np.ndarray) -> float:
    return float(np.mean(np.log1p(values)))


def _rows_read(column: str, block: Any) -> float:
    return float(len(block.column(column)))


def _count_parts(keys: tuple[Any, ...]) -> dict[Any, Laplace]:
    return {k: Laplace(Query.count(), epsilon=1) for k in keys}


PLANS: dict[str, tuple[str, Callable[[], AbstractMeasurement[Any]]]] = {
    "count": ("numeric", lambda: Laplace(Query.count(C), epsilon=1)),
    "sum": ("numeric", lambda: Laplace(Query.sum(C) | Clip(0, 10), epsilon=1)),
    "mean": ("numeric", lambda: Laplace(Query.mean(C) | Clip(0, 10), epsilon="0.3")),
    "median": ("numeric", lambda: ExponentialQuantile(Query.median(C) | Clip(0, 10), epsilon=1, grid_bits=6)),
    "quantile": ("numeric", lambda: ProposeTest(Query.quantile(C, "0.25") | Clip(0, 10), bound=1, epsilon=1, delta="0.01")),
    "max": ("numeric", lambda: SmoothBoundCauchy(Query.max(C) | Clip(0, 10), epsilon=1)),
    "trimmed-mean": ("numeric", lambda: SmoothBound(Query.trimmed_mean(C, "0.2") | Clip(0, 10), epsilon=1, delta="0.01")),
    "mode": ("numeric", lambda: PTRMode(Query.mode(C), epsilon="0.5", delta="0.01")),
    "user-sum-per-unit": ("numeric", lambda: Laplace(Query.sum(C, user="uid") | ClipPerUser(0, 100), epsilon=1)),
    "shifted-inverse-user-sum": ("numeric", lambda: ShiftedInverse(Query.user_sum(C, user="uid") | Clip(0, 4), domain=(0, 63), epsilon=1)),
    "ratio": ("numeric", lambda: KSWRatio(PrivateRatio(C), 1)),
    "vector-sum": ("numeric", lambda: CalibratedLaplaceSum((Query.sum("x") | Clip(0, 1), Query.sum(C) | Clip(0, 1)), epsilon=1)),
    "sample-aggregate-column": ("numeric", lambda: SampleAggregateMean(np.mean, blocks=2, lower=0, upper=10, epsilon=1, column=C)),
    "user-function": ("numeric", lambda: SmoothBound(LocalSensAtDistance(Query.function(_log1p_mean, column=C) | Clip(0, 10),
                                                                         "log(11)/Max(n - k, 1) + log(11)/2**45"), epsilon=1, delta="0.01")),
    "stable-histogram": ("key", lambda: StableHistogram(Query.histogram(C), epsilon=1, delta="0.05")),
    "sample-aggregate-reads": ("key", lambda: SampleAggregateMean(functools.partial(_rows_read, C), blocks=2, lower=0, upper=10,
                                                                  epsilon=1, reads=(C,))),
    "histogram-int-keys": ("int-keys", lambda: Laplace(Query.histogram(C, keys=INT_KEYS), epsilon="0.2")),
    "noisy-max-int-keys": ("int-keys", lambda: NoisyMax(Query.histogram(C, keys=INT_KEYS), epsilon=1)),
    "parallel-int-keys": ("int-keys", lambda: Parallel(by=C, parts=_count_parts(INT_KEYS))),
    "histogram-str-keys": ("str-keys", lambda: Laplace(Query.histogram(C, keys=STR_KEYS), epsilon="0.2")),
    "user-histogram-str-keys": ("str-keys", lambda: Gaussian(Query.histogram(C, keys=STR_KEYS, user="uid") | MaxKeysPerUser(2), rho="0.5")),
    "parallel-str-keys": ("str-keys", lambda: Parallel(by=C, parts=_count_parts(STR_KEYS))),
    "user-count": ("id", lambda: Laplace(Query.user_count(user=C), epsilon=1)),
    "user-sum-by-id": ("id", lambda: Laplace(Query.sum("x", user=C) | ClipPerUser(0, 100), epsilon=1)),
    "group-privacy-unit": ("id", lambda: GroupPrivacy(Laplace(Query.count(), epsilon=1), unit=C, max_rows=2)),
}  # fmt: skip

#: a column of each role's accepted kind
CLEAN: dict[str, np.ndarray] = {
    "numeric": np.arange(6.0), "key": np.array(_present(STRS, "zq7")), "int-keys": np.array(_present(INTS, 73519)),
    "str-keys": np.array(_present(STRS, "zq7")), "id": np.array([1, 1, 2, 3, 3, 4]),
}  # fmt: skip
#: one plan per role that is also run when accepted (the others are checked only: the release paths are the same)
RELEASED = {"mean", "stable-histogram", "histogram-int-keys", "histogram-str-keys", "user-count"}


def budget_for(plan: AbstractMeasurement[Any]) -> Any:  # the plan's own measure: PureDP, ApproxDP or ZCDP
    cost = plan.cost()
    if isinstance(cost, PureDP):
        return PureDP(100)
    if isinstance(cost, ZCDP):
        return ZCDP(100)
    return ApproxDP(100, "0.5")


def _zero(budget: PureDP | ApproxDP | ZCDP) -> PureDP | ApproxDP | ZCDP:
    if isinstance(budget, PureDP):
        return PureDP(0)
    return ZCDP(0) if isinstance(budget, ZCDP) else ApproxDP(0, 0)


def _type_name(case: str) -> str:
    """The column's type as its library names it, built from the case (not from dpalg's answer)."""
    column = CASES[case][1](True)
    if case.startswith("polars"):
        dtype = column.dtype
        return type(dtype).__name__ if type(dtype).__name__ in ("Enum", "Categorical") else str(dtype)
    if case.startswith("list"):
        return str(np.asarray(column).dtype)
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return f"category of {dtype.categories.dtype}"
    return str(dtype)


COMBINATIONS = [(case, plan) for case in CASES for plan in PLANS]


@pytest.mark.parametrize(("case", "plan_name"), COMBINATIONS, ids=[f"{c}-{p}" for c, p in COMBINATIONS])
def test_a_column_type_its_role_cannot_read_is_refused_before_the_charge(case: str, plan_name: str) -> None:
    kind = CASES[case][0]
    role, build = PLANS[plan_name]
    plan = build()
    session = Session(budget_for(plan))
    if kind in ACCEPTS[role]:
        for missing in (True, False):  # the type decides, with or without a missing value
            validate_schema(plan, as_dataset(frame(case, missing)))
        if plan_name in RELEASED:
            session.run(plan, frame(case), rng=None)  # secure randomness: no InsecureRandomnessWarning
            assert session.charges == 1
        return
    for missing in (True, False):
        with pytest.raises(InvalidArgument) as info:
            session.run(plan, frame(case, missing), rng=None)
        assert session.spent == _zero(session.budget) and session.charges == 0
        message = str(info.value)
        assert f"column='{C}'" in message, message
        assert _type_name(case) in message, message
        assert type(plan).__name__ in message or "Parallel" in message, message
        public = {str(k) for k in {"int-keys": INT_KEYS, "str-keys": STR_KEYS}.get(role, ())}  # the plan's keys are public
        assert not [s for s in SECRETS if s in message and s not in public], message
    # a checked plan's one run is not used by the refusal: it still runs on a column its role reads
    checked = build()
    checked.check(budget_for(checked))
    with pytest.raises(InvalidArgument):
        checked.run(frame(case), rng=None)
    checked.run({C: CLEAN[role], "x": np.arange(6.0), "uid": np.array([1, 1, 2, 3, 3, 4])}, rng=None)


# --- the two reported cases, exactly ------------------------------------------------------------------------------


def test_a_pandas_string_column_in_a_mean_is_refused_before_the_charge() -> None:
    """One "n/a" makes a numeric column text (pandas 3's ``str`` dtype); its mean was pure noise, charged ε=0.3."""
    df = pd.DataFrame({"age": pd.array(["31", "n/a", "45"], dtype="str")})
    session = Session(PureDP(1))
    plan = Laplace(Query.mean("age") | Clip(0, 100), epsilon="0.3")
    with pytest.raises(InvalidArgument) as info:
        session.run(plan, df)
    assert session.spent == PureDP(0) and session.charges == 0
    message = str(info.value)
    assert message.startswith("Laplace: numeric column='age' has a string dtype, str (pandas)")
    assert "pd.to_numeric(df['age'], errors='coerce')" in message
    assert "n/a" not in message and "31" not in message
    session.run(plan, df.assign(age=pd.to_numeric(df["age"], errors="coerce")))  # the fix releases
    assert session.spent == PureDP("0.3")
    # plan.run: the refusal does not use the checked plan's one run
    plan.check(PureDP(1))
    with pytest.raises(InvalidArgument, match="string dtype"):
        plan.run(df)
    plan.run(df.assign(age=pd.to_numeric(df["age"], errors="coerce")))


def test_str_keys_on_an_int_column_are_refused_before_the_charge() -> None:
    """``keys=("1984", ...)`` on an int column matched no row: noise around 0, charged ε=0.2."""
    df = pd.DataFrame({"year": [1984, 1990, 1984]})
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument) as info:
        session.run(Laplace(Query.histogram("year", keys=("1984", "1990")), epsilon="0.2"), df)
    assert session.spent == PureDP(0) and session.charges == 0
    message = str(info.value)
    assert "key column='year' has dtype int64 (pandas) but keys ('1984', '1990') are str" in message
    assert "keys=(1984, ...)" in message
    release = session.run(Laplace(Query.histogram("year", keys=(1984, 1990)), epsilon="0.2"), df)
    assert set(cast(dict[Any, Any], release.value)) == {1984, 1990}
    with pytest.raises(InvalidArgument, match=r"keys \(1984,\) are int.*keys=\('1984', \.\.\.\)"):
        session.run(Laplace(Query.histogram("year", keys=(1984,)), epsilon="0.2"), df.astype({"year": "str"}))
    assert session.spent == PureDP("0.2")


def test_a_category_column_is_read_as_its_categories_type_and_never_printed() -> None:
    """A pandas category's categories may have been built from the data: only their dtype is read, never them."""
    df = pd.DataFrame({"city": pd.Series(["Secretville", "Hiddenham", None], dtype="category")})
    with pytest.raises(InvalidArgument) as info:
        Session(PureDP(1)).run(Laplace(Query.sum("city") | Clip(0, 1), epsilon=1), df)
    assert "category of str (pandas)" in str(info.value)
    assert "Secretville" not in str(info.value) and "Hiddenham" not in str(info.value)
    session = Session(PureDP(1))
    release = session.run(Laplace(Query.histogram("city", keys=("Secretville", "Nowhere")), epsilon=1), df)
    assert set(cast(dict[Any, Any], release.value)) == {"Secretville", "Nowhere"}


def test_the_schema_check_agrees_with_the_per_value_guards() -> None:
    """Every dtype the run-time guards refuse (``to_float``, ``key_index``) the schema check refuses first."""
    from dpalg.data import ColumnUse, check_columns
    from dpalg.data._keys import key_dtype_problem
    from dpalg.data._numeric import numeric_dtype_problem

    for dtype in ("bool", "int8", "uint64", "float16", "<U2", "S2", "O", "datetime64[D]", "timedelta64[s]", "c8", [("a", "V1")]):
        data = as_dataset({"c": np.zeros(0, dtype=np.dtype(dtype))})
        for role, guard in (("numeric", numeric_dtype_problem), ("key", key_dtype_problem), ("id", key_dtype_problem)):
            if guard(np.dtype(dtype)) is not None:
                with pytest.raises(InvalidArgument):
                    check_columns(data, [ColumnUse("c", role)])


def test_compose_names_the_path_of_the_refused_node() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "age": pd.Series(["1", "2"], dtype="string")})
    plan = Compose(Laplace(Query.sum("x") | Clip(0, 1), epsilon="0.5"), Laplace(Query.mean("age") | Clip(0, 1), epsilon="0.5"))
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match=r"^Compose/1/Laplace: numeric column='age' has a string dtype, string \(pandas\)"):
        session.run(plan, df)
    assert session.spent == PureDP(0)


def test_a_histogram_over_no_public_key_is_refused_at_construction() -> None:
    """``keys=()`` released an empty noise vector's first element: an IndexError after the charge."""
    with pytest.raises(InvalidArgument, match="at least one key"):
        Query.histogram("k", keys=())
