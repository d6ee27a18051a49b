"""Exact Bernoulli samplers: Bernoulli(p) for rational p and Bernoulli(exp(-gamma)).

The vectorised core is :func:`accept_exp`: for every entry ``i`` it samples
Bernoulli(exp(-gamma_i)) given ``k_i = floor(gamma_i)`` exactly and a bracket
``f_lo_i <= 2**56 * (gamma_i - k_i) <= f_hi_i`` of the fractional part. It follows
Canonne--Kamath--Steinke (2020), Algorithm 1:

* ``exp(-gamma) = exp(-k) * exp(-f)``, so the result is the AND of
  Bernoulli(exp(-k)) and Bernoulli(exp(-f));
* Bernoulli(exp(-k)) is one comparison of a uniform real ``R`` with ``exp(-k)``;
  ``R``'s first 64 bits are one random word, compared with rigorous integer
  bounds of ``2**64 * exp(-k)``;
* Bernoulli(exp(-f)) for ``f`` in ``[0, 1)`` is CKS Algorithm 1: ``K = 1``; draw
  ``A ~ Bernoulli(f / K)``; while ``A = 1`` increase ``K`` and draw again; return
  ``[K odd]``. Each ``A`` compares 56 fresh random bits with the bracket of ``f``.

Whenever the random bits fall inside the (tiny) uncertainty of a bracket -- a
probability of about ``2**-50`` per decision -- the entry leaves the vectorised
path and the comparison is finished exactly with :class:`LazyUniform`, which
draws further bits of the *same* ``R`` and refines the bound. The vectorised
fast path and the slow path are therefore one exact algorithm; only the
bookkeeping differs. No floating-point number is involved anywhere.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Callable, Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import nonneg, to_fraction
from dpalg.noise._exact import LazyUniform, exp_bounds_of, exp_neg_bounds, rational_bounds
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng

__all__ = ["accept_exp", "accept_exp_float", "bernoulli", "bernoulli_exp", "bernoulli_exp_rational", "check_size"]

#: fractional bits of the bracket of ``gamma - floor(gamma)``
FRAC_BITS: Final = 56
_ONE: Final = 1 << FRAC_BITS
_KMAX: Final = 64  # exp(-k) < 2**-64 for k >= 45; larger k share the bounds (0, 1)
_ALG1_MAX_ROUNDS: Final = 100  # (W + 1) * K must stay below 2**63


def _exp_int_table() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    lo = np.zeros(_KMAX + 2, dtype=np.uint64)
    hi = np.ones(_KMAX + 2, dtype=np.uint64)
    lo[0] = hi[0] = np.uint64(2**64 - 1)  # unused: k = 0 skips the integer step
    for k in range(1, _KMAX + 1):
        b_lo, b_hi = exp_neg_bounds(Fraction(k), 64)
        lo[k], hi[k] = b_lo, b_hi
    return lo, hi


_EXP_LO, _EXP_HI = _exp_int_table()


def check_size(size: object, owner: str) -> int:
    """Validate a sample count: an ``int >= 0`` (not a bool)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or int(size) < 0:
        raise InvalidArgument(owner, "size", size, "must be an int >= 0")
    return int(size)


def exact_bernoulli_exp(gamma: Fraction, rng: AbstractRandomness) -> bool:
    """Bernoulli(exp(-gamma)) for one rational ``gamma >= 0``, with Python integers."""
    k = gamma.numerator // gamma.denominator
    if k and not LazyUniform(0, 0, rng).less_than(exp_bounds_of(Fraction(k))):
        return False
    return _alg1_from(gamma - k, 1, rng)


def _alg1_from(f: Fraction, start: int, rng: AbstractRandomness) -> bool:
    """CKS Algorithm 1 for ``f`` in ``[0, 1]``, resumed at ``K = start``."""
    k = start
    while LazyUniform(0, 0, rng).less_than(rational_bounds(f / k)):
        k += 1
    return k % 2 == 1


def accept_exp(
    k: npt.NDArray[np.int64],
    f_lo: npt.NDArray[np.int64],
    f_hi: npt.NDArray[np.int64],
    rng: AbstractRandomness,
    exact_gamma: Callable[[int], Fraction],
) -> npt.NDArray[np.bool_]:
    """Vectorised Bernoulli(exp(-gamma_i)) from ``floor(gamma_i)`` and a bracket of its fraction.

    Args:
        k: ``floor(gamma_i)`` exactly (any value above 64 behaves like 65).
        f_lo: lower bound of ``2**56 * (gamma_i - k_i)``, in ``[0, 2**56]``.
        f_hi: upper bound of the same, ``f_lo <= f_hi <= 2**56``.
        rng: the randomness source.
        exact_gamma: ``exact_gamma(i)`` returns the exact rational ``gamma_i``;
            only called on the rare entries whose random bits fall inside a
            bracket (and for the integer step when ``k_i > 64``).

    Returns:
        A boolean array, ``True`` with probability ``exp(-gamma_i)``.

    References:
        Canonne, Kamath, Steinke (2020), Algorithm 1 (Bernoulli(exp(-gamma))).
    """
    n = k.shape[0]
    out = np.ones(n, dtype=np.bool_)
    # -- integer part: Bernoulli(exp(-k)) = [R < exp(-k)] with one 64-bit word
    idx = np.flatnonzero(k > 0)
    if idx.size:
        kk = np.minimum(k[idx], _KMAX + 1)
        w = rng.uint64(idx.size)
        yes = w < _EXP_LO[kk]
        no = w >= _EXP_HI[kk]
        out[idx[no]] = False
        amb = np.flatnonzero(~(yes | no))
        for j in amb.tolist():
            i = int(idx[j])
            g = exact_gamma(i)
            kint = g.numerator // g.denominator
            out[i] = LazyUniform(int(w[j]), 64, rng).less_than(exp_bounds_of(Fraction(kint)))
    # -- fractional part: CKS Algorithm 1, all pending entries advance in lockstep
    pend = np.flatnonzero(out)
    kk_round = 1
    while pend.size:
        if kk_round > _ALG1_MAX_ROUNDS:  # probability < 1/100!: finish exactly
            for i in pend.tolist():
                g = exact_gamma(i)
                out[i] = _alg1_from(g - g.numerator // g.denominator, kk_round, rng)
            break
        w56 = (rng.uint64(pend.size) >> np.uint64(64 - FRAC_BITS)).astype(np.int64)
        yes = (w56 + 1) * kk_round <= f_lo[pend]
        no = w56 * kk_round >= f_hi[pend]
        odd = kk_round % 2 == 1
        out[pend[no]] = odd
        amb = np.flatnonzero(~(yes | no))
        for j in amb.tolist():
            i = int(pend[j])
            g = exact_gamma(i)
            f = g - g.numerator // g.denominator
            if LazyUniform(int(w56[j]), FRAC_BITS, rng).less_than(rational_bounds(f / kk_round)):
                out[i] = _alg1_from(f, kk_round + 1, rng)
            else:
                out[i] = odd
        pend = pend[yes]
        kk_round += 1
    return out


@functools.cache
def exp_sixteenths() -> npt.NDArray[np.float64]:
    """exp(-m/16) for m = 0..1024 as floats, each within 2**-52 relative of the real value (built on first use)."""
    values = [float(Fraction(exp_neg_bounds(Fraction(m, 16), 164)[0], 1 << 164)) for m in range(1025)]
    return np.array(values, dtype=np.float64)


#: Taylor coefficients of exp(-r) for r in [0, 1/16], highest degree first (degree 9:
#: the remainder is below (1/16)**10 / 10! < 2**-61)
_TAYLOR: Final = tuple(float(Fraction((-1) ** i, math.factorial(i))) for i in range(9, -1, -1))
#: relative guard of the float comparison (the proven error is below 2**-43, see accept_exp_float)
_GUARD: Final = 2.0**-40
#: relative error accepted in the caller's float gamma
MAX_GAMMA_REL_ERROR: Final = 2.0**-50


def accept_exp_float(
    gamma: npt.NDArray[np.float64], rng: AbstractRandomness, exact_gamma: Callable[[int], Fraction]
) -> npt.NDArray[np.bool_]:
    """Vectorised Bernoulli(exp(-gamma_i)) from a float approximation of each ``gamma_i >= 0``: one word per entry.

    The caller proves ``|gamma[i] - gamma_i| <= 2**-50 * gamma_i`` (e.g. ``z**2 / D``
    with ``|z| < 2**53``: three correctly rounded operations give ``4 * 2**-53``).
    Entry ``i`` is ``[R_i < exp(-gamma_i)]`` for a uniform real ``R_i`` whose first 64
    bits are one fresh word ``w_i``: exactly Bernoulli(exp(-gamma_i)).

    Proof that the comparison is exact. Write ``g`` for ``min(gamma[i], 64)``.
    ``p = T[m] * P(r)`` with ``m = floor(16 g)``, ``r = g - m/16`` (exact: the
    scaling by 16 and, by Sterbenz's lemma, the subtraction are exact), ``T[m]``
    within ``2**-52`` of ``exp(-m/16)`` and ``P`` the degree-9 Taylor polynomial of
    ``exp(-r)`` (remainder below ``2**-61``; Horner's rule on ``r <= 1/16`` with
    coefficients below 1 in absolute value adds at most ``20 * 2**-53``
    relative). So ``p`` is within ``2**-47`` relative of ``exp(-g)``, and
    ``exp(-g)`` is within ``64 * 2**-50 * e**(2**-44) < 2**-43.9`` relative of
    ``exp(-gamma_i)`` when ``gamma_i <= 64``: the total is below ``2**-43``.

    * *accept* only if ``a (1 + 2**-45) + 2**-62 < p (1 - 2**-40)``, with
      ``a = float(w) * 2**-64``: up to rounding (each operation is within
      ``2**-53`` relative, far inside the ``2**-45`` and ``2**-40`` slacks and the
      ``2**-62`` margin over the ``2**-64`` width of ``R``'s interval), this says
      ``(w + 1) / 2**64 < exp(-gamma_i)``, hence ``R < exp(-gamma_i)``;
      entries with ``gamma[i] > 64`` are never accepted here;
    * *reject* only if ``a (1 - 2**-45) > p (1 + 2**-40) + 2**-62``: then
      ``w / 2**64 > exp(-gamma_i)`` (for ``gamma_i > 64`` too, since then
      ``exp(-gamma_i) < exp(-64) * (1 + 2**-43) <= p (1 + 2**-40)``), hence ``R > exp(-gamma_i)``.

    Every other entry (probability about ``2**-39 p + 2**-61``) is finished by
    comparing the *same* ``R`` -- its first 64 bits ``w_i`` and as many further
    random bits as needed -- with rigorous bounds of ``exp(-exact_gamma(i))``
    (:class:`~dpalg.noise._exact.LazyUniform`). The float only chooses which exact
    comparison decides the entry, never its outcome.

    References:
        The lazy comparison of a uniform real with a fixed number: D. Knuth,
        A. Yao (1976); Bernoulli(exp(-gamma)) by one comparison of a uniform real
        with exp(-gamma), as in CKS 2020 (Algorithm 1 is the float-free way).
    """
    n = gamma.shape[0]
    w = rng.uint64(n)
    g = np.minimum(gamma, 64.0)
    m = np.floor(g * 16.0)
    r = g - m * 0.0625
    poly = np.full(n, _TAYLOR[0])
    for coef in _TAYLOR[1:]:
        poly *= r
        poly += coef
    p = exp_sixteenths()[m.astype(np.int64)] * poly
    a = w.astype(np.float64) * 2.0**-64
    yes = (a * (1 + 2.0**-45) + 2.0**-62 < p * (1 - _GUARD)) & (gamma <= 64.0)
    no = a * (1 - 2.0**-45) > p * (1 + _GUARD) + 2.0**-62
    out: npt.NDArray[np.bool_] = yes
    for j in np.flatnonzero(~(yes | no)).tolist():
        out[j] = LazyUniform(int(w[j]), 64, rng).less_than(exp_bounds_of(exact_gamma(j)))
    return out


def _frac_bits_int64(rem: npt.NDArray[np.int64], den: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64]:
    """``floor(2**56 * rem / den)`` exactly, for ``0 <= rem < den < 2**49`` (4 x 14-bit long division)."""
    q = np.zeros(rem.shape, dtype=np.int64)
    r = rem.copy()
    for _ in range(4):
        r <<= 14
        digit = r // den
        r -= digit * den
        q = (q << 14) | digit
    return q


def bernoulli_exp_rational(
    num: npt.NDArray[np.int64] | npt.NDArray[np.object_],
    den: npt.NDArray[np.int64] | npt.NDArray[np.object_] | int,
    rng: AbstractRandomness,
) -> npt.NDArray[np.bool_]:
    """Vectorised Bernoulli(exp(-num_i/den_i)) for per-entry rationals.

    ``num`` and ``den`` are integer arrays (``den`` may be a scalar), ``num >= 0``,
    ``den > 0``. int64 arithmetic is used when every ``den < 2**49`` (then the
    fractional part is exact to 56 bits by 14-bit long division, which never
    exceeds ``2**63``); otherwise the bracket is computed on Python integers
    (object arrays), and only ``accept_exp`` itself runs on int64.
    """
    num_arr = np.asarray(num)
    den_arr = np.broadcast_to(np.asarray(den), num_arr.shape)
    exact = lambda i: Fraction(int(num_arr[i]), int(den_arr[i]))  # noqa: E731
    small = (
        num_arr.dtype == np.int64
        and den_arr.dtype == np.int64
        and (den_arr.size == 0 or int(den_arr.max()) < (1 << 49))
    )
    if small:
        n64 = num_arr.astype(np.int64)
        d64 = np.ascontiguousarray(den_arr, dtype=np.int64)
        k = n64 // d64
        rem = n64 - k * d64
        f_lo = _frac_bits_int64(rem, d64)
        f_hi = f_lo + (rem != 0)
        return accept_exp(k, f_lo, f_hi, rng, exact)
    num_o = num_arr.astype(object)
    den_o = den_arr.astype(object)
    k_o = num_o // den_o
    rem_o = num_o - k_o * den_o
    flo_o = (rem_o * _ONE) // den_o
    k64 = np.minimum(k_o, 1 << 62).astype(np.int64)
    f_lo = flo_o.astype(np.int64)
    f_hi = f_lo + (rem_o != 0).astype(np.int64)
    return accept_exp(k64, f_lo, f_hi, rng, exact)


def bernoulli_exp(gamma: object, size: int = 1, rng: RngLike = None) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-gamma)) samples for a rational ``gamma >= 0``.

    Args:
        gamma: the rate, any exact number accepted by ``dpalg._numbers.to_fraction``
            (int, Fraction, decimal string, float taken exactly, Decimal); ``>= 0``.
        size: number of samples.
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.

    Returns:
        A boolean array of length ``size``; each entry is ``True`` with
        probability exactly ``exp(-gamma)``.

    Raises:
        InvalidArgument: ``gamma`` negative or not a number, ``size`` negative.

    Examples:
        >>> from dpalg.noise import SeededRandomness, bernoulli_exp
        >>> bernoulli_exp(0, size=3, rng=SeededRandomness(1)).tolist()
        [True, True, True]
        >>> round(float(bernoulli_exp("1/2", size=100_000, rng=SeededRandomness(1)).mean()), 2)
        0.61

    References:
        C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential
        Privacy. NeurIPS 2020, Algorithm 1 (with the ``gamma > 1`` reduction of
        Section 5.1: ``exp(-gamma) = exp(-1)**floor(gamma) * exp(-frac(gamma))``).
    """
    g = nonneg(gamma, owner="bernoulli_exp", field="gamma")
    n = check_size(size, "bernoulli_exp")
    source = resolve_rng(rng)
    kint = g.numerator // g.denominator
    f = g - kint
    scaled = f.numerator * _ONE
    lo = scaled // f.denominator
    hi = lo if lo * f.denominator == scaled else lo + 1
    k = np.full(n, min(kint, 1 << 62), dtype=np.int64)
    return accept_exp(k, np.full(n, lo, dtype=np.int64), np.full(n, hi, dtype=np.int64), source, lambda i: g)


def bernoulli(p: object, size: int = 1, rng: RngLike = None) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(p) samples for a rational ``p`` in ``[0, 1]``.

    One 64-bit word per sample is compared with ``floor(2**64 p)`` and
    ``ceil(2**64 p)``; only when the word equals the floor of a non-dyadic ``p``
    (probability ``2**-64``) are more bits drawn, exactly.

    Args:
        p: the probability, any exact number accepted by ``to_fraction``.
        size: number of samples.
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.

    Returns:
        A boolean array of length ``size``, ``True`` with probability exactly ``p``.

    Raises:
        InvalidArgument: ``p`` outside ``[0, 1]`` or not a number.

    Examples:
        >>> from dpalg.noise import SeededRandomness, bernoulli
        >>> bernoulli(1, size=2, rng=SeededRandomness(0)).tolist()
        [True, True]
        >>> bernoulli("0", size=2, rng=SeededRandomness(0)).tolist()
        [False, False]

    References:
        The lazy comparison of a uniform real with a fixed number: D. Knuth,
        A. Yao, The complexity of nonuniform random number generation (1976).
    """
    q = to_fraction(p, owner="bernoulli", field="p")
    if q < 0 or q > 1:
        raise InvalidArgument("bernoulli", "p", p, "must be in [0, 1]")
    n = check_size(size, "bernoulli")
    source = resolve_rng(rng)
    if q == 1:
        return np.ones(n, dtype=np.bool_)
    lo, hi = rational_bounds(q)(64)
    w = source.uint64(n)
    out = w < np.uint64(lo)
    if hi != lo:
        for j in np.flatnonzero(w == np.uint64(lo)).tolist():
            out[j] = LazyUniform(lo, 64, source).less_than(rational_bounds(q))
    return out
