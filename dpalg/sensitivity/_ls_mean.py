"""Local sensitivity at distance k of the clipped mean under add/remove (exact, vectorised).

Part of the catalog (:mod:`dpalg.sensitivity._catalog`): ``LS_k`` of the mean of values
clipped to [a, b] is a maximum over how many of the r largest values are removed and
how many extreme values are added, of closed forms in the prefix sums; ``_phi_best``
maximises the unimodal term over its integer range. ``_mean_ls`` evaluates one k (the
reference definition), ``_mean_ls_profile`` all k up to the public cap on one (k, r) grid,
bit-identically (tested).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpalg.sensitivity._ls_common import FloatArray

__all__ = ["_mean_ls", "_mean_ls_profile", "_mean_prefixes", "mean_ls_profile_from_extremes"]


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


_MEAN_GRID_CELLS = 1 << 20  # (k, r) cells per vectorised block: bounded memory whatever the cap


def _mean_one_side_profile(xs: FloatArray, a: float, b: float, kmax: int, prefix: FloatArray) -> FloatArray:
    """:func:`_mean_one_side` for every k in 0..kmax at once (see :func:`_mean_one_side_tail`)."""
    n = xs.size
    j = np.minimum(np.arange(0, min(kmax, n) + 2, dtype=np.int64), n)
    return _mean_one_side_tail(n, float(xs[-1]) if n else 0.0, prefix[n - j], a, b, kmax)


def _mean_one_side_tail(n: int, x_max: float, tail: FloatArray, a: float, b: float, kmax: int) -> FloatArray:
    """:func:`_mean_one_side` for every k in 0..kmax at once, on a (k, r) grid in blocks of k.

    Reads the data only through ``tail[j] = Σ (x − a)`` over all but the j largest
    values (``j = 0..min(kmax, n) + 1``, clamped to n) and the largest value: the
    profile needs the sum and the ``kmax + 1`` largest values, never the column.
    Cell (k, r) is valid when r <= min(k, n); an invalid cell gets an empty u-range,
    so :func:`_phi_best` scores it -inf, exactly as the per-k function never visits it.
    """
    bp = b - a
    r = np.arange(0, min(kmax, n) + 1, dtype=np.int64)[None, :]
    nn = (n - r).astype(np.float64)
    pn = tail[r]
    have_max = n >= 1
    if have_max:
        pn1 = tail[np.minimum(r + 1, n)]
        h_max = x_max - a
    out = np.empty(kmax + 1, dtype=np.float64)
    step = max(1, _MEAN_GRID_CELLS // r.shape[1])
    for k0 in range(0, kmax + 1, step):
        ks = np.arange(k0, min(kmax + 1, k0 + step), dtype=np.int64)[:, None]
        valid = r <= ks
        big_s = (ks - r).astype(np.float64)
        shape = valid.shape
        hb = np.full(shape, bp)
        pnb = np.broadcast_to(pn, shape)
        lo_c = np.where(valid, nn, np.inf)
        best = _phi_best(hb, pnb, lo_c, nn + big_s)  # C: add-neighbour at size m = N + s
        lo_a1 = np.where(valid & (big_s >= 1), nn, np.inf)
        best = np.maximum(best, _phi_best(hb, pnb, lo_a1, nn + big_s - 1))  # A1: h = b added
        if have_max:
            lo_a2 = np.where(valid & (r <= n - 1), nn - 1, np.inf)
            a2 = _phi_best(np.full(shape, h_max), np.broadcast_to(pn1, shape), lo_a2, nn - 1 + big_s)  # A2
            best = np.maximum(best, a2)
        out[k0 : k0 + ks.shape[0]] = best.max(axis=1)
    return out


def mean_ls_profile_from_extremes(
    n: int, total: Fraction, smallest: FloatArray, largest: FloatArray, a: float, b: float, kmax: int
) -> FloatArray:
    """The add/remove ``LS_0..LS_kmax`` of the clipped mean from a summary of the data.

    ``total`` is the exact sum of the ``n`` clipped values, ``smallest`` and
    ``largest`` their ``min(kmax + 1, n)`` smallest and largest values (ascending);
    that is all the profile reads (:func:`_mean_one_side_tail`). The prefix sums of
    the full-array version become the total minus the sum of the extreme values;
    the computation is on data scaled by an exact power of two, as in
    :func:`~dpalg.sensitivity.ls_profile`, and the result is non-decreasing, NaN
    read as +inf.
    """
    if not (math.isfinite(a) and math.isfinite(b)):
        return np.full(kmax + 1, np.inf)
    top = max(abs(a), abs(b))
    e = math.frexp(top)[1] if top > 0 else 0
    sa, sb = math.ldexp(a, -e), math.ldexp(b, -e)
    lo = np.ldexp(smallest, -e)
    hi = np.ldexp(largest, -e)
    scaled_total = total / Fraction(2) ** e if e >= 0 else total * Fraction(2) ** -e
    m = min(kmax, n) + 2
    with np.errstate(all="ignore"):
        up_total = float(scaled_total - n * Fraction(sa))
        down_total = float(n * Fraction(sb) - scaled_total)
        up_tail = _tail(up_total, hi[::-1] - sa, m, n)
        down_tail = _tail(down_total, sb - lo, m, n)
        best = np.maximum(
            _mean_one_side_tail(n, float(hi[-1]) if n else 0.0, up_tail, sa, sb, kmax),
            _mean_one_side_tail(n, (sa + sb) - float(lo[0]) if n else 0.0, down_tail, sa, sb, kmax),
        )
        best = _mean_ends(best, n, sa, sb, float(lo[0]) if n else 0.0, float(hi[-1]) if n else 0.0, kmax)
        out = np.ldexp(np.maximum.accumulate(best), e)
    out = np.where(np.isnan(out), np.inf, out)
    return np.maximum.accumulate(out) if out.size else out


def _tail(total: float, extreme_terms: FloatArray, length: int, n: int) -> FloatArray:
    """``[total − (sum of the first j terms)]`` for j = 0..length − 1, j clamped to n.

    ``extreme_terms`` are the terms ``x − a ≥ 0`` of the extreme values, most extreme
    first. When they are all n values, the prefix sums are taken from the other end,
    exactly as the full-array profile does (so the empty remainder is exactly 0);
    otherwise each entry is clamped at 0 (a sum of non-negative terms).
    """
    j = np.minimum(np.arange(length), n)
    if extreme_terms.size >= n:
        prefix = np.concatenate(([0.0], np.cumsum(extreme_terms[:n][::-1])))
        out: FloatArray = prefix[n - j]
        return out
    partial = np.concatenate(([0.0], np.cumsum(extreme_terms)))
    return np.maximum(total - partial[np.minimum(j, partial.size - 1)], 0.0)


def _mean_ends(best: FloatArray, n: int, a: float, b: float, x_min: float, x_max: float, kmax: int) -> FloatArray:
    """The empty-dataset and one-value neighbourhoods (k ≥ n − 1, k ≥ n), as in :func:`_mean_ls`."""
    mid = (a + b) / 2
    ks = np.arange(kmax + 1)
    best = np.where(ks >= n, np.maximum(best, (b - a) / 2), best)  # the empty dataset
    if n >= 1:
        ends = max(max(abs(y0 - mid), max(y0 - a, b - y0) / 2) for y0 in (x_min, x_max))
        best = np.where(ks >= n - 1, np.maximum(best, ends), best)
    best = np.where(np.isnan(best), np.inf, best)  # conservative (cannot happen on scaled data)
    return np.maximum(best, 0.0)


def _mean_ls_profile(xs: FloatArray, a: float, b: float, kmax: int) -> FloatArray:
    """``[_mean_ls(xs, a, b, k) for k in 0..kmax]``, vectorised (one grid pass per side)."""
    n = xs.size
    up, down = _mean_prefixes(xs, a, b)
    with np.errstate(all="ignore"):
        best = np.maximum(_mean_one_side_profile(xs, a, b, kmax, up),
                          _mean_one_side_profile((a + b) - xs[::-1], a, b, kmax, down))
    return _mean_ends(best, n, a, b, float(xs[0]) if n else 0.0, float(xs[-1]) if n else 0.0, kmax)


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
    if any(math.isnan(c) for c in cands):
        return math.inf  # conservative (cannot happen on scaled data; kept as a guard)
    return max(0.0, max(cands))
