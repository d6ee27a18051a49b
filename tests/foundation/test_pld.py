"""The certified PLD rule (dpalg.measures._pld) against brute force over the integer outputs.

The reference composes each part's privacy loss distribution enumerated output by
output (mpmath, 50 digits, outputs |z| <= M; the dropped mass only lowers the
hockey stick, so the reference is a lower bound of the true δ(ε), and at most the
dropped mass below it). The certified bound must be >= it and close to it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

import mpmath
import pytest

import dpalg.measures._pld as pld_module
from dpalg import ApproxDP, Clip, Compose, PureToApprox, Query, ZCDPToApprox
from dpalg.graph._node import claim_of
from dpalg.graph._tight import epsilon_candidates, parts_of
from dpalg.measures import PLDPart, optimal_epsilon, pld_delta, pld_epsilon
from dpalg.mechanisms import Gaussian, Laplace
from dpalg.mechanisms.global_noise._laplace_gaussian import public_noise_terms

mpmath.mp.dps = 50
_M = 60  # outputs |z| <= _M (plus the shift) in the brute force


def _pmf(part: PLDPart) -> dict[int, mpmath.mpf]:
    kind, param, _ = part
    p = mpmath.mpf(param.numerator) / param.denominator
    w = {z: mpmath.exp(-abs(z) / p) if kind == "laplace" else mpmath.exp(-mpmath.mpf(z * z) / (2 * p)) for z in range(-4 * _M, 4 * _M + 1)}
    norm = mpmath.fsum(w.values())  # the far tail beyond 4M is below 1e-50 for the parameters used here
    return {z: v / norm for z, v in w.items()}


def _brute_pld(part: PLDPart, reverse: bool = False) -> dict[Fraction, mpmath.mpf]:
    """Loss -> P-mass of the pair (Z, Z + Δ) (or (Z + Δ, Z) when ``reverse``), outputs -M..M+Δ only."""
    kind, param, delta = part
    pmf = _pmf(part)
    out: dict[Fraction, mpmath.mpf] = {}
    for y in range(-_M, _M + delta + 1):
        p, q = pmf[y], pmf[y - delta]
        if reverse:
            p, q = q, p
        loss = Fraction(abs(y - delta) - abs(y)) / param if kind == "laplace" else Fraction(delta * delta - 2 * delta * y) / (2 * param)
        loss = -loss if reverse else loss
        assert abs(mpmath.log(p / q) - mpmath.mpf(loss.numerator) / loss.denominator) < mpmath.mpf(10) ** -30
        out[loss] = out.get(loss, mpmath.mpf(0)) + p
    return out


def _compose(dists: list[dict[Fraction, mpmath.mpf]]) -> dict[Fraction, mpmath.mpf]:
    acc = {Fraction(0): mpmath.mpf(1)}
    for d in dists:
        new: dict[Fraction, mpmath.mpf] = {}
        for a, pa in acc.items():
            for b, pb in d.items():
                new[a + b] = new.get(a + b, mpmath.mpf(0)) + pa * pb
        acc = new
    return acc


def _hockey(d: dict[Fraction, mpmath.mpf], eps: Fraction) -> float:
    e = mpmath.mpf(eps.numerator) / eps.denominator
    return float(mpmath.fsum(p * (1 - mpmath.exp(e - mpmath.mpf(l.numerator) / l.denominator)) for l, p in d.items() if l > eps))


CASES: list[list[PLDPart] | object] = [
    [("laplace", Fraction(1), 1)] * 4,
    [("laplace", Fraction(3, 2), 2), ("laplace", Fraction(2), 3), ("laplace", Fraction(5, 2), 1)],
    [("laplace", Fraction(7, 2), 5)] * 2,
    pytest.param([("gaussian", Fraction(1), 1)] * 2, marks=pytest.mark.slow),  # 6-17 s: the brute force over the integers
    [("gaussian", Fraction(2), 1), ("laplace", Fraction(1), 1), ("gaussian", Fraction(9, 2), 2)],
]


def _counted(parts: list[PLDPart]) -> list[tuple[PLDPart, int]]:
    out: dict[PLDPart, int] = {}
    for p in parts:
        out[p] = out.get(p, 0) + 1
    return sorted(out.items())


def _epsilons() -> Iterator[Fraction]:
    for i in (0, 1, 3, 5, 8, 12, 17, 25):
        yield Fraction(i, 4)


@pytest.mark.parametrize("parts", CASES)
def test_delta_dominates_brute_force_and_is_close(parts: list[PLDPart]) -> None:
    exact = _compose([_brute_pld(p) for p in parts])
    mirror = _compose([_brute_pld(p, reverse=True) for p in parts])
    for eps in _epsilons():
        ref = _hockey(exact, eps)
        assert abs(_hockey(mirror, eps) - ref) <= 1e-12  # the pair (Z, Z + Δ) is symmetric: both directions agree
        got = pld_delta(_counted(parts), eps)
        assert got is not None
        assert float(got) >= ref, (eps, float(got), ref)  # brute force is a lower bound of the true δ(ε)
        assert float(got) <= ref * (1 + 2e-3) + 1e-12, (eps, float(got), ref)  # the grid's (pessimistic) error is small


def test_short_gaussian_truncation_charges_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """With T ≈ 1.4σ the truncated outputs carry real mass: it must go to +∞, not vanish."""
    monkeypatch.setattr(pld_module, "_TAIL_EXP", 1)
    pld_module._part_dist.cache_clear()
    pld_module._composed.cache_clear()
    try:
        parts: list[PLDPart] = [("gaussian", Fraction(4), 1)] * 2
        exact = _compose([_brute_pld(p) for p in parts])
        for eps in _epsilons():
            got = pld_delta(_counted(parts), eps)
            assert got is not None and float(got) >= _hockey(exact, eps)
    finally:
        pld_module._part_dist.cache_clear()
        pld_module._composed.cache_clear()


def test_coarse_trimming_charges_the_trimmed_mass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large trimming threshold moves visible mass to +∞ (top) or up (bottom): still an upper bound.

    At 0.3 the top atom of four sensitivity-1 Laplaces (loss 4, mass (e/(1+e))**4 = 0.28) is trimmed, so a
    trimming that dropped that mass instead of charging it would fall below the brute force (at 1e-3 nothing
    was trimmed and the test could not fail)."""
    monkeypatch.setattr(pld_module, "_TRIM", 0.3)
    pld_module._composed.cache_clear()
    try:
        parts: list[PLDPart] = [("laplace", Fraction(1), 1)] * 4
        exact = _compose([_brute_pld(p) for p in parts])
        for eps in _epsilons():
            got = pld_delta(_counted(parts), eps)
            assert got is not None and float(got) >= _hockey(exact, eps)
    finally:
        pld_module._composed.cache_clear()


def test_sensitivity_one_laplace_is_kov_two_point_optimum() -> None:
    """A sensitivity-1 discrete Laplace of scale 1/ε0 has the loss ±ε0 of KOV's worst-case pair exactly."""
    for eps0, k, delta in ((Fraction(1, 10), 100, Fraction(1, 10**6)), (Fraction(1, 2), 10, Fraction(1, 10**5))):
        kov = optimal_epsilon([(eps0, 0, k)], delta)
        got = pld_epsilon([(("laplace", 1 / eps0, 1), k)], delta)
        assert kov is not None and got is not None
        assert got >= kov * (1 - Fraction(1, 2**38))  # both round the same optimum up
        assert got <= kov + Fraction(1, 10**5)


def test_benchmark_plans_reach_the_references() -> None:
    delta = Fraction(1, 10**6)
    sums = PureToApprox(Compose(*[Laplace(Query.sum("x") | Clip(0, 1000), epsilon="0.1") for _ in range(100)]))
    found = epsilon_candidates(parts_of(sums.derive()), delta)
    assert found["pld"] is not None and 4.68 <= float(found["pld"]) <= 4.70  # dp-accounting (pessimistic): 4.693
    assert sums.epsilon_at(delta) == found["pld"]
    gauss = ZCDPToApprox(Compose(*[Gaussian(Query.count(), rho="0.005") for _ in range(100)]), delta="1e-6")
    found = epsilon_candidates(parts_of(gauss.derive()), delta)
    assert found["pld"] is not None and 4.86 <= float(found["pld"]) <= 4.90  # dp-accounting (pessimistic): 4.887
    gauss.check(ApproxDP("4.9", delta))


def test_claims_expose_the_noise_of_noise_terms() -> None:
    nodes: list[Laplace | Gaussian] = [
        Laplace(Query.count(), epsilon="0.3"),
        Laplace(Query.sum("x") | Clip(-2, 7), epsilon="0.5", relation="substitution"),
        Gaussian(Query.count(), rho="0.01"),
        Gaussian(Query.sum("x") | Clip(0, 3), rho=1),
        Laplace(Query.histogram("k", keys=["a", "b"]), epsilon=1),
    ]
    for node in nodes:
        part = claim_of(node).pld
        term = public_noise_terms(node)[0]
        assert part is not None and part[1] == term.param
        sens = term.sensitivity if isinstance(node, Laplace) else Fraction(math.isqrt(int(term.sensitivity)))
        assert part[2] == sens
    assert claim_of(Laplace(Query.mean("x") | Clip(0, 1), epsilon=1)).pld is None
    assert claim_of(Laplace(Query.histogram("k", keys=["a", "b"]), epsilon=1, relation="substitution")).pld is None
    # the leaf rule texts are unchanged (certificates record them)
    assert claim_of(nodes[0]).rule == "discrete Laplace mechanism, scale = sensitivity/eps (Canonne-Kamath-Steinke 2020; Dwork et al. 2006)"


def test_a_part_without_pld_disables_the_rule() -> None:
    from dpalg.graph._testing import Fixed

    plan = Compose(PureToApprox(Laplace(Query.count(), epsilon="0.1")), Fixed(ApproxDP("0.1", 0)))
    assert epsilon_candidates(parts_of(plan.derive()), Fraction(1, 10**6))["pld"] is None


def test_the_error_terms_stay_short_over_many_convolutions() -> None:
    """The composed PLD's error terms are rounded up at every step: exact products over 1000 copies
    had denominators of many thousand bits and made one certification take 25 s (gcd on huge ints)."""
    from dpalg.measures._pld import _composed

    tails = _composed((((("laplace", Fraction(10), 1), Fraction(1)), 1000),), 2.0**-70)
    assert tails is not None and len(tails) == 1  # no sampled part: one (symmetric) direction
    tail = tails[0]
    assert tail is not None
    for x in (tail.r, tail.a, tail.inf):
        assert x.denominator.bit_length() <= 2000 and x.numerator.bit_length() <= 2000
