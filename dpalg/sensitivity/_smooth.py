"""Smooth sensitivity (Nissim, Raskhodnikova and Smith 2007), computed as an upper bound.

For a query ``f`` and ``β > 0`` the β-smooth sensitivity is (NRS07 Def. 2.1,
Prop. 3.1 / Def. 3.1)::

    S*_β(x) = max_{k ≥ 0} e^{−kβ} · LS_k(x),   LS_k(x) = max_{y : d(x, y) ≤ k} LS(y).

It is the smallest β-smooth upper bound on the local sensitivity: ``LS(x) ≤ S(x)``
and ``S(x) ≤ e^β S(y)`` for neighbours ``x, y``. Any profile ``U_k`` with
``LS(x) ≤ U_0(x)`` and ``U_k(x) ≤ U_{k+1}(y)`` for neighbours gives a β-smooth bound
``max_k w_k U_k(x)`` as soon as the weights satisfy ``w_0 ≥ 1`` and
``w_k ≤ e^β w_{k+1}`` (same one-line proof as NRS07 Prop. 3.1:
``w_k U_k(x) ≤ w_k U_{k+1}(y) ≤ e^β w_{k+1} U_{k+1}(y)``). This module uses that
freedom to make floating point err **upward** only (see "Rounding" below).

Entry points (:func:`smooth_sensitivity` dispatches any catalog query to them):

* :func:`smooth_sensitivity_from_profile` -- any query, from a function giving
  (an upper bound on) ``LS_k``, with a provably safe early stop;
* :func:`smooth_sensitivity_quantile` -- the quantile ``x[max(0, ⌈q·n⌉ − 1)]``
  (the lower median for ``q = 1/2``) of data clipped to ``[lower, upper]``, under
  substitution (O(n log n): NRS07 §3.1 divide and conquer over the monotone argmax)
  or add/remove (exact ``LS_k`` derived in ``docs/mechanisms/smooth_sensitivity.md``);
* :func:`smooth_sensitivity_quantile_quadratic` -- the O(n²) reference.

Rounding (why every returned value is an upper bound that is still β-smooth):

1. ``β`` is replaced by ``β₀ < β``: ``β`` minus a slack (below), rounded *down* to
   21 significant bits, so ``β₀·k`` is an exact float product for every ``k < 2³²``
   (no error in any exponent). A smaller ``β`` only increases the weights.
2. Every gap ``x_j − x_i`` is rounded up with :func:`numpy.nextafter`; the map
   "exact gap ↦ rounded-up gap" is monotone, so the rounded profile still
   satisfies ``U_k(x) ≤ U_{k+1}(y)``.
3. ``e^{−β₀ k}`` (``numpy.exp``, assumed accurate to 4 ulp = relative ``2⁻⁵⁰``) and
   the product with the gap (``2⁻⁵³``) are evaluated to nearest and the result is
   inflated by a factor that dominates their error; in the substitution divide
   and conquer (log space) the inflation also covers the comparisons' errors,
   ``(2D + 1)·η`` for a recursion depth ``D`` and a per-candidate error ``η``.
4. Values below ``FLOOR = 2⁻⁹⁰⁰`` are replaced by ``FLOOR`` (a constant is 0-smooth,
   and the max of β-smooth functions is β-smooth), so no underflow can ever report
   zero or less than the truth.

The computed value ``Ŝ`` then satisfies ``T(x) ≤ Ŝ(x) ≤ e^{c} T(x)`` where ``T`` is
the exact β₀-smooth bound built from the rounded-up profile and ``c`` the inflation;
the slack is chosen ``≥ c``, so ``Ŝ`` is β-smooth and ``Ŝ ≥ T ≥ S*_β ≥ LS``.
The inflation depends only on public quantities (``β``, and ``n`` under
substitution where ``n`` is public). For ``β < 2⁻²⁰`` the functions return the cap
(``upper − lower`` or ``ls_cap``): a constant is a valid smooth upper bound.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1, §3.1 median).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Final, Literal, cast

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import to_fraction

__all__ = [
    "ORDER_KINDS",
    "Relation",
    "order_statistic",
    "smooth_sensitivity",
    "smooth_sensitivity_from_profile",
    "smooth_sensitivity_quantile",
    "smooth_sensitivity_quantile_quadratic",
    "quantile_ls_k",
]

Relation = Literal["add_remove", "substitution"]

#: smallest value ever returned when the true smooth sensitivity is positive
FLOOR: Final = 2.0**-900
_MIN_BETA: Final = 2.0**-20
_BETA_BITS: Final = 21
_EXP_REL: Final = 2.0**-48  # covers exp (4 ulp) + product (1/2 ulp) with room
_BASE_SLACK: Final = 2.0**-44
_MAX_N: Final = 2**31

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


# --- parameters ------------------------------------------------------------------


def _beta(beta: object, owner: str) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, "beta", beta, "must be a positive real number")
    b = float(beta)
    if not math.isfinite(b) or b <= 0:
        raise InvalidArgument(owner, "beta", beta, "must be finite and > 0")
    return b


def _beta0(beta: float, slack: float) -> float:
    """β minus ``slack``, rounded down to 21 significant bits (0.0 if not positive)."""
    b = beta - slack
    if b <= 0:
        return 0.0
    mant, exp = math.frexp(b)
    scaled = math.floor(mant * 2.0**_BETA_BITS)
    if scaled * 2.0 ** (exp - _BETA_BITS) >= beta:  # pragma: no cover - floor cannot round up
        scaled -= 1
    return math.ldexp(scaled, exp - _BETA_BITS)


def _relation(relation: object, owner: str) -> Relation:
    if relation == "substitution":
        return "substitution"
    if relation == "add_remove":
        return "add_remove"
    raise InvalidArgument(owner, "relation", relation, "must be 'add_remove' or 'substitution'")


def _q(q: object, owner: str) -> Fraction:
    qq = to_fraction(q, owner=owner, field="q")
    if not 0 <= qq <= 1:
        raise InvalidArgument(owner, "q", q, "must be in [0, 1]")
    if qq.denominator > 2**31:
        qq = qq.limit_denominator(2**31)  # pragma: no cover - exotic floats
        raise InvalidArgument(owner, "q", q, "must have a denominator <= 2**31 (pass a Fraction)")
    return qq


def _bounds(lower: object, upper: object, owner: str) -> tuple[float, float]:
    """Bounds as floats, rounded outward (a wider range only enlarges every gap)."""
    lo = to_fraction(lower, owner=owner, field="lower")
    hi = to_fraction(upper, owner=owner, field="upper")
    if lo > hi:
        raise InvalidArgument(owner, "lower", lower, f"must be <= upper={upper}")
    lf, hf = float(lo), float(hi)
    if Fraction(lf) > lo:
        lf = float(np.nextafter(lf, -np.inf))
    if Fraction(hf) < hi:
        hf = float(np.nextafter(hf, np.inf))
    if not (math.isfinite(lf) and math.isfinite(hf)):
        raise InvalidArgument(owner, "lower/upper", (lower, upper), "must be finite as float64")
    return lf, hf


def _sorted(values: npt.ArrayLike, lower: float, upper: float, owner: str) -> FloatArray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise InvalidArgument(owner, "sorted_values", f"ndim={x.ndim}", "must be 1-D")
    if x.size > _MAX_N:
        raise InvalidArgument(owner, "sorted_values", f"size={x.size}", f"must have at most {_MAX_N} entries")
    if x.size:
        # messages never print data values
        if not bool(np.all(np.isfinite(x))):
            raise InvalidArgument(owner, "sorted_values", "<data>", "must be finite (drop NaN first)")
        if x[0] < lower or x[-1] > upper:
            raise InvalidArgument(owner, "sorted_values", "<data>", "must lie in [lower, upper] (clip first)")
        if x.size > 1 and not bool(np.all(x[1:] >= x[:-1])):
            raise InvalidArgument(owner, "sorted_values", "<data>", "must be sorted ascending")
    return x


def _padded(x: FloatArray, lower: float, upper: float) -> FloatArray:
    """``[l, x_1, …, x_n, u]``: 1-based order statistics with NRS07's padding."""
    out = np.empty(x.size + 2, dtype=np.float64)
    out[0] = lower
    out[1:-1] = x
    out[-1] = upper
    return out


def _gap_up(hi: FloatArray | float, lo: FloatArray | float) -> FloatArray:
    """Rounded-up ``hi − lo`` for ``hi ≥ lo``: 0 exactly when the gap is 0 (monotone)."""
    d = np.subtract(hi, lo, dtype=np.float64)
    return np.where(d > 0, np.nextafter(d, np.inf), 0.0)


def _finish(value: float, inflate_log: float) -> float:
    """Apply the documented upward inflation and the floor."""
    if not value > 0:
        return FLOOR
    out = math.exp(math.log(value) + inflate_log) if inflate_log else value
    out = float(np.nextafter(out * (1.0 + _EXP_REL), np.inf))
    return max(out, FLOOR)


def _weights(k: IntArray | FloatArray, beta0: float) -> FloatArray:
    # beta0 has 21 significant bits, k < 2**32: the product is exact
    return np.exp(-beta0 * np.asarray(k, dtype=np.float64))


# --- generic ---------------------------------------------------------------------


def smooth_sensitivity_from_profile(
    ls_at: Callable[[int], float] | Callable[[IntArray], FloatArray],
    beta: float,
    *,
    ls_cap: float,
    k_max: int,
    vectorised: bool = False,
) -> float:
    """β-smooth upper bound ``max_k e^{−kβ}·LS_k(x)`` from a profile of ``LS_k``.

    Early stop: the loop over ``k = 0, 1, …`` stops as soon as
    ``e^{−kβ₀}·ls_cap ≤ best`` (``best`` = largest term so far). This is safe because
    ``ls_cap ≥ LS_j`` for every ``j``, so for every ``j ≥ k``:
    ``e^{−jβ₀} LS_j ≤ e^{−kβ₀} ls_cap ≤ best`` -- no later term can exceed ``best``.
    If ``k_max`` is reached first, the tail ``j > k_max`` is bounded by the constant
    ``e^{−(k_max+1)β₀}·ls_cap``, which is included in the max (the max of a β-smooth
    function and a constant is β-smooth), so the result never under-reports.

    Args:
        ls_at: ``k ↦ LS_k(x)`` (or an upper bound ``U_k`` with ``U_0 ≥ LS`` and
            ``U_k(x) ≤ U_{k+1}(y)`` for neighbours). With ``vectorised=True`` it takes
            an int64 array of ``k`` and returns a float64 array.
        beta: the smoothing parameter ``β > 0``.
        ls_cap: an upper bound on every ``LS_k`` (e.g. the global sensitivity).
        k_max: the largest ``k`` evaluated (``LS_k`` for ``k ≥`` the dataset size is
            usually the cap already).
        vectorised: whether ``ls_at`` is vectorised.

    Returns:
        A value ``≥ S*_β(x)`` that is itself β-smooth (module docstring, "Rounding").

    Raises:
        InvalidArgument: bad ``beta``, ``ls_cap``, ``k_max``, or a profile value that is
            negative, not finite or above ``ls_cap``.

    Examples:
        >>> from dpalg.sensitivity._smooth import smooth_sensitivity_from_profile
        >>> s = smooth_sensitivity_from_profile(lambda k: min(1.0 + k, 10.0), 0.5, ls_cap=10.0, k_max=100)
        >>> round(s, 5)  # max_k e^{-k/2} (1 + k) = 2/sqrt(e), at k = 1, rounded up
        1.21306

    References:
        NRS07, Def. 2.1 and Prop. 3.1 (smooth sensitivity from ``LS_k``).
    """
    owner = "smooth_sensitivity_from_profile"
    b = _beta(beta, owner)
    cap = float(ls_cap)
    if not math.isfinite(cap) or cap < 0:
        raise InvalidArgument(owner, "ls_cap", ls_cap, "must be finite and >= 0")
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or not 0 <= int(k_max) < 2**32:
        raise InvalidArgument(owner, "k_max", k_max, "must be an int in [0, 2**32)")
    kmax = int(k_max)
    if cap == 0:
        return 0.0
    if b < _MIN_BETA:
        return _finish(cap, 0.0)
    b0 = _beta0(b, _BASE_SLACK)
    best = 0.0
    k = 0
    chunk = 64
    while k <= kmax:
        hi = min(kmax, k + chunk - 1)
        ks = np.arange(k, hi + 1, dtype=np.int64)
        if vectorised:
            vals = np.asarray(cast(Callable[[IntArray], FloatArray], ls_at)(ks), dtype=np.float64)
        else:
            f = cast(Callable[[int], float], ls_at)
            vals = np.array([float(f(int(j))) for j in ks.tolist()], dtype=np.float64)
        if vals.shape != ks.shape:
            raise InvalidArgument(owner, "ls_at", f"shape={vals.shape}", f"must return one value per k (expected {ks.shape})")
        if not bool(np.all(np.isfinite(vals))) or bool(np.any(vals < 0)) or bool(np.any(vals > cap)):
            raise InvalidArgument(owner, "ls_at", "<profile>", "must return finite values in [0, ls_cap]")
        w = _weights(ks, b0)
        terms = w * vals
        best = max(best, float(np.max(terms)))
        # stop once no later term can exceed best (docstring proof); test with the
        # last weight of the chunk, lowered by the rounding margin (conservative)
        stop = np.nonzero(w * cap * (1 - _EXP_REL) <= best)[0]
        if stop.size:
            return _finish(best, 0.0)
        k = hi + 1
        chunk = min(chunk * 2, 1 << 20)
    tail = math.exp(-b0 * float(kmax + 1)) * cap
    return _finish(max(best, tail), 0.0)


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
        >>> from dpalg.sensitivity._smooth import quantile_ls_k
        >>> quantile_ls_k([0, 1, 2, 3, 4, 5, 6], "1/2", 0, 10, 0, "substitution")
        1.0000000000000002
    """
    owner = "quantile_ls_k"
    rel = _relation(relation, owner)
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
        >>> from dpalg.sensitivity._smooth import smooth_sensitivity_quantile_quadratic
        >>> round(smooth_sensitivity_quantile_quadratic(range(7), "1/2", 0, 10, 0.5, "substitution"), 5)
        1.56191
    """
    owner = "smooth_sensitivity_quantile_quadratic"
    rel = _relation(relation, owner)
    qq = _q(q, owner)
    b = _beta(beta, owner)
    lo_b, hi_b = _bounds(lower, upper, owner)
    x = _sorted(sorted_values, lo_b, hi_b, owner)
    n = x.size
    cap = float(_gap_up(hi_b, lo_b))
    if rel == "substitution" and n == 0:
        return 0.0
    if cap == 0:
        return 0.0
    if b < _MIN_BETA:
        return _finish(cap, 0.0)
    b0 = _beta0(b, _BASE_SLACK)
    xp = _padded(x, lo_b, hi_b)
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
        ``Ŝ ≥ S*_β(x)``, itself β-smooth (module docstring, "Rounding"); 0.0 only when
        the quantile is constant on the neighbourhood (``lower == upper``, or empty
        data under substitution).

    Raises:
        InvalidArgument: bad parameters, or data not sorted / not finite / outside
            ``[lower, upper]`` (the message never shows data).

    Examples:
        >>> from dpalg.sensitivity._smooth import smooth_sensitivity_quantile
        >>> [round(smooth_sensitivity_quantile(range(7), "1/2", 0, 10, b, "substitution"), 5) for b in (0.1, 0.5, 1)]
        [5.48812, 1.56191, 1.0]

    References:
        NRS07 §3.1 (median, O(n log n)); Def. 2.1, Prop. 3.1.
    """
    owner = "smooth_sensitivity_quantile"
    rel = _relation(relation, owner)
    qq = _q(q, owner)
    b = _beta(beta, owner)
    lo_b, hi_b = _bounds(lower, upper, owner)
    x = _sorted(sorted_values, lo_b, hi_b, owner)
    n = x.size
    cap = float(_gap_up(hi_b, lo_b))
    if rel == "substitution" and n == 0:
        return 0.0
    if cap == 0:
        return 0.0
    if b < _MIN_BETA:
        return _finish(cap, 0.0)
    xp = _padded(x, lo_b, hi_b)
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


# --- any catalog query ------------------------------------------------------------------

#: kinds with the rigorous order-statistic path (the others use the catalog's LS_k)
ORDER_KINDS: Final = ("median", "quantile", "max", "min")


def order_statistic(query: object, owner: str) -> tuple[Fraction, Fraction, Fraction, bool]:
    """``(q, lower, upper, negate)`` of a clipped order-statistic query.

    ``max`` is the quantile ``q = 1`` (value ``lower`` on empty data, as in
    :mod:`dpalg.queries`); ``min`` is ``−max(−x)`` on ``[−upper, −lower]`` (negation is
    exact in floating point, and the empty value ``upper`` maps to ``−upper``).
    """
    from dpalg.queries import Query

    if not isinstance(query, Query) or query.kind not in ORDER_KINDS:
        raise InvalidArgument(owner, "query", query, f"must be a Query of kind {ORDER_KINDS}")
    if query.user is not None:
        raise InvalidArgument(owner, "query", query, "must be row-level")
    lower, upper = query.require_bounds(owner)
    if query.kind == "min":
        return Fraction(1), -upper, -lower, True
    q = Fraction(1) if query.kind == "max" else (query.q if query.q is not None else Fraction(1, 2))
    return q, lower, upper, False


def smooth_sensitivity(query: object, values: npt.ArrayLike, beta: float, relation: str = "substitution") -> float:
    """The β-smooth sensitivity ``S*_β(x) = max_k e^{−kβ} LS_k(x)`` of a catalog query.

    Relation: ``"substitution"`` (default; ``n`` is public) or ``"add_remove"`` of one
    value. ``values`` is the query's column as a 1-D array: NaN are dropped and the
    values clipped to the query's range, as :meth:`Query.values` does.

    * median, quantile, max, min (clipped): the exact O(n log n) / near-linear
      algorithms of :func:`smooth_sensitivity_quantile`; the result is a rigorous
      upper bound that is itself β-smooth (module docstring, "Rounding").
    * count, sum, mean, count_distinct, histogram: the catalog's exact ``LS_k``
      (:func:`dpalg.sensitivity._catalog.ls_profile`) through
      :func:`smooth_sensitivity_from_profile` (early stop at the global sensitivity).
      The catalog evaluates ``LS_k`` in floating point without outward rounding, so
      this value is exact up to a few ulps but not certified; mechanism nodes use
      only the order-statistic path.

    Args:
        query: a row-level :class:`~dpalg.queries.Query` (e.g.
            ``Query.median("x") | Clip(0, 10)``).
        values: the column's values (1-D).
        beta: ``β > 0``.
        relation: ``"substitution"`` or ``"add_remove"``.

    Returns:
        ``S*_β(x)`` as a float.

    Raises:
        InvalidArgument: a query without ``LS_k`` here (mode, trimmed mean, user-level),
            an unclipped query, bad ``beta`` or ``relation``.

    Examples:
        >>> from dpalg.queries import Clip, Query
        >>> med = Query.median("x") | Clip(0, 10)
        >>> [round(smooth_sensitivity(med, range(7), b), 5) for b in (0.1, 0.5, 1)]
        [5.48812, 1.56191, 1.0]
        >>> round(smooth_sensitivity(Query.count(), [1.0, 2.0], 0.5, "add_remove"), 6)
        1.0

    References:
        NRS07 Def. 2.1, Prop. 3.1 and §3.1 (median).
    """
    from dpalg.queries import Query
    from dpalg.sensitivity._catalog import CATALOG_KINDS, global_sensitivity, ls_profile

    owner = "smooth_sensitivity"
    rel = _relation(relation, owner)
    b = _beta(beta, owner)
    if not isinstance(query, Query):
        raise InvalidArgument(owner, "query", type(query).__name__, "must be a dpalg Query")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InvalidArgument(owner, "values", f"ndim={arr.ndim}", "must be 1-D")
    arr = arr[~np.isnan(arr)]
    if query.kind in ORDER_KINDS:
        q, lower, upper, negate = order_statistic(query, owner)
        lo_b, hi_b = _bounds(lower, upper, owner)
        x = np.sort(np.clip(-arr if negate else arr, lo_b, hi_b))
        return smooth_sensitivity_quantile(x, q, lower, upper, b, rel)
    if query.kind not in CATALOG_KINDS or query.user is not None:
        raise InvalidArgument(owner, "query", query, f"has no LS_k in the catalog; supported: {CATALOG_KINDS} (row-level)")
    if query.lower is not None and query.upper is not None:
        lo_b, hi_b = _bounds(query.lower, query.upper, owner)
        arr = np.clip(arr, lo_b, hi_b)
    gs = float(global_sensitivity(query, rel))
    if not math.isfinite(gs):
        raise InvalidArgument(owner, "query", query, "has infinite global sensitivity: add | Clip(lower, upper)")
    cap = gs * (1 + 2.0**-40)
    # beyond k_max the constant cap·e^{−(k_max+1)β} ≤ e^{−50}·cap bounds the tail
    k_max = min(int(arr.size) + 2 + math.ceil(50 / b), 2**31)
    cache: list[FloatArray] = [np.zeros(0)]

    def ls_at(ks: IntArray) -> FloatArray:
        top = int(ks.max())
        if cache[0].size <= top:
            cache[0] = ls_profile(query, arr, min(k_max, max(2 * top, 64)), rel)
        return np.minimum(cache[0][ks], cap)

    return smooth_sensitivity_from_profile(ls_at, b, ls_cap=cap, k_max=k_max, vectorised=True)
