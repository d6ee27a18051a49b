"""SmoothBound over the clipped trimmed mean under row add/remove: an exact truncated smooth bound in O(K²).

(Over 600 lines on purpose: about 135 are the proof below, and the code after it -- the
summary of the order windows, the potential, the per-regime fold -- implements that one
proof step by step; each function cites the invariant it keeps, so splitting the file
would separate the code from the argument it follows.)

**Statistic.** ``Query.trimmed_mean(col, τ) | Clip(l, u)`` drops ``t = ⌊τm⌋`` values at
each end of a size-``m`` dataset and averages the ``c = m − 2t ≥ 1`` others; the empty
dataset has the midpoint. dpalg releases it on the per-row lattice terms
``T(x) = rint(clip_inside(x)/2^{k_t})``, ``k_t = ⌊log2(u − l)⌋ − 44``
(:func:`trimmed_lattice_exponent`, public), which lie in ``[L, U]`` (the terms of the
inside clip bounds), ``H = U − L ≤ 2^45``: ``f(x) = 2^{k_t}·Σ_{t ≤ r < n−t} T_(r)/c``, and
``2^{k_t}(L + U)/2`` on empty data. ``T`` is a per-row monotone map, so ``f`` *is* a clipped
trimmed mean over ``[L, U]`` of the terms and everything below holds for it exactly (in
units of ``2^{k_t}``, shifted so that ``L = 0``). Its value is read exactly: the order
windows give ``v = x_(t)`` and ``v' = x_(n−t−1)``, and one exact lattice sum of
``clip(x, v, v')`` (:meth:`~dpalg.data.Reductions.clipped_sums`; ``v, v'`` are floats in
``[l, u]`` and ``rint`` is monotone, so its terms are ``clip(T(x), T(v), T(v'))``) equals
``t·T(v) + Σ_middle + t·T(v')``. The centre ``round(f(x)/2^k)`` is an exact rational
rounding, a function of the multiset of terms.

**Neighbouring relation.** One row of the column added or removed (``n`` is private);
missing values are absent rows. At user level the rows are the users' clipped totals
(:func:`trimmed_center_and_scale_values` over ``unit_values``), one value per user.

**Local sensitivity** (``docs/mechanisms/local_sensitivity.md``, "Trimmed mean,
add/remove"). For ``|y| = m ≥ 2``, ``LS(y)`` is the largest *active* term
``(y_top − mean(window))/(w + 1)`` (upward) or its reflection (downward), with
``(w, top, #above) = (c − 1, y_{m−t−1}, t)`` ("in": active if a removal keeps ``t`` or an
addition drops ``t + 1``, and ``c ≥ 2``) or ``(c, y_{m−t}, t − 1)`` ("out": active if a
removal drops ``t − 1`` or an addition ``t``). ``LS({v}) = max(|v − H/2|, max(v, H − v)/2)``,
``LS(∅) = H/2``, every term is ``≤ H/2`` (``w ≥ 1``): ``GS = H/2``. An optimal ``y`` of size
``m`` within ``k`` operations of ``x`` (sorted, padded with 0 below rank 0 and ``H`` from
rank ``n``) is a *configuration*: ``i`` zeros added below the window, ``j`` values ``H``
added at the top and the values between window and top removed, i.e. the window
``[t_m − i, t_m − i + w)``, the top at rank ``e = n − #above − 1 + j``, cost
``n − m + 2(i + j) ≥ d(x, y)``, with ``i + j ≥ m − n`` (top above the window),
``max(0, t_m + w − n) ≤ i ≤ t_m + w``, ``j ≤ #above + 1`` (the shape lemma; checked against
brute force). All of them is the O(K³) profile of
:func:`dpalg.sensitivity._ls_trimmed._tm_ar_profile`: for fixed ``m`` the best split of
the budget between ``i`` and ``j`` is a (max,+) convolution of two monotone sequences
(window means, tops), with no known exact O(K) method. The *smooth* bound needs less.

**The bounded function.** Let ``β₀ = _beta0(β, 2^-16)`` and ``E = 2^20·err`` be the β₀
and the pad of :func:`~dpalg.mechanisms.smooth._profile.truncated_smooth_bound`, and
``q = e^{−β₀}``. For a term of ``y`` with window ``[lo, lo + w)`` (ranks of ``y``, padded
with 0 below rank 0) let ``g_s(y) = (y_{lo+w−s} − y_{lo−s})/w ≥ 0`` be the drop of the window
mean at the ``s``-th *shift* (add a 0 at the bottom, remove the window's top), and the
*potential* (``S`` = :func:`trimmed_horizon` ``(β)``, public)::

    Φ(y) = Σ_{s=1}^{S} q^{2s}·g_s(y) + q^{2(S+1)}·H/(w(1 − q²))      (S = 0: Φ = H/(2β₀w), rounded up)

and, for every dataset ``y``::

    g(y) = min( max over y's active terms of (numerator + Φ)/(w + 1),  H/2 )   (|y| ≥ 2),
    g(y) = LS(y)                                                             (|y| ≤ 1),

the numerator being ``top − mean(window)`` or its reflection. ``g`` depends on ``y`` only
and ``LS ≤ g ≤ H/2``. Hence, for the public ``K`` (NRS07 Def. 2.1 and Prop. 3.1; the
weights lemma of ``docs/mechanisms/smooth_sensitivity.md`` §1)::

    T(x) = max( max_{y : d(x,y) ≤ K} e^{−β₀ d(x,y)}·(g(y) + E),  e^{−(K+1)β₀}·(H/2 + E) )

is a β₀-smooth upper bound on ``LS``: a term with ``d(x, y) < K`` is at most ``e^{β₀}`` times
the term of ``y`` at distance ``≤ d + 1`` from a neighbour ``x'``, one with ``d = K`` at most
``e^{β₀}`` times the constant (``g + E ≤ H/2 + E``). The configurations attain ``T``: each is
a ``y`` with ``d(x, y) ≤`` its cost and a term ``≤ g(y)``; for each ``y`` of size ``m ≥ 2``
within ``K``, the shape lemma gives a configuration of the same ``m``, regime and side with
cost ``≤ d(x, y)`` whose padded term is at least ``y``'s. The lemma's exchanges (added
values to 0 or ``H``, kept values below the top replaced by smaller ones, the top raised)
only lower values below the top or raise values at or above it, at no extra cost, and
``N + Φ`` is nondecreasing in the top and nonincreasing in every order statistic ``y_p``
below it: its coefficient is ``(q^{2(hi−p)}·[hi − p ≤ S] − 1)/w ≤ 0`` inside the window and
``(q^{2(hi−p)}·[hi − p ≤ S] − q^{2(lo−p)}·[lo − p ≤ S])/w ≤ 0`` below it. (The test suite
checks ``T`` itself by brute force over every dataset in the ball.) Sizes 0 and 1 are ``∅`` (cost ``n``) and ``{x_0}``, ``{x_{n−1}}``
(cost ``n − 1``; a fresh singleton costs ``n + 1`` and is below ``∅``).

**Domination (why O(K²)).** Fix ``(m, regime, side, j)`` and shift the window once,
``i → i + 1`` (configuration ``y → y'``): the cost grows by 2, the numerator by
``N(y') − N(y) = g_1(y)``, and ``g_s(y') = g_{s+1}(y)``, so (the tail absorbs
``g_{S+1} ≤ H/w``) ``Φ(y') ≤ q^{−2}Φ(y) − g_1(y)`` and ``N(y') + Φ(y') ≤ N(y) + q^{−2}Φ(y) ≤
q^{−2}(N(y) + Φ(y))``; for the constant ``Φ = H/(2β₀w)``: ``g_1 ≤ H/w ≤ (q^{−2} − 1)Φ``. The
clamp and ``+ E`` keep the factor, so the weighted term ``e^{−β₀·cost}(g + E)`` does not
grow. For fixed ``j`` the feasible ``i`` form an interval, so only its smallest member
``i*(j) = max(i₀, m − n − j)`` matters: O(#j) = O(K) configurations per
``(m, regime, side)``, O(K²) in all, evaluated as contiguous row slices (the windows of a
row's configurations are consecutive; their ``Φ`` by the recursion
``Φ(p0 + r) = q^{2r}(W(p0) + Σ_{r'<r} q^{−2r'} w·g(p0 + r'))/w + tail``, sums of nonnegative
terms). :func:`trimmed_profile` returns ``Û_k`` = the largest computed ``g``-term over these
configurations of cost ``≤ k`` (and sizes 0, 1). ``Û_k`` is **not** ``LS_k`` (it is at most
the ``g``-profile), but ``max_k e^{−kβ₀}(Û_k + E)`` is the maximum over *all*
configurations, ``T``: ``truncated_smooth_bound`` computes exactly that maximum (a level
``k`` above a configuration's cost only lowers its weight), and its rounding argument
(``_smooth_profile`` items 2–5; item 1 is replaced by the bound below) gives
``T ≤ Ŝ ≤ e^{2^-16}T`` with ``top = H/2 ≥ GS``: ``Ŝ`` is a β-smooth upper bound on ``LS``
(NRS07 Lemma 2.3's hypotheses; the release is NRS07 Lemma 2.6 with ``S' = Ŝ + 2^k``,
:mod:`dpalg.mechanisms.smooth._smooth_bound`).

*Accuracy.* ``Φ ≤ H/(w(q^{−2} − 1)) ≤ H/(2β₀w)``, and ``Φ`` is small where the data are dense
around the window (its gains are differences of order statistics ``w`` ranks apart). On
uniform and normal data with ε = 1, δ = 1e-6 the bound is within 6% of the unpadded one for
``τ ≤ 1/4`` and ``n ≥ 100``, within 60% for ``τ = 0.49`` (``c`` ≈ 20 at ``n = 1000``). Without
the pad (``trimmed_profile(..., None)``) the non-dominated configurations have reproduced
the exact ``LS_k`` of the O(K³) profile in every test (tens of thousands of random
datasets; both sides are needed): an unproven observation, never used for releases.

**Float error** (``ε = 2^-53``; every ``exp`` within ``2^-50``, as in
:mod:`dpalg.sensitivity._smooth`). Every integer is exact: terms ``≤ H ≤ 2^45``; prefix sums
over the ``≤ 5·2^14`` ranks of a region are ``< 2^62`` in int64; window sums relative to
``S₀ = S(t_m, w)``, a Python int. With ``δ = S₀ − S(lo, w) ∈ [0, wH]``: ``q₁ = fl(S₀/w)``
(Python's correctly rounded integer division) errs by ``≤ εH``, ``q₂ = fl(fl(δ)/w)`` by
``≤ 2.0001εH``, ``M = fl(q₁ − q₂)`` by ``≤ εH`` more: ``|M − mean| ≤ 4.01εH``. ``Φ̂`` adds at most
``S + K + 8`` roundings of nonnegative terms and exponentials: relative error
``≤ 2^15·ε + 3·2^-50 ≤ 2^-37.8``, plus ``[0, tail]`` from the recursion's longer horizon
(``tail/(w + 1) ≤ 2^-52·H`` by the choice of ``S``); the constant pad is exact as used.
``fl(M − Φ̂)`` and ``fl(top − ·)`` add ``≤ ε(3.01H + 2.01Φ)``; ``fl(1/(w + 1))`` and the product
``2ε`` relative. So the unclamped value errs by ``≤ 3.51εH + 2^-52H + 2^-37.6·v ≤ 2^-50.6·H +
2^-37.6·v`` (``Φ/(w + 1) ≤ v``), and so does the clamped one (``min(·, H/2)`` is 1-Lipschitz,
and a value above ``(1 + 2^-36)H/2`` clamps on both sides). Sizes 0 and 1 are exact. With
``err = TRIM_ERR_REL·H = 2^-49·H``, ``E = 2^-29·H``: ``fl(v̂_c + E) = (v_c + E)(1 + θ)``,
``|θ| ≤ 2^-21.6 + 2^-37.5 + ε ≤ 2^-20``: item 1 of ``_smooth_profile`` holds as stated there.

Examples:
    >>> from fractions import Fraction
    >>> s = trimmed_summary_from_terms([0, 1, 2, 3, 4], 0, 4, Fraction(1, 5))
    >>> trimmed_value(s)
    Fraction(2, 1)
    >>> [round(v, 12) for v in trimmed_profile(s, 2, None).tolist()]  # LS_0..LS_2 (middle {1, 2, 3} in [0, 4])
    [0.5, 0.75, 1.166666666667]
    >>> 0.5 < trimmed_smooth_bound(s, 1.0, 20) < 0.7  # β = 1, K = 20: the smooth bound, above LS_0
    True

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1, Lemma 2.3, Lemma 2.6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from dpalg._errors import InvalidArgument
from dpalg.data import Dataset, Reductions, SumSpec, as_reductions
from dpalg.data._numpy_reductions import inside_bounds
from dpalg.mechanisms._common.params import float_floor, floor_log2
from dpalg.mechanisms.smooth._profile import _MIN_BETA, _SLACK, truncated_smooth_bound
from dpalg.noise import round_to_lattice
from dpalg.noise._admissible import Admissibility
from dpalg.queries import Query
from dpalg.sensitivity._smooth import _beta0
from dpalg.sensitivity._smooth_window import window_levels

__all__ = [
    "MAX_LEVELS",
    "TRIM_ERR_REL",
    "TrimmedSummary",
    "center_and_scale_from_summary",
    "trimmed_center_and_scale",
    "trimmed_center_and_scale_values",
    "trimmed_horizon",
    "trimmed_lattice_exponent",
    "trimmed_levels",
    "trimmed_profile",
    "trimmed_radius",
    "trimmed_smooth_bound",
    "trimmed_summary",
    "trimmed_summary_from_terms",
    "trimmed_summary_from_values",
    "trimmed_value",
    "trimmed_window_ranks",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: |computed term − exact term| ≤ TRIM_ERR_REL·H for every configuration (module docstring)
TRIM_ERR_REL: Final = 2.0**-49
#: the public cap on the truncation level K: int64 prefix sums stay below 2^61 (a smaller public K is valid)
MAX_LEVELS: Final = 1 << 14
_TERM_BITS: Final = 44  # (u − l)/2^k_t in [2^44, 2^45): H = U − L ≤ 2^45
_RADIUS_PAD: Final = 4  # ranks read beyond K around t and n − t (checked in _Side)
_CELLS: Final = 1 << 19  # dense cells per evaluated chunk
_MAX_WIDTH: Final = 1 << 45  # H = U − L in term units
_INT62: Final = 1 << 62
_TAIL_BITS: Final = 51  # the potential's tail is ≤ 2^-52·H per term
_MAX_RADIUS: Final = 2 * MAX_LEVELS + _RADIUS_PAD  # K + S + 4 with K, S ≤ MAX_LEVELS: prefix sums < 2^62
_MAX_EXPONENT: Final = 600.0  # e^{±2β₀k} for k ≤ K + 1 stays far inside the float range


def trimmed_lattice_exponent(lower: Fraction, upper: Fraction) -> int:
    """The public term lattice ``k_t = ⌊log2(u − l)⌋ − 44``: ``(u − l)/2^{k_t} ∈ [2^44, 2^45)``."""
    return floor_log2(upper - lower) - _TERM_BITS


def _drop(trim: Fraction, m: IntArray) -> IntArray:
    out: IntArray = (trim.numerator * m) // trim.denominator
    return out


def _drop1(trim: Fraction, m: int) -> int:
    return (trim.numerator * m) // trim.denominator


def trimmed_levels(beta: float, lower: Fraction, upper: Fraction, lattice_k: int) -> int:
    """The public truncation level: :func:`window_levels`, capped at :data:`MAX_LEVELS`.

    Any public K gives a valid bound (module docstring); the cap keeps the exact
    integer prefix sums in int64 and the O(K²) work bounded.
    """
    return min(window_levels(beta, lower, upper, lattice_k), MAX_LEVELS)


def trimmed_horizon(beta: float) -> int:
    """The public horizon ``S`` of the potential Φ (module docstring); 0: the constant pad ``H/(2β₀w)`` instead.

    ``S + 1 ≥ (51 ln 2 + ln(1/min(β₀, 1/2)))/(2β₀)``, so the potential's tail is at most
    ``2^-52·H`` per term; 0 when ``β < 2^-15`` (the constant bound is returned) or
    ``S > MAX_LEVELS``.
    """
    if not beta >= _MIN_BETA:
        return 0
    b0 = _beta0(beta, _SLACK)
    if b0 <= 0:  # pragma: no cover - β ≥ 2^-15 gives β₀ > 0
        return 0
    horizon = math.ceil((_TAIL_BITS * math.log(2.0) + math.log(1.0 / min(b0, 0.5))) / (2.0 * b0)) + 1
    return horizon if horizon <= MAX_LEVELS else 0


def trimmed_radius(beta: float, levels: int) -> int:
    """The public rank radius the bound reads around ``t`` and ``n − t``: ``K + S + 4``."""
    return levels + trimmed_horizon(beta) + _RADIUS_PAD


def trimmed_window_ranks(n: int, trim: Fraction, radius: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The 0-based rank ranges ``[first, last]`` around ``t = ⌊τn⌋`` and ``n − t`` that the bound reads.

    Radius ``radius + 2`` each (unclamped: the seam clamps to ``[0, n)``): a public-size
    read of ``2(2·radius + 5)`` order statistics whatever the data.
    """
    t = _drop1(trim, n)
    r = radius + 2
    return (t - r, t + r), (n - t - r, n - t + r)


class TrimmedSummary(NamedTuple):
    """What the trimmed mean's value and smooth bound read, in units of ``2^{k_t}`` (exact integers).

    Attributes:
        n: present values.
        trim: τ.
        lo_u: ``L``, the term of the inside lower clip bound.
        hi_u: ``U``, the term of the inside upper clip bound.
        mid_total: the exact sum of the terms at ranks ``t..n − t − 1`` (unshifted).
        ranks: ascending distinct ranks covered by the order windows.
        terms: the terms at ``ranks`` minus ``lo_u`` (int64 in ``[0, U − L]``).
    """

    n: int
    trim: Fraction
    lo_u: int
    hi_u: int
    mid_total: int
    ranks: IntArray
    terms: IntArray


def _term_bounds(lower: Fraction, upper: Fraction, kt: int) -> tuple[int, int]:
    lo_in, hi_in = inside_bounds(lower, upper)
    lo_u, hi_u = (int(v) for v in round_to_lattice(np.array([lo_in, hi_in]), kt).tolist())
    return lo_u, hi_u


def _shifted_terms(values: FloatArray, lo_u: int, hi_u: int, kt: int) -> IntArray:
    """``T(v) − L`` per value (values already clipped inside ``[l, u]``: terms in ``[L, U]``)."""
    raw = round_to_lattice(values, kt)
    if raw.dtype == np.int64 and abs(lo_u) < _INT62 and abs(hi_u) < _INT62:
        out: IntArray = np.clip(raw.astype(np.int64) - lo_u, 0, hi_u - lo_u)
        return out
    return np.array([min(max(int(v) - lo_u, 0), hi_u - lo_u) for v in raw.tolist()], dtype=np.int64)


def _exact_sum(terms: IntArray) -> int:
    """The exact sum of int64 terms in ``[0, 2^45]`` (int64 chunks that cannot overflow)."""
    step = 1 << 17
    return sum(int(np.sum(terms[i : i + step], dtype=np.int64)) for i in range(0, terms.size, step))


def _union_windows(n: int, trim: Fraction, radius: int) -> list[tuple[int, int]]:
    """:func:`trimmed_window_ranks` clamped to ``[0, n)``, merged when they touch."""
    (a0, a1), (b0, b1) = trimmed_window_ranks(n, trim, radius)
    a0, a1, b0, b1 = max(a0, 0), min(a1, n - 1), max(b0, 0), min(b1, n - 1)
    if not n:
        return []
    if a1 + 1 >= b0:
        return [(min(a0, b0), max(a1, b1))]
    return [(a0, a1), (b0, b1)]


def _check_summary_args(owner: str, trim: Fraction, radius: int, width: int) -> None:
    if not 0 <= trim < Fraction(1, 2):
        raise InvalidArgument(owner, "trim", trim, "must be in [0, 1/2)")
    if not 0 <= radius <= _MAX_RADIUS:
        raise InvalidArgument(owner, "radius", radius, f"must be in [0, {_MAX_RADIUS}]")
    if not 0 <= width <= _MAX_WIDTH:
        raise InvalidArgument(owner, "hi_u - lo_u", width, f"must be in [0, 2**{_MAX_WIDTH.bit_length() - 1}]")


def trimmed_summary(
    data: Dataset | Reductions, column: str, lower: Fraction, upper: Fraction, trim: Fraction, radius: int
) -> TrimmedSummary:
    """The summary through the reductions seam (row level): a count, two order windows of public width, one exact sum.

    Reads ``count``, the order windows of :func:`trimmed_window_ranks` (ranks depend on
    ``n`` only, width on the public ``radius`` = :func:`trimmed_radius` only) and one
    :meth:`~dpalg.data.Reductions.clipped_sums` pass clipped at ``[x_(t), x_(n−t−1)]``
    (module docstring). No loop depends on a private value beyond ``n``.
    """
    kt = trimmed_lattice_exponent(lower, upper)
    lo_u, hi_u = _term_bounds(lower, upper, kt)
    _check_summary_args("trimmed_summary", trim, radius, hi_u - lo_u)
    reductions = as_reductions(data)
    n = reductions.count(column)
    t = _drop1(trim, n)
    rank_parts: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    value_parts: list[FloatArray] = [np.zeros(0, dtype=np.float64)]
    for first, last in _union_windows(n, trim, radius):
        w = reductions.order_window(column, lower, upper, first, last)
        rank_parts.append(np.arange(w.first, w.first + w.values.size, dtype=np.int64))
        value_parts.append(np.asarray(w.values, dtype=np.float64))
    ranks, values = np.concatenate(rank_parts), np.concatenate(value_parts)
    mid_total = 0
    if n:
        v_lo = float(values[int(np.searchsorted(ranks, t))])
        v_hi = float(values[int(np.searchsorted(ranks, n - t - 1))])
        clipped = reductions.clipped_sums([SumSpec(column, Fraction(v_lo), Fraction(v_hi), kt)])[0].total
        t_lo, t_hi = (int(v) for v in round_to_lattice(np.array([v_lo, v_hi]), kt).tolist())
        mid_total = int(clipped) - t * (t_lo + t_hi)
    return TrimmedSummary(n, trim, lo_u, hi_u, mid_total, ranks, _shifted_terms(values, lo_u, hi_u, kt))


def trimmed_summary_from_values(
    values: npt.ArrayLike, lower: Fraction, upper: Fraction, trim: Fraction, radius: int
) -> TrimmedSummary:
    """The same summary from an in-memory array (users' clipped totals, tests); NaN are absent rows.

    Values are clipped inside ``[lower, upper]`` like the seam's: bit for bit the
    summary :func:`trimmed_summary` reads from the same column.
    """
    kt = trimmed_lattice_exponent(lower, upper)
    lo_u, hi_u = _term_bounds(lower, upper, kt)
    _check_summary_args("trimmed_summary_from_values", trim, radius, hi_u - lo_u)
    arr = np.asarray(values, dtype=np.float64).ravel()
    lo_in, hi_in = inside_bounds(lower, upper)
    arr = np.clip(np.sort(arr[~np.isnan(arr)]), lo_in, hi_in)
    return _summary_of_sorted(_shifted_terms(arr, lo_u, hi_u, kt), lo_u, hi_u, trim, radius)


def trimmed_summary_from_terms(
    terms: npt.ArrayLike, lo_u: int, hi_u: int, trim: Fraction, radius: int = _MAX_RADIUS
) -> TrimmedSummary:
    """The summary of integer terms already on a lattice, in ``[lo_u, hi_u]`` (``hi_u − lo_u ≤ 2^45``; tests)."""
    owner = "trimmed_summary_from_terms"
    _check_summary_args(owner, trim, radius, hi_u - lo_u)
    raw = np.sort(np.asarray(terms, dtype=np.int64).ravel())
    if raw.size and (int(raw[0]) < lo_u or int(raw[-1]) > hi_u):
        raise InvalidArgument(owner, "terms", "(data)", f"must lie in [{lo_u}, {hi_u}]")
    return _summary_of_sorted(raw - lo_u, lo_u, hi_u, trim, radius)


def _summary_of_sorted(shifted: IntArray, lo_u: int, hi_u: int, trim: Fraction, radius: int) -> TrimmedSummary:
    n = int(shifted.size)
    t = _drop1(trim, n)
    mid_total = _exact_sum(shifted[t : n - t]) + (n - 2 * t) * lo_u if n else 0
    keep = [np.arange(a, b + 1, dtype=np.int64) for a, b in _union_windows(n, trim, radius)]
    ranks = np.concatenate([np.zeros(0, dtype=np.int64), *keep])
    return TrimmedSummary(n, trim, lo_u, hi_u, mid_total, ranks, shifted[ranks])


# --- the non-dominated configurations ---------------------------------------------------------


def _lookup(summary: TrimmedSummary, reflect: bool) -> Callable[[IntArray], IntArray]:
    """``r ↦ z(r)``: the shifted term at rank ``r`` (0 below rank 0, ``H`` from rank ``n``), or its reflection.

    Reads only ranks inside the summary's windows (a rank outside them is a bug in the
    public rank arithmetic: it raises, whatever the data).
    """
    n, h = summary.n, summary.hi_u - summary.lo_u
    ranks = np.concatenate((summary.ranks, [np.iinfo(np.int64).max]))  # a sentinel: searchsorted stays in range
    terms = np.concatenate((summary.terms, [0]))

    def up(r: IntArray) -> IntArray:
        inside = (r >= 0) & (r < n)
        pos = np.searchsorted(ranks, np.where(inside, r, 0))
        if bool(np.any(inside & (ranks[pos] != r))):  # pragma: no cover - public rank arithmetic
            raise AssertionError("trimmed smooth bound: a rank outside the order windows")
        out: IntArray = np.where(r < 0, 0, np.where(r >= n, h, terms[pos])).astype(np.int64)
        return out

    if not reflect:
        return up

    def down(r: IntArray) -> IntArray:
        out: IntArray = h - up(n - 1 - r)
        return out

    return down


class _Side:
    """One side's padded sorted terms around ranks ``t`` and ``n − t``, with exact prefix sums (int64).

    ``z`` is 0 below rank 0 and ``H`` from rank ``n``; the downward side is the
    reflection ``z'(r) = H − z(n − 1 − r)`` (the trimmed mean commutes with
    ``x ↦ H − x``). The regions hold ranks ``[t − radius, t + radius + 1]`` and
    ``[n − t − radius, n − t + radius + 1]`` (``size`` entries, read from the summary) and
    ``extra`` copies of their last entry, read only by masked cells of the dense row
    slices. ``cs_p[r − base_p] = Σ_{base_p ≤ s < r} z(s)``, likewise ``cs_q``: at most
    ``(2·radius + 3 + extra)·2^45 < 2^62``.
    """

    def __init__(self, z: Callable[[IntArray], IntArray], n: int, t: int, radius: int, extra: int, mid: int) -> None:
        self.base_p = t - radius
        self.base_q = n - t - radius
        self.size = 2 * radius + 2
        z_p = z(np.arange(self.base_p, self.base_p + self.size, dtype=np.int64))
        z_q = z(np.arange(self.base_q, self.base_q + self.size, dtype=np.int64))
        self.z_p: IntArray = np.concatenate((z_p, np.full(extra, z_p[-1], dtype=np.int64)))
        self.z_q: IntArray = np.concatenate((z_q, np.full(extra, z_q[-1], dtype=np.int64)))
        self.cs_p: IntArray = np.concatenate(([0], np.cumsum(self.z_p))).astype(np.int64)
        self.cs_q: IntArray = np.concatenate(([0], np.cumsum(self.z_q))).astype(np.int64)
        self.zf_p: FloatArray = self.z_p.astype(np.float64)  # exact: terms ≤ 2^45
        self.zf_q: FloatArray = self.z_q.astype(np.float64)
        self.mid = mid  # Σ_{t ≤ s < n − t} z(s), exact
        self.anchor_p = int(self.cs_p[radius])  # C[t] − C[base_p]
        self.anchor_q = int(self.cs_q[radius])  # C[n − t] − C[base_q]

    def gap_rows(self, start: IntArray, w: IntArray, length: int) -> FloatArray:
        """``D_w(start + r) = z(start + r + w) − z(start + r)`` for ``r < length`` (rows × length; exact, ``≥ 0``)."""
        low = sliding_window_view(self.zf_p, length)[start - self.base_p]
        out: FloatArray = sliding_window_view(self.zf_q, length)[start + w - self.base_q] - low  # exact
        return out


def _pad(h: int, pad_rate: float, w: IntArray) -> FloatArray:
    """``H/(pad_rate·w)`` rounded up: two roundings, then ``(1 + 2^-50)`` and one step up."""
    raw = float(h) / (pad_rate * w.astype(np.float64))
    out: FloatArray = np.nextafter(raw * (1.0 + 2.0**-50), np.inf)
    return out


class _Potential(NamedTuple):
    """The pad of ``g``: Φ with horizon ``S`` and ``q² = e^{−2β₀}``, or (``S = 0``) the constant ``H/(2β₀w)``.

    ``down[k] = e^{−2β₀k}``, ``up[k] = e^{2β₀k}`` for ``k ≤ K + 1`` and ``kernel[r] = e^{−2β₀(S − r)}``
    (``2β₀`` has 22 significant bits: every exponent is exact; ``exp`` within 4 ulp).
    """

    b0: float
    horizon: int
    down: FloatArray
    up: FloatArray
    kernel: FloatArray


def _potential(beta: float, levels: int) -> _Potential:
    """Φ's public constants; the constant pad when ``S = 0`` or ``e^{2β₀(K + 1)}`` would leave the safe float range."""
    b0 = _beta0(beta, _SLACK)
    horizon = trimmed_horizon(beta) if 2.0 * b0 * (levels + 1) <= _MAX_EXPONENT else 0
    if not horizon:
        empty = np.zeros(0, dtype=np.float64)
        return _Potential(b0, 0, empty, empty, empty)
    ks = np.arange(levels + 2, dtype=np.float64)
    kernel = np.exp(-(2.0 * b0) * np.arange(horizon, 0, -1, dtype=np.float64))
    return _Potential(b0, horizon, np.exp(-(2.0 * b0) * ks), np.exp((2.0 * b0) * ks), kernel)


class _Rows(NamedTuple):
    """Per regime: the sizes m with an active term and a feasible column, and their parameters (int64)."""

    t: IntArray  # t_m
    w: IntArray  # window width
    e0: IntArray  # top rank at j = 0: n − #above − 1
    d: IntArray  # m − n
    i0: IntArray  # the smallest window shift: the window ends at or below rank n
    jlo: IntArray
    jhi: IntArray


def _regime_rows(n: int, trim: Fraction, levels: int) -> list[_Rows]:
    ms = np.arange(max(2, n - levels), n + levels + 1, dtype=np.int64)
    t = _drop(trim, ms)
    c = ms - 2 * t
    t_rem, t_add = _drop(trim, ms - 1), _drop(trim, ms + 1)
    d = ms - n
    budget = (levels + d) // 2  # the cost n − m + 2(i + j) ≤ K
    out = []
    for w, above, act in (
        (c - 1, t, ((t_rem == t) | (t_add == t + 1)) & (c >= 2)),  # "in": a neighbour keeps c − 1 values
        (c, t - 1, (t_rem == t - 1) | (t_add == t)),  # "out": a neighbour keeps c + 1 values
    ):
        i0 = np.maximum(0, t + w - n)
        jlo = np.maximum(np.maximum(0, above + 1 - n), d - t - w)  # top rank ≥ 0; i*(j) ≤ t + w (window end ≥ 0)
        jhi = np.minimum(above + 1, budget - i0)  # top rank ≤ n; the cost
        keep = act & (jlo <= jhi)
        out.append(_Rows(t[keep], w[keep], (n - above - 1)[keep], d[keep], i0[keep], jlo[keep], jhi[keep]))
    return out


def _checked(lo: IntArray, hi: IntArray, size: int) -> None:
    if lo.size and (int(lo.min()) < 0 or int(hi.max()) >= size):  # pragma: no cover - public rank arithmetic
        raise AssertionError("trimmed smooth bound: a rank outside the order window")


def _start_sums(side: _Side, p0: IntArray, w: IntArray, pot: _Potential) -> FloatArray:
    """``Σ_{s=1}^{S} q^{2s}·D_w(p0 − s)`` per row: nonnegative terms (any order: relative error ``≤ (S + 2)·2^-52``)."""
    out = np.empty(p0.size, dtype=np.float64)
    step = max(1, _CELLS // pot.horizon)
    for a in range(0, p0.size, step):
        gaps = side.gap_rows(p0[a : a + step] - pot.horizon, w[a : a + step], pot.horizon)
        out[a : a + step] = np.sum(gaps * pot.kernel, axis=1)  # numpy's own reduction: deterministic (no BLAS threads)
    return out


def _row_chunks(widths: IntArray) -> list[slice]:
    """Consecutive rows whose dense ``rows × max(width)`` block has at most ``_CELLS`` cells."""
    out = []
    start, nrows = 0, int(widths.size)
    while start < nrows:
        stop, width = start + 1, int(widths[start])
        while stop < nrows and max(width, int(widths[stop])) * (stop + 1 - start) <= _CELLS:
            width = max(width, int(widths[stop]))
            stop += 1
        out.append(slice(start, stop))
        start = stop
    return out


def _fold_side(side: _Side, rows: _Rows, h: int, pot: _Potential | None, out: FloatArray) -> None:
    """Fold one side's non-dominated configurations of one regime into ``out`` (max per cost).

    Row ``m``, column ``j ∈ [jlo, jhi]``: window shift ``i = max(i0, d − j)``, top rank
    ``e0 + j``. The *cut* columns ``j ≤ d − i0`` (pure additions, cost ``d = m − n``) have
    ``i = d − j``: window start ``p0 + r`` and top ``e0 + jlo + r`` for ``r = j − jlo``, with
    ``p0 = t − (d − jlo)``. The others have the window of shift ``i0`` and cost
    ``2(i0 + j) − d``. Every array below is a contiguous slice per row.
    """
    t, w, e0, d, i0, jlo, jhi = rows
    if not t.size:
        return
    hi0 = t + w
    i_far, i_near = np.maximum(i0, d - jlo), np.maximum(i0, d - jhi)
    p0 = t - i_far  # the lowest window start of each row
    span = i_far - i_near + 1  # window starts p0 .. t − i_near
    jn = np.maximum(jlo, d - i0 + 1)  # the first non-cut column
    n_cut = np.maximum(np.minimum(jhi, d - i0) - jlo + 1, 0)  # = span when a cut part exists
    n_rest = np.maximum(jhi - jn + 1, 0)
    # every rank a valid cell reads lies in the windows (the public rank arithmetic, checked per row)
    _checked(p0 - side.base_p, t - side.base_p, side.size)
    _checked(hi0 - i_far - side.base_q, hi0 - side.base_q, side.size)
    _checked(e0 + jlo - side.base_q, e0 + jhi - side.base_q, side.size)
    c_hi0, c_t = side.cs_q[hi0 - side.base_q], side.cs_p[t - side.base_p]
    # S(t_m, w) = Σ_{t ≤ s < n − t} z + (C[hi0] − C[n − t]) − (C[t_m] − C[t]): Python ints, then one correctly rounded division
    base = [side.mid + (a - side.anchor_q) - (b - side.anchor_p) for a, b in zip(c_hi0.tolist(), c_t.tolist())]
    m0 = np.array([s / ww for s, ww in zip(base, w.tolist())], dtype=np.float64)
    wf = w.astype(np.float64)
    half = h / 2.0
    if pot is not None and pot.horizon:
        _checked(p0 - pot.horizon - side.base_p, p0 - side.base_p, side.size)
        _checked(p0 - pot.horizon + w - side.base_q, p0 + w - side.base_q, side.size)
        w_start = _start_sums(side, p0, w, pot)
        tail = math.exp(-2.0 * pot.b0 * (pot.horizon + 1)) * h / (-math.expm1(-2.0 * pot.b0) * wf)
    elif pot is not None:
        constant = _pad(h, 2.0 * pot.b0, w)
    for sl in _row_chunks(np.maximum(span, n_rest)):
        width = int(span[sl].max())
        r = np.arange(width, dtype=np.int64)
        # the window starting at p0 + r: its mean from exact sums, S(t_m, w) − S(p0 + r, w) ∈ [0, wH]
        q_part = c_hi0[sl, None] - sliding_window_view(side.cs_q, width)[hi0[sl] - i_far[sl] - side.base_q]
        p_part = c_t[sl, None] - sliding_window_view(side.cs_p, width)[p0[sl] - side.base_p]
        lowered = m0[sl, None] - (q_part - p_part).astype(np.float64) / wf[sl, None]  # the mean, then minus the pad
        if pot is not None and pot.horizon:
            # Φ(p0 + r) = q^{2r}(W(p0) + Σ_{r' < r} q^{−2r'} D_w(p0 + r'))/w + tail: nonnegative sums, no cancellation
            terms = side.gap_rows(p0[sl], w[sl], width - 1) * pot.up[: width - 1] if width > 1 else None
            acc = np.empty((lowered.shape[0], width))
            acc[:, 0] = 0.0
            if terms is not None:
                np.cumsum(terms, axis=1, out=acc[:, 1:])
            acc += w_start[sl, None]
            acc *= pot.down[:width]
            lowered -= acc / wf[sl, None] + tail[sl, None]
        elif pot is not None:
            lowered -= constant[sl, None]
        inv = 1.0 / (wf[sl] + 1.0)
        # cut columns: top e0 + jlo + r, window p0 + r, cost d
        top = sliding_window_view(side.zf_q, width)[e0[sl] + jlo[sl] - side.base_q]
        val = np.where(r[None, :] < n_cut[sl, None], np.minimum((top - lowered) * inv[:, None], half), -np.inf)
        has = n_cut[sl] > 0
        np.maximum.at(out, d[sl][has], val.max(axis=1)[has])
        # the other columns: window of shift i0 (column span − 1), top e0 + jn + c, cost 2(i0 + jn + c) − d
        width_rest = int(n_rest[sl].max())
        if width_rest:
            c = np.arange(width_rest, dtype=np.int64)
            fixed = lowered[np.arange(lowered.shape[0]), span[sl] - 1]
            top = sliding_window_view(side.zf_q, width_rest)[e0[sl] + jn[sl] - side.base_q]
            val = np.minimum((top - fixed[:, None]) * inv[:, None], half)
            keep = c[None, :] < n_rest[sl, None]
            cost = 2 * (i0[sl, None] + jn[sl, None] + c[None, :]) - d[sl, None]
            np.maximum.at(out, cost[keep], val[keep])


def trimmed_profile(summary: TrimmedSummary, levels: int, beta: float | None) -> FloatArray:
    """``Û_0..Û_K``: the largest computed ``g``-term over non-dominated configurations of cost ``≤ k``.

    With ``beta`` (the release's β; :func:`trimmed_smooth_bound`) the pad is the
    potential Φ of β₀ and the weighted maximum ``max_k e^{−kβ₀}(Û_k + E)`` equals the one
    over every configuration, the exact truncated bound of ``g + E`` (module docstring);
    ``Û_k`` itself is at most the ``g``-profile, not ``LS_k``. ``beta=None`` drops the pad
    (``g = LS``): the domination is then not proven and ``Û`` may in principle lie below
    ``LS_k`` (it has matched the exact profile in every test; never used for releases).
    Units of ``2^{k_t}``, shifted. O(K²) time, memory O(K + S + 2^19); the summary must
    have been read at radius ``≥`` :func:`trimmed_radius` ``(β, K)`` (else it raises).
    """
    n, trim, h = summary.n, summary.trim, summary.hi_u - summary.lo_u
    if not 0 <= levels <= MAX_LEVELS:
        raise InvalidArgument("trimmed_profile", "levels", levels, f"must be in [0, {MAX_LEVELS}]")
    _check_summary_args("trimmed_profile", trim, 0, h)
    if summary.ranks.size and (int(summary.ranks.min()) < 0 or int(summary.ranks.max()) >= n):
        raise InvalidArgument("trimmed_profile", "summary", "(ranks)", "must hold ranks in [0, n)")
    pot: _Potential | None = None
    if beta is not None:
        if not (math.isfinite(beta) and beta >= _MIN_BETA):
            raise InvalidArgument("trimmed_profile", "beta", beta, "must be a finite float >= 2**-15 (or None)")
        pot = _potential(beta, levels)
    out = np.full(levels + 1, -np.inf)
    t = _drop1(trim, n)
    radius = levels + (pot.horizon if pot is not None else 0) + _RADIUS_PAD
    for first, last in _union_windows(n, trim, radius):  # the summary holds every rank read (public check)
        lo_pos, hi_pos = np.searchsorted(summary.ranks, [first, last + 1])
        if int(hi_pos - lo_pos) != last + 1 - first:
            raise InvalidArgument("trimmed_profile", "summary", "(ranks)", f"must cover the ranks of trimmed_window_ranks at radius {radius}")
    mid_up = summary.mid_total - (n - 2 * t) * summary.lo_u
    rows = _regime_rows(n, trim, levels)
    with np.errstate(all="ignore"):
        for reflect, mid in ((False, mid_up), (True, (n - 2 * t) * h - mid_up)):
            side = _Side(_lookup(summary, reflect), n, t, radius, levels + 2, mid)
            for regime in rows:
                _fold_side(side, regime, h, pot, out)
    if n <= levels:
        out[n] = max(out[n], h / 2)  # the empty dataset: LS(∅) = H/2
    if 1 <= n <= levels + 1:  # {x_0} or {x_{n−1}}: removal gives the midpoint, addition the mean of two
        ends = _lookup(summary, False)(np.array([0, n - 1], dtype=np.int64)).tolist()
        out[n - 1] = max(out[n - 1], *(max(abs(v - h / 2), max(v, h - v) / 2) for v in ends))
    return np.maximum.accumulate(np.maximum(out, 0.0))


def trimmed_smooth_bound(summary: TrimmedSummary, beta: float, levels: int) -> float:
    """``Ŝ``: a β-smooth upper bound on the trimmed mean's add/remove ``LS``, in units of ``2^{k_t}``.

    ``truncated_smooth_bound(trimmed_profile(summary, K, β), β, H/2, TRIM_ERR_REL·H)``:
    ``T ≤ Ŝ ≤ e^{2^-16}·T`` for the exact truncated bound ``T`` of ``g + E`` at the public
    ``K = levels`` (module docstring; NRS07 Def. 2.1, Prop. 3.1, Lemma 2.3 hypotheses).
    """
    h = float(summary.hi_u - summary.lo_u)
    if h == 0:
        return 0.0
    err = TRIM_ERR_REL * h
    if beta < _MIN_BETA:  # truncated_smooth_bound returns the constant GS + E: the profile is not read
        return truncated_smooth_bound(np.zeros(levels + 1), beta, h / 2, err)
    return truncated_smooth_bound(trimmed_profile(summary, levels, beta), beta, h / 2, err)


def trimmed_value(summary: TrimmedSummary) -> Fraction:
    """The exact statistic in units of ``2^{k_t}``: the mean of the middle terms, ``(L + U)/2`` on empty data."""
    n = summary.n
    if not n:
        return Fraction(summary.lo_u + summary.hi_u, 2)
    return Fraction(summary.mid_total, n - 2 * _drop1(summary.trim, n))


def center_and_scale_from_summary(
    summary: TrimmedSummary, lower: Fraction, upper: Fraction, constants: Admissibility, lattice_k: int, levels: int
) -> tuple[int, Fraction]:
    """``(round(f(x)/2^k), (Ŝ·2^{k_t} + 2^k)/α)`` from a summary (both private).

    ``levels`` is the public K; the summary's order windows must have been read at a
    radius of at least :func:`trimmed_radius` ``(β, K)`` (else it raises).
    """
    unit = Fraction(2) ** trimmed_lattice_exponent(lower, upper)
    s_units = trimmed_smooth_bound(summary, float_floor(constants.beta), levels)
    s_prime = Fraction(s_units) * unit + Fraction(2) ** lattice_k  # exact: every float is a rational
    return round(trimmed_value(summary) * unit / Fraction(2) ** lattice_k), s_prime / constants.alpha


def trimmed_center_and_scale(
    query: Query, data: Dataset | Reductions, constants: Admissibility, lattice_k: int
) -> tuple[int, Fraction]:
    """``(a, scale)`` of a row-level clipped trimmed mean: ``round(f(x)/2^k)`` and ``S'(x)/α`` (both private).

    ``S' = Ŝ·2^{k_t} + 2^k`` with ``Ŝ`` = :func:`trimmed_smooth_bound` at the public
    ``K`` = :func:`trimmed_levels` ``(β, l, u, k)``; the ``2^k`` pays for rounding ``f`` to
    the lattice ``2^k`` (as for the mean: the release ``2^k(a + N)`` is post-processing of
    the ideal release of ``round(f)``, whose local sensitivity is ``≤ LS_f + 2^k``). Data
    through the reductions seam only (:func:`trimmed_summary`). Relation: one row of the
    column added or removed.

    Raises:
        InvalidArgument: not a row-level ``Query.trimmed_mean(col, trim) | Clip(l, u)`` with ``l < u``.
    """
    owner = "trimmed_center_and_scale"
    if query.kind != "trimmed_mean" or query.trim is None or query.column is None or query.user is not None:
        raise InvalidArgument(owner, "query", query, "must be a row-level Query.trimmed_mean(col, trim) | Clip(l, u)")
    lower, upper = query.require_bounds(owner)
    if not lower < upper:
        raise InvalidArgument(owner, "query", query, "needs a clip range with lower < upper")
    beta = float_floor(constants.beta)
    levels = trimmed_levels(beta, lower, upper, lattice_k)
    summary = trimmed_summary(data, query.column, lower, upper, query.trim, trimmed_radius(beta, levels))
    return center_and_scale_from_summary(summary, lower, upper, constants, lattice_k, levels)


def trimmed_center_and_scale_values(
    values: npt.ArrayLike, lower: Fraction, upper: Fraction, trim: Fraction, constants: Admissibility, lattice_k: int
) -> tuple[int, Fraction]:
    """:func:`trimmed_center_and_scale` over an in-memory array (users' clipped totals from ``unit_values``, tests)."""
    if not lower < upper:
        raise InvalidArgument("trimmed_center_and_scale_values", "upper", upper, f"must be > lower={lower}")
    beta = float_floor(constants.beta)
    levels = trimmed_levels(beta, lower, upper, lattice_k)
    summary = trimmed_summary_from_values(values, lower, upper, trim, trimmed_radius(beta, levels))
    return center_and_scale_from_summary(summary, lower, upper, constants, lattice_k, levels)
