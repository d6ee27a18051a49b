"""Exact privacy measures: parsing, validation, composition, conversions."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import ZCDP, ApproxDP, InvalidArgument, PureDP
from dpalg.measures import zcdp_to_approx_epsilon


def test_exact_parsing() -> None:
    assert PureDP("0.1").epsilon == Fraction(1, 10)
    assert PureDP(0.1).epsilon == Fraction(0.1)  # floats convert exactly (binary value)
    assert PureDP(0.1).epsilon != Fraction(1, 10)
    assert PureDP(Decimal("0.25")).epsilon == Fraction(1, 4)
    assert ApproxDP("1", "1e-6").delta == Fraction(1, 10**6)
    assert ZCDP("3/7").rho == Fraction(3, 7)
    assert PureDP(np.int64(2)).epsilon == 2  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: PureDP(-1), "PureDP", "epsilon"),
        (lambda: PureDP(float("nan")), "PureDP", "epsilon"),
        (lambda: PureDP(float("inf")), "PureDP", "epsilon"),
        (lambda: PureDP("abc"), "PureDP", "epsilon"),
        (lambda: PureDP(True), "PureDP", "epsilon"),
        (lambda: PureDP(None), "PureDP", "epsilon"),  # type: ignore[arg-type]
        (lambda: ApproxDP(-1, 0), "ApproxDP", "epsilon"),
        (lambda: ApproxDP(1, 1), "ApproxDP", "delta"),
        (lambda: ApproxDP(1, -0.1), "ApproxDP", "delta"),
        (lambda: ApproxDP(1, float("nan")), "ApproxDP", "delta"),
        (lambda: ZCDP(-0.5), "ZCDP", "rho"),
        (lambda: ZCDP(float("-inf")), "ZCDP", "rho"),
        (lambda: ZCDP(1).to_approx(0), "ZCDP.to_approx", "delta"),
        (lambda: ZCDP(1).to_approx(1), "ZCDP.to_approx", "delta"),
        (lambda: PureDP(1).scale(-1), "scale", "times"),
    ],
)
def test_invalid_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner.startswith(owner)
    assert info.value.field == field
    assert owner in str(info.value) and field in str(info.value)


def test_invalid_argument_is_value_error() -> None:
    with pytest.raises(ValueError):
        PureDP(-1)


def test_frozen_and_hashable() -> None:
    a = PureDP("0.5")
    assert hash(a) == hash(PureDP(Fraction(1, 2)))
    with pytest.raises(AttributeError):
        a.epsilon = Fraction(1)  # type: ignore[misc]


def test_composition_and_comparison() -> None:
    assert ApproxDP(1, "1e-6") + ApproxDP("0.5", "1e-7") == ApproxDP("1.5", "1.1e-6")
    assert ZCDP("0.1") + ZCDP("0.2") == ZCDP("0.3")  # exact: no 0.30000000000000004
    assert PureDP(1).fits_within(PureDP(1))
    assert not ApproxDP(1, "1e-5").fits_within(ApproxDP(2, "1e-6"))
    with pytest.raises(InvalidArgument):
        PureDP(1).fits_within(ZCDP(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        PureDP(1) + ZCDP(1)  # type: ignore[operator]
    with pytest.raises(InvalidArgument):
        ApproxDP(1, "0.6") + ApproxDP(1, "0.5")


def test_conversions() -> None:
    assert PureDP(2).to_approx() == ApproxDP(2, 0)
    assert PureDP(2).to_zcdp() == ZCDP(2)
    assert PureDP("0.1").to_zcdp() == ZCDP("0.005")


# --- the tight zCDP -> (eps, delta) conversion -------------------------------


def _independent_epsilon(rho: float, delta: float) -> float:
    """Independent computation: scipy's bounded scalar minimiser on eps(alpha), float64.

    eps(alpha) = alpha*rho + (ln(1/delta) + (alpha-1) ln(1-1/alpha) - ln(alpha)) / (alpha-1)
    is the CKS 2020 (Cor. 13) bound solved for eps; a different optimiser, a
    different arithmetic and a log-parametrised alpha.
    """
    from scipy.optimize import minimize_scalar

    lid = math.log(1 / delta)

    def eps_of(log_am1: float) -> float:
        am1 = math.exp(log_am1)
        alpha = 1 + am1
        return alpha * rho + (lid + am1 * math.log1p(-1 / alpha) - math.log(alpha)) / am1

    res = minimize_scalar(eps_of, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12})
    return max(0.0, float(res.fun))


def test_reference_value() -> None:
    eps = ZCDP("0.5").to_approx("1e-6").epsilon
    # the optimum to 20 digits (mpmath findroot on d eps/d alpha, 200 bits): 5.2215344445301690442...
    assert eps >= Fraction("5.2215344445301690442")
    assert abs(float(eps) - 5.22153444453017) / 5.22153444453017 < 1e-12
    simple = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
    assert abs(simple - 5.7565) < 1e-4 and float(eps) < simple


@pytest.mark.parametrize("rho", ["0.001", "0.01", "0.1", "0.5", "1", "5", "50"])
@pytest.mark.parametrize("delta", ["1e-10", "1e-6", "1e-3", "0.05"])
def test_tight_conversion_against_independent(rho: str, delta: str) -> None:
    ours = zcdp_to_approx_epsilon(Fraction(rho), Fraction(delta))
    ref = _independent_epsilon(float(rho), float(delta))
    # never below the optimum (up to float64 evaluation error of the reference)
    # and within a relative 1e-12 of it
    assert float(ours) >= ref * (1 - 1e-14) - 1e-300
    assert float(ours) <= ref * (1 + 1e-12) + 1e-15


def test_conversion_is_valid_for_gaussian_mechanism() -> None:
    # The Gaussian mechanism with sensitivity 1 and sigma has rho = 1/(2 sigma^2); its exact
    # privacy profile (Balle-Wang 2018) must satisfy delta(eps_ours) <= delta.
    from scipy.stats import norm

    for sigma in (0.8, 1.0, 3.0, 10.0):
        rho = Fraction(1) / (2 * Fraction(sigma) ** 2)
        for delta in (1e-6, 1e-3):
            eps = float(zcdp_to_approx_epsilon(rho, Fraction(delta)))
            exact_delta = norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * norm.cdf(-1 / (2 * sigma) - eps * sigma)
            assert exact_delta <= delta * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.fractions(min_value=Fraction(1, 1000), max_value=20),
    st.fractions(min_value=Fraction(1, 1000), max_value=20),
    st.sampled_from([Fraction(1, 10**9), Fraction(1, 10**6), Fraction(1, 100)]),
)
def test_conversion_monotone(r1: Fraction, r2: Fraction, delta: Fraction) -> None:
    lo, hi = sorted((r1, r2))
    assert zcdp_to_approx_epsilon(lo, delta) <= zcdp_to_approx_epsilon(hi, delta)
    assert PureDP(lo).to_zcdp().rho <= PureDP(hi).to_zcdp().rho


def test_zero_rho() -> None:
    assert ZCDP(0).to_approx("1e-9") == ApproxDP(0, "1e-9")


# --- ZCDP.for_approx (issue 18, item 5) ------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "delta"), [(1, "1e-6"), ("0.1", "1e-9"), (5, "1/3"), ("1/1000", "1e-5")])
def test_for_approx_fits_and_is_the_largest_on_its_grid(epsilon: object, delta: str) -> None:
    eps, d = Fraction(str(epsilon)), Fraction(delta)
    budget = ZCDP.for_approx(epsilon, delta)  # type: ignore[arg-type]
    assert budget.to_approx(delta).epsilon <= eps
    step = eps / 2**40
    assert zcdp_to_approx_epsilon(budget.rho + step, d) > eps  # one grid step more does not fit
    # it beats the simple conversion rho + 2 sqrt(rho ln(1/delta)) (Bun-Steinke 2016, Prop. 1.3)
    simple = (math.sqrt(math.log(1 / float(d)) + float(eps)) - math.sqrt(math.log(1 / float(d)))) ** 2
    assert float(budget.rho) >= simple


@pytest.mark.parametrize(("epsilon", "delta", "field"), [(0, "1e-6", "epsilon"), (-1, "1e-6", "epsilon"), (1, 0, "delta"), (1, 1, "delta"), ("x", "1e-6", "epsilon")])
def test_for_approx_refuses_bad_targets(epsilon: object, delta: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        ZCDP.for_approx(epsilon, delta)  # type: ignore[arg-type]
    assert info.value.field == field
