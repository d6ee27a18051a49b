"""Propose-test-release, PTR for the mode and stable histograms: exact privacy checks."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import sympy

from dpalg import BOTTOM, ApproxDP, Clip, Compose, InvalidArgument, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms.ptr._propose_test import ProposeTest, PTRMode
from dpalg.mechanisms._common.ptr_test import ptr_cap
from dpalg.mechanisms.ptr._stable_histogram import StableHistogram, stable_threshold
from dpalg.mechanisms.ptr._testing import bottom_probability, worst_ptr_delta
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate

DOMAIN = (0.0, 1.0, 2.0, 3.0)
PAIRS = multiset_neighbours(DOMAIN, 4)  # 280 pairs over 70 datasets of at most 4 values


def _median_node(delta: str = "0.01") -> ProposeTest:
    return ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", epsilon="0.5", delta=delta, granularity=-2)


def test_ptr_exact_privacy_on_all_neighbours() -> None:
    node = _median_node()
    m = ceil_log_inv_delta_over_eps(node.eps_test, node.delta) - 1
    worst = worst_ptr_delta(node, PAIRS, m)
    assert worst <= float(node.delta)


def test_seed_002_threshold_is_caught() -> None:
    """Seed 002's threshold log(2/delta)/(2 eps) lets unstable datasets through far too often."""
    node = _median_node()
    eps, delta = node.eps_test, node.delta
    seed_m = math.ceil(math.log(2 / float(delta)) / (2 * float(eps))) - 1
    worst = worst_ptr_delta(node, PAIRS, seed_m)
    assert worst > float(delta)


def test_ptr_threshold_against_sympy() -> None:
    for eps, delta in [("1", "1e-6"), ("0.5", "1e-7"), ("0.1", "0.01"), ("3", "1e-9")]:
        e, d = Fraction(eps), Fraction(delta)
        exact = sympy.ceiling(sympy.log(1 / sympy.Rational(d.numerator, d.denominator)) / sympy.Rational(e.numerator, e.denominator))
        assert ceil_log_inv_delta_over_eps(e, d) == int(exact)


@pytest.mark.slow  # the heaviest fast tests (10-40 s each): still run by .ci/run
def test_ptr_release_distribution_matches_model() -> None:
    """The implementation releases ⊥ with the model's probability (links code and proof)."""
    node = ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", epsilon=1, delta="0.2", granularity=-2)
    x = (0.0, 1.0, 1.0, 2.0, 3.0)
    values = np.array(x)
    m = ceil_log_inv_delta_over_eps(node.eps_test, node.delta) - 1
    p_bottom = bottom_probability(node.distance(values), 1.0, m)
    rng = SeededRandomness(4)
    data = as_dataset({"v": values})
    outs = [node.release(data, rng) for _ in range(3000)]
    freq = sum(o is BOTTOM for o in outs) / len(outs)
    assert abs(freq - p_bottom) < 4 * math.sqrt(p_bottom * (1 - p_bottom) / 3000) + 1e-3


def test_mean_of_ages_example() -> None:
    """Seed 002's setting: ages in [0, 100], bound b = 0.005 on n = 10^5 rows.

    The test passes (LS_k stays ≈ 100/n far beyond the cap) and the error is the
    declared Laplace scale b/ε, not the worst-case add/remove sensitivity of a
    mean with unknown n (the full range, 100).
    """
    from dpalg.mechanisms import Laplace

    gen = np.random.default_rng(0)
    ages = np.clip(gen.normal(40, 12, size=100_000).round(), 0, 100)
    data = as_dataset({"age": ages})
    q = Query.mean("age") | Clip(0, 100)
    truth = float(np.mean(ages))
    ptr = ProposeTest(q, bound="0.005", epsilon="0.5", delta="1e-6")
    rng = SeededRandomness(1)
    outs = [ptr.release(data, rng) for _ in range(60)]
    assert all(v is not BOTTOM for v in outs)  # n is large: the test passes
    err = float(np.mean([abs(float(v) - truth) for v in outs]))  # type: ignore[arg-type]
    scale = float(ptr.release_scale())
    assert 0.5 * scale < err < 1.6 * scale  # E|Lap(s)| = s
    # Global-sensitivity Laplace mean at the same total ε = 1 (noisy sum / noisy count,
    # ε/2 each). With PTR's cost stated honestly as 2ε (the seed charges ε), the
    # sum/count split wins on a mean — as seed 002 itself concludes.
    lap = Laplace(q, epsilon=1)
    lap_err = float(np.mean([abs(float(lap.release(data, rng)) - truth) for _ in range(60)]))  # type: ignore[arg-type]
    assert lap_err < err < 20 * lap_err


def test_local_sens_formula_verdicts() -> None:
    q = Query.mean("v") | Clip(0, 100)
    ok = LocalSensAtDistance(q, "(upper - lower) / Max(n - k, 1)")
    assert ok.check().status in ("proven", "unproven")
    with pytest.raises(InvalidArgument, match="counterexample|refuted"):
        LocalSensAtDistance(q, "5 - k")
    with pytest.raises(InvalidArgument):
        LocalSensAtDistance(q, "__import__('os')")


def test_local_sens_formula_below_true_ls_cannot_raise_or_leak() -> None:
    """A formula below the true LS_k is harmless: γ = min(γ_F, γ_exact) (it used to raise after the charge)."""
    q = Query.median("v") | Clip(0, 3)
    wrong = LocalSensAtDistance(q, "k / 1000")
    node = ProposeTest(wrong, bound="0.5", epsilon="0.5", delta="0.01")
    plain = ProposeTest(q, bound="0.5", epsilon="0.5", delta="0.01")
    values = np.array([0.0, 3.0, 3.0, 0.0])
    assert node.distance(values) == plain.distance(values) == 0
    data = as_dataset({"v": values})
    assert all(node.release(data, SeededRandomness(s)) is BOTTOM for s in range(20))


def test_ptr_plan_checks_and_runs() -> None:
    q = Query.median("v") | Clip(0, 100)
    plan = Compose(ProposeTest(q, bound=1, epsilon="0.5", delta="1e-6"), PTRMode(Query.mode("g"), epsilon="0.5", delta="1e-6"))
    d = plan.check(ApproxDP("1.5", "2e-6"))
    assert d.cost == ApproxDP("1.5", "2e-6")
    data = {"v": np.linspace(0, 100, 10_001), "g": np.array([1] * 8000 + [2] * 2001)}
    out = plan.run(data, rng=3).value
    assert isinstance(out, tuple) and abs(float(out[0]) - 50) < 5 and out[1] == 1.0


def test_ptr_mode_bottom_when_unstable() -> None:
    node = PTRMode(Query.mode("g"), epsilon=1, delta="1e-6")
    data = as_dataset({"g": np.array([1, 2] * 50)})
    assert all(node.release(data, SeededRandomness(s)) is BOTTOM for s in range(20))


def test_stable_histogram_exact_delta_and_broken_threshold() -> None:
    for eps, delta in [(Fraction(1), Fraction(1, 10**6)), (Fraction(1, 2), Fraction(1, 10**9)), (Fraction(2), Fraction(1, 100))]:
        p = math.exp(-float(eps))
        keep = stable_threshold(eps, delta)
        # a key going 0 -> 1 appears iff 1 + Z >= keep
        assert p ** (keep - 1) / (1 + p) <= float(delta)
    eps, delta = Fraction(1), Fraction(1, 10**6)
    broken_keep = stable_threshold(eps, delta) - 1
    p = math.exp(-1)
    assert p ** (broken_keep - 1) / (1 + p) > float(delta)


# 5,000 runs: about 182 expected hits of the rare key, ±54 allowed; a threshold one off expects 67 or 495
@pytest.mark.parametrize("n_runs", [5_000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_stable_histogram_frequency_matches_model(n_runs: int) -> None:
    node = StableHistogram(Query.histogram("k"), epsilon=1, delta="0.05")
    keep = stable_threshold(node.epsilon, node.delta)
    p = math.exp(-1)
    expected = p ** (keep - 1) / (1 + p)
    data = as_dataset({"k": np.array(["rare"] + ["common"] * 100, dtype=object)})
    rng = SeededRandomness(2)
    runs = [node.release(data, rng) for _ in range(n_runs)]
    freq = sum("rare" in r for r in runs) / len(runs)  # type: ignore[operator]
    assert abs(freq - expected) < 4 * math.sqrt(expected / n_runs)
    assert all("common" in r for r in runs)  # type: ignore[operator]


def test_stable_histogram_many_and_unseen_keys() -> None:
    gen = np.random.default_rng(0)
    keys = gen.zipf(1.5, size=200_000)
    node = StableHistogram(Query.histogram("k"), epsilon=1, delta="1e-8")
    out = node.release(as_dataset({"k": keys}), SeededRandomness(0))
    assert isinstance(out, dict)
    truth = Counter(keys.tolist())
    assert 1 in out and abs(out[1] - truth[1]) < 40
    assert all(truth[k] > 0 for k in out)  # never a key absent from the data
    listed = StableHistogram(Query.histogram("k", keys=(1, 2, 10**9)), epsilon=1, delta="1e-8")
    out2 = listed.release(as_dataset({"k": keys}), SeededRandomness(0))
    assert isinstance(out2, dict) and set(out2) <= {1, 2}


def test_ptr_cap_is_safe() -> None:
    assert ptr_cap(Fraction(1), Fraction(1, 10**6)) == 14 + 40


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: ProposeTest(Query.median("v"), bound=1, epsilon=1, delta="1e-6"), "ProposeTest", "query"),
        (lambda: ProposeTest(Query.sum("v") | Clip(0, 1), bound=1, epsilon=1, delta="1e-6"), "ProposeTest", "target"),
        (lambda: ProposeTest(Query.median("v") | Clip(0, 1), bound=0, epsilon=1, delta="1e-6"), "ProposeTest", "bound"),
        (lambda: ProposeTest(Query.median("v") | Clip(0, 1), bound=1, epsilon=1, delta=0), "ProposeTest", "delta"),
        (lambda: ProposeTest(Query.median("v") | Clip(0, 1), bound=1, epsilon=-1, delta="0.1"), "ProposeTest", "epsilon"),
        (lambda: PTRMode(Query.median("v"), epsilon=1, delta="0.1"), "PTRMode", "query"),
        (lambda: PTRMode(Query.mode("v"), epsilon=1, delta="1"), "PTRMode", "delta"),
        (lambda: StableHistogram(Query.count(), epsilon=1, delta="0.1"), "StableHistogram", "query"),
        (lambda: StableHistogram(Query.histogram("k"), epsilon=0, delta="0.1"), "StableHistogram", "epsilon"),
        (lambda: LocalSensAtDistance(Query.median("v") | Clip(0, 1), ""), "LocalSensAtDistance", "formula"),
        (lambda: LocalSensAtDistance(Query.median("v") | Clip(0, 1), "k", params={"k": 1}), "LocalSensAtDistance", "params"),
    ],
)
def test_invalid_ptr_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner == owner and info.value.field == field


def test_row_substitution_is_refused_for_column_queries() -> None:
    """A row substitution value -> missing changes n: the substitution LS_k does not cover it."""
    with pytest.raises(InvalidArgument, match="relation"):
        ProposeTest(Query.median("v") | Clip(0, 1), bound=1, epsilon=1, delta="1e-6", relation="substitution")
    with pytest.raises(InvalidArgument, match="relation"):
        PTRMode(Query.mode("g"), epsilon=1, delta="1e-6", relation="substitution")
    ProposeTest(Query.count(), bound=1, epsilon=1, delta="1e-6", relation="substitution")


def test_trimmed_mean_ptr_releases_near_the_truth() -> None:
    gen = np.random.default_rng(5)
    x = np.concatenate([gen.normal(50, 5, 20_000), np.full(50, 100.0)])  # outliers are trimmed
    q = Query.trimmed_mean("v", "0.1") | Clip(0, 100)
    node = ProposeTest(q, bound="0.02", epsilon="0.5", delta="1e-6")
    data = as_dataset({"v": x})
    truth = q.evaluate(data)
    assert isinstance(truth, float)
    out = node.release(data, SeededRandomness(2))
    assert out is not BOTTOM and abs(float(out) - truth) < 1.0  # type: ignore[arg-type]


# --- the ε split between the test and the release (issue 18 item 4) ---------------------


def _split(eps_test: str, eps_release: str) -> ProposeTest:
    return ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", delta="0.01", granularity=-2,
                       epsilon_test=eps_test, epsilon_release=eps_release)  # fmt: skip


@pytest.mark.parametrize("eps_test, eps_release", [("0.3", "1.2"), ("1.2", "0.3")])
def test_split_ptr_exact_privacy_on_all_neighbours(eps_test: str, eps_release: str) -> None:
    node = _split(eps_test, eps_release)
    m = ceil_log_inv_delta_over_eps(node.eps_test, node.delta) - 1
    worst = worst_ptr_delta(node, PAIRS, m)
    assert worst <= float(node.delta)


def test_a_threshold_from_the_release_epsilon_is_caught() -> None:
    """The broken variant: the test's threshold computed with ε_r (> ε_t) lets unstable data through."""
    node = _split("0.3", "1.2")
    broken_m = ceil_log_inv_delta_over_eps(node.eps_release, node.delta) - 1
    worst = worst_ptr_delta(node, PAIRS, broken_m)
    assert worst > float(node.delta)


def test_cost_is_the_sum_and_one_epsilon_still_costs_twice() -> None:
    q = Query.mean("x") | Clip(0, 1)
    assert ProposeTest(q, bound=1, delta="1e-6", epsilon_test="0.1", epsilon_release="0.9").cost() == ApproxDP(1, "1e-6")
    one = ProposeTest(q, bound=1, epsilon="0.5", delta="1e-6")
    assert one.cost() == ApproxDP(1, "1e-6") and one.eps_test == one.eps_release == Fraction(1, 2)


@pytest.mark.parametrize("kwargs, field", [
    ({"delta": "1e-6"}, "epsilon"),
    ({"delta": "1e-6", "epsilon_test": "0.1"}, "epsilon"),
    ({"epsilon": 1, "delta": "1e-6", "epsilon_test": "0.1"}, "epsilon_test"),
    ({"epsilon": 1, "delta": "1e-6", "epsilon_release": "0.1"}, "epsilon_release"),
    ({"delta": "1e-6", "epsilon_test": "0", "epsilon_release": "0.1"}, "epsilon_test"),
    ({"delta": "1e-6", "epsilon_test": "0.1", "epsilon_release": "-1"}, "epsilon_release"),
    ({"epsilon": 1}, "delta"),
])  # fmt: skip
def test_invalid_combinations_fail_at_construction(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"ProposeTest: {field}="):
        ProposeTest(Query.mean("x") | Clip(0, 1), 1, **kwargs)  # type: ignore[arg-type]


def test_the_one_epsilon_repr_is_unchanged() -> None:
    """Certificates record repr(plan): a one-epsilon node must read exactly as before the split existed."""
    node = ProposeTest(Query.median("v") | Clip(0, 3), "0.5", "0.25", "0.01")
    assert repr(node) == (
        "ProposeTest(target=Query.median('v') | Clip(0, 3), bound=Fraction(1, 2), epsilon=Fraction(1, 4), "
        "delta=Fraction(1, 100), relation='add_remove', granularity=None)"
    )
    assert "epsilon_test=Fraction(1, 10)" in repr(_split("0.1", "0.9")) and "epsilon=" not in repr(_split("0.1", "0.9"))


def test_split_release_audits_and_the_release_noise_uses_epsilon_release() -> None:
    node = _split("0.2", "0.8")
    assert node.release_scale() == (Fraction(1, 2) + Fraction(1, 4)) / Fraction(4, 5)  # (b + 2^k)/ε_r, k = -2
    release = Session(ApproxDP(2, "0.1")).run(node, {"v": np.array([1.0, 1, 1, 2, 2, 2, 2])}, rng=3)
    report = audit_certificate(release.certificate)
    assert report.status == "cost_confirmed", report.findings
    wider = ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", epsilon="0.2", delta="0.01", granularity=-2)
    assert node.release_scale() < wider.release_scale()  # more of the budget on the release: less noise
    mine, theirs = node.accuracy().error, wider.accuracy().error
    assert mine is not None and theirs is not None and mine < theirs


def test_a_certificate_made_before_the_split_still_audits() -> None:
    """A demo certificate (ProposeTest and PTRMode nodes with one epsilon) written by dpalg before
    epsilon_test/epsilon_release existed: the plan rebuilds, its repr and derivation re-derive identically."""
    import json
    from pathlib import Path

    cert = json.loads((Path(__file__).parent / "certificates" / "demo_before_ptr_split.json").read_text())
    assert "ProposeTest(target=" in str(cert["plan_repr"]) and "epsilon_test" not in json.dumps(cert)
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings


# --- PTRMode reads a histogram of the values, not the values ---------------------------------------

_MODE_POOL = (0.0, -0.0, 1.0, 2.0, math.inf, -math.inf, math.nan, 3.5, 1e308, -7.0, 2.0**53, 2.0**53 + 2)


def _mode_columns() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out: list[np.ndarray] = []
    for trial in range(400):
        n = int(rng.integers(0, 12))
        match trial % 4:
            case 0:
                out.append(np.array(rng.choice(_MODE_POOL, n), dtype=np.float64))
            case 1:
                out.append(rng.integers(-3, 3, n))
            case 2:
                out.append(rng.integers(0, 2, n).astype(bool))
            case _:
                out.append(np.array(rng.choice([2**62, 2**62 + 1, 0, 1, -5], n), dtype=np.int64))
    return out


@pytest.mark.parametrize("query", [Query.mode("x"), Query.mode("x") | Clip(-1, 2), Query.mode("x") | Clip("0.1", "1/3")], ids=str)
def test_the_mode_histogram_is_the_histogram_of_the_values(query: Query) -> None:
    """The key histogram (with the clip applied to the keys) is ``np.unique`` of the query's values, so the gap and the mode are."""
    from dpalg.mechanisms.ptr._propose_test import mode_histogram
    from dpalg.queries import evaluate_values
    from dpalg.sensitivity import mode_gap_distance
    from dpalg.sensitivity._catalog import mode_gap_distance_counts

    for column in _mode_columns():
        data = as_dataset({"x": column})
        values = query.values(data)
        uniq, counts = mode_histogram(query, data)
        expected = np.unique(values, return_counts=True)
        assert np.array_equal(uniq, expected[0]) and np.array_equal(counts, expected[1]), (column, query)
        for relation in ("add_remove", "substitution"):
            assert mode_gap_distance_counts(uniq, counts, relation) == mode_gap_distance(values, relation)
        if values.size:
            assert float(uniq[int(np.argmax(counts))]) == evaluate_values(query, values)
