"""SmoothBound: exact output-distribution privacy checks on a tiny domain, broken constants
caught, end-to-end error distribution against the exponential-mechanism quantile."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import attrs
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpalg import ApproxDP, Clip, InvalidArgument, PureDP, Query
from dpalg.data import Relation, as_dataset
from dpalg.mechanisms import ExponentialQuantile, SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms._common.smooth_quantile import auto_granularity, center_and_scale
from dpalg.noise import SeededRandomness
from dpalg.noise._admissible import Admissibility, CauchyNoise, LaplaceNoise

# --- exact output distributions on a tiny domain ----------------------------------------

LOWER, UPPER, K = 0, 4, -3  # clip range [0, 4], lattice step 1/8: 33 possible outputs
DOMAIN = range(LOWER, UPPER + 1)
Data = tuple[int, ...]
Cdf = Callable[[float], float]


def laplace_cdf(z: float) -> float:
    return 0.5 * math.exp(z) if z < 0 else 1 - 0.5 * math.exp(-z)


def cauchy_cdf(z: float) -> float:
    return 0.5 + math.atan(z) / math.pi


def output_pmf(x: Data, c: Admissibility, cdf: Cdf, relation: Relation, q: Fraction) -> npt.NDArray[np.float64]:
    """P[release = j·2^K] for every lattice point j of [LOWER, UPPER] (clamped), exactly.

    The release is clamp(a + N) with N = round(scale·Z/2^K): P[N = i] = F((i + ½)/b) − F((i − ½)/b),
    b = scale/2^K; clamping puts the tails on the two end points.
    """
    a, scale = center_and_scale(np.array(sorted(x), dtype=np.float64), q, Fraction(LOWER), Fraction(UPPER), relation, c, K)
    b = float(scale * 2**-K)
    lo, hi = LOWER * 2**-K, UPPER * 2**-K
    js = np.arange(lo, hi + 1)
    p = np.array([cdf((j - a + 0.5) / b) - cdf((j - a - 0.5) / b) for j in js])
    p[0] = cdf((lo - a + 0.5) / b)
    p[-1] = 1 - cdf((hi - a - 0.5) / b)
    return p


def datasets(n_max: int) -> Iterator[Data]:
    for n in range(n_max + 1):
        yield from itertools.combinations_with_replacement(DOMAIN, n)


def neighbours(x: Data, relation: Relation) -> Iterator[Data]:
    if relation == "add_remove":  # each pair is visited from its smaller side
        for v in DOMAIN:
            yield tuple(sorted(x + (v,)))
    else:
        for i, v in itertools.product(range(len(x)), DOMAIN):
            yield tuple(sorted(x[:i] + (v,) + x[i + 1 :]))


def worst_case(c: Admissibility, cdf: Cdf, relation: Relation, q: Fraction = Fraction(1, 2), n_max: int = 3) -> tuple[float, float]:
    """(max hockey-stick divergence at e^ε, max |log-ratio|) over all neighbouring pairs, both orders."""
    cache: dict[Data, npt.NDArray[np.float64]] = {}

    def pmf(x: Data) -> npt.NDArray[np.float64]:
        if x not in cache:
            cache[x] = output_pmf(x, c, cdf, relation, q)
        return cache[x]

    eps = float(c.eps)
    hockey, log_ratio = 0.0, 0.0
    for x in datasets(n_max):
        if relation == "substitution" and not x:
            continue
        for y in neighbours(x, relation):
            for p1, p2 in ((pmf(x), pmf(y)), (pmf(y), pmf(x))):
                hockey = max(hockey, float(np.sum(np.maximum(0.0, p1 - math.exp(eps) * p2))))
                log_ratio = max(log_ratio, float(np.max(np.abs(np.log(p1) - np.log(p2)))))
    return hockey, log_ratio


RELATIONS: tuple[Relation, ...] = ("add_remove", "substitution")


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 4)])
def test_laplace_node_is_eps_delta_dp_exactly_on_a_tiny_domain(relation: Relation, q: Fraction) -> None:
    c = LaplaceNoise().constants(1, "0.1")
    hockey, _ = worst_case(c, laplace_cdf, relation, q)
    assert hockey <= float(c.delta)


def test_laplace_node_with_local_sensitivity_instead_of_smooth_is_caught() -> None:
    # β far above ε/(2 ln(2/δ)): the noise follows the local sensitivity, which leaks
    c = LaplaceNoise().constants(1, "0.1")
    for relation in RELATIONS:
        hockey, _ = worst_case(attrs.evolve(c, beta=Fraction(20)), laplace_cdf, relation)
        assert hockey > 5 * float(c.delta)


@pytest.mark.parametrize("variant", ["nrs07", "tight"])
@pytest.mark.parametrize("relation", RELATIONS)
def test_cauchy_node_is_pure_dp_exactly_on_a_tiny_domain(variant: str, relation: Relation) -> None:
    c = CauchyNoise(2).constants(1, variant=variant)  # type: ignore[arg-type]
    hockey, log_ratio = worst_case(c, cauchy_cdf, relation)
    assert hockey == 0.0
    assert log_ratio <= 1.0 + 1e-9


@pytest.mark.parametrize(("field", "factor"), [("beta", 3), ("alpha", 4)])
def test_cauchy_node_with_broken_constants_is_caught(field: str, factor: int) -> None:
    c = CauchyNoise(2).constants(1, variant="tight")
    broken = attrs.evolve(c, **{field: factor * getattr(c, field)})
    _, log_ratio = worst_case(broken, cauchy_cdf, "add_remove")
    assert log_ratio > 1.0


# --- the nodes ---------------------------------------------------------------------------

MEDIAN = Query.median("x") | Clip(0, 100)


def test_costs_and_constants_are_exact() -> None:
    node = SmoothBound(MEDIAN, epsilon=1, delta="1e-6")
    assert node.cost() == ApproxDP(1, "1e-6")
    c = node.constants()
    assert c.alpha == Fraction(1, 2)
    assert c.beta <= Fraction(1) / (2 * Fraction(math.log(2e6)))  # rounded down (and log rounded up)
    assert float(c.beta) == pytest.approx(1 / (2 * math.log(2e6)), rel=1e-12)
    cauchy = SmoothBoundCauchy(MEDIAN, epsilon=Fraction(3, 2))
    assert cauchy.cost() == PureDP(Fraction(3, 2))
    assert cauchy.constants().alpha == cauchy.constants().beta == Fraction(1, 4)  # ε/6
    general = SmoothBoundCauchy(MEDIAN, epsilon=1, gamma=3)
    assert general.constants().alpha == Fraction(1, 8)  # ε/(2(γ+1))
    assert "Lemmas 2.6, 2.9" in node.privacy().rule


def test_the_lattice_is_public_and_fits_the_exact_sampler() -> None:
    node = SmoothBound(MEDIAN, epsilon="0.01", delta="1e-9")
    k = node.lattice_k()
    assert k == auto_granularity(Fraction(0), Fraction(100), Fraction(1, 200))
    # worst case S ≤ 2(u − l): the noise scale in lattice units stays ≤ 2^52
    assert (2 * 100 + Fraction(2) ** k) / (node.constants().alpha * Fraction(2) ** k) <= 2**52


def test_release_is_on_the_lattice_and_clamped() -> None:
    data = as_dataset({"x": np.array([1.0, 2.0, 3.0, 99.0])})
    node = SmoothBound(MEDIAN, epsilon="0.1", delta="1e-3", granularity=-2)
    outs = [float(node.release(data, SeededRandomness(s))) for s in range(200)]  # type: ignore[arg-type]
    assert all(0 <= v <= 100 and (v * 4) % 1 == 0 for v in outs)
    assert any(v in (0.0, 100.0) for v in outs)  # tiny ε: the clamp is reached


@pytest.mark.parametrize("kind", ["max", "min", "quantile"])
def test_other_order_statistics(kind: str) -> None:
    gen = np.random.default_rng(4)
    x = gen.uniform(0, 30, 5000)  # dense up to both clip bounds: max and min are stable
    query = {"max": Query.max("x"), "min": Query.min("x"), "quantile": Query.quantile("x", "0.9")}[kind] | Clip(0, 30)
    node = SmoothBound(query, epsilon=1, delta="1e-6")
    truth = query.evaluate(as_dataset({"x": x}))
    assert isinstance(truth, float)
    outs = np.array([node.release(as_dataset({"x": x}), SeededRandomness(s)) for s in range(30)])
    assert float(np.median(np.abs(outs - truth))) < 0.5


def test_cauchy_general_gamma_releases() -> None:
    data = as_dataset({"x": np.random.default_rng(5).uniform(0, 100, 20_000)})
    for gamma, variant in ((2, "nrs07"), (3, "tight"), ("3/2", "nrs07")):
        node = SmoothBoundCauchy(MEDIAN, epsilon=1, gamma=gamma, variant=variant)
        outs = np.array([node.release(data, SeededRandomness(s)) for s in range(15)])
        assert float(np.median(np.abs(outs - 50))) < 5.0


# --- end to end: error distribution vs the exponential mechanism ----------------------


def test_median_error_distribution_vs_exponential_mechanism() -> None:
    """ε = 1, δ = 1e-6, uniform values in [0, 100] (10^5 rows here; 10^6 in the benchmark).

    The SmoothBound error (unclamped) is exactly Laplace(2S'/ε) on the lattice: a KS test
    against that law. Its MAE is then compared with ExponentialQuantile on the same data:
    on dense uniform data the exponential mechanism (rank error O(1/ε) values) beats the
    smooth bound (S* ≈ spacing·(1/β)/e with β = ε/(2 ln(2/δ)) ≈ 0.034).
    """
    gen = np.random.default_rng(2024)
    x = gen.uniform(0, 100, 100_000)
    data = as_dataset({"x": x})
    truth = MEDIAN.evaluate(data)
    assert isinstance(truth, float)
    node = SmoothBound(MEDIAN, epsilon=1, delta="1e-6", clamp=False)
    _, scale = center_and_scale(np.sort(x), Fraction(1, 2), Fraction(0), Fraction(100), "add_remove", node.constants(), node.lattice_k())
    trials = 150
    sb = np.array([node.release(data, SeededRandomness(s)) for s in range(trials)]) - truth
    assert stats.kstest(sb / float(scale), stats.laplace.cdf).pvalue > 1e-3
    em_node = ExponentialQuantile(MEDIAN, epsilon=1)
    em = np.array([em_node.release(data, SeededRandomness(10_000 + s)) for s in range(30)]) - truth
    mae_sb, mae_em = float(np.mean(np.abs(sb))), float(np.mean(np.abs(em)))
    assert mae_sb == pytest.approx(float(scale), rel=0.15)  # E|Laplace(b)| = b
    assert 0.005 < mae_sb < 0.05
    assert mae_em < mae_sb / 2


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": Query.sum("x") | Clip(1, 1)}, "query"),  # counts and sums are accepted (S = GS); an empty range is not
        ({"query": Query.median("x")}, "query"),
        ({"query": Query.median("x") | Clip(1, 1)}, "query"),
        ({"epsilon": 0}, "epsilon"),
        ({"delta": 1}, "delta"),
        ({"delta": 0}, "delta"),
        ({"relation": "swap"}, "relation"),
        ({"granularity": -60}, "granularity"),
        ({"granularity": 1.5}, "granularity"),
        ({"epsilon": Fraction(1, 2**45)}, "epsilon"),
        ({"query": Query.median("x") | Clip(0, Fraction(1, 2**900))}, "upper - lower"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"query": MEDIAN, "epsilon": 1, "delta": "1e-6"} | kwargs
    with pytest.raises(InvalidArgument) as info:
        SmoothBound(**args)  # type: ignore[arg-type]
    assert info.value.field == field


@pytest.mark.parametrize(("kwargs", "field"), [({"gamma": 1}, "gamma"), ({"gamma": "0.5"}, "gamma"), ({"variant": "x"}, "variant")])
def test_invalid_cauchy_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        SmoothBoundCauchy(MEDIAN, epsilon=1, **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_run_produces_a_certificate() -> None:
    node = SmoothBound(MEDIAN, epsilon=1, delta="1e-6")
    node.check(ApproxDP(1, "1e-6"))
    release = node.run({"x": np.random.default_rng(0).uniform(0, 100, 1000)}, rng=SeededRandomness(1))
    assert 0 <= float(release.value) <= 100  # type: ignore[arg-type]


def test_row_substitution_is_refused_by_the_nodes() -> None:
    """A row substitution can turn a value into a missing one (n changes): the
    value-level substitution smooth bound does not cover it, so the nodes refuse."""
    with pytest.raises(InvalidArgument, match="relation"):
        SmoothBound(MEDIAN, epsilon=1, delta="1e-6", relation="substitution")
    with pytest.raises(InvalidArgument, match="relation"):
        SmoothBoundCauchy(MEDIAN, epsilon=1, relation="substitution")
