"""Discrete Laplace: chi-square against the exact pmf, huge scales, int64 boundary, slow path."""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest
from noise_stats_helpers import chisquare_binned, laplace_cdf, quantile_edges

from dpalg import InvalidArgument
from dpalg.noise import SeededRandomness, discrete_laplace
from dpalg.noise._laplace import _geometric_h, _plan

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


def test_geometric_slow_path_is_exact() -> None:
    # uninformative tables (lo = 0, hi = 2**64-1) send every draw to the exact path
    plan = _plan(Fraction(3))
    blind = attrs.evolve(
        plan,
        lo_asc=np.zeros_like(plan.lo_asc),
        hi_asc=np.full_like(plan.hi_asc, np.uint64(2**64 - 1)),
    )
    h = _geometric_h(blind, 4000, SeededRandomness(25))
    # P[H >= h] = exp(-h/3)
    from scipy import stats

    observed = np.bincount(np.minimum(h, 8), minlength=9)
    q = np.exp(-1 / 3)
    p = np.array([q**i * (1 - q) for i in range(8)] + [q**8])
    assert stats.chisquare(observed, p * h.size).pvalue > 1e-4


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
