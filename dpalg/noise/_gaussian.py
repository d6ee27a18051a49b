"""The exact, vectorised discrete Gaussian sampler (CKS 2020, Algorithm 3).

With ``sigma2 = a/b`` and ``t = floor(sigma) + 1``: draw ``Y ~ DLap(t)`` and
accept it with probability ``exp(-(|Y| - sigma2/t)**2 / (2 sigma2))``. The
accepted ``Y`` is exactly discrete-Gaussian (CKS 2020, Theorem 7 / Algorithm 3).

The acceptance exponent is the rational ``gamma = z**2 / D`` with
``z = |Y| b t - a`` and ``D = 2 a b t**2``. Two exact ways to feed it to
:func:`accept_exp`:

* int64: when ``D < 2**49`` and ``|z| < 2**31`` the integer part and 56
  fractional bits of ``gamma`` come from int64 long division;
* big: otherwise the bracket is computed from ``v = |z| / sqrt(D)`` in
  fixed point with 96-bit intermediate precision split into int64 limbs
  (see :func:`_bracket_big`), and entries with ``gamma >= 32`` or a bracket that
  straddles an integer go to the exact Python-integer path.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import positive
from dpalg.noise._bernoulli import (
    FRAC_BITS,
    accept_exp,
    accept_exp_float,
    bernoulli_exp_rational,
    check_size,
    exact_bernoulli_exp,
)
from dpalg.noise._laplace import BLOCK, laplace_int
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng

__all__ = ["discrete_gaussian", "MAX_GAUSSIAN_SIGMA2"]

#: Largest accepted variance: ``sigma <= 2**50`` keeps samples far inside int64.
MAX_GAUSSIAN_SIGMA2: Final = Fraction(2**100)
_F: Final = 50  # fractional bits of v = |z| / sqrt(D)
_VMAX: Final = 1 << (_F + 3)  # v < 8, i.e. gamma < 64, on the fast path


def _bracket_big(
    z: npt.NDArray[np.int64], d: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Integer part and 56-bit bracket of ``gamma = z**2 / d``, in int64 limbs.

    ``p = floor(2**g / sqrt(d))`` is a Python integer in ``[2**41, 2**42)``, so
    ``2**g / sqrt(d)`` lies in ``[p, p + 1]``. ``|z|`` is split into three 21-bit
    limbs ``z_i``; ``v * 2**F = sum_i z_i * p * 2**(21 i + F - g)`` and every
    product ``z_i * p < 2**63``. A right shift floors (error below one unit per
    term), so ``v_lo <= v * 2**F <= v_hi`` with the two bracket ends computed from
    ``p`` and ``p + 1``. Entries with ``v >= 8`` are reported as not fast (left
    shifts are then skipped, so nothing overflows). Finally ``gamma = v**2``:
    ``v`` is split into 25-bit halves and squared in pieces that fit int64,
    each rounded in the safe direction.

    Returns:
        ``(fast, k, f_lo, f_hi)``; the other three arrays are meaningful where
        ``fast`` holds.
    """
    az = np.abs(z)
    # p = floor(2**g / sqrt(d)) = isqrt(floor(4**g / d)), chosen in [2**41, 2**42)
    g = 41 + (d.bit_length() + 1) // 2
    p = math.isqrt((1 << (2 * g)) // d)
    while p >= 1 << 42:
        g -= 1
        p = math.isqrt((1 << (2 * g)) // d)
    while p < 1 << 41:
        g += 1
        p = math.isqrt((1 << (2 * g)) // d)
    # m = isqrt(floor(X)) satisfies m <= sqrt(X) < m + 1 for X = 4**g / d
    p_hi = p + 1
    limbs = [(az >> np.int64(21 * i)) & np.int64((1 << 21) - 1) for i in range(3)]
    # |z| <= isqrt(64 d) implies v <= 8, so no left shift below can overflow
    zmax = min(math.isqrt(64 * d), (1 << 62) - 1)
    fast = az <= zmax
    v_lo = np.zeros(z.shape, dtype=np.int64)
    v_hi = np.zeros(z.shape, dtype=np.int64)
    for i, limb in enumerate(limbs):
        sh = 21 * i + _F - g
        for pv, acc, up in ((p, v_lo, False), (p_hi, v_hi, True)):
            prod = np.where(fast, limb, 0) * np.int64(pv)
            if sh >= 0:
                term = prod << np.int64(sh)
            else:
                term = prod >> np.int64(-sh)
                if up:
                    term = term + 1
            acc += term
    fast &= v_hi < _VMAX
    v_lo = np.where(fast, v_lo, 0)
    v_hi = np.where(fast, v_hi, 0)

    def square(v: npt.NDArray[np.int64], up: bool) -> npt.NDArray[np.int64]:
        # gamma * 2**56 = v**2 / 2**(2F - 56); v < 2**53 = hi * 2**25 + lo
        hi_, lo_ = v >> np.int64(25), v & np.int64((1 << 25) - 1)
        shift = 2 * _F - FRAC_BITS  # 44
        a = (hi_ * hi_) << np.int64(50 - shift)  # hi**2 * 2**50 / 2**44, exact
        b2 = 2 * hi_ * lo_  # * 2**25
        c2 = lo_ * lo_
        b_term = b2 >> np.int64(shift - 25)
        c_term = c2 >> np.int64(shift)
        total: npt.NDArray[np.int64] = a + b_term + c_term
        return total + 2 if up else total

    g_lo = square(v_lo, False)
    g_hi = square(v_hi, True)
    k = g_lo >> np.int64(FRAC_BITS)
    fast &= (g_hi >> np.int64(FRAC_BITS)) == k
    f_lo = g_lo - (k << np.int64(FRAC_BITS))
    f_hi = np.minimum(g_hi - (k << np.int64(FRAC_BITS)), np.int64(1 << FRAC_BITS))
    return fast, k, f_lo, f_hi


def _accept(y: npt.NDArray[np.int64], a: int, b: int, t: int, rng: AbstractRandomness) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(-(|y| - sigma2/t)**2 / (2 sigma2))) for every candidate."""
    d = 2 * a * b * t * t
    ay = np.abs(y)
    bt = b * t
    ymax = int(ay.max()) if ay.size else 0
    out = np.zeros(y.shape, dtype=np.bool_)
    if ymax * bt + a >= 1 << 62 or bt >= 1 << 62:
        # z does not fit int64: Python integers (only for extreme rationals)
        z_o = ay.astype(object) * bt - a
        return bernoulli_exp_rational(z_o * z_o, d, rng)
    z = ay * np.int64(bt) - np.int64(a)
    if d < 1 << 1000 and ymax * bt + a < 1 << 53:
        # |z| < 2**53 is exact in float64; z*z/d takes three correctly rounded operations
        # (relative error below 4.1 * 2**-53 < 2**-50, the bound accept_exp_float needs)
        z_float = z.astype(np.float64)
        return accept_exp_float(z_float * z_float / float(d), rng, lambda i: Fraction(int(z[i]) ** 2, d))
    if d < 1 << 49:
        fast = np.abs(z) < (1 << 31)
        idx = np.flatnonzero(fast)
        zf = z[idx]
        out[idx] = bernoulli_exp_rational(zf * zf, d, rng)
    else:
        fast, k, f_lo, f_hi = _bracket_big(z, d)
        idx = np.flatnonzero(fast)
        zf = z[idx]
        out[idx] = accept_exp(k[idx], f_lo[idx], f_hi[idx], rng, lambda i: Fraction(int(zf[i]) ** 2, d))
    for i in np.flatnonzero(~fast).tolist():  # depends only on y: fresh randomness is exact
        out[i] = exact_bernoulli_exp(Fraction(int(z[i]) ** 2, d), rng)
    return out


def gaussian_int(sigma2: Fraction, n: int, rng: AbstractRandomness) -> npt.NDArray[np.int64]:
    """Discrete Gaussian samples for an already validated ``sigma2`` (internal)."""
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(a // b) + 1
    lap_scale = Fraction(t)
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        # acceptance is about 0.76 for large sigma (0.44 at sigma**2 = 1/10): draw for 0.7,
        # and keep every accepted candidate (the accepted ones are i.i.d. from the target)
        m = min(BLOCK, (n - filled) * 10 // 7 + 16)
        y = laplace_int(lap_scale, m, rng)
        acc = y[_accept(y, a, b, t, rng)][: n - filled]
        out[filled : filled + acc.size] = acc
        filled += acc.size
    return out


def discrete_gaussian(sigma2: object, size: int = 1, rng: RngLike = None) -> npt.NDArray[np.int64]:
    """Exact discrete Gaussian samples: ``P[X = x] ∝ exp(-x**2 / (2 sigma2))`` on the integers.

    Args:
        sigma2: the variance parameter ``sigma**2 > 0``, any exact number accepted
            by ``dpalg._numbers.to_fraction`` (int, Fraction, decimal string,
            float taken exactly, Decimal); at most ``2**100``.
        size: number of samples.
        rng: ``None`` (the secure default), an int seed (NOT secure), or an
            ``AbstractRandomness``.

    Returns:
        An int64 array of ``size`` independent samples.

    Raises:
        InvalidArgument: ``sigma2`` not a positive number or above ``2**100``;
            ``size`` negative.

    Privacy guarantee:
        Adding ``discrete_gaussian(Δ**2 / (2 rho))`` to an integer query of L2
        sensitivity ``Δ`` satisfies ``rho``-zCDP (CKS 2020, Theorem 4).

    Examples:
        >>> from dpalg.noise import SeededRandomness, discrete_gaussian
        >>> discrete_gaussian("1/10", size=4, rng=SeededRandomness(0)).dtype
        dtype('int64')

    References:
        C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential
        Privacy. NeurIPS 2020, Algorithm 3 (rejection from the discrete Laplace
        with ``t = floor(sigma) + 1``) and Algorithm 1 (the acceptance step).
    """
    s2 = positive(sigma2, owner="discrete_gaussian", field="sigma2")
    if s2 > MAX_GAUSSIAN_SIGMA2:
        raise InvalidArgument("discrete_gaussian", "sigma2", sigma2, "must be <= 2**100")
    n = check_size(size, "discrete_gaussian")
    return gaussian_int(s2, n, resolve_rng(rng))
