"""The trimmed mean's exact LS_k (both relations): split out of :mod:`dpalg.sensitivity._catalog`.

Model, padding and derivations: ``_catalog``'s docstring and
``docs/mechanisms/local_sensitivity.md`` ("Trimmed mean").
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpalg.sensitivity._ls_common import FloatArray, IntArray, _pad, _val

# --------------------------------------------------------------------------- trimmed mean
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
