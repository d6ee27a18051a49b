"""Accuracy of PTRMode, StableHistogram and sample-and-aggregate, checked against the releases.

Each statement "P[event] <= p" is checked on seeded releases: the number of
events must be plausible under Binomial(trials, p) at level 1e-6 (an exact
one-sided binomial test). Each test also shows that a deliberately broken
statement (half the error, a probability at the wrong gap or count) fails the
same check, so the check has teeth. Probabilities of ⊥ and of release are
compared with brute-force sums of the discrete Laplace pmf.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpalg import BOTTOM, InvalidArgument, Query
from dpalg.data import as_dataset
from dpalg.mechanisms._common.ptr_test import distance_from_gap, ptr_bottom_enclosure
from dpalg.mechanisms._common.accuracy import laplace_at_least
from dpalg.mechanisms.ptr._stable_histogram import stable_release_count
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability
from dpalg.mechanisms.ptr._propose_test import PTRMode
from dpalg.mechanisms._common.ptr_test import ptr_cap
from dpalg.mechanisms.sample_aggregate._aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms.sample_aggregate._blocks import block_labels, block_outputs
from dpalg.mechanisms._common.smooth_quantile import center_and_scale
from dpalg.mechanisms.ptr._stable_histogram import StableHistogram
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.measures._display import decimal_text
from dpalg.noise import SeededRandomness, round_to_lattice
from dpalg.sensitivity._catalog import mode_gap_distance

LEVEL = 1e-6


def consistent(events: int, trials: int, p: float) -> bool:
    """``events`` in ``trials`` are plausible if each has probability <= p (exact one-sided binomial, level 1e-6)."""
    return float(stats.binom.sf(events - 1, trials, p)) >= LEVEL


def up(x: Fraction) -> str:
    return decimal_text(x, "up").removeprefix("<=")


def down(x: Fraction) -> str:
    return decimal_text(x, "down").removeprefix(">=")


def test_the_binomial_check_has_teeth() -> None:
    assert consistent(50, 1000, 0.05) and consistent(70, 1000, 0.05)
    assert not consistent(100, 1000, 0.05)


def _brute_at_least(scale: Fraction, j: int) -> mpmath.mpf:
    """P[Z >= j] by summing the discrete Laplace pmf term by term (50 digits; the terms past 150 t + |j| add < e^-150)."""
    with mpmath.workdps(50):
        q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        c = (1 - q) / (1 + q)
        top = int(150 * scale) + abs(j) + 1
        return mpmath.fsum(c * q ** abs(z) for z in range(j, top))


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(5, 2), Fraction(1, 3)])
def test_laplace_at_least_encloses_the_brute_force_sum(scale: Fraction) -> None:
    for j in range(-6, 7):
        lo, hi = laplace_at_least(scale, j)
        exact = _brute_at_least(scale, j)
        with mpmath.workdps(50):
            assert mpmath.mpf(lo.numerator) / lo.denominator <= exact * (1 + mpmath.mpf(10) ** -45)
            assert exact <= mpmath.mpf(hi.numerator) / hi.denominator * (1 + mpmath.mpf(10) ** -45)
        assert hi - lo <= hi / 10**45
    # broken: the formula with q^(j+1) for j >= 1 is outside the enclosure
    q = math.exp(-1)
    assert not laplace_at_least(Fraction(1), 2)[0] <= q**3 / (1 + q) * (1 + 1e-9)


@pytest.mark.parametrize("eps, delta", [(Fraction(1), Fraction(1, 20)), (Fraction(1, 2), Fraction(1, 10**6))])
def test_ptr_bottom_enclosure_is_the_brute_force_sum(eps: Fraction, delta: Fraction) -> None:
    m = ceil_log_inv_delta_over_eps(eps, delta) - 1
    for d in range(0, 40):
        gamma = min(d, ptr_cap(eps, delta))
        lo, hi = ptr_bottom_enclosure(eps, delta, d)
        exact = _brute_at_least(1 / eps, gamma - m)  # P[Z <= M - γ] = P[Z >= γ - M]
        with mpmath.workdps(50):
            assert mpmath.mpf(lo.numerator) / lo.denominator <= exact * (1 + mpmath.mpf(10) ** -45)
            assert exact <= mpmath.mpf(hi.numerator) / hi.denominator * (1 + mpmath.mpf(10) ** -45)
        assert abs(hi - ptr_bottom_probability(eps, delta, d)) <= hi / 10**15  # the same quantity (ProposeTest's)


def test_distance_from_gap_is_a_lower_bound_with_equality_below_the_mode() -> None:
    rng = np.random.default_rng(0)
    broken_violated = False
    for _ in range(400):
        counts = rng.integers(0, 7, size=rng.integers(1, 5))
        if counts.sum() == 0:
            continue
        values = np.repeat(np.arange(counts.size, dtype=np.float64), counts)
        uniq, cs = np.unique(values, return_counts=True)
        order = np.sort(cs)[::-1]
        gap = int(order[0] - (order[1] if order.size > 1 else 0))
        mode = uniq[int(np.argmax(cs))]
        runner_below = order.size == 1 or any(c == order[1] and u < mode for u, c in zip(uniq, cs) if u != mode)
        for rel in ("add_remove", "substitution"):
            true = mode_gap_distance(values, rel)
            assert true >= distance_from_gap(gap, rel)
            if runner_below and order.size > 1:
                assert true == distance_from_gap(gap, rel)
            broken = gap if rel == "add_remove" else -(-gap // 2)  # forgetting the "- 1"
            broken_violated |= true < broken
    assert broken_violated


# --- PTRMode ---------------------------------------------------------------------------------


def test_ptr_mode_bottom_probability_and_exact_mode() -> None:
    eps, delta = Fraction(1), Fraction(1, 20)  # M = ceil(ln 20) - 1 = 2
    node = PTRMode(Query.mode("x"), epsilon=eps, delta=delta)
    values = np.array([2.0] * 7 + [1.0] * 3)  # gap 4, runner-up below the mode: distance exactly 3
    assert mode_gap_distance(values) == 3 == distance_from_gap(4, "add_remove")
    acc = node.accuracy(Fraction(1, 5), gap=4)
    assert acc.error == 0 and acc.tight and acc.condition == "it releases (no ⊥)"
    p = ptr_bottom_enclosure(eps, delta, 3)[1]  # P[Z <= -1] = e^-1/(1 + e^-1) = 0.269
    assert any(f"P(⊥) <= {up(p)} if the gap" in n and "at least 3" in n for n in acc.notes)
    assert node.accuracy(distance=3).notes[-1].startswith(f"P(⊥) <= {up(p)} if the distance")
    trials = 600
    data = as_dataset({"x": values})
    outs = [node.release(data, SeededRandomness(s)) for s in range(trials)]
    bottoms = sum(o is BOTTOM for o in outs)
    assert consistent(bottoms, trials, float(p))
    assert bottoms > 0.7 * float(p) * trials  # P(⊥) is exact, not just a bound
    released = [o for o in outs if o is not BOTTOM]
    assert released and all(o == 2.0 for o in released)  # error 0 given a release
    assert not all(o == 1.0 for o in released)  # broken: the runner-up
    # broken: the probability at the wrong gap (6: distance 5, P = 0.037)
    wrong = ptr_bottom_probability(eps, delta, distance_from_gap(6, "add_remove"))
    assert not consistent(bottoms, trials, float(wrong))


def test_ptr_mode_without_a_distance_says_what_it_needs() -> None:
    node = PTRMode(Query.mode("x"), epsilon=1, delta="1e-6")
    acc = node.accuracy()
    assert acc.error == 0 and "pass distance= or gap=" in acc.notes[-1] and "a gap of >= 17 rows" in acc.notes[-1]
    sub = SampleAggregateMode(np.median, blocks=100, epsilon=1, delta="1e-6", column="x")  # substitution of votes
    assert "a gap of >= 33 block votes" in sub.accuracy().notes[-1]
    assert sub.accuracy(gap=33).notes[-1].endswith("at least 16 (Dwork-Lei 2009)")


# --- StableHistogram ------------------------------------------------------------------------


def _histogram_runs(node: StableHistogram, counts: dict[str, int], trials: int) -> list[dict[object, int]]:
    keys = np.array([k for k, c in counts.items() for _ in range(c)], dtype=object)
    data = as_dataset({"k": keys})
    return [node.release(data, SeededRandomness(s)) for s in range(trials)]  # type: ignore[misc]


def test_stable_histogram_count_error_and_threshold() -> None:
    eps, delta, alpha = Fraction(1), Fraction(1, 20), Fraction(1, 5)
    node = StableHistogram(Query.histogram("k"), epsilon=eps, delta=delta)
    assert node.threshold() == 4
    acc = node.accuracy(alpha, count=4)
    assert acc.error == 1 and acc.tight and acc.unit == "absolute, per key"  # 2e^-2/(1+e^-1) = 0.198 <= 0.2 < 0.54
    c_alpha = stable_release_count(Fraction(1), 4, alpha)
    assert c_alpha == 5  # P[Z >= -1] = 0.90 >= 0.8 > P[Z >= 0] = 0.73
    assert any(f"released with probability >= 80% once its true count (rows) is >= {c_alpha}" in n for n in acc.notes)
    counts = {"a": 30, "b": 30, "d": c_alpha, "e": 4, "f": c_alpha - 2, "g": 2}
    trials = 600
    runs = _histogram_runs(node, counts, trials)
    # per key: released and off by more than the error, probability <= alpha
    for key in ("a", "d", "e"):
        bad = sum(key in r and abs(r[key] - counts[key]) > acc.error for r in runs)
        assert consistent(bad, trials, float(alpha))
    assert not consistent(sum("a" in r and abs(r["a"] - 30) > acc.error / 2 for r in runs), trials, float(alpha))
    # the release count: a key of count c_alpha is missing with probability <= alpha; two below it is not
    assert consistent(sum("d" not in r for r in runs), trials, float(alpha))
    assert not consistent(sum("f" not in r for r in runs), trials, float(alpha))
    # count=4: released with probability in [lo, hi] = P[Z >= 0] (exact, vs the brute-force sum)
    lo, hi = laplace_at_least(Fraction(1), 0)
    assert float(lo) <= float(_brute_at_least(Fraction(1), 0)) <= float(hi)
    assert any(f"count >= 4 is released with probability >= {down(lo)}; one with count <= 4 with <= {up(hi)}" in n for n in acc.notes)
    assert consistent(sum("e" not in r for r in runs), trials, float(1 - lo))
    assert not consistent(sum("e" not in r for r in runs), trials, float(1 - laplace_at_least(Fraction(1), -2)[0]))  # count=6's
    # count 2 (<= 4): released with probability <= P[Z >= 2]; the bound at count 0 is broken
    assert consistent(sum("g" in r for r in runs), trials, float(laplace_at_least(Fraction(1), 2)[1]))
    assert not consistent(sum("g" in r for r in runs), trials, float(laplace_at_least(Fraction(1), 4)[1]))


def test_stable_histogram_union_bound_and_user_level() -> None:
    node = StableHistogram(Query.histogram("k", keys=("a", "b", "c")), epsilon=1, delta="1e-6")
    acc = node.accuracy()
    assert any(n.startswith("all 3 keys at once (union bound, alpha/3): ±4") for n in acc.notes)
    assert any(n.startswith("all 10 keys at once") for n in node.accuracy(keys=10).notes)
    free = StableHistogram(Query.histogram("k"), epsilon=1, delta="1e-6").accuracy()
    assert "pass keys=K" in free.notes[-1]


# --- sample-and-aggregate -------------------------------------------------------------------


def test_sample_aggregate_mean_error_to_the_block_mean() -> None:
    node = SampleAggregateMean(np.median, blocks=4, lower=0, upper=10, epsilon=1, column="x")
    alpha = Fraction(1, 5)
    acc = node.accuracy(alpha)
    assert acc.tight and acc.error is not None and "not to the statistic on the full data" in acc.notes[0]
    x = np.arange(40.0) % 10
    data = as_dataset({"x": x})
    k = node.lattice_k()
    trials = 500
    errors = []
    for s in range(trials):
        out = float(node.release(data, SeededRandomness(s)))  # type: ignore[arg-type]
        labels = block_labels(data, 4, None, SeededRandomness(s))  # the release's partition (its first draws)
        outs = block_outputs(np.median, data, labels, 4, 0.0, 10.0, column="x")
        mean = float(sum((Fraction(v) for v in outs.tolist()), Fraction(0)) / 4)
        centre = Fraction(int(round_to_lattice(np.array([mean]), k)[0])) * Fraction(2) ** k
        errors.append(abs(Fraction(out) - centre))
    assert consistent(sum(e > acc.error for e in errors), trials, float(alpha))
    assert not consistent(sum(e > acc.error / 2 for e in errors), trials, float(alpha))


def test_sample_aggregate_median_error_given_the_smooth_bound() -> None:
    node = SampleAggregateMedian(np.median, blocks=20, lower=0, upper=10, epsilon=1, delta=Fraction(1, 20), column="x")
    alpha = Fraction(1, 5)
    assert node.accuracy(alpha).error is None
    # every block outputs 5 (an empty block too: the midpoint), so the smooth bound S is public here
    outs: npt.NDArray[np.float64] = np.full(20, 5.0)
    k = node.lattice_k()
    _, scale = center_and_scale(outs, Fraction(1, 2), Fraction(0), Fraction(10), "substitution", node.constants(), k)
    s_hat = scale * node.constants().alpha - Fraction(2) ** k
    assert Fraction(1, 2) < s_hat < 5
    acc = node.accuracy(alpha, smooth_sensitivity=s_hat)
    assert acc.error is not None and 2 < acc.error < 10
    data = as_dataset({"x": np.full(60, 5.0)})
    trials = 500
    errors = [abs(float(node.release(data, SeededRandomness(s))) - 5.0) for s in range(trials)]  # type: ignore[arg-type]
    assert consistent(sum(e > acc.error for e in errors), trials, float(alpha))
    assert not consistent(sum(e > acc.error / 2 for e in errors), trials, float(alpha))
    assert max(errors) <= 5  # clamped to [0, 10]


def test_sample_aggregate_mode_bottom_probability_and_floor() -> None:
    eps, delta = Fraction(1), Fraction(1, 5)  # M = ceil(ln 5) - 1 = 1

    def vote(a: npt.NDArray[np.float64]) -> float:
        return 1.0

    node = SampleAggregateMode(vote, blocks=5, epsilon=eps, delta=delta, column="x")
    assert mode_gap_distance(np.ones(5), "substitution") == 2 == distance_from_gap(5, "substitution")
    acc = node.accuracy(gap=5)
    floor, p = ptr_bottom_enclosure(eps, delta, 2)  # P[Z <= -1] = 0.269
    assert acc.error == 0 and any(n.startswith(f"P(⊥) <= {up(p)} if the gap") for n in acc.notes)
    assert any(n.startswith(f"P(⊥) >= {down(floor)} whatever the data") for n in acc.notes)
    data = as_dataset({"x": np.zeros(200)})  # 5 blocks, none empty (probability 5 * 0.8^200)
    trials = 600
    outs = [node.release(data, SeededRandomness(s)) for s in range(trials)]
    bottoms = sum(o is BOTTOM for o in outs)
    assert all(o == 1.0 for o in outs if o is not BOTTOM)
    assert consistent(bottoms, trials, float(p))
    assert consistent(trials - bottoms, trials, float(1 - floor))  # the floor: all blocks agree, the best case
    assert not consistent(bottoms, trials, float(ptr_bottom_probability(eps, delta, 4)))  # the wrong distance
    assert not consistent(trials - bottoms, trials, float(1 - ptr_bottom_enclosure(eps, delta, 1)[0]))  # floor too high


def test_sample_aggregate_mode_with_too_few_blocks_is_mostly_bottom() -> None:
    node = SampleAggregateMode(np.median, blocks=10, epsilon=1, delta="1e-6", column="x")
    acc = node.accuracy()
    assert any(n.startswith("P(⊥) >= 0.999966 whatever the data") for n in acc.notes)
    assert "P(⊥) > 5% at every distance" in acc.notes[-1]


# --- invalid arguments -------------------------------------------------------------------------


def _mode() -> PTRMode:
    return PTRMode(Query.mode("x"), epsilon=1, delta="1e-6")


def _sa_mode() -> SampleAggregateMode:
    return SampleAggregateMode(np.median, blocks=10, epsilon=1, delta="1e-6", column="x")


def _hist() -> StableHistogram:
    return StableHistogram(Query.histogram("k"), epsilon=1, delta="1e-6")


def _median() -> SampleAggregateMedian:
    return SampleAggregateMedian(np.median, blocks=10, lower=0, upper=1, epsilon=1, delta="1e-6", column="x")


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: _mode().accuracy(distance=1, gap=2), "gap"),
        (lambda: _mode().accuracy(gap=-1), "gap"),
        (lambda: _mode().accuracy(distance=True), "distance"),
        (lambda: _mode().accuracy(0), "alpha"),
        (lambda: _sa_mode().accuracy(gap=11), "gap"),
        (lambda: _sa_mode().accuracy(distance=5), "distance"),
        (lambda: _hist().accuracy(keys=0), "keys"),
        (lambda: _hist().accuracy(count=-1), "count"),
        (lambda: _hist().accuracy(1), "alpha"),
        (lambda: _median().accuracy(smooth_sensitivity=-1), "smooth_sensitivity"),
    ],
)
def test_invalid_arguments(call: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()  # type: ignore[operator]
    assert info.value.field == field
