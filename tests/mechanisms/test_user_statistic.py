"""User-defined statistics (``Query.function``) released by PTR under the user's LS_k promise.

The worked statistic is the mean of g(x) = log(1 + x) over values clipped to
[l, u] with l >= 0 (empty data: the fallback c = 0 = g(0), which lies in
[g(l), g(u)] when l = 0). With R = g(u) − g(l):

* LS_0(x) <= R / max(n, 1) under add/remove. Removing a value v from n >= 2
  values moves the mean by |v − m_{n−1}| / n <= R/n (both are in [g(l), g(u)]);
  adding v moves it by |v − m_n| / (n + 1) <= R/(n + 1); for n = 1 removal goes
  to c and for n = 0 adding comes from c, each at most R away.
* LS_k(x) = max over y at distance <= k of LS_0(y), and every such y has at least
  n − k values, so LS_k(x) <= R / max(n − k, 1). The bound is attained (x = l…l
  with one u), which :func:`test_closed_form_is_the_brute_force_ls_k` checks.
* float evaluation: np.mean of log1p values errs by at most about
  (log2 n + 2)·2^-53·g(u) per evaluation, far below ``g(u)/2**45`` for any
  n < 2**60, so F = R/max(n − k, 1) + g(u)/2**45 bounds the computed statistic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from dpalg import ApproxDP, Clip, InvalidArgument, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace, SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms._common.local_sensitivity import BRUTE_MAX_K, BRUTE_MAX_N, LocalSensAtDistance, brute_force_datasets
from dpalg.mechanisms.ptr._propose_test import ProposeTest
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.mechanisms.ptr._testing import worst_ptr_delta
from dpalg.mechanisms._common.user_function import statistic_value
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate
from dpalg.release._certificate import classify_note
from dpalg.release._serialize import decode, encode

R = "(log(1 + upper) - log(1 + lower))"
FORMULA = f"{R}/Max(n - k, 1) + log(1 + upper)/2**45"
HALF = f"{R}/(2*Max(n - k, 1))"


def log1p_mean(x: npt.NDArray[np.float64]) -> float:
    return float(np.mean(np.log1p(x)))


def _query(lower: int = 0, upper: int = 3, fallback: int = 0) -> Query:
    return Query.function(log1p_mean, column="v", fallback=fallback) | Clip(lower, upper)


# --- the query kind ------------------------------------------------------------------


def test_repr_is_stable_and_reads_as_code() -> None:
    q = _query()
    assert repr(q) == "Query.function(log1p_mean, column='v', name='log1p_mean') | Clip(0, 3)"
    assert "0x" not in repr(Query.function(lambda x: 0.0, column="v"))
    assert repr(Query.function(log1p_mean, column="v", name="g", fallback="1/2")) == (
        "Query.function(g, column='v', name='g', fallback='1/2')"
    )
    assert q == _query() and hash(q) == hash(_query()) and q.columns()[0].name == "v"


@pytest.mark.parametrize("build, field", [
    (lambda: Query.function(3, column="v"), "fn"),  # type: ignore[arg-type]
    (lambda: Query.function(log1p_mean, column=""), "column"),
    (lambda: Query.function(log1p_mean, column="v", name=""), "name"),
    (lambda: Query("function", "v", fn=log1p_mean, name="f", fallback=0, user="uid"), "user"),
    (lambda: Query("mean", "v", fn=log1p_mean), "fn"),
    (lambda: Query.function(log1p_mean, column="v", fallback=Fraction(2) ** 1001), "fallback"),
])  # fmt: skip
def test_invalid_function_queries(build: object, field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"Query: {field}="):
        build()  # type: ignore[operator]


def _mutate(x: npt.NDArray[np.float64]) -> float:
    x[0] = 100.0  # the block is read-only: this raises, so the value is the fallback
    return 1.0


@pytest.mark.parametrize("fn", [
    lambda x: 1 / 0, lambda x: float("nan"), lambda x: math.inf, lambda x: "3", lambda x: [1.0], _mutate,
])  # fmt: skip
def test_failures_become_the_fallback_silently(fn: object) -> None:
    assert statistic_value(fn, np.array([1.0, 2.0]), 0.25) == 0.25  # type: ignore[arg-type]


def test_the_function_sees_sorted_values_and_runs_only_in_its_mechanism() -> None:
    from dpalg.mechanisms.ptr._propose_test import exact_value

    first = Query.function(lambda x: float(x[0]), column="v") | Clip(0, 10)
    assert exact_value(first, first.values(as_dataset({"v": [5.0, np.nan, 2.0, 40.0]}))) == 2.0
    assert exact_value(_query(0, 10), np.zeros(0)) == 0.0  # empty after dropping: the fallback
    with pytest.raises(InvalidArgument, match="user function"):  # never run outside the mechanism's total calls
        first.evaluate(as_dataset({"v": [1.0]}))


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize("build, owner", [
    (lambda q: Laplace(q, epsilon=1), "Laplace"),
    (lambda q: Gaussian(q, rho="0.5"), "Gaussian"),
    (lambda q: ExponentialQuantile(q, epsilon=1), "ExponentialQuantile"),
    (lambda q: SmoothBound(q, epsilon=1, delta="1e-6"), "SmoothBound"),
    (lambda q: SmoothBoundCauchy(q, epsilon=1), "SmoothBoundCauchy"),
])  # fmt: skip
def test_global_sensitivity_nodes_refuse_it(build: object, owner: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{owner}: query=.*user-defined statistic.*LocalSensAtDistance"):
        build(_query())  # type: ignore[operator]


def test_ptr_needs_the_promise() -> None:
    with pytest.raises(InvalidArgument, match="ProposeTest: target=.*LocalSensAtDistance"):
        ProposeTest(_query(), bound=1, epsilon=1, delta="1e-6")
    with pytest.raises(InvalidArgument, match="needs a clipping range"):
        LocalSensAtDistance(Query.function(log1p_mean, column="v"), FORMULA)


# --- the promise: proofs, brute force, certificate -----------------------------------


def test_closed_form_is_the_brute_force_ls_k() -> None:
    """R/max(n − k, 1) is exactly the largest LS_k the brute force finds at size n (tight, so half of it fails)."""
    lower, upper = Fraction(0), Fraction(3)
    grid, ls = brute_force_datasets(lambda v: statistic_value(log1p_mean, v, 0.0), lower, upper)
    r = math.log(4.0)
    for k in range(BRUTE_MAX_K + 1):
        for n in range(BRUTE_MAX_N - k + 1):
            worst = max(v for ms, v in ls[k].items() if len(ms) == n)
            assert worst == pytest.approx(r / max(n - k, 1), rel=1e-12), (k, n)
    assert grid == (0.0, 0.75, 1.5, 2.25, 3.0)


def test_the_right_formula_is_accepted_and_recorded_as_a_promise() -> None:
    ls = LocalSensAtDistance(_query(), FORMULA)
    notes = ls.notes()
    assert [classify_note(n) for n in notes[:2]] == ["proven", "proven"]
    promise = [n for n in notes if "user promise: F(k, n)" in n]
    assert len(promise) == 1 and "'log1p_mean'" in promise[0] and "462" in promise[0]
    assert classify_note(promise[0]) == "unproven"
    assert not ls.has_exact_ls and ls.uses_formula


@pytest.mark.parametrize("formula, where", [
    (HALF, "dataset []"),  # half of the true LS_k: refuted at the empty dataset
    (f"{R}/Max(n - k + 1, 1)", "n=1"),  # off by one in n
    (f"{R}/Max(n - k, 2)", "dataset []"),  # right for n - k >= 2, too small on tiny data
])  # fmt: skip
def test_wrong_formulas_are_refuted_with_a_counterexample(formula: str, where: str) -> None:
    with pytest.raises(InvalidArgument, match=r"is refuted for Query\.function.*on the public dataset") as info:
        LocalSensAtDistance(_query(), formula)
    assert where in str(info.value) and "> F(" in str(info.value)


def test_a_fallback_outside_the_range_is_caught() -> None:
    """Clip(1, 3) with fallback 0: the empty dataset sits g(1) below every mean, so R/max(n-k,1) is too small."""
    with pytest.raises(InvalidArgument, match=r"refuted.*dataset \[\]|refuted.*n=1"):
        LocalSensAtDistance(_query(1, 3), FORMULA)
    LocalSensAtDistance(_query(1, 3, fallback=1), f"log(1 + upper)/Max(n - k, 1)")  # covers |c - g(v)| <= g(u)


@pytest.mark.parametrize("formula, strict, match", [
    ("(k + 1)/100 + 1000*floor(n/500)", False, "PROVEN PTR neighbour condition"),
    (FORMULA, True, "strict=True refuses"),
])  # fmt: skip
def test_unproven_is_refused_for_a_user_function(formula: str, strict: bool, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        LocalSensAtDistance(_query(), formula, strict=strict)


@pytest.mark.parametrize("fn, match", [
    (lambda x: 1 / 0, "raised ZeroDivisionError on the public trial values"),
    (lambda x: "1.0", "returned a str"),
    (lambda x: math.nan, "non-finite"),
])  # fmt: skip
def test_the_function_is_tried_at_construction(fn: object, match: str) -> None:
    q = Query.function(fn, column="v") | Clip(0, 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=match):
        LocalSensAtDistance(q, FORMULA)


def test_certificate_round_trip_and_strict_audit() -> None:
    node = ProposeTest(LocalSensAtDistance(_query(), FORMULA), bound="0.5", epsilon="0.5", delta="0.01")
    rebuilt = decode(encode(node))
    assert repr(rebuilt) == repr(node)  # the stub stands in for the function; nothing is re-run
    release = Session(ApproxDP(1, "0.01")).run(node, {"v": np.array([0.0, 1, 2, 3, 3, 2, 1, 0] * 4)}, rng=5)
    assert audit_certificate(release.certificate).status == "cost_confirmed"
    strict = audit_certificate(release.certificate, strict=True)
    assert strict.status != "cost_confirmed" and any("user promise" in f for f in strict.findings)


# --- exact privacy of the PTR release ---------------------------------------------------

PAIRS = multiset_neighbours((0.0, 1.0, 2.0, 3.0), 5)  # 560 pairs over 126 datasets of at most 5 values


@pytest.mark.parametrize("bound, granularity", [("0.5", -2), ("1.5", -2), ("0.1", -4)])
def test_ptr_with_the_right_formula_is_private_exactly(bound: str, granularity: int) -> None:
    """b = 0.5: γ = max(0, n − 2) (the test decides); b = 1.5: γ = cap (the release noise alone must cover LS)."""
    node = ProposeTest(LocalSensAtDistance(_query(), FORMULA), bound=bound, epsilon="0.5", delta="0.01",
                       granularity=granularity)
    worst = worst_ptr_delta(node, PAIRS)
    assert worst <= float(node.delta)


def test_a_too_small_formula_that_escaped_refutation_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken variant: a tenth of LS_k, with the brute force switched off, breaks (2ε, δ)-DP.

    F <= 0.14 < b everywhere, so γ = cap and every dataset passes; the release noise
    (b + 2^-4)/ε then covers a shift of 0.2 while one row moves the value by up to log 4.
    """
    monkeypatch.setattr(LocalSensAtDistance, "_refute", lambda self, lower, upper: None)
    node = ProposeTest(LocalSensAtDistance(_query(), f"{R}/(10*Max(n - k, 1))"), bound="0.2", epsilon="0.5",
                       delta="0.01", granularity=-4)
    worst = worst_ptr_delta(node, PAIRS)
    assert worst > float(node.delta)


def test_release_is_total_when_the_function_fails_on_the_data() -> None:
    """fn raises on some data (not on the trial block): the release uses the fallback, no exception or warning."""

    def fragile(x: npt.NDArray[np.float64]) -> float:
        if x.size > 100:
            raise MemoryError
        return float(np.mean(np.log1p(x))) if x.size else 0.0

    q = Query.function(fragile, column="v") | Clip(0, 3)
    node = ProposeTest(LocalSensAtDistance(q, FORMULA), bound="0.05", epsilon=1, delta="1e-6")
    out = node.release(as_dataset({"v": np.full(500, 2.0)}), SeededRandomness(0))
    assert isinstance(out, float) and abs(out) < 1  # the fallback 0 plus noise of scale ~0.05
