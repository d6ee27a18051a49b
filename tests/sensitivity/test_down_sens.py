"""ℓ, ℓ̄ and DS^k of user-level queries against brute force over all subsets of users.

Neighbouring relation: add or remove one user with all their rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
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
    assert per_unit_sums(ids, vals).tolist() == [0.0, float(np.finfo(np.float64).max), 0.0]
    assert per_unit_max(ids, vals).tolist() == [-np.inf, np.inf, 1.0]
    assert per_unit_row_counts(ids, vals).tolist() == [0, 2, 2]
    assert per_unit_sums([], []).size == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: unit_index([1.0, float("nan")]),
        lambda: unit_index(np.array(["a", None], dtype=object)),
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
