"""Bounded range of the exponential mechanism, and what ``PureToZCDP`` charges for it.

A mechanism is η-bounded-range (Durfee–Rogers 2019) when, for all neighbours x, x',
``ln(P[M(x) = y] / P[M(x') = y])`` lies in an interval of width η over the outputs y;
then it is η²/8-zCDP (Cesar–Rogers 2021, arXiv:2004.07223, Lemmas 3.2 and 3.4).

The law is read from the release itself: the exact samplers the nodes call
(``sample_exp_runs`` / ``sample_exp_weights``) are replaced by recorders, so the
test sees the very scores, rate and run lengths a release hands to the sampler, and
``P[y] ∝ exp(−γ·s_y)``. Then, on every neighbouring pair of small datasets:

* the width of the log-ratio is computed exactly (it is ``γ·(max − min)`` of the
  score differences: rationals) and must be ≤ the claim's ``bounded_range``;
* the Rényi divergences at several orders α (and KL) are computed to 50 digits
  and must be ≤ α·ρ for the ρ the accountant charges (``PureToZCDP(node)``).

Broken variants the same checks catch: a claim of η = ε/2, and an accountant that
charges ε²/16 (both shown failing below).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Union

import mpmath
import numpy as np
import numpy.typing as npt
import pytest

from dpalg import ZCDP, Clip, Compose, InvalidArgument, MaxRowsPerUser, Parallel, PureDP, PureToZCDP, Query
from dpalg.data import as_dataset
from dpalg.graph import PrivacyClaim
from dpalg.graph import _accountant
from dpalg.graph._testing import Fixed
from dpalg.mechanisms import Laplace
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.mechanisms.selection import _exponential
from dpalg.mechanisms.selection._exponential import ExponentialQuantile, NoisyMax
from dpalg.noise import SeededRandomness
from dpalg.noise._permute_flip import permute_flip_probabilities
from dpalg.release import audit_certificate, decode, seal
from dpalg.cli import main

mpmath.mp.dps = 60
ORDERS = (Fraction(3, 2), Fraction(2), Fraction(3), Fraction(5), Fraction(10), Fraction(50))
Node = Union[ExponentialQuantile, NoisyMax]
Law = tuple[list[int], Fraction]  # per-output integer scores (lower is better) and the rate γ


def recorded_law(node: Node, rows: dict[str, list[object]], monkeypatch: pytest.MonkeyPatch) -> Law:
    """The (scores, γ) the node's release hands to its exact sampler on ``rows``: ``P[y] ∝ exp(−γ·s_y)``."""
    seen: list[Law] = []

    def runs(scores: npt.NDArray[np.int64], gamma: Fraction, counts: npt.NDArray[np.int64], rng: object = None) -> int:
        per_output = np.repeat(np.asarray(scores, dtype=np.int64), np.asarray(counts, dtype=np.int64)).tolist()
        seen.append(([int(v) for v in per_output], Fraction(gamma)))
        return 0

    def weights(scores: Sequence[Fraction], gamma: Fraction, counts: None = None, rng: object = None) -> int:
        assert counts is None
        assert all(v.denominator == 1 for v in scores)
        seen.append(([int(v) for v in scores], Fraction(gamma)))
        return 0

    with monkeypatch.context() as m:
        m.setattr(_exponential, "sample_exp_runs", runs)
        m.setattr(_exponential, "sample_exp_weights", weights)
        node.release(as_dataset(rows), SeededRandomness(0))
    assert len(seen) == 1
    return seen[0]


def range_width(a: Law, b: Law) -> Fraction:
    """Exact width of ``y -> ln(P_a[y] / P_b[y])``: ``−γ(s_a − s_b)`` plus a constant."""
    (sa, ga), (sb, gb) = a, b
    assert ga == gb and len(sa) == len(sb)
    diffs = [x - y for x, y in zip(sa, sb)]
    return ga * (max(diffs) - min(diffs))


def _log_probs(law: Law) -> list[mpmath.mpf]:
    scores, gamma = law
    g = mpmath.mpf(gamma.numerator) / gamma.denominator
    logits = [-g * s for s in scores]
    norm = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in logits))
    return [v - norm for v in logits]


def renyi(a: Law, b: Law, alpha: Fraction) -> mpmath.mpf:
    """D_α(P_a ‖ P_b) to 60 digits (α = 1: KL)."""
    la, lb = _log_probs(a), _log_probs(b)
    if alpha == 1:
        return mpmath.fsum(mpmath.exp(x) * (x - y) for x, y in zip(la, lb))
    al = mpmath.mpf(alpha.numerator) / alpha.denominator
    return mpmath.log(mpmath.fsum(mpmath.exp(al * x + (1 - al) * y) for x, y in zip(la, lb))) / (al - 1)


Case = tuple[str, Callable[[], Node], Callable[[tuple[float, ...]], dict[str, list[object]]], Sequence[float], str]

KEYS = ("a", "b", "c")


def _col(x: tuple[float, ...]) -> dict[str, list[object]]:
    return {"x": list(x)}


def _keys(x: tuple[float, ...]) -> dict[str, list[object]]:
    return {"k": [KEYS[int(v)] for v in x]}


CASES: list[Case] = [
    ("median candidates add/remove", lambda: ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon="0.8", candidates=(0, "1/3", 1, "3/2", 2)), _col, (0.0, 0.5, 1.0, 2.0), "add_remove"),
    ("q=1/3 candidates add/remove", lambda: ExponentialQuantile(Query.quantile("x", "1/3") | Clip(0, 2), epsilon=1, candidates=(0, 1, 2)), _col, (0.0, 0.5, 1.0, 2.0), "add_remove"),
    ("q=3/4 substitution", lambda: ExponentialQuantile(Query.quantile("x", "3/4") | Clip(0, 2), epsilon="1/2", relation="substitution", candidates=(0, 1, 2)), _col, (0.0, 1.0, 2.0), "substitution"),
    ("median grid (runs)", lambda: ExponentialQuantile(Query.median("x") | Clip(0, 4), epsilon="1.5", grid_bits=2, candidates=None), _col, (0.0, 1.0, 2.5, 4.0), "add_remove"),
    ("noisy max add/remove (monotone factor)", lambda: NoisyMax(Query.histogram("k", keys=list(KEYS)), epsilon="0.7"), _keys, (0.0, 1.0, 2.0), "add_remove"),
    ("noisy max substitution", lambda: NoisyMax(Query.histogram("k", keys=list(KEYS)), epsilon="0.9", relation="substitution"), _keys, (0.0, 1.0, 2.0), "substitution"),
]  # fmt: skip


def _pairs(case: Case, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Node, Law, Law]]:
    _, make, rows, domain, relation = case
    node = make()
    laws: dict[tuple[float, ...], Law] = {}
    for x, y in multiset_neighbours(domain, 3, relation):
        for d in (x, y):
            if d not in laws:
                laws[d] = recorded_law(node, rows(d), monkeypatch)
        yield node, laws[x], laws[y]


def widest(case: Case, monkeypatch: pytest.MonkeyPatch) -> tuple[Node, Fraction]:
    node: Node | None = None
    worst = Fraction(0)
    for node, a, b in _pairs(case, monkeypatch):
        worst = max(worst, range_width(a, b))
    assert node is not None
    return node, worst


def bounded_range_violations(case: Case, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    node, worst = widest(case, monkeypatch)
    eta = node.privacy().bounded_range
    assert eta is not None
    return [] if worst <= eta else [f"width {worst} > claimed eta {eta}"]


def zcdp_violations(case: Case, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    node = case[1]()
    rho = PureToZCDP(node).cost().rho
    r = mpmath.mpf(rho.numerator) / rho.denominator
    out = []
    for _, a, b in _pairs(case, monkeypatch):
        for alpha in (Fraction(1), *ORDERS):
            d = renyi(a, b, alpha)
            bound = (mpmath.mpf(alpha.numerator) / alpha.denominator) * r
            if d > bound + mpmath.mpf(10) ** -40:
                out.append(f"D_{alpha} = {mpmath.nstr(d, 8)} > {alpha}*rho = {mpmath.nstr(bound, 8)}")
    return out


# --- the exponential mechanism as dpalg samples it is eps-bounded-range --------------------------


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_log_ratio_range_is_within_the_claimed_eta(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    node, worst = widest(case, monkeypatch)
    assert bounded_range_violations(case, monkeypatch) == []
    assert worst > node.epsilon / 2  # not vacuous: a claim of eps/2 would be refuted (test below)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_renyi_divergences_are_within_eta_squared_over_8(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    node = case[1]()
    assert zcdp_violations(case, monkeypatch) == []
    assert PureToZCDP(node).cost() == ZCDP(node.epsilon**2 / 8)  # the 4x saving over eps^2/2 is what was checked


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_claim_of_half_the_range_is_refuted(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: the mechanisms claim η = ε/2. The exact width check refutes it on some pair."""
    node_type = type(case[1]())

    def halved(self: Node) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "broken: half the range", bounded_range=self.epsilon / 2)

    monkeypatch.setattr(node_type, "privacy", halved)
    assert bounded_range_violations(case, monkeypatch) != []


# the cases whose worst divergence is close to the bound (measured max_alpha D_alpha / (alpha eps^2/8): 0.99, 0.81,
# 0.87, 0.99, 0.79); "q=3/4 substitution" reaches only 0.33 of it on these small datasets, so halving rho is not visible there
TIGHT = [c for c in CASES if c[0] != "q=3/4 substitution"]


@pytest.mark.parametrize("case", TIGHT, ids=[c[0] for c in TIGHT])
def test_an_accountant_charging_eps_squared_over_16_is_refuted(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: the accountant charges a bounded-range leaf η²/16. Some Rényi divergence exceeds α·ρ."""
    honest = _accountant._part_rho

    def sixteenth(epsilon: Fraction, eta: Fraction | None) -> tuple[Fraction, str]:
        rho, text = honest(epsilon, eta)
        return (rho / 2, text) if eta is not None else (rho, text)

    monkeypatch.setattr(_accountant, "_part_rho", sixteenth)
    assert zcdp_violations(case, monkeypatch) != []


def test_the_recorded_law_is_the_release_law() -> None:
    """The recorder sees what the sampler would draw from: a seeded release lands on a candidate of positive weight,
    and the release's candidate follows the law (a frequency check on 2000 draws)."""
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon=2, candidates=(0, 1, 2))
    data = as_dataset({"x": [0.0, 1.0, 1.0, 2.0]})
    counts = {0.0: 0, 1.0: 0, 2.0: 0}
    for s in range(2000):
        counts[float(node.release(data, SeededRandomness(s)))] += 1  # type: ignore[arg-type]
    # scores |#<c - #>c| (den(q) = 2 times |(1/2)#<c - (1/2)#>c|) = [3, 0, 3], gamma = eps/(2*(1/2)*2) = 1: P = [e^-3, 1, e^-3] / Z
    z = 1 + 2 * np.exp(-3)
    assert abs(counts[1.0] / 2000 - 1 / z) < 0.01


# --- what is and is not claimed ----------------------------------------------------------------------


def test_permute_and_flip_claims_no_bounded_range() -> None:
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon=1, candidates=(0, 1, 2), selection="permute_and_flip")
    assert node.privacy().bounded_range is None
    assert PureToZCDP(node).cost() == ZCDP(Fraction(1, 2))


def test_permute_and_flip_is_wider_than_the_exponential_mechanism_somewhere() -> None:
    """Why permute-and-flip is not claimed η = ε: on these scores its log-ratio width exceeds ε (measured, float)."""
    gamma = Fraction(1, 2)  # eps = 1 with Delta = 1 (scores of a monotone-free utility)
    a, b = [0, 1, 2], [1, 0, 1]  # utility differences within [-1, 1]: a neighbouring pair for Delta = 1
    pa, pb = permute_flip_probabilities(a, gamma), permute_flip_probabilities(b, gamma)
    logs = [float(np.log(x / y)) for x, y in zip(pa, pb)]
    em_width = float(range_width((a, gamma), (b, gamma)))
    assert em_width <= 1
    assert max(logs) - min(logs) > 1.0  # the exponential mechanism's eta = eps would be wrong for it


def test_claim_validation() -> None:
    with pytest.raises(InvalidArgument, match="bounded_range"):
        PrivacyClaim(ZCDP(1), "x", bounded_range=Fraction(1))
    with pytest.raises(InvalidArgument, match="bounded_range"):
        PrivacyClaim(PureDP(1), "x", bounded_range=Fraction(0))
    with pytest.raises(InvalidArgument, match="per_part"):
        PureToZCDP(Fixed(PureDP(1)), per_part=1)  # type: ignore[arg-type]


# --- the accountant ------------------------------------------------------------------------------------


EM = ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1, candidates=range(11))
LAP = Laplace(Query.count(), epsilon="1/2")
NM = NoisyMax(Query.histogram("k", keys=["a", "b"]), epsilon=2)


def test_compose_of_exponential_mechanisms_and_laplaces() -> None:
    plan = PureToZCDP(Compose(EM, LAP, NM, LAP))
    # 1/8 + 1/8 + 4/8 + 1/8: eta^2/8 for the two selections, eps^2/2 for the Laplaces
    assert plan.cost() == ZCDP(Fraction(1, 8) + Fraction(1, 8) + Fraction(4, 8) + Fraction(1, 8))
    assert PureToZCDP(Compose(EM, LAP, NM, LAP), per_part=False).cost() == ZCDP(Fraction(4, 1) ** 2 / 2)
    d = plan.derive()
    assert "Cesar-Rogers 2021" in d.rule and "Bun-Steinke 2016 Prop 1.4" in d.rule
    assert d.inputs == (
        ("parts", "4"),
        ("PureToZCDP/Compose/0/ExponentialQuantile", "eta=1 bounded range: eta^2/8=1/8"),
        ("PureToZCDP/Compose/1/Laplace", "eps=1/2: eps^2/2=1/8"),
        ("PureToZCDP/Compose/2/NoisyMax", "eta=2 bounded range: eta^2/8=1/2"),
        ("PureToZCDP/Compose/3/Laplace", "eps=1/2: eps^2/2=1/8"),
    )


def test_parallel_takes_the_maximum_and_nested_compose_the_sum() -> None:
    big = ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=3, candidates=range(11))
    plan = PureToZCDP(Compose(Parallel("g", {"a": Compose(EM, LAP), "b": big}), Compose(Compose(EM), LAP)))
    # max(1/8 + 1/8, 9/8) + (1/8 + 1/8)
    assert plan.cost() == ZCDP(Fraction(9, 8) + Fraction(2, 8))
    paths = [p for p, _ in plan.derive().inputs[1:]]
    assert paths == [
        "PureToZCDP/Compose/0/Parallel(by='g')/'a'/Compose/0/ExponentialQuantile",
        "PureToZCDP/Compose/0/Parallel(by='g')/'a'/Compose/1/Laplace",
        "PureToZCDP/Compose/0/Parallel(by='g')/'b'/ExponentialQuantile",
        "PureToZCDP/Compose/1/Compose/0/Compose/0/ExponentialQuantile",
        "PureToZCDP/Compose/1/Compose/1/Laplace",
    ]
    assert set(paths) <= {d.path for d in plan.derive().walk()}  # each part is named by its path in the derivation


def test_named_compose_and_a_single_leaf() -> None:
    assert PureToZCDP(Compose(q=EM, n=LAP)).derive().inputs[1:] == (
        ("PureToZCDP/Compose/q/ExponentialQuantile", "eta=1 bounded range: eta^2/8=1/8"),
        ("PureToZCDP/Compose/n/Laplace", "eps=1/2: eps^2/2=1/8"),
    )
    assert PureToZCDP(EM).derive().inputs == (("parts", "1"), ("PureToZCDP/ExponentialQuantile", "eta=1 bounded range: eta^2/8=1/8"))


def test_a_wide_claim_falls_back_to_eps_squared_over_2() -> None:
    """A leaf claiming eta > 2 eps is charged eps^2/2 (both hold; the smaller is charged)."""

    class Wide(NoisyMax):  # type: ignore[misc]  # final, subclassed for the test
        def privacy(self) -> PrivacyClaim[PureDP]:
            return PrivacyClaim(PureDP(self.epsilon), "test", bounded_range=3 * self.epsilon)

    node = Wide(Query.histogram("k", keys=["a", "b"]), epsilon=1)
    assert PureToZCDP(node).cost() == ZCDP(Fraction(1, 2))


def test_group_privacy_and_user_level_are_one_part() -> None:
    from dpalg.graph import GroupPrivacy

    plan = PureToZCDP(Compose(GroupPrivacy(Compose(Fixed(PureDP(1), unit=None), Fixed(PureDP(1))), unit="uid", max_rows=2)))
    # one part: the group's 4-DP, 4^2/2
    assert plan.cost() == ZCDP(8)
    user = ExponentialQuantile(Query.median("s", user="u") | Clip(0, 3) | MaxRowsPerUser(2), epsilon=2, candidates=range(4))
    assert PureToZCDP(user).cost() == ZCDP(Fraction(1, 2))  # 2^2/8: the user-level utility's Delta keeps it eps-BR


# --- certificates -------------------------------------------------------------------------------------

OLD = Path(__file__).parent / "certificates" / "zcdp_before_bounded_range.json"


def test_a_certificate_written_before_per_part_still_audits(capsys: pytest.CaptureFixture[str]) -> None:
    """Written by dpalg before per_part existed: PureToZCDP(Compose(EM, Laplace, NoisyMax)) charged (5/4)^2/2 + Gaussian."""
    cert = json.loads(OLD.read_text())
    assert "per_part" not in json.dumps(cert["plan"])
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings
    plan = decode(cert["plan"])
    assert isinstance(plan, Compose) and isinstance(plan.children[0], PureToZCDP)
    assert plan.children[0].per_part is False  # absent from the certificate: the rule it was issued under
    assert plan.cost() == ZCDP(Fraction(633, 800))
    assert "per_part=False" in str(plan)
    assert main(["audit", str(OLD)]) == 0
    capsys.readouterr()


def test_the_same_plan_today_costs_eta_squared_over_8_and_audits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = decode(json.loads(OLD.read_text())["plan"])
    assert isinstance(old, Compose)
    inner = old.children[0]
    assert isinstance(inner, PureToZCDP)
    plan = Compose(PureToZCDP(inner.child), old.children[1])
    assert repr(plan) == repr(old)  # the repr leaves per_part out (so old certificates read as before) ...
    assert plan != old and str(plan) != str(old)  # ... the plan and its tree do not
    # 1/32 (EM, eps 1/2) + 1/32 (Laplace, eps 1/4) + 1/32 (NoisyMax, eps 1/2) + 1/100 (Gaussian)
    assert plan.cost() == ZCDP(Fraction(3, 32) + Fraction(1, 100))
    plan.check(ZCDP("0.2"))  # the old rule's 0.79 would not fit
    release = plan.run({"x": [1.0, 2.0, 3.0, 5.0], "k": ["a", "b", "a", "a"]})
    cert = json.loads(release.certificate_json())
    assert '"per_part":true' in json.dumps(cert["plan"], separators=(",", ":"))
    assert audit_certificate(cert).status == "cost_confirmed"
    path = tmp_path / "cert.json"
    path.write_text(release.certificate_json())
    assert main(["audit", str(path)]) == 0
    assert "derivation re-derived node by node: identical" in capsys.readouterr().out
    # a forger who swaps the rule back (per_part=False) without resealing is caught by the digest, and with resealing by the cost
    forged = json.loads(release.certificate_json())
    node = forged["plan"]["fields"]["children"]["$tuple"][0]
    node["fields"]["per_part"] = False
    assert audit_certificate(seal(forged)).status == "refuted"
