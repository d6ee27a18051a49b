"""plan.check tries tighter composition rules than the sum for (ε, δ) plans; epsilon_at and privacy_curve.

* the sum is kept when it fits (certificates of plans that fit are unchanged);
* 100 discrete Laplace counts (ε = 0.1 each) fit (5.3, 1e-6) by the zCDP route (5.2215; the
  issue's reference 5.222), never below the exact optimum 4.7746 (Kairouz–Oh–Viswanath);
* a part with δ > 0 has no zCDP ρ: 100 parts (0.01, 0.001) can never reach δ = 0.05 (their δ
  alone compose to 1 − 0.999¹⁰⁰ ≈ 0.095); a broken route that gives such parts a ρ certifies
  them, and this test catches it;
* ``dpalg audit`` re-derives a tightened certificate.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from dpalg import ApproxDP, BudgetExceeded, Compose, InvalidArgument, PureToApprox, Query, ZCDPToApprox
from dpalg.graph import _tight
from dpalg.graph._testing import Fixed
from dpalg.graph._tight import TIGHT_RULE, Part
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon
from dpalg.mechanisms import Gaussian, Laplace
from dpalg.release import audit_certificate


def _counts(n: int = 100) -> PureToApprox:
    return PureToApprox(Compose(*[Laplace(Query.count(), epsilon="0.1") for _ in range(n)]))


def test_the_sum_is_kept_when_it_fits() -> None:
    d = _counts(10).check(ApproxDP(1, "1e-6"))
    assert not d.rule.startswith(TIGHT_RULE) and d.cost == ApproxDP(1, 0)


def test_a_tighter_rule_certifies_one_hundred_laplace_counts() -> None:
    plan = _counts()
    d = plan.check(ApproxDP("5.3", "1e-6"))
    assert d.rule.startswith(TIGHT_RULE)
    assert isinstance(d.cost, ApproxDP) and Fraction("4.77456") <= d.cost.epsilon <= Fraction("5.2216")
    assert d.cost.delta == Fraction(1, 10**6)
    assert plan.cost() == ApproxDP(10, 0)  # cost() keeps its meaning: the sum
    with pytest.raises(BudgetExceeded):
        _counts().check(ApproxDP("4.7", "1e-6"))  # below the exact optimum: no sound rule may certify it


def test_zcdp_parts_join_the_route_with_their_rho() -> None:
    plan = Compose(ZCDPToApprox(Gaussian(Query.count(), rho="0.25"), delta="1e-7"), PureToApprox(Laplace(Query.count(), epsilon="0.5")))
    found = _tight.epsilon_candidates(_tight.parts_of(plan.derive()), Fraction(1, 10**6))
    assert found["zcdp"] == zcdp_to_approx_epsilon(Fraction(1, 4) + Fraction(1, 8), Fraction(1, 10**6))


def _leaky() -> Compose[ApproxDP]:
    return Compose(*[Fixed(ApproxDP("0.01", "0.001")) for _ in range(100)])


def test_parts_with_delta_have_no_rho_and_an_unreachable_delta_is_refused() -> None:
    plan = _leaky()
    assert all(p.rho is None for p in _tight.parts_of(plan.derive()))
    with pytest.raises(InvalidArgument, match="below what the plan's parts need"):
        plan.epsilon_at("0.05")  # 1 - 0.999**100 > 0.095: no sound rule reaches delta = 0.05
    with pytest.raises(BudgetExceeded):
        _leaky().check(ApproxDP(100, "0.05"))


def test_a_route_that_gives_delta_parts_a_rho_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = _tight.parts_of

    def broken(root: object) -> list[Part]:
        return [Part(p.epsilon, p.delta, p.epsilon * p.epsilon / 2) for p in original(root)]  # type: ignore[arg-type]

    monkeypatch.setattr(_tight, "parts_of", broken)
    assert _leaky().epsilon_at("0.05") < 1  # the broken route "certifies" an impossible delta


def test_epsilon_at_and_the_curve() -> None:
    plan = Compose(*[Laplace(Query.count(), epsilon="0.1") for _ in range(100)])
    assert plan.epsilon_at(0) == 10
    assert Fraction("4.77456") <= plan.epsilon_at("1e-6") <= Fraction("5.2216")
    curve = plan.privacy_curve()
    assert [d for d, _ in curve] == [Fraction(1, 10**i) for i in range(1, 13)]
    assert all(a[1] <= b[1] for a, b in zip(curve, curve[1:]))  # smaller delta, larger epsilon
    g = Gaussian(Query.count(), rho="0.5")
    assert g.epsilon_at("1e-6") == g.cost().to_approx("1e-6").epsilon


def test_a_tightened_certificate_audits() -> None:
    plan = _counts()
    plan.check(ApproxDP(6, "1e-6"))
    with pytest.warns(Warning):
        release = plan.run({"x": np.zeros(5)}, rng=1)
    report = audit_certificate(json.loads(json.dumps(release.certificate)))
    assert report.status == "cost_confirmed", report.findings
    assert any("tightest rule" in f for f in report.findings)


def test_bounded_range_parts_join_the_zcdp_route_at_eta_squared_over_eight() -> None:
    from dpalg import Clip
    from dpalg.mechanisms import ExponentialQuantile

    em = ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1)
    parts = _tight.parts_of(PureToApprox(Compose(em, Laplace(Query.count(), epsilon=1))).derive())
    assert [p.rho for p in parts] == [Fraction(1, 8), Fraction(1, 2)]


def test_optimal_composition_certifies_the_issue_reference_values() -> None:
    d = _counts().check(ApproxDP("4.78", "1e-6"))
    assert dict(d.inputs)["rule"] == "optimal"
    assert isinstance(d.cost, ApproxDP) and Fraction("4.77456") <= d.cost.epsilon <= Fraction("4.78")
    generic = Compose(*[Fixed(ApproxDP("0.1", "1e-9")) for _ in range(100)])
    assert Fraction("4.7877") <= generic.epsilon_at("1e-6") <= Fraction("4.80")


def test_the_report_shows_the_certified_curve() -> None:
    from dpalg.release._report import render_html, render_text

    plan = _counts()
    plan.check(ApproxDP(6, "1e-6"))
    with pytest.warns(Warning):
        release = plan.run({"x": np.zeros(5)}, rng=1)
    text = render_text(json.loads(json.dumps(release.certificate)))
    assert "Privacy curve" in text and "delta 1e-06: eps 4.7" in text
    html = render_html(release.certificate)
    assert html.count('class="curve-row"') == 6 and "<svg" not in html
