"""Tail bounds of the exact noises: the (1 − α) error of a release before running it.

For each noise ``Z`` this module answers: the smallest integer ``m >= 0`` with
``P[|Z| > m] <= α``. The answers are *guaranteed* (the tail at ``m`` is proven
``<= α`` with interval arithmetic, never a float that might round the wrong
way) and, where the module says so, *tight* (the tail at ``m - 1`` is proven
``> α``).

Discrete Laplace of scale ``t`` (``P[Z = z] ∝ q^|z|``, ``q = e^{-1/t}``)::

    P[|Z| > m] = 2 q^(m+1) / (1 + q)                       (closed form)

Discrete Gaussian of variance parameter σ² (``f(x) = e^{-x²/(2σ²)}``,
``N = Σ_z f(z)``)::

    P[|Z| > m] = 2 T(m) / N,     T(m) = Σ_{z > m} f(z)

* ``N >= sqrt(2π) σ``: Poisson summation writes ``N = sqrt(2π)σ Σ_k
  e^{-2π²σ²k²}`` whose terms are all positive; and ``N <= sqrt(2π)σ (1 +
  2 Σ_{k>=1} e^{-2π²σ²k})``.
* The midpoint rule on each cell, ``f(z) = ∫_{z-1/2}^{z+1/2} f - f''(ξ_z)/24``,
  summed over ``z > m``: ``T(m) = ∫_{m+1/2}^∞ f - Σ f''(ξ_z)/24``. Where
  ``f'' < 0`` (``|ξ| < σ``, at most ``σ + 1`` cells) ``|f''| <= 1/σ²``, so
  ``T(m) <= ∫_{m+1/2}^∞ f + (σ + 1)/(24σ²)``, with no excess at all once
  ``m + 1/2 >= σ`` (``f`` convex there). Where ``f'' > 0`` its sums over
  cells are at most ``e^{-1/2}/σ + 2/σ²`` (``∫_σ^∞ f'' = -f'(σ)`` plus two
  maxima), which bounds ``T(m)`` from below. Each integral is
  ``sqrt(π/2) σ erfc(a/(σ√2))``.

For σ ≤ 64 the sums are added term by term instead (the remainder beyond
``40σ`` bounded by its integral), so those answers are tight.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from dpalg._errors import InvalidArgument

__all__ = ["gaussian_tail_quantile", "laplace_tail_quantile"]

_Iv = Any  # an mpmath interval (mpmath has no type stubs); private helpers only

_DPS = 60  # decimal digits of the interval arithmetic
_DIRECT_SIGMA = 64


@contextlib.contextmanager
def _iv_dps(dps: int) -> Iterator[None]:
    """mpmath's interval context at ``dps`` digits, restored afterwards (it has no ``workdps``)."""
    from mpmath import iv

    saved = iv.prec
    iv.dps = dps
    try:
        yield
    finally:
        iv.prec = saved


def _alpha(owner: str, alpha: Fraction) -> Fraction:
    if not 0 < alpha < 1:
        raise InvalidArgument(owner, "alpha", alpha, "must be in (0, 1)")
    return alpha


@functools.lru_cache(maxsize=1024)
def laplace_tail_quantile(scale: Fraction, alpha: Fraction) -> tuple[int, bool]:
    """The smallest integer ``m`` with ``P[|Z| > m] <= alpha`` for discrete Laplace of scale ``t``.

    Returns ``(m, tight)``: ``m`` is guaranteed (its tail is proven ``<= alpha``);
    ``tight`` says the tail at ``m - 1`` is proven ``> alpha`` (always, unless the
    two are equal to 60 digits).

    Examples:
        >>> laplace_tail_quantile(Fraction(1), Fraction(1, 20))  # 2 e^-3 / (1 + e^-1) = 0.027 <= 0.05 < 0.073
        (3, True)
        >>> laplace_tail_quantile(Fraction(10), Fraction(1, 20))
        (30, True)
    """
    from mpmath import iv, mp

    alpha = _alpha("laplace_tail_quantile", alpha)
    if scale <= 0:
        raise InvalidArgument("laplace_tail_quantile", "scale", scale, "must be > 0")
    with _iv_dps(_DPS), mp.workdps(_DPS):
        return _laplace(scale, alpha)


def _laplace(scale: Fraction, alpha: Fraction) -> tuple[int, bool]:
    from mpmath import iv, mp

    q = iv.exp(-iv.mpf(scale.denominator) / scale.numerator)
    a = iv.mpf(alpha.numerator) / alpha.denominator

    def tail(m: int) -> _Iv:
        return 2 * q ** (m + 1) / (1 + q)

    # the real-valued solution, from ordinary high-precision arithmetic, then proven
    qm = mp.exp(-mp.mpf(scale.denominator) / scale.numerator)
    guess = max(0, int(mp.ceil(mp.log(mp.mpf(alpha.numerator) / alpha.denominator * (1 + qm) / 2) / mp.log(qm))) - 1)
    return _prove(guess, tail, a)


def _prove(guess: int, tail: Callable[[int], _Iv], a: _Iv) -> tuple[int, bool]:
    """Move ``guess`` until ``tail(m) <= a`` is proven and ``tail(m - 1) <= a`` is not."""
    from mpmath import iv

    tail_fn = tail
    m = guess

    def below(k: int) -> bool:  # tail(k) <= a, proven
        t = tail_fn(k)
        return bool(iv.mpf(t).b <= iv.mpf(a).a)

    def above(k: int) -> bool:  # tail(k) > a, proven
        t = tail_fn(k)
        return bool(iv.mpf(t).a > iv.mpf(a).b)

    while not below(m):
        m += 1
    while m > 0 and below(m - 1):
        m -= 1
    return m, m == 0 or above(m - 1)


@functools.lru_cache(maxsize=1024)
def gaussian_tail_quantile(sigma2: Fraction, alpha: Fraction) -> tuple[int, bool]:
    """The smallest integer ``m`` with ``P[|Z| > m] <= alpha`` for the discrete Gaussian of variance parameter σ².

    Returns ``(m, tight)`` as :func:`laplace_tail_quantile`. For σ ≤ 64 the
    tails are summed term by term; above, they are bracketed by the integrals
    in the module docstring, and ``tight`` reports whether the bracket was
    narrow enough to prove ``m - 1`` fails (it usually is).

    Examples:
        >>> gaussian_tail_quantile(Fraction(1), Fraction(1, 20))
        (2, True)
        >>> gaussian_tail_quantile(Fraction(10**12), Fraction(1, 20))[0]
        1959964
    """
    from mpmath import iv, mp

    alpha = _alpha("gaussian_tail_quantile", alpha)
    if sigma2 <= 0:
        raise InvalidArgument("gaussian_tail_quantile", "sigma2", sigma2, "must be > 0")
    with _iv_dps(_DPS), mp.workdps(_DPS + 20):
        return _gaussian(sigma2, alpha)


def _gaussian(sigma2: Fraction, alpha: Fraction) -> tuple[int, bool]:
    from mpmath import iv

    s2 = iv.mpf(sigma2.numerator) / sigma2.denominator
    sigma = iv.sqrt(s2)
    a = iv.mpf(alpha.numerator) / alpha.denominator

    def f(x: int) -> _Iv:
        return iv.exp(-iv.mpf(x) ** 2 / (2 * s2))

    def integral_from(x: _Iv) -> _Iv:  # ∫_x^∞ f, x >= 0
        return iv.sqrt(iv.pi / 2) * sigma * _erfc_iv(iv.mpf(x) / (sigma * iv.sqrt(2)))

    if sigma2 <= _DIRECT_SIGMA**2:
        top = int(40 * float(sigma.b)) + 2
        terms = [f(z) for z in range(top + 1)]
        rest = integral_from(top)  # Σ_{z > top} f <= ∫_top^∞ f
        suffix: list[_Iv] = [iv.mpf(0)] * (top + 2)
        for z in range(top, -1, -1):
            suffix[z] = suffix[z + 1] + terms[z]
        norm_lo = 2 * suffix[0] - terms[0]
        norm_hi = norm_lo + 2 * rest

        def tail(m: int) -> _Iv:
            if m >= top:
                return iv.mpf([0, (2 * integral_from(m) / norm_lo).b])
            lo = 2 * suffix[m + 1] / norm_hi
            hi = 2 * (suffix[m + 1] + rest) / norm_lo
            return iv.mpf([lo.a, hi.b])

        guess = int(float(sigma.a) * _z_score(alpha))
        return _prove(max(guess, 0), tail, a)

    root = iv.sqrt(2 * iv.pi) * sigma
    poisson = 2 * iv.exp(-2 * iv.pi**2 * s2) / (1 - iv.exp(-2 * iv.pi**2 * s2))
    norm_lo, norm_hi = root, root * (1 + poisson)

    # midpoint rule per cell: f(z) = ∫_{z-1/2}^{z+1/2} f - f''(ξ)/24; -f'' > 0 only on |ξ| < σ, where it is <= 1/σ²
    # (at most σ + 1 such cells with z > m >= 0); f'' > 0 beyond, summing over cells to at most e^{-1/2}/σ + 2/σ²
    concave_excess = (sigma + 1) / (24 * s2)
    convex_deficit = (iv.exp(-iv.mpf(1) / 2) / sigma + 2 / s2) / 24

    def tail_bracket(m: int) -> _Iv:
        mid = integral_from(iv.mpf(m) + iv.mpf(1) / 2)
        hi_t = mid if m + 0.5 >= float(sigma.b) else mid + concave_excess
        lo_t = mid - convex_deficit
        lo = 2 * lo_t / norm_hi
        hi = 2 * hi_t / norm_lo
        return iv.mpf([max(lo.a, 0), hi.b])

    guess = int(float(sigma.a) * _z_score(alpha))
    return _prove(max(guess, 0), tail_bracket, a)


def _z_score(alpha: Fraction) -> float:
    """The two-sided normal quantile, a starting guess only."""
    from mpmath import erfinv, mp, mpf

    return float(mp.sqrt(2) * erfinv(1 - mpf(alpha.numerator) / alpha.denominator))


def _erfc_iv(x: _Iv) -> _Iv:
    """erfc on an interval: erfc is decreasing, so [erfc(hi), erfc(lo)], each rounded outward."""
    from mpmath import iv, mp

    xi = iv.mpf(x)  # the caller holds mp at _DPS + 20 digits
    lo = mp.erfc(mp.mpf(xi.b))
    hi = mp.erfc(mp.mpf(xi.a))
    slack = mp.mpf(10) ** (-(_DPS + 10))
    return iv.mpf([lo * (1 - slack), hi * (1 + slack)])
