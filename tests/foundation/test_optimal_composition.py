"""The optimal composition of (ε_j, δ_j)-DP parts (Kairouz–Oh–Viswanath 2015, Theorem 3.3;
Murtagh–Vadhan 2016, Theorem 1.5), checked independently.

* brute force: the product of the worst-case pairs P_j = (δ, (1−δ)e^ε/(1+e^ε),
  (1−δ)/(1+e^ε), 0) and their mirrors Q_j, enumerated outcome by outcome at 400 bits,
  both directions of the hockey-stick divergence;
* KOV's closed form for k identical parts at ε = (k−2i)ε₀;
* basic composition is never beaten the wrong way;
* the internal enclosures (e^x, the binomial tables, the powers, δ(ε) at a low working
  precision) contain the exact values, so a rounding in the wrong direction is seen.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterator
from fractions import Fraction

import mpmath
import pytest

from dpalg import InvalidArgument, Unsupported
from dpalg.measures import MAX_COMBINATIONS, optimal_delta, optimal_epsilon
from dpalg.measures import _optimal as opt

F = Fraction
_PREC = 400
_TOL = F(1, 10**12)
_LOW = mpmath.mpf(2) ** -300  # the reference computations' own error at 400 bits is far below this


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def _pair(eps: Fraction, delta: Fraction) -> tuple[list[mpmath.mpf], list[mpmath.mpf]]:
    """The worst-case pair of one (ε, δ)-DP mechanism (KOV 2015, proof of Theorem 3.3)."""
    e, d = mpmath.exp(_mp(eps)), _mp(delta)
    p = [d, (1 - d) * e / (1 + e), (1 - d) / (1 + e), mpmath.mpf(0)]
    return p, p[::-1]


def _product(mechanisms: list[tuple[Fraction, Fraction]]) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(P(o), Q(o)) for every outcome o of the product of the pairs, enumerated."""
    out = [(mpmath.mpf(1), mpmath.mpf(1))]
    for eps, delta in mechanisms:
        p, q = _pair(eps, delta)
        out = [(a * p[i], b * q[i]) for a, b in out for i in range(4)]
    return out


def _brute(table: list[tuple[mpmath.mpf, mpmath.mpf]], eps: Fraction) -> mpmath.mpf:
    e = mpmath.exp(_mp(eps))
    forward = mpmath.fsum(max(mpmath.mpf(0), p - e * q) for p, q in table)
    backward = mpmath.fsum(max(mpmath.mpf(0), q - e * p) for p, q in table)
    return max(forward, backward)


def _kov(k: int, eps0: Fraction, delta0: Fraction, i: int) -> mpmath.mpf:
    """KOV 2015, Theorem 3.3: δ at ε = (k−2i)ε₀ for k-fold composition of (ε₀, δ₀)-DP."""
    e0 = _mp(eps0)
    s = mpmath.fsum(mpmath.binomial(k, l) * (mpmath.exp((k - l) * e0) - mpmath.exp((k - 2 * i + l) * e0)) for l in range(i))
    inner = s / (1 + mpmath.exp(e0)) ** k
    return 1 - (1 - _mp(delta0)) ** k * (1 - inner)


def _grouped(parts: list[tuple[Fraction, Fraction, int]], eps: Fraction | mpmath.mpf) -> mpmath.mpf:
    """δ(ε) by the subset formula of Murtagh–Vadhan (Theorem 1.5), subsets grouped by
    how many copies of each part are in S, with binomial coefficients; at 400 bits."""
    e = _mp(eps) if isinstance(eps, Fraction) else eps
    pi = mpmath.mpf(1)
    for _, d, k in parts:
        pi *= (1 - _mp(d)) ** k
    norm = mpmath.mpf(1)
    for ej, _, k in parts:
        norm *= (1 + mpmath.exp(_mp(ej))) ** k
    total = mpmath.mpf(0)
    for counts in itertools.product(*(range(k + 1) for _, _, k in parts)):
        inside = sum((_mp(ej) * s for (ej, _, _), s in zip(parts, counts)), mpmath.mpf(0))
        outside = sum((_mp(ej) * (k - s) for (ej, _, k), s in zip(parts, counts)), mpmath.mpf(0))
        term = mpmath.exp(inside) - mpmath.exp(e + outside)
        if term > 0:
            mult = mpmath.mpf(1)
            for (_, _, k), s in zip(parts, counts):
                mult *= mpmath.binomial(k, s)
            total += mult * term
    return 1 - pi * (1 - total / norm)


def _random_mechanisms(rng: random.Random, n: int) -> list[tuple[Fraction, Fraction]]:
    epsilons = [F(1, 10), F(1, 4), F(1, 2), F(7, 10), F(1), F(3, 2)]
    deltas = [F(0), F(0), F(1, 10**6), F(1, 1000), F(1, 50)]
    return [(rng.choice(epsilons), rng.choice(deltas)) for _ in range(n)]


def _as_parts(mechanisms: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction, int]]:
    return [(e, d, 1) for e, d in mechanisms]


def _epsilons(mechanisms: list[tuple[Fraction, Fraction]]) -> list[Fraction]:
    total = sum((e for e, _ in mechanisms), F(0))
    return sorted({F(0), F(3, 10), F(1), total / 3, total / 2, total * 9 / 10, total, total + 1})


# ---------------------------------------------------------------------------------------------
# (a) brute force over the product distributions


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force_heterogeneous(seed: int) -> None:
    rng = random.Random(seed)
    mechanisms = _random_mechanisms(rng, rng.randint(1, 7))
    with mpmath.workprec(_PREC):
        table = _product(mechanisms)
        for eps in _epsilons(mechanisms):
            exact = _brute(table, eps)
            ours = optimal_delta(_as_parts(mechanisms), eps)
            assert _mp(ours) >= exact * (1 - _LOW), (mechanisms, eps)
            assert _mp(ours) <= exact * (1 + _mp(_TOL)) + mpmath.mpf(2) ** -300, (mechanisms, eps)


def test_matches_brute_force_eight_mixed_parts() -> None:
    mechanisms = [(F(1, 10), F(0))] * 3 + [(F(1, 2), F(1, 10**6))] * 3 + [(F(1), F(1, 1000)), (F(3, 10), F(0))]
    parts = [(F(1, 10), F(0), 3), (F(1, 2), F(1, 10**6), 3), (F(1), F(1, 1000), 1), (F(3, 10), F(0), 1)]
    with mpmath.workprec(_PREC):
        table = _product(mechanisms)
        for eps in _epsilons(mechanisms):
            exact = _brute(table, eps)
            ours = optimal_delta(parts, eps)
            assert exact * (1 - _LOW) <= _mp(ours) <= exact * (1 + _mp(_TOL)) + mpmath.mpf(2) ** -300, eps


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bits", [8, 12, 20])
def test_enclosure_at_low_precision_contains_brute_force(seed: int, bits: int) -> None:
    """At a working precision of a few bits every rounding matters: each must go outwards."""
    rng = random.Random(100 + seed)
    mechanisms = _random_mechanisms(rng, rng.randint(2, 6))
    key = opt._merge(_as_parts(mechanisms), "test")
    atoms = opt._atoms(key, bits)
    with mpmath.workprec(_PREC):
        table = _product(mechanisms)
        for eps in _epsilons(mechanisms):
            lo, hi = opt._delta_bounds(atoms, eps)
            exact = _brute(table, eps)
            assert _mp(lo) * (1 - _LOW) <= exact <= _mp(hi) * (1 + _LOW), (mechanisms, eps, bits)


@pytest.fixture
def loose_exponentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """e^x enclosed 2^-10 wider than computed: still valid, and now using the wrong end of
    an interval anywhere (q = e^{ε_j} in the tables, e^ε in H, z_lo for z_hi) shows."""
    tight = opt._exp_bounds

    def loose(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
        lo, hi = tight(x, bits)
        return lo * (1 - F(1, 2**10)), hi * (1 + F(1, 2**10))

    opt._atoms.cache_clear()
    monkeypatch.setattr(opt, "_exp_bounds", loose)
    yield
    opt._atoms.cache_clear()  # the loose tables must not serve later tests


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bits", [16, 40])
def test_enclosure_with_loose_exponentials_contains_brute_force(seed: int, bits: int, loose_exponentials: None) -> None:
    rng = random.Random(300 + seed)
    mechanisms = _random_mechanisms(rng, rng.randint(2, 6))
    atoms = opt._atoms(opt._merge(_as_parts(mechanisms), "test"), bits)
    with mpmath.workprec(_PREC):
        table = _product(mechanisms)
        for eps in _epsilons(mechanisms):
            lo, hi = opt._delta_bounds(atoms, eps)
            exact = _brute(table, eps)
            assert _mp(lo) * (1 - _LOW) <= exact <= _mp(hi) * (1 + _LOW), (mechanisms, eps, bits)


@pytest.mark.parametrize("parts", [[(F(1, 2), F(0), 200)], [(F(1, 5), F(1, 10**6), 60), (F(1), F(0), 25)]])
def test_enclosure_with_loose_exponentials_contains_grouped_formula(parts: list[tuple[Fraction, Fraction, int]], loose_exponentials: None) -> None:
    """Many ratio steps: the normalisation z must be taken at the right end (ε = 0 puts
    the mode among the active losses)."""
    atoms = opt._atoms(opt._merge(parts, "test"), 40)
    top = sum((e * k for e, _, k in parts), F(0))
    with mpmath.workprec(_PREC):
        for eps in [F(0), F(1, 2), F(2), top / 3, top / 2]:
            lo, hi = opt._delta_bounds(atoms, eps)
            exact = _grouped(parts, eps)
            assert _mp(lo) * (1 - _LOW) <= exact <= _mp(hi) * (1 + _LOW), (parts, eps)


@pytest.mark.parametrize("seed", range(6))
def test_enclosure_with_a_loose_e_to_the_epsilon_contains_brute_force(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables at 192 bits, then only e^ε loosened: H's upper end must use e^ε's lower end."""
    rng = random.Random(400 + seed)
    mechanisms = _random_mechanisms(rng, rng.randint(2, 6))
    atoms = opt._atoms(opt._merge(_as_parts(mechanisms), "test"), 192)
    tight = opt._exp_bounds
    monkeypatch.setattr(opt, "_exp_bounds", lambda x, bits: (tight(x, bits)[0] * (1 - F(1, 2**20)), tight(x, bits)[1] * (1 + F(1, 2**20))))
    with mpmath.workprec(_PREC):
        table = _product(mechanisms)
        for eps in _epsilons(mechanisms):
            lo, hi = opt._delta_bounds(atoms, eps)
            exact = _brute(table, eps)
            assert _mp(lo) * (1 - _LOW) <= exact <= _mp(hi) * (1 + _LOW), (mechanisms, eps)


@pytest.mark.parametrize(("eps", "k"), [(F(1, 10), 30), (F(1), 17), (F(1, 2), 200)])
def test_binomial_table_with_loose_exponentials_encloses(eps: Fraction, k: int, loose_exponentials: None) -> None:
    lo, hi, z_lo, z_hi = opt._binomial_table(eps, k, 40)
    with mpmath.workprec(_PREC):
        e = mpmath.exp(_mp(eps))
        for l in range(k + 1):
            p = mpmath.binomial(k, l) * e ** (k - l) / (1 + e) ** k
            assert mpmath.mpf(lo[l]) / z_hi <= p <= mpmath.mpf(hi[l]) / z_lo, (eps, k, l)


@pytest.mark.parametrize("bits", [4, 8, 16, 40, 64, 192])
def test_exp_bounds_enclose(bits: int) -> None:
    rng = random.Random(bits)
    xs = [F(rng.randint(1, 10**6), rng.randint(1, 10**4)) for _ in range(60)] + [F(1, 10), F(1), F(3, 2)]
    with mpmath.workprec(_PREC):
        for x in xs:
            lo, hi = opt._exp_bounds(x, bits)
            exact = mpmath.exp(_mp(x))
            assert _mp(lo) <= exact <= _mp(hi), (x, bits)
            assert hi - lo <= hi * F(1, 2 ** (bits - 2)), (x, bits)


@pytest.mark.parametrize(("eps", "k", "bits"), [(F(1, 10), 30, 8), (F(1), 17, 10), (F(1, 2), 200, 16), (F(3), 9, 6), (F(1, 100), 64, 24)])
def test_binomial_table_encloses(eps: Fraction, k: int, bits: int) -> None:
    lo, hi, z_lo, z_hi = opt._binomial_table(eps, k, bits)
    assert z_lo <= z_hi
    with mpmath.workprec(_PREC):
        e = mpmath.exp(_mp(eps))
        for l in range(k + 1):
            p = mpmath.binomial(k, l) * e ** (k - l) / (1 + e) ** k
            assert mpmath.mpf(lo[l]) / z_hi <= p <= mpmath.mpf(hi[l]) / z_lo, (eps, k, bits, l)


@pytest.mark.parametrize(("x", "k", "bits"), [(F(999, 1000), 1000, 12), (F(1, 3), 7, 8), (F(1) - F(1, 10**9), 10**4, 40), (F(1, 2), 5, 3)])
def test_pow_bounds_enclose(x: Fraction, k: int, bits: int) -> None:
    lo, hi = opt._pow_bounds(x, k, bits)
    assert lo <= x**k <= hi


# ---------------------------------------------------------------------------------------------
# (b) KOV's closed form


@pytest.mark.parametrize(
    ("k", "eps0", "delta0"),
    [(1, F(1, 2), F(0)), (5, F(1), F(1, 1000)), (30, F(1, 10), F(0)), (200, F(1, 10), F(1, 10**9)), (1000, F(1, 20), F(1, 10**8)), (64, F(2), F(1, 10**5))],
)
def test_kov_closed_form(k: int, eps0: Fraction, delta0: Fraction) -> None:
    with mpmath.workprec(_PREC):
        for i in sorted({0, 1, 2, k // 4, k // 3, (k - 1) // 2} & set(range((k + 1) // 2))):
            eps = (k - 2 * i) * eps0
            exact = _kov(k, eps0, delta0, i)
            ours = optimal_delta([(eps0, delta0, k)], eps)
            assert exact * (1 - _LOW) <= _mp(ours) <= exact * (1 + _mp(_TOL)) + mpmath.mpf(2) ** -300, (k, i)


# ---------------------------------------------------------------------------------------------
# (c) basic composition, and the optimum


@pytest.mark.parametrize("seed", range(10))
def test_never_worse_than_basic_composition_and_never_below_the_optimum(seed: int) -> None:
    rng = random.Random(200 + seed)
    parts = [(m[0], m[1], rng.randint(1, 12)) for m in _random_mechanisms(rng, rng.randint(1, 2))]
    basic_eps = sum((e * k for e, _, k in parts), F(0))
    basic_delta = sum((d * k for _, d, k in parts), F(0))
    for target in {basic_delta, basic_delta + F(1, 10**6), basic_delta * 2 + F(1, 10**9), max(basic_delta, F(1, 10))}:
        if target > 1:
            continue
        eps = optimal_epsilon(parts, target)
        assert eps is not None
        assert eps <= basic_eps
        assert optimal_delta(parts, eps) <= target
        with mpmath.workprec(_PREC):
            assert _grouped(parts, eps) <= _mp(target)  # never below the exact optimum
            if 0 < eps < basic_eps:  # and within a relative 1e-9 of it
                assert _grouped(parts, eps * (1 - F(1, 10**9))) > _mp(target), (parts, target, eps)


def test_single_part_at_its_own_delta_is_its_own_epsilon() -> None:
    assert optimal_epsilon([(F(1, 2), F(1, 10**6), 1)], F(1, 10**6)) == F(1, 2)
    assert optimal_delta([(F(1, 2), F(1, 10**6), 1)], F(1, 2)) == F(1, 10**6)
    assert optimal_delta([(F(1, 2), F(1, 10**6), 2)], F(1)) <= F(2, 10**6)


# ---------------------------------------------------------------------------------------------
# the reference values (dp-accounting's PLD reports 4.7746 for the first)


def test_reference_100_pure_parts() -> None:
    eps = optimal_epsilon([(F(1, 10), 0, 100)], F(1, 10**6))
    assert eps is not None
    assert 4.7745 < float(eps) <= 4.78
    with mpmath.workprec(_PREC):
        exact = mpmath.findroot(lambda x: _grouped([(F(1, 10), F(0), 100)], x) - mpmath.mpf(10) ** -6, 4.77)
        assert exact <= _mp(eps) <= exact * (1 + mpmath.mpf(10) ** -9)
    assert mpmath.nstr(exact, 5) == "4.7746"


def test_reference_100_approximate_parts() -> None:
    eps = optimal_epsilon([(F(1, 10), F(1, 10**9), 100)], F(1, 10**6))
    assert eps is not None
    assert 4.7877 < float(eps) <= 4.80
    with mpmath.workprec(_PREC):
        assert _kov(100, F(1, 10), F(1, 10**9), 0) < 1  # the closed form is defined here
        assert _grouped([(F(1, 10), F(1, 10**9), 100)], eps) <= mpmath.mpf(10) ** -6
        assert _grouped([(F(1, 10), F(1, 10**9), 100)], eps * (1 - F(1, 10**9))) > mpmath.mpf(10) ** -6
    assert round(float(eps), 4) == 4.7877


# ---------------------------------------------------------------------------------------------
# edges, refusals, speed


def test_no_epsilon_works() -> None:
    assert optimal_epsilon([(1, F(1, 100), 2)], F(1, 100)) is None  # 1 − 0.99² > 0.01
    assert optimal_epsilon([(F(1, 10), F(1, 10**9), 10**4)], F(1, 10**6)) is None  # 1 − (1−1e-9)^1e4 ≈ 1e-5
    assert optimal_epsilon([(F(1, 10), 0, 10)], 0) == 1  # pure parts at δ = 0: basic composition


def test_zero_epsilon_parts_and_empty() -> None:
    assert optimal_delta([], 0) == 0
    assert optimal_epsilon([], 0) == 0
    assert optimal_epsilon([(0, F(1, 10**6), 5)], F(1, 10**5)) == 0
    assert optimal_delta([(0, F(1, 10**6), 5), (F(1, 2), 0, 0)], 0) <= F(5, 10**6)


def test_cap() -> None:
    big = [(F(1, 10), 0, 1999), (F(1, 7), 0, 1999)]
    assert optimal_epsilon(big, F(1, 10**6)) is None
    with pytest.raises(Unsupported, match="combinations"):
        optimal_delta(big, 1)
    assert opt._combinations(opt._merge([(F(1, 10), 0, MAX_COMBINATIONS - 1)], "test")) == MAX_COMBINATIONS  # allowed


@pytest.mark.parametrize(
    ("parts", "value", "field"),
    [
        ([(-1, 0, 1)], 0, "parts[0].epsilon"),
        ([(1, F(3, 2), 1)], 0, "parts[0].delta"),
        ([(1, -1, 1)], 0, "parts[0].delta"),
        ([(1, 0, -1)], 0, "parts[0].count"),
        ([(1, 0, True)], 0, "parts[0].count"),
        ([(1, 0, 1.5)], 0, "parts[0].count"),
        ([(1, 0)], 0, "parts[0]"),
        ([(1, 0, 1)], -1, "epsilon"),
        ([(1, 0, 1)], float("nan"), "epsilon"),
    ],
)
def test_invalid_arguments(parts: list[tuple[object, ...]], value: object, field: str) -> None:
    with pytest.raises(InvalidArgument, match=field.replace("[", r"\[").replace("]", r"\]")):
        optimal_delta(parts, value)  # type: ignore[arg-type]


def test_invalid_delta_target() -> None:
    with pytest.raises(InvalidArgument, match="delta"):
        optimal_epsilon([(1, 0, 1)], F(3, 2))


@pytest.mark.parametrize("k", [100, 10**4])
def test_homogeneous_is_fast(k: int) -> None:
    opt._atoms.cache_clear()
    start = time.perf_counter()
    eps = optimal_epsilon([(F(1, 10), F(1, 10**12), k)], F(1, 10**6))
    elapsed = time.perf_counter() - start
    assert eps is not None
    assert elapsed < 0.5  # about 0.005 s and 0.03 s measured; generous for a shared machine
