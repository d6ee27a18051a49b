"""BoundedLS (seed 000 Theorem 1): exact tail, monotonicity checks, coverage, lattice privacy, end to end."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy

from dpalg import ApproxDP, Compose, InvalidArgument
from dpalg.data import Dataset, as_dataset
from dpalg.graph import PureToApprox
from dpalg.mechanisms.bounded_ls._bounded_ls import (
    BoundedLS,
    NoisyCount,
    check_monotone,
    exp_neg_upper,
    lattice_release,
    lattice_terms,
    round_up_bits,
    tail_margin,
)
from dpalg.mechanisms.bounded_ls._ratio import PrivateRatio
from dpalg.mechanisms.bounded_ls._ratio_sensitivity import ratio_local_sensitivity
from dpalg.noise import SeededRandomness, discrete_laplace
from dpalg.release import BOTTOM
from dpalg.release._serialize import CallableStub, decode, encode

COUNTS = (NoisyCount("a", where="in_a"), NoisyCount("b"))
RATIO_BOUND = "Max(a_hi, b_hi - a_lo)/(b_lo**2 - b_lo)"


def _node(**kw: object) -> BoundedLS:
    args: dict[str, object] = dict(
        value="a/b", bound=RATIO_BOUND, counts=COUNTS, epsilon_bound="1", epsilon_release="1", delta="0.05", domain={"b": 2}
    )
    args.update(kw)
    return BoundedLS(**args)  # type: ignore[arg-type]


# --- exact arithmetic ---------------------------------------------------------------------


def test_discrete_laplace_tail_formula_symbolic() -> None:
    """P[Z >= m] = p^m/(1+p) for the pmf (1-p)/(1+p) p^|z|, p = e^{-1/t} = e^{-s}."""
    s, z = sympy.symbols("s z", positive=True)
    m = sympy.Symbol("m", integer=True, nonnegative=True)
    zi = sympy.Symbol("zi", integer=True)
    p = sympy.exp(-s)
    pmf = (1 - p) / (1 + p) * p**z
    assert sympy.simplify(sympy.summation(pmf, (z, m, sympy.oo)) - p**m / (1 + p)) == 0
    # and the pmf is normalised: P[0] + 2 P[Z >= 1] = 1
    assert sympy.simplify(pmf.subs(z, 0) + 2 * sympy.summation(pmf.subs(z, zi), (zi, 1, sympy.oo))) == 1


@pytest.mark.parametrize("x", [Fraction(1, 1000), Fraction(1, 20), Fraction(1), Fraction(7, 3), Fraction(50)])
def test_exp_neg_upper_is_a_tight_upper_bound(x: Fraction) -> None:
    mpmath.mp.dps = 60
    exact = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator)
    u = exp_neg_upper(x)
    assert mpmath.mpf(u.numerator) / u.denominator >= exact
    assert mpmath.mpf(u.numerator) / u.denominator - exact <= exact * mpmath.mpf(2) ** -80


@pytest.mark.parametrize(("scale", "delta"), [(1, "0.01"), (2, "1e-6"), ("20", "0.0125"), ("3/7", "0.3"), (200, "1e-9")])
def test_tail_margin_is_minimal_and_covers(scale: int | str, delta: str) -> None:
    mpmath.mp.dps = 60
    t = Fraction(scale)
    d = mpmath.mpf(Fraction(delta).numerator) / Fraction(delta).denominator
    p = mpmath.exp(-1 / (mpmath.mpf(t.numerator) / t.denominator))
    w = tail_margin(t, delta)

    def upper_tail(m: int) -> mpmath.mpf:
        return p**m / (1 + p)  # P[Z >= m]

    assert upper_tail(w + 1) <= d  # P[Z > w] <= δ
    assert w == 0 or upper_tail(w) > d  # minimal


def test_tail_margin_empirical() -> None:
    w = tail_margin(10, "0.01")
    z = discrete_laplace(10, size=200_000, rng=SeededRandomness(3))
    frac = float(np.mean(z > w))
    assert frac <= 0.01 + 4 * math.sqrt(0.01 * 0.99 / 200_000)
    assert float(np.mean(z > w - 1)) > 0.01 - 4 * math.sqrt(0.01 * 0.99 / 200_000)  # w is not wasteful


def test_round_up_bits() -> None:
    for x in [Fraction(1, 3), Fraction(10**9 + 7, 13), Fraction(1, 2**40)]:
        r = round_up_bits(x, 8)
        assert x <= r < x * (1 + Fraction(1, 2**7))
    assert round_up_bits(Fraction(0)) == 0


# --- the symbolic monotonicity check ------------------------------------------------------


@pytest.mark.parametrize(
    ("bound", "symbols", "lower", "status"),
    [
        ("1/(b_lo - 1)", ["b_lo"], {"b_lo": 2}, "proven"),
        (RATIO_BOUND, ["a_hi", "a_lo", "b_hi", "b_lo"], {"b_lo": 2}, "proven"),
        ("a_hi + sqrt(b_hi)", ["a_hi", "b_hi"], {"b_hi": 1}, "proven"),
        ("b_lo", ["b_lo"], {}, "refuted"),  # grows with a lower bound
        ("1/(a_hi + 1)", ["a_hi"], {}, "refuted"),  # falls with an upper bound
        ("(b_hi - a_lo)/(b_lo**2 - b_lo)", ["a_lo", "b_hi", "b_lo"], {"b_lo": 2}, "refuted"),  # negative numerator
        # the seed listing's swap, written as an expression: a lower bound where an upper one is needed
        ("Max(a_lo, b_hi - a_hi)/(b_lo**2 - b_lo)", ["a_hi", "a_lo", "b_hi", "b_lo"], {"b_lo": 2}, "refuted"),
        ("1/(2*sqrt(b_lo - 1))", ["b_lo"], {"b_lo": 2}, "proven"),
        ("a_hi*sin(a_hi)", ["a_hi"], {}, "refuted"),
        ("a_hi + exp(-a_hi)", ["a_hi"], {}, "unproven"),  # true, but sympy cannot decide the sign of 1 - exp(-u)
    ],
)
def test_check_monotone_table(bound: str, symbols: list[str], lower: dict[str, int], status: str) -> None:
    result = check_monotone(bound, symbols, lower)
    assert result.status == status, result
    if status == "refuted":
        assert result.counterexample is not None and " = " in result.counterexample


def test_check_monotone_python_function_is_unproven_or_refuted() -> None:
    def good(v: Mapping[str, Fraction]) -> Fraction:
        return v["a_hi"] / (v["b_lo"] - 1)

    def bad(v: Mapping[str, Fraction]) -> Fraction:
        return v["a_lo"] / (v["b_lo"] - 1)

    assert check_monotone(good, ["a_hi", "b_lo"], {"b_lo": 2}).status == "unproven"
    assert check_monotone(bad, ["a_lo", "b_lo"], {"b_lo": 2}).status == "refuted"


def test_node_records_note_refuses_refuted_and_strict() -> None:
    node = _node()
    assert node.privacy().notes == ("monotonicity of the LS bound: proven: " + "; ".join(
        f"{w} in {s}: proven" for w, s in [("non-decreasing", "a_hi"), ("non-increasing", "a_lo"), ("non-decreasing", "b_hi"), ("non-increasing", "b_lo")]
    ),)
    with pytest.raises(InvalidArgument, match="counterexample"):
        _node(bound="a_lo/(b_lo**2 - b_lo)")
    unproven = _node(bound="(a_hi + exp(-a_hi))/(b_lo - 1)")
    assert "unproven" in unproven.privacy().notes[0]
    with pytest.raises(InvalidArgument, match="strict"):
        _node(bound="(a_hi + exp(-a_hi))/(b_lo - 1)", strict=True)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"epsilon_bound": 0}, "epsilon_bound"),
        ({"epsilon_release": "-1"}, "epsilon_release"),
        ({"delta": 0}, "delta"),
        ({"delta": 1}, "delta"),
        ({"delta": "x"}, "delta"),
        ({"counts": ()}, "counts"),
        ({"counts": (NoisyCount("a"), NoisyCount("a"))}, "counts"),
        ({"counts": ("a",)}, "counts[0]"),
        ({"domain": {"c": 2}}, "domain"),
        ({"domain": {"b": -1}}, "domain"),
        ({"bound": "c_hi"}, "bound"),
        ({"bound": "a_hi +"}, "bound"),
        ({"bound": 3}, "bound"),
        ({"value": "a/c"}, "value"),
        ({"value": 1.5}, "value"),
        ({"global_sensitivity": 0}, "global_sensitivity"),
        ({"strict": "yes"}, "strict"),
        ({"relation": "swap"}, "relation"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        _node(**kwargs)
    assert info.value.owner == "BoundedLS"
    assert info.value.field == field


@pytest.mark.parametrize(("kwargs", "field"), [({"name": "a_lo"}, "name"), ({"name": "1a"}, "name"), ({"name": "a", "where": ""}, "where")])
def test_noisy_count_invalid(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        NoisyCount(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


# --- coverage and the lattice release ------------------------------------------------------


def test_coverage_of_the_general_node() -> None:
    """Over 10**5 runs ĝ < LS(a/b) happens in at most a δ fraction (binomial margin)."""
    node = _node()
    n, a, b = 100_000, 0, 100  # a = 0 is the hardest case of the ratio bound
    rng = SeededRandomness(11)
    t = node.noise_scale()
    noisy_a = (a + discrete_laplace(t, size=n, rng=rng)).tolist()
    noisy_b = (b + discrete_laplace(t, size=n, rng=rng)).tolist()
    ls = ratio_local_sensitivity(a, b)
    bound = sympy.lambdify(sympy.symbols("a_hi a_lo b_hi b_lo"), sympy.sympify(RATIO_BOUND), "math")
    w = node.margin()
    fails = 0
    for an, bn in zip(noisy_a, noisy_b):
        if bn - w < 2:
            continue  # bail-out (no bound used)
        a_lo, b_lo = max(an - w, 0), bn - w
        g = Fraction(max(an + w, bn + w - a_lo), b_lo * b_lo - b_lo)  # the expression, exactly
        assert abs(float(g) - bound(an + w, a_lo, bn + w, b_lo)) <= 1e-12
        fails += g < ls
    delta = float(node.delta)
    assert fails <= n * delta + 4 * math.sqrt(n * delta * (1 - delta)), fails
    # the node's own post-processing agrees with the hand computation
    assert node.bound_from_noisy({"a": 5, "b": 300}) == Fraction(max(5 + w, 300 + w), (300 - w) ** 2 - (300 - w))
    assert node.bound_from_noisy({"a": 5, "b": w + 1}) is None  # domain missed, no GS: nothing to release


def test_lattice_release_privacy_exact() -> None:
    """Given ĝ, every pair of values within ĝ has pmf ratio <= e^{ε₂} (exact, lattice units)."""
    eps = Fraction(1, 2)
    rng = np.random.default_rng(5)  # only picks test cases, never noise
    for _ in range(500):
        g = Fraction(int(rng.integers(1, 10**6)), int(rng.integers(1, 10**6)))
        v = Fraction(int(rng.integers(-(10**6), 10**6)), int(rng.integers(1, 10**3)))
        for v2 in (v + g, v - g, v + g * Fraction(int(rng.integers(0, 1000)), 1000)):
            m, k, t = lattice_terms(v, g, eps)
            m2, k2, t2 = lattice_terms(v2, g, eps)
            assert (k, t) == (k2, t2)  # the lattice and scale depend on ĝ only
            assert Fraction(abs(m - m2)) / t <= eps  # log pmf ratio at any output
    out = lattice_release([Fraction(1, 3)] * 3, [Fraction(1, 100)] * 3, Fraction(1), SeededRandomness(0))
    _, k, _ = lattice_terms(Fraction(1, 3), Fraction(1, 100), Fraction(1))
    assert all((x / Fraction(2) ** k).denominator == 1 for x in out)


# --- end to end ------------------------------------------------------------------------------


def test_end_to_end_compose() -> None:
    ratio = PrivateRatio("in_a")
    plan = Compose(
        _node(epsilon_bound="0.2", epsilon_release="0.8", delta="1e-7"),
        _node(epsilon_bound="0.2", epsilon_release="0.8", delta="1e-7", global_sensitivity=1),
        ratio.bounded_ls("0.2", "0.8", "1e-7"),
        PureToApprox(ratio.ksw(1)),
    )
    plan.check(ApproxDP(4, "3e-7"))
    data = as_dataset({"in_a": np.r_[np.ones(3000), np.zeros(7000)]})
    release = plan.run(data, rng=SeededRandomness(0))
    values = release.value
    assert isinstance(values, tuple) and len(values) == 4
    for v in values:
        assert isinstance(v, float) and abs(v - 0.3) < 0.05
    checks = release.certificate["symbolic_checks"]
    assert isinstance(checks, list)
    assert any("monotonicity of the LS bound: proven" in str(n) for n in checks)
    # tiny data: the domain b >= 2 is missed -> BOTTOM without GS, a GS-scaled release with it
    small = Compose(_node(), _node(global_sensitivity=1))
    small.check(ApproxDP(4, "0.1"))
    out = small.run(as_dataset({"in_a": np.array([1.0])}), rng=SeededRandomness(1)).value
    assert isinstance(out, tuple)
    assert out[0] is BOTTOM and isinstance(out[1], float)


def test_python_function_bound_and_value() -> None:
    def value(data: object) -> Fraction:
        return Fraction(7)

    def bound(v: Mapping[str, Fraction]) -> Fraction:
        return 1 / (v["b_lo"] - 1) if v["b_lo"] > 1 else Fraction(1)

    node = BoundedLS(value, bound, (NoisyCount("b"),), epsilon_bound=1, epsilon_release=1, delta="1e-3", domain={"b": 2})
    assert node.interval_ends() == ("b_hi", "b_lo")
    assert "unproven" in node.privacy().notes[0]
    Compose(node).check(ApproxDP(2, "1e-3"))


def test_count_names_are_plain_symbols() -> None:
    """Count names such as N, E, S or I are symbols, never sympy constants or functions."""
    node = BoundedLS("E/N", "1/(N_lo - 1)", (NoisyCount("E", where="in_a"), NoisyCount("N")),
                     epsilon_bound=1, epsilon_release=1, delta="1e-3", domain={"N": 2})  # fmt: skip
    assert node.symbols_used() == ("N_lo",)
    assert node._f(as_dataset({"in_a": np.array([1.0, 0.0, 0.0])}), {"E": 1, "N": 3}) == Fraction(1, 3)


def test_irrational_value_is_covered_by_the_slack() -> None:
    """f = sqrt(b): LS_ar = sqrt(b) - sqrt(b - 1) <= 1/(2 sqrt(b - 1)). The value is evaluated
    within 10**-60 and the release widens ĝ by 2·10**-60 (a constant of the expression)."""
    node = BoundedLS("sqrt(b)", "1/(2*sqrt(b_lo - 1))", (NoisyCount("b"),), epsilon_bound=1, epsilon_release=1,
                     delta="1e-3", domain={"b": 2}, strict=True)  # fmt: skip
    assert node.value_slack() == Fraction(2, 10**60)
    assert _node().value_slack() == 0  # a/b: a rational function, always exact
    data = as_dataset({"x": np.zeros(5)})

    def mp(x: Fraction) -> mpmath.mpf:
        return mpmath.mpf(x.numerator) / x.denominator

    with mpmath.workdps(100):
        for b in (2, 3, 10, 10**6, 10**30):
            assert abs(mp(node._f(data, {"b": b})) - mpmath.sqrt(b)) <= mpmath.mpf(10) ** -60
    # the release step given ĝ >= LS is ε₂-DP for the evaluated values (exact, lattice units)
    for b in range(3, 60):
        g = node.bound_from_noisy({"b": b + node.margin()})  # an interval end exactly at the truth
        assert g is not None and mp(g) >= mpmath.sqrt(b) - mpmath.sqrt(b - 1)
        m, k, t = lattice_terms(node._f(data, {"b": b}), g + node.value_slack(), node.epsilon_release)
        for b1 in (b - 1, b + 1):
            m1, k1, t1 = lattice_terms(node._f(data, {"b": b1}), g + node.value_slack(), node.epsilon_release)
            assert (k1, t1) == (k, t) and Fraction(abs(m - m1)) / t <= node.epsilon_release
    plan = Compose(node)
    plan.check(ApproxDP(2, "1e-3"))
    out = plan.run(as_dataset({"x": np.zeros(400)}), rng=SeededRandomness(2)).value
    assert isinstance(out, tuple) and isinstance(out[0], float) and abs(out[0] - 20) < 1


def test_certificate_round_trip_and_recorded_callables() -> None:
    """A plan rebuilt from its certificate has the same node; a recorded Python bound becomes
    a stub that cannot run: the node is rebuilt as unproven and its cost is unchanged."""
    node = _node(global_sensitivity=1)
    assert decode(encode(node)) == node

    def bound(v: Mapping[str, Fraction]) -> Fraction:
        return 1 / (v["b_lo"] - 1)

    with_function = BoundedLS("a/b", bound, COUNTS, epsilon_bound=1, epsilon_release=1, delta="1e-3", domain={"b": 2})
    rebuilt = decode(encode(with_function))
    assert isinstance(rebuilt, BoundedLS) and isinstance(rebuilt.bound, CallableStub)
    assert rebuilt.cost() == with_function.cost() and "unproven" in rebuilt.privacy().notes[0]
    assert rebuilt.bound_from_noisy({"a": 5, "b": 500}) is None  # the stub never yields a bound


# --- user functions fail closed (issue 14, section 3.6) -------------------------------------


def _bl(value: object, bound: object = "1/(b_lo - 1)", **kw: object) -> BoundedLS:
    args: dict[str, object] = dict(value=value, bound=bound, counts=(NoisyCount("b"),), epsilon_bound=1, epsilon_release=1,
                                   delta="1e-3", domain={"b": 2})  # fmt: skip
    return BoundedLS(**(args | kw))  # type: ignore[arg-type]


def _value_raises(data: Dataset) -> Fraction:
    raise KeyError("secret 42")


def _value_str(data: Dataset) -> object:
    return "1/2"


def _value_nan(data: Dataset) -> float:
    return float("nan")


def _value_inf(data: Dataset) -> float:
    return float("inf")


@pytest.mark.parametrize(
    ("fn", "expected"),
    [(_value_raises, "raised KeyError"), (_value_str, "returned a str"), (_value_nan, "non-finite"), (_value_inf, "non-finite")],
)
def test_a_value_function_failing_on_the_trial_dataset_is_refused(fn: object, expected: str) -> None:
    """Old code accepted these and raised (or released garbage) after the charge."""
    with pytest.raises(InvalidArgument) as info:
        _bl(fn)
    message = str(info.value)
    assert info.value.field == "value" and expected in message and getattr(fn, "__name__") in message
    assert "secret" not in message and "42" not in message


def _fails_on_real_data(kind: str) -> Callable[[Dataset], object]:
    def value(data: Dataset) -> object:
        if data.n_rows <= 8:  # the public trial dataset has 8 rows
            return Fraction(3)
        if kind == "raise":
            raise TypeError("secret")
        return {"str": "3", "nan": float("nan"), "inf": float("inf"), "none": None}[kind]

    return value


@pytest.mark.parametrize("kind", ["raise", "str", "nan", "inf", "none"])
def test_a_value_function_failing_on_real_data_releases_around_zero(kind: str) -> None:
    data = as_dataset({"x": np.zeros(500)})
    failing = _bl(_fails_on_real_data(kind))
    zero = _bl(lambda d: Fraction(0))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = failing.release(data, SeededRandomness(3))
    assert not seen and out == zero.release(data, SeededRandomness(3))


def test_a_bound_function_failing_at_release_falls_back_to_the_global_sensitivity() -> None:
    """Old code: _evaluate caught only ArithmeticError/ValueError, so a TypeError escaped after the charge."""

    def bound(v: Mapping[str, Fraction]) -> object:
        if v["b_lo"] > 100:  # never at the trial point or on the check's grid
            raise TypeError("secret")
        return 1 / (v["b_lo"] - 1)

    node = _bl("b", bound, global_sensitivity=1)
    assert node.bound_from_noisy({"b": 10_000}) == 1
    assert _bl("b", bound).bound_from_noisy({"b": 10_000}) is None  # no GS: BOTTOM
    out = node.release(as_dataset({"x": np.zeros(10_000)}), SeededRandomness(0))
    assert isinstance(out, float)


def test_a_bound_function_failing_at_the_trial_point_is_refused() -> None:
    def bound(v: Mapping[str, Fraction]) -> object:
        return v["c_lo"]  # KeyError: not a symbol of this node

    with pytest.raises(InvalidArgument) as info:
        _bl("b", bound)
    assert info.value.field == "bound" and "KeyError" in str(info.value) and "b_lo: 6" in str(info.value)
    with pytest.raises(InvalidArgument) as info:
        _bl("b", lambda v: "1")
    assert info.value.field == "bound" and "returned a str" in str(info.value)


def test_a_huge_value_releases_infinity_not_an_overflow_error() -> None:
    def huge(data: Dataset) -> int:
        return 10**400 if data.n_rows > 8 else 1

    out = _bl(huge).release(as_dataset({"x": np.zeros(100)}), SeededRandomness(0))
    assert out == math.inf


def test_value_function_columns_are_discovered_and_recorded() -> None:
    def share(data: Dataset) -> Fraction:
        return Fraction(int(np.nansum(data.numeric("in_a") > 0) + np.nansum(data.numeric("w") > 0)), max(1, data.n_rows))

    node = BoundedLS(share, "1/(b_lo - 1)", (NoisyCount("a", where="in_a"), NoisyCount("b")), epsilon_bound=1,
                     epsilon_release=1, delta="1e-3", domain={"b": 2})  # fmt: skip
    assert node.value_reads == ("w",)
    assert {(u.name, u.role) for u in node.columns()} == {("in_a", "numeric"), ("w", "key")}
    rebuilt = decode(encode(node))
    assert isinstance(rebuilt, BoundedLS) and isinstance(rebuilt.value, CallableStub) and rebuilt.columns() == node.columns()
    with pytest.raises(InvalidArgument) as info:
        BoundedLS(share, "1/(b_lo - 1)", (NoisyCount("a", where="in_a"), NoisyCount("b")), epsilon_bound=1,
                  epsilon_release=1, delta="1e-3", domain={"b": 2}, value_reads=("v",))  # fmt: skip
    assert "'w'" in str(info.value) and "not declared" in str(info.value)
    with pytest.raises(InvalidArgument):
        _bl("b", value_reads=("w",))
