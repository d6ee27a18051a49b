"""Down sensitivity and the losses ℓ, ℓ̄ of monotone user-level queries, against brute force.

Brute force enumerates every subset of at most 7 users with exact Fractions.
Neighbouring relation: add or remove one user with all their rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.data import as_dataset
from dpalg.data._units import (
    per_unit_max,
    per_unit_row_counts,
    per_unit_sums,
    per_unit_value_sets,
    unit_count,
    unit_inverse,
)
from dpalg.queries import Clip, Query
from dpalg.sensitivity._down import (
    DownSensitivityBounds,
    MonotoneLoss,
    check_user_monotone,
    down_sensitivity_count_distinct,
    down_sensitivity_function,
)

SetFn = Callable[[tuple[int, ...]], Fraction]  # f on the tuple of kept users


def brute_profile(f: SetFn, n: int) -> list[Fraction]:
    """``h(k) = min f(x̃)`` over removals of at most k users, by enumeration."""
    best = [min(f(kept) for kept in itertools.combinations(range(n), n - j)) for j in range(n + 1)]
    return list(itertools.accumulate(best, min))


def brute_loss(f: SetFn, n: int, y: int, *, strict: bool) -> int | None:
    for j in range(n + 1):
        for kept in itertools.combinations(range(n), n - j):
            v = f(kept)
            if (v < y) if strict else (v <= y):
                return j
    return None


def brute_ds(f: SetFn, n: int, k: int) -> Fraction:
    full = f(tuple(range(n)))
    return max(
        (full - f(kept) for j in range(min(k, n) + 1) for kept in itertools.combinations(range(n), n - j)),
        default=Fraction(0),
    )


def check_against_brute(loss: MonotoneLoss, f: SetFn, n: int, ys: Sequence[int]) -> None:
    for y in ys:
        lb = brute_loss(f, n, y, strict=False)
        if lb is None:
            with pytest.raises(InvalidArgument):
                loss.loss_at(y)
        else:
            assert loss.loss_at(y) == lb, y
        assert loss.strict_loss_at(y) == brute_loss(f, n, y, strict=True), y
    finite = [y for y in ys if y >= loss.min_y]
    assert loss.losses(finite).tolist() == [loss.loss_at(y) for y in finite]
    finite_s = [y for y in ys if y >= loss.min_strict_y]
    assert loss.losses(finite_s, strict=True).tolist() == [loss.strict_loss_at(y) for y in finite_s]
    for k in range(n + 2):
        assert loss.down_sensitivity(k) == brute_ds(f, n, k), k
    assert loss.value() == f(tuple(range(n)))


def y_range(lo: Fraction, hi: Fraction) -> range:
    return range(math.floor(lo) - 2, math.ceil(hi) + 3)


# --- values: floats that exercise exact (non-dyadic) sums -------------------
nice_floats = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 3.3, 7.0, 12.5])
contrib_lists = st.lists(st.one_of(nice_floats, st.integers(0, 30).map(float)), max_size=7)


@settings(max_examples=60, deadline=None)
@given(contrib_lists)
def test_user_sum_matches_brute_force(c: list[float]) -> None:
    n = len(c)
    exact = [Fraction(v) for v in c]

    def f(kept: tuple[int, ...]) -> Fraction:
        return sum((exact[i] for i in kept), Fraction(0))

    loss = MonotoneLoss.user_sum(c)
    check_against_brute(loss, f, n, y_range(Fraction(0), sum(exact, Fraction(0))))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=7))
def test_row_count_and_user_count_match_brute_force(counts: list[int]) -> None:
    n = len(counts)

    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(sum(counts[i] for i in kept))

    check_against_brute(MonotoneLoss.row_count(np.array(counts, dtype=np.int64)), f, n, y_range(Fraction(0), Fraction(sum(counts))))

    def g(kept: tuple[int, ...]) -> Fraction:
        return Fraction(len(kept))

    check_against_brute(MonotoneLoss.user_count(n), g, n, range(-2, n + 3))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from([-np.inf, -3.0, 0.0, 0.5, 2.0, 2.5, 9.0]), st.integers(-5, 12).map(float)), max_size=7),
    st.sampled_from([Fraction(0), Fraction(-2), Fraction(1, 2), Fraction(3)]),
)
def test_user_max_matches_brute_force(maxima: list[float], empty: Fraction) -> None:
    n = len(maxima)

    def f(kept: tuple[int, ...]) -> Fraction:
        vals = [Fraction(maxima[i]) for i in kept if math.isfinite(maxima[i])]
        return max([empty, *vals])

    loss = MonotoneLoss.user_max(maxima, empty_value=empty)
    assert loss.empty_value == empty
    check_against_brute(loss, f, n, range(-7, 15))


value_sets = st.lists(st.frozensets(st.integers(0, 8), max_size=4), max_size=6)


def _csr(sets: list[frozenset[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    indptr = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    codes = np.array([v for s in sets for v in sorted(s)], dtype=np.int64)
    return indptr, codes


def _distinct(sets: list[frozenset[int]]) -> SetFn:
    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(len(frozenset().union(*(sets[i] for i in kept))))

    return f


@settings(max_examples=60, deadline=None)
@given(value_sets)
def test_count_distinct_disjoint_exact_and_shared_refused(sets: list[frozenset[int]]) -> None:
    n = len(sets)
    f = _distinct(sets)
    indptr, codes = _csr(sets)
    shared = len(codes) != len(set(codes.tolist()))
    if shared:
        with pytest.raises(InvalidArgument, match="set-cover"):
            MonotoneLoss.count_distinct(indptr, codes)
    else:
        check_against_brute(MonotoneLoss.count_distinct(indptr, codes), f, n, range(-2, 12))
    # brute force through a user function handles shared values (the exact set-cover ℓ)
    mono = MonotoneLoss.from_function(lambda m: f(tuple(np.flatnonzero(m).tolist())), n)
    check_against_brute(mono, f, n, range(-2, 12))
    for k in range(n + 1):
        bounds = down_sensitivity_count_distinct(indptr, codes, k)
        assert bounds.exact and bounds.lower == brute_ds(f, n, k)
        loose = down_sensitivity_count_distinct(indptr, codes, k, max_subsets=0)
        assert loose.lower <= brute_ds(f, n, k) <= loose.upper
        if not shared:
            assert loose.exact


def test_count_distinct_bounds_table() -> None:
    # users: {0, 1}, {1, 2}, {3}: removing users 0 and 1 loses 0, 1, 2
    indptr, codes = np.array([0, 2, 4, 5]), np.array([0, 1, 1, 2, 3])
    assert down_sensitivity_count_distinct(indptr, codes, 2) == DownSensitivityBounds(2, 3, 3)
    assert down_sensitivity_count_distinct(indptr, codes, 2, max_subsets=0) == DownSensitivityBounds(2, 2, 3)  # w = 1.5, 1.5, 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=0, max_size=6), st.integers(0, 3))
def test_from_function_matches_brute_force(weights: list[int], power: int) -> None:
    n = len(weights)

    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(sum(weights[i] for i in kept)) ** power if power else Fraction(len(kept) > 0)

    fn = lambda m: f(tuple(np.flatnonzero(m).tolist()))  # noqa: E731
    loss = MonotoneLoss.from_function(fn, n)
    check_against_brute(loss, f, n, range(-2, 40))
    for k in range(n + 1):
        assert down_sensitivity_function(fn, n, k) == brute_ds(f, n, k)


# --- global sensitivity 1 (seed Proposition 3), end to end from rows ----------
rows = st.lists(
    st.tuples(st.integers(0, 6), st.one_of(st.sampled_from([float("nan"), -2.0, 0.5, 0.1]), st.integers(0, 9).map(float))),
    max_size=16,
)


def _losses_from_rows(query: Query, ids: list[int], vals: list[float], ys: range) -> tuple[list[int], list[int | None]]:
    data = as_dataset({"uid": np.array(ids, dtype=np.int64), "v": np.array(vals, dtype=np.float64)})
    loss = MonotoneLoss.from_query(query, data, empty_value=0)
    return [loss.loss_at(y) for y in ys], [loss.strict_loss_at(y) for y in ys]


QUERIES = [
    Query.user_sum("v", user="uid"),
    Query.user_sum("v", user="uid") | Clip(0, 4),
    Query.user_count(user="uid"),
    Query.count(user="uid"),
    Query.count("v", user="uid"),
    Query.user_max("v", user="uid"),
]


@pytest.mark.parametrize("query", QUERIES, ids=repr)
@settings(max_examples=40, deadline=None)
@given(data=rows, who=st.integers(0, 6))
def test_losses_have_sensitivity_one_on_neighbours(query: Query, data: list[tuple[int, float]], who: int) -> None:
    ids = [u for u, _ in data]
    vals = [v for _, v in data]
    smaller = [(u, v) for u, v in data if u != who]  # remove one user with all their rows
    ys = range(0, 80)
    big_l, big_s = _losses_from_rows(query, ids, vals, ys)
    small_l, small_s = _losses_from_rows(query, [u for u, _ in smaller], [v for _, v in smaller], ys)
    for a, b in zip(big_l, small_l):
        assert 0 <= a - b <= 1  # removing a user never increases the loss (monotone f)
    for sa, sb in zip(big_s, small_s):
        assert (sa is None) == (sb is None)
        if sa is not None and sb is not None:
            assert 0 <= sa - sb <= 1


def test_count_distinct_from_query_and_neighbours() -> None:
    data = as_dataset({"uid": np.array([1, 1, 2, 3]), "item": np.array([10, 11, 12, 13])})
    loss = MonotoneLoss.from_query(Query.count_distinct("item", user="uid"), data)
    assert loss.value() == 4 and loss.loss_at(2) == 1 and loss.down_sensitivity(1) == 2
    shared = as_dataset({"uid": np.array([1, 2]), "item": np.array([10, 10])})
    with pytest.raises(InvalidArgument):
        MonotoneLoss.from_query(Query.count_distinct("item", user="uid"), shared)


# --- exactness of float sums --------------------------------------------------
def test_user_sum_is_exact_not_float_rounded() -> None:
    c = [0.1] * 10  # the float sum 0.1 + ... + 0.1 is 0.9999999999999999
    loss = MonotoneLoss.user_sum(c)
    assert loss.value() == 10 * Fraction(0.1) > 1
    assert loss.loss_at(1) == 1 and loss.strict_loss_at(2) == 0


def test_huge_and_tiny_contributions_take_the_exact_path() -> None:
    c = [1e300, 3e-300, 2.5, 1e300]
    exact = [Fraction(v) for v in c]
    loss = MonotoneLoss.user_sum(c)
    assert loss.value() == sum(exact, Fraction(0))
    ceil_t, floor_t = loss.thresholds()
    assert ceil_t[-1] == math.ceil(sum(exact, Fraction(0))) and floor_t[0] == 2
    assert loss.loss_at(0) == 4 and loss.loss_at(1) == 3 and loss.loss_at(3) == 2 and loss.loss_at(10**300) == 2
    assert loss.loss_at(2 * 10**300) == 1 and loss.loss_at(3 * 10**300) == 0
    assert loss.losses([0, 3, 10**300, 3 * 10**300]).tolist() == [4, 2, 2, 0]
    assert loss.down_sensitivity(1) == Fraction(1e300)


def test_large_integer_counts_and_big_y() -> None:
    loss = MonotoneLoss.row_count(np.array([2**61, 2**61, 5], dtype=np.int64))
    assert loss.loss_at(2**62 + 5) == 0 and loss.loss_at(2**62 + 4) == 1 and loss.loss_at(5) == 2
    assert loss.losses([2**70, -0 + 4]).tolist() == [0, 3]
    small = MonotoneLoss.user_sum([1.0, 2.0])
    assert small.loss_at(2**80) == 0 and small.strict_loss_at(2**80) == 0
    assert small.losses(np.array([2**62, 2**63 - 1], dtype=np.int64)).tolist() == [0, 0]


def test_empty_dataset() -> None:
    loss = MonotoneLoss.user_sum([])
    assert loss.value() == 0 and loss.loss_at(0) == 0 and loss.strict_loss_at(0) is None
    assert loss.strict_loss_at(1) == 0 and loss.down_sensitivity(3) == 0
    mx = MonotoneLoss.user_max([], empty_value=Fraction(5, 2))
    assert mx.min_y == 3 and mx.min_strict_y == 3 and mx.loss_at(3) == 0 and mx.strict_loss_at(2) is None


# --- monotonicity checker -------------------------------------------------------
def test_check_user_monotone() -> None:
    assert check_user_monotone(lambda m: int(m.sum()), 8, trials=200, rng_seed=1)
    assert not check_user_monotone(lambda m: -int(m.sum()), 8, trials=200, rng_seed=1)
    # non-monotone only on large subsets: caught because subset densities vary
    assert not check_user_monotone(lambda m: 0 if m.sum() >= 7 else int(m.sum()), 8, trials=500, rng_seed=2)
    assert check_user_monotone(lambda m: 1, 0)


# --- reductions -----------------------------------------------------------------
def test_reductions_policy() -> None:
    ids = np.array(["b", "a", "b", "c", "a"], dtype=object)
    vals = np.array([1.5, -4.0, np.nan, np.inf, 2.0])
    assert unit_count(ids) == 3
    assert per_unit_sums(ids, vals).tolist() == [2.0, 1.5, float(np.finfo(np.float64).max)]
    assert per_unit_max(ids, vals).tolist() == [2.0, 1.5, float(np.finfo(np.float64).max)]
    assert per_unit_row_counts(ids).tolist() == [2, 2, 1]
    assert per_unit_row_counts(ids, vals).tolist() == [2, 1, 1]
    indptr, codes = per_unit_value_sets(ids, np.array([1, 2, 1, 2, 2]))
    assert indptr.tolist() == [0, 1, 2, 3] and codes.tolist() == [1, 0, 1]
    assert unit_inverse([])[0] == 0 and per_unit_sums([], []).size == 0


def test_overflowing_total_is_clamped() -> None:
    fmax = float(np.finfo(np.float64).max)
    assert per_unit_sums([1, 1], [fmax, fmax]).tolist() == [fmax]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: per_unit_sums(np.array([1, None], dtype=object), [1.0, 2.0]), "ids"),
        (lambda: per_unit_sums([1.0, float("nan")], [1.0, 2.0]), "ids"),
        (lambda: per_unit_sums([1, 2], [1.0]), "values"),
        (lambda: per_unit_sums([1, 2], ["x", "y"]), "values"),
        (lambda: per_unit_max(np.zeros((2, 2)), [1.0, 2.0]), "ids"),
        (lambda: per_unit_value_sets([1, 2], [1]), "values"),
        (lambda: MonotoneLoss.user_sum([1.0, -1.0]), "contributions"),
        (lambda: MonotoneLoss.user_sum([np.inf]), "contributions"),
        (lambda: MonotoneLoss.row_count([1.5]), "counts"),
        (lambda: MonotoneLoss.row_count([-1]), "counts"),
        (lambda: MonotoneLoss.user_max([np.nan], empty_value=0), "maxima"),
        (lambda: MonotoneLoss.user_max([np.inf], empty_value=0), "maxima"),
        (lambda: MonotoneLoss.count_distinct([1, 2], [0]), "indptr"),
        (lambda: MonotoneLoss.from_function(lambda m: 0, 17), "n_units"),
        (lambda: MonotoneLoss.user_sum([1.0]).loss_at(-1), "y"),
        (lambda: MonotoneLoss.user_sum([1.0]).loss_at(True), "y"),
        (lambda: MonotoneLoss.user_sum([1.0]).losses([-1, 0]), "ys"),
        (lambda: MonotoneLoss.user_sum([1.0]).losses([0], strict=True), "ys"),
        (lambda: MonotoneLoss.user_sum([1.0]).down_sensitivity(-1), "k"),
        (lambda: down_sensitivity_function(lambda m: 0, 30, 10, max_subsets=10), "k"),
        (lambda: check_user_monotone(lambda m: 0, -1), "n_units"),
        (lambda: MonotoneLoss.from_query(Query.sum("v"), as_dataset({"v": [1.0]})), "query"),
        (lambda: MonotoneLoss.from_query(Query.user_max("v", user="u"), as_dataset({"u": [1], "v": [1.0]})), "empty_value"),
    ],
)
def test_invalid_arguments(call: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()
    assert info.value.field == field


def test_error_messages_do_not_show_data() -> None:
    secret = 987654.321
    with pytest.raises(InvalidArgument) as info:
        MonotoneLoss.user_sum([1.0, -secret])
    assert "987654" not in str(info.value)
    with pytest.raises(InvalidArgument) as info2:
        per_unit_sums(np.array(["alice-secret", None], dtype=object), [1.0, 2.0])
    assert "alice" not in str(info2.value)
    assert "5" not in repr(MonotoneLoss.user_sum([5.0]))


def test_reductions_are_unit_local() -> None:
    gen = np.random.default_rng(3)
    ids = gen.integers(0, 50, size=2000)
    vals = gen.pareto(1.2, size=2000) * gen.choice([-1.0, 1.0], size=2000)
    full = per_unit_sums(ids, vals)
    uniq = np.unique(ids)
    drop = int(uniq[17])
    keep = ids != drop
    part = per_unit_sums(ids[keep], vals[keep])
    assert np.array_equal(np.delete(full, 17), part)  # bit-for-bit: no other total moves


@settings(max_examples=40, deadline=None)
@given(contrib_lists)
def test_floored_user_sum_matches_brute_force_of_floor_f(c: list[float]) -> None:
    exact = [Fraction(v) for v in c]

    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(math.floor(sum((exact[i] for i in kept), Fraction(0))))

    check_against_brute(MonotoneLoss.user_sum(c).floored(), f, len(c), y_range(Fraction(0), sum(exact, Fraction(0))))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([-np.inf, 0.5, 2.5, 3.0, 7.25]), max_size=6), st.sampled_from([Fraction(-3, 2), Fraction(1, 2)]))
def test_floored_user_max_matches_brute_force_of_floor_f(maxima: list[float], empty: Fraction) -> None:
    def f(kept: tuple[int, ...]) -> Fraction:
        vals = [Fraction(maxima[i]) for i in kept if math.isfinite(maxima[i])]
        return Fraction(math.floor(max([empty, *vals])))

    check_against_brute(MonotoneLoss.user_max(maxima, empty_value=empty).floored(), f, len(maxima), range(-5, 10))
