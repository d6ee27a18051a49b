"""Differentially private partition selection: which keys of a GROUP BY may be released.

Setting. Every privacy unit (user) contributes to at most ``m`` partitions (keys);
a key held by ``n`` distinct users is *kept* independently with probability
``pi(n)``, and the release is the set of kept keys. Keys that are absent from the
data (``n = 0``) are never kept. Neighbouring datasets differ by one user (add /
remove).

Optimal selection, one partition per user (Desfontaines, Voss, Gipson, Mandayam,
PoPETs 2022, Theorem 1). The set of kept keys is (eps, delta)-DP if and only if,
for every ``n >= 1``,

    ``pi(n) <= e^eps pi(n-1) + delta``  and  ``1 - pi(n-1) <= e^eps (1 - pi(n)) + delta``

(only one key's count changes, by one; the other keys' coins are identical and
independent), with ``pi(0) = 0``. The pointwise largest such ``pi`` is therefore

    ``pi(n) = min(e^eps pi(n-1) + delta,  1 - e^-eps (1 - pi(n-1) - delta),  1)``,

and DVGM's closed form of it is: with ``n1``, the last ``n`` at which the first term
is the smaller one, ``pi(n) = delta (e^(n eps) - 1) / (e^eps - 1)`` for
``n <= n1`` and ``pi(n) = pi(n1) + (1 - pi(n1) + delta / (e^eps - 1)) (1 - e^(-(n - n1) eps))``
until it reaches 1. Two facts used below follow from the recurrence directly:

* the first term is the smaller one exactly when ``pi(n-1) (1 + e^eps) <= 1 - delta``;
* ``pi(n) = 1`` exactly when ``pi(n-1) >= 1 - delta`` (the second term is ``>= 1``
  only then, and then so is the first). :func:`certain_keep_count` is the first such
  ``n``; it is a function of ``(eps, delta)`` only (public).

``pi`` is irrational (a polynomial in ``e^{+-eps}``), so this module never
computes it in floating point: :func:`keep_probability_bounds` runs the recurrence
in interval arithmetic on integers (each step rounds the lower end down and the
upper end up, and ``min`` is monotone, so the bounds stay rigorous without ever
deciding which branch is active), at a working precision raised until the interval
is narrower than one unit. Whether ``pi(n) = 1`` is decided exactly (comparing the
interval of ``pi(n-1)`` with the rational ``1 - delta``, refining if they overlap).

Several partitions per user. With ``m = max_partitions``, each key uses
``(eps/m, delta_m)`` where ``delta_m >= delta/m`` is a rational lower bound of
``1 - (1 - delta)^(1/m)``: the kept/dropped decisions of the ``m`` changed keys are
independent mechanisms, and ``m`` of them that are each ``(eps/m, delta_m)``-DP
compose to ``(eps, 1 - (1 - delta_m)^m)``-DP, ``<= delta`` (Kairouz, Oh,
Viswanath 2015, Theorem 3.3 with ``i = 0``; the same split is what DVGM
Section 5 and Google's library use). This is not claimed optimal for ``m > 1``.

Exact sampling in constant work (:func:`sample_keep`). Every key gets ``k`` fresh
uniform 64-bit words (``k = 1`` for up to :data:`ONE_WORD_KEYS` keys, else
``k = 2``), read as the first ``64 k`` bits of a uniform real ``R_j``; the key is
kept iff ``R_j < pi(n_j)``. A precomputed table holds integer bounds
``lo_n <= 2**(64k) pi(n) <= hi_n`` with ``hi_n - lo_n <= 2`` for
``n = 0..certain_keep_count`` (counts above it use its entry, ``pi = 1``). Then
``R_j < pi`` is certain when ``w_j < lo_n`` and impossible when ``w_j >= hi_n``;
both cases are decided by the same whole-array operations for every key
(a table lookup and ``k``-word comparisons), so the random words drawn, the calls
made and the branches taken do not depend on the counts -- except in the event

    ``G``: some key's words fall inside its bounds' gap, ``lo_n <= w_j < hi_n``,

where that key's comparison is finished exactly with further bits of the same
``R_j`` (:class:`~dpalg.noise._exact.LazyUniform`). ``P[G] <= N * 2 / 2**(64k)``,
which is ``<= 2**-41`` for ``N <= 2**22`` keys with one word, and ``<= 2**-65``
for ``N <= 2**62`` with two. Keys with ``n = 0`` and ``n >= certain_keep_count``
draw the same words as the others.

Gaussian thresholding for zCDP plans (:func:`sample_keep_gaussian`): keep key
``j`` iff ``n_j + Z_j >= tau`` with ``Z_j`` discrete Gaussian of variance parameter
``sigma2`` (CKS 2020, drawn exactly, ``N`` of them whatever the counts), and never
a key with ``n_j = 0``. Its cost is stated on :func:`sample_keep_gaussian`.

References:
    D. Desfontaines, J. Voss, B. Gipson, C. Mandayam. Differentially private
    partition selection. PoPETs 2022(1), Theorem 1 and Section 5.
    P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
    privacy. ICML 2015, Theorem 3.3.
    M. Bun, T. Steinke. Concentrated differential privacy: simplifications,
    extensions, and lower bounds. TCC 2016 (approximate zCDP, Definition 8.1 and
    Proposition 1.3).
    C. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for differential
    privacy. NeurIPS 2020, Theorem 4.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Final, NoReturn

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import positive, to_fraction
from dpalg.noise._exact import LazyUniform, exp_neg_bounds
from dpalg.noise._gaussian import MAX_GAUSSIAN_SIGMA2, gaussian_int
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng
from dpalg.noise._tails import gaussian_tail_quantile

__all__ = [
    "MAX_CERTAIN_KEEP_COUNT",
    "ONE_WORD_KEYS",
    "certain_keep_count",
    "gaussian_selection_threshold",
    "keep_probability_bounds",
    "keep_probability_float",
    "per_partition_budget",
    "sample_keep",
    "sample_keep_gaussian",
]

#: the largest :func:`certain_keep_count` accepted (a table of this many entries is built)
MAX_CERTAIN_KEEP_COUNT: Final = 1 << 20
#: up to this many keys, one 64-bit word per key (``P[G] <= 2**-41``); above, two words
ONE_WORD_KEYS: Final = 1 << 22
_MAX_PARTITIONS: Final = 1 << 20
_OWNER: Final = "partition selection"


# ---------------------------------------------------------------- the keep probabilities


def per_partition_budget(epsilon: object, delta: object, max_partitions: int = 1) -> tuple[Fraction, Fraction]:
    """The ``(eps_m, delta_m)`` each key uses when a user holds up to ``max_partitions`` keys.

    ``eps_m = eps / m`` and ``delta_m = max(delta / m, 1 - q)`` where ``q`` is the
    smallest multiple of ``2**-P`` with ``q**m >= 1 - delta`` (so ``1 - q <= 1 - (1 -
    delta)**(1/m)``, and ``m`` such keys compose to ``(eps, delta)``: module docstring).

    Raises:
        InvalidArgument: ``epsilon <= 0``, ``delta`` outside ``(0, 1)``, ``max_partitions`` not an int in ``[1, 2**20]``.

    Examples:
        >>> per_partition_budget(1, "1e-5")
        (Fraction(1, 1), Fraction(1, 100000))
        >>> eps, d = per_partition_budget(1, "1e-5", 4)
        >>> eps, Fraction(1, 400000) < d < Fraction(1, 399990)
        (Fraction(1, 4), True)
    """
    eps = positive(epsilon, owner=_OWNER, field="epsilon")
    dlt = to_fraction(delta, owner=_OWNER, field="delta")
    if not 0 < dlt < 1:
        raise InvalidArgument(_OWNER, "delta", delta, "must be in (0, 1)")
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, int) or not 1 <= max_partitions <= _MAX_PARTITIONS:
        raise InvalidArgument(_OWNER, "max_partitions", max_partitions, f"must be an int in [1, {_MAX_PARTITIONS}]")
    m = max_partitions
    if m == 1:
        return eps, dlt
    return eps / m, max(dlt / m, _root_complement(dlt, m))


def _root_complement(delta: Fraction, m: int) -> Fraction:
    """A rational ``d <= 1 - (1 - delta)**(1/m)``: ``1 - q`` for the smallest ``q = k / 2**P`` with ``q**m >= 1 - delta``."""
    p = 64 + 2 * max(delta.denominator.bit_length() - delta.numerator.bit_length(), 0) + m.bit_length()
    target_num, target_den = delta.denominator - delta.numerator, delta.denominator  # 1 - delta
    lo, hi = 0, 1 << p  # q = hi / 2**P satisfies q**m >= 1 - delta; lo does not (lo**m < ...)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid**m * target_den >= target_num << (p * m):
            hi = mid
        else:
            lo = mid
    return 1 - Fraction(hi, 1 << p)


@functools.lru_cache(maxsize=64)
def _table(eps: Fraction, delta: Fraction, prec: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """``(n_star, ((lo_n, hi_n) for n = 0..n_star))`` with ``lo_n <= 2**prec pi(n) <= hi_n``, ``hi_n - lo_n <= 2``.

    ``n_star`` (:func:`certain_keep_count`) is exact; entry ``n_star`` is ``(2**prec, 2**prec)``.
    """
    if _estimate_certain_count(eps, delta) > 2 * MAX_CERTAIN_KEEP_COUNT:  # fail fast; the exact loop has the same limit
        _too_many(eps, delta)
    guard = 32
    while True:
        got = _recurrence(eps, delta, prec + guard, prec + 1)
        if got is not None:
            n_star, rows = got
            shift = guard
            out = tuple((lo >> shift, -((-hi) >> shift)) for lo, hi in rows)
            assert all(hi - lo <= 2 for lo, hi in out)
            return n_star, out
        guard *= 2
        if guard > 1 << 16:  # pragma: no cover - pi(n-1) = 1 - delta to 2**-65536: never for rational inputs
            raise InvalidArgument(_OWNER, "delta", delta, "could not be separated from a keep probability (please report)")


def _recurrence(eps: Fraction, delta: Fraction, work: int, need: int) -> tuple[int, list[tuple[int, int]]] | None:
    """Interval bounds of ``pi(0..n_star)`` at ``work`` bits, or None if ``work`` is too low.

    Too low means: some interval is not narrower than ``2**(work - need)`` units (one
    unit at ``need`` bits), or ``pi(n-1) >= 1 - delta`` could not be decided.
    """
    one = 1 << work
    q_lo, q_hi = exp_neg_bounds(eps, work)  # e^-eps
    e_lo, e_hi = (one * one) // q_hi, -((-(one * one)) // q_lo)  # e^eps = 1 / e^-eps
    d_lo = (delta.numerator << work) // delta.denominator
    d_hi = -((-(delta.numerator << work)) // delta.denominator)
    # pi(n) = 1 iff pi(n-1) >= 1 - delta = c_num / c_den
    c_num, c_den = delta.denominator - delta.numerator, delta.denominator
    limit = 1 << (work - need)
    rows = [(0, 0)]
    p_lo = p_hi = 0
    for _ in range(MAX_CERTAIN_KEEP_COUNT):
        if p_lo * c_den >= c_num * one:  # pi(n-1) >= 1 - delta for sure: pi(n) = 1 exactly
            rows.append((one, one))
            return len(rows) - 1, rows
        if p_hi * c_den >= c_num * one:  # undecided at this precision
            return None
        # first branch: e^eps p + delta (increasing in both factors)
        a_lo = ((e_lo * p_lo) >> work) + d_lo
        a_hi = -((-(e_hi * p_hi)) >> work) + d_hi
        # second branch: 1 - e^-eps c with c = 1 - p - delta > 0 here (p < 1 - delta was just proven)
        c_lo, c_hi = one - p_hi - d_hi, one - p_lo - d_lo
        qc_lo = (q_lo * max(c_lo, 0)) >> work
        qc_hi = -((-(q_hi * c_hi)) >> work)
        b_lo, b_hi = one - qc_hi, one - qc_lo
        p_lo, p_hi = min(a_lo, b_lo, one), min(a_hi, b_hi, one)
        if p_hi - p_lo >= limit:
            return None
        rows.append((p_lo, p_hi))
    _too_many(eps, delta)


def _too_many(eps: Fraction, delta: Fraction) -> NoReturn:
    raise InvalidArgument(
        _OWNER, "epsilon", eps,
        f"with delta={delta}: keys would need more than {MAX_CERTAIN_KEEP_COUNT} users to be kept surely; use a larger epsilon or delta",
    )


def _estimate_certain_count(eps: Fraction, delta: Fraction) -> float:
    """DVGM's closed form solved for ``pi(n) >= 1 - delta`` in floating point (only to refuse hopeless parameters early)."""
    e, d = float(eps), float(delta)
    if d <= 0.0 or e <= 0.0:
        return math.inf
    n1 = 1 + math.floor(math.log1p(math.tanh(e / 2) * (1 / d - 1)) / e)
    p1 = min(math.expm1(n1 * e) / math.expm1(e) * d, 1.0) if n1 * e < 700 else 1.0
    c = d / math.expm1(e)
    return n1 + max(0.0, math.log((1 - p1 + c) / (c + d)) / e)


def certain_keep_count(epsilon: object, delta: object, *, max_partitions: int = 1) -> int:
    """The least ``n`` with ``pi(n) = 1`` (public: a function of the parameters only).

    Examples:
        >>> certain_keep_count(1, "1e-5")
        23
        >>> certain_keep_count("0.1", "1e-8")
        310
    """
    eps, dlt = per_partition_budget(epsilon, delta, max_partitions)
    return _table(eps, dlt, 64)[0]


def keep_probability_bounds(n: int, epsilon: object, delta: object, prec: int = 64, *, max_partitions: int = 1) -> tuple[int, int]:
    """Integers ``(lo, hi)`` with ``lo <= 2**prec * pi(n) <= hi`` and ``hi - lo <= 2``.

    ``pi`` is the optimal keep probability of DVGM 2022, Theorem 1 (module
    docstring) for the per-partition budget of :func:`per_partition_budget`.
    Exact ends (``lo == hi``) for ``n = 0`` (``pi = 0``) and ``n >=``
    :func:`certain_keep_count` (``pi = 1``).

    Raises:
        InvalidArgument: ``n`` not an int ``>= 0``, ``prec`` not an int in ``[1, 2**16]``,
            invalid ``epsilon``/``delta``/``max_partitions``.

    Examples:
        >>> lo, hi = keep_probability_bounds(12, 1, "1e-5")
        >>> round(lo / 2**64, 4), hi - lo <= 2
        (0.7603, True)
        >>> keep_probability_bounds(6, 1, "1e-5", prec=20)[1] / 2**20 < 0.003
        True
        >>> keep_probability_bounds(10**9, 1, "1e-5", prec=8)
        (256, 256)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InvalidArgument("keep_probability_bounds", "n", n, "must be an int >= 0")
    if isinstance(prec, bool) or not isinstance(prec, int) or not 1 <= prec <= 1 << 16:
        raise InvalidArgument("keep_probability_bounds", "prec", prec, "must be an int in [1, 65536]")
    eps, dlt = per_partition_budget(epsilon, delta, max_partitions)
    return _pi_bounds(eps, dlt, int(n), prec)


def _pi_bounds(eps: Fraction, delta: Fraction, n: int, prec: int) -> tuple[int, int]:
    n_star, rows = _table(eps, delta, prec)
    return rows[min(n, n_star)]


def keep_probability_float(n: int, epsilon: float, delta: float) -> float:
    """DVGM's closed form of ``pi(n)`` in floating point: a test oracle and for plots, never a release path.

    ``n1 = 1 + floor(log1p(tanh(eps/2) (1/delta - 1)) / eps)``; ``delta (e^(n eps) - 1)
    / (e^eps - 1)`` up to ``n1``, then ``pi(n1) + (1 - pi(n1) + delta/(e^eps - 1))
    (1 - e^(-(n - n1) eps))`` capped at 1.

    Examples:
        >>> round(keep_probability_float(12, 1.0, 1e-5), 4)
        0.7603
    """
    if n <= 0:
        return 0.0
    n1 = 1 + math.floor(math.log1p(math.tanh(epsilon / 2) * (1 / delta - 1)) / epsilon)

    def first(k: int) -> float:
        return math.expm1(k * epsilon) / math.expm1(epsilon) * delta

    if n <= n1:
        return min(first(n), 1.0)
    p1 = first(n1)
    return min(1.0, p1 - (1 - p1 + delta / math.expm1(epsilon)) * math.expm1(-(n - n1) * epsilon))


# ---------------------------------------------------------------- sampling


@functools.lru_cache(maxsize=32)
def _word_table(eps: Fraction, delta: Fraction, words: int) -> tuple[int, list[npt.NDArray[np.uint64]], list[npt.NDArray[np.uint64]], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per count ``n = 0..n_star``: ``lo_n`` and ``top_n = hi_n - 1`` split into ``words`` uint64 digits (most significant first), and flags.

    ``sure[n]``: ``pi(n) = 1``. ``gap[n]``: ``lo_n < hi_n`` and ``0 < pi(n) < 1`` (a word in ``[lo_n, top_n]`` is undecided).
    """
    prec = 64 * words
    n_star, rows = _table(eps, delta, prec)
    size = n_star + 1
    full = 1 << prec
    lo_d = [np.zeros(size, dtype=np.uint64) for _ in range(words)]
    top_d = [np.zeros(size, dtype=np.uint64) for _ in range(words)]
    sure = np.zeros(size, dtype=np.bool_)
    gap = np.zeros(size, dtype=np.bool_)
    mask = (1 << 64) - 1
    for n, (lo, hi) in enumerate(rows):
        if lo == full:  # pi = 1 exactly (lo == hi == 2**prec)
            sure[n] = True
            lo, hi = 0, 0
        elif hi > lo:
            gap[n] = True
        top = max(hi - 1, 0)
        assert 0 <= lo < full and top < full
        for i in range(words):
            sh = 64 * (words - 1 - i)
            lo_d[i][n] = (lo >> sh) & mask
            top_d[i][n] = (top >> sh) & mask
    return n_star, lo_d, top_d, sure, gap


def _less(a: list[npt.NDArray[np.uint64]], b: list[npt.NDArray[np.uint64]]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """``(a < b, a == b)`` for numbers written as equal-length lists of uint64 digits (most significant first)."""
    less = np.zeros(a[0].shape, dtype=np.bool_)
    equal = np.ones(a[0].shape, dtype=np.bool_)
    for x, y in zip(a, b):
        less |= equal & (x < y)
        equal &= x == y
    return less, equal


def _check_counts(user_counts: object, owner: str) -> npt.NDArray[np.int64]:
    c = np.asarray(user_counts)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer) or c.dtype == np.uint64:
        raise InvalidArgument(owner, "user_counts", f"<array {c.dtype} shape {c.shape}>", "must be a 1-D int64-compatible integer array")
    out = c.astype(np.int64)
    if out.size and int(out.min()) < 0:
        raise InvalidArgument(owner, "user_counts", "<array>", "must be >= 0")  # never print the counts
    return out


def sample_keep(
    user_counts: npt.NDArray[np.int64],
    epsilon: object,
    delta: object,
    rng: RngLike = None,
    *,
    max_partitions: int = 1,
) -> npt.NDArray[np.bool_]:
    """For every key, an exact Bernoulli(``pi(n_k)``): keep it or not, in count-independent work.

    Args:
        user_counts: the number of distinct users of each key (int64, ``>= 0``).
        epsilon: the (eps, delta)-DP budget of the whole selection, ``> 0``.
        delta: in ``(0, 1)``.
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.
        max_partitions: the most keys one user contributes to (a contribution bound
            enforced upstream); the budget is split per :func:`per_partition_budget`.

    Returns:
        A bool array, ``True`` where the key is kept. Keys with count 0 are never kept.

    Raises:
        InvalidArgument: counts not a 1-D integer array or negative (the message never
            shows them); invalid ``epsilon``/``delta``/``max_partitions`` -- all before
            any randomness is drawn.

    Privacy guarantee:
        The set of kept keys is (eps, delta)-DP under adding or removing one user who
        holds at most ``max_partitions`` keys (DVGM 2022, Theorem 1 for one key;
        Kairouz--Oh--Viswanath 2015, Theorem 3.3 for ``m`` keys). For ``m = 1`` no
        keep probabilities are larger (DVGM, Theorem 1: optimality).

    Work:
        ``rng.uint64(N)`` called once (``k`` times for ``N >`` :data:`ONE_WORD_KEYS`)
        and the same whole-array operations for any counts, except in the event
        ``G`` of the module docstring (a word inside its bounds' gap), of
        probability ``<= 2**-40``.

    Examples:
        >>> import numpy as np
        >>> from dpalg.noise import SeededRandomness
        >>> sample_keep(np.array([0, 1, 40, 10**9]), 1, "1e-5", SeededRandomness(0)).tolist()
        [False, False, True, True]
    """
    owner = "sample_keep"
    counts = _check_counts(user_counts, owner)
    eps, dlt = per_partition_budget(epsilon, delta, max_partitions)
    source = resolve_rng(rng)
    size = int(counts.size)
    words = 1 if size <= ONE_WORD_KEYS else 2
    n_star, lo_d, top_d, sure, gap_at = _word_table(eps, dlt, words)
    idx = np.minimum(counts, n_star)
    w = [source.uint64(size) for _ in range(words)]
    lo = [d[idx] for d in lo_d]
    top = [d[idx] for d in top_d]
    below, _ = _less(w, lo)
    above_top, _ = _less(top, w)
    keep: npt.NDArray[np.bool_] = sure[idx] | below  # sure rows have lo = 0 (below is False there)
    undecided = gap_at[idx] & ~below & ~above_top
    for j in np.flatnonzero(undecided).tolist():  # the event G: probability <= N * 2**(1 - 64 k)
        prefix = 0
        for d in w:
            prefix = (prefix << 64) | int(d[j])
        r = LazyUniform(prefix, 64 * words, source)
        keep[j] = r.less_than(functools.partial(_pi_bounds, eps, dlt, int(idx[j])))
    return keep


# ---------------------------------------------------------------- Gaussian thresholding


def gaussian_selection_threshold(sigma2: object, delta: object, *, max_partitions: int = 1) -> int:
    """The least integer ``tau`` with ``1 - (1 - P[1 + Z >= tau])**m <= delta``, ``Z`` discrete Gaussian(``sigma2``).

    It suffices (and is what is computed, rigorously) that ``P[Z >= tau - 1] <= delta / m``;
    by symmetry ``P[Z >= tau - 1] = P[|Z| > tau - 2] / 2``, so ``tau = 2 + q`` with
    ``q`` the least ``m'`` proven to have ``P[|Z| > m'] <= 2 delta / m``
    (:func:`~dpalg.noise._tails.gaussian_tail_quantile`).

    Examples:
        >>> gaussian_selection_threshold(4, "1e-5")
        10
    """
    owner = "gaussian_selection_threshold"
    s2 = positive(sigma2, owner=owner, field="sigma2")
    if s2 > MAX_GAUSSIAN_SIGMA2:
        raise InvalidArgument(owner, "sigma2", sigma2, "must be <= 2**100")
    dlt = to_fraction(delta, owner=owner, field="delta")
    if not 0 < dlt < Fraction(1, 2):
        raise InvalidArgument(owner, "delta", delta, "must be in (0, 1/2)")
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, int) or not 1 <= max_partitions <= _MAX_PARTITIONS:
        raise InvalidArgument(owner, "max_partitions", max_partitions, f"must be an int in [1, {_MAX_PARTITIONS}]")
    q, _ = gaussian_tail_quantile(s2, 2 * dlt / max_partitions)
    return 2 + q


def sample_keep_gaussian(
    user_counts: npt.NDArray[np.int64],
    sigma2: object,
    threshold: int,
    rng: RngLike = None,
) -> npt.NDArray[np.bool_]:
    """Keep key ``k`` iff ``n_k >= 1`` and ``n_k + Z_k >= threshold``, ``Z_k`` exact discrete Gaussian(``sigma2``).

    One ``Z_k`` per key is drawn whatever the counts (``N`` samples from the exact
    sampler, whose work depends on the random words and ``N`` only); the counts enter
    one addition and two comparisons.

    Privacy guarantee:
        Let each user hold at most ``m`` keys, ``rho = m / (2 sigma2)`` and
        ``delta_t = 1 - (1 - P[Z >= threshold - 1])**m`` (``<= delta`` when
        ``threshold = gaussian_selection_threshold(sigma2, delta, max_partitions=m)``).
        For neighbours ``x = x' + u``: the keys ``u`` alone holds (``n = 1`` in ``x``,
        absent from ``x'``, at most ``m``) are kept from ``x`` with probability at most
        ``delta_t``; conditioned on none of them being kept, the release from ``x`` is
        a post-processing of the Gaussian mechanism on counts differing from ``x'``'s by
        one on at most ``m`` keys (L2 sensitivity ``sqrt(m)``), which is ``rho``-zCDP
        (CKS 2020, Theorem 4). So the release is ``delta_t``-approximately ``rho``-zCDP
        (Bun--Steinke 2016, Definition 8.1). As (eps, delta)-DP: if ``rho``-zCDP gives
        ``(eps, delta_z)`` then the release is ``(eps, delta_z + e^eps delta_t)``-DP
        (the removal direction pays ``e^eps delta_t``: ``P[B' in S] - e^eps (1 -
        delta_t) P[B in S] <= delta_z + e^eps delta_t P[B in S]``).

    Examples:
        >>> import numpy as np
        >>> from dpalg.noise import SeededRandomness
        >>> sample_keep_gaussian(np.array([0, 1, 100]), 4, 10, SeededRandomness(0)).tolist()
        [False, False, True]
    """
    owner = "sample_keep_gaussian"
    counts = _check_counts(user_counts, owner)
    s2 = positive(sigma2, owner=owner, field="sigma2")
    if s2 > MAX_GAUSSIAN_SIGMA2:
        raise InvalidArgument(owner, "sigma2", sigma2, "must be <= 2**100")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or not -(1 << 62) < threshold < 1 << 62:
        raise InvalidArgument(owner, "threshold", threshold, "must be an int in (-2**62, 2**62)")
    source = resolve_rng(rng)
    z = gaussian_int(s2, int(counts.size), source)
    capped = np.minimum(counts, np.int64(1 << 61))  # n + Z stays inside int64 (|Z| <= 2**51)
    out: npt.NDArray[np.bool_] = (counts >= 1) & (capped + z >= np.int64(int(threshold)))
    return out
