"""Smooth sensitivity of a quantile of clipped data: exact ``LS_k``, the fast algorithms, the O(n²) reference.

For the quantile ``x[max(0, ⌈q·n⌉ − 1)]`` of data clipped to ``[lower, upper]``
(``lower`` on empty data, as in :mod:`dpalg.queries`):

* :func:`quantile_ls_k` -- the exact local sensitivity at distance ``k``: under
  substitution ``LS_k = max_{0≤t≤k+1} (x_{m+t} − x_{m+t−k−1})`` (NRS07 §3.1); under
  add/remove the maximum over the windows reachable with ``r`` removals and
  ``k − r`` additions (derived in ``docs/mechanisms/smooth_sensitivity.md``);
* :func:`smooth_sensitivity_quantile` -- ``S*_β = max_k e^{−kβ} LS_k`` in
  O(n log n) under substitution (NRS07 §3.1 divide and conquer over the monotone
  argmax) and level by level with a safe early stop under add/remove;
* :func:`smooth_sensitivity_quantile_quadratic` -- the O(n²) reference that
  evaluates every ``k ≤ n + 1``.

Every result is an upper bound that is itself β-smooth, by the rounding argument of
:mod:`dpalg.sensitivity._smooth` (helpers in :mod:`dpalg.sensitivity._smooth_rounding`).

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1, §3.1 median).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import check_relation
from dpalg.sensitivity._smooth_rounding import _BASE_SLACK, _EXP_REL, _MIN_BETA, FLOOR, FloatArray, IntArray, Relation
from dpalg.sensitivity._smooth_rounding import _beta, _beta0, _bounds, _finish, _gap_up, _padded, _q, _sorted, _weights

__all__ = ["quantile_ls_k", "smooth_sensitivity_quantile", "smooth_sensitivity_quantile_quadratic"]


# --- quantile: exact LS_k -------------------------------------------------------


def _m(q: Fraction, n: IntArray) -> IntArray:
    """1-based index of the q-quantile among ``n`` values; 0 for the empty set (value ``lower``)."""
    p, d = q.numerator, q.denominator
    ceil = -((-(p * n)) // d)
    return np.where(n > 0, np.maximum(1, ceil), 0)


def _allowed_gaps(q: Fraction, n: IntArray) -> tuple[IntArray, IntArray]:
    """``(gmin, gmax)`` of the gaps ``(i−1, i)``, ``i = m(N) + g``, one add/remove can realise.

    Adding one value moves the index by ``d1 = m(N+1) − m(N) ∈ {0, 1}`` and the
    quantile inside ``[y_{m−1}, y_m]`` (d1 = 0) or ``[y_m, y_{m+1}]`` (d1 = 1);
    removing one moves it by ``d0 = m(N) − m(N−1)`` and the quantile inside
    ``[y_{m−1}, y_m]`` (d0 = 1) or ``[y_m, y_{m+1}]`` (d0 = 0). The empty set can
    only grow (up gap).
    """
    d1 = _m(q, n + 1) - _m(q, n)
    d0 = _m(q, n) - _m(q, np.maximum(n - 1, 0))
    down = (n > 0) & ((d1 == 0) | (d0 == 1))
    up = (n == 0) | (d1 == 1) | (d0 == 0)
    gmin = np.where(down, 0, 1)
    gmax = np.where(up, 1, 0)
    return gmin.astype(np.int64), gmax.astype(np.int64)


def _ar_interval(q: Fraction, n: int, r: IntArray, k: IntArray) -> tuple[IntArray, IntArray]:
    """Lower ends ``lo`` of the windows ``(lo, lo + r + 1)`` reachable with r removals at distance k.

    With ``a = k − r`` additions (all of them below, ``s ≤ a``, or above), the
    dataset has ``N = n − r + a`` values and the window is
    ``lo ∈ [m(N) − 1 + gmin(N) − a, m(N) − 1 + gmax(N)] ∩ [0, n − r]``.
    """
    a = k - r
    big_n = n - r + a
    if big_n.size > 64:  # m(N) and the gaps depend on N only: tabulate the few distinct N once
        base = int(big_n.min())
        grid = np.arange(base, int(big_n.max()) + 1, dtype=np.int64)
        at = big_n - base
        m = _m(q, grid)[at]
        gmin_t, gmax_t = _allowed_gaps(q, grid)
        gmin, gmax = gmin_t[at], gmax_t[at]
    else:
        m = _m(q, big_n)
        gmin, gmax = _allowed_gaps(q, big_n)
    lo = np.maximum(0, m - 1 + gmin - a)
    hi = np.minimum(n - r, m - 1 + gmax)
    return lo, hi


def quantile_ls_k(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    k: int,
    relation: Relation,
) -> float:
    """Exact local sensitivity at distance ``k`` of the q-quantile (rounded up).

    Substitution (NRS07 §3.1): ``LS_k = max_{0≤t≤k+1} (x_{m+t} − x_{m+t−k−1})``.
    Add/remove: ``LS_k = max over r ≤ min(k, n) and lo ∈ I(r, k)`` of
    ``x_{lo+r+1} − x_lo`` (derivation in ``docs/mechanisms/smooth_sensitivity.md``).
    ``x`` is 1-based with ``x_0 = lower`` and ``x_{n+1} = upper``.

    Examples:
        >>> from dpalg.sensitivity._smooth_quantile import quantile_ls_k
        >>> quantile_ls_k([0, 1, 2, 3, 4, 5, 6], "1/2", 0, 10, 0, "substitution")
        1.0000000000000002
    """
    owner = "quantile_ls_k"
    rel = check_relation(relation, owner)
    qq = _q(q, owner)
    lo_b, hi_b = _bounds(lower, upper, owner)
    x = _sorted(sorted_values, lo_b, hi_b, owner)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InvalidArgument(owner, "k", k, "must be an int >= 0")
    return float(_ls_profile(x, qq, lo_b, hi_b, rel, np.array([int(k)], dtype=np.int64))[0])


def _ls_profile(x: FloatArray, q: Fraction, lower: float, upper: float, rel: Relation, ks: IntArray) -> FloatArray:
    """Rounded-up ``LS_k`` for each ``k`` in ``ks`` (O(n) per k; for tests and profiles)."""
    n = x.size
    xp = _padded(x, lower, upper)
    out = np.zeros(ks.size, dtype=np.float64)
    if rel == "substitution":
        if n == 0:
            return out
        m = int(_m(q, np.array([n]))[0])
        for idx, k in enumerate(ks.tolist()):
            t = np.arange(0, k + 2)
            hi = np.minimum(m + t, n + 1)
            lo = np.maximum(m + t - k - 1, 0)
            out[idx] = float(np.max(_gap_up(xp[hi], xp[lo])))
        return out
    for idx, k in enumerate(ks.tolist()):
        r = np.arange(0, min(k, n) + 1, dtype=np.int64)
        kk = np.full(r.size, k, dtype=np.int64)
        lo_a, lo_b = _ar_interval(q, n, r, kk)
        best = 0.0
        for rr, a, b in zip(r.tolist(), lo_a.tolist(), lo_b.tolist()):
            if a <= b:
                lo = np.arange(a, b + 1)
                best = max(best, float(np.max(_gap_up(xp[lo + rr + 1], xp[lo]))))
        out[idx] = best
    return out


class _Checked(NamedTuple):
    """The checked arguments of a quantile's smooth sensitivity."""

    relation: Relation
    q: Fraction
    beta: float
    padded: FloatArray  # [lower, x_1, …, x_n, upper] (bounds rounded outward)
    n: int
    cap: float  # upper − lower, rounded up: a bound on every LS_k


def _checked(
    owner: str, sorted_values: npt.ArrayLike, q: object, lower: object, upper: object, beta: object, relation: object
) -> _Checked | float:
    """The arguments checked (relation, q, β, bounds, then the data), or the answer when no ``LS_k`` is needed.

    The answer is 0.0 when the quantile cannot move (no data under substitution, where
    ``n`` is public, or ``lower == upper``), and the cap, rounded up, when ``β < 2⁻²⁰``
    (a constant that bounds every ``LS_k`` is a β-smooth upper bound).
    """
    rel = check_relation(relation, owner)
    qq = _q(q, owner)
    b = _beta(beta, owner)
    lo_b, hi_b = _bounds(lower, upper, owner)
    x = _sorted(sorted_values, lo_b, hi_b, owner)
    cap = float(_gap_up(hi_b, lo_b))
    if rel == "substitution" and x.size == 0:
        return 0.0
    if cap == 0:
        return 0.0
    if b < _MIN_BETA:
        return _finish(cap, 0.0)
    return _Checked(rel, qq, b, _padded(x, lo_b, hi_b), int(x.size), cap)


# --- quantile: O(n²) reference ---------------------------------------------------


def smooth_sensitivity_quantile_quadratic(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    beta: float,
    relation: Relation,
) -> float:
    """The O(n²) reference: ``max_k e^{−kβ₀} LS_k`` with every ``LS_k`` computed exactly.

    Same arguments, rounding and guarantee as :func:`smooth_sensitivity_quantile`
    (it evaluates every ``k ≤ n + 1`` and never stops early).

    Examples:
        >>> from dpalg.sensitivity._smooth_quantile import smooth_sensitivity_quantile_quadratic
        >>> round(smooth_sensitivity_quantile_quadratic(range(7), "1/2", 0, 10, 0.5, "substitution"), 5)
        1.56191
    """
    args = _checked("smooth_sensitivity_quantile_quadratic", sorted_values, q, lower, upper, beta, relation)
    if isinstance(args, float):
        return args
    rel, qq, b, xp, n, cap = args
    b0 = _beta0(b, _BASE_SLACK)
    best = 0.0
    if rel == "substitution":
        m = int(_m(qq, np.array([n]))[0])
        for k in range(n + 1):
            t = np.arange(0, k + 2)
            hi = np.minimum(m + t, n + 1)
            lo = np.maximum(m + t - k - 1, 0)
            ls_k = float(np.max(_gap_up(xp[hi], xp[lo])))
            best = max(best, float(_weights(np.array([k]), b0)[0]) * ls_k)
        return _finish(best, 0.0)
    # add/remove: for each number r of removals, the reachable lower ends form an
    # interval growing with k, so LS restricted to r is a running max from the centre
    kmax = n + 1
    ls = np.zeros(kmax + 1, dtype=np.float64)
    for r in range(0, n + 1):
        ks = np.arange(r, kmax + 1, dtype=np.int64)
        a, bb = _ar_interval(qq, n, np.full(ks.size, r, dtype=np.int64), ks)
        ok = a <= bb
        if not bool(np.any(ok)):
            continue
        first = int(np.argmax(ok))
        gaps = _gap_up(xp[r + 1 : n + 2], xp[0 : n + 1 - r])  # gaps[lo] for lo = 0..n-r
        c = int(a[first])  # a point of the first (smallest) interval
        left = np.maximum.accumulate(gaps[: c + 1][::-1])  # left[j] = max gaps[c-j..c]
        right = np.maximum.accumulate(gaps[c:])  # right[j] = max gaps[c..c+j]
        vals = np.maximum(left[c - a[first:]], right[bb[first:] - c])
        ls[ks[first:]] = np.maximum(ls[ks[first:]], vals)
    best = float(np.max(_weights(np.arange(kmax + 1), b0) * ls))
    return _finish(best, 0.0)


# --- quantile: fast ------------------------------------------------------------------


def smooth_sensitivity_quantile(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    beta: float,
    relation: Relation,
) -> float:
    """β-smooth sensitivity of the q-quantile of sorted data clipped to ``[lower, upper]``.

    The quantile is ``x[max(0, ⌈q·n⌉ − 1)]`` (0-based; ``q = 1/2`` is the lower
    median) and ``lower`` on empty data, as in :mod:`dpalg.queries`.

    * ``relation="substitution"`` (NRS07 §3.1, ``n`` public): with 1-based ``x``,
      ``x_0 = lower``, ``x_{n+1} = upper`` and ``m = max(1, ⌈q n⌉)``,
      ``S* = max_{0≤i≤m≤j≤n+1} (x_j − x_i)·e^{−β(j−i−1)}``. ``log(x_j − x_i)`` is
      supermodular in ``(i, j)`` (``(x_{j'}−x_i)(x_j−x_{i'}) ≤ (x_j−x_i)(x_{j'}−x_{i'})``
      for ``i<i'``, ``j<j'``) and the exponent is modular, so the largest argmax
      ``j*(i)`` is non-decreasing in ``i`` and divide and conquer over the rows
      finds every row maximum in O(n log n) (vectorised level by level). The
      rectangle is first cut to the widths that can still beat ``LS_0``
      (``e^{−β₀ w}(u − l) ≤ LS_0`` ⇒ width ``w`` is useless), which makes the pass
      near-linear on typical data.
    * ``relation="add_remove"``: exact ``LS_k`` of
      ``docs/mechanisms/smooth_sensitivity.md``, evaluated level by level over
      the Pareto-maximal windows (at most two per number of removals) with the
      early stop of :func:`smooth_sensitivity_from_profile`. Cost
      ``O(n + K·min(K, n))`` where ``K ≤ ln((u − l)/LS_0)/β₀`` is the stopping level
      (``K ≤ n + 1`` always). The NRS07 divide and conquer does not apply here: the
      distance ``k(i, j)`` is a max of linear forms, which is *supermodular*, so
      the argmax is not monotone (see the docs).

    Args:
        sorted_values: the clipped values, sorted ascending, NaN dropped.
        q: the quantile level in ``[0, 1]`` (exact: int, Fraction or decimal string).
        lower: the clipping lower bound.
        upper: the clipping upper bound.
        beta: the smoothing parameter ``β > 0``.
        relation: ``"substitution"`` or ``"add_remove"``.

    Returns:
        ``Ŝ ≥ S*_β(x)``, itself β-smooth (:mod:`dpalg.sensitivity._smooth`, "Rounding"); 0.0 only when
        the quantile is constant on the neighbourhood (``lower == upper``, or empty
        data under substitution).

    Raises:
        InvalidArgument: bad parameters, or data not sorted / not finite / outside
            ``[lower, upper]`` (the message never shows data).

    Examples:
        >>> from dpalg.sensitivity._smooth_quantile import smooth_sensitivity_quantile
        >>> [round(smooth_sensitivity_quantile(range(7), "1/2", 0, 10, b, "substitution"), 5) for b in (0.1, 0.5, 1)]
        [5.48812, 1.56191, 1.0]

    References:
        NRS07 §3.1 (median, O(n log n)); Def. 2.1, Prop. 3.1.
    """
    args = _checked("smooth_sensitivity_quantile", sorted_values, q, lower, upper, beta, relation)
    if isinstance(args, float):
        return args
    rel, qq, b, xp, n, cap = args
    if rel == "substitution":
        return _substitution_fast(xp, n, int(_m(qq, np.array([n]))[0]), b, cap)
    return _add_remove_fast(xp, n, qq, b, cap)


def _dc_error(beta: float, n: int) -> tuple[float, float]:
    """(η, D): per-candidate log-space error bound and recursion depth bound."""
    depth = max(1, (n + 2).bit_length()) + 1
    # |log gap| ≤ 745 (np.log ≤ 4 ulp), |v| ≤ 745 + β(n+2) (one rounding each for
    # the product-free sum and the subtraction), so η ≤ 2^-50·(3·745 + 2β(n+2))
    eta = 2.0**-50 * (3 * 745.0 + 2 * beta * (n + 2))
    return eta, float(depth)


def _substitution_fast(xp: FloatArray, n: int, m: int, beta: float, cap: float) -> float:
    eta, depth = _dc_error(beta, n)
    loss = (2 * depth + 1) * eta  # what the D&C comparisons can lose (log space)
    slack = _BASE_SLACK + 2 * loss + 2 * _EXP_REL  # width of [T, Ŝ] must fit in β − β₀
    b0 = _beta0(beta, slack)
    if b0 < _MIN_BETA / 2:
        return _finish(cap, 0.0)
    # LS_k = 0 while every width-(k+1) window around m stays inside the run of ties
    # [a, b] holding x_m, i.e. for k < k1 = min(m − a, b − m); LS_{k1} > 0 (xp is
    # sorted, padding included). best0 = e^{−β₀k1}·LS_{k1} is a valid term, and a
    # width w = j − i can only beat it if e^{−β₀(w−1)}·cap > best0.
    a = int(np.searchsorted(xp, xp[m], side="left"))
    b = int(np.searchsorted(xp, xp[m], side="right")) - 1
    k1 = min(m - a, b - m)
    t = np.arange(0, k1 + 2)
    ls1 = float(np.max(_gap_up(xp[np.minimum(m + t, n + 1)], xp[np.maximum(m + t - k1 - 1, 0)])))
    if ls1 > 0:
        log_best0 = math.log(ls1) - b0 * k1
        wmax = int(math.floor((math.log(cap) - log_best0) / b0)) + 2
    else:  # pragma: no cover - k1 reaches the padding, where the gap is u − l > 0
        log_best0, wmax = -math.inf, n + 1
    i_lo, j_hi = max(0, m - wmax), min(n + 1, m + wmax)
    best_log = max(_monotone_dc(xp, i_lo, m, m, j_hi, b0), log_best0)
    if best_log == -math.inf:
        return FLOOR
    return _finish(math.exp(best_log), loss + 2.0**-45)


def _monotone_dc(xp: FloatArray, r0: int, r1: int, c0: int, c1: int, b0: float) -> float:
    """max over rows i ∈ [r0, r1], cols j ∈ [c0, c1], j ≥ i of log gap − β₀(j − i − 1)."""
    best = -math.inf
    rows_lo = np.array([r0], dtype=np.int64)
    rows_hi = np.array([r1], dtype=np.int64)
    cols_lo = np.array([c0], dtype=np.int64)
    cols_hi = np.array([c1], dtype=np.int64)
    with np.errstate(divide="ignore"):
        while rows_lo.size:
            mid = (rows_lo + rows_hi) // 2
            lens = cols_hi - cols_lo + 1
            starts = np.zeros(lens.size, dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            total = int(lens.sum())
            seg = np.repeat(np.arange(lens.size), lens)
            j = np.arange(total, dtype=np.int64) - starts[seg] + cols_lo[seg]
            i = mid[seg]
            gap = _gap_up(xp[j], xp[i])
            v = np.log(gap) - b0 * (j - i - 1).astype(np.float64)
            segmax = np.maximum.reduceat(v, starts)
            best = max(best, float(np.max(segmax)))
            # largest argmax per segment (needed when a row is all −inf)
            cand = np.where(v == segmax[seg], j, -1)
            jstar = np.maximum.reduceat(cand, starts)
            # children: rows [lo, mid−1] × cols [c_lo, j*], rows [mid+1, hi] × cols [j*, c_hi]
            left = mid - 1 >= rows_lo
            right = mid + 1 <= rows_hi
            rows_lo = np.concatenate([rows_lo[left], mid[right] + 1])
            rows_hi = np.concatenate([mid[left] - 1, rows_hi[right]])
            cols_lo = np.concatenate([cols_lo[left], jstar[right]])
            cols_hi = np.concatenate([jstar[left], cols_hi[right]])
    return best


def _ar_levels(xp: FloatArray, n: int, q: Fraction, ks: IntArray) -> FloatArray:
    """Rounded-up ``LS_k`` (add/remove) for each ``k`` of ``ks``, over Pareto-maximal windows only.

    A window ``(lo, lo + r + 1)`` is dominated (contained in another window of the
    same level) when ``lo − 1`` or ``lo`` is a reachable lower end for ``r + 1``
    removals, i.e. ``lo ∈ [a', b' + 1]`` with ``I(r + 1, k) = [a', b']``. What is left
    of ``I(r, k) = [a, b]`` is a left part ``[a, a' − 1]`` and a right part
    ``[b' + 2, b]`` of at most two points each (``a' − a ≤ 1`` and ``b − b' ≤ 3`` by the
    unit steps of ``m``; checked below), so both ends of each part suffice.
    """
    counts = np.minimum(ks, n) + 1
    kk = np.repeat(ks, counts)
    offs = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=offs[1:])
    level = np.repeat(np.arange(ks.size), counts)
    r = np.arange(int(counts.sum()), dtype=np.int64) - offs[level]
    a, b = _ar_interval(q, n, r, kk)
    a2, b2 = _ar_interval(q, n, np.minimum(r + 1, n), kk)
    has_next = (r + 1 <= np.minimum(kk, n)) & (a2 <= b2)
    left_end = np.where(has_next, np.minimum(b, a2 - 1), b)
    right_start = np.where(has_next, np.maximum(a, b2 + 2), b + 1)
    left_ok = a <= left_end
    right_ok = right_start <= b
    if bool(np.any(left_ok & (left_end - a > 1))) or bool(np.any(right_ok & (b - right_start > 1))):
        raise AssertionError("add/remove frontier part larger than two points")  # pragma: no cover
    cand_lo = np.concatenate([a, left_end, right_start, b])
    ok = np.concatenate([left_ok, left_ok, right_ok, right_ok])
    cand_r = np.tile(r, 4)[ok]
    cand_level = np.tile(level, 4)[ok]
    lo = cand_lo[ok]
    gaps = _gap_up(xp[lo + cand_r + 1], xp[lo])
    out = np.zeros(ks.size, dtype=np.float64)
    np.maximum.at(out, cand_level, gaps)
    return out


def _add_remove_fast(xp: FloatArray, n: int, q: Fraction, beta: float, cap: float) -> float:
    b0 = _beta0(beta, _BASE_SLACK)
    kmax = n + 1  # LS_k = u − l once k ≥ n (remove everything, then add one value)

    def ls1(k: int) -> float:
        return float(_ar_levels(xp, n, q, np.array([k], dtype=np.int64))[0])

    # skip the levels with LS_k = 0 (long runs of ties): LS_k is non-decreasing in
    # k, so the first positive level is found by exponential + binary search
    k = 0
    if ls1(0) == 0:
        hi = 1
        while hi < kmax and ls1(hi) == 0:
            hi = min(kmax, 2 * hi)
        lo = hi // 2  # LS_lo == 0 < LS_hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ls1(mid) == 0:
                lo = mid
            else:
                hi = mid
        k = hi
    best = 0.0
    chunk = 16
    while k <= kmax:
        budget = max(1, (1 << 21) // (min(k, n) + 1))
        k_end = min(kmax, k + min(chunk, budget) - 1)
        ks = np.arange(k, k_end + 1, dtype=np.int64)
        terms = _weights(ks, b0) * _ar_levels(xp, n, q, ks)
        best = max(best, float(np.max(terms)))
        # early stop (proof in smooth_sensitivity_from_profile): no later level can win
        if math.exp(-b0 * float(k_end)) * cap * (1 - _EXP_REL) <= best:
            break
        k = k_end + 1
        chunk = max(16, k // 8)  # geometric growth of 1/8: the stop overshoots by at most ~1/8 of the levels
    return _finish(best, 0.0)
