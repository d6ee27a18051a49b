"""Per-coordinate calibration: exact privacy (sympy), measured vs derived error ratio, validation, end to end."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy

from dpalg import ZCDP, Compose, InvalidArgument, PureDP
from dpalg.data import as_dataset
from dpalg.mechanisms._per_coord import (
    PerCoordinateGaussian,
    PerCoordinateLaplace,
    box_sensitivities,
    calibrate,
    derived_error_ratio,
)
from dpalg.noise import SeededRandomness

D = 10
BOUNDS = tuple((0, Fraction(1, 2**i)) for i in range(D))
COLS = tuple(f"x{i}" for i in range(D))


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("p", [1, 2, "0.5", 4])
def test_calibration_is_exact_in_sympy(kind: str, p: object) -> None:
    deltas = [Fraction(1, 2**i) for i in range(D)] + [Fraction(3, 7)]
    scales = calibrate(deltas, "0.3", kind=kind, p=p)  # type: ignore[arg-type]
    if kind == "gaussian":
        cost = sum(sympy.Rational(d.numerator, d.denominator) ** 2 / (2 * sympy.Rational(s.numerator, s.denominator)) for d, s in zip(deltas, scales))
    else:
        cost = sum(sympy.Rational(d.numerator, d.denominator) / sympy.Rational(s.numerator, s.denominator) for d, s in zip(deltas, scales))
    assert cost == sympy.Rational(3, 10)
    # the shape is the Lebeda-Pagh exponent (up to the 30-bit rounding of the weights)
    e = 2 / (float(Fraction(str(p))) + 2) if kind == "gaussian" else 1 / (float(Fraction(str(p))) + 1)
    spread = [math.sqrt(float(s)) if kind == "gaussian" else float(s) for s in scales]
    ratios = [sp / float(d) ** e for sp, d in zip(spread, deltas)]
    assert max(ratios) / min(ratios) < 1 + 1e-8


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_node_privacy_exact_with_lattice_sensitivities(relation: str) -> None:
    g = PerCoordinateGaussian(COLS, BOUNDS, rho="0.5", relation=relation)
    lap = PerCoordinateLaplace(COLS, BOUNDS, epsilon=1, relation=relation)
    data = as_dataset({c: np.linspace(-1, 1, 7) for c in COLS})
    tg, tl = g.terms(data), lap.terms(data)
    assert sum(t.sensitivity**2 / (2 * t.param) for t in tg) == g.rho
    assert sum(t.sensitivity / t.param for t in tl) == lap.epsilon
    # the lattice sensitivity covers the real box sensitivity
    for t, d in zip(tg, box_sensitivities(BOUNDS, relation)):  # type: ignore[arg-type]
        assert t.sensitivity * Fraction(2) ** t.k >= d


def test_lattice_sum_shift_is_within_sensitivity_on_neighbours() -> None:
    node = PerCoordinateLaplace(("x", "y"), ((Fraction(-3, 10), 1), (0, Fraction(1, 3))), epsilon=1)
    base = {"x": np.array([0.2, 0.9, -5.0, np.nan]), "y": np.array([0.1, np.nan, 0.3, 2.0])}
    t0 = node.terms(as_dataset(base))
    for extra in [(-0.3, 0.0), (1.0, 1 / 3), (np.nan, np.nan), (0.77, -1.0)]:
        grown = {k: np.append(v, e) for (k, v), e in zip(base.items(), extra)}
        t1 = node.terms(as_dataset(grown))
        for a, b in zip(t0, t1):
            assert abs(a.value - b.value) <= a.sensitivity


def _measured_ratio(per: PerCoordinateGaussian | PerCoordinateLaplace, iso: PerCoordinateGaussian | PerCoordinateLaplace, n: int) -> tuple[float, float]:
    rng = SeededRandomness(7)
    e_per = np.sum(per.sample_noise(n, rng) ** 2, axis=1)
    e_iso = np.sum(iso.sample_noise(n, rng) ** 2, axis=1)
    r = float(e_per.mean() / e_iso.mean())
    se = r * math.sqrt(e_per.var() / (n * e_per.mean() ** 2) + e_iso.var() / (n * e_iso.mean() ** 2))
    return r, se


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_measured_error_ratio_matches_derived(kind: str) -> None:
    if kind == "gaussian":
        per: PerCoordinateGaussian | PerCoordinateLaplace = PerCoordinateGaussian(COLS, BOUNDS, rho=1)
        iso: PerCoordinateGaussian | PerCoordinateLaplace = PerCoordinateGaussian(COLS, BOUNDS, rho=1, isotropic=True)
    else:
        per, iso = PerCoordinateLaplace(COLS, BOUNDS, epsilon=1), PerCoordinateLaplace(COLS, BOUNDS, epsilon=1, isotropic=True)
    derived = derived_error_ratio([Fraction(1, 2**i) for i in range(D)], 2, kind)  # type: ignore[arg-type]
    assert abs(derived - (0.2994 if kind == "gaussian" else 0.4803)) < 5e-4
    r, se = _measured_ratio(per, iso, 10**4)
    assert abs(r - derived) < 4 * se, (r, derived, se)


def test_isotropic_is_better_for_a_ball() -> None:
    # equal box sensitivities: the two calibrations coincide
    assert derived_error_ratio([1] * 5, 2, "gaussian") == pytest.approx(1.0)
    s1 = calibrate([1] * 5, 1, kind="gaussian")
    s2 = calibrate([1] * 5, 1, kind="gaussian", isotropic=True)
    assert s1 == s2


def test_end_to_end() -> None:
    data = {c: np.full(100, 0.25) for c in COLS}
    plan = Compose(PerCoordinateGaussian(COLS, BOUNDS, rho="0.25"), PerCoordinateGaussian(COLS, BOUNDS, rho="0.25", isotropic=True))
    plan.check(ZCDP("0.5"))
    assert plan.run(data, rng=0) is not None
    lap = PerCoordinateLaplace(COLS[:2], BOUNDS[:2], epsilon=10_000)
    Compose(lap).check(PureDP(10_000))
    out = lap.release(as_dataset(data), SeededRandomness(0))
    assert isinstance(out, tuple) and abs(out[0] - 25) < 0.01 and abs(out[1] - 25) < 0.1  # clipped to 1/2


INVALID = [
    (lambda: PerCoordinateGaussian((), (), rho=1), "columns"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 1), (0, 1)), rho=1), "bounds"),
    (lambda: PerCoordinateGaussian(("x",), ((2, 1),), rho=1), "bounds"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 0),), rho=1), "bounds"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 1),), rho=0), "rho"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 1),), rho=1, p=0), "p"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 1),), rho=1, relation="x"), "relation"),
    (lambda: PerCoordinateGaussian(("x",), ((0, 1),), rho=1, isotropic=1), "isotropic"),  # type: ignore[arg-type]
    (lambda: PerCoordinateLaplace(("x",), ((0, 1),), epsilon="-1"), "epsilon"),
    (lambda: PerCoordinateLaplace(("x",), [(0, 1)], epsilon=1), "bounds"),  # type: ignore[arg-type]
    (lambda: calibrate([], 1, kind="laplace"), "deltas"),
    (lambda: calibrate([1], 1, kind="laplace", p=-1), "p"),
]


@pytest.mark.parametrize(("make", "field"), INVALID, ids=[f"{i}-{f}" for i, (_, f) in enumerate(INVALID)])
def test_invalid_arguments(make: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        make()  # type: ignore[operator]
    assert info.value.field == field


def test_example_runs_quick(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "examples" / "per_coordinate.py"
    subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)], check=True, timeout=120)
    assert (tmp_path / "per_coordinate.png").exists() and (tmp_path / "per_coordinate.md").exists()
