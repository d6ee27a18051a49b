"""Discrete Gaussian: chi-square against exact masses, brackets, int64 boundaries."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from noise_stats_helpers import chisquare_binned, gaussian_mass

from dpalg import InvalidArgument
from dpalg.noise import SeededRandomness, discrete_gaussian
from dpalg.noise._bernoulli import FRAC_BITS
from dpalg.noise._gaussian import _bracket_big

N = 10**6


def _edges(sigma2: Fraction, n: int, nbins: int = 60) -> list[int]:
    sigma = math.sqrt(float(sigma2))
    if sigma < 20:
        return list(range(-int(8 * sigma) - 2, int(8 * sigma) + 2))
    width = 12 * sigma / nbins
    return sorted({int(round(-6 * sigma + i * width)) for i in range(nbins + 1)})


@pytest.mark.parametrize("sigma2", [Fraction(1, 10), Fraction(1), Fraction(5, 2), Fraction(100), Fraction(10**4 + 1, 3)])
def test_chisquare_small(sigma2: Fraction) -> None:
    x = discrete_gaussian(sigma2, size=N, rng=SeededRandomness(31))
    assert x.dtype == np.int64
    assert chisquare_binned(x, _edges(sigma2, N), gaussian_mass(sigma2)) > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(2**60), Fraction(10**12), Fraction(2**80 + 3, 7)])
def test_chisquare_huge_binned(sigma2: Fraction) -> None:
    x = discrete_gaussian(sigma2, size=N, rng=SeededRandomness(32))
    assert chisquare_binned(x, _edges(sigma2, N), gaussian_mass(sigma2)) > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(2**24 - 1), Fraction(2**24 + 1), Fraction(2**62 - 1), Fraction(2**62 + 1)])
def test_int64_path_boundaries(sigma2: Fraction) -> None:
    # D = 2 a b t**2 crosses 2**49 near sigma2 = 2**24; a crosses 2**62 near 2**62
    n = 200_000
    x = discrete_gaussian(sigma2, size=n, rng=SeededRandomness(33))
    assert chisquare_binned(x, _edges(sigma2, n, 30), gaussian_mass(sigma2)) > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(0.1), Fraction(2**70 + 1, 2**40), Fraction(10**30)])
def test_python_int_fallback(sigma2: Fraction) -> None:
    n = 40_000
    x = discrete_gaussian(sigma2, size=n, rng=SeededRandomness(34))
    assert chisquare_binned(x, _edges(sigma2, n, 20), gaussian_mass(sigma2)) > 1e-4


@pytest.mark.parametrize("d", [2**49, 2**49 + 12345, 2 * 10**12 * (10**6 + 1) ** 2, 2**120 + 1, 3**150])
def test_bracket_big_contains_exact_gamma(d: int) -> None:
    rnd = random.Random(d)
    root = math.isqrt(d)
    zs = [rnd.randrange(-8 * root, 8 * root) for _ in range(3000)] + [0, root, -root, 8 * root]
    zs = [z for z in zs if abs(z) < 2**62]
    z = np.array(zs, dtype=np.int64)
    fast, k, f_lo, f_hi = _bracket_big(z, d)
    assert fast.mean() > 0.9
    for i in np.flatnonzero(fast).tolist():
        gamma = Fraction(zs[i] ** 2, d)
        lo = int(k[i]) + Fraction(int(f_lo[i]), 2**FRAC_BITS)
        hi = int(k[i]) + Fraction(int(f_hi[i]), 2**FRAC_BITS)
        assert lo <= gamma <= hi
        assert 0 <= f_lo[i] <= f_hi[i] <= 2**FRAC_BITS
        assert hi - lo < Fraction(1, 2**28)


@pytest.mark.parametrize(("sigma2", "size"), [(0, 1), (-2, 1), (2**101, 1), ("a", 1), (1, -1)])
def test_invalid(sigma2: object, size: int) -> None:
    with pytest.raises(InvalidArgument) as info:
        discrete_gaussian(sigma2, size=size, rng=None)
    assert info.value.owner == "discrete_gaussian"
