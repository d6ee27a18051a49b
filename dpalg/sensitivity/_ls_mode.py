"""The mode's exact LS_k (both relations): split out of :mod:`dpalg.sensitivity._catalog`.

Model and derivations: ``_catalog``'s docstring and ``docs/mechanisms/local_sensitivity.md``
("Mode, add/remove", "Mode, substitution").
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np

from dpalg.data import Relation
from dpalg.sensitivity._ls_common import FloatArray, IntArray

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
