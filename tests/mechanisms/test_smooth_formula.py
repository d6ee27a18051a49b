"""SmoothBound over a user-defined statistic (issue 18 item 2) and over counts and sums (item 1).

The user formula is smoothed over the dataset size: ``S(n) = max_m e^{−β|m−n|} min(F(0, m), T)``.
Checked here: the interval upper bounds against exact sympy values, the proof that
``F(0, n)`` is non-increasing, β-smoothness and the upper bound on brute-force LS_0,
broken variants caught, the exact hockey-stick divergence of the release on a tiny
domain (and a broken one caught), refusals, certificates and totality.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import attrs
import numpy as np
import numpy.typing as npt
import pytest
import sympy

from dpalg import ApproxDP, Clip, InvalidArgument, PureDP, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms import LocalSensAtDistance, SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms._common.ls_formula import _parsed
from dpalg.mechanisms.smooth._formula import FormulaEnvelope, envelope_of, formula_smooth_bound
from dpalg.mechanisms.smooth._kinds import constant_center_and_scale, function_center_and_scale
from dpalg.mechanisms.smooth._profile import truncated_smooth_bound
from dpalg.mechanisms._common.user_function import statistic_value
from dpalg.noise import SeededRandomness
from dpalg.noise._admissible import Admissibility, LaplaceNoise
from dpalg.release import audit_certificate
from dpalg.sensitivity._formula_bounds import check_nonincreasing_in_n, upper_values
from dpalg.sensitivity._ptr_condition import formula_values

R = "(log(1 + upper) - log(1 + lower))"
FORMULA = f"{R}/Max(n - k, 1) + log(1 + upper)/2**45"
N = sympy.Symbol("n", integer=True, nonnegative=True)


def log1p_mean(x: npt.NDArray[np.float64]) -> float:
    return float(np.mean(np.log1p(x)))


def _query(lower: int = 0, upper: int = 3) -> Query:
    return Query.function(log1p_mean, column="v") | Clip(lower, upper)


def _target(formula: str = FORMULA, upper: int = 3) -> LocalSensAtDistance:
    return LocalSensAtDistance(_query(0, upper), formula)


def _expr(formula: str, lower: int = 0, upper: int = 10) -> sympy.Expr:
    """The parsed formula with the clip bounds substituted (no PTR checks: any formula of the grammar)."""
    expr = _parsed(formula, ()).subs({sympy.Symbol("lower", real=True): lower, sympy.Symbol("upper", real=True): upper})
    assert isinstance(expr, sympy.Expr)
    return expr


# --- rigorous upper bounds and the proof in n --------------------------------------------------

FORMULAS = [
    FORMULA,
    "(upper + 1/3)/sqrt(Max(n - k, 1))",
    "upper*2**k/sqrt(n + 1)",
    "(upper - lower)/Max(n - k, 1)",
    "Min(upper, 100/Max(n - k, 1))*(k + 1)",
    "upper*exp(k/10)/(n + 1)**2 + 3*2**(-n)",
    "log(2 + k)*(upper + 1/3)/(n + 1) + sqrt(2)/(n + 7)",
    "floor(upper/(n + 1))*(k + 1) + 1/(n + 1)",
]


@pytest.mark.parametrize("formula", FORMULAS)
def test_interval_bound_is_above_the_exact_value_and_tight(formula: str) -> None:
    expr = _expr(formula)
    ks, ns = np.meshgrid(np.arange(0, 40, 7), np.array([0, 1, 2, 3, 5, 17, 100, 999, 10**6]))
    up = upper_values(expr, ks, ns)
    k, n = sympy.Symbol("k"), sympy.Symbol("n", integer=True, nonnegative=True)
    for kk, nn, u in zip(ks.ravel(), ns.ravel(), up.ravel()):
        # n as a 100-digit Float (exact for these integers): 2**(-n) at n = 10**6 is not built as an exact rational
        exact = sympy.N(expr.xreplace({k: sympy.Integer(int(kk)), n: sympy.Float(int(nn), 100)}), 60)
        assert sympy.Float(u, 60) >= exact, (formula, kk, nn)
        assert float(u) <= float(exact) * (1 + 2.0**-38) + 1e-300  # tight: a few ulp of widening only
    assert (up >= formula_values(expr, ks.astype(float), ns.astype(float))).all()


def test_undefined_points_are_plus_infinity_never_a_raise() -> None:
    n = N
    for expr in (1 / (n - 2), sympy.log(n - 2), sympy.sqrt(n - 5), 3 / (2 * n - 4) + 1):
        assert upper_values(expr, 0, [2, 0])[0] == math.inf


#: formulas a user function can carry (proven monotone in k and the neighbour condition, not refuted)
NODE_FORMULAS = [FORMULA, "(upper - lower)/Max(n - k, 1)", "Min(upper, 100/Max(n - k, 1))*(k + 1)", "(upper + 1/3)/sqrt(Max(n - k, 1))"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_common_formulas_are_proven_non_increasing_in_n(formula: str) -> None:
    expr0 = _expr(formula).xreplace({sympy.Symbol("k"): 0})
    assert check_nonincreasing_in_n(expr0).status == "proven"


@pytest.mark.parametrize(("expr", "status"), [
    (N / (N + 1), "refuted"),
    (sympy.Integer(5) - sympy.Min(N, 5), "unproven"),  # non-increasing and >= 0, but no composition rule covers it
    (sympy.sin(N) + 2, "refuted"),
    (sympy.Integer(5), "proven"),
])  # fmt: skip
def test_non_increasing_verdicts(expr: sympy.Expr, status: str) -> None:
    assert check_nonincreasing_in_n(expr).status == status


# --- the envelope: upper bound, beta-smooth, broken variants ----------------------------------


def _bound(env: FormulaEnvelope, n: int, beta: float, levels: int) -> float:
    return float(formula_smooth_bound(env, n, beta, levels))


@pytest.mark.parametrize("formula", NODE_FORMULAS)
@pytest.mark.parametrize(("beta", "levels"), [(0.01, 40), (0.3, 5), (2.0, 3)])
def test_envelope_is_beta_smooth_and_above_f0(formula: str, beta: float, levels: int) -> None:
    env = envelope_of(LocalSensAtDistance(_query(0, 10), formula), "test")
    ns = np.arange(0, 400)
    s = np.array([_bound(env, int(n), beta, levels) for n in ns])
    f0 = formula_values(env.expr0, np.zeros(ns.size), ns.astype(float))
    assert (s >= f0).all()
    ratio = math.exp(beta)
    assert (s[1:] <= ratio * s[:-1]).all() and (s[:-1] <= ratio * s[1:]).all()


def _unsmoothed(env: FormulaEnvelope, n: int, beta: float, levels: int) -> float:
    """Broken: the noise follows F(0, n) itself."""
    return float(upper_values(env.expr0, 0, [n])[0])


def _no_top(env: FormulaEnvelope, n: int, beta: float, levels: int) -> float:
    """Broken: the window without the public constant beyond it."""
    m = np.arange(max(n - levels, 0), n + levels + 1)
    h = upper_values(env.expr0, 0, m.astype(float))
    return float(np.max(h * np.exp(-beta * np.abs(m - n))))


@pytest.mark.parametrize("broken", [_unsmoothed, _no_top])
def test_broken_envelopes_fail_the_smoothness_check(broken: object) -> None:
    env = envelope_of(_target(), "test")
    beta, levels = 0.05, 4
    s = np.array([broken(env, n, beta, levels) for n in range(60)])  # type: ignore[operator]
    ratio = math.exp(beta)
    assert not ((s[1:] <= ratio * s[:-1]).all() and (s[:-1] <= ratio * s[1:]).all())


DOMAIN = (0.0, 1.0, 2.0, 3.0)


def _ls0(x: tuple[float, ...]) -> float:
    """Brute-force LS_0 of f̃ under add/remove over the domain."""
    fx = statistic_value(log1p_mean, np.array(x), 0.0)
    ys = [x[:i] + x[i + 1 :] for i in range(len(x))] + [tuple(sorted(x + (v,))) for v in DOMAIN]
    return max(abs(fx - statistic_value(log1p_mean, np.array(y), 0.0)) for y in ys)


def test_envelope_is_above_the_brute_force_local_sensitivity() -> None:
    env = envelope_of(_target(), "test")
    for n in range(6):
        for x in itertools.combinations_with_replacement(DOMAIN, n):
            assert _bound(env, n, 0.1, 10) >= _ls0(x)


# --- exact privacy of the release on a tiny domain ---------------------------------------------

K = -3


def _laplace_cdf(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))


def _pmf(a: int, scale: Fraction, js: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    b = float(scale * 2**-K)
    out: npt.NDArray[np.float64] = _laplace_cdf((js - a + 0.5) / b) - _laplace_cdf((js - a - 0.5) / b)
    return out


def _worst_hockey(c: Admissibility, centre: object, n_max: int = 3) -> float:
    data = {x: centre(x) for n in range(n_max + 2) for x in itertools.combinations_with_replacement(DOMAIN, n)}  # type: ignore[operator]
    js = np.arange(-4000, 4000, dtype=np.float64)
    pmfs = {x: _pmf(a, s, js) for x, (a, s) in data.items()}
    worst = 0.0
    for x in (x for x in pmfs if len(x) <= n_max):
        for v in DOMAIN:
            y = tuple(sorted(x + (v,)))
            for p1, p2 in ((pmfs[x], pmfs[y]), (pmfs[y], pmfs[x])):
                worst = max(worst, float(np.sum(np.maximum(0.0, p1 - math.exp(float(c.eps)) * p2))))
    return worst


def _function_centre(c: Admissibility) -> object:
    env = envelope_of(_target(), "test")
    beta = float(c.beta)
    return lambda x: function_center_and_scale(_query(), env, as_dataset({"v": np.array(x)}), c, K, beta, 30)


def test_function_release_is_eps_delta_dp_exactly_on_a_tiny_domain() -> None:
    c = LaplaceNoise().constants(1, "0.001")
    assert _worst_hockey(c, _function_centre(c)) <= float(c.delta)


def test_function_release_with_unsmoothed_noise_is_caught() -> None:
    c = LaplaceNoise().constants(1, "0.001")
    broken = attrs.evolve(c, beta=Fraction(20))  # the noise follows F(0, n)
    assert _worst_hockey(c, _function_centre(broken)) > 10 * float(c.delta)


@pytest.mark.parametrize("query", [Query.count(), Query.count("v"), Query.sum("v") | Clip(0, 3)])
def test_count_and_sum_releases_are_eps_delta_dp_exactly(query: Query) -> None:
    c = LaplaceNoise().constants(1, "0.001")

    def centre(x: tuple[float, ...]) -> tuple[int, Fraction]:
        return constant_center_and_scale(query, "add_remove", as_dataset({"v": np.array(x)}), c, K)

    assert _worst_hockey(c, centre) <= float(c.delta)
    broken = attrs.evolve(c, alpha=4 * c.alpha)  # a quarter of the noise
    assert _worst_hockey(c, lambda x: constant_center_and_scale(query, "add_remove", as_dataset({"v": np.array(x)}), broken, K)) > float(c.delta)


# --- the nodes -----------------------------------------------------------------------------------


def test_nodes_accept_a_user_function_with_its_formula_and_record_the_promise() -> None:
    for node in (SmoothBound(_target(), epsilon=1, delta="1e-6"), SmoothBoundCauchy(_target(), epsilon=1)):
        notes = node.privacy().notes
        assert any("user promise" in note for note in notes)
        assert any("non-increasing in n" in note for note in notes)
        assert node.clamp_range() is None
    assert SmoothBound(_target(), epsilon=1, delta="1e-6").cost() == ApproxDP(1, "1e-6")
    assert SmoothBoundCauchy(_target(), epsilon=1).cost() == PureDP(1)


@pytest.mark.parametrize(("build", "match"), [
    (lambda: SmoothBound(_query(), epsilon=1, delta="1e-6"), "user-defined statistic.*LocalSensAtDistance"),
    (lambda: SmoothBound(LocalSensAtDistance(Query.mean("v") | Clip(0, 3), "3/Max(n - k, 1)"), epsilon=1, delta="1e-6"),
     "only around a Query.function"),
    (lambda: SmoothBound(_target("upper*(k + 1 + n)"), epsilon=1, delta="1e-6"), "non-increasing in n.*refuted"),
    (lambda: SmoothBoundCauchy(Query.sum("v", user="u") | Clip(0, 1), epsilon=1), "user-level sum"),
    (lambda: SmoothBound(Query.sum("v") | Clip(1, 1), epsilon=1, delta="1e-6"), "lower < upper"),
    (lambda: SmoothBound(Query.count("v"), epsilon=1, delta="1e-6", relation="substitution"), "add_remove"),
])  # fmt: skip
def test_refusals_name_the_reason(build: object, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        build()  # type: ignore[operator]


def _data(n: int = 400) -> dict[str, npt.NDArray[np.float64]]:
    return {"v": np.random.default_rng(1).uniform(0, 3, n)}


def test_release_is_near_the_statistic_and_the_certificate_audits() -> None:
    node = SmoothBound(_target(), epsilon=1, delta="1e-6")
    truth = log1p_mean(np.sort(_data()["v"]))
    release = Session(ApproxDP(1, "1e-6")).run(node, _data(), rng=3)
    assert isinstance(release.value, float) and abs(release.value - truth) < 0.5
    assert audit_certificate(release.certificate).status == "cost_confirmed"
    strict = audit_certificate(release.certificate, strict=True)
    assert strict.status != "cost_confirmed"  # the promise is never proven


def _fails_on_data(failure: object) -> object:
    """Works on the public trial values (8 of them), fails on the data."""

    def fn(x: npt.NDArray[np.float64]) -> object:
        return failure(x) if x.size > 100 else float(np.mean(np.log1p(x)))  # type: ignore[operator]

    return fn


@pytest.mark.parametrize("failure", [lambda x: 1 / 0, lambda x: float("nan"), lambda x: "text", lambda x: 1e308 * 10])
def test_a_failing_function_releases_around_the_fallback_silently(failure: object) -> None:
    q = Query.function(_fails_on_data(failure), column="v", name="bad", fallback=1) | Clip(0, 3)  # type: ignore[arg-type]
    node = SmoothBound(LocalSensAtDistance(q, FORMULA), epsilon=1, delta="1e-6")
    out = Session(ApproxDP(1, "1e-6")).run(node, _data(), rng=4).value
    assert isinstance(out, float) and abs(out - 1) < 0.5


@pytest.mark.parametrize("query", [Query.count(), Query.sum("v") | Clip(0, 3)])
def test_count_and_sum_release_and_state_their_accuracy(query: Query) -> None:
    node = SmoothBound(query, epsilon=1, delta="1e-6")
    acc = node.accuracy()
    assert acc.error is not None  # S is public: an unconditional statement
    outs = [SmoothBound(query, epsilon=1, delta="1e-6").release(as_dataset(_data()), _rng(i)) for i in range(200)]
    truth = 400 if query.kind == "count" else float(np.sum(_data()["v"]))
    misses = sum(abs(float(o) - truth) > float(acc.error) for o in outs)  # type: ignore[arg-type]
    assert misses <= 25  # P[miss] <= 5%: P[Bin(200, 0.05) > 25] < 1e-3


def _rng(seed: int) -> SeededRandomness:
    return SeededRandomness(seed)


def test_truncated_bound_is_the_shared_one() -> None:
    env = envelope_of(_target(), "test")
    # n far above K: the window holds h(n - K .. n + K); the result matches the direct truncated bound
    n, beta, levels = 1000, 0.05, 20
    m = np.arange(n - levels, n + levels + 1)
    h = np.minimum(upper_values(env.expr0, 0, m.astype(float)), env.top)
    e = math.frexp(env.top)[1] - 1
    h = np.ldexp(h, -e)
    profile = np.maximum(np.maximum.accumulate(h[levels:]), np.maximum.accumulate(h[levels::-1]))
    direct = truncated_smooth_bound(profile, beta, math.ldexp(env.top, -e), 2.0**-60)
    assert formula_smooth_bound(env, n, beta, levels) == Fraction(direct) * Fraction(2) ** e
