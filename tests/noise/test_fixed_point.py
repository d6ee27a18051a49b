"""Exact clipped sums and their sensitivity, including the Casacuberta et al. (2022) pattern."""

from __future__ import annotations

import functools
import random
from fractions import Fraction

import numpy as np
import pytest

from dpalg import InvalidArgument
from dpalg.noise import clipped_sum_sensitivity, exact_clipped_sum, round_to_lattice


def _reference(values: list[float], lower: Fraction, upper: Fraction, k: int) -> int:
    step = Fraction(2) ** k
    lo, hi = (lower / step).__floor__(), (upper / step).__ceil__()
    total = 0
    for v in values:
        if v != v:
            continue
        c = min(max(Fraction(v) if abs(v) != float("inf") else (upper if v > 0 else lower), lower), upper)
        total += min(max(round(c / step), lo), hi)
    return total


def test_matches_exact_rational_reference() -> None:
    rnd = random.Random(3)
    for k in [-10, -1, 0, 3]:
        vals = [rnd.uniform(-50, 50) for _ in range(500)] + [float("nan"), float("inf"), -float("inf")]
        assert exact_clipped_sum(vals, Fraction(-7, 3), Fraction(21, 2), k) == _reference(
            vals, Fraction(-7, 3), Fraction(21, 2), k
        )


def test_int64_overflow_fallback() -> None:
    # terms near 2**61 units: the direct int64 sum would overflow, the chunked one does not
    vals = np.full(64, 2.0**61)
    assert exact_clipped_sum(vals, 0, 2.0**61, 0) == 64 * 2**61
    # beyond int64 per term: Python integers
    big = [1e300, 1e300, -1e299]
    expected = 2 * int(Fraction(1e300)) - int(Fraction(1e299))
    assert exact_clipped_sum(big, -1e300, 1e300, 0) == expected


def test_sensitivity_by_brute_force() -> None:
    rnd = random.Random(5)
    for k, lower, upper in [(-2, Fraction(-3, 10), Fraction(5, 3)), (0, Fraction(2), Fraction(9)), (1, -5, -1)]:
        step = Fraction(2) ** k
        add = clipped_sum_sensitivity(lower, upper, k, "add_remove")
        sub = clipped_sum_sensitivity(lower, upper, k, "substitution")
        for _ in range(300):
            data = [rnd.uniform(-12, 12) for _ in range(rnd.randint(0, 8))]
            extra = rnd.choice([rnd.uniform(-12, 12), float("nan"), float("inf"), -float("inf")])
            base = exact_clipped_sum(data, lower, upper, k)
            assert abs(exact_clipped_sum(data + [extra], lower, upper, k) - base) * step <= add
            if data:
                swapped = data[:-1] + [extra]
                assert abs(exact_clipped_sum(swapped, lower, upper, k) - base) * step <= sub


def _naive_float_sum(values: list[float], lower: float, upper: float) -> float:
    """How many libraries compute a bounded sum: clip, then add floats left to right."""
    return functools.reduce(lambda s, v: s + min(max(v, lower), upper), values, 0.0)


def test_casacuberta_attack_pattern() -> None:
    """Neighbouring datasets whose naive float sums differ by more than the declared bound.

    Bounds [0, 1], declared add/remove sensitivity 1. D' holds m copies of
    x = 2**-53 + 2**-60 (just above half an ulp of 1.0); D adds one row 1.0 in front.
    In D every x is added to a partial sum in [1, 2), where it rounds *up* to a
    full ulp 2**-52; in D' the x's add exactly. So the naive sum moves by
    1 + m (2**-53 - 2**-60) > 1: the declared sensitivity is violated, and more so
    as m grows (Casacuberta et al. 2022, Section 3). The exact fixed-point sum
    of the same data never moves by more than its declared sensitivity.
    """
    m = 20_000
    x = 2.0**-53 + 2.0**-60
    d_prime = [x] * m
    d = [1.0] + d_prime
    declared = 1.0
    naive_gap = _naive_float_sum(d, 0.0, 1.0) - _naive_float_sum(d_prime, 0.0, 1.0)
    assert naive_gap > declared
    assert Fraction(naive_gap) - 1 > Fraction(m, 2**54)  # the excess grows with m
    # ordering changes the naive result too (rounding depends on the order)
    assert _naive_float_sum(d, 0.0, 1.0) != _naive_float_sum(d_prime + [1.0], 0.0, 1.0)

    for k in [-60, -52, -30]:
        bound = clipped_sum_sensitivity(0, 1, k, "add_remove")
        gap = (exact_clipped_sum(d, 0, 1, k) - exact_clipped_sum(d_prime, 0, 1, k)) * Fraction(2) ** k
        assert abs(gap) <= bound
        # and the exact sum is order independent
        assert exact_clipped_sum(d, 0, 1, k) == exact_clipped_sum(d_prime + [1.0], 0, 1, k)
    assert round_to_lattice([x], -60).tolist() == [2**7 + 1]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: exact_clipped_sum([1.0], 2, 1, 0), "lower"),
        (lambda: exact_clipped_sum([1.0], "a", 1, 0), "lower"),
        (lambda: exact_clipped_sum([1.0], 0, 1, 1.5), "k"),  # type: ignore[arg-type]
        (lambda: clipped_sum_sensitivity(0, 1, 0, "swap"), "relation"),  # type: ignore[arg-type]
    ],
)
def test_invalid(call: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()  # type: ignore[operator]
    assert info.value.field == field
