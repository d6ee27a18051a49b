"""Per-coordinate calibration (Lebeda–Pagh): symbolic constants, exact privacy, measured vs derived error."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy

from dpalg import Clip, Compose, InvalidArgument, Query, ZCDP, ApproxDP, PureDP
from dpalg.data import as_dataset
from dpalg.graph import ZCDPToApprox
from dpalg.mechanisms.global_noise._per_coordinate import (
    CalibratedGaussianSum,
    CalibratedLaplaceSum,
    box_sensitivities,
    calibrate_gaussian,
    calibrate_laplace,
    derived_error_ratio,
)
from dpalg.noise import SeededRandomness, exact_clipped_sum

D = 10
DELTAS = [Fraction(1, 2**i) for i in range(1, D + 1)]
QUERIES = [Query.sum(f"x{i}") | Clip(0, DELTAS[i - 1]) for i in range(1, D + 1)]


# --- the constants, symbolically -------------------------------------------------------------


def _norm(expr: sympy.Expr) -> sympy.Expr:
    """Combine powers of one base and simplify exponents (Δ²/Δ^{4/(p+2)} -> Δ^{2p/(p+2)})."""
    expr = sympy.powsimp(expr, force=True)
    return expr.replace(lambda x: x.is_Pow, lambda x: sympy.Pow(x.base, sympy.factor(sympy.simplify(x.exp))))


def test_gaussian_constants_symbolic() -> None:
    d1, d2, d3, rho, p = sympy.symbols("Delta1 Delta2 Delta3 rho p", positive=True)
    deltas = [d1, d2, d3]
    s = sum(d ** (2 * p / (p + 2)) for d in deltas)
    sigma2 = [d ** (4 / (p + 2)) * s / (2 * rho) for d in deltas]
    # privacy of the chosen σ_i is exactly ρ
    assert sympy.simplify(sum(_norm(d**2 / (2 * v)) for d, v in zip(deltas, sigma2)) - rho) == 0
    # stationarity (Lagrange): d/dσ_i [σ_i^p + λ Δ_i²/(2σ_i²)] = 0 <=> λ = p σ_i^{p+2}/Δ_i², the same for all i
    c = sympy.Symbol("c", positive=True)
    for d in deltas:
        sigma = c * d ** (2 / (p + 2))
        x, lam = sympy.symbols("x lam", positive=True)
        lagrange = sympy.diff(x**p + lam * d**2 / (2 * x**2), x)
        assert sympy.simplify(lagrange.subs(lam, p * x ** (p + 2) / d**2)) == 0
        assert sympy.simplify(_norm(sigma ** (p + 2) / d**2) - c ** (p + 2)) == 0
    # the error ratio: sum σ_i^p / (d σ_iso^p) = ||Δ||_q^p / (d ||Δ||_2^p), q = 2p/(p+2)
    iso = sum(d**2 for d in deltas) / (2 * rho)
    ratio = sum(v ** (p / 2) for v in sigma2) / (3 * iso ** (p / 2))
    formula = s ** ((p + 2) / 2) / (3 * sympy.sqrt(sum(d**2 for d in deltas)) ** p)
    assert sympy.simplify(sympy.powsimp(sympy.expand_power_base(ratio / formula, force=True), force=True)) == 1


def test_laplace_constants_symbolic() -> None:
    d1, d2, d3, eps, p = sympy.symbols("Delta1 Delta2 Delta3 epsilon p", positive=True)
    deltas = [d1, d2, d3]
    t = sum(d ** (p / (p + 1)) for d in deltas)
    b = [d ** (1 / (p + 1)) * t / eps for d in deltas]
    assert sympy.simplify(sum(_norm(d / x) for d, x in zip(deltas, b)) - eps) == 0
    # stationarity: d/db_i [b_i^p + λ Δ_i/b_i] = 0 <=> λ = p b_i^{p+1}/Δ_i, the same for all i
    c = sympy.Symbol("c", positive=True)
    x, lam = sympy.symbols("x lam", positive=True)
    for d in deltas:
        lagrange = sympy.diff(x**p + lam * d / x, x)
        assert sympy.simplify(lagrange.subs(lam, p * x ** (p + 1) / d)) == 0
        assert sympy.simplify(_norm((c * d ** (1 / (p + 1))) ** (p + 1) / d) - c ** (p + 1)) == 0
    # the error ratio: sum b_i^p / (d b_iso^p) = ||Δ||_{p/(p+1)}^p / (d ||Δ||_1^p)
    iso = sum(deltas) / eps
    ratio = sum(_norm(v**p) for v in b) / (3 * iso**p)
    formula = t ** (p + 1) / (3 * sum(deltas) ** p)
    assert sympy.simplify(_norm(sympy.expand_power_base(ratio / formula, force=True))) == 1


# --- exact rational calibration -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4)])
def test_chosen_parameters_have_exactly_the_target_privacy_in_sympy(kind: str, p: Fraction) -> None:
    """The rational σ_i² (b_i) chosen for Δ_i = 2^-i (and an odd 3/7) give exactly ρ (ε) in sympy."""
    deltas = DELTAS + [Fraction(3, 7)]

    def rat(x: Fraction) -> sympy.Rational:
        return sympy.Rational(x.numerator, x.denominator)

    if kind == "gaussian":
        params = calibrate_gaussian(deltas, Fraction(3, 10), p)
        cost = sympy.Add(*[rat(d) ** 2 / (2 * rat(v)) for d, v in zip(deltas, params)])
    else:
        params = calibrate_laplace(deltas, Fraction(3, 10), p)
        cost = sympy.Add(*[rat(d) / rat(b) for d, b in zip(deltas, params)])
    assert cost == sympy.Rational(3, 10)
    # the shape is Lebeda-Pagh's (up to the 24-bit rounding of the weights)
    e = 2 / (float(p) + 2) if kind == "gaussian" else 1 / (float(p) + 1)
    spread = [math.sqrt(float(v)) if kind == "gaussian" else float(v) for v in params]
    ratios = [sp / float(d) ** e for sp, d in zip(spread, deltas)]
    assert max(ratios) / min(ratios) < 1 + 1e-6


@pytest.mark.parametrize("p", [Fraction(1), Fraction(2), Fraction(7, 2)])
def test_calibration_is_exact_and_near_optimal(p: Fraction) -> None:
    rng = np.random.default_rng(0)  # picks test cases only
    for _ in range(20):
        deltas = [Fraction(int(rng.integers(1, 10**6)), int(rng.integers(1, 10**4))) for _ in range(int(rng.integers(1, 12)))]
        rho, eps = Fraction(int(rng.integers(1, 100)), 37), Fraction(int(rng.integers(1, 100)), 41)
        s2 = calibrate_gaussian(deltas, rho, p)
        assert sum(d * d / (2 * v) for d, v in zip(deltas, s2)) == rho  # exact
        b = calibrate_laplace(deltas, eps, p)
        assert sum(d / x for d, x in zip(deltas, b)) == eps  # exact
        # proportions follow Δ_i^{4/(p+2)} and Δ_i^{1/(p+1)} to 1e-6
        pf = float(p)
        for i in range(len(deltas)):
            want = (float(deltas[i]) / float(deltas[0])) ** (4 / (pf + 2))
            assert float(s2[i] / s2[0]) == pytest.approx(want, rel=1e-6)
            want_b = (float(deltas[i]) / float(deltas[0])) ** (1 / (pf + 1))
            assert float(b[i] / b[0]) == pytest.approx(want_b, rel=1e-6)
        iso = calibrate_gaussian(deltas, rho, p, calibration="isotropic")
        assert set(iso) == {sum(d * d for d in deltas) / (2 * rho)}
        assert set(calibrate_laplace(deltas, eps, p, calibration="isotropic")) == {sum(deltas) / eps}


@pytest.mark.parametrize("cls", [CalibratedGaussianSum, CalibratedLaplaceSum])
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_node_privacy_is_exact_on_the_lattice(cls: type[CalibratedGaussianSum] | type[CalibratedLaplaceSum], relation: str) -> None:
    queries = [Query.sum("x") | Clip("-0.3", 2), Query.sum("y") | Clip(0, "0.001"), Query.sum("z") | Clip(-5, -1)]
    node = cls(queries, Fraction(1, 3), relation=relation)
    ks, deltas, params = node.lattice()
    real = box_sensitivities(queries, relation)  # type: ignore[arg-type]
    for k, d, r in zip(ks, deltas, real):
        assert d >= r and (d / Fraction(2) ** k).denominator == 1  # integer in lattice units, covers Δ
    if cls is CalibratedGaussianSum:
        assert sum(d * d / (2 * v) for d, v in zip(deltas, params)) == Fraction(1, 3)
        assert node.cost() == ZCDP(Fraction(1, 3))
    else:
        assert sum(d / b for d, b in zip(deltas, params)) == Fraction(1, 3)
        assert node.cost() == PureDP(Fraction(1, 3))


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_box_sensitivity_brute_force(relation: str) -> None:
    """Every neighbour moves coordinate i of the fixed-point sum by at most Δ_i (lattice units exact)."""
    queries = [Query.sum("x") | Clip("-0.3", 2), Query.sum("y") | Clip(1, 3)]
    node = CalibratedGaussianSum(queries, 1, relation=relation)
    ks, deltas, _ = node.lattice()
    values = [-7.0, -0.3, 0.0, 0.7, 2.0, 9.0, math.nan]
    base = [[0.5, 1.5], [2.0, math.nan], [-1.0, 3.0]]

    def sums(rows: list[list[float]]) -> list[Fraction]:
        out = []
        for j, (q, k) in enumerate(zip(queries, ks)):
            lo, hi = q.require_bounds("test")
            out.append(exact_clipped_sum([r[j] for r in rows], lo, hi, k) * Fraction(2) ** k)
        return out

    s0 = sums(base)
    worst = [Fraction(0), Fraction(0)]
    candidates = [list(v) for v in itertools.product(values, repeat=2)]
    if relation == "add_remove":
        neighbours = [base[:i] + base[i + 1 :] for i in range(len(base))] + [base + [c] for c in candidates]
    else:
        neighbours = [base[:i] + [c] + base[i + 1 :] for i in range(len(base)) for c in candidates]
    for n in neighbours:
        for j, v in enumerate(sums(n)):
            worst[j] = max(worst[j], abs(v - s0[j]))
    assert worst[0] <= deltas[0] and worst[1] <= deltas[1]
    real = box_sensitivities(queries, relation)  # type: ignore[arg-type]
    for j in range(2):  # the real-valued box sensitivity is attained, up to the lattice rounding
        assert real[j] - Fraction(2) ** ks[j] <= worst[j] <= deltas[j]


# --- measured error vs derived ----------------------------------------------------------------


def _ratio_and_se(per: np.ndarray, iso: np.ndarray) -> tuple[float, float]:
    """Ratio of means and its delta-method standard error (independent samples)."""
    m1, m2 = float(per.mean()), float(iso.mean())
    r = m1 / m2
    se = r * math.sqrt(per.var() / (len(per) * m1**2) + iso.var() / (len(iso) * m2**2))
    return r, se


@pytest.mark.parametrize(("cls", "kw", "derived_expected"), [
    (CalibratedGaussianSum, {"rho": "0.5"}, 0.2994),
    (CalibratedLaplaceSum, {"epsilon": 1}, 0.4799),
])
def test_measured_error_ratio_matches_derived(cls: type[CalibratedGaussianSum] | type[CalibratedLaplaceSum], kw: dict[str, object], derived_expected: float) -> None:
    kind = "gaussian" if cls is CalibratedGaussianSum else "laplace"
    derived = derived_error_ratio(DELTAS, 2, kind)  # type: ignore[arg-type]
    assert derived == pytest.approx(derived_expected, abs=1e-4)
    per = cls(QUERIES, **kw)  # type: ignore[arg-type]
    iso = cls(QUERIES, calibration="isotropic", **kw)  # type: ignore[arg-type]
    assert per.cost() == iso.cost()
    # the chosen parameters realise the derived ratio (lattice and weight rounding are negligible)
    assert per.expected_error() / iso.expected_error() == pytest.approx(derived, rel=1e-4)
    rng = SeededRandomness(2024)
    err_per = (per.simulate_noise(10_000, rng) ** 2).sum(axis=1)
    err_iso = (iso.simulate_noise(10_000, rng) ** 2).sum(axis=1)
    measured, se = _ratio_and_se(err_per, err_iso)
    assert abs(measured - derived) <= 4 * se, (measured, derived, se)
    # and each mechanism's mean error matches its continuous prediction
    assert float(err_iso.mean()) == pytest.approx(iso.expected_error(), rel=6 * float(err_iso.std()) / 100 / iso.expected_error())


def test_equal_sensitivities_give_no_gain() -> None:
    assert derived_error_ratio([1] * 5, 2, "gaussian") == pytest.approx(1.0)
    assert derived_error_ratio([1] * 5, 3, "laplace") == pytest.approx(1.0)
    qs = [Query.sum(f"x{i}") | Clip(-1, 1) for i in range(3)]
    assert set(CalibratedGaussianSum(qs, 1).lattice()[2]) == set(CalibratedGaussianSum(qs, 1, calibration="isotropic").lattice()[2])


# --- interface ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: CalibratedGaussianSum([], 1), "CalibratedGaussianSum", "queries"),
        (lambda: CalibratedGaussianSum([Query.sum("x")], 1), "CalibratedGaussianSum", "query"),
        (lambda: CalibratedGaussianSum([Query.mean("x") | Clip(0, 1)], 1), "CalibratedGaussianSum", "queries[0]"),
        (lambda: CalibratedGaussianSum([Query.sum("x") | Clip(0, 0)], 1), "CalibratedGaussianSum", "queries[0]"),
        (lambda: CalibratedGaussianSum(QUERIES, 0), "CalibratedGaussianSum", "rho"),
        (lambda: CalibratedGaussianSum(QUERIES, 1, p=0), "CalibratedGaussianSum", "p"),
        (lambda: CalibratedGaussianSum(QUERIES, 1, calibration="l2"), "CalibratedGaussianSum", "calibration"),
        (lambda: CalibratedGaussianSum(QUERIES, 1, relation="x"), "CalibratedGaussianSum", "relation"),
        (lambda: CalibratedLaplaceSum(QUERIES, "-1"), "CalibratedLaplaceSum", "epsilon"),
        (lambda: CalibratedLaplaceSum(QUERIES, 1, p="-2"), "CalibratedLaplaceSum", "p"),
        (lambda: CalibratedLaplaceSum([Query.sum("x", user="u") | Clip(0, 1)], 1), "CalibratedLaplaceSum", "queries[0]"),
        (lambda: calibrate_gaussian([1, 0], 1), "calibrate_gaussian", "sensitivities"),
        (lambda: calibrate_gaussian([], 1), "calibrate_gaussian", "sensitivities"),
        (lambda: calibrate_laplace([1], 0), "calibrate_laplace", "epsilon"),
        (lambda: calibrate_laplace([1], 1, calibration="x"), "calibrate_laplace", "calibration"),  # type: ignore[arg-type]
        (lambda: CalibratedLaplaceSum(QUERIES, 1).simulate_noise(0, SeededRandomness(0)), "CalibratedLaplaceSum", "trials"),
    ],
)
def test_invalid_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert (info.value.owner, info.value.field) == (owner, field)


def test_repr_reproduces_construction() -> None:
    namespace = {"CalibratedGaussianSum": CalibratedGaussianSum, "CalibratedLaplaceSum": CalibratedLaplaceSum,
                 "Query": Query, "Clip": Clip, "Fraction": Fraction}
    for node in (CalibratedGaussianSum(QUERIES[:3], "0.5", p=1), CalibratedLaplaceSum(QUERIES[:2], 1, calibration="isotropic")):
        assert eval(repr(node), namespace) == node  # noqa: S307


def test_end_to_end() -> None:
    rows = 2000
    gen = np.random.default_rng(1)  # synthetic data only
    data = as_dataset({f"x{i}": gen.uniform(0, float(DELTAS[i - 1]), rows) for i in range(1, D + 1)})
    plan = Compose(CalibratedGaussianSum(QUERIES, "0.25"), CalibratedGaussianSum(QUERIES, "0.25", calibration="isotropic"))
    plan.check(ZCDP("0.5"))
    value = plan.run(data, rng=SeededRandomness(0)).value
    assert isinstance(value, tuple)
    per, iso = value
    truth = [float(np.sum(data.numeric(f"x{i}"))) for i in range(1, D + 1)]
    assert len(per) == len(iso) == D
    assert all(abs(a - t) < 10 for a, t in zip(per, truth))
    approx = Compose(ZCDPToApprox(CalibratedGaussianSum(QUERIES, "0.5"), delta="1e-6"))
    approx.check(ApproxDP(6, "1e-6"))
    lap = Compose(CalibratedLaplaceSum(QUERIES, 1))
    lap.check(PureDP(1))
    lap_value = lap.run(data, rng=SeededRandomness(3)).value
    assert isinstance(lap_value, tuple)
    (out,) = lap_value
    assert isinstance(out, tuple)
    assert len(out) == D


@pytest.mark.slow  # the same run (and checks) as tests/test_examples.py::test_example_runs_small[per_coordinate.py]
def test_example_runs_quick(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "examples" / "per_coordinate.py"
    subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)], check=True, timeout=120)
    assert (tmp_path / "per_coordinate.png").stat().st_size > 0
    assert "measured" in (tmp_path / "per_coordinate.md").read_text()
