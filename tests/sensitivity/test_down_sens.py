"""ℓ, ℓ̄ and DS^k of user-level queries against brute force over all subsets of users.

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
from dpalg.data._user_units import (
    per_unit_max,
    per_unit_row_counts,
    per_unit_sums,
    per_unit_value_sets,
    unit_count,
    unit_index,
)
from dpalg.sensitivity._down_sens import (
    UserLoss,
    check_user_monotone,
    down_sensitivity_count_distinct,
    down_sensitivity_function,
)

Rows = list[list[float]]  # rows[u] = the values of user u

# values on a half-integer grid (exercises non-integer thresholds), some missing
VALUE = st.one_of(st.integers(-6, 12).map(lambda v: v / 2), st.just(float("nan")))
USERS = st.lists(st.lists(VALUE, min_size=0, max_size=4), min_size=0, max_size=6)


def _arrays(rows: Rows) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    ids = [u * 7 + 3 for u, vals in enumerate(rows) for _ in vals]  # ids need not be 0..n-1
    vals = [v for vs in rows for v in vs]
    order = np.argsort(np.array(ids, dtype=np.int64) % 5, kind="stable")  # rows of users interleaved
    return np.array(ids, dtype=np.int64)[order], np.array(vals, dtype=np.float64)[order]


def _present(rows: Rows) -> Rows:
    """Users that appear in the data (a user with no rows does not exist)."""
    return [vs for vs in rows if vs]


def f_sum(rows: Rows) -> Fraction:
    return sum((max(Fraction(sum(v for v in vs if v == v)), Fraction(0)) for vs in rows), Fraction(0))


def f_count(rows: Rows) -> Fraction:
    return Fraction(sum(len(vs) for vs in rows))


def f_max(rows: Rows, floor: Fraction) -> Fraction:
    vals = [Fraction(v) for vs in rows for v in vs if v == v]
    return max([floor, *vals])


def brute_losses(f: Callable[[Rows], Fraction], rows: Rows, y: int) -> tuple[int, int | None, list[Fraction]]:
    """(ℓ, ℓ̄ or None for +∞, [min f after removing exactly k users for k = 0..n])."""
    n = len(rows)
    best = [min(f([rows[i] for i in range(n) if i not in set(r)]) for r in itertools.combinations(range(n), k)) for k in range(n + 1)]
    loss = min(k for k in range(n + 1) if best[k] <= y)
    strict = [k for k in range(n + 1) if best[k] < y]
    return loss, (min(strict) if strict else None), best


def build(kind: str, rows: Rows, floor: Fraction = Fraction(-2)) -> UserLoss:
    ids, vals = _arrays(rows)
    if kind == "sum":
        return UserLoss.user_sum(per_unit_sums(ids, vals))
    if kind == "count":
        return UserLoss.row_count(per_unit_row_counts(ids))
    return UserLoss.user_max(per_unit_max(ids, vals), floor=floor)


def ref(kind: str, floor: Fraction = Fraction(-2)) -> Callable[[Rows], Fraction]:
    if kind == "sum":
        return f_sum
    if kind == "count":
        return f_count
    return lambda r: f_max(r, floor)


@settings(max_examples=60, deadline=None)
@given(rows=USERS, kind=st.sampled_from(["sum", "count", "max"]))
def test_losses_and_down_sensitivity_match_brute_force(rows: Rows, kind: str) -> None:
    rows = _present(rows)
    floor = Fraction(-5, 2)
    loss = build(kind, rows, floor)
    f = ref(kind, floor)
    assert loss.value() == f(rows)
    assert loss.n_units == len(rows)
    top = math.ceil(f(rows)) + 2
    ys = list(range(loss.min_y, top + 1))
    vec = loss.losses(np.array(ys, dtype=np.int64))
    vec_strict = loss.losses(np.array([y for y in ys if y > math.floor(loss.floor)], dtype=np.int64), strict=True)
    strict_seen = []
    for i, y in enumerate(ys):
        ell, ell_bar, prof = brute_losses(f, rows, y)
        assert loss.loss(y) == ell == vec[i], (y, kind)
        assert loss.loss_strict(y) == ell_bar, (y, kind)
        if ell_bar is not None:
            strict_seen.append(ell_bar)
    assert vec_strict.tolist() == strict_seen
    for k in range(len(rows) + 2):
        assert loss.down_sensitivity(k) == prof[0] - prof[min(k, len(rows))]


@settings(max_examples=60, deadline=None)
@given(rows=USERS, extra=st.lists(VALUE, min_size=1, max_size=4), kind=st.sampled_from(["sum", "count", "max"]),
       where=st.integers(0, 6))  # fmt: skip
def test_global_sensitivity_one_on_neighbours(rows: Rows, extra: list[float], kind: str, where: int) -> None:
    """Prop. 3: |ℓ(x,y) − ℓ(x',y)| <= 1 and the same for ℓ̄, x' = x plus one user."""
    rows = _present(rows)
    bigger = rows[:where] + [extra] + rows[where:]
    a, b = build(kind, rows), build(kind, bigger)
    lo = max(a.min_y, b.min_y)
    for y in range(lo, int(math.ceil(b.value())) + 3):
        assert 0 <= b.loss(y) - a.loss(y) <= 1
        sa, sb = a.loss_strict(y), b.loss_strict(y)
        assert (sa is None) == (sb is None)
        if sa is not None and sb is not None:
            assert 0 <= sb - sa <= 1


def test_non_integer_and_huge_sums_use_exact_arithmetic() -> None:
    # 0.1 + 0.2 is not 0.3 in floats; the exact thresholds use the binary values
    loss = UserLoss.user_sum([0.1, 0.2, 2.5])
    assert loss.value() == Fraction(0.1) + Fraction(0.2) + Fraction(2.5)
    assert [loss.loss(y) for y in range(0, 4)] == [3, 1, 1, 0]
    assert [loss.loss_strict(y) for y in range(0, 5)] == [None, 1, 1, 0, 0]
    big = UserLoss.user_sum([1e20, 3e19, 5.0])
    thr, _ = big.breakpoints()
    assert thr.dtype == object
    assert big.loss(10**20) == 1 and big.loss(5) == 2 and big.loss(4) == 3
    assert big.loss(2**70) == 0 and big.down_sensitivity(1) == Fraction(1e20)


def test_count_distinct_disjoint_and_shared() -> None:
    ids = np.array(["a", "a", "b", "c", "c", "c"])
    vals = np.array(["x", "y", "z", "u", "v", "u"])
    indptr, codes = per_unit_value_sets(ids, vals)
    loss = UserLoss.count_distinct(indptr, codes)
    assert loss.value() == 5 and loss.loss(2) == 2 and loss.down_sensitivity(1) == 2
    shared_ptr, shared_codes = per_unit_value_sets(["a", "b", "b"], ["x", "x", "y"])
    with pytest.raises(InvalidArgument, match="set-cover"):
        UserLoss.count_distinct(shared_ptr, shared_codes)


@settings(max_examples=40, deadline=None)
@given(sets=st.lists(st.sets(st.integers(0, 6), max_size=4), min_size=1, max_size=6), k=st.integers(0, 7))
def test_count_distinct_down_sensitivity_brute_force(sets: list[set[int]], k: int) -> None:
    ids = [u for u, s in enumerate(sets) for _ in s]
    vals = [v for s in sets for v in sorted(s)]
    indptr, codes = per_unit_value_sets(np.array(ids, dtype=np.int64), np.array(vals, dtype=np.int64))
    present = [s for s in sets if s]

    def fn(mask: npt.NDArray[np.bool_]) -> int:
        return len(set().union(*[s for s, keep in zip(present, mask) if keep]))

    assert down_sensitivity_count_distinct(indptr, codes, k) == down_sensitivity_function(fn, len(present), k)
    if sum(len(s) for s in present) == len(set().union(*present)):  # disjoint: the loss exists and agrees
        loss, ref_loss = UserLoss.count_distinct(indptr, codes), UserLoss.from_function(fn, len(present))
        for y in range(0, 12):
            assert loss.loss(y) == ref_loss.loss(y)
            assert loss.loss_strict(y) == ref_loss.loss_strict(y)


def test_from_function_matches_the_built_in_kind() -> None:
    contrib = [4, 0, 7, 1, 1]

    def fn(mask: npt.NDArray[np.bool_]) -> int:
        return sum(c for c, m in zip(contrib, mask) if m)

    assert check_user_monotone(fn, 5, trials=200, seed=1)
    a, b = UserLoss.from_function(fn, 5), UserLoss.row_count(np.array(contrib))
    for y in range(0, 15):
        assert a.loss(y) == b.loss(y) and a.loss_strict(y) == b.loss_strict(y)
    for k in range(7):
        assert a.down_sensitivity(k) == b.down_sensitivity(k) == down_sensitivity_function(fn, 5, k)


def test_check_user_monotone_refutes() -> None:
    assert not check_user_monotone(lambda m: int(m.sum()) % 2, 6, trials=200, seed=0)
    assert check_user_monotone(lambda m: 0, 0)


def test_reductions() -> None:
    ids = np.array([5, 5, 9, 2, 9])
    vals = np.array([1.0, np.inf, -3.0, np.nan, 1.0])
    assert unit_count(ids) == 3
    assert unit_index(ids)[1].tolist() == [1, 1, 2, 0, 2]
    assert per_unit_sums(ids, vals).tolist() == [0.0, 2.0**42, 0.0]  # +inf clamps at 2**62 lattice steps of 2**-20
    assert per_unit_max(ids, vals).tolist() == [-np.inf, float(np.finfo(np.float64).max), 1.0]
    assert per_unit_row_counts(ids, vals).tolist() == [0, 2, 2]
    assert per_unit_sums([], []).size == 0


def test_rows_with_missing_ids_belong_to_no_unit() -> None:
    """Policy: a missing id drops the row (never an error, which would leak)."""
    ids = np.array(["a", None, "b", "a"], dtype=object)
    vals = [1.0, 100.0, 2.0, 3.0]
    assert unit_index(ids)[1].tolist() == [0, -1, 1, 0]
    assert unit_index([1.0, float("nan")])[1].tolist() == [0, -1]
    assert per_unit_sums(ids, vals).tolist() == per_unit_sums(["a", "b", "a"], [1.0, 2.0, 3.0]).tolist() == [4.0, 2.0]
    assert per_unit_max(ids, vals).tolist() == [3.0, 2.0]
    assert per_unit_row_counts(ids).tolist() == [2, 1]
    indptr, codes = per_unit_value_sets(ids, vals)
    assert indptr.tolist() == [0, 2, 3]


@pytest.mark.parametrize(
    "call",
    [
        lambda: per_unit_sums([1, 2], [1.0]),
        lambda: per_unit_sums([[1]], [[1.0]]),
        lambda: per_unit_sums([1], ["x"]),
        lambda: UserLoss.user_sum([-1.0]),
        lambda: UserLoss.user_sum([float("inf")]),
        lambda: UserLoss.row_count([1.5]),
        lambda: UserLoss.user_max([float("nan")], floor=0),
        lambda: UserLoss.user_sum([1.0]).loss(-1),
        lambda: UserLoss.user_sum([1.0]).loss(1.0),  # type: ignore[arg-type]
        lambda: UserLoss.user_sum([1.0]).down_sensitivity(-1),
        lambda: UserLoss.user_sum([1.0]).losses([-3]),
        lambda: UserLoss.from_function(lambda m: 0, 17),
        lambda: down_sensitivity_function(lambda m: 0, 40, 20),
        lambda: UserLoss.count_distinct([1, 2], [0]),
    ],
)
def test_invalid_arguments(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidArgument):
        call()


# --- direct constructors against brute force over every subset (exact Fractions) ---
SetFn = Callable[[tuple[int, ...]], Fraction]  # f on the tuple of kept users


def brute_loss(f: SetFn, n: int, y: int, *, strict: bool) -> int | None:
    """``ℓ`` (or ``ℓ̄``) from the definition: the fewest removed users, None for +∞."""
    for j in range(n + 1):
        for kept in itertools.combinations(range(n), n - j):
            v = f(kept)
            if (v < y) if strict else (v <= y):
                return j
    return None


def brute_ds(f: SetFn, n: int, k: int) -> Fraction:
    """``DS^k`` from seed Eq. 1."""
    full = f(tuple(range(n)))
    return max((full - f(kept) for j in range(min(k, n) + 1) for kept in itertools.combinations(range(n), n - j)), default=Fraction(0))


def check_against_brute(loss: UserLoss, f: SetFn, n: int, ys: Sequence[int]) -> None:
    # every subset once: f(kept) grouped by the number of removed users
    values = [[f(kept) for kept in itertools.combinations(range(n), n - j)] for j in range(n + 1)]
    for y in ys:
        want = next((j for j in range(n + 1) if any(v <= y for v in values[j])), None)
        if want is None:
            with pytest.raises(InvalidArgument):
                loss.loss(y)
        else:
            assert loss.loss(y) == want, y
        want_strict = next((j for j in range(n + 1) if any(v < y for v in values[j])), None)
        assert loss.loss_strict(y) == want_strict, y
    if n <= 4:  # the definition, literally, on small instances
        for y in ys:
            assert brute_loss(f, n, y, strict=True) == loss.loss_strict(y)
    finite = [y for y in ys if y >= loss.min_y]
    assert loss.losses(np.array(finite, dtype=np.int64)).tolist() == [loss.loss(y) for y in finite]
    finite_s = [y for y in ys if y > math.floor(loss.floor)]
    assert loss.losses(np.array(finite_s, dtype=np.int64), strict=True).tolist() == [loss.loss_strict(y) for y in finite_s]
    for k in range(n + 2):
        assert loss.down_sensitivity(k) == brute_ds(f, n, k), k
    assert loss.value() == f(tuple(range(n)))


def y_range(lo: Fraction, hi: Fraction) -> range:
    return range(math.floor(lo) - 2, math.ceil(hi) + 3)


# non-dyadic floats (0.1, 3.3) exercise the exact common-power-of-two path
NICE = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 3.3, 7.0, 12.5])
CONTRIB_LISTS = st.lists(st.one_of(NICE, st.integers(0, 30).map(float)), max_size=7)
MAXIMA = st.lists(st.one_of(st.sampled_from([-np.inf, -3.0, 0.0, 0.5, 2.0, 2.5, 9.0]), st.integers(-5, 12).map(float)), max_size=7)
EMPTIES = st.sampled_from([Fraction(0), Fraction(-2), Fraction(1, 2), Fraction(3), Fraction(-3, 2)])


def _sum_fn(c: list[float], *, floor: bool = False) -> SetFn:
    exact = [Fraction(v) for v in c]

    def f(kept: tuple[int, ...]) -> Fraction:
        total = sum((exact[i] for i in kept), Fraction(0))
        return Fraction(math.floor(total)) if floor else total

    return f


def _max_fn(maxima: list[float], empty: Fraction, *, floor: bool = False) -> SetFn:
    def f(kept: tuple[int, ...]) -> Fraction:
        v = max([empty, *(Fraction(maxima[i]) for i in kept if math.isfinite(maxima[i]))])
        return Fraction(math.floor(v)) if floor else v

    return f


@settings(max_examples=60, deadline=None)
@given(CONTRIB_LISTS)
def test_user_sum_matches_brute_force(c: list[float]) -> None:
    total = sum((Fraction(v) for v in c), Fraction(0))
    check_against_brute(UserLoss.user_sum(c), _sum_fn(c), len(c), y_range(Fraction(0), total))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=7))
def test_row_count_matches_brute_force(counts: list[int]) -> None:
    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(sum(counts[i] for i in kept))

    check_against_brute(UserLoss.row_count(np.array(counts, dtype=np.int64)), f, len(counts), range(-2, sum(counts) + 3))


@settings(max_examples=60, deadline=None)
@given(MAXIMA, EMPTIES)
def test_user_max_matches_brute_force(maxima: list[float], empty: Fraction) -> None:
    loss = UserLoss.user_max(maxima, floor=empty)
    assert loss.floor == empty
    check_against_brute(loss, _max_fn(maxima, empty), len(maxima), range(-7, 15))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=6), st.integers(0, 3))
def test_from_function_matches_brute_force(weights: list[int], power: int) -> None:
    n = len(weights)

    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(sum(weights[i] for i in kept)) ** power if power else Fraction(len(kept) > 0)

    def fn(mask: npt.NDArray[np.bool_]) -> Fraction:
        return f(tuple(np.flatnonzero(mask).tolist()))

    check_against_brute(UserLoss.from_function(fn, n), f, n, range(-2, 40))
    for k in range(n + 1):
        assert down_sensitivity_function(fn, n, k) == brute_ds(f, n, k)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, 8), max_size=4), max_size=6))
def test_shared_count_distinct_through_from_function(sets: list[frozenset[int]]) -> None:
    """With shared values the exact (set-cover) ℓ is only available by brute force."""

    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(len(frozenset().union(*(sets[i] for i in kept))))

    loss = UserLoss.from_function(lambda m: f(tuple(np.flatnonzero(m).tolist())), len(sets))
    check_against_brute(loss, f, len(sets), range(-2, 12))


# --- ⌊f⌋: what the mechanisms use on an integer output domain -----------------------
@settings(max_examples=40, deadline=None)
@given(CONTRIB_LISTS)
def test_floored_user_sum_matches_brute_force_of_floor_f(c: list[float]) -> None:
    total = sum((Fraction(v) for v in c), Fraction(0))
    loss = UserLoss.user_sum(c).floored()
    assert loss.is_floored and loss.floored() is loss
    check_against_brute(loss, _sum_fn(c, floor=True), len(c), y_range(Fraction(0), total))


@settings(max_examples=40, deadline=None)
@given(MAXIMA, EMPTIES)
def test_floored_user_max_matches_brute_force_of_floor_f(maxima: list[float], empty: Fraction) -> None:
    loss = UserLoss.user_max(maxima, floor=empty).floored()
    assert loss.floor == math.floor(empty)
    check_against_brute(loss, _max_fn(maxima, empty, floor=True), len(maxima), range(-7, 15))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([Fraction(1, 3), Fraction(5, 2), Fraction(2), Fraction(7, 4)]), max_size=6))
def test_floored_from_function_matches_brute_force(weights: list[Fraction]) -> None:
    def f(kept: tuple[int, ...]) -> Fraction:
        return Fraction(math.floor(sum((weights[i] for i in kept), Fraction(0))))

    raw = UserLoss.from_function(lambda m: sum((w for w, keep in zip(weights, m) if keep), Fraction(0)), len(weights))
    check_against_brute(raw.floored(), f, len(weights), range(-2, 16))


@settings(max_examples=40, deadline=None)
@given(CONTRIB_LISTS)
def test_floored_loss_is_the_strict_loss_shifted_by_one(c: list[float]) -> None:
    """ℓ_⌊f⌋(y) = ℓ̄_f(y + 1) and ℓ̄_⌊f⌋(y) = ℓ̄_f(y): both are sensitivity-1 losses of f."""
    raw = UserLoss.user_sum(c)
    fl = raw.floored()
    for y in range(0, 50):
        assert fl.loss(y) == raw.loss_strict(y + 1)
        assert fl.loss_strict(y) == raw.loss_strict(y)


def test_floored_changes_nothing_for_integer_f() -> None:
    a = UserLoss.row_count(np.array([3, 0, 5, 1]))
    b = a.floored()
    assert [a.loss(y) for y in range(12)] == [b.loss(y) for y in range(12)]
    assert [a.loss_strict(y) for y in range(12)] == [b.loss_strict(y) for y in range(12)]
    assert "floored" in repr(b) and "floored" not in repr(a)


# --- exactness of float sums, big numbers, empty data ------------------------------
def test_user_sum_is_exact_not_float_rounded() -> None:
    loss = UserLoss.user_sum([0.1] * 10)  # the float sum 0.1 + ... + 0.1 is 0.9999999999999999
    assert loss.value() == 10 * Fraction(0.1) > 1
    assert loss.loss(1) == 1 and loss.loss_strict(2) == 0
    assert loss.floored().value() == 1


def test_huge_and_tiny_contributions_take_the_exact_path() -> None:
    c = [1e300, 3e-300, 2.5, 1e300]
    total = sum((Fraction(v) for v in c), Fraction(0))
    loss = UserLoss.user_sum(c)
    assert loss.value() == total
    ceil_t, floor_t = loss.breakpoints()
    assert int(ceil_t[-1]) == math.ceil(total) and int(floor_t[0]) == 2
    assert loss.loss(0) == 4 and loss.loss(1) == 3 and loss.loss(3) == 2 and loss.loss(10**300) == 2
    assert loss.loss(2 * 10**300) == 1 and loss.loss(3 * 10**300) == 0
    assert loss.losses(np.array([0, 3, 10**300, 3 * 10**300], dtype=object)).tolist() == [4, 2, 2, 0]
    assert loss.down_sensitivity(1) == Fraction(1e300)


def test_large_integer_counts_and_big_y() -> None:
    loss = UserLoss.row_count(np.array([2**61, 2**61, 5], dtype=np.int64))
    assert loss.loss(2**62 + 5) == 0 and loss.loss(2**62 + 4) == 1 and loss.loss(5) == 2
    assert loss.losses(np.array([2**70, 4], dtype=object)).tolist() == [0, 3]
    small = UserLoss.user_sum([1.0, 2.0])
    assert small.loss(2**80) == 0 and small.loss_strict(2**80) == 0
    assert small.losses(np.array([2**62, 2**63 - 1], dtype=np.int64)).tolist() == [0, 0]


def test_empty_dataset() -> None:
    loss = UserLoss.user_sum([])
    assert loss.value() == 0 and loss.loss(0) == 0 and loss.loss_strict(0) is None
    assert loss.loss_strict(1) == 0 and loss.down_sensitivity(3) == 0
    mx = UserLoss.user_max([], floor=Fraction(5, 2))
    assert mx.min_y == 3 and mx.loss(3) == 0 and mx.loss_strict(2) is None and mx.loss_strict(3) == 0
    assert mx.floored().min_y == 2 and mx.floored().loss(2) == 0


# --- monotonicity checker, down sensitivity of non-monotone functions ----------------
def test_check_user_monotone_reaches_large_subsets() -> None:
    assert check_user_monotone(lambda m: int(m.sum()), 8, trials=200, seed=1)
    assert not check_user_monotone(lambda m: -int(m.sum()), 8, trials=200, seed=1)
    # non-monotone only when at least 7 of 8 users are kept: needs dense random subsets
    assert not check_user_monotone(lambda m: 0 if m.sum() >= 7 else int(m.sum()), 8, trials=500, seed=2)


def test_down_sensitivity_function_is_the_signed_drop() -> None:
    """Seed Eq. 1 is max f(x) − f(x̃): a non-monotone f that only grows has DS = 0."""
    assert down_sensitivity_function(lambda m: 5 - int(m.sum()), 4, 2) == 0
    assert down_sensitivity_function(lambda m: int(m.sum()) % 2, 3, 1) == 1


# --- reductions: unit-locality and the data policy ----------------------------------
def test_reductions_are_unit_local() -> None:
    gen = np.random.default_rng(3)
    ids = gen.integers(0, 50, size=2000)
    vals = gen.pareto(1.2, size=2000) * gen.choice([-1.0, 1.0], size=2000)
    uniq = np.unique(ids)
    drop = int(uniq[17])
    keep = ids != drop
    for reduce in (per_unit_sums, per_unit_max):
        full, part = reduce(ids, vals), reduce(ids[keep], vals[keep])
        assert np.array_equal(np.delete(full, 17), part)  # bit-for-bit: no other entry moves


def test_overflowing_total_and_infinite_max_are_clamped() -> None:
    fmax = float(np.finfo(np.float64).max)
    assert per_unit_sums([1, 1], [fmax, fmax]).tolist() == [2.0**42]  # rows and totals clamp at 2**62 steps of 2**-20
    assert per_unit_sums([1, 1], [fmax, fmax], k=900).tolist() == [2.0**962]
    assert per_unit_max([1, 2, 2], [np.inf, -np.inf, np.nan]).tolist() == [fmax, -np.inf]
    UserLoss.user_max(per_unit_max([1, 2], [np.inf, 3.0]), floor=0)  # accepted: no data-dependent error


def test_error_messages_do_not_show_data() -> None:
    secret = 987654.321
    with pytest.raises(InvalidArgument) as info:
        UserLoss.user_sum([1.0, -secret])
    assert "987654" not in str(info.value)
    # ids of mixed types are two users (data policy), never an error that could show one
    assert sorted(per_unit_sums(np.array(["alice-secret", 3], dtype=object), [1.0, 2.0]).tolist()) == [1.0, 2.0]
    assert "5" not in repr(UserLoss.user_sum([5.0]))
