"""The exact exponential-mechanism primitive over weighted runs of candidates.

:func:`sample_exp_weights` returns ``j`` with probability proportional to
``counts[j] * exp(-gamma * scores[j])``. It never evaluates ``exp`` in floating
point. Exactness argument (also in ``docs/mechanisms/noise.md``):

* ``L`` is a rational *upper* bound of ``ln 2``. With ``x_j = gamma * scores[j]``
  and ``k_j = floor(x_j / L)`` we have ``k_j ln 2 <= k_j L <= x_j``, hence
  ``2**k_j <= exp(x_j)``. Capping ``k'_j = min(k_j, min_k + 256)`` keeps
  ``2**k'_j <= exp(x_j)`` (it only lowers the exponent).
* Proposal: ``j`` with probability ``∝ counts[j] * 2**(K - k'_j)`` (``K = max k'``),
  integer weights, drawn with ``big_below`` and a bisection of the prefix sums.
* Acceptance with probability ``a_j = exp(-x_j) * 2**k'_j`` in ``(0, 1]``, decided
  by comparing a lazily revealed uniform real with rigorous integer bounds of
  ``a_j`` (exp by a bounded Taylor series, ``ln 2`` by a bounded series), refined
  until the comparison is decided -- with probability one, exactly.
* Hence ``P[output j] ∝ counts[j] 2**-k'_j * exp(-x_j) 2**k'_j = counts[j] exp(-x_j)``.
  Every uncapped ``j`` is accepted with probability above ``1/2``, and capped ones
  carry at most ``2**-256`` of the proposal mass, so the expected number of
  rounds is below about 2.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from fractions import Fraction
from typing import Final, Sequence

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import nonneg, positive
from dpalg.noise._exact import Bounds, LazyUniform, exp_neg_bounds, ln2_bounds
from dpalg.noise._random import RngLike, resolve_rng

__all__ = ["envelope", "exponential_mechanism", "sample_exp_runs", "sample_exp_weights", "sample_exp_window", "near_threshold"]

_CAP: Final = 256
_LN2_UPPER: Final = Fraction(ln2_bounds(96)[1], 1 << 96)


def _acceptance_bounds(x: Fraction, k: int) -> Bounds:
    """Bounds of ``exp(-(x - k ln 2))`` for ``x >= k ln 2``."""

    def bounds(prec: int) -> tuple[int, int]:
        p = prec + k.bit_length() + 8
        l_lo, l_hi = ln2_bounds(p)
        y_lo = max(x - Fraction(k * l_hi, 1 << p), Fraction(0))
        y_hi = x - Fraction(k * l_lo, 1 << p)
        return exp_neg_bounds(y_hi, prec)[0], exp_neg_bounds(y_lo, prec)[1]

    return bounds


def envelope(
    scores: Sequence[Fraction], gamma: Fraction, counts: Sequence[int]
) -> tuple[list[Fraction], list[int], list[int]]:
    """The exponents ``x_j``, the capped envelope exponents ``k'_j`` and the prefix sums of the integer weights.

    ``weight_j = counts[j] * 2**(max k' - k'_j)`` and ``x_j >= k'_j * ln 2``.
    """
    xs = [gamma * v for v in scores]
    ks = [int(x // _LN2_UPPER) for x in xs]
    cap = min(ks) + _CAP
    ks = [min(k, cap) for k in ks]
    top = max(ks)
    cumulative: list[int] = []
    total = 0
    for cj, kj in zip(counts, ks):
        total += cj << (top - kj)
        cumulative.append(total)
    return xs, ks, cumulative


def sample_exp_weights(
    scores: Sequence[object],
    gamma: object,
    counts: Sequence[int] | None = None,
    rng: RngLike = None,
) -> int:
    """Sample ``j`` with probability ``∝ counts[j] * exp(-gamma * scores[j])``, exactly.

    Each index stands for a run of ``counts[j]`` candidates with the same score,
    so a domain of ``2**64`` elements in a few runs is sampled without
    enumerating it; to select an element inside the run, draw a uniform index
    with ``rng.big_below(counts[j])``.

    Args:
        scores: non-negative exact numbers (ints, Fractions, decimal strings, ...),
            at least one.
        gamma: the rate ``>= 0`` (``epsilon / (2 Δ)`` for the exponential mechanism).
        counts: positive Python ints (any size), one per score; default all 1.
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.

    Returns:
        The sampled index ``j``.

    Raises:
        InvalidArgument: empty or negative scores, negative ``gamma``, counts of
            the wrong length or not positive ints.

    Examples:
        >>> from dpalg.noise import SeededRandomness, sample_exp_weights
        >>> sample_exp_weights([0, 10**6], gamma=1, rng=SeededRandomness(0))
        0
        >>> sample_exp_weights([5, 5], 1, counts=[1, 2**70], rng=SeededRandomness(0))
        1

    References:
        F. McSherry, K. Talwar. Mechanism design via differential privacy.
        FOCS 2007 (the exponential mechanism). Exact sampling: rejection from a
        power-of-two envelope with lazy comparison of a uniform real against
        rigorous bounds (Knuth--Yao 1976; cf. Ilvento, "Implementing the
        exponential mechanism with base-2 differential privacy", CCS 2020).
    """
    owner = "sample_exp_weights"
    if len(scores) == 0:
        raise InvalidArgument(owner, "scores", scores, "must not be empty")
    s = [nonneg(v, owner=owner, field=f"scores[{i}]") for i, v in enumerate(scores)]
    g = nonneg(gamma, owner=owner, field="gamma")
    if counts is None:
        c = [1] * len(s)
    else:
        if len(counts) != len(s):
            raise InvalidArgument(owner, "counts", f"<{len(counts)} entries>", f"must have {len(s)} entries like scores")
        c = []
        for i, v in enumerate(counts):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgument(owner, f"counts[{i}]", v, "must be an int >= 1")
            c.append(int(v))
    source = resolve_rng(rng)
    xs, ks, cumulative = envelope(s, g, c)
    total = cumulative[-1]
    while True:
        u = source.big_below(total)
        j = bisect.bisect_right(cumulative, u)
        if LazyUniform(0, 0, source).less_than(_acceptance_bounds(xs[j], ks[j])):
            return j


def exponential_mechanism(
    utilities: Sequence[object],
    epsilon: object,
    sensitivity: object,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    *,
    monotone: bool = False,
) -> int:
    """The exponential mechanism: ``P[j] ∝ counts[j] * exp(eps * u_j / (2 Δ))``, exactly.

    Args:
        utilities: exact numbers, higher is better.
        epsilon: privacy parameter ``> 0``.
        sensitivity: the utility's sensitivity ``Δ > 0`` (max change of any
            ``u_j`` between neighbours).
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.
        counts: optional run lengths (see :func:`sample_exp_weights`).
        monotone: set when every utility moves in the same direction between
            neighbours; the rate is then ``eps / Δ`` instead of ``eps / (2 Δ)``.

    Returns:
        The selected index.

    Raises:
        InvalidArgument: ``epsilon`` or ``sensitivity`` not positive, bad utilities.

    Privacy guarantee:
        ``epsilon``-DP under the neighbouring relation for which ``Δ`` bounds the
        utility change (McSherry--Talwar 2007, Theorem 6; Dwork--Roth 2014,
        Theorem 3.10). With ``monotone=True`` the factor 2 is dropped (Dwork--Roth,
        remark after Theorem 3.10). Scores ``max u - u_j`` are used, which leaves
        the distribution unchanged.

    Examples:
        >>> from dpalg.noise import SeededRandomness, exponential_mechanism
        >>> exponential_mechanism([0, 100], epsilon=1, sensitivity=1, rng=SeededRandomness(0))
        1

    References:
        F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007, Thm 6.
        C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy, Thm 3.10.
    """
    owner = "exponential_mechanism"
    eps = positive(epsilon, owner=owner, field="epsilon")
    delta = positive(sensitivity, owner=owner, field="sensitivity")
    if len(utilities) == 0:
        raise InvalidArgument(owner, "utilities", utilities, "must not be empty")
    from dpalg._numbers import to_fraction

    u = [to_fraction(v, owner=owner, field=f"utilities[{i}]") for i, v in enumerate(utilities)]
    best = max(u)
    gamma = eps / delta if monotone else eps / (2 * delta)
    return sample_exp_weights([best - v for v in u], gamma, counts=counts, rng=rng)


def sample_exp_runs(
    scores: npt.NDArray[np.int64] | Sequence[int],
    gamma: object,
    counts: npt.NDArray[np.int64] | Sequence[int],
    rng: RngLike = None,
) -> int:
    """The fast path of :func:`sample_exp_weights` for many runs with integer scores.

    Same distribution and same envelope as :func:`sample_exp_weights` (index j
    with probability ``∝ counts[j]·exp(−gamma·scores[j])``, exactly), but only
    the runs whose envelope exponent is below the cap are handled with exact
    rationals; every run at the cap has envelope weight ``counts[j]`` and is
    treated as one vectorised block. Scores are non-negative int64; counts are
    positive ints (int64 array, or a sequence of Python ints of any size).

    Returns:
        The sampled run index.

    Raises:
        InvalidArgument: empty input, negative scores or gamma, non-positive counts.
    """
    owner = "sample_exp_runs"
    s = np.asarray(scores)
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise InvalidArgument(owner, "scores", f"<array {s.dtype} shape {s.shape}>", "must be a non-empty 1-D integer array")
    if int(s.min()) < 0:
        raise InvalidArgument(owner, "scores", "<array>", "must be >= 0")
    g = nonneg(gamma, owner=owner, field="gamma")
    big_counts = not isinstance(counts, np.ndarray) and any(int(c) >= 1 << 62 for c in counts)
    c_arr: npt.NDArray[np.int64] | None = None if big_counts else np.asarray(counts, dtype=np.int64)
    c_list: list[int] = [int(v) for v in counts] if big_counts else []
    n = s.size
    if (c_arr is not None and (c_arr.shape != s.shape or int(c_arr.min()) < 1)) or (big_counts and (len(c_list) != n or min(c_list) < 1)):
        raise InvalidArgument(owner, "counts", "<array>", "must be positive ints, one per score")
    source = resolve_rng(rng)
    ratio = g / _LN2_UPPER  # k(s) = floor(ratio * s), as in envelope()
    s_min = int(s.min())
    k_min = (ratio * s_min).__floor__()
    cap = k_min + _CAP
    if ratio == 0:
        near = np.arange(n)
    else:
        s_cap = -((-(cap * ratio.denominator)) // ratio.numerator)  # smallest s with floor(ratio s) >= cap
        near = np.flatnonzero(s < s_cap)
    far_mask = np.ones(n, dtype=np.bool_)
    far_mask[near] = False
    far = np.flatnonzero(far_mask)
    near_idx = near.tolist()
    near_k = [(ratio * int(s[j])).__floor__() for j in near_idx]
    top = cap if far.size else max(near_k)

    def count(j: int) -> int:
        if c_arr is None:
            return c_list[j]
        return int(c_arr[j])

    near_cum: list[int] = []
    acc = 0
    for j, kj in zip(near_idx, near_k):
        acc += count(j) << (top - kj)
        near_cum.append(acc)
    if big_counts:
        far_cum_py: list[int] = []
        facc = 0
        for j in far.tolist():
            facc += c_list[j]
            far_cum_py.append(facc)
        far_total = facc
    else:
        assert c_arr is not None
        far_counts = c_arr[far]
        far_cum = np.cumsum(far_counts, dtype=np.int64) if far.size and int(far_counts.sum()) < 1 << 62 else None
        far_cum_obj = None if far_cum is not None or not far.size else np.cumsum(far_counts.astype(object))
        far_total = int(far_cum[-1]) if far_cum is not None else (int(far_cum_obj[-1]) if far_cum_obj is not None else 0)
    total = acc + far_total
    while True:
        u = source.big_below(total)
        if u < acc:
            pos = bisect.bisect_right(near_cum, u)
            j, kj = near_idx[pos], near_k[pos]
        else:
            r = u - acc
            if big_counts:
                pos = bisect.bisect_right(far_cum_py, r)
            elif far_cum is not None:
                pos = int(np.searchsorted(far_cum, r, side="right"))
            else:
                assert far_cum_obj is not None
                pos = bisect.bisect_right(list(far_cum_obj), r)
            j, kj = int(far[pos]), cap
        if LazyUniform(0, 0, source).less_than(_acceptance_bounds(g * int(s[j]), kj)):
            return j


#: a run of candidates: (first candidate, number of candidates, integer score)
Run = tuple[int, int, int]


def near_threshold(s_min: int, gamma: Fraction) -> tuple[int, int]:
    """``(cap, s_cap)`` of :func:`sample_exp_runs` for the least score ``s_min``: runs scoring ``< s_cap`` are the near ones.

    Examples:
        >>> near_threshold(0, Fraction(1, 4))[0]
        256
    """
    ratio = gamma / _LN2_UPPER
    if ratio <= 0:
        raise InvalidArgument("near_threshold", "gamma", gamma, "must be > 0")
    cap = (ratio * s_min).__floor__() + _CAP
    return cap, -((-(cap * ratio.denominator)) // ratio.numerator)  # the smallest s with floor(ratio s) >= cap


def sample_exp_window(
    s_min: int,
    window: Callable[[int], Sequence[Run]],
    far_run: Callable[[int], Run],
    n_candidates: int,
    gamma: Fraction,
    rng: RngLike = None,
) -> Run:
    """:func:`sample_exp_runs` over runs given lazily: the same draws, the same run, for V-shaped scores.

    The runs tile the candidates ``0 .. n_candidates - 1`` in order, and the runs whose
    score is below any threshold are contiguous (scores fall, then rise: a quantile's).
    :func:`sample_exp_runs` treats every run whose envelope exponent reaches the cap as
    one block (the *far* block), proposed in proportion to its number of candidates:
    only the runs below the cap (the *near* runs) are needed up front. Here
    ``window(s_cap)`` returns, in order, a contiguous range of runs holding every run
    of score ``< s_cap`` (the near runs are those of its runs below ``s_cap``; every
    run outside it scores ``>= s_cap``), and ``far_run(p)`` the run holding candidate
    ``p`` -- asked only when the far block is proposed. ``s_min`` is the least score.

    Every random draw, its bound and the order of the cumulative weights are those of
    :func:`sample_exp_runs` on the full list of runs (the far block is enumerated in
    candidate order there too), so the returned run is the same one for the same
    randomness: the distribution is exactly the exponential mechanism's.

    Returns:
        The selected run ``(start, length, score)``.
    """
    source = resolve_rng(rng)
    ratio = gamma / _LN2_UPPER
    cap, s_cap = near_threshold(s_min, gamma)
    near = [run for run in window(s_cap) if run[2] < s_cap]
    near_k = [(ratio * s).__floor__() for _, _, s in near]
    first, last = near[0][0], near[-1][0] + near[-1][1]  # near runs are contiguous candidates
    left = first
    far_total = left + (n_candidates - last)
    top = cap if far_total else max(near_k)
    near_cum: list[int] = []
    acc = 0
    for (_, length, _), kj in zip(near, near_k):
        acc += length << (top - kj)
        near_cum.append(acc)
    total = acc + far_total
    while True:
        u = source.big_below(total)
        if u < acc:
            pos = bisect.bisect_right(near_cum, u)
            run, kj = near[pos], near_k[pos]
        else:
            r = u - acc
            run, kj = far_run(r if r < left else last + (r - left)), cap
        if LazyUniform(0, 0, source).less_than(_acceptance_bounds(gamma * run[2], kj)):
            return run
