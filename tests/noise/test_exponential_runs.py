"""sample_exp_runs: the vectorised fast path samples the same exact distribution."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from dpalg import InvalidArgument
from dpalg.noise import SeededRandomness, sample_exp_runs


@pytest.mark.parametrize("n", [6_000, pytest.param(30_000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("gamma", ["0.5", "3", "0"])
def test_distribution_with_near_and_far_runs(gamma: str, n: int) -> None:
    # scores 0..3 are near; 2000 is far beyond the cap for gamma >= 0.5 (capped block)
    scores = np.array([0, 1, 2, 3, 2000, 2001], dtype=np.int64)
    counts = np.array([1, 2, 3, 1, 5, 5], dtype=np.int64)
    g = float(gamma) if gamma != "0" else 0.0
    weights = counts * np.exp(-g * scores)
    probs = weights / weights.sum()
    rng = SeededRandomness(3)
    draws = Counter(sample_exp_runs(scores, gamma, counts, rng=rng) for _ in range(n))
    observed = np.array([draws.get(i, 0) for i in range(scores.size)])
    mask = probs * n > 5
    expected = probs[mask] * n
    chi = stats.chisquare(observed[mask], expected * observed[mask].sum() / expected.sum())
    assert chi.pvalue > 1e-4
    if gamma != "0":
        assert observed[4:].sum() == 0  # weight e^-1000: never drawn


def test_far_block_is_reachable_when_it_dominates() -> None:
    # one near candidate of weight 1, a far run of 2**80 candidates at score 200 with gamma 1/4:
    # weight 2**80 e^-50 ~ 2.4e2 >> 1, so the far run must win almost always.
    scores = [0, 200]
    counts = [1, 2**80]
    rng = SeededRandomness(1)
    wins = sum(sample_exp_runs(np.array(scores), "1/4", counts, rng=rng) for _ in range(2000))
    p_far = 2**80 * math.exp(-50) / (1 + 2**80 * math.exp(-50))
    assert abs(wins / 2000 - p_far) < 0.02


def test_validation() -> None:
    with pytest.raises(InvalidArgument):
        sample_exp_runs(np.array([], dtype=np.int64), 1, np.array([], dtype=np.int64))
    with pytest.raises(InvalidArgument):
        sample_exp_runs(np.array([-1]), 1, np.array([1]))
    with pytest.raises(InvalidArgument):
        sample_exp_runs(np.array([1]), 1, np.array([0]))
