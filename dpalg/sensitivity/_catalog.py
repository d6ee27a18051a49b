"""The local-sensitivity catalog: GS, LS_k, LS profiles and PTR distances of row-level queries.

Model (both relations): a dataset is the multiset ``x`` of non-missing, clipped
values in ``[a, b] = [query.lower, query.upper]`` (what :meth:`Query.values`
returns). ``"add_remove"`` neighbours add or remove one value; ``"substitution"``
neighbours replace one value by another value of ``[a, b]`` (so ``n`` is public
under substitution: if a row may turn missing, use ``"add_remove"``).

``LS(y) = max_{z ~ y} |f(y) − f(z)|`` and ``LS_k(x) = max_{d(x, y) ≤ k} LS(y)``
(Nissim–Raskhodnikova–Smith 2007, Def. 2.1 and 3.1; seed 002 "A(f, x, k)").
Formulas and proof sketches: ``docs/mechanisms/local_sensitivity.md``. Every
formula is tested against brute force over all datasets within distance k on a
small domain (``tests/sensitivity/test_catalog.py``). The trimmed mean and the mode
live in :mod:`~dpalg.sensitivity._ls_trimmed` and :mod:`~dpalg.sensitivity._ls_mode`.

Overflow: every profile is computed on data scaled by an exact power of two and
scaled back; a non-finite result is ``+inf`` (never NaN, never a warning or an
exception): see ``docs/mechanisms/local_sensitivity.md`` ("Overflow and NaN policy").

Sorted data ``x_0 ≤ … ≤ x_{n−1}`` is padded with ``x_p = a`` for ``p < 0`` and
``x_p = b`` for ``p ≥ n``.

Trimmed mean and mode: the value domain is the real interval ``[a, b]`` (a new
value may be any real in it, so a value not in the data is always available).
The mode of the empty dataset is undefined (``nan``, :func:`~dpalg.queries.evaluate_values`),
so under add/remove a dataset with at most one value has ``LS = +inf``; the mode's
LS_k uses only ``a``, ``b`` and the data values, hence it is also exact for any
finite domain containing them (and an upper bound for one without ``a`` or ``b``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data import Relation
from dpalg.data._dataset import check_relation
from dpalg.queries import Query
from dpalg.sensitivity._ls_common import FloatArray, _pad, _val
from dpalg.sensitivity._ls_mean import _mean_ls, _mean_ls_profile
from dpalg.sensitivity._ls_mode import _mode_profile
from dpalg.sensitivity._ls_trimmed import _tm_ar_ls, _tm_ar_profile, _tm_sub_profile

__all__ = [
    "CATALOG_KINDS",
    "distance_to_instability",
    "global_sensitivity",
    "local_sensitivity_at_distance",
    "ls_profile",
    "mode_gap_distance",
    "mode_gap_distance_counts",
    "overflow_safe_mean",
]


#: kinds with an exact LS_k in this catalog (mode and trimmed mean need ``| Clip(lower, upper)``)
CATALOG_KINDS: tuple[str, ...] = (
    "count", "sum", "mean", "median", "quantile", "max", "min", "count_distinct", "histogram", "trimmed_mean", "mode",
)


def _kind(owner: str, query: Query) -> str:
    if not isinstance(query, Query):
        raise InvalidArgument(owner, "query", type(query).__name__, "must be a dpalg Query")
    if query.user is not None:
        raise InvalidArgument(owner, "query", query, "is user-level; this catalog is row-level (see _down_sens)")
    if query.kind not in CATALOG_KINDS:
        raise InvalidArgument(owner, "query", query, f"kind {query.kind!r} has no exact LS_k here; supported: {CATALOG_KINDS}")
    return query.kind


def _bounds(owner: str, query: Query) -> tuple[float, float]:
    """The clip bounds as floats; ±inf when a bound is beyond the float range (the profile is then +inf)."""
    if query.kind in ("count", "count_distinct", "histogram"):
        return 0.0, 0.0
    lo, hi = query.require_bounds(owner)
    return _to_float(lo), _to_float(hi)


def _to_float(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _scale_exponent(a: float, b: float) -> int:
    """e such that every value of [a, b] times 2^-e has magnitude < 1 (0 when a = b = 0).

    Scaling by a power of two is exact for floats (outside the subnormal range), so
    computing on scaled data changes no result on ordinary data and keeps every sum,
    difference and square of the LS formulas finite.
    """
    top = max(abs(a), abs(b))
    return math.frexp(top)[1] if top > 0 else 0


def overflow_safe_mean(values: FloatArray) -> float:
    """The mean of finite values by ``math.fsum``, never overflowing.

    The values are scaled by an exact power of two before the correctly rounded
    sum (so the partial sums stay finite) and the mean is scaled back; for
    ordinary magnitudes this is exactly ``math.fsum(values) / n``.

    Examples:
        >>> overflow_safe_mean(np.array([1e308, 1e308]))
        1e+308
        >>> overflow_safe_mean(np.array([1.0, 2.0]))
        1.5
    """
    arr = np.asarray(values, dtype=np.float64)
    n = int(arr.size)
    if n == 0:
        return math.nan
    e = _scale_exponent(float(np.min(arr)), float(np.max(arr)))
    if e < 960:  # n values of magnitude < 2^960 cannot overflow fsum's partials
        return math.fsum(arr.tolist()) / n
    scaled = np.ldexp(arr, -e)  # exact, up to the subnormal range far below the error bound
    lo, hi = float(np.min(arr)), float(np.max(arr))
    mean = math.fsum(scaled.tolist()) / n
    try:
        out = math.ldexp(mean, e)
    except OverflowError:
        out = math.copysign(math.inf, mean)
    return min(max(out, lo), hi)  # the mean lies in [min, max]: clamping only removes rounding


def global_sensitivity(query: Query, relation: Relation = "add_remove") -> Fraction | float:
    """The global sensitivity ``max_{x ~ y} |f(x) − f(y)|`` of a row-level query.

    Relation: ``"add_remove"`` (default) or ``"substitution"`` of one value.
    Histograms: the L1 norm of the count vector (1, or 2 under substitution).
    Unclipped sum, mean, trimmed mean, order statistics and mode: ``float('inf')``;
    the clipped mode under add/remove too (the empty dataset has no mode).

    Args:
        query: a row-level :class:`Query`.
        relation: the neighbouring relation.

    Returns:
        An exact ``Fraction``, or ``float('inf')`` when unbounded.

    Raises:
        InvalidArgument: for user-level kinds or an unknown relation.

    Examples:
        >>> from dpalg.queries import Clip
        >>> global_sensitivity(Query.mean("x") | Clip(0, 10))
        Fraction(5, 1)
        >>> global_sensitivity(Query.sum("x") | Clip(-2, 3), "substitution")
        Fraction(5, 1)
        >>> global_sensitivity(Query.median("x"))
        inf

    References:
        Dwork, McSherry, Nissim, Smith (2006), Def. 1.
    """
    rel = check_relation(relation, "global_sensitivity")
    if not isinstance(query, Query) or query.user is not None:
        raise InvalidArgument("global_sensitivity", "query", query, "must be a row-level dpalg Query")
    sub = rel == "substitution"
    kind = query.kind
    if kind == "count":
        return Fraction(0) if sub and query.column is None else Fraction(1)
    if kind == "count_distinct":
        return Fraction(1)
    if kind == "histogram":
        return Fraction(2) if sub else Fraction(1)
    if query.lower is None or query.upper is None:
        return float("inf")
    a, b = query.lower, query.upper
    if kind == "sum":
        return b - a if sub else max(abs(a), abs(b))
    if kind == "mean":
        return b - a if sub else (b - a) / 2
    if kind == "trimmed_mean":
        # add/remove: every LS(y) is D/(c ± 1) ≤ (b − a)/2 and LS(∅) = (b − a)/2 (docs page);
        # substitution: n = 1 (c = 1) moves the value from a to b
        return b - a if sub else (b - a) / 2
    if kind == "mode" and not sub:
        return float("inf")  # the mode of the empty dataset is undefined (nan): {v} and ∅ differ by "∞"
    # order statistics, mode under substitution: one value can move from a to b
    return b - a


# --------------------------------------------------------------------------- helpers
def _qidx(q: Fraction, m: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    ceil = -((-q.numerator * m) // q.denominator)
    return np.maximum(0, ceil - 1)


def _active(q: Fraction, m: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """[Lmin, Lmax]: the gaps (y_L, y_{L+1}) that a neighbour of a size-m dataset can reach."""
    i = _qidx(q, m)
    rem_up = (m >= 2) & (_qidx(q, np.maximum(m - 1, 0)) == i)
    rem_down = (m >= 1) & ~rem_up  # m = 1: removal gives the empty value a
    add_up = _qidx(q, m + 1) == i + 1
    lmin = np.where(rem_down | ~add_up, i - 1, i)
    lmax = np.where(rem_up | add_up, i, i - 1)
    lmin = np.where(m == 0, -1, lmin)
    lmax = np.where(m == 0, -1, lmax)
    return lmin.astype(np.int64), lmax.astype(np.int64)


def _order_profile(xs: FloatArray, a: float, b: float, q: Fraction, kmax: int, relation: Relation) -> FloatArray:
    n = xs.size
    pad = _pad(xs, a, b)
    return order_profile_at(n, lambda idx: _val(pad, idx, n), q, kmax, relation)


def order_profile_at(
    n: int, val: Callable[[npt.NDArray[np.int64]], FloatArray], q: Fraction, kmax: int, relation: Relation
) -> FloatArray:
    """``LS_0..LS_kmax`` of the q-quantile of n sorted values read through ``val``.

    ``val(idx)`` gives ``x_idx`` (0-based) with the padding convention: ``a`` at
    ``idx < 0``, ``b`` at ``idx ≥ n``; only the ranks of :func:`order_window_ranks`
    are ever asked for.
    """
    out = np.zeros(kmax + 1)
    if relation == "substitution":
        if n == 0:
            return out
        i = int(_qidx(q, np.array([n], dtype=np.int64))[0])
        for k in range(kmax + 1):
            p = np.arange(i - k - 1, i + 1, dtype=np.int64)
            out[k] = float(np.max(val(p + k + 1) - val(p)))
        return out
    # add/remove: windows of width w starting in [L - s, L], L active at size m = n - w + 1 + s, cost k = w - 1 + s
    for w in range(1, kmax + 2):
        s0 = max(0, w - 1 - n)
        s = np.arange(s0, kmax + 2 - w, dtype=np.int64)
        if s.size == 0:
            continue
        lmin, lmax = _active(q, n - w + 1 + s)
        lo = np.minimum.accumulate(lmin - s)
        hi = np.maximum.accumulate(lmax)
        p = np.arange(int(lo[-1]), int(hi[-1]) + 1, dtype=np.int64)
        g = val(p + w) - val(p)
        c = int(lmin[0] - s0) - int(lo[-1])  # position of the first range's start
        right = np.maximum.accumulate(g[c:])
        left = np.maximum.accumulate(g[: c + 1][::-1])
        h = np.maximum(right[hi - lo[-1] - c], left[c - (lo - lo[-1])])
        ks = w - 1 + s
        np.maximum.at(out, ks, h)
    return np.maximum.accumulate(out)


def order_window_ranks(n: int, q: Fraction, kmax: int) -> tuple[int, int]:
    """The 0-based ranks ``[lo, hi]`` of the sorted data that ``LS_0..LS_kmax`` of the q-quantile read.

    Windows of width ≤ k + 1 around the quantile index of every size within n ± k,
    plus a margin of 4 (see :func:`_order_window`).
    """
    margin = 4
    m = np.array([max(0, n - kmax - 2), n + kmax + 2], dtype=np.int64)
    lo_i, hi_i = (int(v) for v in _qidx(q, m))
    return max(0, lo_i - kmax - margin), min(n - 1, hi_i + kmax + margin)


def _order_window(arr: FloatArray, q: Fraction, kmax: int) -> FloatArray:
    """An array whose entries at every index LS_0..LS_kmax reads equal the sorted data's.

    LS_k of an order statistic reads x_p only for p in
    [idx(n − k − 1) − k − 2, idx(n + k + 1) + k + 2] (windows of width ≤ k + 1 around the
    quantile index of a size within n ± k), so a partition plus a sort of that slice
    suffices: O(n + kmax log kmax) instead of O(n log n).
    """
    n = int(arr.size)
    lo_i, hi_i = order_window_ranks(n, q, kmax)
    if n == 0 or (lo_i == 0 and hi_i == n - 1):
        return np.sort(arr)
    part = np.partition(arr, [lo_i, hi_i])
    part[lo_i : hi_i + 1].sort()
    return part


def _prepare(owner: str, query: Query, values: FloatArray) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InvalidArgument(owner, "values", f"shape {arr.shape}", "must be a 1-D array")
    if np.isnan(arr).any():
        raise InvalidArgument(owner, "values", "(contains NaN)", "must come from Query.values (NaN dropped)")
    return arr


def _check_k(owner: str, field: str, k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InvalidArgument(owner, field, k, "must be an integer >= 0")
    return int(k)


def _constant_profile(kind: str, n: int, kmax: int, relation: Relation, a: float, b: float, xs: FloatArray) -> FloatArray:
    sub = relation == "substitution"
    out = np.zeros(kmax + 1)
    match kind:
        case "count":
            out[:] = 0.0 if sub else 1.0
        case "count_distinct":
            out[:] = (1.0 if n >= 2 else 0.0) if sub else 1.0
        case "histogram":
            out[:] = (2.0 if n >= 1 else 0.0) if sub else 1.0
        case "sum":
            if not sub:
                out[:] = max(abs(a), abs(b))
            elif n >= 1:
                out[:] = b - a
                out[0] = max(float(xs[-1]) - a, b - float(xs[0]))
        case "mean":
            if n >= 1:
                out[:] = (b - a) / n
                out[0] = max(float(xs[-1]) - a, b - float(xs[0])) / n
    return out


def ls_profile(query: Query, values: FloatArray, kmax: int, relation: Relation = "add_remove") -> FloatArray:
    """``[LS_0(x), …, LS_kmax(x)]``, exactly, in one vectorised pass.

    Relation: ``"add_remove"`` (default) or ``"substitution"`` of one value in
    ``[query.lower, query.upper]``. Histograms: L1 over the counts. Cost after
    sorting: O(1) per k for count/sum/count_distinct/histogram, O(k) per k for the
    mean, O(kmax²) in total for order statistics and the trimmed mean under
    substitution (an exact profile of all k is a (max,+) convolution; see the docs
    page). Trimmed mean under add/remove: O(kmax³) in total (a (max,+) convolution per
    dataset size). Mode (after counting the values): O(kmax²) in total under add/remove,
    O(kmax² log kmax) under substitution; ``+inf`` for ``k ≥ n − 1`` under add/remove
    (a dataset with one value has a neighbour with no mode).

    Args:
        query: a catalog query (:data:`CATALOG_KINDS`), clipped where needed.
        values: ``query.values(dataset)`` (any order).
        kmax: the largest distance.
        relation: the neighbouring relation.

    Returns:
        A float64 array of length ``kmax + 1``, non-decreasing.

    Examples:
        >>> import numpy as np
        >>> from dpalg.queries import Clip
        >>> ls_profile(Query.median("x") | Clip(0, 10), np.array([1.0, 2, 3, 4, 5]), 3, "substitution").tolist()
        [1.0, 2.0, 7.0, 8.0]
        >>> ls_profile(Query.trimmed_mean("x", "0.2") | Clip(0, 10), np.array([1.0, 2, 3, 4, 5]), 1, "substitution").tolist()
        [1.0, 2.6666666666666665]
        >>> ls_profile(Query.mode("x") | Clip(0, 10), np.array([3.0, 3, 3, 5, 5, 7]), 5).tolist()
        [0.0, 2.0, 4.0, 7.0, 7.0, inf]

    References:
        Nissim, Raskhodnikova, Smith (2007), Def. 3.1 and Prop. 3.4 (median);
        Dwork, Lei (2009) for the PTR use.
    """
    owner = "ls_profile"
    rel = check_relation(relation, owner)
    kind = _kind(owner, query)
    kmax = _check_k(owner, "kmax", kmax)
    arr = _prepare(owner, query, values)
    a, b = _bounds(owner, query)
    with np.errstate(all="ignore"):  # overflow is handled below, never a warning or an error
        out = _profile(kind, query, arr, a, b, kmax, rel)
    return _sanitize(out)


def _sanitize(profile: FloatArray) -> FloatArray:
    """NaN (inf − inf, 0·inf) becomes +inf, the conservative upper bound; then made non-decreasing."""
    out = np.where(np.isnan(profile), np.inf, profile)
    return np.maximum.accumulate(out) if out.size else out


def _profile(kind: str, query: Query, arr: FloatArray, a: float, b: float, kmax: int, rel: Relation) -> FloatArray:
    if not (math.isfinite(a) and math.isfinite(b)):
        return np.full(kmax + 1, np.inf)  # a bound beyond the float range: no finite upper bound is known
    e = _scale_exponent(a, b)
    if e == 0:
        return _unit_profile(kind, query, arr, a, b, kmax, rel)
    # every LS_k here is homogeneous (LS_k(c·x; c·a, c·b) = c·LS_k(x; a, b)): compute on data scaled by
    # 2^-e — exact, so ordinary data give bit-identical results — and scale back (overflow: +inf)
    scaled = _unit_profile(kind, query, np.ldexp(arr, -e), math.ldexp(a, -e), math.ldexp(b, -e), kmax, rel)
    return np.ldexp(scaled, e)


def _unit_profile(kind: str, query: Query, arr: FloatArray, a: float, b: float, kmax: int, rel: Relation) -> FloatArray:
    if kind in ("median", "quantile", "max", "min"):
        q = Fraction(1) if kind in ("max", "min") else (query.q if query.q is not None else Fraction(1, 2))
        if kind == "min":
            arr = (a + b) - arr  # min(x) = (a + b) − max((a + b) − x), same bounds, same LS
        return _order_profile(_order_window(arr, q, kmax), a, b, q, kmax, rel)
    if kind == "mode":
        return _mode_profile(arr, a, b, kmax, rel)
    e = _scale_exponent(a, b) if kind in ("mean", "trimmed_mean") else 0
    if e:  # LS of a mean is homogeneous: compute on data scaled by 2^-e (exact), scale the result back
        return np.ldexp(_profile(kind, query, np.ldexp(arr, -e), math.ldexp(a, -e), math.ldexp(b, -e), kmax, rel), e)
    xs = np.sort(arr)
    n = int(xs.size)
    if kind == "trimmed_mean":
        assert query.trim is not None
        if rel == "substitution":
            return _tm_sub_profile(xs, a, b, query.trim, kmax)
        return _tm_ar_profile(xs, a, b, query.trim, kmax)
    if kind == "mean" and rel == "add_remove":
        return np.maximum.accumulate(_mean_ls_profile(xs, a, b, kmax))
    return _constant_profile(kind, n, kmax, rel, a, b, xs)


def local_sensitivity_at_distance(query: Query, values: FloatArray, k: int, relation: Relation = "add_remove") -> float:
    """``LS_k(x) = max_{d(x, y) ≤ k} max_{z ~ y} |f(y) − f(z)|``, exactly.

    Relation: ``"add_remove"`` (default) or ``"substitution"``. See
    :func:`ls_profile` for the supported kinds and costs; a single k costs O(k) for the
    mean and O(k²) for the trimmed mean under add/remove (after sorting), the other
    kinds compute the profile up to k.

    Args:
        query: a catalog query.
        values: ``query.values(dataset)``.
        k: the distance (integer ≥ 0).
        relation: the neighbouring relation.

    Returns:
        LS_k as a float.

    Examples:
        >>> import numpy as np
        >>> from dpalg.queries import Clip
        >>> local_sensitivity_at_distance(Query.mean("x") | Clip(0, 1), np.array([0.0, 1, 1, 1]), 0)
        0.25
        >>> local_sensitivity_at_distance(Query.mode("x") | Clip(0, 10), np.array([3.0, 3, 3, 5, 5, 7]), 1, "substitution")
        4.0

    References:
        Nissim, Raskhodnikova, Smith (2007), Def. 3.1; seed 002 Def. 16.
    """
    owner = "local_sensitivity_at_distance"
    k = _check_k(owner, "k", k)
    rel = check_relation(relation, owner)
    kind = _kind(owner, query)
    if kind in ("mean", "trimmed_mean") and rel == "add_remove":
        # _mean_ls(k) ranges over every (removals r, additions s) with r + s <= k: O(k) after sorting;
        # _tm_ar_ls(k) over every size m and window position: O(k²) after sorting
        xs = np.sort(_prepare(owner, query, values))
        a, b = _bounds(owner, query)
        if not (math.isfinite(a) and math.isfinite(b)):
            return math.inf
        e = _scale_exponent(a, b)  # exact scaling, as in ls_profile: no overflow
        xs, sa, sb = np.ldexp(xs, -e), math.ldexp(a, -e), math.ldexp(b, -e)
        with np.errstate(all="ignore"):
            if kind == "mean":
                unit = _mean_ls(xs, sa, sb, k)
            else:
                assert query.trim is not None
                unit = _tm_ar_ls(xs, sa, sb, query.trim, k)
            value = float(np.ldexp(unit, e))
        return math.inf if math.isnan(value) else value
    return float(ls_profile(query, values, k, rel)[k])


def distance_to_instability(
    query: Query, values: FloatArray, bound: float, relation: Relation = "add_remove", cap: int | None = None
) -> int:
    """The PTR distance ``min{k ≥ 0 : LS_k(x) > bound}``, capped at ``min(n + 2, cap)``.

    Relation: ``"add_remove"`` (default) or ``"substitution"``.

    The cap is valid for PTR: ``min(γ(x), n + 2)`` is still 1-Lipschitz under
    add/remove (``n`` changes by one) and under substitution (``n`` is fixed), it is
    ≥ 1 exactly when ``γ(x) ≥ 1`` (i.e. ``LS_0(x) ≤ bound``), and it never exceeds
    the true distance, which is all the PTR proof uses (seed 003, Thm.).

    Args:
        query: a catalog query.
        values: ``query.values(dataset)``.
        bound: the proposed bound β on the local sensitivity (≥ 0).
        relation: the neighbouring relation.
        cap: an optional public constant cap (PTR passes ``ptr_cap(ε, δ)``):
            ``min(γ, cap)`` keeps every property above, and bounds the work. With a
            cap the profile is computed to ``cap`` on every call (the same work for
            every dataset of a given size; no early exit on γ).

    Returns:
        The distance, an integer in ``[0, min(n + 2, cap)]``.

    Examples:
        >>> import numpy as np
        >>> from dpalg.queries import Clip
        >>> distance_to_instability(Query.median("x") | Clip(0, 10), np.array([5.0] * 9), 1.0, "substitution")
        4

    References:
        Dwork, Lei (2009); seed 002 Def. 17; seed 003 (PTR).
    """
    owner = "distance_to_instability"
    rel = check_relation(relation, owner)
    _kind(owner, query)
    if isinstance(bound, bool) or not isinstance(bound, (int, float, Fraction)) or not bound >= 0 or math.isinf(float(bound)):
        raise InvalidArgument(owner, "bound", bound, "must be a finite number >= 0")
    beta = float(bound)
    arr = _prepare(owner, query, values)
    limit = int(arr.size) + 2
    if cap is not None:
        # a public cap: the profile is computed to it on every call, whatever the data
        # (no early exit on a private quantity, so the work does not depend on γ)
        cap = _check_k(owner, "cap", cap)
        prof = ls_profile(query, arr, cap, rel)
        return min(_first_above(prof, beta, cap), limit)
    kmax = min(limit, 64)
    while True:  # doubling: cost O(D^2) for order statistics, D the answer
        prof = ls_profile(query, arr, kmax, rel)
        above = np.flatnonzero(~(prof <= beta))
        if above.size:
            return int(above[0])
        if kmax >= limit:
            return limit
        kmax = min(limit, 2 * kmax)


def _first_above(profile: FloatArray, beta: float, cap: int) -> int:
    """min{k : profile[k] > β} (NaN counts as above), or cap if none."""
    above = np.flatnonzero(~(profile[: cap + 1] <= beta))
    return int(above[0]) if above.size else cap


def mode_gap_distance(values: FloatArray, relation: Relation = "add_remove") -> int:
    """The β = 0 PTR distance of the mode: ``min{k : LS_k(mode, x) > 0}``.

    ``LS_k > 0`` iff some y within k operations has a neighbour with a different
    mode, so the answer is ``D − 1`` where D is the number of operations needed to
    change the mode (smallest value among ties). With ``c_1`` the mode's count and
    ``c_w`` that of a competitor w (a fresh value below the mode counts with
    ``c_w = 0``), changing needs ``g_w = c_1 − c_w + [w > mode]`` units of gap;
    add/remove closes one unit per operation, substitution two.

    Relation: ``"add_remove"`` (default): ``D = min_w g_w``; ``"substitution"``:
    ``D = min_w ceil(g_w / 2)``. Empty data: 0 (add/remove: one added row gives a
    mode) or 2 = n + 2 (substitution: nothing ever changes; capped as in
    :func:`distance_to_instability`).

    Args:
        values: ``Query.mode(col).values(dataset)``.
        relation: the neighbouring relation.

    Returns:
        The distance (integer ≥ 0).

    Examples:
        >>> import numpy as np
        >>> mode_gap_distance(np.array([1.0, 1, 1, 1, 2, 2]))
        2
        >>> mode_gap_distance(np.array([1.0, 1, 1, 1, 2, 2]), "substitution")
        1

    References:
        Seed 003 ("PTR for the mode", β = 0); Dwork, Lei (2009).
    """
    rel = check_relation(relation, "mode_gap_distance")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or np.isnan(arr).any():
        raise InvalidArgument("mode_gap_distance", "values", "(array)", "must be 1-D without NaN")
    if arr.size == 0:
        return 0 if rel == "add_remove" else 2
    uniq, counts = np.unique(arr, return_counts=True)
    return mode_gap_distance_counts(uniq, counts, rel)


def mode_gap_distance_counts(uniq: FloatArray, counts: npt.NDArray[np.int64], relation: Relation = "add_remove") -> int:
    """:func:`mode_gap_distance` from the distinct values (ascending) and their counts (all > 0): a histogram of the values.

    Examples:
        >>> mode_gap_distance_counts(np.array([1.0, 2.0]), np.array([4, 2]))
        2
        >>> mode_gap_distance_counts(np.zeros(0), np.zeros(0, dtype=np.int64), "substitution")
        2
    """
    rel = check_relation(relation, "mode_gap_distance")
    if uniq.size == 0:
        return 0 if rel == "add_remove" else 2
    top = int(np.argmax(counts))
    c1 = int(counts[top])
    gaps = [c1]  # a fresh value below the mode (the value domain is the real line)
    others = np.arange(uniq.size) != top
    if others.any():
        g = c1 - counts[others] + (np.arange(uniq.size)[others] > top)
        gaps.append(int(np.min(g)))
    need = min(gaps)
    d = need if rel == "add_remove" else -(-need // 2)
    return max(0, d - 1)
