"""Accuracy before running (issue 20 item 2): exact noise quantiles, node statements, the plan summary."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import attrs
import numpy as np
import pytest

from dpalg import AbstractPrimitive, Clip, Compose, InvalidArgument, PrivacyClaim, PureDP, Query, Session, Unsupported, ZCDPToApprox
from dpalg.data import ROW, Dataset, Neighbouring
from dpalg.noise import AbstractRandomness
from dpalg.data import as_dataset
from dpalg.graph._accuracy import Accuracy
from dpalg.mechanisms import CalibratedGaussianSum, CalibratedLaplaceSum, Gaussian, Laplace
from dpalg.noise import SeededRandomness, discrete_gaussian, discrete_laplace
from dpalg.mechanisms.global_noise._laplace_gaussian import public_noise_terms
from dpalg.noise._tails import gaussian_tail_quantile, laplace_tail_quantile


def _laplace_tail(t: Fraction, m: int) -> float:
    q = math.exp(-1 / float(t))
    return 2 * q ** (m + 1) / (1 + q)


def _gaussian_tail(sigma2: float, m: int) -> float:
    """P[|Z| > m] by brute-force summation of the discrete Gaussian pmf (math.fsum)."""
    top = int(60 * math.sqrt(sigma2)) + 10
    f = [math.exp(-z * z / (2 * sigma2)) for z in range(top)]
    norm = 2 * math.fsum(f) - f[0]
    return 2 * math.fsum(f[m + 1 :]) / norm


@pytest.mark.parametrize("t", [Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(10), Fraction(1000)])
@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(1, 20), Fraction(1, 1000)])
def test_laplace_quantile_is_the_smallest_m(t: Fraction, alpha: Fraction) -> None:
    m, tight = laplace_tail_quantile(t, alpha)
    assert tight
    assert _laplace_tail(t, m) <= float(alpha)
    assert m == 0 or _laplace_tail(t, m - 1) > float(alpha)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(1), Fraction(10), Fraction(300), Fraction(4000), Fraction(4200), Fraction(10**5)])
@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(1, 20), Fraction(1, 1000)])
def test_gaussian_quantile_is_the_smallest_m(sigma2: Fraction, alpha: Fraction) -> None:
    """Both regimes (term by term for sigma <= 64, the integral bracket above) against brute force."""
    m, tight = gaussian_tail_quantile(sigma2, alpha)
    assert tight
    assert _gaussian_tail(float(sigma2), m) <= float(alpha)
    assert m == 0 or _gaussian_tail(float(sigma2), m - 1) > float(alpha)


def test_gaussian_quantile_huge_sigma_matches_the_normal_quantile() -> None:
    m, tight = gaussian_tail_quantile(Fraction(10**12), Fraction(1, 20))
    assert tight and abs(m - 1.959963985 * 10**6) < 2


@pytest.mark.parametrize("bad", [Fraction(0), Fraction(1), Fraction(-1, 2)])
def test_alpha_outside_the_unit_interval_is_refused(bad: Fraction) -> None:
    with pytest.raises(InvalidArgument, match="alpha"):
        laplace_tail_quantile(Fraction(1), bad)
    with pytest.raises(InvalidArgument, match="alpha"):
        Laplace(Query.count(), epsilon=1).accuracy(bad)


def _exceed_limit(alpha: float, trials: int) -> float:
    """alpha plus a Hoeffding margin at 1e-6: a correct bound's exceed frequency stays below it."""
    return alpha + math.sqrt(math.log(1e6) / (2 * trials))


@pytest.mark.parametrize("scale, sampler, quantile", [
    (Fraction(5), discrete_laplace, laplace_tail_quantile),
    (Fraction(40), discrete_gaussian, gaussian_tail_quantile),
])  # fmt: skip
def test_quantiles_hold_on_the_exact_samplers(scale: Fraction, sampler: object, quantile: object) -> None:
    """The stated m is exceeded at most alpha of the time, and m - 1 (a broken, smaller bound) more than alpha."""
    assert callable(sampler) and callable(quantile)
    alpha, trials = Fraction(1, 10), 200_000
    m, _ = quantile(scale, alpha)
    z = np.abs(sampler(scale, size=trials, rng=SeededRandomness(3)))
    assert np.mean(z > m) <= _exceed_limit(float(alpha), trials)
    broken = m - 1 if m > 2 else 0
    assert np.mean(z > broken) > float(alpha) + math.sqrt(math.log(1e6) / (2 * trials))


def _errors(node: Laplace | Gaussian, data: dict[str, np.ndarray], truth: float, trials: int) -> np.ndarray:
    rng = SeededRandomness(11)
    dataset = as_dataset(data)
    out = np.empty(trials)
    for i in range(trials):
        value = node.release(dataset, rng)
        assert isinstance(value, (int, float))
        out[i] = abs(float(value) - truth)
    return out


@pytest.mark.parametrize("node", [
    Laplace(Query.count(), epsilon="0.5"),
    Gaussian(Query.count(), rho="0.05"),
    Laplace(Query.sum("x") | Clip(0, 10), epsilon=1),
    Gaussian(Query.sum("x") | Clip(0, 10), rho="0.5", granularity=-4),
])  # fmt: skip
@pytest.mark.parametrize("trials", [2000, pytest.param(4000, marks=pytest.mark.slow)])
def test_node_accuracy_holds_end_to_end(node: Laplace | Gaussian, trials: int) -> None:
    data = {"x": np.array([1.0, 2.5, 3.0, 9.5])}
    truth = 4.0 if node.query.kind == "count" else 16.0
    alpha = Fraction(1, 5)
    acc = node.accuracy(alpha)
    assert acc.error is not None and acc.tight and acc.condition is None
    errors = _errors(node, data, truth, trials)
    assert np.mean(errors > float(acc.error)) <= _exceed_limit(float(alpha), trials)
    step = Fraction(1) if node.query.kind == "count" else Fraction(2) ** _lattice_k(acc)
    assert np.mean(errors > float(acc.error - step)) > float(alpha) - math.sqrt(math.log(1e6) / (2 * trials))


def _lattice_k(acc: Accuracy) -> int:
    text = acc.noise.partition("lattice step 2**")[2].rstrip(")")
    return int(text) if text else 0


# 3000 trials: the naive bound's exceed frequency (about 0.18) is 4.5 standard deviations above its limit (0.148)
@pytest.mark.parametrize("trials", [3000, pytest.param(5000, marks=pytest.mark.slow)])
def test_mean_accuracy_is_conditional_and_holds_where_a_naive_bound_fails(trials: int) -> None:
    """Values far from the clip's centre (|x - c| = 0.8 h, clear of the clamp): the count's noise
    matters, and a bound that forgets it (the sum's noise over n) is exceeded far too often."""
    node = Laplace(Query.mean("x") | Clip(0, 100), epsilon=2)
    alpha = Fraction(1, 10)
    conditional = node.accuracy(alpha)
    assert conditional.error is None and conditional.condition is not None and "n >" in conditional.condition
    n = 30
    acc = node.accuracy(alpha, n=n)
    assert acc.error is not None and not acc.tight
    errors = _errors(node, {"x": np.full(n, 90.0)}, 90.0, trials)
    assert np.mean(errors > float(acc.error)) <= _exceed_limit(float(alpha), trials)
    # the broken statement: the sum's noise alone over n (forgetting the noisy count) is exceeded far too often
    centred = public_noise_terms(node)[0]
    m_s, _ = laplace_tail_quantile(centred.param, alpha)
    naive = float(m_s * Fraction(2) ** centred.k / n)
    assert np.mean(errors > naive) > _exceed_limit(float(alpha), trials)  # expected about 0.18 (simulated)
    with pytest.raises(InvalidArgument, match="n="):
        node.accuracy(alpha, n=1)
    with pytest.raises(InvalidArgument, match="applies to means, variances and stdevs only"):
        Laplace(Query.count(), epsilon=1).accuracy(alpha, n=100)


def test_histogram_accuracy_is_per_key_with_a_union_bound_note() -> None:
    node = Gaussian(Query.histogram("k", keys=["a", "b", "c", "d"]), rho="0.1")
    acc = node.accuracy("0.05")
    assert acc.unit == "absolute, per key"
    m_all, _ = gaussian_tail_quantile(Fraction(5), Fraction(1, 80))
    assert any(f"±{m_all} " in note for note in acc.notes)


def test_sum_accuracy_is_the_lattice_quantile_times_the_step() -> None:
    node = Laplace(Query.sum("x") | Clip(-3, 3), epsilon="0.3")
    term = public_noise_terms(node)[0]
    assert term.param * Fraction(2) ** term.k == 10  # scale sensitivity/eps = 3/0.3 in value units
    m, _ = laplace_tail_quantile(term.param, Fraction(1, 20))
    assert node.accuracy().error == m * Fraction(2) ** term.k
    assert abs(float(node.accuracy().error or 0) - 10 * math.log(20)) < 1e-3  # the continuous Laplace quantile


def test_summary_lists_every_node_with_cost_and_accuracy() -> None:
    inner = Compose(Gaussian(Query.count(), rho="0.05"), Gaussian(Query.sum("x") | Clip(0, 1), rho="0.05"))
    plan = ZCDPToApprox(inner, delta="1e-6")
    summary = plan.summary()
    assert [r.path for r in summary.rows] == ["ZCDPToApprox", "ZCDPToApprox/child", "ZCDPToApprox/child/0", "ZCDPToApprox/child/1"]
    assert [r.depth for r in summary.rows] == [0, 1, 2, 2]
    assert summary.rows[0].cost == plan.cost()
    assert summary.rows[2].accuracy == Gaussian(Query.count(), rho="0.05").accuracy()
    text = str(summary)
    assert "±6 absolute (95%, tight)" in text and "alpha/2" in text


@attrs.frozen
class _Opaque(AbstractPrimitive[PureDP]):
    """A user's mechanism that makes no accuracy statement (the base class raises Unsupported)."""

    epsilon: Fraction = Fraction(1)

    @property
    def neighbouring(self) -> Neighbouring:
        return ROW

    def privacy(self) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "a user's theorem", ())

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        return 0


def test_summary_says_why_a_node_has_no_statement() -> None:
    with pytest.raises(Unsupported, match="no accuracy statement"):
        _Opaque().accuracy()
    rows = Compose(_Opaque(), Laplace(Query.count(), epsilon=1)).summary().rows
    assert rows[1].accuracy is None and rows[1].remark == "no accuracy statement"
    assert rows[2].accuracy is not None


def test_plan_str_is_a_tree_and_repr_stays_exact() -> None:
    a = Laplace(Query.count(), epsilon=Fraction(1, 3))
    plan = Compose(a, Compose(a, a))
    lines = str(plan).splitlines()
    assert len(lines) == 5
    assert lines[0].startswith("Compose  [cost PureDP(ε<=1)]") or lines[0].startswith("Compose  [cost PureDP(ε=1)]")
    assert lines[2].startswith("  1: Compose") and lines[3].startswith("    0: Laplace(")
    assert "epsilon<=0.333334" in lines[1]
    assert "Fraction(1, 3)" in repr(plan) or "'1/3'" in repr(plan)
    assert "\n" not in repr(plan)


def test_measures_print_short_and_repr_exact() -> None:
    cost = ZCDPToApprox(Gaussian(Query.count(), rho="0.05"), delta=1e-6).cost()
    assert str(cost).startswith("ApproxDP(ε<=") and "δ<=1e-06" in str(cost)
    assert repr(cost).startswith("ApproxDP('") and len(repr(cost)) > 40
    assert str(PureDP("0.25")) == "PureDP(ε=0.25)"


def test_session_runs_match_the_stated_error() -> None:
    """Through a Session (the user's path), the count's stated error holds at the stated rate."""
    node = Laplace(Query.count(), epsilon=1)
    acc = node.accuracy("0.2")
    assert acc.error is not None
    session = Session(PureDP(400))
    values = [session.run(node, {"x": np.zeros(7)}, rng=seed).value for seed in range(400)]
    assert all(isinstance(v, int) for v in values)
    errors = [abs(int(str(v)) - 7) for v in values]
    assert np.mean(np.array(errors) > float(acc.error)) <= _exceed_limit(0.2, 400)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_per_coordinate_accuracy_holds_per_coordinate(kind: str) -> None:
    """Each coordinate's stated bound is exceeded at most alpha of the time; one lattice step less, more."""
    queries = [Query.sum("a") | Clip(0, 1), Query.sum("b") | Clip(0, 100)]
    node: CalibratedLaplaceSum | CalibratedGaussianSum = (
        CalibratedLaplaceSum(queries, epsilon=1) if kind == "laplace" else CalibratedGaussianSum(queries, rho=1)
    )
    alpha, trials = Fraction(1, 10), 100_000
    acc = node.accuracy(alpha)
    bounds = [Fraction(b.strip().lstrip("±")) for b in acc.notes[0].removeprefix("per coordinate: ").split(",")]
    assert acc.error == max(bounds) or float(acc.error or 0) == pytest.approx(float(max(bounds)), rel=1e-5)
    noise = np.abs(node.simulate_noise(trials, SeededRandomness(5)))
    ks, _, _ = node.lattice()
    for i, k in enumerate(ks):
        exact = _per_coordinate_bound(node, i, alpha)
        assert np.mean(noise[:, i] > float(exact)) <= _exceed_limit(float(alpha), trials)
        assert np.mean(noise[:, i] > float(exact - Fraction(2) ** k)) > float(alpha) - math.sqrt(math.log(1e6) / (2 * trials))


def _per_coordinate_bound(node: CalibratedLaplaceSum | CalibratedGaussianSum, i: int, alpha: Fraction) -> Fraction:
    ks, _, params = node.lattice()
    k, v = ks[i], params[i]
    if isinstance(node, CalibratedLaplaceSum):
        return laplace_tail_quantile(v / Fraction(2) ** k, alpha)[0] * Fraction(2) ** k
    return gaussian_tail_quantile(v / Fraction(4) ** k, alpha)[0] * Fraction(2) ** k


# --- public assumptions: a whole plan gets numbers -------------------------------------------------


def _conditional_plan() -> Compose[PureDP]:
    from dpalg.mechanisms import KSWRatio, PrivateRatio

    return Compose(Laplace(Query.mean("x") | Clip(0, 100), epsilon=1), KSWRatio(PrivateRatio("c"), epsilon=1), Laplace(Query.count(), epsilon=1))


def test_summary_without_assumptions_leaves_conditional_rows() -> None:
    rows = _conditional_plan().summary().rows
    assert [r.accuracy.error is None for r in rows if r.accuracy is not None] == [True, True, False]


def test_summary_assumptions_give_every_row_a_number_and_say_what_they_assumed() -> None:
    from dpalg.mechanisms import KSWRatio

    plan = _conditional_plan()
    rows = plan.summary(assume={"n": 15000, "Compose/1": {"denominator": 500}}).rows
    mean, ratio, count = (r.accuracy for r in rows[1:])
    assert mean is not None and ratio is not None and count is not None
    first, second, third = plan.children
    assert isinstance(first, Laplace) and isinstance(second, KSWRatio)
    assert mean == first.accuracy(n=15000)  # the same statement the node gives
    assert ratio == second.accuracy(denominator=500)
    assert count == third.accuracy()  # unconditional: the plan-wide n is not applied to it
    assert "at least 15000" in mean.describe() and "at least 500" in ratio.describe()


@pytest.mark.parametrize(
    ("assume", "fragment"),
    [
        ({"nn": 3}, "nn"),  # a typo: no node takes it
        ({"Compose/9": {"n": 1}}, "Compose/9"),  # no such path
        ({"Compose/1": {"n": 3}}, "takes no ['n']"),  # a name this node does not take
        ({"n": 5}, "n=5"),  # a value the node refuses (below its bound's threshold)
    ],
)
def test_summary_assumptions_are_checked(assume: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(fragment)):
        _conditional_plan().summary(assume=assume)


def test_dpalg_check_takes_assumptions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpalg.cli import main

    path = tmp_path / "plan.py"
    path.write_text(
        "from dpalg import Clip, Compose, Query\nfrom dpalg.mechanisms import KSWRatio, Laplace, PrivateRatio\n"
        "plan = Compose(Laplace(Query.mean('x') | Clip(0, 100), epsilon=1), KSWRatio(PrivateRatio('c'), epsilon=1))\n"
    )
    assert main(["check", f"{path}:plan", "--budget", "eps=2", "--assume", "n=15000", "--assume", "Compose/1:denominator=500"]) == 0
    out = capsys.readouterr().out
    assert "if the true count is at least 15000" in out and "if the true denominator b is at least 500" in out
    assert "pass n=" not in out
    assert main(["check", f"{path}:plan", "--budget", "eps=2", "--assume", "n"]) == 2
