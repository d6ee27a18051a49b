"""Permute-and-flip selection (McKenna--Sheldon 2020), sampled exactly.

Permute-and-flip over candidates with integer scores ``s_j >= 0`` (lower is
better; the score is ``(u* − u_j)`` in units where the rate is ``gamma``) visits
the candidates in a uniformly random order and stops at the first ``j`` whose coin
``C_j ~ Bernoulli(exp(−gamma·(s_j − s_min)))`` comes up heads.

:func:`sample_permute_flip` draws the same output distribution without a
permutation, in work that does not depend on the data:

* flip *every* coin ``C_j`` independently (exactly: :func:`bernoulli_exp_rational`,
  Canonne--Kamath--Steinke 2020 Algorithm 1, no floating point);
* return a uniform element of ``S = {j : C_j = 1}`` (``rng.big_below(|S|)``).

Why this is permute-and-flip. Let ``π`` be a uniform permutation independent of
the coins. The sequential algorithm returns the first ``j`` in ``π``-order with
``C_j = 1``; flipping the coins it never looks at changes nothing, so its output
is ``first_π(S)`` with all coins flipped. Given ``S``, ``π`` restricted to ``S`` is a
uniform order of ``S``, so ``first_π(S)`` is uniform on ``S``. ``S`` is never empty:
the best candidate's coin has probability ``exp(0) = 1``. Hence
``P[j] = Σ_S P[S]·1[j ∈ S]/|S|``, exactly the distribution of McKenna--Sheldon's
Algorithm 1, and its privacy (their Theorem 1) carries over. The running time is
``O(N)`` for every dataset (no early exit on a private quantity).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import nonneg
from dpalg.noise._bernoulli import bernoulli_exp_rational
from dpalg.noise._random import RngLike, resolve_rng

__all__ = ["MAX_PF_CANDIDATES", "permute_flip_probabilities", "sample_permute_flip"]

#: the most candidates :func:`sample_permute_flip` flips coins for (public)
MAX_PF_CANDIDATES: Final = (1 << 20) + 1


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
    shifted = s.astype(np.int64) - int(s.min())
    top = int(shifted.max())
    num: npt.NDArray[np.int64] | npt.NDArray[np.object_]
    den: npt.NDArray[np.object_] | int
    if g.numerator * top < (1 << 62) and g.denominator < (1 << 49):
        num, den = shifted * g.numerator, g.denominator  # int64, no overflow
    else:  # exact Python integers (slower, same distribution)
        num = shifted.astype(object) * g.numerator
        den = np.full(s.size, g.denominator, dtype=object)
    heads = np.flatnonzero(bernoulli_exp_rational(num, den, source))
    assert heads.size > 0  # the best candidate's coin is exp(0) = 1
    pick = source.big_below(int(heads.size)) if heads.size > 1 else 0
    return int(heads[pick])


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
