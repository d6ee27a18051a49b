"""Runs of the shifted loss ℓ* = max(ℓ − τ, τ − ℓ̄): exact per candidate, exact cover, O(n), fast."""

from __future__ import annotations

import itertools
import time
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.sensitivity._down_sens import UserLoss
from dpalg.sensitivity._shift_runs import shift_tau, shifted_loss_at, shifted_loss_runs

CONTRIB = st.lists(st.integers(0, 16).map(lambda v: v / 4), min_size=0, max_size=7)


def brute_shifted(contrib: list[float], y: int, tau: int) -> int:
    """ℓ*(x, y) from the definition, enumerating every set of removed users."""
    n = len(contrib)
    exact = [Fraction(c) for c in contrib]
    vals = {k: min(sum((exact[i] for i in range(n) if i not in r), Fraction(0)) for r in itertools.combinations(range(n), k)) for k in range(n + 1)}  # fmt: skip
    ell = min(k for k in vals if vals[k] <= y)
    strict = [k for k in vals if vals[k] < y]
    return ell - tau if not strict else max(ell - tau, tau - min(strict))


def check_cover(starts: list[int], lengths: list[int], losses: npt.NDArray[np.int64], lo: int, hi: int) -> None:
    assert starts[0] == lo and len(starts) == len(lengths) == losses.size
    assert all(length >= 1 for length in lengths)
    assert all(a + la == b for a, la, b in zip(starts, lengths, starts[1:]))
    assert starts[-1] + lengths[-1] == hi + 1
    assert bool((losses[1:] != losses[:-1]).all())


@settings(max_examples=80, deadline=None)
@given(contrib=CONTRIB, tau=st.integers(0, 4), lo=st.integers(0, 3), width=st.integers(0, 25))
def test_runs_match_brute_force_on_every_candidate(contrib: list[float], tau: int, lo: int, width: int) -> None:
    hi = lo + width
    starts, lengths, losses = shifted_loss_runs(UserLoss.user_sum(contrib), lo, hi, tau)
    check_cover(starts, lengths, losses, lo, hi)
    assert len(starts) <= 2 * len(contrib) + 2
    for s, length, v in zip(starts, lengths, losses.tolist()):
        for y in range(s, s + length):
            assert v == brute_shifted(contrib, y, tau) == shifted_loss_at(contrib, y, tau)


@settings(max_examples=50, deadline=None)
@given(maxima=st.lists(st.integers(-8, 8).map(lambda v: v / 2), max_size=7), tau=st.integers(0, 3),
       floor=st.sampled_from([Fraction(-5), Fraction(-7, 2), Fraction(1, 3)]))  # fmt: skip
def test_max_runs_with_a_fractional_floor(maxima: list[float], tau: int, floor: Fraction) -> None:
    loss = UserLoss.user_max(maxima, floor=floor)
    lo, hi = loss.min_y, loss.min_y + 14
    starts, lengths, losses = shifted_loss_runs(loss, lo, hi, tau)
    check_cover(starts, lengths, losses, lo, hi)
    for s, length, v in zip(starts, lengths, losses.tolist()):
        for y in range(s, s + length):
            above = sum(1 for m in maxima if m > y)  # ℓ: users whose max exceeds y
            if y <= floor:
                assert v == above - tau
            else:
                assert v == max(above - tau, tau - sum(1 for m in maxima if m >= y))


def test_runs_on_a_2_64_domain_are_fast_and_linear() -> None:
    gen = np.random.Generator(np.random.PCG64(7))
    contrib = np.floor(gen.pareto(1.5, size=100_000) * 10)
    loss = UserLoss.user_sum(contrib)
    t0 = time.perf_counter()
    starts, lengths, losses = shifted_loss_runs(loss, 0, 2**64 - 1, 40)
    elapsed = time.perf_counter() - t0
    check_cover(starts, lengths, losses, 0, 2**64 - 1)
    assert len(starts) <= 2 * 100_000 + 2
    assert elapsed < 2.0
    for j in [0, 1, len(starts) // 2, len(starts) - 1]:  # spot checks against the scalar form
        assert losses[j] == shifted_loss_at(loss, starts[j], 40) == shifted_loss_at(loss, starts[j] + lengths[j] - 1, 40)


def test_huge_thresholds_use_python_ints() -> None:
    contrib = [3e19, 1e20, 2.5]
    lo, hi = 0, 2**80
    starts, lengths, losses = shifted_loss_runs(contrib, lo, hi, 1)
    check_cover(starts, lengths, losses, lo, hi)
    for s, length, v in zip(starts, lengths, losses.tolist()):
        assert v == shifted_loss_at(contrib, s, 1) == shifted_loss_at(contrib, s + length - 1, 1)
    assert starts[-1] == int(Fraction(1e20) + Fraction(3e19) + Fraction(2.5)) + 1


@pytest.mark.parametrize(
    ("eps", "beta", "size"),
    [(1, "0.1", 2**20), ("1/2", "1e-6", 2**64), ("0.01", "0.5", 1), (7, "1/3", 3), ("1e-3", "1e-9", 2**64 - 1)],
)
def test_shift_tau_is_the_exact_ceiling(eps: str | int, beta: str, size: int) -> None:
    tau = shift_tau(eps, beta, size)
    e, b = Fraction(eps), Fraction(beta)
    with mpmath.workdps(60):
        value = 2 / mpmath.mpf(e.numerator) * e.denominator * mpmath.log(mpmath.mpf(size) * b.denominator / b.numerator)
        assert tau - 1 < value <= tau


@pytest.mark.parametrize(
    "call",
    [
        lambda: shift_tau(0, "0.1", 10),
        lambda: shift_tau(1, 1, 10),
        lambda: shift_tau(1, "0.1", 0),
        lambda: shifted_loss_runs([1.0], 3, 2, 1),
        lambda: shifted_loss_runs([1.0], -1, 2, 1),
        lambda: shifted_loss_runs([1.0], 0, 2, -1),
        lambda: shifted_loss_runs([1.0], 0, 2, 2**61),
        lambda: shifted_loss_runs(UserLoss.user_max([1.0], floor=4), 3, 9, 1),
    ],
)
def test_invalid_arguments(call: object) -> None:
    assert callable(call)
    with pytest.raises(InvalidArgument):
        call()
