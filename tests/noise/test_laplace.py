"""Discrete Laplace: chi-square against the exact pmf, huge scales, int64 boundary, slow path."""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest
from noise_stats_helpers import chisquare_binned, laplace_cdf, quantile_edges

from dpalg import InvalidArgument
from dpalg.noise import SeededRandomness, discrete_laplace
from dpalg.noise._laplace import _geometric_h, _plan, _propose_h, _search_h

N = 10**6


def _mass(scale: Fraction):  # type: ignore[no-untyped-def]
    cdf = laplace_cdf(scale)

    def mass(a: int, b: int) -> float:
        return cdf(b) - (cdf(a - 1) if a > -(2**61) else 0.0)

    return mass


def _central(scale: Fraction) -> list[int]:
    bound = int(40 * scale) + 3
    return list(range(-bound, bound))


@pytest.mark.parametrize("scale", [Fraction(1, 10), Fraction(1), Fraction(3, 7), Fraction(10), Fraction(45, 2)])
def test_chisquare_small_scales(scale: Fraction) -> None:
    x = discrete_laplace(scale, size=N, rng=SeededRandomness(21))
    assert x.dtype == np.int64
    edges = _central(scale)
    assert chisquare_binned(x, edges, _mass(scale)) > 1e-4


@pytest.mark.parametrize("scale", [Fraction(2**30), Fraction(10**6), Fraction(2**40), Fraction(10**21 + 7, 10**11)])
def test_chisquare_huge_scales_binned(scale: Fraction) -> None:
    x = discrete_laplace(scale, size=N, rng=SeededRandomness(22))
    cdf = laplace_cdf(scale)
    bound = int(60 * scale) + 10
    edges = quantile_edges(cdf, -bound, bound, 200)
    assert chisquare_binned(x, edges, _mass(scale)) > 1e-4


@pytest.mark.parametrize("scale", [Fraction(2**31 - 1), Fraction(2**31), Fraction(2**31 + 1), Fraction(2**52)])
def test_int64_boundary_scales(scale: Fraction) -> None:
    x = discrete_laplace(scale, size=200_000, rng=SeededRandomness(23))
    cdf = laplace_cdf(scale)
    bound = int(60 * scale)
    edges = quantile_edges(cdf, -bound, bound, 50)
    assert chisquare_binned(x, edges, _mass(scale)) > 1e-4
    assert int(np.abs(x).max()) < 2**62


def test_rational_scales_with_big_parts() -> None:
    # a float scale has a 2**55 denominator; a huge numerator/denominator pair
    for scale in [Fraction(0.3), Fraction(2**61 + 1, 2**45), Fraction(10**40 + 1, 10**39)]:
        x = discrete_laplace(scale, size=200_000, rng=SeededRandomness(24))
        mass = _mass(scale)
        edges = _central(scale) if scale < 100 else quantile_edges(laplace_cdf(scale), -(2**40), 2**40, 40)
        assert chisquare_binned(x, edges, mass) > 1e-4


def _geometric_pvalue(h: np.ndarray, c: float) -> float:
    """Chi-square p-value of draws of H against P[H = i] = (1 - q) q**i, q = exp(-c) (tail merged at 8)."""
    from scipy import stats

    observed = np.bincount(np.minimum(h, 8), minlength=9)
    q = np.exp(-c)
    p = np.array([q**i * (1 - q) for i in range(8)] + [q**8])
    return float(stats.chisquare(observed, p * h.size).pvalue)


def test_geometric_slow_path_is_exact() -> None:
    # uninformative tables (lo = 0, hi = 2**64-1) send every draw to the exact lazy path,
    # and a by-h table that confirms nothing sends every draw past the float proposal
    plan = _plan(Fraction(3))
    blind = attrs.evolve(
        plan,
        lo_asc=np.zeros_like(plan.lo_asc),
        hi_asc=np.full_like(plan.hi_asc, np.uint64(2**64 - 1)),
        lo_by_h=np.zeros_like(plan.lo_by_h),
    )
    h = _geometric_h(blind, 4000, SeededRandomness(25))
    assert _geometric_pvalue(h, 1 / 3) > 1e-4  # P[H >= h] = exp(-h/3)


# The float-proposed inversion (issue 19). Sample size: if a fraction f of draws
# came out one too high, the chi-square statistic (8 degrees of freedom) would have
# non-centrality N * sum((q_i - p_i)**2 / p_i) = 198 at f = 0.05 and N = 2*10**5:
# power ~1.0 at the 1e-4 level (0.31 at N = 2*10**4), while an exact sampler fails
# with probability 1e-4. The broken variants below are wrong on most draws.
_GEOMETRIC_N = 200_000


@pytest.mark.parametrize("scale", [Fraction(3), Fraction(10), Fraction(10**6), Fraction(1, 7)])
def test_float_proposal_agrees_with_the_exact_search(scale: Fraction) -> None:
    plan = _plan(scale)
    rng = np.random.default_rng(7)
    random_words = rng.integers(0, 2**64, size=100_000, dtype=np.uint64)
    # adversarial words: at and next to every bound of the table, and the extremes
    ends = np.concatenate([plan.lo_asc, plan.hi_asc]).astype(object)
    near = sorted({int(v) + d for v in ends for d in (-1, 0, 1) if 0 <= int(v) + d < 2**64} | {0, 2**64 - 1})
    for words in (random_words, np.array(near, dtype=np.uint64)):
        h, confirmed = _propose_h(plan, words)
        exact = _search_h(plan, words[confirmed], SeededRandomness(1))
        assert (h[confirmed] == exact).all()
    h, confirmed = _propose_h(plan, random_words)
    assert confirmed.mean() > 0.999  # the fast path decides almost every draw


@pytest.mark.parametrize("factor", [0.5, 1.3, 3.0])
def test_a_wrong_float_only_slows_the_sampler(factor: float) -> None:
    """A proposal that is often wrong is refused by the exact confirmation: the law stays exact."""
    plan = _plan(Fraction(3))
    skewed = attrs.evolve(plan, inv_c=plan.inv_c * factor)
    _, confirmed = _propose_h(skewed, np.random.default_rng(3).integers(0, 2**64, size=10_000, dtype=np.uint64))
    assert confirmed.mean() < 0.9  # the fallback is exercised
    h = _geometric_h(skewed, _GEOMETRIC_N, SeededRandomness(26))
    assert _geometric_pvalue(h, 1 / 3) > 1e-4


def test_an_unconfirmed_float_proposal_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: trusting the float (no exact confirmation) with a 30% error fails the test."""
    from dpalg.noise import _laplace

    plan = _plan(Fraction(3))
    skewed = attrs.evolve(plan, inv_c=plan.inv_c * 1.3)

    def trusting(p: object, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h, _ = _propose_h(skewed, w)
        return h, np.ones(w.shape, dtype=np.bool_)

    monkeypatch.setattr(_laplace, "_propose_h", trusting)
    h = _geometric_h(plan, _GEOMETRIC_N, SeededRandomness(26))
    assert _geometric_pvalue(h, 1 / 3) < 1e-6


def test_seeded_is_reproducible_and_secure_runs() -> None:
    a = discrete_laplace(5, size=100, rng=SeededRandomness(1))
    b = discrete_laplace(5, size=100, rng=SeededRandomness(1))
    assert (a == b).all()
    assert discrete_laplace(5, size=100).shape == (100,)
    assert discrete_laplace(5, size=0).shape == (0,)


@pytest.mark.parametrize(
    ("scale", "size"), [(0, 1), (-1, 1), ("nan", 1), (float("inf"), 1), (2**53, 1), (1, -2), (True, 1), (1, 1.5)]
)
def test_invalid(scale: object, size: object) -> None:
    with pytest.raises(InvalidArgument) as info:
        discrete_laplace(scale, size=size, rng=None)  # type: ignore[arg-type]
    assert info.value.owner == "discrete_laplace"
