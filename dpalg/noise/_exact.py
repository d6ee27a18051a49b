"""Rigorous integer bounds of irrational constants and lazy uniform comparisons.

Everything here is integer arithmetic. A bound function ``bounds(prec)`` returns
integers ``(lo, hi)`` with ``lo <= 2**prec * p <= hi`` for the (possibly
irrational) number ``p`` it describes, and the gap ``hi - lo`` stays bounded by a
small constant as ``prec`` grows. :class:`LazyUniform` compares a uniform real
``R`` in ``[0, 1)`` -- revealed 64 bits at a time -- against such a ``p``: the
answer is decided as soon as the revealed interval of ``R`` lies on one side of
``[lo, hi] / 2**prec``, which happens with probability one. This is the
classical exact way to sample Bernoulli(p) for an irrational ``p`` (no floating
point decides anything).
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Callable, Final

from dpalg.noise._random import AbstractRandomness

__all__ = [
    "Bounds",
    "LazyUniform",
    "exp_neg_bounds",
    "ln2_bounds",
    "rational_bounds",
]

#: ``bounds(prec) -> (lo, hi)`` with ``lo <= 2**prec * p <= hi``.
Bounds = Callable[[int], tuple[int, int]]

_GUARD: Final = 24


def rational_bounds(p: Fraction) -> Bounds:
    """Bounds of a rational ``p >= 0``: floor and ceiling of ``p * 2**prec``."""

    def bounds(prec: int) -> tuple[int, int]:
        scaled = p.numerator << prec
        lo = scaled // p.denominator
        hi = lo if lo * p.denominator == scaled else lo + 1
        return lo, hi

    return bounds


def _exp_neg_small(num: int, den: int, work: int) -> tuple[int, int]:
    """Bounds of ``2**work * exp(-num/den)`` for ``0 <= num <= den`` (Taylor series).

    Term ``k`` is computed as ``t_k = floor(t_{k-1} * num / (den * k))`` with
    ``t_0 = 2**work``; by induction ``|t_k - e_k| <= k`` where ``e_k`` is the
    exact term. We stop at the first ``t_N == 0`` (then ``e_N <= N``), and the
    alternating tail with decreasing terms is at most ``e_N``. The total error
    is therefore at most ``N*(N+1)/2 + N``.
    """
    term = 1 << work
    total = term
    k = 0
    sign = 1
    while term:
        k += 1
        term = (term * num) // (den * k)
        sign = -sign
        total += sign * term
    err = k * (k + 1) // 2 + k + 1
    return max(total - err, 0), total + err


@functools.lru_cache(maxsize=4096)
def exp_neg_bounds(c: Fraction, prec: int) -> tuple[int, int]:
    """Integers ``(lo, hi)`` with ``lo <= 2**prec * exp(-c) <= hi`` for rational ``c >= 0``.

    ``exp(-c) = exp(-c / 2**s) ** (2**s)`` with ``c / 2**s <= 1``; the series is
    bounded rigorously (see :func:`_exp_neg_small`) and each squaring rounds the
    lower bound down and the upper bound up, so both remain valid. Guard bits
    absorb the error growth of the ``s`` squarings.
    """
    if c < 0:
        raise ValueError("exp_neg_bounds needs c >= 0")
    if c == 0:
        return 1 << prec, 1 << prec
    whole = c.numerator // c.denominator
    s = whole.bit_length()
    work = prec + 2 * s + _GUARD
    lo, hi = _exp_neg_small(c.numerator, c.denominator << s, work)
    for _ in range(s):
        lo = (lo * lo) >> work
        hi = -((-hi * hi) >> work)
    shift = work - prec
    return lo >> shift, -((-hi) >> shift)


@functools.lru_cache(maxsize=64)
def ln2_bounds(prec: int) -> tuple[int, int]:
    """Integers ``(lo, hi)`` with ``lo <= 2**prec * ln 2 <= hi``.

    ``ln 2 = sum_{k>=1} 1/(k 2**k)``; each term is floored (error < 1 unit) and
    the tail after ``N`` terms is below ``2**-N``.
    """
    work = prec + _GUARD
    n = work + 1
    total = 0
    for k in range(1, n + 1):
        total += (1 << work) // (k << k)
    lo = total
    hi = total + n + 1  # n floor errors plus the tail (< 1 unit at 2**-work)
    shift = work - prec
    return lo >> shift, -((-hi) >> shift)


class LazyUniform:
    """A uniform real ``R`` in ``[0, 1)`` whose binary digits are drawn on demand.

    ``R``'s first ``nbits`` bits are ``prefix``; more are drawn (64 at a time)
    only when a comparison cannot be decided yet. All comparisons made with one
    instance refer to the same ``R``.
    """

    __slots__ = ("prefix", "nbits", "rng")

    def __init__(self, prefix: int, nbits: int, rng: AbstractRandomness) -> None:
        self.prefix = prefix
        self.nbits = nbits
        self.rng = rng

    def less_than(self, bounds: Bounds) -> bool:
        """Exactly decide ``R < p`` where ``bounds`` describes ``p``."""
        while True:
            prec = self.nbits + _GUARD
            lo, hi = bounds(prec)
            r_lo = self.prefix << _GUARD
            r_hi = (self.prefix + 1) << _GUARD
            if r_hi <= lo:
                return True
            if r_lo >= hi:
                return False
            self.prefix = (self.prefix << 64) | int(self.rng.uint64(1)[0])
            self.nbits += 64


def exp_bounds_of(c: Fraction) -> Bounds:
    """Bounds of ``exp(-c)`` as a :data:`Bounds` callable."""

    def bounds(prec: int) -> tuple[int, int]:
        return exp_neg_bounds(c, prec)

    return bounds
