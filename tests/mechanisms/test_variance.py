"""Variance and standard deviation through Laplace (ε-DP) and Gaussian (ρ-zCDP).

The release is post-processing of three integer statistics (count, centred sum,
centred sum of squares), so privacy is checked exactly on those: for every pair of
neighbouring small datasets over a domain (values beyond the clip, inside it, and
missing), the worst-case privacy loss of the three noisy terms is computed from
their exact shifts and noise parameters, and must not exceed the budget. Two
broken variants (the squares' sensitivity halved; the squares taken uncentred
while the centred bound is declared) must fail that check.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dpalg import Clip, InvalidArgument, PureDP, Query, Session
from dpalg.cli import main
from dpalg.data import Dataset, SumSpec, as_dataset
from dpalg.data._fixed_point import lattice_bounds, square_term_bound
from dpalg.data._numpy_reductions import lattice_sum
from dpalg.measures import ZCDP
from dpalg.mechanisms import Gaussian, Laplace, SmoothBound
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.mechanisms.global_noise import _laplace_gaussian
from dpalg.mechanisms.global_noise._laplace_gaussian import moment_value, noise_terms, public_noise_terms
from dpalg.noise import SeededRandomness
from dpalg.noise._tails import laplace_tail_quantile
from dpalg.release import audit_certificate
from dpalg.release._serialize import decode, encode

NAN = math.nan
#: beyond the clip on both sides (so the extremes are attained), inside it, and missing
DOMAIN = (-5.0, 0.5, 1.3, 7.0, NAN)


def _ds(x: tuple[float, ...]) -> Dataset:
    return as_dataset({"x": np.array(x, dtype=np.float64)})


def _loss(node: Laplace | Gaussian, x: tuple[float, ...], y: tuple[float, ...]) -> Fraction:
    """The exact worst-case privacy loss of the three noisy terms between x and y.

    Laplace: the pmf ratio of a discrete Laplace of scale t shifted by d is at most
    exp(|d|/t) (attained), so the loss is Σ |d_i|/t_i. Gaussian: the Rényi divergence of
    discrete Gaussians shifted by d is at most α·d²/(2σ²) (CKS 2020 Prop. 5), so the
    ρ-equivalent is Σ d_i²/(2σ_i²).
    """
    tx, ty = noise_terms(node, _ds(x)), noise_terms(node, _ds(y))
    assert [(t.label, t.param, t.k) for t in tx] == [(t.label, t.param, t.k) for t in ty], "noise must not depend on data"
    assert [t.label for t in tx] == ["centred_sum", "centred_squares", "count"]
    total = Fraction(0)
    for a, b in zip(tx, ty):
        d = Fraction(a.value - b.value)
        total += abs(d) / a.param if isinstance(node, Laplace) else d * d / (2 * a.param)
    return total


def _worst(node: Laplace | Gaussian, relation: str, max_n: int = 3) -> Fraction:
    return max(_loss(node, x, y) for x, y in multiset_neighbours(DOMAIN, max_n, relation))


def _budget(node: Laplace | Gaussian) -> Fraction:
    return node.epsilon if isinstance(node, Laplace) else node.rho


NODES: list[Callable[[str], Laplace | Gaussian]] = [
    lambda r: Laplace(Query.variance("x") | Clip(0, 2), epsilon="0.7", relation=r),
    lambda r: Laplace(Query.stdev("x") | Clip("0.3", "1.7"), epsilon="0.7", relation=r, granularity=-2),
    lambda r: Laplace(Query.variance("x") | Clip(1, 2), epsilon="0.9", relation=r, granularity=-3),
    lambda r: Laplace(Query.variance("x") | Clip(-1, 2), epsilon=3, relation=r, granularity=-1),
    lambda r: Gaussian(Query.variance("x") | Clip(-1, 2), rho="0.3", relation=r),
    lambda r: Gaussian(Query.stdev("x") | Clip(1, 2), rho="0.3", relation=r, granularity=-1),
]


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("make", NODES, ids=range(len(NODES)))
def test_exact_privacy_on_all_neighbours(make: Callable[[str], Laplace | Gaussian], relation: str) -> None:
    node = make(relation)
    worst = _worst(node, relation)
    assert worst <= _budget(node)
    if relation == "add_remove":
        # adding a value at the clip's far end attains every term's sensitivity at once: the bound is tight,
        # so any smaller declared sensitivity would fail the check
        assert worst == _budget(node)
    else:
        assert worst > 0


def test_halving_the_squares_sensitivity_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    node = Laplace(Query.variance("x") | Clip("0.3", "1.7"), epsilon="0.7", granularity=-2)
    monkeypatch.setattr(_laplace_gaussian, "square_term_bound", lambda lo, hi, c, s: square_term_bound(lo, hi, c, s) // 2)
    assert _worst(node, "add_remove") > node.epsilon


def test_uncentred_squares_with_the_centred_bound_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The centring mistake: squares of t (not t - c) while the declared bound is that of t - c."""

    def uncentred(column: str, lower: Fraction, upper: Fraction, k: int, centre: int | None = None, shift: int = 0) -> SumSpec:
        return SumSpec(column, lower, upper, k, centre=None if centre is None else 0, shift=shift)

    node = Gaussian(Query.stdev("x") | Clip(1, 2), rho="0.3", granularity=-1)
    assert _worst(node, "add_remove") == node.rho
    monkeypatch.setattr(_laplace_gaussian, "SumSpec", uncentred)
    assert _worst(node, "add_remove") > node.rho


def test_the_centred_squares_bound_is_about_the_half_width_squared() -> None:
    """Centring on the lattice midpoint: the squares' sensitivity is ((u - l)/2)^2, not u^2."""
    node = Laplace(Query.variance("x") | Clip(100, 102), epsilon=1, granularity=-3)
    _, squares, _ = public_noise_terms(node)
    assert squares.sensitivity * Fraction(2) ** squares.k == 1  # ((102 - 100)/2)^2, in real units


def test_every_square_term_lies_in_its_bound_for_every_value() -> None:
    """The clamp the sensitivity rests on: one value's square term is in [0, Q] whatever the value (specials, huge,
    subnormal, ties), for clip ranges and lattices of every kind (fast and exact paths)."""
    values = [NAN, math.inf, -math.inf, -0.0, 0.0, 1e308, -1e308, 5e-324, 0.5, 2.5, -2.5, 0.1, 7.25, 2.0**51 + 0.5]
    values += np.random.default_rng(3).normal(0, 20, 200).tolist()
    cases = [(Fraction(0), Fraction(10)), (Fraction(-5, 2), Fraction(29, 4)), (Fraction(1, 10), Fraction(1, 2)), (Fraction(3), Fraction(3))]
    for lower, upper in cases:
        for k in (-40, -20, -3, 0, 2):
            lo_u, hi_u = lattice_bounds(lower, upper, k, "test")
            c = (lo_u + hi_u) // 2
            for s in (0, 1, 7):
                bound = square_term_bound(lo_u, hi_u, c, s)
                for v in values:
                    got = lattice_sum(np.array([v]), lower, upper, k, centre=c, shift=s)
                    assert 0 <= got.total <= bound, (lower, upper, k, s, v)


# -- the value ---------------------------------------------------------------------------------


def test_the_exact_value_is_the_population_variance_of_the_clipped_values() -> None:
    data = {"x": [-3.0, 1.0, 2.0, NAN, 50.0]}  # clipped to 0, 1, 2, 10
    var = float(np.var([0.0, 1.0, 2.0, 10.0]))
    assert (Query.variance("x") | Clip(0, 10)).evaluate(data) == var
    assert (Query.stdev("x") | Clip(0, 10)).evaluate(data) == math.sqrt(var)
    assert (Query.variance("x") | Clip(0, 10)).evaluate({"x": [NAN]}) == 0.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: Laplace(Query.variance("x") | Clip(0, 10), epsilon=200),
        lambda: Laplace(Query.stdev("x") | Clip(0, 10), epsilon=200),
        lambda: Gaussian(Query.variance("x") | Clip(0, 10), rho=2000),
        lambda: Gaussian(Query.stdev("x") | Clip(0, 10), rho=2000, relation="substitution"),
    ],
)
def test_accurate_at_a_large_budget(make: Callable[[], Laplace | Gaussian]) -> None:
    data = {"x": np.random.default_rng(5).normal(4, 2, 4000)}
    node = make()
    truth = node.query.evaluate(data)
    assert isinstance(truth, float)
    got = [node.release(as_dataset(data), SeededRandomness(s)) for s in range(5)]
    assert all(isinstance(v, float) and abs(v - truth) < 2e-3 * truth for v in got)


def test_nearly_unbiased_at_a_moderate_budget() -> None:
    """The estimator is a ratio (biased by O(1/n²) terms); at n = 2000 its mean over 400 seeded runs is within
    four standard errors of the truth."""
    data = as_dataset({"x": np.random.default_rng(6).uniform(0, 10, 2000)})
    node = Laplace(Query.variance("x") | Clip(0, 10), epsilon=1)
    truth = node.query.evaluate(data)
    assert isinstance(truth, float)
    draws = np.array([node.release(data, SeededRandomness(s)) for s in range(400)], dtype=np.float64)
    assert abs(draws.mean() - truth) < 4 * draws.std() / math.sqrt(draws.size)
    assert draws.std() < 0.05 * truth  # and the noise is small at this size


def test_empty_data_and_a_nonpositive_noisy_count_give_zero() -> None:
    empty = as_dataset({"x": np.zeros(0)})
    for node in (Laplace(Query.variance("x") | Clip(0, 4), epsilon=1), Gaussian(Query.stdev("x") | Clip(0, 4), rho=1)):
        values = [node.release(empty, SeededRandomness(s)) for s in range(30)]
        assert all(isinstance(v, float) and 0 <= v <= 4 for v in values)
        assert 0.0 in values  # a noisy count <= 0 falls back to the empty data's value
    query = Query.variance("x") | Clip(0, 4)
    assert moment_value(query, 7, 9, 0, 0, 0) == 0.0 and moment_value(query, 7, 9, -3, 0, 0) == 0.0
    assert moment_value(query, 0, 10**9, 1, 0, 0) == 4.0  # clamped to ((u - l)/2)^2
    assert moment_value(Query.stdev("x") | Clip(0, 4), 0, 10**9, 1, 0, 0) == 2.0


# -- accuracy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["variance", "stdev"])
def test_accuracy_is_conditional_and_holds_where_a_naive_bound_fails(kind: str) -> None:
    """All values at 95 of [0, 100] (far from the centre 50): the count's and the sum's noise matter, and a bound
    that keeps only the squares' noise over n is exceeded far too often."""
    query = Query.variance("x") if kind == "variance" else Query.stdev("x")
    node = Laplace(query | Clip(0, 100), epsilon=2)
    alpha = Fraction(1, 10)
    conditional = node.accuracy(alpha)
    assert conditional.error is None and conditional.condition is not None and "n >" in conditional.condition
    n, trials = 60, 1500
    acc = node.accuracy(alpha, n=n)
    assert acc.error is not None and not acc.tight
    data = as_dataset({"x": np.full(n, 95.0)})
    truth = node.query.evaluate(data)
    assert isinstance(truth, float)
    errors = np.abs(np.array([node.release(data, SeededRandomness(s)) for s in range(trials)], dtype=np.float64) - truth)
    assert np.mean(errors > float(acc.error)) <= float(alpha)
    if kind == "variance":
        squares = public_noise_terms(node)[1]
        m2, _ = laplace_tail_quantile(squares.param, alpha)
        naive = float(m2 * Fraction(2) ** squares.k / n)
        assert np.mean(errors > naive) > 0.14  # expected about 0.18 (measured)
    with pytest.raises(InvalidArgument, match="n="):
        node.accuracy(alpha, n=1)


# -- validation, refusals ---------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: Laplace(Query.variance("x"), epsilon=1), lambda: Gaussian(Query.stdev("x"), rho=1)])
def test_a_variance_without_a_clip_is_refused_at_construction(make: Callable[[], object]) -> None:
    with pytest.raises(InvalidArgument, match=r"needs a clipping range: add \| Clip"):
        make()


def test_refused_before_any_charge() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument):
        session.run(Laplace(Query("variance", "x", user="uid") | Clip(0, 1), epsilon=1), {"x": [1.0], "uid": [1]})
    assert session.spent == PureDP(0)


def test_user_level_variance_is_refused_clearly() -> None:
    with pytest.raises(InvalidArgument, match="user-level 'variance' is not supported"):
        Laplace(Query("variance", "x", user="uid") | Clip(0, 1), epsilon=1)
    with pytest.raises(InvalidArgument, match="user-level 'stdev' is not supported"):
        Gaussian(Query("stdev", "x", user="uid") | Clip(0, 1), rho=1)


def test_other_mechanisms_refuse_a_variance() -> None:
    with pytest.raises(InvalidArgument):
        SmoothBound(Query.variance("x") | Clip(0, 1), epsilon=1, delta="1e-6")


# -- certificates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "node, budget",
    [
        (Laplace(Query.variance("x") | Clip(0, 10), epsilon="0.5", relation="substitution"), PureDP(1)),
        (Gaussian(Query.stdev("x") | Clip("-0.5", 10), rho="0.25", granularity=-12), ZCDP(1)),
    ],
)
def test_certificates_round_trip_and_audit(node: Any, budget: Any, tmp_path: Any) -> None:
    assert decode(json.loads(json.dumps(encode(node)))) == node
    release = Session(budget).run(node, {"x": [1.0, 2.0, 3.5, NAN]}, rng=4)
    assert isinstance(release.value, float)
    report = audit_certificate(release.certificate)
    assert report.status == "cost_confirmed", report.findings
    path = tmp_path / "cert.json"
    path.write_text(release.certificate_json())
    assert main(["audit", str(path)]) == report.exit_code
