"""Truncated smooth bounds from an exact ``LS_k`` profile, rounded up.

For a query ``f`` and a **public** truncation level ``K`` (NRS07 Def. 2.1, Prop. 3.1;
the truncation of :mod:`dpalg.sensitivity._smooth_window`)::

    S_K(x) = max( max_{k ≤ K} e^{−kβ₀}·P_k(x),  e^{−(K+1)β₀}·top ),   P_k = LS_k + E,

with ``top ≥ GS + E`` public and ``E > 0`` a public pad. ``P_k`` satisfies the
hypotheses of the weights lemma of ``docs/mechanisms/smooth_sensitivity.md`` §1
(``LS ≤ P_0`` and ``P_k(x) ≤ P_{k+1}(y)`` for neighbours: adding a constant keeps
both), so ``S_K`` is a β₀-smooth upper bound on ``LS`` and on ``S*_β``
(``e^{−kβ}·LS_k ≤ e^{−(K+1)β₀}·top`` for ``k > K``; for ``k = K`` the smoothness step
uses ``P_K(x) ≤ top``, and a constant is 0-smooth).

Rounding (why :func:`truncated_smooth_bound` returns ``Ŝ`` with ``T ≤ Ŝ ≤ e^{c}·T``, ``T``
the exact ``S_K`` for ``β₀``, so that ``Ŝ(x) ≤ e^{c}T(x) ≤ e^{c+β₀}T(y) ≤ e^{β}Ŝ(y)``):

1. The profile is given as floats ``Û_k`` with a public bound ``|Û_k − LS_k| ≤ err``.
   The pad is ``E = 2^20·err``, so ``fl(Û_k + E) = P_k(1 + θ)`` with
   ``|θ| ≤ 2^-20 + 2^-53`` (because ``P_k ≥ E``): a *relative* error, whatever ``n``.
2. ``β₀ = β − 2^-16`` rounded down to 21 significant bits (``_beta0``): ``β₀·k`` is an
   exact product, ``exp`` is within ``2^-50`` and each product within ``2^-53``, so
   every computed term is its exact value times ``1 ± 2^-19``.
3. The maximum is inflated by ``(1 + 2^-17)`` and rounded up: ``Ŝ ≥ T`` and
   ``Ŝ ≤ (1 + 2^-19)(1 + 2^-17)(1 + 2^-52)·T ≤ e^{2^-16}·T``, so ``c = 2^-16 ≤ β − β₀``.
4. Terms below ``FLOOR = 2^-900`` may underflow: the result is ``max(Ŝ, FLOOR)``
   (the max of a β-smooth function and a constant is β-smooth). Profiles are in
   units where ``top ≤ 2^60``, so a term ``≥ FLOOR`` has a normal weight.
5. For ``β < 2^-15`` (``β₀ < β/2``) the constant ``top`` is returned.

The clipped mean under add/remove (:func:`mean_lattice_profile`) is evaluated on
the lattice terms ``t_i ∈ [L, U]`` of the data (the values the release averages,
:func:`~dpalg.noise.exact_clipped_sum`'s rounding), in units of the lattice: the
case analysis of :mod:`dpalg.sensitivity._ls_mean` (tested against brute force),
with exact integer tails ``P`` rounded once to float, and the integer maximiser of
``g(u) = (h·u − P)/(u(u + 1))`` found exactly: ``g(u + 1) ≥ g(u) ⇔ u ≤ 2P/h``, so
``g`` rises up to ``u₀ = ⌊2P/h⌋ + 1`` and falls after it, and the maximum over an
integer range is at ``clip(u₀, lo, hi)``; the float ``2P/h`` is within ``2^-18`` of
the truth, so evaluating ``u₀ − 1, u₀, u₀ + 1`` (clipped) always includes the true
maximiser. Each evaluation has ``P ≤ h·u`` and ``g ≤ h/(u + 1)``, so its error is
at most ``(3/2 + 2)·2^-53·H ≤ 2^-50·H`` (``H = U − L``); the end cases (one or two
roundings of numbers ``≤ H``) are within ``2^-52·H``. Hence ``err = 2^-49·H``.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1, Lemma 2.3).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from dpalg.noise import round_to_lattice
from dpalg.noise._fixed_point import lattice_bounds
from dpalg.sensitivity._smooth import FLOOR, _beta0, _weights

__all__ = [
    "MEAN_ERR_REL",
    "MeanSummary",
    "mean_lattice_exponent",
    "mean_lattice_profile",
    "mean_smooth_bound",
    "mean_summary_from_values",
    "truncated_smooth_bound",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_SLACK: Final = 2.0**-16
_PAD_BITS: Final = 20
_MIN_BETA: Final = 2.0**-15
#: |Û_k − LS_k| ≤ MEAN_ERR_REL·(U − L) for :func:`mean_lattice_profile` (module docstring)
MEAN_ERR_REL: Final = 2.0**-49
_GRID_CELLS: Final = 1 << 20


def truncated_smooth_bound(profile: FloatArray, beta: float, top: float, err: float) -> float:
    """``Ŝ ≥ S_K``, β-smooth, from ``Û_0..Û_K`` (``K = len − 1``, public) with ``|Û_k − LS_k| ≤ err``.

    Args:
        profile: the computed ``Û_0..Û_K`` (every ``LS_k ≤ top`` in exact terms).
        beta: β > 0 (the float the noise's admissibility allows).
        top: a public float ``≥ GS`` (global sensitivity of the query).
        err: the public bound on the profile's absolute error (``> 0``).

    Returns:
        ``max(Ŝ, FLOOR)`` of the module docstring: an upper bound on the β-smooth
        sensitivity that is itself β-smooth (NRS07 Lemma 2.3 hypotheses).
    """
    if not (err > 0 and math.isfinite(top) and top >= 0):
        raise ValueError("truncated_smooth_bound needs err > 0 and a finite top >= 0")
    pad = math.ldexp(err, _PAD_BITS)
    cap = float(np.nextafter(top + pad, np.inf))  # ≥ GS + E
    if beta < _MIN_BETA:
        return cap
    b0 = _beta0(beta, _SLACK)
    levels = int(profile.size) - 1
    padded = np.asarray(profile, dtype=np.float64) + pad
    terms = _weights(np.arange(levels + 1, dtype=np.int64), b0) * padded
    constant = math.exp(-b0 * float(levels + 1)) * cap
    best = max(float(np.max(terms)) if terms.size else 0.0, constant)
    out = float(np.nextafter(best * (1.0 + 2.0**-17), np.inf))
    return max(out, FLOOR)


# --- the clipped mean under add/remove, on the lattice ----------------------------------


class MeanSummary(NamedTuple):
    """What the mean's ``LS_0..LS_K`` reads, in lattice units (all exact integers).

    ``n`` present values; ``total`` the sum of their lattice terms; ``smallest`` and
    ``largest`` the ``min(m, n)`` smallest and largest terms, ascending (int64).
    """

    n: int
    total: int
    smallest: IntArray
    largest: IntArray


def mean_lattice_exponent(lower: Fraction, upper: Fraction) -> int:
    """The public lattice ``e − 52`` of the mean's terms (``2**e`` > every |bound|): |terms| ≤ 2^52."""
    top = max(abs(lower), abs(upper))
    e = math.frexp(float(top))[1] if top > 0 else 0
    return e - 52


def lattice_terms(values: npt.ArrayLike, lower: Fraction, upper: Fraction, k: int) -> IntArray:
    """``clip(round_to_lattice(clip(v)), L, U)`` per value: the terms of :func:`~dpalg.noise.exact_clipped_sum`."""
    lo_u, hi_u = lattice_bounds(lower, upper, k, "lattice_terms")
    arr = np.asarray(values, dtype=np.float64)
    arr = np.clip(arr[~np.isnan(arr)], float(lower), float(upper))
    return np.clip(np.asarray(round_to_lattice(arr, k), dtype=np.int64), lo_u, hi_u)


def mean_summary_from_values(values: npt.ArrayLike, lower: Fraction, upper: Fraction, k: int, m: int) -> MeanSummary:
    """:class:`MeanSummary` of an in-memory array (user-level totals, tests)."""
    t = np.sort(lattice_terms(values, lower, upper, k))
    n = int(t.size)
    j = min(m, n)
    return MeanSummary(n, sum(int(v) for v in t.tolist()), t[:j].copy(), t[n - j :].copy())


def _phi(h: FloatArray, p: FloatArray, ulo: FloatArray, uhi: FloatArray) -> FloatArray:
    """max over integers u in [max(ulo, 1), uhi] of (h·u − p)/(u(u + 1)); −inf where empty (docstring)."""
    ok = np.maximum(ulo, 1.0) <= uhi
    lo = np.where(ok, np.maximum(ulo, 1.0), 1.0)
    hi = np.where(ok, uhi, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u0 = np.where(h > 0, np.floor(2.0 * p / np.where(h > 0, h, 1.0)) + 1.0, lo)
    best = np.full(np.broadcast(h, p, lo).shape, -np.inf)
    for d in (-1.0, 0.0, 1.0):
        u = np.clip(u0 + d, lo, hi)
        best = np.where(ok, np.maximum(best, (h * u - p) / (u * (u + 1.0))), best)
    return best


def _one_side(n: int, h_max: float, tail: FloatArray, width: float, kmax: int) -> FloatArray:
    """The upward terms (C, A1, A2 of :mod:`~dpalg.sensitivity._ls_mean`) for k = 0..kmax, data in [0, width].

    ``tail[j]`` = the sum of all but the j largest shifted terms (j = 0..min(kmax, n) + 1,
    clamped to n), ``h_max`` the largest shifted term.
    """
    r = np.arange(0, min(kmax, n) + 1, dtype=np.int64)[None, :]
    nn = (n - r).astype(np.float64)
    pn = tail[r]
    pn1 = tail[np.minimum(r + 1, n)]
    out = np.empty(kmax + 1, dtype=np.float64)
    step = max(1, _GRID_CELLS // r.shape[1])
    for k0 in range(0, kmax + 1, step):
        ks = np.arange(k0, min(kmax + 1, k0 + step), dtype=np.int64)[:, None]
        valid = r <= ks
        s = (ks - r).astype(np.float64)
        shape = valid.shape
        hb = np.full(shape, width)
        pnb = np.broadcast_to(pn, shape)
        best = _phi(hb, pnb, np.where(valid, nn, np.inf), nn + s)  # C: an addition at size N + s
        best = np.maximum(best, _phi(hb, pnb, np.where(valid & (s >= 1), nn, np.inf), nn + s - 1))  # A1: b added
        if n >= 1:  # A2: the largest kept value removed
            a2 = _phi(np.full(shape, h_max), np.broadcast_to(pn1, shape), np.where(valid & (r <= n - 1), nn - 1, np.inf), nn - 1 + s)
            best = np.maximum(best, a2)
        out[k0 : k0 + ks.shape[0]] = best.max(axis=1)
    return out


def _tails(shifted_total: int, extreme_terms: list[int], length: int, n: int) -> FloatArray:
    """``[shifted_total − (sum of the first min(j, n) extreme terms)]`` for j < length, exact, rounded once."""
    out = np.empty(length, dtype=np.float64)
    acc = shifted_total
    for j in range(length):
        out[j] = float(acc)
        if j < min(n, len(extreme_terms)):
            acc -= extreme_terms[j]
    return out


def mean_lattice_profile(summary: MeanSummary, lo_u: int, hi_u: int, kmax: int) -> FloatArray:
    """``Û_0..Û_kmax``: the add/remove ``LS_k`` of the mean of terms in ``[lo_u, hi_u]``, lattice units.

    Shifted so that ``lo_u`` is 0; ``|Û_k − LS_k| ≤ MEAN_ERR_REL·(hi_u − lo_u)`` (module
    docstring). ``summary`` must hold at least ``min(kmax + 2, n)`` extremes.
    """
    n, total = summary.n, summary.total
    width_i = hi_u - lo_u
    width = float(width_i)  # exact: |bounds| ≤ 2^52 + 1 on the mean's lattice
    need = min(kmax + 2, n)
    if summary.smallest.size < need or summary.largest.size < need:
        raise ValueError("the summary holds too few extreme terms for kmax")
    large = [int(v) - lo_u for v in summary.largest[::-1].tolist()]  # most extreme first
    small = [hi_u - int(v) for v in summary.smallest.tolist()]
    length = min(kmax, n) + 2
    up = _tails(total - n * lo_u, large, length, n)
    down = _tails(n * hi_u - total, small, length, n)
    with np.errstate(all="ignore"):
        best = np.maximum(
            _one_side(n, float(large[0]) if n else 0.0, up, width, kmax),
            _one_side(n, float(small[0]) if n else 0.0, down, width, kmax),
        )
    ks = np.arange(kmax + 1)
    best = np.where(ks >= n, np.maximum(best, width / 2), best)  # the empty dataset is within reach
    if n >= 1:  # a single value y0 is within reach: removal gives the midpoint, addition the pair mean
        mid = width / 2
        ends = max(max(abs(y0 - mid), max(y0, width - y0) / 2) for y0 in (float(summary.smallest[0] - lo_u), float(summary.largest[-1] - lo_u)))
        best = np.where(ks >= n - 1, np.maximum(best, ends), best)
    best = np.where(np.isnan(best), np.inf, np.maximum(best, 0.0))
    return np.maximum.accumulate(best)


def mean_smooth_bound(summary: MeanSummary, lo_u: int, hi_u: int, beta: float, levels: int) -> float:
    """``Ŝ_K`` of the clipped mean under add/remove, in lattice units (GS = (U − L)/2)."""
    width = float(hi_u - lo_u)
    if width == 0:
        return 0.0
    profile = mean_lattice_profile(summary, lo_u, hi_u, levels)
    if not bool(np.all(np.isfinite(profile))):  # pragma: no cover - cannot happen on lattice units
        return float(np.nextafter(width, np.inf))
    return truncated_smooth_bound(profile, beta, width / 2, MEAN_ERR_REL * width)
