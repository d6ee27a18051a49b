"""Exact coins Bernoulli(exp(-gamma * s_j)) for integer scores, in work that does not depend on the scores.

:func:`geometric_exp` draws ``Y`` with ``P[Y >= m] = exp(-gamma * m)`` for every
integer ``m >= 0`` (a geometric variable of ratio ``exp(-gamma)``). Then, for an
integer score ``s >= 0``,

    ``[Y >= s]`` is Bernoulli(exp(-gamma * s)), exactly,

so :func:`bernoulli_exp_scores` flips one such coin per score by drawing one ``Y_j``
per entry -- whose law depends only on the public ``gamma`` -- and comparing it with
``s_j``. The scores are touched by one int64 comparison per entry and by nothing
else: the random words drawn, the rounds, the array sizes and the branches taken
are functions of the random words and of ``(gamma, n)`` only.

How ``Y`` is drawn (Canonne--Kamath--Steinke 2020, the geometric step of their
Algorithm 2), for ``gamma = a / D`` in lowest terms:

* ``U`` in ``{0, ..., D - 1}`` with ``P[U = u]`` proportional to ``exp(-u / D)``:
  a uniform ``U`` accepted with probability ``exp(-U / D)`` (CKS Algorithm 1 on
  ``U / D`` in ``[0, 1)``, :func:`~dpalg.noise._bernoulli.accept_exp`), redrawn
  until accepted;
* ``V`` with ``P[V >= v] = exp(-v)``: ``V = #{v >= 1 : R < exp(-v)}`` for one
  uniform real ``R`` (its first 64 bits are one word, compared with rigorous
  integer bounds of ``2**64 exp(-v)``; only a word inside a bound's gap draws
  further bits of the same ``R``);
* ``X = U + D V`` has ``P[X >= m] = exp(-m / D)`` (``P[X >= m] = P[V > q] +
  P[V = q] P[U >= r]`` with ``m = q D + r``, which telescopes to ``exp(-m/D)``),
  and ``Y = floor(X / a)`` has ``P[Y >= m] = P[X >= a m] = exp(-gamma m)``.

``gamma = 0`` gives ``Y = +inf`` (every coin heads). ``Y`` is stored capped at
``2**63 - 1``, which changes no comparison with an int64 score.

Arithmetic: int64 when ``D <= 2**62`` (``U / D``'s 56-bit bracket by long division
in digits of ``63 - bitlen(D)`` bits; ``X`` in int64 while ``D (V + 1) < 2**63``);
entries with a larger ``V`` and every entry when ``D > 2**62`` use exact Python
integers (object arrays). Which path runs depends on ``gamma`` and on the random
``V`` -- never on the scores -- so it adds time but no timing channel.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Callable, Final

import numpy as np
import numpy.typing as npt

from dpalg.noise._bernoulli import FRAC_BITS, accept_exp
from dpalg.noise._exact import Bounds, LazyUniform, exp_bounds_of, exp_neg_bounds
from dpalg.noise._random import AbstractRandomness

__all__ = ["bernoulli_exp_scores", "geometric_exp"]

_INT64_MAX: Final = (1 << 63) - 1
_SMALL_D: Final = 1 << 62  # rng.below's limit and the int64 long division's


def _exp_minus_int_table() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Ascending arrays of the bounds ``lo_v <= 2**64 exp(-v) <= hi_v`` for ``v = 64, 63, ..., 1``."""
    lo = [exp_neg_bounds(Fraction(v), 64)[0] for v in range(64, 0, -1)]
    hi = [exp_neg_bounds(Fraction(v), 64)[1] for v in range(64, 0, -1)]
    return np.array(lo, dtype=np.uint64), np.array(hi, dtype=np.uint64)


_V_LO, _V_HI = _exp_minus_int_table()
assert bool(np.all(np.diff(_V_LO.astype(object)) >= 0)) and bool(np.all(np.diff(_V_HI.astype(object)) >= 0))

#: the largest denominator whose truncated geometric is drawn by table (one word per entry)
_TABLE_D: Final = 1 << 14
_TABLE_PREC: Final = 64 + 40


def _u_threshold_bounds(u: int, d: int) -> Bounds:
    """Bounds of ``t_u = (exp(-u/d) - exp(-1)) / (1 - exp(-1))``, ``P[U >= u]`` for the truncated geometric."""

    def bounds(prec: int) -> tuple[int, int]:
        p = prec + 8
        e_lo, e_hi = exp_neg_bounds(Fraction(u, d), p)
        c_lo, c_hi = exp_neg_bounds(Fraction(1), p)
        one = 1 << p
        lo = max(e_lo - c_hi, 0) << prec
        hi = (e_hi - c_lo) << prec
        return lo // (one - c_lo), -((-hi) // (one - c_hi))

    return bounds


@functools.lru_cache(maxsize=8)
def _u_table(d: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Ascending bounds of ``2**64 t_u`` for ``u = d - 1, ..., 1`` (``2 <= d <= 2**14``).

    ``exp(-u/d) = exp(-1/d)**u`` by repeated multiplication at ``104`` bits, the
    lower bound rounded down and the upper up at every step (both stay rigorous;
    the error after ``u <= 2**14`` steps is below ``2**-70``).
    """
    p = _TABLE_PREC
    one = 1 << p
    b_lo, b_hi = exp_neg_bounds(Fraction(1, d), p)
    c_lo, c_hi = exp_neg_bounds(Fraction(1), p)
    lo: list[int] = []
    hi: list[int] = []
    e_lo, e_hi = one, one
    for _ in range(1, d):
        e_lo = (e_lo * b_lo) >> p
        e_hi = -((-(e_hi * b_hi)) >> p)
        lo.append((max(e_lo - c_hi, 0) << 64) // (one - c_lo))
        hi.append(min(-((-((e_hi - c_lo) << 64)) // (one - c_hi)), (1 << 64) - 1))
    lo_arr = np.array(lo[::-1], dtype=np.uint64)
    hi_arr = np.array(hi[::-1], dtype=np.uint64)
    assert bool(np.all(np.diff(lo_arr.astype(object)) >= 0)) and bool(np.all(np.diff(hi_arr.astype(object)) >= 0))
    return lo_arr, hi_arr


def _geometric_e(n: int, rng: AbstractRandomness) -> npt.NDArray[np.int64]:
    """``V`` with ``P[V >= v] = exp(-v)``: ``#{v >= 1 : R < exp(-v)}``, one word of ``R`` per entry.

    ``R < exp(-v)`` is certain when ``w + 1 <= lo_v`` and impossible when ``w >= hi_v``
    (``R`` lies in ``[w, w + 1) / 2**64``). When both counts agree, ``V`` is decided;
    otherwise (a word inside a gap, probability below ``2**-57``, a function of the
    word alone) ``V`` is counted exactly with further bits of the same ``R``.
    """
    w = rng.uint64(n)
    return _count_below(w, _V_LO, _V_HI, rng, lambda v: exp_bounds_of(Fraction(v)), 10**9)


def _count_below(
    w: npt.NDArray[np.uint64],
    lo: npt.NDArray[np.uint64],
    hi: npt.NDArray[np.uint64],
    rng: AbstractRandomness,
    bounds: Callable[[int], Bounds],
    top: int,
) -> npt.NDArray[np.int64]:
    """``#{t in 1..top : R < p_t}`` for decreasing ``p_t``, ``R``'s first 64 bits being ``w``.

    ``lo``/``hi`` are the ascending bounds of ``2**64 p_t`` for ``t = T, T - 1, ..., 1``
    (``T = lo.size``, and ``top == T`` or ``lo_T == 0``; both arrays ascending). ``sure = #{t : w < lo_t}`` counts the
    certain ``t``; the only undecided one is the next, ``t = sure + 1``, when
    ``w < hi_t`` (every later ``t`` has ``hi_t <= hi_{sure+1} <= w``: impossible). Such an entry (a word in a gap: a function of the word alone) is
    finished exactly with further bits of the same ``R``, ``t`` by ``t``.
    """
    size = lo.size
    pos = np.searchsorted(lo, w, side="right")  # #{t : lo_t <= w}
    sure = (size - pos).astype(np.int64)
    nxt = np.minimum(pos - 1, size - 1)  # index of t = sure + 1 (the largest lo_t <= w)
    gap = (pos > 0) & (w < hi[np.maximum(nxt, 0)])
    for j in np.flatnonzero(gap).tolist():
        r = LazyUniform(int(w[j]), 64, rng)
        count = int(sure[j])
        while count < top and r.less_than(bounds(count + 1)):
            count += 1
        sure[j] = count
    return sure


def _frac_bits(u: npt.NDArray[np.int64], d: int) -> npt.NDArray[np.int64]:
    """``floor(2**56 * u / d)`` for ``0 <= u < d <= 2**62``, by long division in int64 digits."""
    if d & (d - 1) == 0:  # d = 2**k (a float's denominator): a shift
        k = d.bit_length() - 1
        return u << (FRAC_BITS - k) if k <= FRAC_BITS else u >> (k - FRAC_BITS)
    width = 63 - d.bit_length()  # r < d, so r << width < 2**63
    q = np.zeros(u.shape, dtype=np.int64)
    r = u.copy()
    done = 0
    while done < FRAC_BITS:
        step = min(width, FRAC_BITS - done)
        r <<= step
        digit = r // d
        r -= digit * d
        q = (q << step) | digit
        done += step
    return q


def _uniform_big(d: int, n: int, rng: AbstractRandomness) -> npt.NDArray[np.object_]:
    """``n`` uniform Python integers in ``[0, d)`` for any ``d > 2**62`` (vectorised rejection)."""
    width = (d - 1).bit_length()
    words = (width + 63) // 64
    out = np.empty(n, dtype=object)
    pending = np.arange(n)
    while pending.size:
        raw = np.zeros(pending.size, dtype=object)
        for _ in range(words):
            raw = raw * (1 << 64) + rng.uint64(pending.size).astype(object)
        raw = raw // (1 << (words * 64 - width))
        ok = raw < d
        out[pending[ok]] = raw[ok]
        pending = pending[~ok]
    return out


def _truncated_geometric(d: int, n: int, rng: AbstractRandomness) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """``U`` in ``[0, d)`` with ``P[U = u]`` proportional to ``exp(-u / d)`` (rejection; CKS 2020 Algorithm 2)."""
    if 1 < d <= _TABLE_D:  # inverse CDF: U = #{u in 1..d-1 : R < t_u}, one word per entry
        lo, hi = _u_table(d)
        return _count_below(rng.uint64(n), lo, hi, rng, lambda u: _u_threshold_bounds(u, d), d - 1)
    small = d <= _SMALL_D
    out: npt.NDArray[np.int64] | npt.NDArray[np.object_] = np.zeros(n, dtype=np.int64 if small else object)
    if d == 1:
        return out
    pending = np.arange(n)
    while pending.size:
        m = pending.size
        u: npt.NDArray[np.int64] | npt.NDArray[np.object_]
        if small:
            u = rng.below(d, m)
            f_lo = _frac_bits(u, d)
        else:
            u = _uniform_big(d, m, rng)
            f_lo = ((u * (1 << FRAC_BITS)) // d).astype(np.int64)
        f_hi = f_lo + (u != 0).astype(np.int64)
        uu = u
        keep = accept_exp(np.zeros(m, dtype=np.int64), f_lo, f_hi, rng, lambda i: Fraction(int(uu[i]), d))
        out[pending[keep]] = u[keep]
        pending = pending[~keep]
    return out


def geometric_exp(gamma: Fraction, n: int, rng: AbstractRandomness) -> npt.NDArray[np.int64]:
    """``n`` independent ``Y`` with ``P[Y >= m] = exp(-gamma * m)`` (``m >= 0`` integer), capped at ``2**63 - 1``.

    Exact (no floating point); the work depends on ``gamma``, ``n`` and the random
    words only. ``gamma = 0`` gives ``2**63 - 1`` everywhere (``Y = +inf``).

    References:
        C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential
        Privacy. NeurIPS 2020, Algorithm 1 (Bernoulli(exp(-gamma)) for gamma in
        [0, 1]) and Algorithm 2 (its geometric step ``U + t V``).
    """
    if gamma < 0:
        raise ValueError("geometric_exp needs gamma >= 0")
    if gamma == 0:
        return np.full(n, _INT64_MAX, dtype=np.int64)
    a, d = gamma.numerator, gamma.denominator
    u = _truncated_geometric(d, n, rng)
    v = _geometric_e(n, rng)
    y = np.empty(n, dtype=np.int64)
    vmax = _INT64_MAX // d - 1 if d <= _SMALL_D else -1  # u + d v <= d (vmax + 1) - 1 < 2**63
    fast = v <= vmax
    if vmax >= 0:
        x = u[fast].astype(np.int64) + np.int64(d) * v[fast]
        y[fast] = x // np.int64(a) if a <= _INT64_MAX else 0  # x < 2**63 <= a
    slow = np.flatnonzero(~fast)
    if slow.size:
        xo = u[slow].astype(object) + d * v[slow].astype(object)
        y[slow] = np.minimum(xo // a, _INT64_MAX).astype(np.int64)
    return y


def bernoulli_exp_scores(scores: npt.NDArray[np.int64], gamma: Fraction, rng: AbstractRandomness) -> npt.NDArray[np.bool_]:
    """Independent coins Bernoulli(exp(-gamma * scores[j])) for int64 scores ``>= 0``, in score-independent work.

    Entry ``j`` is ``[Y_j >= scores[j]]`` with ``Y_j`` from :func:`geometric_exp`:
    exactly ``P = exp(-gamma * scores[j])``. The scores enter one comparison.
    """
    y = geometric_exp(gamma, int(scores.shape[0]), rng)
    out: npt.NDArray[np.bool_] = y >= scores
    return out
