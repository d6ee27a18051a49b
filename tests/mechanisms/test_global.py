"""Global-sensitivity mechanisms: exact privacy checks on small domains, noise scale, validation."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from collections.abc import Callable
from typing import Literal

import numpy as np
import pytest
from scipy import stats

from dpalg import ZCDP, Clip, Compose, InvalidArgument, PureDP, Query, ZCDPToApprox
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace, NoisyMax
from dpalg.mechanisms.global_noise import _laplace_gaussian
from dpalg.mechanisms.global_noise._laplace_gaussian import noise_terms
from dpalg.mechanisms.selection._exponential import quantile_runs
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.noise import SeededRandomness

DOMAIN = (0.0, 0.5, 1.0, 2.0)


def _ds(x: tuple[float, ...]) -> Dataset:
    keys = ["a" if v < 1 else "b" for v in x]
    return as_dataset({"x": np.array(x, dtype=np.float64), "g": np.array(keys, dtype=object)})


def _privacy_loss_bound(node: Laplace | Gaussian, x: Dataset, y: Dataset) -> Fraction:
    """Exact worst-case loss between the output distributions on x and y.

    Laplace: the pmf ratio of discrete Laplace shifted by d is at most exp(|d|/t)
    per coordinate (attained), so the max log-ratio is sum |d_i|/t_i.
    Gaussian: the Renyi divergence of discrete Gaussians with shift d is at most
    alpha d^2/(2 sigma^2) (CKS 2020 Prop. 5): rho-equivalent sum d_i^2/(2 sigma_i^2).
    """
    tx, ty = noise_terms(node, x), noise_terms(node, y)
    assert [(t.label, t.param, t.k) for t in tx] == [(t.label, t.param, t.k) for t in ty], "noise must not depend on data"
    total = Fraction(0)
    for a, b in zip(tx, ty):
        d = Fraction(a.value - b.value)
        total += abs(d) / a.param if isinstance(node, Laplace) else d * d / (2 * a.param)
    return total


NODES = [
    lambda r: Laplace(Query.count(), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.count("x"), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.count_distinct("x"), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.histogram("g", keys=("a", "b", "c")), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.sum("x") | Clip(0, 2), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.sum("x") | Clip("0.3", "1.7"), epsilon="0.7", relation=r, granularity=-2),
    lambda r: Laplace(Query.sum("x") | Clip(-1, 2), epsilon="0.7", relation=r, granularity=-1),
    lambda r: Laplace(Query.mean("x") | Clip(0, 2), epsilon="0.7", relation=r),
    lambda r: Gaussian(Query.count(), rho="0.3", relation=r),
    lambda r: Gaussian(Query.histogram("g", keys=("a", "b")), rho="0.3", relation=r),
    lambda r: Gaussian(Query.sum("x") | Clip(0, 2), rho="0.3", relation=r),
    lambda r: Gaussian(Query.mean("x") | Clip("0.5", 2), rho="0.3", relation=r, granularity=-3),
]


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("make", NODES, ids=range(len(NODES)))
def test_exact_privacy_on_all_neighbours(make: object, relation: str) -> None:
    node = make(relation)  # type: ignore[operator]
    budget = node.epsilon if isinstance(node, Laplace) else node.rho
    worst = max(_privacy_loss_bound(node, _ds(x), _ds(y)) for x, y in multiset_neighbours(DOMAIN, 3, relation))
    assert worst <= budget
    row_count_under_substitution = node.query.kind == "count" and relation == "substitution"
    assert worst > 0 or row_count_under_substitution  # the check is not vacuous


def test_broken_lattice_units_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sensitivity mistakenly kept in real units (a bug we once had) fails the exact check."""
    node = Laplace(Query.sum("x") | Clip(0, 2), epsilon="0.7", granularity=-4)
    from dpalg.noise import clipped_sum_sensitivity

    def bad(query: Query, relation: Literal["add_remove", "substitution"], k: int) -> Fraction:
        lower, upper = query.require_bounds("test")
        return clipped_sum_sensitivity(lower, upper, k, relation)  # real units: the bug

    monkeypatch.setattr(_laplace_gaussian, "_sum_sensitivity", bad)
    worst = max(_privacy_loss_bound(node, _ds(x), _ds(y)) for x, y in multiset_neighbours(DOMAIN, 2, "add_remove"))
    assert worst > node.epsilon


def test_exact_pmf_ratio_of_count_mechanism() -> None:
    """Direct check on the pmf: P[out = o | n] / P[out = o | n+1] <= e^eps for all o."""
    eps = Fraction(1, 2)
    node = Laplace(Query.count(), epsilon=eps)
    t = noise_terms(node, _ds((0.0,)))[0].param
    q = math.exp(-1 / float(t))

    def pmf(z: int) -> float:
        return (1 - q) / (1 + q) * q ** abs(z)

    ratios = [pmf(o - 1) / pmf(o - 2) for o in range(-30, 30)]
    assert max(ratios) <= math.exp(float(eps)) * (1 + 1e-12)
    assert max(ratios) >= math.exp(float(eps)) * (1 - 1e-9)  # tight


def _discrete_laplace_var(t: float) -> float:
    q = math.exp(-1 / t)
    return 2 * q / (1 - q) ** 2


def test_released_noise_has_the_claimed_scale() -> None:
    """The empirical variance of released sums matches the theory (catches a too-small scale)."""
    data = as_dataset({"x": np.linspace(0, 10, 50)})
    rng = SeededRandomness(11)
    node = Laplace(Query.sum("x") | Clip(0, 10), epsilon=1)
    plan = Compose(node)
    plan.check(PureDP(1))
    truth = float(noise_terms(node, data)[0].value * Fraction(2) ** noise_terms(node, data)[0].k)
    draws = np.array([node.release(data, rng) for _ in range(4000)], dtype=np.float64) - truth
    expected = 2 * 10.0**2  # Laplace(b = 10) variance; the lattice step is 2^-20 of b
    assert abs(draws.var() / expected - 1) < 0.1
    gauss = Gaussian(Query.count(), rho="0.5")
    g = np.array([gauss.release(data, rng) for _ in range(4000)], dtype=np.float64) - 50
    assert abs(g.var() / 1.0 - 1) < 0.1  # sigma^2 = 1/(2 rho) = 1


def _em_probs(node: ExponentialQuantile, x: tuple[float, ...]) -> list[float]:
    size = 1 << node.grid_bits
    lo, hi = (float(b) for b in node.query.require_bounds("t"))
    idx = np.clip(np.rint((np.array(x) - lo) * (size / (hi - lo))), 0, size).astype(np.int64)
    starts, lengths, scores = quantile_runs(idx, size, node.q)
    gamma = float(node.epsilon / (2 * node.sensitivity() * node.q.denominator))
    per_point = [0.0] * (size + 1)
    for s, n, sc in zip(starts.tolist(), lengths.tolist(), scores.tolist()):
        for j in range(s, s + n):
            per_point[j] = math.exp(-gamma * sc)
    total = sum(per_point)
    return [w / total for w in per_point]


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", ["0.5", "0.25", "0.9"])
def test_exponential_quantile_exact_ratios(relation: str, q: str) -> None:
    node = ExponentialQuantile(Query.quantile("x", q) | Clip(0, 2), epsilon="0.8", relation=relation, grid_bits=3)
    worst = 0.0
    for x, y in multiset_neighbours(DOMAIN, 3, relation):
        px, py = _em_probs(node, x), _em_probs(node, y)
        worst = max(worst, max(math.log(a / b) for a, b in zip(px, py)))
    assert worst <= 0.8 + 1e-12
    assert worst > 0.1


def test_exponential_quantile_wrong_sensitivity_is_caught() -> None:
    # Under substitution the utility moves by 1; using add/remove's max(q, 1-q) = 1/2 breaks eps.
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon="0.8", relation="substitution", grid_bits=3)
    broken = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon="0.8", relation="add_remove", grid_bits=3)
    worst = 0.0
    for x, y in multiset_neighbours(DOMAIN, 3, "substitution"):
        px, py = _em_probs(broken, x), _em_probs(broken, y)
        worst = max(worst, max(math.log(a / b) for a, b in zip(px, py)))
    assert worst > float(node.epsilon) + 0.05


@pytest.mark.slow  # the heaviest fast tests (10-40 s each): still run by .ci/run
def test_exponential_quantile_samples_its_exact_distribution() -> None:
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon=2, grid_bits=3)
    x = (0.0, 0.5, 0.5, 1.0, 2.0)
    probs = _em_probs(node, x)
    rng = SeededRandomness(5)
    data = _ds(x)
    counts = Counter(node.release(data, rng) for _ in range(20_000))
    observed = [counts.get(0 + 2 * j / 8, 0) for j in range(9)]
    assert sum(observed) == 20_000
    assert stats.chisquare(observed, [p * 20_000 for p in probs]).pvalue > 1e-4


def test_exponential_quantile_utility_on_large_data() -> None:
    data = as_dataset({"x": np.linspace(0, 100, 100_001)})
    node = ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=1)
    out = [node.release(data, SeededRandomness(s)) for s in range(20)]
    assert all(isinstance(o, float) and abs(o - 50) < 0.1 for o in out)


@pytest.mark.parametrize("draws", [5_000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_noisy_max_exact_ratio_and_sampling(draws: int) -> None:
    node = NoisyMax(Query.histogram("g", keys=("a", "b", "c")), epsilon=1)

    def probs(x: tuple[float, ...]) -> list[float]:
        c = [sum(v < 1 for v in x), sum(v >= 1 for v in x), 0]
        w = [math.exp(float(node.epsilon) * ci) for ci in c]
        return [wi / sum(w) for wi in w]

    worst = max(max(math.log(a / b) for a, b in zip(probs(x), probs(y))) for x, y in multiset_neighbours(DOMAIN, 3, "add_remove"))
    assert 0.5 < worst <= 1 + 1e-12
    rng = SeededRandomness(9)
    x = (0.0, 0.5, 1.0)
    got = Counter(node.release(_ds(x), rng) for _ in range(draws))
    observed = [got.get(k, 0) for k in ("a", "b", "c")]
    assert stats.chisquare(observed, [p * draws for p in probs(x)]).pvalue > 1e-4


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: Laplace(Query.count(), epsilon=0), "Laplace", "epsilon"),
        (lambda: Laplace(Query.count(), epsilon="-1"), "Laplace", "epsilon"),
        (lambda: Laplace(Query.count(), epsilon=float("nan")), "Laplace", "epsilon"),
        (lambda: Laplace(Query.sum("x"), epsilon=1), "Laplace", "query"),
        (lambda: Laplace(Query.median("x") | Clip(0, 1), epsilon=1), "Laplace", "query"),
        (lambda: Laplace(Query.histogram("g"), epsilon=1), "Laplace", "query"),
        (lambda: Laplace(Query.count(), epsilon=1, relation="swap"), "Laplace", "relation"),
        (lambda: Laplace(Query.count(), epsilon=1, granularity=1.5), "Laplace", "granularity"),  # type: ignore[arg-type]
        (lambda: Gaussian(Query.count(), rho=0), "Gaussian", "rho"),
        (lambda: Gaussian(Query.mean("x"), rho=1), "Gaussian", "query"),
        (lambda: ExponentialQuantile(Query.mean("x") | Clip(0, 1), epsilon=1), "ExponentialQuantile", "query"),
        (lambda: ExponentialQuantile(Query.median("x"), epsilon=1), "ExponentialQuantile", "query"),
        (lambda: ExponentialQuantile(Query.median("x") | Clip(1, 1), epsilon=1), "ExponentialQuantile", "query"),
        (lambda: ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1, grid_bits=0), "ExponentialQuantile", "grid_bits"),
        (lambda: NoisyMax(Query.histogram("g"), epsilon=1), "NoisyMax", "query"),
        (lambda: NoisyMax(Query.histogram("g", keys=("a",)), epsilon=-1), "NoisyMax", "epsilon"),
    ],
)
def test_invalid_mechanism_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner == owner and info.value.field == field


def test_end_to_end_plan_with_conversion() -> None:
    plan = Compose(ZCDPToApprox(Compose(Gaussian(Query.count(), rho="0.1")), delta="1e-6"))
    from dpalg import ApproxDP

    plan.check(ApproxDP(3, "1e-6"))
    out = plan.run({"x": [1.0, 2.0, 3.0]}, rng=0)
    assert isinstance(out.value, tuple) and isinstance(out.value[0], tuple) and isinstance(out.value[0][0], int)
    assert Gaussian(Query.count(), rho="0.1").cost() == ZCDP("0.1")


def test_empty_data_is_defined() -> None:
    empty = {"x": np.array([], dtype=np.float64)}
    for node in (Laplace(Query.mean("x") | Clip(0, 4), epsilon=1), ExponentialQuantile(Query.median("x") | Clip(0, 4), epsilon=1)):
        value = node.release(as_dataset(empty), SeededRandomness(0))
        assert isinstance(value, float) and 0 <= value <= 4


def test_centred_mean_sensitivity_is_tight_under_add_remove() -> None:
    """Centring halves the mean's sum sensitivity; the exact worst case meets ε exactly,
    so any further (wrong) reduction of the declared sensitivity would fail the check above."""
    node = Laplace(Query.mean("x") | Clip(0, 2), epsilon="0.7")
    worst = max(_privacy_loss_bound(node, _ds(x), _ds(y)) for x, y in multiset_neighbours(DOMAIN, 3, "add_remove"))
    assert worst == Fraction(7, 10)
    terms = noise_terms(node, _ds((0.0, 2.0)))
    assert terms[0].label == "centred_sum" and terms[0].sensitivity * 2 ** terms[0].k == 1  # (u - l)/2, not max(|l|, |u|) = 2


@pytest.mark.parametrize(
    "make",
    [
        lambda: Laplace(Query.sum("x") | Clip(0, 2**1000), epsilon=1, granularity=-100),
        lambda: Laplace(Query.count(), epsilon="1e-20"),
        lambda: Gaussian(Query.histogram("g", keys=("a",)), rho="1e-40"),
    ],
)
def test_noise_beyond_the_sampler_range_fails_at_construction(make: Callable[[], object]) -> None:
    """Data-independent, so it must fail before any charge, not during a run."""
    with pytest.raises(InvalidArgument, match="lattice units"):
        make()
