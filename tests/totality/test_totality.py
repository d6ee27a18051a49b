"""Totality (issue 14, section 3; DESIGN §3 "Releases are total").

For every exported mechanism, one or two representative valid plans are checked
and run on hypothesis datasets of one fixed schema whose *values* are hostile
(None, NaN, ±inf, ±1e308, 10**400, strings in numeric object columns,
mixed-type keys and ids, empty datasets, single rows). A release must never
raise and must always return the same output type (a value of the plan's type,
or ⊥ where the mechanism may return ⊥). Each example builds a fresh plan: a
checked plan runs once outside a Session.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpalg
import dpalg.mechanisms as mechanisms
from dpalg import (
    BOTTOM, ZCDP, ApproxDP, Clip, ClipPerUser, GaussianPartitionSelection, GroupBy, InvalidArgument, KeySet, MaxGroupsPerUser, MaxKeysPerUser, MaxRowsPerUser,
    PartitionSelection, PureDP, PureToApprox, Query, Where, col,
)
from dpalg.data import Dataset, as_dataset
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive
from dpalg.graph._schema import validate_schema
from dpalg.mechanisms import (
    AutoClipSum,
    R2T,
    BoundedLS,
    BoundedLSRatio,
    CalibratedGaussianSum,
    CalibratedLaplaceSum,
    ExponentialQuantile,
    Gaussian,
    KSWRatio,
    Laplace,
    LocalSensAtDistance,
    NaiveRatio,
    NoisyCount,
    NoisyMax,
    PrivateRatio,
    ProposeTest,
    PTRMode,
    SampleAggregateMean,
    SampleAggregateMedian,
    SampleAggregateMode,
    ShiftedInverse,
    ShiftedInverseSearch,
    ShiftedInverseSearchZCDP,
    SmoothBound,
    SmoothBoundCauchy,
    StableHistogram,
)

# --- hostile datasets of one fixed schema -----------------------------------------
# Hypothesis strategies for the totality suite: datasets of one fixed schema whose values are hostile.
#
# Every dataset has the same columns and dtypes (the public schema), so a release
# may depend on it only through the mechanism's proven output:
#
# * ``x``, ``y``, ``v``: numeric ``object`` columns mixing numbers, ``None``, NaN,
#   ``±inf``, ``±1e308``, ``10**400`` (an int beyond the float range), bools and
#   strings (``"3"``, ``"abc"``);
# * ``c``: a 0/1-ish ``object`` column (counted where non-zero) with the same hostile values;
# * ``k``: keys and ``u``: user ids mixing int, str, bytes, bool, float, ``Decimal``, ``Fraction``, ``None`` and NaN;
#
# with 0 to 12 rows (the empty dataset and a single row included).

COLUMNS = ("x", "y", "v", "c", "k", "u")

HOSTILE_NUMBERS: tuple[object, ...] = (
    None, math.nan, math.inf, -math.inf, 1e308, -1e308, 10**400, -(10**400), "3", "abc", True, False,
    0, 1, 2, 3, 0.5, -7, 1e-300, 5e-324,
)  # fmt: skip
HOSTILE_KEYS: tuple[object, ...] = (None, math.nan, 1, 1.0, "1", "a", "b", True, False, b"a", 2, -3, "", 1e308)
# exact numbers a float would round (Decimal and Fraction ids and keys are read exactly: 2**53 and 2**53 + 1 are two
# users), a Decimal NaN, infinities, one too long to read exactly (missing) and a tenth that is not the float 0.1
HOSTILE_DECIMALS: tuple[object, ...] = (
    Decimal(2**53), Decimal(2**53 + 1), Decimal(f"{2**53 + 2}.000"), Decimal("1.0"), Decimal("0.1"), Decimal("NaN"),
    Decimal("-Infinity"), Decimal("1e999999999"), Decimal(10**30 + 1), Fraction(1, 3), Fraction(2**53 + 1), 2**53 + 1,
)  # fmt: skip

_numbers = st.sampled_from(HOSTILE_NUMBERS) | st.integers(-(10**6), 10**6) | st.floats(allow_nan=True, allow_infinity=True)
_keys = st.sampled_from(HOSTILE_KEYS) | st.sampled_from(HOSTILE_DECIMALS) | st.integers(-5, 5) | st.text(max_size=3)


@st.composite
def datasets(draw: st.DrawFn, max_rows: int = 12) -> Dataset:
    """A dataset of the fixed schema with 0..``max_rows`` hostile rows."""
    n = draw(st.integers(0, max_rows))
    columns: dict[str, np.ndarray] = {}
    for name in ("x", "y", "v", "c"):
        columns[name] = np.array(draw(st.lists(_numbers, min_size=n, max_size=n)) + [0], dtype=object)[:n]
    for name in ("k", "u"):
        columns[name] = np.array(draw(st.lists(_keys, min_size=n, max_size=n)) + [0], dtype=object)[:n]
    return as_dataset(columns)


def _block_mean(block: Dataset) -> float:
    values = block.numeric("x")
    values = values[~np.isnan(values)]
    return float(np.mean(np.clip(values, 0, 10))) if values.size else 0.0


def _rounded_median(values: npt.NDArray[np.float64]) -> float:
    return float(np.round(np.median(values)))


def _log1p_mean(values: npt.NDArray[np.float64]) -> float:
    return float(np.mean(np.log1p(values)))


def _user_statistic() -> LocalSensAtDistance:
    return LocalSensAtDistance(Query.function(_log1p_mean, column="x") | Clip(0, 10), "log(11)/Max(n - k, 1) + log(11)/2**45")


Node = AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP]
#: a plan of the totality suite: a primitive, or a GroupBy over primitives
Plan = Node | AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]

# name -> factory of a fresh plan; the name's prefix (before "-") is the mechanism's class name
PLANS: dict[str, Callable[[], Plan]] = {
    "Laplace-count": lambda: Laplace(Query.count(), epsilon=1),
    "Laplace-sum": lambda: Laplace(Query.sum("x") | Clip(-1e6, 1e6), epsilon=1),
    "Laplace-mean": lambda: Laplace(Query.mean("x") | Clip(0, 10), epsilon=1),
    "Laplace-histogram": lambda: Laplace(Query.histogram("k", keys=("a", "b", 1)), epsilon=1),
    "Laplace-user-count": lambda: Laplace(Query.user_count(user="u"), epsilon=1),
    "Gaussian-sum": lambda: Gaussian(Query.sum("x") | Clip(0, 1), rho="0.5"),
    "Gaussian-user-count": lambda: Gaussian(Query.user_count(user="u"), rho="0.5"),
    "ExponentialQuantile-median": lambda: ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1, grid_bits=8),
    "NoisyMax-histogram": lambda: NoisyMax(Query.histogram("k", keys=("a", "b", 1)), epsilon=1),
    "ProposeTest-median": lambda: ProposeTest(Query.median("x") | Clip(0, 10), bound=1, epsilon=1, delta="0.01"),
    "ProposeTest-mean-huge": lambda: ProposeTest(Query.mean("x") | Clip(-1e308, 1e308), bound=1, epsilon=1, delta="0.01"),
    "LocalSensAtDistance-mean": lambda: ProposeTest(
        LocalSensAtDistance(Query.mean("x") | Clip(0, 1), "(upper - lower) / Max(n - k, 1)"), bound="0.25", epsilon=1, delta="0.01"
    ),
    "PTRMode-mode": lambda: PTRMode(Query.mode("x"), epsilon="0.5", delta="0.01"),
    "StableHistogram-keys": lambda: StableHistogram(Query.histogram("k"), epsilon=1, delta="0.05"),
    "ShiftedInverse-user-sum": lambda: ShiftedInverse(Query.user_sum("v", user="u") | Clip(0, 4), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearch-user-count": lambda: ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearchZCDP-user-max": lambda: ShiftedInverseSearchZCDP(Query.user_max("v", user="u"), domain=(0, 63), rho=1),
    "BoundedLS-ratio": lambda: BoundedLS("a/b", "1/(b_lo - 1)", (NoisyCount("a", where="c"), NoisyCount("b")),
                                         epsilon_bound="0.5", epsilon_release="0.5", delta="0.01", domain={"b": 2}),
    "BoundedLS-function": lambda: BoundedLS(lambda d: Fraction(int(np.nansum(d.numeric("x") > 0))), "1/(b_lo - 1)",
                                            (NoisyCount("b"),), epsilon_bound=1, epsilon_release=1, delta="0.01",
                                            domain={"b": 2}, global_sensitivity=1),
    "NaiveRatio-c": lambda: NaiveRatio(PrivateRatio("c"), 1),
    "KSWRatio-c": lambda: KSWRatio(PrivateRatio("c"), 1),
    "BoundedLSRatio-c": lambda: BoundedLSRatio(PrivateRatio("c"), "0.5", "0.5", "0.01"),
    "CalibratedGaussianSum-xy": lambda: CalibratedGaussianSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), rho="0.5"),
    "CalibratedLaplaceSum-xy": lambda: CalibratedLaplaceSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), epsilon=1),
    "SmoothBound-median": lambda: SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    "SmoothBoundCauchy-median": lambda: SmoothBoundCauchy(Query.median("x") | Clip(0, 10), epsilon=1),
    "SmoothBound-mean": lambda: SmoothBound(Query.mean("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    "SmoothBoundCauchy-mean": lambda: SmoothBoundCauchy(Query.mean("x") | Clip(0, 10), epsilon=1),
    "SmoothBound-trimmed-mean": lambda: SmoothBound(Query.trimmed_mean("x", "0.2") | Clip(-1e200, 1e200), epsilon=1, delta="0.01"),
    "SmoothBound-count": lambda: SmoothBound(Query.count("x"), epsilon=1, delta="0.01"),
    "SmoothBoundCauchy-sum-huge": lambda: SmoothBoundCauchy(Query.sum("x") | Clip(-1e200, 1e200), epsilon=1),
    # a user-defined statistic, three ways (issue 18)
    "SmoothBound-function": lambda: SmoothBound(_user_statistic(), epsilon=1, delta="0.01"),
    "ProposeTest-function": lambda: ProposeTest(_user_statistic(), bound="0.5", epsilon=1, delta="0.01"),
    "SampleAggregateMean-function": lambda: SampleAggregateMean(_user_statistic().query, blocks=4, lower=0, upper=3, epsilon=1),
    # the widest clip: intermediate differences are beyond float64
    "ExponentialQuantile-median-huge": lambda: ExponentialQuantile(Query.median("x") | Clip(-1.7e308, 1.7e308), epsilon=1,
                                                                   grid_bits=8),
    "SampleAggregateMean-dataset": lambda: SampleAggregateMean(_block_mean, blocks=4, lower=0, upper=10, epsilon=1),
    "SampleAggregateMean-column-users": lambda: SampleAggregateMean(np.median, blocks=4, lower=0, upper=10, epsilon=1,
                                                                    unit="u", column="x"),
    "SampleAggregateMedian-column": lambda: SampleAggregateMedian(np.mean, blocks=8, lower=-1e200, upper=1e200, epsilon=1,
                                                                  delta="0.01", column="x"),
    "SampleAggregateMode-users": lambda: SampleAggregateMode(_rounded_median, blocks=8, epsilon=1, delta="0.01", unit="u",
                                                             column="x"),
    # user level (issue 15): hostile ids and values go through the row choice and the exact per-user totals
    "AutoClipSum-user-sum": lambda: AutoClipSum(Query.sum("x", user="u"), epsilon=1, upper_limit=2**20),
    "R2T-user-sum": lambda: R2T(Query.sum("x", user="u"), epsilon=1, upper_limit=2**20, thresholds=20),
    "R2T-user-count": lambda: R2T(Query.count(user="u"), epsilon=1, upper_limit=64),
    "Laplace-user-sum-clip": lambda: Laplace(Query.sum("x", user="u") | ClipPerUser(0, 100), epsilon=1),
    "Laplace-user-mean-rows": lambda: Laplace(Query.mean("x", user="u") | Clip(0, 10) | MaxRowsPerUser(3), epsilon=1),
    "Gaussian-user-histogram": lambda: Gaussian(Query.histogram("k", keys=("a", "b", 1), user="u") | MaxKeysPerUser(2), rho="0.5"),
    "NoisyMax-user-histogram": lambda: NoisyMax(Query.histogram("k", keys=("a", "b", 1), user="u") | MaxRowsPerUser(2), epsilon=1),
    "StableHistogram-user": lambda: StableHistogram(Query.histogram("k", user="u") | MaxKeysPerUser(2), epsilon=1, delta="0.05"),
    "ExponentialQuantile-user-totals": lambda: ExponentialQuantile(Query.median("x", user="u") | ClipPerUser(0, 100), epsilon=1, grid_bits=8),
    "ProposeTest-user-totals": lambda: ProposeTest(Query.median("x", user="u") | ClipPerUser(0, 100), bound=1, epsilon=1, delta="0.01"),
    "SmoothBound-user-totals": lambda: SmoothBound(Query.median("x", user="u") | MaxRowsPerUser(2) | ClipPerUser(-1e200, 1e200), epsilon=1, delta="0.01"),
    # group by: hostile keys go through the group coding, the per-user group bound and the key selection
    "GroupBy-public-other": lambda: GroupBy("k", keys=KeySet(["a", "b", 1, True, 2.5], other="rest"), aggregates={
        "n": PureToApprox(Laplace(Query.count(), epsilon=1)), "mean": PureToApprox(Laplace(Query.mean("x") | Clip(0, 10), epsilon=1)),
        "median": SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    }),
    "GroupBy-private-users": lambda: GroupBy("k", keys=PartitionSelection(epsilon=1, delta="0.05"), aggregates={
        "n": PureToApprox(Laplace(Query.count(user="u") | MaxRowsPerUser(2), epsilon=1)),
        "q": PureToApprox(ExponentialQuantile(Query.median("x", user="u") | ClipPerUser(0, 100), epsilon=1, grid_bits=8)),
    }, bound=MaxGroupsPerUser(2)),
    "GroupBy-gaussian-users": lambda: GroupBy("k", keys=GaussianPartitionSelection(rho="0.1", delta="1e-3", conversion_delta="1e-3"), aggregates={
        "s": Gaussian(Query.sum("x", user="u") | ClipPerUser(0, 10), rho="0.1"),
    }, bound=MaxGroupsPerUser(2)),
    "GroupBy-two-columns": lambda: GroupBy(("k", "u"), keys=KeySet.product(KeySet(["a", 1, True]), KeySet([1, "1", 2**53 + 1])), aggregates={
        "s": Laplace(Query.sum("x") | Clip(-1e6, 1e6), epsilon=1),
    }),
    # group by over row steps: the filter and the derived column run before the grouping, on hostile values
    "GroupBy-where-derived": lambda: GroupBy("k", keys=PartitionSelection(epsilon=1, delta="0.05"), aggregates={
        "s": PureToApprox(Laplace(Query.sum(col("x") * 2, user="u") | Where(col("x") > 0) | ClipPerUser(0, 10), epsilon=1)),
        "n": PureToApprox(Laplace(Query.count(user="u") | Where(col("x") > 0) | MaxRowsPerUser(2), epsilon=1)),
    }, bound=MaxGroupsPerUser(2)),
}  # fmt: skip

# exported names that are not mechanisms themselves, and the plans that exercise them
HELPERS = {"NoisyCount": "BoundedLS-ratio", "PrivateRatio": "NaiveRatio-c"}
# exported names that release nothing (parameter choice, exact probabilities): no data reaches them
NOT_MECHANISMS = {"PTRBoundSuggestion", "ptr_bottom_probability", "suggest_ptr_bound"}

# the same schema (object columns) with ordinary values: the baseline output type of each plan
CLEAN = as_dataset({name: np.array(values, dtype=object) for name, values in {
    "x": [1.0, 2.0, 3.0, 2.0, 5.0] * 4, "y": [0.5] * 20, "v": [1.0] * 20,
    "c": [1, 0] * 10, "k": ["a", "b", "a", "a", "b"] * 4, "u": [i % 7 for i in range(20)],
}.items()})  # fmt: skip


def _mechanism(name: str) -> str:
    return name.split("-", 1)[0]


def _kind(value: object) -> object:
    """The output's type, recursively for tuples and dicts (⊥ is its own kind)."""
    if value is BOTTOM:
        return "BOTTOM"
    if isinstance(value, (str, bytes, bool, int, Fraction)):  # a released key (NoisyMax over mixed-type keys): any key type
        return "key"
    if isinstance(value, tuple):
        return ("tuple", tuple(_kind(v) for v in value))
    if isinstance(value, dict):  # a histogram's counts, a GroupBy's groups and their named values
        return ("dict", frozenset(_kind(v) for v in value.values()))
    return type(value).__name__


def _compatible(kind: object, baseline: object) -> bool:
    if kind == "BOTTOM" or baseline == "BOTTOM" or kind == baseline:
        return True
    if isinstance(kind, tuple) and isinstance(baseline, tuple) and kind[0] == baseline[0] == "tuple":
        return len(kind[1]) == len(baseline[1]) and all(_compatible(a, b) for a, b in zip(kind[1], baseline[1]))
    if isinstance(kind, tuple) and isinstance(baseline, tuple) and kind[0] == baseline[0] == "dict":
        if not baseline[1]:  # the baseline released no key (a selection kept none): any values are possible
            return True
        return all(any(_compatible(a, b) for b in baseline[1]) for a in kind[1])  # fewer keys (none selected) is fine
    return False


def _release(name: str, data: Dataset, seed: int) -> object:
    plan = cast(AbstractPrimitive[PureDP], PLANS[name]())  # the measure type does not matter here
    plan.check(plan.cost())
    return plan.run(data, rng=seed).value


_BASELINE: dict[str, object] = {}


def _baseline(name: str) -> object:
    if name not in _BASELINE:
        _BASELINE[name] = _kind(_release(name, CLEAN, 0))
    return _BASELINE[name]


def _assert_total(name: str, data: Dataset, seed: int) -> None:
    value = _release(name, data, seed)  # must not raise
    assert _compatible(_kind(value), _baseline(name)), (name, _kind(value), _baseline(name))


@pytest.mark.parametrize("name", sorted(PLANS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=datasets(), seed=st.integers(0, 2**32 - 1))
def test_every_release_is_total(name: str, data: Dataset, seed: int) -> None:
    _assert_total(name, data, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=datasets(max_rows=40), seed=st.integers(0, 2**32 - 1))
def test_every_release_is_total_slow(name: str, data: Dataset, seed: int) -> None:
    _assert_total(name, data, seed)


def test_the_suite_covers_every_exported_mechanism() -> None:
    """A new mechanism without a plan here fails this test."""
    covered = {_mechanism(name) for name in PLANS} | set(HELPERS) | NOT_MECHANISMS
    assert set(mechanisms.__all__) <= covered, sorted(set(mechanisms.__all__) - covered)
    for name in NOT_MECHANISMS:  # an exemption never hides a node
        obj = getattr(mechanisms, name)
        assert not (inspect.isclass(obj) and issubclass(obj, AbstractMeasurement)), name
    for name in PLANS:
        cls = getattr(mechanisms, _mechanism(name), None) or getattr(dpalg, _mechanism(name))
        assert inspect.isclass(cls)
        built = PLANS[name]()
        assert isinstance(built, AbstractMeasurement)
    assert all(h in PLANS for h in HELPERS.values())


# --- the same plans on a pandas schema: string, category, nullable and Decimal object columns ---------------
#
# ``x``: an ``object`` column of Decimals (NaN, sNaN, huge, tiny) among the hostile numbers; ``y``: ``Float64``;
# ``v``: ``Int64``; ``c``: ``boolean``; ``k``: ``string`` keys; ``u``: user ids in a ``category`` of str. Every
# column may hold ``pd.NA``. The schema is fixed, so whether a plan is refused is decided once, by the schema
# alone (a histogram listing the int key 1 cannot read the ``string`` keys ``k``): a refused plan is refused on
# every dataset of the schema, before the charge, and an accepted one releases totally.

PANDAS_DECIMALS: tuple[object, ...] = (Decimal("NaN"), Decimal("sNaN"), Decimal("1e999999"), Decimal("-1e999999"), Decimal("1e-999999"),
                                        Decimal("2.5"), Decimal("-0"))  # fmt: skip
_text_keys = st.sampled_from(("a", "b", "", "1")) | st.text(max_size=3)


@st.composite
def pandas_frames(draw: st.DrawFn, max_rows: int = 12) -> pd.DataFrame:
    """A pandas frame of the fixed pandas schema with 0..``max_rows`` hostile rows."""
    n = draw(st.integers(0, max_rows))

    def column(values: st.SearchStrategy[object]) -> list[object]:
        return draw(st.lists(values | st.none(), min_size=n, max_size=n))

    x = np.empty(n, dtype=object)
    x[:] = column(_numbers | st.sampled_from(PANDAS_DECIMALS))
    return pd.DataFrame({
        "x": pd.Series(x, dtype=object),
        "y": pd.Series(column(st.floats(allow_nan=True, allow_infinity=True)), dtype="Float64"),
        "v": pd.Series(column(st.integers(-(10**6), 10**6)), dtype="Int64"),
        "c": pd.Series(column(st.booleans()), dtype="boolean"),
        "k": pd.Series(column(_text_keys), dtype="string"),
        "u": pd.Series(column(_text_keys), dtype="category"),
    })  # fmt: skip


# plans that read the pandas schema's str keys with a public list of str keys
PANDAS_PLANS: dict[str, Callable[[], Node]] = {
    "Laplace-histogram-str": lambda: Laplace(Query.histogram("k", keys=("a", "b", "")), epsilon=1),
    "NoisyMax-histogram-str": lambda: NoisyMax(Query.histogram("k", keys=("a", "b", "1")), epsilon=1),
    "Gaussian-user-histogram-str": lambda: Gaussian(Query.histogram("k", keys=("a", "b"), user="u") | MaxKeysPerUser(2), rho="0.5"),
}  # fmt: skip
ALL_PLANS = {**PLANS, **PANDAS_PLANS}

CLEAN_PANDAS = pd.DataFrame({
    "x": pd.Series([Decimal(v) for v in ("1", "2", "3", "2", "5")] * 4, dtype=object),
    "y": pd.Series([0.5] * 20, dtype="Float64"), "v": pd.Series([1] * 20, dtype="Int64"),
    "c": pd.Series([True, False] * 10, dtype="boolean"), "k": pd.Series(["a", "b", "a", "a", "b"] * 4, dtype="string"),
    "u": pd.Series([str(i % 7) for i in range(20)], dtype="category"),
})  # fmt: skip


def _pandas_refusal(name: str) -> str | None:
    """The schema check's message for the plan on the pandas schema (decided on the empty frame), or None."""
    try:
        validate_schema(ALL_PLANS[name](), as_dataset(CLEAN_PANDAS.iloc[:0]))
    except InvalidArgument as exc:
        return str(exc)
    return None


_PANDAS_BASELINE: dict[str, object] = {}


def _assert_refused_before_the_charge(plan: AbstractPrimitive[PureDP], data: object, seed: int, refusal: str) -> None:
    """The schema decides: the same refusal on every dataset of the schema, before the charge."""
    plan.check(plan.cost())
    with pytest.raises(InvalidArgument) as info:
        plan.run(data, rng=seed)
    assert str(info.value) == refusal
    plan.run(CLEAN, rng=seed)  # refused before the charge: the checked run is still there


def _assert_total_or_refused(name: str, frame: pd.DataFrame, seed: int) -> None:
    refusal = _pandas_refusal(name)
    plan = cast(AbstractPrimitive[PureDP], ALL_PLANS[name]())
    if refusal is not None:
        _assert_refused_before_the_charge(plan, frame, seed, refusal)
        return
    plan.check(plan.cost())
    if name not in _PANDAS_BASELINE:
        clean = cast(AbstractPrimitive[PureDP], ALL_PLANS[name]())
        clean.check(clean.cost())
        _PANDAS_BASELINE[name] = _kind(clean.run(CLEAN_PANDAS, rng=0).value)
    value = plan.run(frame, rng=seed).value  # must not raise
    assert _compatible(_kind(value), _PANDAS_BASELINE[name]), (name, _kind(value), _PANDAS_BASELINE[name])


@pytest.mark.parametrize("name", sorted(ALL_PLANS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(frame=pandas_frames(), seed=st.integers(0, 2**32 - 1))
def test_every_release_on_pandas_types_is_total_or_refused_by_the_schema(name: str, frame: pd.DataFrame, seed: int) -> None:
    _assert_total_or_refused(name, frame, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL_PLANS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(frame=pandas_frames(max_rows=40), seed=st.integers(0, 2**32 - 1))
def test_every_release_on_pandas_types_is_total_or_refused_by_the_schema_slow(name: str, frame: pd.DataFrame, seed: int) -> None:
    _assert_total_or_refused(name, frame, seed)


def test_the_pandas_schema_refuses_exactly_the_plans_its_types_cannot_serve() -> None:
    """The refusals of the pandas schema, by plan: the text and key mistakes the table names, and nothing else."""
    refused = {name for name in ALL_PLANS if _pandas_refusal(name) is not None}
    # the int key 1 never matches the string keys k
    assert refused == {
        "Laplace-histogram", "NoisyMax-histogram", "Gaussian-user-histogram", "NoisyMax-user-histogram",
        "GroupBy-public-other", "GroupBy-two-columns",  # int keys listed for the str column k
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(PLANS))
def test_each_plan_is_built_from_its_mechanism(name: str) -> None:
    built = PLANS[name]()
    mechanism = _mechanism(name)
    import attrs

    fields = [getattr(built, f.name) for f in attrs.fields(cast("type[attrs.AttrsInstance]", type(built)))]
    assert mechanism in {type(built).__name__, *(type(f).__name__ for f in fields)}


@pytest.mark.parametrize(
    "build",
    [
        lambda: Laplace(Query.sum("x") | Clip(-1.7e308, 1.7e308), epsilon=1),
        lambda: Gaussian(Query.mean("x") | Clip(-1.7e308, 1.7e308), rho="0.5"),
        lambda: SmoothBound(Query.median("x") | Clip(-1.7e308, 1.7e308), epsilon=1, delta="0.01"),
        lambda: SmoothBoundCauchy(Query.max("x") | Clip(-1.7e308, 1.7e308), epsilon=1),
        lambda: CalibratedLaplaceSum((Query.sum("x") | Clip(-1.7e308, 1.7e308),), epsilon=1),
    ],
)
def test_clips_the_exact_release_cannot_serve_are_refused_at_construction(build: Callable[[], Node]) -> None:
    """Not after the charge, and with dpalg's error (a bare OverflowError escaped SmoothBound before)."""
    with pytest.raises(InvalidArgument):
        build()


# --- ids of a polars Decimal(38, 0) column (read value by value by the key policy) -------------------

USER_PLANS = sorted(name for name in PLANS if "user" in name or "users" in name)


@st.composite
def polars_decimal_datasets(draw: st.DrawFn, max_rows: int = 12) -> Dataset:
    """Float64 value columns and a polars ``Decimal(38, 0)`` id column ``u`` (nulls, ids that share a double)."""
    pl = pytest.importorskip("polars")
    n = draw(st.integers(0, max_rows))
    floats = st.floats(allow_nan=True, allow_infinity=True) | st.none()
    ids = st.sampled_from([None, Decimal(2**53), Decimal(2**53 + 1), Decimal(2**53 + 2), Decimal(0), Decimal(10**37 + 1), Decimal(-(10**37))])
    frame = pl.DataFrame({
        **{name: pl.Series(draw(st.lists(floats, min_size=n, max_size=n)), dtype=pl.Float64) for name in ("x", "y", "v", "c")},
        "k": pl.Series(draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n)), dtype=pl.String),
        "u": pl.Series(draw(st.lists(ids, min_size=n, max_size=n)), dtype=pl.Decimal(38, 0)),
    })  # fmt: skip
    return as_dataset(frame.lazy() if draw(st.booleans()) else frame)


def _polars_refusal(name: str) -> str | None:
    """The schema check's message for the plan on the typed polars schema (String keys ``k``), or None.

    Decided on an empty frame: the schema alone refuses the plans whose public keys a String column
    cannot hold (the int key 1), the same way on every frame of that schema.
    """
    pl = pytest.importorskip("polars")
    empty = pl.DataFrame(schema={**{c: pl.Float64 for c in ("x", "y", "v", "c")}, "k": pl.String, "u": pl.Int64})
    try:
        validate_schema(PLANS[name](), as_dataset(empty))
    except InvalidArgument as exc:
        return str(exc)
    return None


def _assert_total_or_refused_typed(name: str, data: object, seed: int) -> None:
    """Total on a typed polars frame, or refused by its schema before the charge (the same message every time)."""
    refusal = _polars_refusal(name)
    if refusal is None:
        _assert_total(name, as_dataset(data), seed)
    else:
        _assert_refused_before_the_charge(cast(AbstractPrimitive[PureDP], PLANS[name]()), data, seed, refusal)


def test_the_typed_polars_schema_refuses_exactly_the_int_key_plans() -> None:
    refused = {name for name in PLANS if _polars_refusal(name) is not None}
    assert refused == {
        "Laplace-histogram", "NoisyMax-histogram", "Gaussian-user-histogram", "NoisyMax-user-histogram",
        "GroupBy-public-other", "GroupBy-two-columns",  # int keys listed for the String column k
    }  # fmt: skip


@pytest.mark.parametrize("name", USER_PLANS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=polars_decimal_datasets(), seed=st.integers(0, 2**32 - 1))
def test_user_level_releases_are_total_on_polars_decimal_ids(name: str, data: Dataset, seed: int) -> None:
    _assert_total_or_refused_typed(name, data, seed)


# --- lazy frames (polars): hostile typed values, and a plan that fails on one value ---------
# A LazyFrame holds typed columns only: numbers as Float64 (null, NaN, ±inf, ±1e308, -0.0),
# keys as String and ids as Int64 (null among them). Its plan is evaluated before the charge
# (dpalg.data._evaluation): a release on it must be as total as on numpy columns, and a plan
# that fails on one value of a column the release reads is refused before the charge, with
# nothing spent and the value shown nowhere.

SECRET = "SECRET-4711"
_typed_numbers = st.sampled_from((None, math.nan, math.inf, -math.inf, 1e308, -1e308, -0.0, 0.0, 1.0, 3.0, 0.5)) | st.floats()
_typed_keys = st.sampled_from((None, "a", "b", "1", "")) | st.text(max_size=3)
_typed_ids = st.none() | st.integers(-3, 5) | st.sampled_from((2**62, -(2**62)))


@st.composite
def lazy_frames(draw: st.DrawFn, max_rows: int = 12) -> object:
    """A polars LazyFrame of the fixed schema (typed), 0..``max_rows`` hostile rows, behind a plan (a filter and a projection)."""
    pl = pytest.importorskip("polars")
    n = draw(st.integers(0, max_rows))
    numbers = {name: pl.Series(name, draw(st.lists(_typed_numbers, min_size=n, max_size=n)), dtype=pl.Float64) for name in ("x", "y", "v", "c")}
    k = pl.Series("k", draw(st.lists(_typed_keys, min_size=n, max_size=n)), dtype=pl.String)
    u = pl.Series("u", draw(st.lists(_typed_ids, min_size=n, max_size=n)), dtype=pl.Int64)
    frame = pl.DataFrame([*numbers.values(), k, u, pl.Series("keep", [True] * n, dtype=pl.Boolean)]).lazy()
    return frame.filter(pl.col("keep")).select(*COLUMNS)


def _failing_lazy(*, without_secret: bool = False) -> object:
    """Every column of the fixed schema computed from strings by strict casts; one row holds :data:`SECRET`."""
    import polars as pl

    raw = ["1", "0", "3", SECRET, "2", "1", "0", "2"]
    frame = pl.LazyFrame({"s": raw, "i": list(range(len(raw)))})
    if without_secret:
        frame = frame.filter(pl.col("s") != SECRET)
    number = pl.col("s").cast(pl.Float64, strict=True)
    return frame.select(
        *(number.alias(name) for name in ("x", "y", "v", "c")),
        pl.col("s").str.to_integer().cast(pl.String).alias("k"),
        pl.col("s").cast(pl.Int64, strict=True).alias("u"),
    )


@pytest.mark.parametrize("name", sorted(PLANS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=lazy_frames(), seed=st.integers(0, 2**32 - 1))
def test_every_release_is_total_on_a_lazy_frame(name: str, data: object, seed: int) -> None:
    _assert_total_or_refused_typed(name, data, seed)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_plan_refuses_a_failing_lazy_frame_before_the_charge(name: str, caplog: pytest.LogCaptureFixture) -> None:
    """Refused before the charge when the plan reads a column (a budget of exactly one run then still pays for the
    run without the failing row); a plan that reads none (a count) never runs the failing columns and releases."""
    import logging
    import traceback
    import warnings

    from dpalg import Session
    from dpalg.graph._schema import plan_columns

    pytest.importorskip("polars")
    plan = cast(AbstractPrimitive[PureDP], PLANS[name]())  # the measure type does not matter here
    session = Session(plan.cost())  # one run's worth: a refusal that spent anything would leave too little
    refusal = _polars_refusal(name)
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if refusal is not None:  # the schema refuses first, before anything is evaluated
            with pytest.raises(InvalidArgument) as info:
                session.run(plan, _failing_lazy(), rng=1)
            assert str(info.value) == refusal and session.charges == 0
            assert SECRET not in "".join(traceback.format_exception(info.value))
            return
        elif any(True for _ in plan_columns(plan)):
            with pytest.raises(InvalidArgument, match="nothing was charged") as info:
                session.run(plan, _failing_lazy(), rng=1)
            assert info.value.__cause__ is None and info.value.__context__ is None
            assert SECRET not in "".join(traceback.format_exception(info.value))
            assert session.charges == 0
            value = session.run(cast(AbstractPrimitive[PureDP], PLANS[name]()), _failing_lazy(without_secret=True), rng=1).value
        else:
            value = session.run(plan, _failing_lazy(), rng=1).value
    assert session.charges == 1
    assert _compatible(_kind(value), _baseline(name)), (name, _kind(value), _baseline(name))
    assert not any(SECRET in str(w.message) for w in caught)
    assert not any(SECRET in r.getMessage() for r in caplog.records)
