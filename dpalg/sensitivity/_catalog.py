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
small domain (``tests/sensitivity/test_catalog.py``).

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
from collections.abc import Iterator
from fractions import Fraction

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data import Relation
from dpalg.queries import Query

__all__ = [
    "CATALOG_KINDS",
    "distance_to_instability",
    "global_sensitivity",
    "local_sensitivity_at_distance",
    "ls_profile",
    "mode_gap_distance",
]

FloatArray = npt.NDArray[np.float64]

#: kinds with an exact LS_k in this catalog (mode and trimmed mean need ``| Clip(lower, upper)``)
CATALOG_KINDS: tuple[str, ...] = (
    "count", "sum", "mean", "median", "quantile", "max", "min", "count_distinct", "histogram", "trimmed_mean", "mode",
)


def _relation(owner: str, relation: str) -> Relation:
    if relation == "add_remove":
        return "add_remove"
    if relation == "substitution":
        return "substitution"
    raise InvalidArgument(owner, "relation", relation, "must be 'add_remove' or 'substitution'")


def _kind(owner: str, query: Query) -> str:
    if not isinstance(query, Query):
        raise InvalidArgument(owner, "query", type(query).__name__, "must be a dpalg Query")
    if query.user is not None:
        raise InvalidArgument(owner, "query", query, "is user-level; this catalog is row-level (see _down_sens)")
    if query.kind not in CATALOG_KINDS:
        raise InvalidArgument(owner, "query", query, f"kind {query.kind!r} has no exact LS_k here; supported: {CATALOG_KINDS}")
    return query.kind


def _bounds(owner: str, query: Query) -> tuple[float, float]:
    if query.kind in ("count", "count_distinct", "histogram"):
        return 0.0, 0.0
    lo, hi = query.require_bounds(owner)
    return float(lo), float(hi)


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
    rel = _relation("global_sensitivity", relation)
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
def _pad(xs: FloatArray, a: float, b: float) -> FloatArray:
    return np.concatenate(([a], xs, [b]))


def _val(pad: FloatArray, idx: npt.NDArray[np.int64], n: int) -> FloatArray:
    """x_idx with the padding convention (pad = [a, x_0..x_{n-1}, b])."""
    return pad[np.clip(idx, -1, n) + 1]


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
    out = np.zeros(kmax + 1)
    if relation == "substitution":
        if n == 0:
            return out
        i = int(_qidx(q, np.array([n], dtype=np.int64))[0])
        for k in range(kmax + 1):
            p = np.arange(i - k - 1, i + 1, dtype=np.int64)
            out[k] = float(np.max(_val(pad, p + k + 1, n) - _val(pad, p, n)))
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
        g = _val(pad, p + w, n) - _val(pad, p, n)
        c = int(lmin[0] - s0) - int(lo[-1])  # position of the first range's start
        right = np.maximum.accumulate(g[c:])
        left = np.maximum.accumulate(g[: c + 1][::-1])
        h = np.maximum(right[hi - lo[-1] - c], left[c - (lo - lo[-1])])
        ks = w - 1 + s
        np.maximum.at(out, ks, h)
    return np.maximum.accumulate(out)


def _order_window(arr: FloatArray, q: Fraction, kmax: int) -> FloatArray:
    """An array whose entries at every index LS_0..LS_kmax reads equal the sorted data's.

    LS_k of an order statistic reads x_p only for p in
    [idx(n − k − 1) − k − 2, idx(n + k + 1) + k + 2] (windows of width ≤ k + 1 around the
    quantile index of a size within n ± k), so a partition plus a sort of that slice
    suffices: O(n + kmax log kmax) instead of O(n log n).
    """
    n = int(arr.size)
    margin = 4
    m = np.array([max(0, n - kmax - 2), n + kmax + 2], dtype=np.int64)
    lo_i, hi_i = (int(v) for v in _qidx(q, m))
    lo_i = max(0, lo_i - kmax - margin)
    hi_i = min(n - 1, hi_i + kmax + margin)
    if n == 0 or (lo_i == 0 and hi_i == n - 1):
        return np.sort(arr)
    part = np.partition(arr, [lo_i, hi_i])
    part[lo_i : hi_i + 1].sort()
    return part


def _phi_best(hv: FloatArray, pv: FloatArray, ulo: FloatArray, uhi: FloatArray) -> FloatArray:
    """max over integers u in [ulo, uhi], u >= 1, of (H u − P)/(u (u+1)) (unimodal in u; -inf if empty)."""
    ok = np.maximum(ulo, 1.0) <= uhi
    ulo = np.where(ok, np.maximum(ulo, 1.0), 1.0)
    uhi = np.where(ok, uhi, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ustar = np.where(hv > 0, (pv + np.sqrt(pv * pv + hv * pv)) / np.where(hv > 0, hv, 1.0), ulo)
    best = np.full(hv.shape, -np.inf)
    for cand in (np.floor(ustar), np.ceil(ustar), ulo, uhi):
        u = np.clip(cand, ulo, np.maximum(ulo, uhi))
        val = (hv * u - pv) / (u * (u + 1.0))
        best = np.where(ok, np.maximum(best, val), best)
    return best


def _mean_one_side(xs: FloatArray, a: float, b: float, k: int, prefix: FloatArray) -> float:
    """max of the 'upward' terms (C, A1, A2) of the mean's LS over y within k add/remove ops.

    ``prefix`` is ``[0, cumsum(xs - a)]`` (computed once per profile).
    """
    n = xs.size
    bp = b - a
    r = np.arange(0, min(k, n) + 1, dtype=np.int64)
    big_s = (k - r).astype(np.float64)
    nn = (n - r).astype(np.float64)
    pn = prefix[n - r]
    hb = np.full(r.shape, bp)
    best = _phi_best(hb, pn, nn, nn + big_s)  # C: add-neighbour at size m = N + s
    best = np.maximum(best, _phi_best(hb, pn, np.where(big_s >= 1, nn, np.inf), nn + big_s - 1))  # A1: h = b added
    if n >= 1:
        ok = r <= n - 1
        pn1 = prefix[np.clip(n - 1 - r, 0, n)]
        h2 = np.full(r.shape, float(xs[-1]) - a)
        a2 = _phi_best(h2, pn1, np.where(ok, nn - 1, np.inf), nn - 1 + big_s)  # A2: h = x_max kept
        best = np.maximum(best, a2)
    return float(np.max(best)) if best.size else -np.inf


def _mean_prefixes(xs: FloatArray, a: float, b: float) -> tuple[FloatArray, FloatArray]:
    up = np.concatenate(([0.0], np.cumsum(xs - a)))
    down = np.concatenate(([0.0], np.cumsum(b - xs[::-1])))
    return up, down


def _mean_ls(xs: FloatArray, a: float, b: float, k: int, prefixes: tuple[FloatArray, FloatArray] | None = None) -> float:
    n = xs.size
    mid = (a + b) / 2
    up, down = prefixes if prefixes is not None else _mean_prefixes(xs, a, b)
    cands = [_mean_one_side(xs, a, b, k, up), _mean_one_side((a + b) - xs[::-1], a, b, k, down)]
    if k >= n:
        cands.append((b - a) / 2)  # the empty dataset: adding v moves the mean from mid to v
    if n >= 1 and k >= n - 1:
        for y0 in (float(xs[0]), float(xs[-1])):
            cands.append(max(abs(y0 - mid), max(y0 - a, b - y0) / 2))
    return max(0.0, max(cands))


# --------------------------------------------------------------------------- trimmed mean
IntArray = npt.NDArray[np.int64]


def _drop(trim: Fraction, m: IntArray) -> IntArray:
    """floor(trim·m): the number of values the trimmed mean drops at each end of a size-m dataset."""
    return (trim.numerator * m) // trim.denominator


def _tm_sub_profile(xs: FloatArray, a: float, b: float, trim: Fraction, kmax: int) -> FloatArray:
    """Substitution: LS_k = max_{t−1−k ≤ p ≤ t} (x_{p+c+k} − x_p)/c, t = floor(τn), c = n − 2t."""
    n = xs.size
    out = np.zeros(kmax + 1)
    if n == 0:
        return out
    t = int(_drop(trim, np.array([n], dtype=np.int64))[0])
    c = n - 2 * t
    pad = _pad(xs, a, b)
    for k in range(kmax + 1):
        p = np.arange(t - 1 - k, t + 1, dtype=np.int64)
        out[k] = float(np.max(_val(pad, p + c + k, n) - _val(pad, p, n))) / c
    return out


def _tm_up(zs: FloatArray, cs: FloatArray, width: float, trim: Fraction, k: int) -> float:
    """Largest 'upward' LS term of the trimmed mean over y within k add/remove ops, |y| ≥ 2.

    ``zs`` is the sorted data shifted to ``[0, width]`` (padding: 0 below index 0,
    ``width`` from index n on), ``cs`` its prefix sums ``[0, cumsum(zs)]``. A size-m
    dataset y with t = floor(τm), c = m − 2t has LS(y) = max(D_in/(c − 1) [if a
    neighbour keeps c − 1 values], D_out/(c + 1) [if one keeps c + 1]); the upward part
    of each is (y_top − mean(window))/(w + 1) with (w, top, #above) = (c − 1, y_{m−t−1}, t)
    or (c, y_{m−t}, t − 1). Such a y is the padded index set
    S = [p − t, p + w − 1] ∪ [j, j + u] (u = #above) at cost |S Δ [0, n)| =
    m + n − 2|S ∩ [0, n)| (docs/mechanisms/local_sensitivity.md). For each m the
    window start p ∈ [t − k, t] is scanned with the largest affordable j: O(k²), but a
    size m is scanned only if its relaxed bound (window and top each given the whole
    budget) beats the best value found at the two extreme splits.
    """
    n = zs.size
    ms = np.arange(max(2, n - k), n + k + 1, dtype=np.int64)
    if ms.size == 0:
        return -np.inf
    ztop = np.concatenate((zs, [width]))
    t = _drop(trim, ms)
    c = ms - 2 * t
    t_rem = _drop(trim, ms - 1)
    t_add = _drop(trim, ms + 1)
    need = -((k - ms - n) // 2)  # ceil((m + n − k)/2): the overlap |S ∩ [0, n)| needed
    in_act = ((t_rem == t) | (t_add == t + 1)) & (c >= 2)
    out_act = (t_rem == t - 1) | (t_add == t)

    def window_mean(p: IntArray, w: IntArray) -> FloatArray:
        hi = p + w
        tot = cs[np.clip(hi, 0, n)] + np.maximum(hi - n, 0) * width - cs[np.clip(p, 0, n)] - np.maximum(p - n, 0) * width
        out: FloatArray = tot / w
        return out

    def value(p: IntArray, w: IntArray, u: IntArray, h: IntArray) -> FloatArray:
        """The best value with window start p (−inf where infeasible); arrays broadcast."""
        r = h - np.clip(np.minimum(p + w, n), 0, None)  # overlap the top block [j, j + u] must supply
        cap_b = np.where(u >= 0, np.minimum(u + 1, n), 0)
        j = n - r  # the largest j with |[j, j + u] ∩ [0, n)| ≥ r (r ≥ 1)
        ok = (p >= -w) & (r <= cap_b) & ((r <= 0) | (j >= p + w))
        top = np.where(r <= 0, width, ztop[np.clip(j, 0, n)])
        val: FloatArray = np.where(ok, (top - window_mean(p, w)) / (w + 1), -np.inf)
        return val

    regimes = []
    best = -np.inf
    for w_all, u_all, act in ((c - 1, t, in_act), (c, t - 1, out_act)):
        sel = np.flatnonzero(act)
        if not sel.size:
            continue
        tt, ww, uu, hh = t[sel], w_all[sel], u_all[sel], need[sel]
        cap = np.where(uu >= 0, np.minimum(uu + 1, n), 0)
        p_lo = np.minimum(tt, np.maximum.reduce([-ww, hh - cap - ww, tt - k]))
        v_hi, v_lo = value(tt, ww, uu, hh), value(p_lo, ww, uu, hh)
        best = max(best, float(np.max(v_hi)), float(np.max(v_lo)))
        # relaxed bound: the top as if the window kept its largest overlap, the window at p_lo
        r = hh - np.clip(np.minimum(tt + ww, n), 0, None)
        top = np.where(r <= 0, width, ztop[np.clip(n - r, 0, n)])
        bound = np.where(r <= cap, (top - window_mean(p_lo, ww)) / (ww + 1), -np.inf)
        regimes.append((tt, ww, uu, hh, p_lo, bound))
    for tt, ww, uu, hh, p_lo, bound in regimes:
        live = np.flatnonzero(bound > best)
        if not live.size:
            continue
        span = int(np.max(tt[live] - p_lo[live]))
        e = np.arange(span + 1, dtype=np.int64)
        chunk = max(1, (1 << 21) // (span + 1))
        for lo in range(0, live.size, chunk):
            sel = live[lo : lo + chunk]
            val = value(tt[sel][:, None] - e[None, :], ww[sel][:, None], uu[sel][:, None], hh[sel][:, None])
            best = max(best, float(np.max(val)))
    return best


def _tm_up_profile(zs: FloatArray, cs: FloatArray, width: float, trim: Fraction, kmax: int) -> FloatArray:
    """``[max upward term over y at cost exactly k]`` for k ≤ kmax (|y| ≥ 2; −inf where none).

    The configurations of :func:`_tm_up`, enumerated once per size m: window start p and
    the overlap r′ ≥ 0 the top block keeps (its best start is j = n − r′, or the padding b
    when r′ = 0), at cost m + n − 2(ovA(p) + r′). O(Σ_m D_m²) = O(kmax³) with
    D_m = (kmax − |n − m|)/2 after sorting.
    """
    n = zs.size
    out = np.full(kmax + 1, -np.inf)
    ztop = np.concatenate((zs, [width]))
    for m in range(max(2, n - kmax), n + kmax + 1):
        t = (trim.numerator * m) // trim.denominator
        c = m - 2 * t
        t_rem = (trim.numerator * (m - 1)) // trim.denominator
        t_add = (trim.numerator * (m + 1)) // trim.denominator
        need = -((kmax - m - n) // 2)
        regimes = []
        if (t_rem == t or t_add == t + 1) and c >= 2:
            regimes.append((c - 1, t))
        if t_rem == t - 1 or t_add == t:
            regimes.append((c, t - 1))
        for w, u in regimes:
            cap = min(u + 1, n) if u >= 0 else 0
            p_lo = max(-w, need - cap - w, t - kmax)
            p_hi = min(t, max(n - w, p_lo))  # on the plateau ovA = n only the leftmost window counts
            if p_lo > p_hi:
                continue
            pp = np.arange(p_lo, p_hi + 1, dtype=np.int64)
            ov_a = np.clip(np.minimum(pp + w, n), 0, None)
            r_lo = np.maximum(0, need - ov_a)
            r_hi = np.minimum(cap, np.where(pp + w <= n, n - pp - w, 0))  # j = n − r ≥ p + w, or r = 0
            cnt = np.maximum(r_hi - r_lo + 1, 0)
            tot = int(cnt.sum())
            if not tot:
                continue
            row = np.repeat(np.arange(pp.size), cnt)
            r = r_lo[row] + (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt))
            p = pp[row]
            top = np.where(r == 0, width, ztop[n - r])
            hi = p + w
            mean = (cs[np.clip(hi, 0, n)] + np.maximum(hi - n, 0) * width - cs[np.clip(p, 0, n)] - np.maximum(p - n, 0) * width) / w
            np.maximum.at(out, m + n - 2 * (ov_a[row] + r), (top - mean) / (w + 1))
    return out


def _tm_ar_profile(xs: FloatArray, a: float, b: float, trim: Fraction, kmax: int) -> FloatArray:
    """Add/remove ``[LS_0, …, LS_kmax]`` of the trimmed mean (same configurations as :func:`_tm_ar_ls`)."""
    n = xs.size
    (zu, cu), (zd, cd) = _tm_sides(xs, a, b)
    out = np.maximum(_tm_up_profile(zu, cu, b - a, trim, kmax), _tm_up_profile(zd, cd, b - a, trim, kmax))
    if n >= 1 and n - 1 <= kmax:
        mid = (a + b) / 2
        out[n - 1] = max(out[n - 1], *(max(abs(v - mid), max(v - a, b - v) / 2) for v in (float(xs[0]), float(xs[-1]))))
    if n <= kmax:
        out[n] = max(out[n], (b - a) / 2)
    return np.maximum.accumulate(np.maximum(out, 0.0))


def _tm_sides(xs: FloatArray, a: float, b: float) -> tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]:
    """The data shifted to [0, b − a] and reflected (b − x, ascending), with prefix sums."""
    up = xs - a
    down = (b - xs)[::-1]
    return (up, np.concatenate(([0.0], np.cumsum(up)))), (down, np.concatenate(([0.0], np.cumsum(down))))


def _tm_ar_ls(xs: FloatArray, a: float, b: float, trim: Fraction, k: int) -> float:
    """Add/remove LS_k of the trimmed mean, exactly: O(k²) after sorting."""
    n = xs.size
    if k >= n:
        return (b - a) / 2  # the empty dataset is within reach: LS(∅) = (b − a)/2 = GS
    best = 0.0
    if k >= n - 1:  # singletons {x_i}: removal gives the midpoint, addition the mean of two
        mid = (a + b) / 2
        for v in (float(xs[0]), float(xs[-1])):
            best = max(best, abs(v - mid), max(v - a, b - v) / 2)
    (zu, cu), (zd, cd) = _tm_sides(xs, a, b)
    # the trimmed mean commutes with the reflection x ↦ a + b − x, so the downward
    # terms are the upward terms of the reflected data
    return max(best, _tm_up(zu, cu, b - a, trim, k), _tm_up(zd, cd, b - a, trim, k))


# --------------------------------------------------------------------------- mode
@attrs.frozen(eq=False)
class _ModeStats:
    """Count statistics of the data for the mode's LS_k (values in [a, b], real domain)."""

    n: int
    a: float
    b: float
    vals: FloatArray  # distinct values, ascending
    cnts: IntArray  # their counts
    desc: IntArray  # counts, descending
    asc_prefix: IntArray  # prefix sums of the ascending counts
    f_tab: FloatArray  # F(j): smallest value with count ≥ j (j ≤ 0: a); index c1 + 1: +inf
    f_cnt: IntArray  # the count of F(j) in the data
    g_tab: FloatArray  # G(i): largest value with count ≥ i (i ≤ 0: b); index c1 + 1: −inf

    @property
    def c1(self) -> int:
        return int(self.desc[0]) if self.desc.size else 0

    def count_rank(self, r: int) -> int:
        """c_(r): the r-th largest count (1-based), 0 if there are fewer values."""
        return int(self.desc[r - 1]) if r <= self.desc.size else 0

    def s(self, c: IntArray) -> IntArray:
        """S(C) = Σ_w (c_w − C)^+: removals that bring every count down to C."""
        asc = self.desc[::-1]
        idx = np.searchsorted(asc, c, side="right")
        above = asc.size - idx
        out: IntArray = (self.asc_prefix[-1] - self.asc_prefix[idx]) - c * above
        return out

    def c_min(self, k: int) -> int:
        """The smallest C ≥ 0 with S(C) ≤ k."""
        lo = max(0, self.c1 - k)
        cs = np.arange(lo, self.c1 + 1, dtype=np.int64)
        return int(cs[np.argmax(self.s(cs) <= k)])

    def f(self, j: IntArray) -> FloatArray:
        return self.f_tab[np.clip(j, 0, self.c1 + 1)]

    def g(self, i: IntArray) -> FloatArray:
        return self.g_tab[np.clip(i, 0, self.c1 + 1)]


def _mode_stats(arr: FloatArray, a: float, b: float) -> _ModeStats:
    vals, cnts_raw = np.unique(arr, return_counts=True)
    cnts = cnts_raw.astype(np.int64)
    desc = np.sort(cnts)[::-1]
    c1 = int(desc[0]) if desc.size else 0
    minv = np.full(c1 + 2, np.inf)
    maxv = np.full(c1 + 2, -np.inf)
    np.minimum.at(minv, cnts, vals)
    np.maximum.at(maxv, cnts, vals)
    f_tab = np.minimum.accumulate(minv[::-1])[::-1]
    g_tab = np.maximum.accumulate(maxv[::-1])[::-1]
    f_tab[0], g_tab[0] = a, b
    f_cnt = np.zeros(f_tab.size, dtype=np.int64)
    if vals.size:
        at = np.minimum(np.searchsorted(vals, f_tab), vals.size - 1)
        f_cnt = np.where(vals[at] == f_tab, cnts[at], 0).astype(np.int64)
    asc_prefix = np.concatenate(([0], np.cumsum(desc[::-1]))).astype(np.int64)
    return _ModeStats(int(arr.size), a, b, vals.astype(np.float64), cnts, desc, asc_prefix, f_tab, f_cnt, g_tab)


def _heavy_tables(st: _ModeStats, kmax: int) -> Iterator[tuple[int, int, FloatArray]]:
    """For C = c1, c1 − 1, …, max(1, c1 − kmax − 1): (C, H_C = #{c_w ≥ C}, the kmax + 2 smallest such values).

    O(kmax² log kmax) in total at worst (one merge of ≤ 2·kmax + 4 values per level).
    """
    order = np.lexsort((st.vals, -st.cnts))
    vs, neg = st.vals[order], -st.cnts[order]  # by count descending, then value ascending
    keep = kmax + 2
    cur = np.zeros(0)
    pos = 0
    for c in range(st.c1, max(1, st.c1 - kmax - 1) - 1, -1):
        end = int(np.searchsorted(neg, -c, side="right"))
        if end > pos:
            cur = np.sort(np.concatenate((cur, vs[pos:end][:keep])))[:keep]
            pos = end
        yield c, pos, cur


def _best(*parts: FloatArray) -> float:
    vals = [float(np.max(p)) for p in parts if p.size]
    return max([0.0, *vals])


def _mode_ar_k(st: _ModeStats, k: int, hv: FloatArray) -> float:
    """Add/remove LS_k of the mode for k < n − 1 (types H and L of the docs), O(k) after counting.

    ``hv[A]`` is the A-th smallest value among those with count ≥ c_(A+1).
    """
    c1 = st.c1
    c0 = max(1, st.count_rank(3))
    parts: list[FloatArray] = []
    # H, C = C0: thresholds (i, j) = (C0 + 1 − s, C0 − r), r + s = k + 1 − S(C0)
    r0 = k + 1 - int(st.s(np.array([c0]))[0])
    if r0 >= 0:
        r = np.arange(r0 + 1, dtype=np.int64)
        parts.append(st.g(c0 + 1 - (r0 - r)) - st.f(c0 - r))
    # H, C = j > C0 (ℓ keeps ≥ C copies)
    jj = np.arange(max(c0 + 1, c1 - k - 1), c1 + 1, dtype=np.int64)
    sj = st.s(jj)
    ok = sj <= k + 1
    parts.append((st.g(np.maximum(0, sj + jj - k)) - st.f(jj))[ok])
    # H, C = i − 1 > C0 (h keeps ≥ C + 1 copies)
    ii = np.arange(max(c0 + 2, c1 - k + 1), c1 + 1, dtype=np.int64)
    si = st.s(ii - 1)
    ok = si <= k
    parts.append((st.g(ii) - st.f(np.maximum(0, si + ii - 2 - k)))[ok])
    # L1: h the A-th value with count ≥ C = c_(A+1)
    aa = np.arange(min(k + 1, hv.size - 1) + 1, dtype=np.int64)
    if aa.size:
        cc = st.desc[aa]
        sc = st.s(cc)
        ok = sc <= k + 1 - aa
        parts.append((hv[aa] - st.f(np.maximum(0, cc + sc - (k + 1 - aa))))[ok])
    # L2: ℓ keeps ≥ C copies, h after every value with count ≥ C
    cc = np.arange(max(1, c1 - k + 1), c1 + 1, dtype=np.int64)
    s1 = st.s(cc - 1)
    ok = s1 <= k
    parts.append((st.g(np.maximum(0, s1 + cc - k)) - st.f(cc))[ok])
    return _best(*parts)


def _hv_for_l1(st: _ModeStats, amax: int) -> FloatArray:
    """hv[A] = the A-th smallest value among those with count ≥ c_(A+1), A ≤ amax."""
    amax = min(amax, st.desc.size - 1)
    out = np.full(amax + 1, -np.inf)  # A with c_(A+1) < c1 − amax − 2 are never feasible
    for c, h, cur in _heavy_tables(st, amax + 1):
        lo = int(np.searchsorted(-st.desc, -c, side="left"))  # first A with c_(A+1) = c
        hi = min(h, amax + 1)
        if lo < hi:
            out[lo:hi] = cur[lo:hi]
        if h > amax:
            break
    return out


def _diagonal(st: _ModeStats, total: int, i_max: int, j_max: int) -> FloatArray:
    """G(i) − F(j) over i + j = max(0, total), 0 ≤ i ≤ i_max, 0 ≤ j ≤ j_max."""
    tot = max(0, total)
    i = np.arange(max(0, tot - j_max), min(i_max, tot) + 1, dtype=np.int64)
    return st.g(i) - st.f(tot - i)


def _mode_sub_k(st: _ModeStats, k: int) -> float:
    """Substitution LS_k of the mode for k < n, n ≥ 2: types Y-A … Y-D (Y-E1 is in :func:`_mode_profile`)."""
    n = st.n
    m = max(1, st.c_min(k))
    m1 = max(1, st.c_min(k + 1))
    parts: list[FloatArray] = []
    # (Y-B and Y-C with both thresholds ≤ C are Y-A's configurations at one more cost;
    # Y-E with h after every heavy value is Y-A or Y-C at C − 1: both omitted, see the docs)
    if 2 * m <= n:  # Y-A: ℓ and h tied at C (ℓ the mode), z replaces an ℓ by an h
        parts.append(_diagonal(st, 2 * m - k, m, m))
    if 2 * m1 + 1 <= n:  # Y-B (ℓ has C + 1), Y-C (h has C + 1)
        parts.append(st.g(np.array([max(0, m1 - k)])) - st.f(np.array([m1 + 1])))
        parts.append(st.g(np.array([m1 + 1])) - st.f(np.array([max(0, m1 - k)])))
    for c in {m1, m}:  # Y-D: ℓ at C − 1, h at C + 1
        j = max(0, c - 1 - k)
        flag = int(st.f_cnt[min(j, st.c1 + 1)] >= c)
        if 2 * c <= n and int(st.s(np.array([c]))[0]) - 1 + flag <= k:
            parts.append(st.g(np.array([c + 1])) - st.f(np.array([j])))
    return _best(*parts)


def _mode_profile(arr: FloatArray, a: float, b: float, kmax: int, relation: Relation) -> FloatArray:
    st = _mode_stats(arr, a, b)
    n = st.n
    out = np.zeros(kmax + 1)
    if relation == "add_remove":
        # the mode of the empty dataset is undefined (nan): a dataset of size ≤ 1 within
        # reach has a neighbour with no mode, so LS_k = +inf for k ≥ n − 1
        out[:] = np.inf
        finite = min(kmax + 1, max(0, n - 1))
        if finite:
            hv = _hv_for_l1(st, finite)
            for k in range(finite):
                out[k] = _mode_ar_k(st, k, hv)
        return np.maximum.accumulate(out)
    if n == 0:
        return out
    if n == 1:
        x0 = float(arr[0])
        out[:] = b - a
        out[0] = max(x0 - a, b - x0)
        return out
    out[:] = b - a  # k ≥ n: any dataset; {a, b, fresh…} → replace a by b gives b − a
    top = min(kmax, n - 1)
    for k in range(top + 1):
        out[k] = _mode_sub_k(st, k)
    # Y-E1: h the p-th value with count ≥ C (p = k − S(C)), ℓ at C − 1
    ks = np.arange(top + 1, dtype=np.int64)
    for c, h_c, cur in _heavy_tables(st, top):
        if c < max(1, st.c_min(top)):
            break
        if 2 * c - 1 > n or h_c == 0:
            continue
        sc = int(st.s(np.array([c]))[0])
        kk = ks[ks >= sc]
        if not kk.size:
            continue
        p = np.minimum(kk - sc, h_c - 1)
        h = cur[p]
        if c == 1:  # y = {h} ∪ values above h with count ≤ 1 is impossible for h = b (defensive: only k = n − 1)
            bad = h >= b
            p = np.where(bad, p - 1, p)
            h = np.where(p >= 0, cur[np.maximum(p, 0)], -np.inf)
        val = h - st.f(np.maximum(0, c - 1 - kk))
        out[kk] = np.maximum(out[kk], val)
    return np.maximum.accumulate(out)


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
    rel = _relation(owner, relation)
    kind = _kind(owner, query)
    kmax = _check_k(owner, "kmax", kmax)
    arr = _prepare(owner, query, values)
    a, b = _bounds(owner, query)
    if kind in ("median", "quantile", "max", "min"):
        q = Fraction(1) if kind in ("max", "min") else (query.q if query.q is not None else Fraction(1, 2))
        if kind == "min":
            arr = (a + b) - arr  # min(x) = (a + b) − max((a + b) − x), same bounds, same LS
        return _order_profile(_order_window(arr, q, kmax), a, b, q, kmax, rel)
    if kind == "mode":
        return _mode_profile(arr, a, b, kmax, rel)
    xs = np.sort(arr)
    n = int(xs.size)
    if kind == "trimmed_mean":
        assert query.trim is not None
        if rel == "substitution":
            return _tm_sub_profile(xs, a, b, query.trim, kmax)
        return _tm_ar_profile(xs, a, b, query.trim, kmax)
    if kind == "mean" and rel == "add_remove":
        prefixes = _mean_prefixes(xs, a, b)
        out = np.array([_mean_ls(xs, a, b, k, prefixes) for k in range(kmax + 1)])
        return np.maximum.accumulate(out)
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
    rel = _relation(owner, relation)
    kind = _kind(owner, query)
    if kind in ("mean", "trimmed_mean") and rel == "add_remove":
        # _mean_ls(k) ranges over every (removals r, additions s) with r + s <= k: O(k) after sorting;
        # _tm_ar_ls(k) over every size m and window position: O(k²) after sorting
        xs = np.sort(_prepare(owner, query, values))
        a, b = _bounds(owner, query)
        if kind == "mean":
            return _mean_ls(xs, a, b, k)
        assert query.trim is not None
        return _tm_ar_ls(xs, a, b, query.trim, k)
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
            ``min(γ, cap)`` keeps every property above, and bounds the work.

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
    rel = _relation(owner, relation)
    _kind(owner, query)
    if isinstance(bound, bool) or not isinstance(bound, (int, float, Fraction)) or not bound >= 0 or math.isinf(float(bound)):
        raise InvalidArgument(owner, "bound", bound, "must be a finite number >= 0")
    beta = float(bound)
    arr = _prepare(owner, query, values)
    limit = int(arr.size) + 2
    if cap is not None:
        limit = min(limit, _check_k(owner, "cap", cap))
    cap = limit
    kmax = min(cap, 64)
    while True:  # doubling: cost O(D^2) for order statistics, D the answer
        prof = ls_profile(query, arr, kmax, rel)
        above = np.nonzero(prof > beta)[0]
        if above.size:
            return int(above[0])
        if kmax >= cap:
            return cap
        kmax = min(cap, 2 * kmax)


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
    rel = _relation("mode_gap_distance", relation)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or np.isnan(arr).any():
        raise InvalidArgument("mode_gap_distance", "values", "(array)", "must be 1-D without NaN")
    if arr.size == 0:
        return 0 if rel == "add_remove" else 2
    uniq, counts = np.unique(arr, return_counts=True)
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
