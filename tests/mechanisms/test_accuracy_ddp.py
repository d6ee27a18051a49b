"""Accuracy statements of the data-dependent mechanisms, checked empirically against the releases.

Each statement "P[error > e] <= p" is checked on seeded releases: the number of
exceedances must be plausible under Binomial(trials, p) at level 1e-6 (an exact
one-sided binomial test). Each test also shows that a deliberately broken
statement (half the error; the ⊥ probability at distance d + 1 used for d)
fails the same check, so the check has teeth.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpalg import BOTTOM, Clip, InvalidArgument, Query
from dpalg.data import as_dataset
from dpalg.mechanisms._common.accuracy import exp_mech_gap, rounded_noise_quantile
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability
from dpalg.mechanisms.selection._exponential import ExponentialQuantile, NoisyMax
from dpalg.mechanisms.ptr._propose_test import ProposeTest
from dpalg.mechanisms._common.ptr_test import ptr_cap
from dpalg.mechanisms.ptr._guidance import mean_ls_upper, suggest_ptr_bound
from dpalg.mechanisms.smooth._smooth_bound import SmoothBound, SmoothBoundCauchy, _windowed_center_and_scale
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.noise import SeededRandomness
from dpalg.sensitivity._catalog import ls_profile

LEVEL = 1e-6


def consistent(exceed: int, trials: int, p: float) -> bool:
    """``exceed`` exceedances in ``trials`` are plausible if each has probability <= p (one-sided, level 1e-6)."""
    return float(stats.binom.sf(exceed - 1, trials, p)) >= LEVEL


def test_the_binomial_check_has_teeth() -> None:
    assert consistent(50, 1000, 0.05) and consistent(70, 1000, 0.05)
    assert not consistent(100, 1000, 0.05)


# --- exponential mechanism ------------------------------------------------------------


def _rank_gap(values: np.ndarray, c: float, q: Fraction, grid: np.ndarray) -> float:
    def score(x: float) -> float:
        return abs(float(1 - q) * np.sum(values < x) - float(q) * np.sum(values > x))

    return score(c) - min(score(g) for g in grid)


@pytest.mark.parametrize("trials", [1000, pytest.param(2000, marks=pytest.mark.slow)])
def test_exponential_quantile_rank_error(trials: int) -> None:
    node = ExponentialQuantile(Query.median("x") | Clip(0, 16), epsilon="1.45", grid_bits=4)
    acc = node.accuracy()
    assert acc.unit == "rank" and acc.error == Fraction(7, 2)
    grid = np.arange(17.0)
    # 8 values on one grid point: every other point is 4 ranks worse, so P[gap > 3.5] = 16e^-5.8/(1 + 16e^-5.8), near 0.05
    spike = np.full(8, 8.0)
    outs = [float(node.release(as_dataset({"x": spike}), SeededRandomness(s))) for s in range(trials)]  # type: ignore[arg-type]
    gaps = np.array([_rank_gap(spike, c, node.q, grid) for c in outs])
    assert acc.error is not None
    assert consistent(int(np.sum(gaps > acc.error)), trials, 0.05)
    assert np.sum(gaps > acc.error) > 0.6 * 0.05 * trials  # the bound is nearly attained here
    # 4 values: the others are 2 ranks worse; half the bound (1.75) is exceeded with probability ~0.47
    spike4 = np.full(4, 8.0)
    outs4 = [float(node.release(as_dataset({"x": spike4}), SeededRandomness(s))) for s in range(trials)]  # type: ignore[arg-type]
    gaps4 = np.array([_rank_gap(spike4, c, node.q, grid) for c in outs4])
    assert consistent(int(np.sum(gaps4 > acc.error)), trials, 0.05)
    assert not consistent(int(np.sum(gaps4 > acc.error / 2)), trials, 0.05)


def test_noisy_max_count_error() -> None:
    node = NoisyMax(Query.histogram("k", keys=("a", "b", "c", "d")), epsilon="0.41")
    acc = node.accuracy()
    assert acc.error == 9  # 3 e^{-0.41 t} <= 0.05 first at t = 10
    trials = 2000
    for top, bound, ok in ((10, acc.error, True), (5, acc.error / 2, False)):
        data = as_dataset({"k": np.array(["a"] * top, dtype=object)})
        outs = [node.release(data, SeededRandomness(s)) for s in range(trials)]
        gaps = np.array([0 if o == "a" else top for o in outs])
        assert consistent(int(np.sum(gaps > bound)), trials, 0.05) is ok


def test_exp_mech_gap_is_the_smallest_proven_integer() -> None:
    for cands, gamma, alpha in ((17, Fraction(29, 80), Fraction(1, 20)), (1025, Fraction(1, 3), Fraction(1, 100)), (2, Fraction(5), Fraction(1, 2))):
        g = exp_mech_gap(cands, gamma, alpha)
        assert (cands - 1) * math.exp(-float(gamma) * (g + 1)) <= float(alpha)
        assert g == 0 or (cands - 1) * math.exp(-float(gamma) * g) > float(alpha)


# --- propose-test-release -------------------------------------------------------------


def _brute_bottom(eps: float, delta: Fraction, gamma: int) -> float:
    """P[gamma + Z <= M] by summing the discrete Laplace pmf term by term."""
    m = ceil_log_inv_delta_over_eps(Fraction(eps), delta) - 1
    q = math.exp(-eps)
    return math.fsum((1 - q) / (1 + q) * q ** abs(z) for z in range(-400, m - gamma + 1))


@pytest.mark.parametrize("eps, delta", [(1, Fraction(1, 1000)), (Fraction(1, 2), Fraction(1, 10**6)), (2, Fraction(1, 10))])
def test_ptr_bottom_probability_is_the_exact_sum(eps: Fraction, delta: Fraction) -> None:
    e = Fraction(eps)
    for d in range(0, 40):
        exact = _brute_bottom(float(e), delta, min(d, ptr_cap(e, delta)))
        p = float(ptr_bottom_probability(e, delta, d))
        assert exact <= p * (1 + 1e-12) + 1e-300 and p <= exact * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("trials", [500, pytest.param(1000, marks=pytest.mark.slow)])
def test_ptr_bottom_frequency_at_the_suggested_bound(trials: int) -> None:
    eps, delta = Fraction(1), Fraction(1, 1000)
    query = Query.mean("x") | Clip(0, 1)
    target = ptr_bottom_probability(eps, delta, 8)  # ~0.099; at distance 7 it is ~0.27
    s = suggest_ptr_bound(query, epsilon=eps, delta=delta, bottom=target, n=30)
    assert s.distance == 8 and s.bottom == target and Fraction(1, 23) < s.bound < Fraction(1, 23) * (1 + Fraction(1, 10**5))
    x = np.array([1.0] + [0.0] * 29)  # the data attaining the public mean profile: its distance is exactly 8
    node = ProposeTest(query, bound=s.bound, epsilon=eps, delta=delta)
    assert node.distance(x) == 8
    acc = node.accuracy(distance=8)
    assert any(n.startswith(f"P(⊥) <= {float(target):.6g}"[:12]) for n in acc.notes)
    data = as_dataset({"x": x})
    bottoms = sum(node.release(data, SeededRandomness(s_)) is BOTTOM for s_ in range(trials))
    assert consistent(bottoms, trials, float(target))
    assert bottoms > 0.6 * float(target) * trials
    # broken: a bound one step lower (distance 7), still claimed at P(⊥ | 8): fails
    broken = ProposeTest(query, bound=mean_ls_upper(Fraction(0), Fraction(1), 30, 6) * (1 + Fraction(1, 2**20)), epsilon=eps, delta=delta)
    assert broken.distance(x) == 7
    b_bottoms = sum(broken.release(data, SeededRandomness(s_)) is BOTTOM for s_ in range(trials))
    assert not consistent(b_bottoms, trials, float(target))
    assert consistent(b_bottoms, trials, float(ptr_bottom_probability(eps, delta, 7)))


@pytest.mark.parametrize("trials", [400, pytest.param(1000, marks=pytest.mark.slow)])
def test_ptr_release_error_is_the_laplace_quantile(trials: int) -> None:
    node = ProposeTest(Query.mean("x") | Clip(0, 1), bound=1, epsilon=1, delta="1e-3")
    x = np.linspace(0, 1, 30)
    acc = node.accuracy()
    assert acc.tight and acc.error is not None and acc.condition == "it releases (no ⊥)"
    assert float(ptr_bottom_probability(node.eps_test, node.delta, node.distance(x))) < 1e-9
    data = as_dataset({"x": x})
    outs = [node.release(data, SeededRandomness(s)) for s in range(trials)]
    assert BOTTOM not in outs
    err = np.abs(np.array(outs, dtype=float) - float(np.mean(x))) - 2.0 ** node.lattice_k()  # lattice rounding on top
    assert consistent(int(np.sum(err > float(acc.error))), trials, 0.05)
    assert not consistent(int(np.sum(err > float(acc.error) / 2)), trials, 0.05)


def test_public_mean_profile_bounds_the_exact_profile() -> None:
    query = Query.mean("x") | Clip(0, 1)
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 12):
        for x in (rng.uniform(0, 1, n), np.array([1.0] + [0.0] * (n - 1)), np.full(n, 1.0)):
            for rel in ("add_remove", "substitution"):
                prof = ls_profile(query, x, n + 3, rel)
                for k, v in enumerate(prof):
                    if rel == "substitution" and k > 0:
                        break  # substitution: LS_k is (u - l)/n for k >= 1 by the catalog's constant profile
                    assert v <= float(mean_ls_upper(Fraction(0), Fraction(1), n, k, rel)) * (1 + 1e-12)


def test_suggest_ptr_bound_needs_an_assumption_for_order_statistics() -> None:
    q = Query.median("x") | Clip(0, 100)
    with pytest.raises(InvalidArgument, match="ls_profile"):
        suggest_ptr_bound(q, epsilon=1, delta="1e-6")
    s = suggest_ptr_bound(q, epsilon=1, delta="1e-6", ls_profile=lambda k: k + 1)
    assert s.distance == 16 and s.bound >= 16 and "ls_profile" in s.assumption
    with pytest.raises(InvalidArgument, match="n"):
        suggest_ptr_bound(Query.mean("x") | Clip(0, 1), epsilon=1, delta="1e-6", n=10)  # needs distance 16 > n + 2


# --- smooth sensitivity ---------------------------------------------------------------


@pytest.mark.parametrize("cauchy", [False, True])
def test_smooth_bound_error_given_the_smooth_sensitivity(cauchy: bool) -> None:
    query = Query.median("x") | Clip(0, 100)
    node = SmoothBoundCauchy(query, epsilon=2, clamp=False) if cauchy else SmoothBound(query, epsilon=1, delta="1e-3", clamp=False)
    x = np.arange(0.0, 50.0)
    data = as_dataset({"x": x})
    _, scale = _windowed_center_and_scale(node, data)
    s_hat = scale * node.constants().alpha - Fraction(2) ** node.lattice_k()  # the node's S(x) on this data
    assert node.accuracy().error is None
    acc = node.accuracy(smooth_sensitivity=s_hat)
    assert acc.error is not None
    truth = float(np.sort(x)[24])
    trials = 800 if not cauchy else 1200
    outs = np.array([node.release(data, SeededRandomness(s)) for s in range(trials)], dtype=float)
    err = np.abs(outs - truth) - 2.0 ** node.lattice_k()
    assert consistent(int(np.sum(err > float(acc.error))), trials, 0.05)
    assert not consistent(int(np.sum(err > float(acc.error) / 2)), trials, 0.05)


def _cauchy_tail(u: float) -> float:
    return 2 / math.pi * math.atan(1 / u)


def test_rounded_noise_quantile_matches_closed_forms() -> None:
    for b in (Fraction(1, 3), Fraction(7), Fraction(12345, 7)):
        for a in (Fraction(1, 20), Fraction(1, 1000)):
            m = rounded_noise_quantile(b, a, None)
            assert math.exp(-(m + 0.5) / float(b)) <= float(a) < (math.exp(-(m - 0.5) / float(b)) if m else 2)
            mc = rounded_noise_quantile(b, a, Fraction(2))
            assert _cauchy_tail((mc + 0.5) / float(b)) <= float(a) < (_cauchy_tail((mc - 0.5) / float(b)) if mc else 2)
    m3 = rounded_noise_quantile(Fraction(5), Fraction(1, 20), Fraction(3))
    norm = 2 * (math.pi / 3) / math.sin(math.pi / 3)
    from scipy import integrate

    def tail3(u: float) -> float:
        value: float = integrate.quad(lambda z: 1 / (1 + z**3), u, np.inf)[0]
        return 2 * value / norm

    assert tail3((m3 + 0.5) / 5) <= 0.05 < tail3((m3 - 0.5) / 5)


def test_accuracy_rejects_bad_arguments() -> None:
    node = ProposeTest(Query.mean("x") | Clip(0, 1), bound=1, epsilon=1, delta="1e-3")
    with pytest.raises(InvalidArgument, match="distance"):
        node.accuracy(distance=-1)
    with pytest.raises(InvalidArgument, match="alpha"):
        node.accuracy(0)
    with pytest.raises(InvalidArgument, match="smooth_sensitivity"):
        SmoothBound(Query.median("x") | Clip(0, 1), epsilon=1, delta="1e-3").accuracy(smooth_sensitivity=-1)
