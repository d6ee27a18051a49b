"""Permute-and-flip selection (McKenna--Sheldon 2020), sampled exactly, in work that does not depend on the scores.

Permute-and-flip over candidates with integer scores ``s_j >= 0`` (lower is
better; the score is ``(u* − u_j)`` in units where the rate is ``gamma``) visits
the candidates in a uniformly random order and stops at the first ``j`` whose coin
``C_j ~ Bernoulli(exp(−gamma·(s_j − s_min)))`` comes up heads.

:func:`sample_permute_flip` draws the same output distribution without a
permutation:

1. flip *every* coin: ``C_j = [Y_j >= s_j − s_min]`` where the ``Y_j`` are
   independent with ``P[Y_j >= m] = exp(−gamma·m)``
   (:func:`~dpalg.noise._geometric.geometric_exp`, exact, no floating point);
2. draw independent uniform 64-bit keys ``T_j``, one per candidate, and return the
   head (``C_j = 1``) with the smallest key; if several heads share the smallest
   key, a uniform one of them (``rng.big_below``).

Why this is permute-and-flip. (a) ``P[C_j = 1] = P[Y_j >= s_j − s_min] =
exp(−gamma·(s_j − s_min))``, independently over ``j``. (b) Let ``π`` be a uniform
permutation independent of the coins. The sequential algorithm returns the first
``j`` in ``π``-order with ``C_j = 1``; flipping the coins it never looks at
changes nothing, so its output is ``first_π(S)`` for ``S = {j : C_j = 1}``, and
given ``S`` that is uniform on ``S``. ``S`` is never empty: the best candidate's
coin is ``[Y >= 0] = 1``. (c) Step 2 is uniform on ``S`` given ``S``: the keys are
exchangeable and independent of the coins, and the rule (smallest key, uniform
among ties) commutes with relabelling. Hence ``P[j] = Σ_S P[S]·1[j ∈ S]/|S|``,
exactly the law of McKenna--Sheldon's Algorithm 1, and its privacy (their
Theorem 1) carries over.

Work. The scores enter exactly two whole-array operations of fixed size -- the
comparison ``Y >= s − s_min`` and the masked minimum of the keys -- and nothing
else: how many random words are drawn, in which calls, how many rounds the
samplers take and which branches they follow are functions of ``(gamma, N)`` and
of the random words alone (step 1 draws ``Y`` without looking at the scores; step
2 draws exactly ``N`` keys). The single exception is a tie at the smallest key
among the heads, which costs one extra ``big_below``: for ``|S|`` i.i.d. uniform
64-bit keys, ``P[the minimum is shared] <= Σ_{i<k} P[T_i = T_k = min] <=
C(|S|, 2) / (2**64 (|S| − 1)) = |S| / 2**65``, below ``2**-44`` for every input
(``|S| <= N <= 2**20 + 1``). The ``Y_j`` are drawn in int64 arithmetic for a
rate whose denominator is at most ``2**62``, otherwise with exact Python integers
(slower; a choice made on the public ``gamma``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import nonneg
from dpalg.noise._geometric import bernoulli_exp_scores
from dpalg.noise._random import RngLike, resolve_rng

__all__ = ["MAX_PF_CANDIDATES", "permute_flip_probabilities", "sample_permute_flip"]

#: the most candidates :func:`sample_permute_flip` flips coins for (public)
MAX_PF_CANDIDATES: Final = (1 << 20) + 1
_KEY_MAX: Final = (1 << 64) - 1


def sample_permute_flip(scores: npt.NDArray[np.int64], gamma: object, rng: RngLike = None) -> int:
    """Permute-and-flip: index ``j`` with McKenna--Sheldon's output distribution, exactly.

    Args:
        scores: non-negative integer scores, one per candidate (lower is better),
            at most :data:`MAX_PF_CANDIDATES` of them.
        gamma: the rate ``>= 0``; candidate ``j``'s coin is
            ``Bernoulli(exp(−gamma·(scores[j] − min(scores))))``
            (``gamma = ε/(2Δ)`` for utility ``−score`` of sensitivity ``Δ``).
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.

    Returns:
        The selected index.

    Raises:
        InvalidArgument: empty, too many or negative scores, negative ``gamma``.

    Privacy guarantee:
        ε-DP when ``gamma = ε/(2Δ)`` and ``−scores`` has sensitivity ``Δ``
        (McKenna--Sheldon 2020, Theorem 1). Its expected score is never worse
        than the exponential mechanism's at the same ε (their Theorem 2).

    Examples:
        >>> import numpy as np
        >>> from dpalg.noise import SeededRandomness
        >>> sample_permute_flip(np.array([0, 10**6, 10**6]), gamma=1, rng=SeededRandomness(0))
        0

    References:
        R. McKenna, D. Sheldon. Permute-and-Flip: A new mechanism for
        differentially private selection. NeurIPS 2020 (Algorithm 1, Theorems 1--2).
    """
    owner = "sample_permute_flip"
    s = np.asarray(scores)
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise InvalidArgument(owner, "scores", f"<array {s.dtype} shape {s.shape}>", "must be a non-empty 1-D integer array")
    if s.size > MAX_PF_CANDIDATES:
        raise InvalidArgument(owner, "scores", f"<{s.size} entries>", f"must have at most {MAX_PF_CANDIDATES} entries")
    if int(s.min()) < 0:
        raise InvalidArgument(owner, "scores", "<array>", "must be >= 0")
    g = nonneg(gamma, owner=owner, field="gamma")
    source = resolve_rng(rng)
    shifted = s.astype(np.int64)
    shifted -= shifted.min()
    heads = bernoulli_exp_scores(shifted, g, source)  # every coin, in score-independent work
    keys = source.uint64(int(s.size))
    # tails get the largest key, branch-free: np.where(heads, keys, MAX) takes a branch per entry and
    # ran 3x faster on an all-heads mask than on a mixed one (0.6 vs 1.9 ms at 2**20 entries), which a
    # stopwatch could see; OR with a 0/MAX mask costs the same whatever the heads (1.26 ms both)
    masked = keys | ((~heads).astype(np.uint64) * np.uint64(_KEY_MAX))
    smallest = masked.min()
    tied = np.flatnonzero(heads & (keys == smallest))
    # the best candidate's coin is [Y >= 0] = 1, so some head holds the smallest masked key
    assert tied.size > 0
    if tied.size == 1:
        return int(tied[0])
    return int(tied[source.big_below(int(tied.size))])  # probability <= |S| / 2**65


def permute_flip_probabilities(scores: list[int], gamma: Fraction) -> list[float]:
    """The exact output law of permute-and-flip for a few candidates, by its closed form (tests, docs).

    ``P[j] = p_j · Σ_{T ⊆ others} Π_{i∈T} p_i Π_{i∉T, i≠j} (1 − p_i) / (|T| + 1)``
    with ``p_i = exp(−gamma·(s_i − min s))``, in float (a test oracle, never a
    release path). Exponential in the number of candidates: at most 16.
    """
    if not 1 <= len(scores) <= 16:
        raise InvalidArgument("permute_flip_probabilities", "scores", f"<{len(scores)} entries>", "must have 1 to 16 entries")
    best = min(scores)
    p = [float(np.exp(-float(gamma) * (v - best))) for v in scores]
    n = len(p)
    out = []
    for j in range(n):
        others = [i for i in range(n) if i != j]
        total = 0.0
        for mask in range(1 << len(others)):
            prob = 1.0
            size = 0
            for b, i in enumerate(others):
                if mask >> b & 1:
                    prob *= p[i]
                    size += 1
                else:
                    prob *= 1.0 - p[i]
            total += prob / (size + 1)
        out.append(p[j] * total)
    return out
