"""The exact exponential-mechanism sampler: distribution, huge runs, exact envelope algebra."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpalg import InvalidArgument
from dpalg.noise import SeededRandomness, exponential_mechanism, sample_exp_weights
from dpalg.noise._exact import ln2_bounds
from dpalg.noise._exponential import envelope


def _probs(scores: list[Fraction], gamma: Fraction, counts: list[int]) -> npt.NDArray[np.float64]:
    mpmath.mp.dps = 50
    w = [c * mpmath.exp(-gamma * s) for s, c in zip(scores, counts)]
    tot = mpmath.fsum(w)
    return np.array([float(x / tot) for x in w])


@pytest.mark.parametrize("n", [8_000, pytest.param(30_000, marks=pytest.mark.slow)])
def test_distribution_chisquare(n: int) -> None:
    scores = [Fraction(0), Fraction(1), Fraction(2), Fraction(1, 3), Fraction(7, 2)]
    counts = [1, 2, 3, 1, 40]
    gamma = Fraction(1)
    rng = SeededRandomness(41)
    draws = np.array([sample_exp_weights(scores, gamma, counts=counts, rng=rng) for _ in range(n)])
    observed = np.bincount(draws, minlength=len(scores))
    assert stats.chisquare(observed, _probs(scores, gamma, counts) * n).pvalue > 1e-4


def test_runs_of_two_to_the_64() -> None:
    rng = SeededRandomness(42)
    n = 20_000
    scores, counts, gamma = [Fraction(0), Fraction(50)], [1, 2**64], Fraction(1)
    p1 = float(_probs(scores, gamma, counts)[1])
    hits = sum(sample_exp_weights(scores, gamma, counts=counts, rng=rng) for _ in range(n))
    assert abs(hits - n * p1) <= 5 * math.sqrt(n * p1 * (1 - p1)) + 1
    # equal scores: proportional to the (huge) counts
    hits = sum(sample_exp_weights([3, 3], 2, counts=[2**64, 2**64 * 3], rng=rng) for _ in range(4000))
    assert abs(hits - 3000) <= 5 * math.sqrt(4000 * 0.1875)


def test_exact_probability_ratio_by_construction() -> None:
    """The proposal weight times the acceptance probability is ``counts_j exp(-x_j)`` times a constant.

    ``weight_j = counts_j 2**(top - k_j)`` and ``a_j = exp(-x_j) 2**k_j``, so
    ``weight_j a_j = 2**top counts_j exp(-x_j)`` exactly; ``a_j <= 1`` needs
    ``x_j >= k_j ln 2``, checked here with a rigorous upper bound of ``ln 2``.
    """
    rnd = random.Random(7)
    prec = 300
    ln2_hi = Fraction(ln2_bounds(prec)[1], 2**prec)
    for _ in range(200):
        m = rnd.randint(1, 12)
        scores = [Fraction(rnd.randint(0, 10**6), rnd.randint(1, 1000)) for _ in range(m)]
        counts = [rnd.choice([1, 5, 2**64, 2**80 + 1]) for _ in range(m)]
        gamma = Fraction(rnd.randint(0, 1000), rnd.randint(1, 50))
        xs, ks, cumulative = envelope(scores, gamma, counts)
        top = max(ks)
        weights = [cumulative[0]] + [b - a for a, b in zip(cumulative, cumulative[1:])]
        for x, k, w, c in zip(xs, ks, weights, counts):
            assert w == c << (top - k)  # weight_j 2**k_j = counts_j 2**top
            assert x >= k * ln2_hi  # a_j = exp(-x) 2**k <= 1
            assert k >= 0
        assert max(ks) - min(ks) <= 256


def test_exponential_mechanism_prefers_high_utility_and_monotone_flag() -> None:
    rng = SeededRandomness(43)
    n = 4000
    # utilities [0, 1], eps=1, Δ=1: P[1] = e^{1/2}/(1+e^{1/2}); monotone: e/(1+e)
    for monotone, p in [(False, 1 / (1 + math.exp(-0.5))), (True, 1 / (1 + math.exp(-1)))]:
        hits = sum(exponential_mechanism([0, 1], 1, 1, rng, monotone=monotone) for _ in range(n))
        assert abs(hits - n * p) <= 5 * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: sample_exp_weights([], 1), "scores"),
        (lambda: sample_exp_weights([-1], 1), "scores[0]"),
        (lambda: sample_exp_weights([1], -1), "gamma"),
        (lambda: sample_exp_weights([1, 2], 1, counts=[1]), "counts"),
        (lambda: sample_exp_weights([1], 1, counts=[0]), "counts[0]"),
        (lambda: sample_exp_weights([1], 1, counts=[True]), "counts[0]"),
        (lambda: exponential_mechanism([1], 0, 1), "epsilon"),
        (lambda: exponential_mechanism([1], 1, 0), "sensitivity"),
    ],
)
def test_invalid(call: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()  # type: ignore[operator]
    assert info.value.field == field
