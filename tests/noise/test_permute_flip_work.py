"""Permute-and-flip: exact coin law, and work (random words, run time) that does not depend on the scores."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from randomness_support import RecordingRandomness  # tests/noise/ (tests/conftest.py puts it on sys.path)
from scipy import stats

from dpalg import Clip, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import ExponentialQuantile
from dpalg.noise import AbstractRandomness, SecureRandomness, SeededRandomness
from dpalg.noise._geometric import bernoulli_exp_scores, geometric_exp
from dpalg.noise._permute_flip import permute_flip_probabilities, sample_permute_flip


#: one rate per way of drawing Y: table (d <= 2**14), int64 rejection, power-of-two
#: shift (a float's denominator), int64 with the object fallback for large V
#: (d = 2**61), exact Python integers (d > 2**62)
GAMMAS = [
    Fraction(1, 2),
    Fraction(7, 3),
    Fraction(1, 20),
    Fraction(5, 3 * 2**15),
    Fraction(0.1) / 2,
    Fraction(3, 2**61),
    Fraction(1, 3 * 2**70),
]


@pytest.mark.parametrize("gamma", GAMMAS, ids=str)
def test_random_words_drawn_do_not_depend_on_the_scores(gamma: Fraction) -> None:
    n = 4097
    rng = np.random.default_rng(5)
    cases = [
        np.zeros(n, dtype=np.int64),
        rng.integers(0, 40, n),
        np.abs(np.arange(n) - n // 2),
        np.full(n, 10**15, dtype=np.int64) - np.arange(n) % 2,
    ]
    for seed in range(3):
        calls = []
        for scores in cases:
            source = RecordingRandomness(seed)
            sample_permute_flip(scores, gamma, source)
            calls.append(source.calls)
        assert all(c == calls[0] for c in calls), (gamma, seed, [len(c) for c in calls])


def _exp_neg(x: Fraction) -> float:
    mpmath.mp.dps = 40
    return float(mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator))


@pytest.mark.parametrize("gamma", GAMMAS + [Fraction(10**9), Fraction(10**40, 3)], ids=str)
def test_coins_have_the_exact_law(gamma: Fraction) -> None:
    # x = gamma * s covers 0, fractions of 1, x > 1 and huge x
    s_values = np.array([0, 1, 2, 3, 7, 2**20, 2**40, 2**62], dtype=np.int64)
    reps = 20_000 if gamma.denominator <= 2**62 else 4_000
    scores = np.repeat(s_values, reps)
    heads = bernoulli_exp_scores(scores, gamma, SeededRandomness(3)).reshape(s_values.size, reps).sum(axis=1)
    for s, h in zip(s_values.tolist(), heads.tolist()):
        p = _exp_neg(gamma * s)
        sd = math.sqrt(reps * p * (1 - p))
        assert abs(h - reps * p) <= 5 * sd + 1, (gamma, s, h, reps * p)


@pytest.mark.parametrize("gamma", [Fraction(1, 2), Fraction(5, 3 * 2**15), Fraction(0.1) / 2, Fraction(2**60 + 1, 3 * 2**70)], ids=str)
def test_geometric_follows_its_exact_law(gamma: Fraction) -> None:
    n = 100_000 if gamma.denominator <= 2**62 else 20_000
    y = geometric_exp(gamma, n, SeededRandomness(8))
    # bins of equal-ish mass: [0, t), [t, 2t), ... by P[Y >= m] = exp(-gamma m)
    step = max(1, math.ceil(Fraction(1, 4) / gamma))
    edges = [0, step, 2 * step, 3 * step, 5 * step, 8 * step]
    tail = [_exp_neg(gamma * e) for e in edges]
    probs = [a - b for a, b in zip(tail, tail[1:])] + [tail[-1]]
    observed = [int(((y >= a) & (y < b)).sum()) for a, b in zip(edges, edges[1:])] + [int((y >= edges[-1]).sum())]
    assert stats.chisquare(observed, [p * n for p in probs]).pvalue > 1e-4


def test_gamma_zero_makes_every_coin_heads() -> None:
    assert bernoulli_exp_scores(np.array([0, 5, 2**62]), Fraction(0), SeededRandomness(0)).all()


def test_the_sampler_follows_the_closed_form_on_every_path() -> None:
    scores = np.array([0, 1, 1, 3, 6])
    for gamma in (Fraction(1, 2), Fraction(2**15 + 1, 3 * 2**15), Fraction(0.1) * 4):
        probs = permute_flip_probabilities(scores.tolist(), gamma)
        source = SeededRandomness(2)
        draws = 4_000
        got = np.bincount([sample_permute_flip(scores, gamma, source) for _ in range(draws)], minlength=scores.size)
        assert stats.chisquare(got, [p * draws for p in probs]).pvalue > 1e-4


def _release_times(data: list[float], node: ExponentialQuantile, rng: AbstractRandomness) -> float:
    ds = as_dataset({"x": np.array(data, dtype=np.float64)})
    start = time.perf_counter()
    node.release(ds, rng)
    return time.perf_counter() - start


@pytest.mark.slow
def test_a_timing_threshold_cannot_tell_the_datasets_apart() -> None:
    """Run times of full releases on [] and [0.5] (2**20 + 1 candidates): a held-out threshold stays near chance."""
    node = ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1, selection="permute_and_flip")
    rng = SecureRandomness()
    order = np.random.default_rng(1).permutation([0, 1] * 30)
    times: dict[int, list[float]] = {0: [], 1: []}
    datasets: list[list[float]] = [[], [0.5]]
    for _ in range(4):  # warm up (tables, imports)
        _release_times([0.5], node, rng)
    budget = time.perf_counter() + 50.0
    for label in order.tolist():
        # the fastest of three runs: robust to other processes on a shared machine
        times[label].append(min(_release_times(datasets[label], node, rng) for _ in range(3)))
        if time.perf_counter() > budget:
            break
    k = min(len(times[0]), len(times[1])) // 2 * 2
    assert k >= 16
    a, b = np.array(times[0][:k]), np.array(times[1][:k])
    train_a, test_a, train_b, test_b = a[0::2], a[1::2], b[0::2], b[1::2]
    # the best threshold (either direction) on the training half, scored on the held-out half
    best = (0.0, 0.0, 1)
    for t in np.concatenate([train_a, train_b]).tolist():
        for sign in (1, -1):
            acc = (np.mean(sign * train_a < sign * t) + np.mean(sign * train_b >= sign * t)) / 2
            if acc > best[0]:
                best = (float(acc), t, sign)
    _, t, sign = best
    held_out = (np.mean(sign * test_a < sign * t) + np.mean(sign * test_b >= sign * t)) / 2
    assert held_out < 0.75, (held_out, float(np.median(a)), float(np.median(b)))
