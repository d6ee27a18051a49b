"""SmoothBound over the clipped mean's exact LS_k profile (issue 18 item 1): brute force on a
small domain (upper bound, β-smoothness), broken variants caught, exact privacy of the
release, agreement with ``smooth_sensitivity_from_profile``, refusals, accuracy."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from fractions import Fraction
from functools import cache

import attrs
import numpy as np
import numpy.typing as npt
import pytest

from dpalg import ApproxDP, Clip, InvalidArgument, PureDP, Query
from dpalg.mechanisms import SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms.smooth._smooth_bound import mean_center_and_scale
from dpalg.noise import SeededRandomness
from dpalg.noise._admissible import Admissibility, LaplaceNoise
from dpalg.sensitivity import smooth_sensitivity
from dpalg.mechanisms.smooth._profile import (
    MEAN_ERR_REL,
    mean_lattice_exponent,
    mean_lattice_profile,
    mean_smooth_bound,
    mean_summary_from_values,
)

Data = tuple[int, ...]
H = 3  # value domain {0, 1, 2, 3}, clip [0, 3], lattice exponent 0 (the values are the units)
DOMAIN = range(H + 1)
LEVELS = 3  # public truncation level of the brute-force comparison
N_MAX = 4


def mean(x: Data) -> float:
    return sum(x) / len(x) if x else H / 2


def add_remove(x: Data) -> Iterator[Data]:
    for v in DOMAIN:
        yield tuple(sorted(x + (v,)))
    for i in range(len(x)):
        yield x[:i] + x[i + 1 :]


@cache
def local_sensitivity(x: Data) -> float:
    return max(abs(mean(x) - mean(y)) for y in add_remove(x))


@cache
def ls_at_distance(x: Data, k: int) -> float:
    """max of LS over the add/remove ball of radius k (breadth-first, exact)."""
    seen = {x}
    frontier = {x}
    for _ in range(k):
        frontier = {y for z in frontier for y in add_remove(z)} - seen
        seen |= frontier
    return max(local_sensitivity(y) for y in seen)


def brute_bound(x: Data, beta: float) -> float:
    """max(max_{k ≤ K} e^{−kβ} LS_k, e^{−(K+1)β}·GS): the exact truncated bound (≥ S*_β)."""
    terms = [math.exp(-k * beta) * ls_at_distance(x, k) for k in range(LEVELS + 1)]
    return max(*terms, math.exp(-(LEVELS + 1) * beta) * H / 2)


def node_bound(x: Data, beta: float, levels: int = LEVELS) -> float:
    summary = mean_summary_from_values(np.array(x, dtype=np.float64), Fraction(0), Fraction(H), 0, levels + 2)
    return mean_smooth_bound(summary, 0, H, beta, levels)


def datasets(n_max: int = N_MAX) -> Iterator[Data]:
    for n in range(n_max + 1):
        yield from itertools.combinations_with_replacement(DOMAIN, n)


def pairs() -> Iterator[tuple[Data, Data]]:
    for x in datasets():
        for v in DOMAIN:
            yield x, tuple(sorted(x + (v,)))


PAD = 2.0**20 * MEAN_ERR_REL * H  # the public pad E (absolute, value units)


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.0])
def test_bound_matches_brute_force_on_a_small_domain(beta: float) -> None:
    for x in datasets():
        exact, got = brute_bound(x, beta), node_bound(x, beta)
        assert got >= exact  # a true upper bound on the truncated (hence on the full) S*_β
        assert got <= (exact + PAD) * math.exp(2.0**-15) * math.exp(LEVELS * 2.0**-16)  # documented slack only


def test_profile_equals_brute_force_ls_k() -> None:
    for x in datasets():
        summary = mean_summary_from_values(np.array(x, dtype=np.float64), Fraction(0), Fraction(H), 0, LEVELS + 2)
        got = mean_lattice_profile(summary, 0, H, LEVELS)
        want = [ls_at_distance(x, k) for k in range(LEVELS + 1)]
        assert np.allclose(got, want, rtol=0, atol=1e-12), x


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.0])
def test_bound_is_beta_smooth_on_every_neighbouring_pair(beta: float) -> None:
    for x, y in pairs():
        sx, sy = node_bound(x, beta), node_bound(y, beta)
        assert sx <= math.exp(beta) * sy and sy <= math.exp(beta) * sx


def _violations(bound: dict[Data, float], beta: float) -> int:
    return sum(bound[y] > math.exp(beta) * bound[x] or bound[x] > math.exp(beta) * bound[y] for x, y in pairs())


def test_broken_variants_are_caught() -> None:
    beta = 0.5
    every = list(datasets(N_MAX + 1))
    # 1. LS_0 only (no smoothing): not β-smooth
    ls0 = {x: local_sensitivity(x) for x in every}
    assert _violations(ls0, beta) > 0
    # 2. a truncation level chosen from LS_0 (no look-ahead when the data look stable), no tail constant:
    #    two neighbours truncate at different levels and the bound is not β-smooth (DESIGN §5)
    def data_level(x: Data) -> int:
        return 0 if local_sensitivity(x) <= 0.5 else LEVELS

    data_k = {x: max(math.exp(-k * beta) * ls_at_distance(x, k) for k in range(data_level(x) + 1)) for x in every}
    assert _violations(data_k, beta) > 0
    # 3. the profile one level short (LS_{k−1} at level k): below the brute-force bound
    assert any(
        max(math.exp(-k * beta) * ls_at_distance(x, max(k - 1, 0)) for k in range(LEVELS + 1)) < brute_bound(x, beta)
        for x in datasets()
    )
    # the real bound passes the same checks
    real = {x: node_bound(x, beta) for x in every}
    assert _violations(real, beta) == 0


# --- exact privacy of the release on a tiny domain --------------------------------------

LOWER, UPPER, K = 0, 4, -3


def laplace_cdf(z: float) -> float:
    return 0.5 * math.exp(z) if z < 0 else 1 - 0.5 * math.exp(-z)


def output_pmf(x: Data, c: Admissibility) -> npt.NDArray[np.float64]:
    """P[release = j·2^K] on [LOWER, UPPER] (clamped) from the node's own centre and scale."""
    km = mean_lattice_exponent(Fraction(LOWER), Fraction(UPPER))
    summary = mean_summary_from_values(np.array(x, dtype=np.float64), Fraction(LOWER), Fraction(UPPER), km, 10**4)
    a, scale = mean_center_and_scale(summary, Fraction(LOWER), Fraction(UPPER), c, K)
    b = float(scale * 2**-K)
    lo, hi = LOWER * 2**-K, UPPER * 2**-K
    js = np.arange(lo, hi + 1)
    p = np.array([laplace_cdf((j - a + 0.5) / b) - laplace_cdf((j - a - 0.5) / b) for j in js])
    p[0] = laplace_cdf((lo - a + 0.5) / b)
    p[-1] = 1 - laplace_cdf((hi - a - 0.5) / b)
    return p


def worst_hockey(c: Admissibility, n_max: int = 3) -> float:
    domain = range(LOWER, UPPER + 1)
    pmfs = {x: output_pmf(x, c) for n in range(n_max + 2) for x in itertools.combinations_with_replacement(domain, n)}
    eps = float(c.eps)
    worst = 0.0
    for x in (x for x in pmfs if len(x) <= n_max):
        for v in domain:
            y = tuple(sorted(x + (v,)))
            for p1, p2 in ((pmfs[x], pmfs[y]), (pmfs[y], pmfs[x])):
                worst = max(worst, float(np.sum(np.maximum(0.0, p1 - math.exp(eps) * p2))))
    return worst


def test_mean_release_is_eps_delta_dp_exactly_on_a_tiny_domain() -> None:
    c = LaplaceNoise().constants(1, "0.001")
    assert worst_hockey(c) <= float(c.delta)


def test_mean_release_with_local_sensitivity_is_caught() -> None:
    c = LaplaceNoise().constants(1, "0.001")
    broken = attrs.evolve(c, beta=Fraction(20))  # the noise follows the local sensitivity
    assert worst_hockey(broken) > 10 * float(c.delta)


# --- against smooth_sensitivity_from_profile --------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_smooth_sensitivity_from_profile(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    beta = float(rng.choice([0.05, 0.2, 1.0]))
    x = np.round(rng.uniform(0, 1, n) ** rng.uniform(0.2, 5), 6)  # skewed data: LS_k varies with k
    lower, upper = Fraction(0), Fraction(1)
    km = mean_lattice_exponent(lower, upper)
    levels = math.ceil(60 / beta)  # the tail constant e^{−(K+1)β₀}·GS is below e^-60
    summary = mean_summary_from_values(x, lower, upper, km, levels + 2)
    got = math.ldexp(mean_smooth_bound(summary, int(lower / 2**km), int(upper / 2**km), beta, levels), km)
    ref = smooth_sensitivity(Query.mean("x") | Clip(0, 1), _all_terms(x, km), beta, "add_remove")  # the lattice terms
    assert got >= ref * (1 - 1e-9)
    assert got <= ref * (1 + 1e-4) + 2.0**-20


def _all_terms(x: npt.NDArray[np.float64], km: int) -> npt.NDArray[np.float64]:
    summary = mean_summary_from_values(x, Fraction(0), Fraction(1), km, x.size)
    return np.ldexp(summary.smallest.astype(np.float64), km)


# --- the nodes ----------------------------------------------------------------------------

MEAN = Query.mean("x") | Clip(0, 100)


def test_node_repr_and_cost() -> None:
    node = SmoothBound(MEAN, epsilon=1, delta="1e-6")
    assert repr(node).startswith("SmoothBound(query=Query.mean('x') | Clip(0, 100), epsilon=")
    assert node.cost() == ApproxDP(1, "1e-6")
    assert SmoothBoundCauchy(MEAN, epsilon=1).cost() == PureDP(1)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (Query.sum("x", user="u") | Clip(0, 1), "user-level sum"),
        (Query.mode("x") | Clip(0, 1), "kind"),
        (Query.mean("x"), "Clip"),
    ],
)
def test_kinds_without_a_useful_profile_are_refused(query: Query, words: str) -> None:
    for make in (lambda: SmoothBound(query, epsilon=1, delta="1e-6"), lambda: SmoothBoundCauchy(query, epsilon=1)):
        with pytest.raises(InvalidArgument) as info:
            make()
        assert info.value.field == "query"
        assert words in str(info.value)


def test_release_is_clamped_on_the_lattice_and_near_the_mean() -> None:
    x = np.random.default_rng(0).uniform(0, 100, 200)
    node = SmoothBound(MEAN, epsilon=1, delta="1e-6")
    node.check(ApproxDP(1, "1e-6"))
    with pytest.warns(Warning, match="NOT SECURE"):
        value = float(node.run({"x": x}, rng=SeededRandomness(3)).value)  # type: ignore[arg-type]
    assert 0 <= value <= 100
    assert (Fraction(value) / Fraction(2) ** node.lattice_k()).denominator == 1
    assert abs(value - float(np.mean(x))) < 20


def test_accuracy_statement_covers_the_release() -> None:
    """The (1 − α) statement at s = Ŝ(x) holds for the exact lattice noise at the node's scale."""
    x = np.random.default_rng(1).uniform(0, 100, 50)
    node = SmoothBound(MEAN, epsilon=1, delta="1e-6", clamp=False)
    c, k = node.constants(), node.lattice_k()
    km = mean_lattice_exponent(Fraction(0), Fraction(100))
    summary = mean_summary_from_values(x, Fraction(0), Fraction(100), km, 10**4)
    a, scale = mean_center_and_scale(summary, Fraction(0), Fraction(100), c, k)
    s_hat = scale * c.alpha - Fraction(2) ** k
    acc = node.accuracy(Fraction(1, 10), smooth_sensitivity=s_hat)
    assert acc.error is not None and acc.error > 0
    noise = node.noise().sample_lattice(2000, k, SeededRandomness(5), scale=scale)
    errors = np.abs(np.asarray(noise, dtype=np.float64)) * 2.0**k
    assert float(np.mean(errors <= float(acc.error))) >= 0.88
    assert float(acc.error) < 1.2 * float(scale) * math.log(10) + 1e-6  # the Laplace quantile, not a loose bound
