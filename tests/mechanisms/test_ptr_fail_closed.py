"""Propose-test-release fails closed (issue 14, §3 items 1 and 5, §4).

* the PTR neighbour condition F(k, n) <= F(k+1, n') is proven, refuted or unproven;
* catalog queries use min(γ_F, γ_exact): a formula below the true LS_k neither raises nor leaks;
* F is evaluated at every k up to the public cap and the exact profile is computed to the cap,
  whatever the data (counted, not timed);
* clips as wide as the float range never overflow into an exception, and the LS stays an upper bound;
* certificates record which checks were proven, and the user's promise when there is no exact LS_k.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

import sympy

from dpalg import BOTTOM, Clip, InvalidArgument, Query
from dpalg.data import Relation, as_dataset
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms.ptr._propose_test import ProposeTest, exact_value
from dpalg.mechanisms._common.ptr_test import ptr_cap
from dpalg.noise import SeededRandomness
from dpalg.release._certificate import classify_note
from dpalg.sensitivity import _catalog, _ptr_condition
from dpalg.sensitivity._catalog import (
    distance_to_instability,
    local_sensitivity_at_distance,
    ls_profile,
    overflow_safe_mean,
)
from dpalg.sensitivity._ptr_condition import check_neighbour_condition, evaluate_formula, formula_values

K, N = sympy.symbols("k n")
MEDIAN01 = Query.median("v") | Clip(0, 1)
RELATIONS: tuple[Relation, ...] = ("add_remove", "substitution")
HUGE = 1e308


def _exact(expr: sympy.Expr, k: int, n: int) -> sympy.Expr:
    return expr.subs({K: k, N: n})


# --- 1. the neighbour condition -------------------------------------------------------------------


def test_issue_counterexample_is_refuted_by_the_neighbour_check_itself() -> None:
    """(upper-lower)*Abs(sin(pi*n/2)) + (k+1)/1000 with Clip(0, 1), built by hand (no parser involved).

    The old check (non-negative, non-decreasing in k) proved it; with b = 0.1, n = 200
    released in 200 of 200 runs and n = 201 returned ⊥ in 200 of 200.
    """
    expr = sympy.Abs(sympy.sin(sympy.pi * N / 2)) + (K + 1) / sympy.Integer(1000)
    result = check_neighbour_condition(expr)
    assert result.status == "refuted" and result.counterexample is not None
    k, n, n2 = result.counterexample
    assert abs(n2 - n) == 1
    assert _exact(expr, k, n) > _exact(expr, k + 1, n2)  # a true counterexample, checked exactly
    # with b = 0.1 the distances of n = 200 and n = 201 differ by far more than 1
    gamma = [int(np.argmax(np.append(evaluate_formula(expr, m, 200) > 0.1, True))) for m in (200, 201)]
    assert gamma[0] >= 99 and gamma[1] == 0


def test_issue_counterexample_string_is_refused_at_construction() -> None:
    # refused by the formula grammar (no sin/pi) or by the neighbour condition: never accepted
    with pytest.raises(InvalidArgument) as info:
        LocalSensAtDistance(MEDIAN01, "(upper-lower)*Abs(sin(pi*n/2)) + (k+1)/1000")
    assert info.value.field == "formula"


@pytest.mark.parametrize(
    ("expr", "status"),
    [
        (3 / sympy.Max(N - K, 1), "proven"),  # the mean's LS_k bound (upper-lower)/Max(n-k, 1)
        (sympy.Rational(1, 2) + 10 * K, "proven"),
        (K + 100, "proven"),
        (sympy.exp(K) / (N + 1), "proven"),
        (K + 1 / (N + 1), "proven"),
        ((K + 1) / (N + 1), "refuted"),  # non-decreasing in k, but F(k+1, n+1) < F(k, n) for k > n
        (sympy.Min(K + 1, N), "refuted"),  # F(0, 1) = 1 > F(1, 0) = 0
        (1 / N, "refuted"),  # a pole at n = 0 reads as +inf, then F(1, 1) = 1
        (sympy.log(N) + K, "refuted"),
        ((K + 1) * sympy.Max(1, 10 - N), "refuted"),
        (K + sympy.log(N + 1), "unproven"),  # true (log 2 < 1) but beyond the rules
        (K + 1 / (N - 500) ** 2, "unproven"),  # a pole beyond the grid: never "proven"
    ],
)
def test_neighbour_condition_verdicts(expr: sympy.Expr, status: str) -> None:
    result = check_neighbour_condition(expr)
    assert result.status == status, result
    if status == "refuted":
        assert result.counterexample is not None
        k, n, n2 = result.counterexample
        low, high = expr.subs({K: k, N: n}), expr.subs({K: k + 1, N: n2})
        assert not low.is_finite or bool(sympy.N(low - high, 50) > 0)


def test_proven_formulas_give_a_one_lipschitz_distance() -> None:
    """What the proof needs, checked directly: |γ_F(n) − γ_F(n ± 1)| <= 1 on a wide range of n and b."""
    for expr in (3 / sympy.Max(N - K, 1), sympy.exp(K) / (N + 1), K + 1 / (N + 1), (K + 2) / sympy.Max(N - 2 * K, 1)):
        if check_neighbour_condition(expr).status != "proven":
            continue
        for b in (0.01, 0.1, 0.5, 1.0, 2.9, 7.0):
            gam = [int(np.argmax(np.append(evaluate_formula(expr, m, 80) > b, True))) for m in range(0, 600)]
            assert max(abs(x - y) for x, y in itertools.pairwise(gam)) <= 1, (expr, b)


def test_substitution_needs_only_monotone_in_k() -> None:
    assert check_neighbour_condition((K + 1) / (N + 1), "substitution").status == "proven"
    with pytest.raises(InvalidArgument):
        check_neighbour_condition(K, "bogus")


def test_sympy_failure_is_unproven(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(expr: sympy.Expr, s: int) -> bool:
        raise RuntimeError("sympy blew up")

    monkeypatch.setattr(_ptr_condition, "_direct", boom)
    monkeypatch.setattr(_ptr_condition, "_path", boom)
    result = check_neighbour_condition(3 / sympy.Max(N - K, 1))
    assert result.status == "unproven" and "RuntimeError" in result.reason


@pytest.mark.parametrize(
    "formula",
    ["(2*k + 3)**64 - (2*k + 2)**64", "exp(" * 30 + "k" + ")" * 30, "*".join(f"(k + {i})**64" for i in range(1, 60)) + " - k"],
)
def test_the_neighbour_check_is_fast_on_formulas_sympy_cannot_bound(formula: str) -> None:
    # sympy's assumption system took 10 s to over a minute on these before the size limits
    start = time.perf_counter()
    LocalSensAtDistance(MEDIAN01, formula)
    assert time.perf_counter() - start < 5.0


def test_refuted_formula_is_refused_and_unproven_follows_strict() -> None:
    with pytest.raises(InvalidArgument, match=r"neighbour condition.*k=\d+, n=\d+, n'=\d+") as info:
        LocalSensAtDistance(MEDIAN01, "(upper - lower)/(n + 1)*(k + 1)")
    assert info.value.owner == "LocalSensAtDistance"
    with pytest.raises(InvalidArgument, match="strict"):
        LocalSensAtDistance(MEDIAN01, "k + log(n + 1)", strict=True)
    loose = LocalSensAtDistance(MEDIAN01, "k + log(n + 1)")
    assert loose.neighbour_check().status == "unproven"
    notes = ProposeTest(loose, bound="0.5", epsilon=1, delta="1e-6").privacy().notes
    # the min(gamma_F, gamma_exact) note is absent: an unproven formula is not used at all
    assert [classify_note(n) for n in notes] == ["proven", "unproven"]
    assert "NOT used" in notes[1]


def test_undeclared_and_unevaluable_names_are_refused_at_construction() -> None:
    # lower/upper mean nothing without a clip: refused now, not at release time
    with pytest.raises(InvalidArgument):
        LocalSensAtDistance(Query.count(), "upper - lower + k")


# --- 2. catalog queries: min(γ_F, γ_exact) ---------------------------------------------------------


def test_issue_formula_below_true_ls_never_raises() -> None:
    """Median, Clip(0, 1), F = 1/2 + 10k, b = 1/2: x' = [0, 0, 1, 1] used to raise after the charge."""
    node = ProposeTest(LocalSensAtDistance(MEDIAN01, "1/2 + 10*k"), bound="0.5", epsilon=1, delta="0.3")
    x, x2 = np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0])
    cap = ptr_cap(node.eps_test, node.delta)
    for values in (x, x2):
        exact = distance_to_instability(MEDIAN01, values, 0.5, cap=cap)
        assert node.distance(values) == min(1, exact)  # γ_F = 1 here (F_0 = 1/2, F_1 = 21/2)
    assert abs(node.distance(x) - node.distance(x2)) <= 1
    for seed in range(150):
        for values in (x, x2):
            out = node.release(as_dataset({"v": values}), SeededRandomness(seed))
            assert out is BOTTOM or isinstance(out, float)


def test_formula_below_the_truth_is_never_worse_than_exact_ptr() -> None:
    gen = np.random.default_rng(3)
    for _ in range(30):
        values = np.sort(gen.integers(0, 4, size=int(gen.integers(0, 12)))).astype(float) / 3
        for formula in ("k/1000", "1/2 + 10*k", "(upper - lower)/Max(n - k, 1)"):
            node = LocalSensAtDistance(MEDIAN01, formula)
            exact = distance_to_instability(MEDIAN01, values, 0.25, cap=40)
            assert node.distance(values, Fraction(1, 4), "add_remove", 40) <= exact


# --- 3. constant work ------------------------------------------------------------------------------


def test_formula_and_profile_work_do_not_depend_on_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """F is evaluated at every k <= cap and the profile computed to the cap, for every dataset."""
    calls: list[tuple[str, int]] = []
    real_values, real_profile = _ptr_condition.formula_values, _catalog.ls_profile

    def counting_values(expr: sympy.Expr, k: npt.NDArray[np.float64], n: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        calls.append(("F", int(np.size(k))))
        return real_values(expr, k, n)

    def counting_profile(query: Query, values: npt.NDArray[np.float64], kmax: int, relation: str = "add_remove") -> npt.NDArray[np.float64]:
        calls.append(("LS", kmax))
        return real_profile(query, values, kmax, relation)  # type: ignore[arg-type]

    monkeypatch.setattr(_ptr_condition, "formula_values", counting_values)
    monkeypatch.setattr(_catalog, "ls_profile", counting_profile)
    q = Query.median("v") | Clip(0, 100)
    node = ProposeTest(LocalSensAtDistance(q, "(upper - lower)/Max(n - k, 1)"), bound=1, epsilon="0.5", delta="1e-6")
    plain = ProposeTest(q, bound=1, epsilon="0.5", delta="1e-6")
    cap = ptr_cap(node.eps_test, node.delta)
    assert cap > 64  # above the old doubling start: the old code stopped early on unstable data
    stable = np.full(400, 50.0)  # γ = cap
    unstable = np.array([0.0, 100.0] * 200)  # γ = 0
    seen = []
    for values in (stable, unstable):
        for p in (node, plain):
            calls.clear()
            p.distance(values)
            seen.append(list(calls))
    assert plain.distance(stable) == cap and plain.distance(unstable) == 0
    assert seen[0] == seen[2] == [("F", cap + 1), ("LS", cap)]
    assert seen[1] == seen[3] == [("LS", cap)]


def test_non_finite_formula_values_count_as_infinity() -> None:
    expr = K + 1 / (N - 2)
    assert evaluate_formula(expr, 2, 3).tolist() == [math.inf] * 4
    assert evaluate_formula(sympy.Integer(10) ** 400 * K, 5, 2).tolist() == [math.inf, math.inf, math.inf]
    assert formula_values(sympy.log(N - 5) + K, np.array([0.0]), np.array([3.0])).tolist() == [math.inf]


def test_formula_evaluation_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(expr: sympy.Expr, k: object, n: object) -> None:
        raise ZeroDivisionError

    monkeypatch.setattr(_ptr_condition, "formula_values", boom)
    assert evaluate_formula(K, 3, 4).tolist() == [math.inf] * 5


# --- 4. overflow -----------------------------------------------------------------------------------


def _brute_mean_ls(data: tuple[Fraction, ...], k: int, domain: tuple[Fraction, ...]) -> Fraction:
    """max over y within k add/remove ops (values in domain) of max_{z ~ y} |mean(y) − mean(z)|, exactly.

    The mean of the empty dataset is the midpoint of the domain (the catalog's convention).
    """
    mid = (domain[0] + domain[-1]) / 2

    def mean(y: tuple[Fraction, ...]) -> Fraction:
        return sum(y, Fraction(0)) / len(y) if y else mid

    def nbrs(y: tuple[Fraction, ...]) -> set[tuple[Fraction, ...]]:
        out = {tuple(sorted(y[:i] + y[i + 1 :])) for i in range(len(y))}
        return out | {tuple(sorted(y + (v,))) for v in domain}

    ball, frontier = {data}, {data}
    for _ in range(k):
        frontier = {z for y in frontier for z in nbrs(y)} - ball
        ball |= frontier
    return max(abs(mean(y) - mean(z)) for y in ball for z in nbrs(y))


@pytest.mark.parametrize("data", [(HUGE,), (HUGE, HUGE), (-HUGE, HUGE, 0.0), (HUGE, 0.0, 0.0)])
def test_mean_ls_profile_is_an_upper_bound_at_the_float_limit(data: tuple[float, ...]) -> None:
    q = Query.mean("x") | Clip(-HUGE, HUGE)
    profile = ls_profile(q, np.array(data), 2)
    domain = (Fraction(-HUGE), Fraction(0), Fraction(HUGE))
    for k in range(3):
        truth = _brute_mean_ls(tuple(sorted(Fraction(v) for v in data)), k, domain)
        assert profile[k] > 0 and not math.isnan(profile[k])
        # an upper bound, up to the float rounding of the catalog (relative 1e-12)
        assert Fraction(profile[k]) >= truth * (1 - Fraction(1, 10**12)), (k, profile[k], float(truth))
        assert local_sensitivity_at_distance(q, np.array(data), k) == profile[k]


def test_profiles_at_the_float_limit_never_raise_or_give_nan() -> None:
    top = sys.float_info.max
    queries = [
        Query.mean("x") | Clip(-top, top),
        Query.sum("x") | Clip(-top, top),
        Query.median("x") | Clip(-top, top),
        Query.min("x") | Clip(HUGE, top),
        Query.max("x") | Clip(-top, -HUGE),
        Query.trimmed_mean("x", "0.2") | Clip(-top, top),
        Query.mode("x") | Clip(-top, top),
    ]
    datasets = [[], [top], [top, top], [-top, top, 0.0], [HUGE, top, top, HUGE, 1.0]]
    with np.errstate(all="raise"):  # no floating-point warning may escape either
        for q, data in itertools.product(queries, datasets):
            lo, hi = float(q.lower), float(q.upper)  # type: ignore[arg-type]
            values = np.clip(np.array(data, dtype=np.float64), lo, hi)
            for relation in RELATIONS:
                prof = ls_profile(q, values, 6, relation)
                assert not np.isnan(prof).any() and bool(np.all(prof[1:] >= prof[:-1]))
                # the scaled computation agrees with the same data at an ordinary scale
                small = ls_profile(_rescaled(q), np.ldexp(values, -1000), 6, relation)
                with np.errstate(over="ignore"):
                    assert np.array_equal(np.ldexp(small, 1000), prof)


def _rescaled(q: Query) -> Query:
    import attrs

    assert q.lower is not None and q.upper is not None
    return attrs.evolve(q, lower=q.lower / 2**1000, upper=q.upper / 2**1000)


def test_bounds_beyond_the_float_range_give_an_infinite_profile() -> None:
    q = Query.median("x") | Clip(0, 10**400)
    assert ls_profile(q, np.array([1.0, 2.0]), 3).tolist() == [math.inf] * 4


def test_issue_mean_overflow_datasets_release_without_raising() -> None:
    """[1e308] vs [1e308, 1e308] with Clip(-1e308, 1e308): LS overflowed to 0 (γ = n + 2), then fsum raised."""
    q = Query.mean("x") | Clip(-HUGE, HUGE)
    assert overflow_safe_mean(np.array([HUGE, HUGE])) == HUGE
    assert exact_value(q, np.array([HUGE, HUGE])) == HUGE
    node = ProposeTest(q, bound=1, epsilon=1, delta="0.5")  # δ large: the release path runs often
    for values in ([HUGE], [HUGE, HUGE]):
        assert node.distance(np.array(values)) == 0  # LS_0 is about 1e308, far above the bound
        outs = [node.release(as_dataset({"x": np.array(values)}), SeededRandomness(s)) for s in range(60)]
        assert any(o is not BOTTOM for o in outs) and all(o is BOTTOM or isinstance(o, float) for o in outs)


def test_release_at_the_float_maximum_saturates() -> None:
    top = sys.float_info.max
    node = ProposeTest(Query.mean("x") | Clip(-top, top), bound=1, epsilon=1, delta="0.5")
    outs = [node.release(as_dataset({"x": np.array([top, top])}), SeededRandomness(s)) for s in range(40)]
    floats = [o for o in outs if o is not BOTTOM]
    assert floats and all(isinstance(o, float) and o > 1e308 for o in floats)


def test_lattice_too_fine_for_the_bounds_is_refused_at_construction() -> None:
    q = Query.mean("x") | Clip(-HUGE, HUGE)
    assert ProposeTest(q, bound=1, epsilon=1, delta="0.5").lattice_k() > 900
    with pytest.raises(InvalidArgument) as info:
        ProposeTest(q, bound=1, epsilon=1, delta="0.5", granularity=-20)
    assert info.value.field == "granularity"
    # ordinary bounds keep the old default (2^-20 of the noise scale)
    assert ProposeTest(Query.mean("x") | Clip(0, 100), bound=1, epsilon=1, delta="0.5").lattice_k() == -20


# --- 5. certificate notes --------------------------------------------------------------------------


def test_notes_record_each_proven_check_and_the_exact_source() -> None:
    node = ProposeTest(LocalSensAtDistance(MEDIAN01, "(upper - lower)/Max(n - k, 1)"), bound="0.5", epsilon=1, delta="1e-6")
    notes = node.privacy().notes
    assert len(notes) == 3
    assert "non-decreasing and non-negative" in notes[0] and classify_note(notes[0]) == "proven"
    assert "neighbour condition" in notes[1] and classify_note(notes[1]) == "proven"
    assert "min(gamma_F, gamma_exact)" in notes[2] and classify_note(notes[2]) == "note"


def test_notes_flag_the_users_promise_without_an_exact_source() -> None:
    ls = LocalSensAtDistance(Query.mean("x"), "k + 1")  # unclipped: dpalg has no exact LS_k
    assert not ls.has_exact_ls
    promise = ls.notes()[-1]
    assert "user's promise" in promise and classify_note(promise) == "unproven"
    assert ls.distance(np.array([1.0, 2.0]), Fraction(3, 2), "add_remove", 10) == 1  # F_1 = 2 > 3/2


# --- 6. the empirical auditor on the issue's pair --------------------------------------------------


@pytest.mark.slow
def test_empirical_audit_of_the_user_formula_pair() -> None:
    """§3 item 1's pair ([0, 0, 1] vs [0, 0, 1, 1], F = 1/2 + 10k, b = 1/2): no violation of (2ε, δ)."""
    from dpalg.release._adversary import NeighbourPair
    from dpalg.release._auditor import audit_mechanism

    node = ProposeTest(LocalSensAtDistance(MEDIAN01, "1/2 + 10*k"), bound="0.5", epsilon="0.5", delta="0.05")
    pair = NeighbourPair("issue 14 §3.1: [0, 0, 1] vs + 1", {"v": np.array([0.0, 0.0, 1.0])}, {"v": np.array([0.0, 0.0, 1.0, 1.0])})
    audit = audit_mechanism(node, [pair], trials=6000, rng=SeededRandomness(14))
    print(f"empirical audit: eps_hat={audit.epsilon_lower:.4f} delta_hat={audit.delta_lower:.2e} (claimed 1, 0.05)")
    assert not audit.violation, (audit.epsilon_lower, audit.delta_lower)
    assert audit.epsilon_lower <= 1.0  # the claim is 2ε = 1


def test_an_unproven_neighbour_condition_never_enters_the_distance() -> None:
    """A formula that jumps beyond the grid search (n = 500) is unproven, accepted, and ignored.

    With γ = min(γ_F, γ_exact) it gave γ = 50 at n = 499 and γ = 0 at n = 500 on
    stable data: a deterministic ⊥-versus-release distinguisher between neighbours.
    """
    ls = LocalSensAtDistance(MEDIAN01, "(k + 1)/100 + 1000*floor(n/500)")
    assert ls.neighbour_check().status == "unproven" and not ls.uses_formula
    cap = 60
    for n in (499, 500, 501):
        values = np.full(n, 0.5)
        exact = distance_to_instability(MEDIAN01, values, 0.5, "add_remove", cap=cap)
        assert ls.distance(values, Fraction(1, 2), "add_remove", cap) == exact
    gammas = [ls.distance(np.full(n, 0.5), Fraction(1, 2), "add_remove", cap) for n in (499, 500)]
    assert abs(gammas[0] - gammas[1]) <= 1
    assert any("NOT used" in note for note in ls.notes())
    with pytest.raises(InvalidArgument, match="strict"):
        LocalSensAtDistance(MEDIAN01, "(k + 1)/100 + 1000*floor(n/500)", strict=True)
