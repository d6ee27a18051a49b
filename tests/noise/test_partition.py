"""Partition selection: the keep probabilities' DP constraints and optimality, the exact privacy of the
whole selection on small datasets, the sampler's law, its count-independent work, and the Gaussian variant.

The oracles here are independent of the implementation: ``e^eps`` comes from mpmath
(100 digits), the keep probabilities from DVGM's closed form, and the discrete
Gaussian's tail from direct sums of its masses.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from noise_stats_helpers import gaussian_mass
from randomness_support import RecordingRandomness, ScriptedRandomness
from scipy import stats

from dpalg import InvalidArgument
from dpalg.noise import (
    SeededRandomness,
    certain_keep_count,
    gaussian_selection_threshold,
    keep_probability_bounds,
    per_partition_budget,
    sample_keep,
    sample_keep_gaussian,
)
from dpalg.noise import _partition

mp = mpmath.mp
PREC = 256
TOL = mpmath.mpf(2) ** -200  # far below the bounds' width (2**-255) times any e^eps used here

#: (epsilon, delta) pairs: the documented case, a small epsilon, a large delta, a large epsilon
CASES = [(Fraction(1), Fraction(1, 10**5)), (Fraction(1, 10), Fraction(1, 10**8)), (Fraction(1, 2), Fraction(1, 20)), (Fraction(3), Fraction(1, 10**9))]


def _mpf(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def pi_table(eps: Fraction, delta: Fraction, upto: int, max_partitions: int = 1) -> list[mpmath.mpf]:
    """pi(0..upto) as the midpoints of the 256-bit bounds (each within 2**-255 of the truth)."""
    with mp.workdps(100):
        out = []
        for n in range(upto + 1):
            lo, hi = keep_probability_bounds(n, eps, delta, PREC, max_partitions=max_partitions)
            assert 0 <= hi - lo <= 2
            out.append(mpmath.mpf(lo + hi) / 2 ** (PREC + 1))
        return out


def dp_violation(pi: list[mpmath.mpf], eps: Fraction, delta: Fraction) -> mpmath.mpf:
    """The largest excess over the two add/remove constraints of one key (0 when DP holds up to TOL)."""
    with mp.workdps(100):
        e = mpmath.exp(_mpf(eps))
        d = _mpf(delta)
        worst = mpmath.mpf(0) if pi[0] == 0 else mpmath.mpf(1)
        for n in range(1, len(pi)):
            worst = max(worst, pi[n] - (e * pi[n - 1] + d), (1 - pi[n - 1]) - (e * (1 - pi[n]) + d))
        return worst


def closed_form(n: int, eps: Fraction, delta: Fraction) -> mpmath.mpf:
    """DVGM 2022 Theorem 1, at 100 digits: the first-branch formula up to n1, then the second, capped at 1."""
    with mp.workdps(100):
        e, d = mpmath.exp(_mpf(eps)), _mpf(delta)
        if n == 0:
            return mpmath.mpf(0)

        def first(k: int) -> mpmath.mpf:
            return d * (e**k - 1) / (e - 1)

        n1 = 0
        while first(n1) * (1 + e) <= 1 - d:  # the first branch is used for step n1 + 1 iff pi(n1) (1 + e^eps) <= 1 - delta
            n1 += 1
        if n <= n1:
            return min(first(n), mpmath.mpf(1))
        p1 = first(n1)
        return min(mpmath.mpf(1), p1 + (1 - p1 + d / (e - 1)) * (1 - mpmath.exp(-(n - n1) * _mpf(eps))))


# ---------------------------------------------------------------- the keep probabilities


@pytest.mark.parametrize(("eps", "delta"), CASES, ids=str)
def test_keep_probabilities_are_dp_and_each_step_is_tight(eps: Fraction, delta: Fraction) -> None:
    n_star = certain_keep_count(eps, delta)
    pi = pi_table(eps, delta, n_star + 3)
    assert pi[0] == 0 and all(p == 1 for p in pi[n_star:]) and pi[n_star - 1] < 1
    assert dp_violation(pi, eps, delta) <= TOL
    # optimality: pi(n) equals the largest value allowed by the two constraints (or 1)
    with mp.workdps(100):
        e, d = mpmath.exp(_mpf(eps)), _mpf(delta)
        for n in range(1, n_star + 3):
            largest = min(e * pi[n - 1] + d, 1 - (1 - pi[n - 1] - d) / e, mpmath.mpf(1))
            assert abs(pi[n] - largest) <= TOL, n


@pytest.mark.parametrize(("eps", "delta"), CASES, ids=str)
def test_bounds_contain_the_closed_form(eps: Fraction, delta: Fraction) -> None:
    n_star = certain_keep_count(eps, delta)
    for n in list(range(0, n_star + 2)):
        lo, hi = keep_probability_bounds(n, eps, delta, PREC)
        with mp.workdps(100):
            scaled = closed_form(n, eps, delta) * mpmath.mpf(2) ** PREC
            assert mpmath.mpf(lo) <= scaled <= mpmath.mpf(hi), n
    assert closed_form(n_star - 1, eps, delta) < 1 and closed_form(n_star, eps, delta) == 1


def test_the_checker_catches_broken_keep_probabilities() -> None:
    eps, delta = CASES[0]
    n_star = certain_keep_count(eps, delta)
    pi = pi_table(eps, delta, n_star + 3)
    shifted = [mpmath.mpf(0)] + pi[2:]  # counting rows: a user with 2 rows moves the key one step
    assert dp_violation(shifted, eps, delta) > 1e-6
    doubled = pi_table(eps, 2 * delta, n_star + 3)
    assert dp_violation(doubled, eps, delta) > 1e-6
    bumped = pi[:7] + [pi[7] + mpmath.mpf(2) ** -100] + pi[8:]  # any increase breaks a tight step
    assert dp_violation(bumped, eps, delta) > 0


def test_the_required_numbers_at_eps_1_delta_1e5() -> None:
    lo12, _ = keep_probability_bounds(12, 1, "1e-5")
    _, hi6 = keep_probability_bounds(6, 1, "1e-5")
    assert Fraction(lo12, 2**64) >= Fraction(1, 2)
    assert abs(lo12 / 2**64 - 0.76) < 0.01
    assert Fraction(hi6, 2**64) <= Fraction(3, 1000)
    assert certain_keep_count(1, "1e-5") == 23


def test_per_partition_delta_is_below_the_root_and_above_the_split() -> None:
    for delta, m in [(Fraction(1, 10**5), 2), (Fraction(1, 10**5), 7), (Fraction(1, 3), 5), (Fraction(1, 10**12), 1000)]:
        eps_m, d_m = per_partition_budget(1, delta, m)
        assert eps_m == Fraction(1, m)
        assert delta / m <= d_m
        assert 1 - (1 - d_m) ** m <= delta  # m keys compose to (eps, delta) (KOV 2015, Thm 3.3)
        assert 1 - (1 - d_m - Fraction(1, 2**60)) ** m > delta or d_m == delta / m  # and it is nearly the largest


# ---------------------------------------------------------------- the whole selection, exactly


def _selection_divergence(
    pi: Callable[[int], mpmath.mpf], base: tuple[int, ...], added: tuple[int, ...], eps: Fraction
) -> mpmath.mpf:
    """max over directions of sum_S max(0, P[S|x] - e^eps P[S|x']) for x = base + a user holding the keys ``added``."""
    keys = len(base)
    bigger = tuple(c + (1 if k in added else 0) for k, c in enumerate(base))
    e = mpmath.exp(_mpf(eps))

    def law(counts: tuple[int, ...]) -> dict[tuple[bool, ...], mpmath.mpf]:
        out = {}
        for s in itertools.product((False, True), repeat=keys):
            prob = mpmath.mpf(1)
            for kept, c in zip(s, counts):
                p_keep = pi(c) if c > 0 else mpmath.mpf(0)  # a key without users is not in the data: never released
                prob *= p_keep if kept else 1 - p_keep
            out[s] = prob
        return out

    p, q = law(bigger), law(base)
    forward = mpmath.fsum(max(mpmath.mpf(0), p[s] - e * q[s]) for s in p)
    backward = mpmath.fsum(max(mpmath.mpf(0), q[s] - e * p[s]) for s in p)
    return max(forward, backward)


@pytest.mark.parametrize(("eps", "delta"), CASES[:3], ids=str)
def test_the_selection_of_three_keys_is_dp_exactly(eps: Fraction, delta: Fraction) -> None:
    n_star = certain_keep_count(eps, delta)
    pis = pi_table(eps, delta, n_star + 2)

    def pi(c: int) -> mpmath.mpf:
        return pis[min(c, n_star)]

    others = sorted({0, 1, n_star // 2, n_star - 1, n_star})
    worst = mpmath.mpf(0)
    with mp.workdps(100):
        changed_counts = sorted(set(range(0, min(n_star, 30))) | set(range(0, n_star + 1, max(1, n_star // 20))) | {n_star - 1, n_star})
        for changed in changed_counts:
            for b, c in itertools.product(others, repeat=2):
                worst = max(worst, _selection_divergence(pi, (changed, b, c), (0,), eps))
        assert worst <= _mpf(delta) + TOL
        assert worst >= _mpf(delta) - TOL  # tight: a key with its first user is kept with probability delta


@pytest.mark.parametrize("m", [2, 3])
def test_users_in_several_keys_compose_to_the_budget(m: int) -> None:
    eps, delta = Fraction(1), Fraction(1, 100)
    eps_m, d_m = per_partition_budget(eps, delta, m)
    n_star = certain_keep_count(eps, delta, max_partitions=m)
    pis = pi_table(eps, delta, n_star + 2, max_partitions=m)
    wrong = pi_table(eps, delta, n_star + 2)  # the broken variant: the whole budget per key

    worst = {"right": mpmath.mpf(0), "wrong": mpmath.mpf(0)}
    counts = sorted({0, 1, 2, n_star // 3, n_star // 2, n_star - 1})
    with mp.workdps(100):
        for base in itertools.product(counts, repeat=3):
            for size in range(1, m + 1):
                for added in itertools.combinations(range(3), size):
                    for name, table in (("right", pis), ("wrong", wrong)):
                        top = len(table) - 1

                        def pi(c: int, table: list[mpmath.mpf] = table, top: int = top) -> mpmath.mpf:
                            return table[min(c, top)]

                        worst[name] = max(worst[name], _selection_divergence(pi, base, added, eps))
        assert worst["right"] <= _mpf(delta) + TOL
        assert worst["wrong"] > _mpf(delta) * 1.2


# ---------------------------------------------------------------- the sampler


LAW_EPS, LAW_DELTA = Fraction(1, 2), Fraction(1, 20)


@pytest.mark.parametrize("one_word_keys", [_partition.ONE_WORD_KEYS, 16], ids=["one-word", "two-words"])
def test_keep_frequencies_follow_pi(one_word_keys: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_partition, "ONE_WORD_KEYS", one_word_keys)
    n_star = certain_keep_count(LAW_EPS, LAW_DELTA)
    values = list(range(0, n_star + 2)) + [10**12]
    reps = 20_000
    counts = np.repeat(np.array(values, dtype=np.int64), reps)
    kept = sample_keep(counts, LAW_EPS, LAW_DELTA, SeededRandomness(4)).reshape(len(values), reps).sum(axis=1)
    observed, expected = [], []
    for n, k in zip(values, kept.tolist()):
        p = float(closed_form(min(n, n_star), LAW_EPS, LAW_DELTA))
        if p in (0.0, 1.0):
            assert k == p * reps, n
            continue
        assert abs(k - reps * p) <= 5 * math.sqrt(reps * p * (1 - p)) + 1, (n, k, reps * p)
        observed += [k, reps - k]
        expected += [reps * p, reps * (1 - p)]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_a_word_in_the_gap_is_finished_exactly() -> None:
    """Force every word into its gap [lo, hi): the refined coin is Bernoulli(2**64 pi - lo), as R's later bits say."""
    eps, delta = LAW_EPS, LAW_DELTA
    n = 3
    lo, hi = keep_probability_bounds(n, eps, delta)
    assert hi > lo
    reps = 4_000
    words = np.full(reps, lo, dtype=np.uint64)
    kept = sample_keep(np.full(reps, n, dtype=np.int64), eps, delta, ScriptedRandomness(6, words))
    with mp.workdps(100):
        frac = float(closed_form(n, eps, delta) * mpmath.mpf(2) ** 64 - lo)
    assert 0 < frac < 1
    k = int(kept.sum())
    assert abs(k - reps * frac) <= 5 * math.sqrt(reps * frac * (1 - frac)) + 1, (k, reps * frac)


@pytest.mark.parametrize("one_word_keys", [_partition.ONE_WORD_KEYS, 16], ids=["one-word", "two-words"])
def test_random_words_drawn_do_not_depend_on_the_counts(one_word_keys: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_partition, "ONE_WORD_KEYS", one_word_keys)
    n = 1000
    rng = np.random.default_rng(3)
    cases = [
        np.zeros(n, dtype=np.int64),
        np.ones(n, dtype=np.int64),
        np.full(n, 10**15, dtype=np.int64),
        rng.integers(0, 30, n),
        np.arange(n, dtype=np.int64),
    ]
    for eps, delta in CASES:
        for seed in range(3):
            calls = []
            for counts in cases:
                source = RecordingRandomness(seed)
                sample_keep(counts, eps, delta, source)
                calls.append(source.calls)
            assert all(c == calls[0] for c in calls), (eps, delta, seed, calls)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"user_counts": np.array([1, -1])}, "user_counts"),
        ({"user_counts": np.array([[1]])}, "user_counts"),
        ({"user_counts": np.array([1.5])}, "user_counts"),
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": "x"}, "epsilon"),
        ({"delta": 0}, "delta"),
        ({"delta": 1}, "delta"),
        ({"max_partitions": 0}, "max_partitions"),
        ({"max_partitions": True}, "max_partitions"),
        ({"epsilon": Fraction(1, 10**6), "delta": Fraction(1, 10**9)}, "epsilon"),  # would need more than 2**20 users to keep surely
    ],
)
def test_invalid_arguments_fail_before_any_randomness(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"user_counts": np.array([3, 7, 123456789]), "epsilon": 1, "delta": "1e-5", "max_partitions": 1}
    args.update(kwargs)
    source = RecordingRandomness(0)
    with pytest.raises(InvalidArgument) as info:
        sample_keep(args["user_counts"], args["epsilon"], args["delta"], source, max_partitions=args["max_partitions"])  # type: ignore[arg-type]
    assert info.value.field == field
    assert source.calls == []
    assert "123456789" not in str(info.value) and "-1" not in str(info.value).replace(f"{field}=", "")


# ---------------------------------------------------------------- Gaussian thresholding


def _upper_tail(sigma2: Fraction, t: int) -> mpmath.mpf:
    """P[Z >= t] for the discrete Gaussian, by direct sums of its masses (60 digits)."""
    return gaussian_mass(sigma2)(t, 10**9)


@pytest.mark.parametrize("sigma2", [Fraction(1), Fraction(4), Fraction(30), Fraction(1000)], ids=str)
@pytest.mark.parametrize(("delta", "m"), [(Fraction(1, 10**5), 1), (Fraction(1, 10**8), 1), (Fraction(1, 10**5), 3)], ids=str)
def test_gaussian_threshold_delta_from_the_exact_tail(sigma2: Fraction, delta: Fraction, m: int) -> None:
    tau = gaussian_selection_threshold(sigma2, delta, max_partitions=m)
    p = _upper_tail(sigma2, tau - 1)  # a key whose only user is the added one: kept iff 1 + Z >= tau
    assert 1 - (1 - p) ** m <= _mpf(delta)
    assert _upper_tail(sigma2, tau - 2) > _mpf(delta) / m  # one lower would not be proven enough (tight)


def test_gaussian_checker_catches_a_threshold_that_forgets_the_users_own_count() -> None:
    sigma2, delta = Fraction(4), Fraction(1, 10**5)
    tau = gaussian_selection_threshold(sigma2, delta)
    broken = tau - 1  # a threshold on Z alone (P[Z >= tau'] <= delta) instead of on 1 + Z
    assert _upper_tail(sigma2, broken - 1) > _mpf(delta)


def test_gaussian_keep_frequencies_and_work() -> None:
    sigma2, tau = Fraction(4), 6
    values = [0, 1, 4, 6, 9, 10**12]
    reps = 20_000
    counts = np.repeat(np.array(values, dtype=np.int64), reps)
    kept = sample_keep_gaussian(counts, sigma2, tau, SeededRandomness(9)).reshape(len(values), reps).sum(axis=1)
    for n, k in zip(values, kept.tolist()):
        p = 0.0 if n == 0 else float(_upper_tail(sigma2, tau - n))
        if p in (0.0, 1.0):
            assert k == p * reps
            continue
        assert abs(k - reps * p) <= 5 * math.sqrt(reps * p * (1 - p)) + 1, (n, k, reps * p)
    calls = []
    for c in (np.zeros(500, dtype=np.int64), np.arange(500, dtype=np.int64), np.full(500, 10**12, dtype=np.int64)):
        source = RecordingRandomness(1)
        sample_keep_gaussian(c, sigma2, tau, source)
        calls.append(source.calls)
    assert calls[0] == calls[1] == calls[2]
