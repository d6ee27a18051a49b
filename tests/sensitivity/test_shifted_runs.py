"""Runs of the shifted loss ℓ* and the exact shift τ (seed 004, Theorem 4 and footnote 4).

Neighbouring relation: add or remove one user with all their rows.
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.data._units import per_unit_sums
from dpalg.sensitivity._down import MonotoneLoss
from dpalg.sensitivity._shifted_runs import loss_at, shift_tau, shifted_loss_at, shifted_loss_runs


def brute_shifted(values: list[Fraction], empty: Fraction, kind: str, y: int, tau: int) -> int:
    """ℓ*(x, y) from its definition: enumerate every subset of users."""
    n = len(values)

    def f(kept: tuple[int, ...]) -> Fraction:
        if kind == "sum":
            return sum((values[i] for i in kept), Fraction(0))
        return max([empty, *(values[i] for i in kept)])

    def first(pred: str) -> int | None:
        for j in range(n + 1):
            for kept in itertools.combinations(range(n), n - j):
                v = f(kept)
                if (v <= y) if pred == "le" else (v < y):
                    return j
        return None

    ell = first("le")
    assert ell is not None
    bar = first("lt")
    return ell - tau if bar is None else max(ell - tau, tau - bar)


def check_runs(loss: MonotoneLoss, lo: int, hi: int, tau: int) -> tuple[list[int], list[int], list[int]]:
    starts, ends, losses = shifted_loss_runs(loss, lo, hi, tau)
    assert len(starts) == len(ends) == len(losses) >= 1
    assert starts[0] == lo and ends[-1] == hi
    assert all(s <= e for s, e in zip(starts, ends))
    assert all(e + 1 == s for e, s in zip(ends, starts[1:]))  # consecutive: cover Y exactly
    assert all(a != b for a, b in zip(losses, losses[1:]))  # maximal
    assert len(starts) <= 2 * loss.n_units + 2
    assert all(isinstance(v, int) for v in starts + ends + losses)
    return starts, ends, losses


def expand(starts: list[int], ends: list[int], losses: list[int]) -> list[int]:
    return [v for s, e, v in zip(starts, ends, losses) for _ in range(e - s + 1)]


floats = st.one_of(st.sampled_from([0.0, 0.1, 0.5, 1.5, 2.25, 3.3]), st.integers(0, 12).map(float))


@settings(max_examples=80, deadline=None)
@given(st.lists(floats, max_size=7), st.integers(0, 6), st.integers(0, 3), st.integers(0, 30))
def test_user_sum_runs_equal_brute_force_everywhere(c: list[float], tau: int, lo: int, width: int) -> None:
    loss = MonotoneLoss.user_sum(c)
    hi = lo + width
    runs = check_runs(loss, lo, hi, tau)
    exact = [Fraction(v) for v in c]
    want = [brute_shifted(exact, Fraction(0), "sum", y, tau) for y in range(lo, hi + 1)]
    assert expand(*runs) == want
    assert want == [shifted_loss_at(loss, y, tau) for y in range(lo, hi + 1)]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from([-np.inf, 0.5, 2.5]), st.integers(-4, 10).map(float)), max_size=7),
    st.sampled_from([Fraction(-3), Fraction(0), Fraction(3, 2), Fraction(2)]),
    st.integers(0, 5),
    st.integers(0, 3),
    st.integers(0, 16),
)
def test_user_max_runs_equal_brute_force_everywhere(
    maxima: list[float], empty: Fraction, tau: int, offset: int, width: int
) -> None:
    loss = MonotoneLoss.user_max(maxima, empty_value=empty)
    lo = loss.min_y + offset
    hi = lo + width
    runs = check_runs(loss, lo, hi, tau)
    vals = [Fraction(v) for v in maxima if math.isfinite(v)]
    want = [brute_shifted(vals, empty, "max", y, tau) for y in range(lo, hi + 1)]
    assert expand(*runs) == want


def test_runs_of_the_docstring_example() -> None:
    loss = MonotoneLoss.user_sum([5.0, 1.0, 3.0])
    assert shifted_loss_runs(loss, 0, 2**64 - 1, 1) == ([0, 1, 4, 10], [0, 3, 9, 2**64 - 1], [2, 1, 0, 1])
    assert shifted_loss_runs(loss, 7, 7, 1) == ([7], [7], [0])
    assert shifted_loss_runs(loss, 2**70, 2**71, 0) == ([2**70], [2**71], [0])


def test_runs_with_big_thresholds() -> None:
    loss = MonotoneLoss.user_sum([1e300, 2.0, 1e300])
    lo, hi, tau = 0, 10**301, 1
    starts, ends, losses = check_runs(loss, lo, hi, tau)
    for s, e, v in zip(starts, ends, losses):
        for y in {s, e, (s + e) // 2}:
            assert shifted_loss_at(loss, y, tau) == v
    for e, s in zip(ends, starts[1:]):  # boundaries really change the loss
        assert shifted_loss_at(loss, e, tau) != shifted_loss_at(loss, s, tau)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9).map(float)), max_size=14), st.integers(0, 6), st.integers(0, 4))
def test_shifted_loss_has_sensitivity_one_on_neighbours(rows: list[tuple[int, float]], who: int, tau: int) -> None:
    ids = np.array([u for u, _ in rows], dtype=np.int64)
    vals = np.array([v for _, v in rows], dtype=np.float64)
    keep = ids != who  # remove one user with all their rows
    big = MonotoneLoss.user_sum(per_unit_sums(ids, vals))
    small = MonotoneLoss.user_sum(per_unit_sums(ids[keep], vals[keep]))
    a = expand(*shifted_loss_runs(big, 0, 70, tau))
    b = expand(*shifted_loss_runs(small, 0, 70, tau))
    assert max(abs(x - y) for x, y in zip(a, b)) <= 1


def test_loss_at_helper() -> None:
    loss = MonotoneLoss.user_sum([5.0, 1.0, 3.0])
    assert [loss_at(loss, y) for y in (0, 1, 4, 9)] == [3, 2, 1, 0]
    assert [loss_at(loss, y, strict=True) for y in (0, 1, 2, 5, 10)] == [None, 3, 2, 1, 0]


# --- τ -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("eps", "beta", "size"),
    [(1, "0.1", 2**20), ("1/2", "1e-6", 2**64), ("0.01", "1/3", 2), (7, "0.999", 1), (Fraction(1, 1000), "1e-9", 10**30)],
)
def test_shift_tau_is_the_ceiling(eps: int | str | Fraction, beta: str, size: int) -> None:
    tau = shift_tau(eps, beta, size)
    e = Fraction(eps)
    b = Fraction(beta)
    with mpmath.workdps(80):
        real = 2 / mpmath.mpf(e.numerator) * e.denominator * mpmath.log(mpmath.mpf(size * b.denominator) / b.numerator)
        assert tau - 1 < real <= tau
        assert int(mpmath.ceil(real)) == tau


@pytest.mark.parametrize(
    ("eps", "beta", "size"),
    [(0, "0.1", 10), (-1, "0.1", 10), (1, 0, 10), (1, 1, 10), (1, "0.1", 0), (1, "0.1", 2.5), (1, "0.1", True)],
)
def test_shift_tau_invalid(eps: object, beta: object, size: object) -> None:
    with pytest.raises(InvalidArgument):
        shift_tau(eps, beta, size)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lo", "hi", "tau", "field"),
    [(5, 4, 1, "y_lo"), (-1, 4, 1, "y_lo"), (0, 4, -1, "tau"), (0.0, 4, 1, "y_lo"), (0, 4, 1.5, "tau")],
)
def test_runs_invalid(lo: object, hi: object, tau: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        shifted_loss_runs(MonotoneLoss.user_sum([1.0]), lo, hi, tau)  # type: ignore[arg-type]
    assert info.value.field == field


# --- scale ---------------------------------------------------------------------
def test_domain_of_size_2_to_the_64_with_1e5_users_is_fast() -> None:
    gen = np.random.default_rng(0)
    contributions = np.floor(gen.pareto(1.1, size=10**5) * 10)
    start = time.perf_counter()
    loss = MonotoneLoss.user_sum(contributions)
    tau = shift_tau(1, "0.1", 2**64)
    starts, ends, losses = check_runs(loss, 0, 2**64 - 1, tau)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0
    gen2 = np.random.default_rng(1)
    for j in gen2.integers(0, len(starts), size=200).tolist():
        for y in (starts[j], ends[j]):
            assert shifted_loss_at(loss, y, tau) == losses[j]
    assert sum(e - s + 1 for s, e in zip(starts, ends)) == 2**64


@pytest.mark.slow
def test_float_pareto_1e6_users() -> None:
    gen = np.random.default_rng(2)
    contributions = gen.pareto(1.1, size=10**6)
    start = time.perf_counter()
    loss = MonotoneLoss.user_sum(contributions)
    starts, ends, losses = shifted_loss_runs(loss, 0, 2**64 - 1, shift_tau(1, "0.1", 2**64))
    assert time.perf_counter() - start < 30.0
    assert starts[0] == 0 and ends[-1] == 2**64 - 1 and len(starts) <= 2 * 10**6 + 2
    assert all(e + 1 == s for e, s in zip(ends, starts[1:]))


@settings(max_examples=60, deadline=None)
@given(st.lists(floats, max_size=7), st.integers(0, 5))
def test_floored_loss_has_a_candidate_with_nonpositive_shifted_loss(c: list[float], tau: int) -> None:
    # the premise of Theorem 4's utility proof: ℓ*(x, ŷ) <= 0 for ŷ = min f over dist <= τ
    loss = MonotoneLoss.user_sum(c).floored()
    top = math.floor(sum((Fraction(v) for v in c), Fraction(0)))
    _, _, losses = shifted_loss_runs(loss, 0, top + 3, tau)
    assert min(losses) <= 0


def test_fractional_f_on_integer_domain_needs_floored() -> None:
    loss = MonotoneLoss.user_sum([0.01] * 500)
    tau = 10
    assert min(shifted_loss_runs(loss, 0, 10, tau)[2]) == tau - 1  # no good candidate: utility proof fails
    assert min(shifted_loss_runs(loss.floored(), 0, 10, tau)[2]) <= 0
