"""The PLD rule for Poisson-subsampled discrete Laplace / Gaussian parts, against the real mechanism.

The reference is the mechanism itself on the worst-case pair of datasets: x = ∅ and x' = {u}
for a sum of sensitivity Δ to which u contributes Δ. Run on a Poisson sample at rate q, the
output is ``Z`` on x and ``Z + Δ·B`` on x' (B ~ Bernoulli(q) independent of the noise Z). Each
direction (x' against x, x against x') is enumerated output by output in mpmath (50 digits);
a composition of k releases takes the product of the output distributions, and δ(ε) is the
larger of the two directions' hockey-stick divergences. It is a lower bound of the true δ(ε)
of the composed mechanism (it is one pair of neighbours; dropped far outputs only lower it),
so the certified bound must be >= it, and close to it (the bound is tight: the pair above is
the dominating pair of Zhu–Dong–Wang 2022, Thm 11).

Broken variants caught here: one direction only (the add direction dropped), the rate applied
twice, and an optimistic grid placement of a sampled loss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpalg.measures._pld as pld_module
from dpalg import ApproxDP, Compose, PureToApprox, Query, Subsample
from dpalg.graph._tight import epsilon_candidates, parts_of
from dpalg.measures import PLDPart, PLDSampled, pld_delta, pld_epsilon
from dpalg.mechanisms import Laplace
from dpalg.release import audit_certificate

mpmath.mp.dps = 50
_M = 60


def _pmf(part: PLDPart) -> dict[int, mpmath.mpf]:
    kind, param, _ = part
    p = mpmath.mpf(param.numerator) / param.denominator
    w = {z: mpmath.exp(-abs(z) / p) if kind == "laplace" else mpmath.exp(-mpmath.mpf(z * z) / (2 * p)) for z in range(-4 * _M, 4 * _M + 1)}
    norm = mpmath.fsum(w.values())
    return {z: v / norm for z, v in w.items()}


def _losses(part: PLDPart, rate: Fraction, remove: bool) -> dict[str, tuple[mpmath.mpf, mpmath.mpf]]:
    """loss key -> (loss, mass under the first distribution) of the real mechanism on (∅, {u})."""
    _, _, delta = part
    pmf = _pmf(part)
    q = mpmath.mpf(rate.numerator) / rate.denominator
    out: dict[str, tuple[mpmath.mpf, mpmath.mpf]] = {}
    for y in range(-_M, _M + delta + 1):
        without = pmf[y]  # M(∅) = Z
        with_u = (1 - q) * pmf[y] + q * pmf[y - delta]  # M({u}) = Z + Δ·Bernoulli(q)
        first, second = (with_u, without) if remove else (without, with_u)
        loss = mpmath.log(first / second)
        key = mpmath.nstr(loss, 35)
        old = out.get(key, (loss, mpmath.mpf(0)))
        out[key] = (loss, old[1] + first)
    return out


def _compose(dists: list[dict[str, tuple[mpmath.mpf, mpmath.mpf]]]) -> dict[str, tuple[mpmath.mpf, mpmath.mpf]]:
    acc: dict[str, tuple[mpmath.mpf, mpmath.mpf]] = {"0": (mpmath.mpf(0), mpmath.mpf(1))}
    for d in dists:
        new: dict[str, tuple[mpmath.mpf, mpmath.mpf]] = {}
        for la, pa in acc.values():
            for lb, pb in d.values():
                loss = la + lb
                key = mpmath.nstr(loss, 35)
                old = new.get(key, (loss, mpmath.mpf(0)))
                new[key] = (loss, old[1] + pa * pb)
        acc = new
    return acc


def _hockey(d: dict[str, tuple[mpmath.mpf, mpmath.mpf]], eps: Fraction) -> float:
    e = mpmath.mpf(eps.numerator) / eps.denominator
    return float(mpmath.fsum(p * (1 - mpmath.exp(e - l)) for l, p in d.values() if l > e))


def _reference(items: list[tuple[PLDPart, Fraction]], eps: Fraction) -> float:
    return max(_hockey(_compose([_losses(p, q, remove) for p, q in items]), eps) for remove in (True, False))


def _counted(items: list[tuple[PLDPart, Fraction]]) -> list[tuple[PLDPart | PLDSampled, int]]:
    out: dict[tuple[PLDPart, Fraction], int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return [(((p, q) if q != 1 else p), k) for (p, q), k in sorted(out.items())]


def _lap(t: str, delta: int) -> PLDPart:
    return ("laplace", Fraction(t), delta)


#: the addition direction has the larger δ for ε in about [0.1, 0.8], the removal direction elsewhere
BOTH_WAYS: list[tuple[PLDPart, Fraction]] = [(_lap("1/2", 1), Fraction(1, 2))] * 3
CASES: list[list[tuple[PLDPart, Fraction]]] = [
    BOTH_WAYS,
    [(_lap("1", 1), Fraction(1, 10))] * 4,
    [(_lap("3/2", 2), Fraction(1, 3)), (_lap("2", 3), Fraction(1)), (_lap("5/2", 1), Fraction(1, 2))],
    [(_lap("7/2", 5), Fraction(1, 20))] * 2,
    [(("gaussian", Fraction(2), 1), Fraction(1, 4)), (_lap("1", 1), Fraction(1, 4))],
]
EPSILONS = [Fraction(i, 8) for i in (0, 1, 2, 4, 6, 9, 13)]


_CACHES = (pld_module._part_dist, pld_module._sampled_dist, pld_module._composed)


def _fresh() -> None:
    for f in _CACHES:
        f.cache_clear()


def _check(items: list[tuple[PLDPart, Fraction]]) -> None:
    for eps in EPSILONS:
        ref = _reference(items, eps)
        got = pld_delta(_counted(items), eps)
        assert got is not None
        assert float(got) >= ref, (eps, float(got), ref)
        assert float(got) <= ref * (1 + 2e-3) + 1e-12, (eps, float(got), ref)


@pytest.mark.parametrize("items", CASES)
def test_sampled_delta_dominates_the_real_mechanism_and_is_close(items: list[tuple[PLDPart, Fraction]]) -> None:
    _check(items)


def _one_direction(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pld_module._sampled_dist.__wrapped__

    def only_remove(part: PLDPart, rate: Fraction, m: int, remove: bool) -> pld_module._Dist | None:
        return real(part, rate, m, True)

    monkeypatch.setattr(pld_module, "_sampled_dist", only_remove)


def _rate_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pld_module._subsampled_dist

    def twice(atoms: list[pld_module._Atom], inf: Fraction, rate: Fraction, m: int, remove: bool) -> pld_module._Dist:
        return real(atoms, inf, rate * rate, m, remove)  # the amplification applied twice

    monkeypatch.setattr(pld_module, "_subsampled_dist", twice)


def _optimistic_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pld_module._loss_grid

    def low(lo: Fraction, hi: Fraction, m: int) -> tuple[int, int]:
        a, b = real(lo, hi, m)
        return a - 1, a  # the interval below the loss: every sampled loss moves down a step

    monkeypatch.setattr(pld_module, "_loss_grid", low)


BROKEN: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "one direction": _one_direction,
    "rate applied twice": _rate_twice,
    "optimistic grid": _optimistic_grid,
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_variant_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh()
    BROKEN[name](monkeypatch)
    try:
        with pytest.raises(AssertionError):
            _check(BOTH_WAYS)
    finally:
        _fresh()


def test_both_directions_matter() -> None:
    """The removal and the addition direction differ; neither alone bounds the other at every ε."""
    items = BOTH_WAYS
    rem = [_hockey(_compose([_losses(p, q, True) for p, q in items]), e) for e in EPSILONS]
    add = [_hockey(_compose([_losses(p, q, False) for p, q in items]), e) for e in EPSILONS]
    assert any(a > r for a, r in zip(add, rem)) and any(r > a for a, r in zip(add, rem))


def test_a_plan_of_sampled_counts_is_certified_by_the_sampled_pld() -> None:
    """100 discrete Laplace counts (ε = 0.1) each on a 10% sample: exact ε(1e-6) = 0.39482957 (enumeration of
    the two-point pairs in mpmath, 40 digits); the amplified sum gives 1.046 and optimal composition 0.4116."""
    plan = PureToApprox(Compose(*[Subsample(Laplace(Query.count(), epsilon="0.1"), rate="0.1") for _ in range(100)]))
    found = epsilon_candidates(parts_of(plan.derive()), Fraction(1, 10**6))
    pld = found["pld"]
    assert pld is not None and 0.39482957 <= float(pld) <= 0.39482957 * 1.0005
    assert all(e is None or e >= pld for e in found.values())
    assert plan.epsilon_at("1e-6") == pld


def test_a_sample_shared_by_several_releases_is_not_a_sampled_part() -> None:
    """One sample serves both releases: the composition of two sampled parts would undercount it."""
    shared = PureToApprox(Compose(*[Subsample(Compose(Laplace(Query.count(), epsilon="0.1"), Laplace(Query.count(), epsilon="0.1")), rate="0.1")
                                    for _ in range(50)]))
    assert epsilon_candidates(parts_of(shared.derive()), Fraction(1, 10**6))["pld"] is None
    nested = Subsample(Subsample(Laplace(Query.count(), epsilon="0.1"), rate="1/2"), rate="1/5")
    parts = parts_of(PureToApprox(Compose(nested, nested)).derive())
    assert parts[0].pld == ((("laplace", Fraction(10), 1), Fraction(1, 10)),)  # two Poisson samples: rate 1/2 · 1/5


def test_the_certificate_records_the_sampled_pld_and_audits() -> None:
    plan = PureToApprox(Compose(*[Subsample(Laplace(Query.count(), epsilon="0.1"), rate="0.1") for _ in range(100)]))
    derivation = plan.check(ApproxDP("0.4", "1e-6"))
    inputs = dict(derivation.inputs)
    assert inputs["rule"] == "pld" and inputs["pld_sampled"] == "1/10"
    with pytest.warns(Warning):
        release = plan.run({"x": np.zeros(5)}, rng=1)
    cert = json.loads(json.dumps(release.certificate))
    assert audit_certificate(cert).status == "cost_confirmed"
    # a certificate without the marker is re-derived by the rules before sampled PLDs: 0.4 is then out of reach
    cert["derivation"]["inputs"] = [i for i in cert["derivation"]["inputs"] if i[0] != "pld_sampled"]
    assert audit_certificate(_reseal(cert)).status == "refuted"


def _reseal(cert: dict[str, object]) -> dict[str, object]:
    """The digest recomputed over the tampered body (anyone can; the audit re-derives, it does not trust the digest)."""
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return {**body, "digest": {"algorithm": "sha256", "value": hashlib.sha256(canonical).hexdigest()}}


@pytest.mark.parametrize("items", [[(_lap("1/1000", 1), Fraction(1, 2))], [(("gaussian", Fraction(1, 1000), 3), Fraction(1, 2))]])
def test_a_sampled_part_with_losses_beyond_a_float_exponent_is_certified(items: list[tuple[PLDPart, Fraction]]) -> None:
    # base losses of 1000 and more: e^L is no float (the grid search read ln(float(e^L)) and raised OverflowError)
    _fresh()
    _check(items)


def test_sampled_parts_are_validated() -> None:
    from dpalg import InvalidArgument

    with pytest.raises(InvalidArgument, match="rate"):
        pld_epsilon([(((_lap("1", 1)), Fraction(3, 2)), 1)], Fraction(1, 10**6))
    with pytest.raises(InvalidArgument, match="rate"):
        pld_epsilon([(((_lap("1", 1)), Fraction(0)), 1)], Fraction(1, 10**6))
