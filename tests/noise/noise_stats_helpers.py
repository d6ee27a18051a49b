"""Exact probabilities (mpmath, 60 digits) and chi-square tests for integer samplers."""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import mpmath
import numpy as np
import numpy.typing as npt
from scipy import stats

mp = mpmath.mp
mp.dps = 60


def laplace_cdf(scale: Fraction) -> Callable[[int], float]:
    """Closed-form CDF of the discrete Laplace: P[X <= x]."""
    q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)

    def cdf(x: int) -> float:
        if x >= 0:
            return float(1 - q ** (x + 1) / (1 + q))
        return float(q ** (-x) / (1 + q))

    return cdf


def gaussian_mass(sigma2: Fraction) -> Callable[[int, int], mpmath.mpf]:
    """Mass of the discrete Gaussian on ``[a, b]`` (inclusive).

    For ``sigma >= 2**10`` the sum over a range is evaluated by Euler--Maclaurin:
    ``sum_{x=a}^{b} f(x) = int_a^b f + (f(a) + f(b))/2 + (f'(b) - f'(a))/12 + R``
    with ``|R| <= int |f'''| / 720 = O(sigma**-3)``, and the normaliser by Poisson
    summation (``sigma sqrt(2 pi)`` up to ``exp(-2 pi**2 sigma**2)``); both errors
    are far below what 10**6 samples can detect. Small sigma: direct sums.
    """
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    sigma = mpmath.sqrt(s2)

    def f(x: mpmath.mpf) -> mpmath.mpf:
        return mpmath.exp(-x * x / (2 * s2))

    if sigma < 2**10:
        bound = int(40 * sigma) + 40
        norm = mpmath.fsum(f(mpmath.mpf(x)) for x in range(-bound, bound + 1))

        def mass_small(a: int, b: int) -> mpmath.mpf:
            a, b = max(a, -bound), min(b, bound)
            if a > b:
                return mpmath.mpf(0)
            return mpmath.fsum(f(mpmath.mpf(x)) for x in range(a, b + 1)) / norm

        return mass_small
    norm = sigma * mpmath.sqrt(2 * mpmath.pi)

    def integral(a: mpmath.mpf, b: mpmath.mpf) -> mpmath.mpf:
        c = sigma * mpmath.sqrt(2)
        return sigma * mpmath.sqrt(mpmath.pi / 2) * (mpmath.erf(b / c) - mpmath.erf(a / c))

    def fprime(x: mpmath.mpf) -> mpmath.mpf:
        return -x / s2 * f(x)

    def mass_big(a: int, b: int) -> mpmath.mpf:
        big = 60 * sigma
        if b >= big and a <= -big:
            return mpmath.mpf(1)
        lo = mpmath.mpf(max(a, -int(big)))
        hi = mpmath.mpf(min(b, int(big)))
        s = integral(lo, hi) + (f(lo) + f(hi)) / 2 + (fprime(hi) - fprime(lo)) / 12
        return s / norm

    return mass_big


def chisquare_binned(samples: npt.NDArray[np.int64], edges: list[int], mass: Callable[[int, int], float]) -> float:
    """p-value of a chi-square test on bins ``(-inf, e0], (e0, e1], ..., (e_last, inf)``."""
    inner = np.searchsorted(np.array(edges, dtype=np.int64), samples, side="left")
    observed = np.bincount(inner, minlength=len(edges) + 1).astype(np.float64)
    bounds = [-(2**62)] + [e for e in edges] + [2**62]
    probs = []
    for i in range(len(edges) + 1):
        lo = bounds[i] + 1 if i > 0 else bounds[0]
        probs.append(float(mass(lo, bounds[i + 1])))
    p = np.array(probs)
    p = p / p.sum()
    expected = p * samples.size
    # merge adjacent bins until each expects at least 10 samples
    obs_m: list[float] = []
    exp_m: list[float] = []
    acc_o = acc_e = 0.0
    for o, e in zip(observed.tolist(), expected.tolist()):
        acc_o += o
        acc_e += e
        if acc_e >= 10:
            obs_m.append(acc_o)
            exp_m.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e or acc_o:
        obs_m[-1] += acc_o
        exp_m[-1] += acc_e
    assert len(exp_m) >= 2, "too few bins"
    return float(stats.chisquare(np.array(obs_m), np.array(exp_m)).pvalue)


def central_edges(mass: Callable[[int, int], float], n: int, width: int = 1, limit: int = 10**4) -> list[int]:
    """Bin edges (upper ends) around 0 such that every bin expects >= 20 samples."""
    edges: list[int] = []
    # right side
    x = 0
    while x < limit and float(mass(x + 1, 2**62)) * n >= 20:
        edges.append(x)
        x += width
    right = edges
    left: list[int] = []
    x = -1
    while x > -limit and float(mass(-(2**62), x)) * n >= 20:
        left.append(x)
        x -= width
    return sorted(set(left + right))


def quantile_edges(cdf: Callable[[int], float], lo: int, hi: int, nbins: int) -> list[int]:
    """Integer edges e_i with cdf(e_i) close to i / nbins (bisection on the exact CDF)."""
    edges: list[int] = []
    for i in range(1, nbins):
        target = i / nbins
        a, b = lo, hi
        while b - a > 1:
            m = (a + b) // 2
            if cdf(m) < target:
                a = m
            else:
                b = m
        edges.append(b)
    return sorted(set(edges))
