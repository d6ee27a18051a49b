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

The quantile algorithms are in :mod:`dpalg.sensitivity._smooth_quantile`, the argument
checks and the rounding helpers in :mod:`dpalg.sensitivity._smooth_rounding`.

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
from typing import Final, cast

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import check_relation
from dpalg.sensitivity._smooth_quantile import smooth_sensitivity_quantile
from dpalg.sensitivity._smooth_rounding import _BASE_SLACK, _EXP_REL, _MIN_BETA, FloatArray, IntArray, _beta, _bounds, _finish

# mechanisms/_smooth_profile.py, mechanisms/_smooth_trimmed.py and their tests import these three from here
from dpalg.sensitivity._smooth_rounding import FLOOR as FLOOR
from dpalg.sensitivity._smooth_rounding import _beta0 as _beta0
from dpalg.sensitivity._smooth_rounding import _weights as _weights

__all__ = [
    "ORDER_KINDS",
    "order_statistic",
    "smooth_sensitivity",
    "smooth_sensitivity_from_profile",
    "smooth_sensitivity_quantile",
]


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
    rel = check_relation(relation, owner)
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
