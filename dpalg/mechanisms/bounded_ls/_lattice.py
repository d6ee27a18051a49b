"""Exact arithmetic of :class:`~dpalg.mechanisms.BoundedLS`: e^{-x} from above, the discrete
Laplace tail, and the release of exact values on a lattice (seed 000, Theorem 1).

The seed's code draws float Laplace noise (Mironov 2012 applies) and uses the
tail ``P[|Z| >= T] = e^{-T a}``, which is not the discrete Laplace tail. Here the
width of each interval comes from the exact tail ``P[Z >= m] = p^m / (1 + p)``,
``p = e^{-1/t}``, evaluated at a rigorous rational upper bound of ``p``
(:func:`tail_margin`). The proof is in ``docs/mechanisms/bounded_ls.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil
from dpalg.mechanisms._common.params import floor_log2, positive_param, unit_interval_param
from dpalg.noise import AbstractRandomness, discrete_laplace

__all__ = ["exp_neg_upper", "lattice_release", "lattice_terms", "round_up_bits", "tail_margin"]

_GRANULARITY_BITS = 20  # the release lattice step is about 2**-20 of the noise scale
_BOUND_BITS = 8  # ĝ is rounded up to 8 significant bits (at most 0.8% more noise)
_ZERO_BOUND_K = -60  # lattice exponent when ĝ = 0 (f constant on all neighbours)


def exp_neg_upper(x: Fraction, bits: int = 96) -> Fraction:
    """A rational ``u >= e^{-x}`` for rational ``x >= 0``, within a relative ``2**-(bits-8)``.

    ``e^{x} >= sum_{j<=N} y^j/j!`` for ``y = x / 2**s >= 0`` (all terms are
    positive), each term floored to ``2**-W``; squaring ``s`` times keeps a lower
    bound of ``e^{x}``, and its reciprocal is an upper bound of ``e^{-x}``.

    Examples:
        >>> import math
        >>> u = exp_neg_upper(Fraction(1))
        >>> u >= Fraction(math.exp(-1)) * (1 - Fraction(1, 10**15)) and u - Fraction(math.exp(-1)) < Fraction(1, 10**20)
        True
    """
    if x < 0:
        raise InvalidArgument("exp_neg_upper", "x", x, "must be >= 0")
    if x == 0:
        return Fraction(1)
    s = max(0, (x.numerator // x.denominator).bit_length())
    work = bits + 2 * s + 32
    one = 1 << work
    y_num, y_den = x.numerator, x.denominator << s  # y = x / 2**s <= 1
    term, total, j = one, one, 0
    while term:
        j += 1
        term = term * y_num // (y_den * j)  # floored: a lower bound of each term
        total += term
    low = Fraction(total, one)  # <= e^{y}
    for _ in range(s):
        low = Fraction((low.numerator * low.numerator * one) // (low.denominator * low.denominator), one)
    return 1 / low  # exact reciprocal of a lower bound: an upper bound, relative error ~2**-(bits+2s)


def tail_margin(scale: ExactLike, delta: ExactLike) -> int:
    """The smallest ``w >= 0`` with ``P[Z > w] <= delta`` (proved) for Z discrete Laplace(scale).

    For Z with pmf ``(1-p)/(1+p) p^|z|``, ``p = e^{-1/t}``: summing the geometric
    series, ``P[Z >= m] = p^m / (1 + p)`` for ``m >= 0``. This is increasing in
    ``p`` (its derivative is ``p^{m-1}(m + (m-1)p)/(1+p)^2 > 0``), so evaluating it
    exactly at a rational ``p_hi >= p`` (:func:`exp_neg_upper`) bounds it from
    above. The result is the smallest ``w`` with the bound at ``m = w + 1`` at most
    ``delta``; it can exceed the true minimum by one only when ``p`` and ``p_hi``
    (96 bits apart) straddle the threshold.

    Args:
        scale: the discrete Laplace scale ``t > 0``.
        delta: the allowed one-sided failure probability, in (0, 1).

    Returns:
        ``w`` with ``P[Z > w] = P[Z < -w] <= delta``.

    Examples:
        >>> tail_margin(1, "0.01")  # P[Z >= 4] = 0.0134, P[Z >= 5] = 0.0049
        4
    """
    t = positive_param("tail_margin", "scale", scale)
    d = unit_interval_param("tail_margin", "delta", delta)
    p_hi = exp_neg_upper(1 / t)
    if p_hi >= 1:  # pragma: no cover - only for absurd scales
        raise InvalidArgument("tail_margin", "scale", scale, "is too large for a rigorous tail bound")

    def tail(m: int) -> Fraction:
        return p_hi**m / (1 + p_hi)

    # float guess m ~ t ln(1/(δ(1+p))), then exact correction in both directions
    log_inv_delta = math.log(d.denominator) - math.log(d.numerator)
    guess = max(1, math.ceil(float(t) * (log_inv_delta - math.log1p(float(p_hi)))))
    m = guess
    while m > 1 and tail(m - 1) <= d:
        m -= 1
    while tail(m) > d:
        m += 1
    return m - 1


def round_up_bits(x: Fraction, bits: int = _BOUND_BITS) -> Fraction:
    """The smallest ``m 2^e >= x`` with ``m < 2**bits`` (``x > 0``); 0 stays 0.

    Rounding a valid upper bound up keeps it valid, and it limits the release
    noise to ``bits`` distinct scales per ε₂ (see :func:`lattice_release`).

    Examples:
        >>> round_up_bits(Fraction(1, 3), 4)
        Fraction(11, 32)
    """
    if x <= 0:
        return Fraction(0)
    e = floor_log2(x) - bits + 1
    step = Fraction(2) ** e
    return fraction_ceil(x / step) * step


def lattice_terms(value: Fraction, bound: Fraction, epsilon: Fraction) -> tuple[int, int, Fraction]:
    """``(m, k, t)`` of :func:`lattice_release` for one value: the output is ``(m + Z) 2**k``
    with Z discrete Laplace of scale ``t`` (lattice units).

    Examples:
        >>> lattice_terms(Fraction(1, 3), Fraction(1, 100), Fraction(1))
        (44739243, -27, Fraction(1343489, 1))
    """
    if bound < 0:
        raise InvalidArgument("lattice_release", "bounds", bound, "must be >= 0")
    if epsilon <= 0:
        raise InvalidArgument("lattice_release", "epsilon", epsilon, "must be > 0")
    g = round_up_bits(bound)
    k = floor_log2(g / epsilon) - _GRANULARITY_BITS if g > 0 else _ZERO_BOUND_K
    step = Fraction(2) ** k
    return round(value / step), k, (g / step + 1) / epsilon


def lattice_release(
    values: Sequence[Fraction], bounds: Sequence[Fraction], epsilon: Fraction, rng: AbstractRandomness
) -> list[Fraction]:
    """Release each exact ``values[i]`` with discrete Laplace noise for sensitivity ``bounds[i]``.

    For each ``i``: ``g = round_up_bits(bounds[i])`` (still ``>= LS``), the
    lattice exponent ``k = floor(log2(g/ε)) - 20`` (a function of the already
    private ``g``), ``m = round(value / 2**k)`` (exact), and the output is
    ``(m + Z) 2**k`` with Z discrete Laplace of scale ``t = (g/2**k + 1)/ε`` in
    lattice units: rounding changes the sensitivity by at most one step, so the
    lattice-unit sensitivity is at most ``g/2**k + 1`` and the release is ε-DP
    for every pair with ``|f(x) - f(x')| <= g`` (Canonne–Kamath–Steinke 2020).
    Trials with equal ``t`` share one vectorised draw (independent samples).
    """
    if len(values) != len(bounds):
        raise InvalidArgument("lattice_release", "bounds", len(bounds), f"must have len(values)={len(values)} entries")
    ms: list[int] = []
    ks: list[int] = []
    scales: list[Fraction] = []
    for value, bound in zip(values, bounds):
        m, k, t = lattice_terms(value, bound, epsilon)
        ms.append(m)
        ks.append(k)
        scales.append(t)
    noise = [0] * len(values)
    groups: dict[Fraction, list[int]] = {}
    for i, t in enumerate(scales):
        groups.setdefault(t, []).append(i)
    for t, idx in groups.items():
        draw = discrete_laplace(t, size=len(idx), rng=rng)
        for i, z in zip(idx, draw.tolist()):
            noise[i] = int(z)
    return [(m + z) * Fraction(2) ** k for m, z, k in zip(ms, noise, ks)]
