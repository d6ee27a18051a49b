"""Smooth sensitivity (dpalg.sensitivity._smooth_sens) against brute force from the definitions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.sensitivity._smooth_sens import (
    BETA_SLACK,
    Relation,
    quantile_ls_k,
    smooth_from_profile,
    smooth_sensitivity_quantile,
    smooth_sensitivity_quantile_quadratic,
)

Dataset = tuple[int, ...]
RELATIONS: tuple[Relation, ...] = ("substitution", "add_remove")
TIGHT = 1 + 2.0**-28  # the documented upper slack of every result


# --------------------------------------------------------------------------- brute force
def _value(y: Dataset, q: Fraction, lower: int) -> int:
    """The quantile convention of dpalg.queries: x[max(0, ceil(q n) - 1)], empty -> lower."""
    if not y:
        return lower
    return y[max(0, math.ceil(q * len(y)) - 1)]


def _neighbours(y: Dataset, domain: tuple[int, ...], relation: str) -> set[Dataset]:
    out: set[Dataset] = set()
    for idx in range(len(y)):
        rest = y[:idx] + y[idx + 1 :]
        if relation == "add_remove":
            out.add(rest)
        else:
            out.update(tuple(sorted(rest + (v,))) for v in domain)
    if relation == "add_remove":
        out.update(tuple(sorted(y + (v,))) for v in domain)
    return out


def _ls(y: Dataset, q: Fraction, domain: tuple[int, ...], relation: str) -> int:
    f = _value(y, q, domain[0])
    return max((abs(_value(z, q, domain[0]) - f) for z in _neighbours(y, domain, relation)), default=0)


def brute_ls_profile(x: Iterable[int], q: Fraction, domain: tuple[int, ...], relation: str, k_max: int) -> list[int]:
    """LS_0..LS_kmax by enumerating every dataset within distance k (breadth first)."""
    start = tuple(sorted(x))
    frontier, seen = {start}, {start}
    cur = _ls(start, q, domain, relation)
    out = [cur]
    for _ in range(k_max):
        new = {z for y in frontier for z in _neighbours(y, domain, relation)} - seen
        seen |= new
        frontier = new
        if new:
            cur = max(cur, max(_ls(y, q, domain, relation) for y in new))
        out.append(cur)
    return out


DOMAIN = (0, 1, 3, 4, 7)  # bounds [0, 7]; includes both bounds
QS = [Fraction(1, 2), Fraction(1, 3), Fraction(0), Fraction(1), Fraction(3, 4), Fraction(1, 5), Fraction(2, 3)]


# --------------------------------------------------------------------------- reference values
@pytest.mark.parametrize(("beta", "expected"), [(0.1, 5.48812), (0.5, 1.56191), (1.0, 1.0)])
@pytest.mark.parametrize("fn", [smooth_sensitivity_quantile, smooth_sensitivity_quantile_quadratic])
def test_reference_values_median_substitution(beta: float, expected: float, fn: object) -> None:
    value = fn(np.arange(7), Fraction(1, 2), 0, 10, beta)  # type: ignore[operator]
    assert value >= expected - 5e-6
    assert value == pytest.approx(expected, abs=5e-6)


def test_reference_value_closed_forms() -> None:
    # beta = 0.1: k = 6, t = 4 gives x_8 - x_1 = 10 - 0; beta = 0.5: k = 3, t = 4 gives 10 - 3
    assert smooth_sensitivity_quantile(range(7), "1/2", 0, 10, 0.1) >= 10 * math.exp(-0.6)
    assert smooth_sensitivity_quantile(range(7), "1/2", 0, 10, 0.5) >= 7 * math.exp(-1.5)


# --------------------------------------------------------------------------- LS_k vs brute force
def test_ls_k_exhaustive_small_domain() -> None:
    for q, relation, n in itertools.product(QS, RELATIONS, range(0, 4)):
        for x in itertools.combinations_with_replacement(DOMAIN, n):
            want = brute_ls_profile(x, q, DOMAIN, relation, 4)
            got = [quantile_ls_k(x, q, 0, 7, k, relation) for k in range(5)]
            assert got == want, (q, relation, x)


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.sampled_from(DOMAIN), min_size=4, max_size=5),
    q=st.sampled_from(QS),
    relation=st.sampled_from(RELATIONS),
)
def test_ls_k_hypothesis(x: list[int], q: Fraction, relation: Relation) -> None:
    want = brute_ls_profile(x, q, DOMAIN, relation, 2)
    got = [quantile_ls_k(sorted(x), q, 0, 7, k, relation) for k in range(3)]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.sampled_from(DOMAIN), min_size=0, max_size=3),
    q=st.sampled_from(QS),
    relation=st.sampled_from(RELATIONS),
    beta=st.sampled_from([0.05, 0.3, 1.0, 3.0]),
)
def test_smooth_vs_brute_force_definition(x: list[int], q: Fraction, relation: str, beta: float) -> None:
    # LS_k is constant (upper - lower or its final value) from k = n + 2 on, so the
    # truncated maximum plus the constant tail is the exact S*
    k_max = len(x) + 3
    prof = brute_ls_profile(x, q, DOMAIN, relation, k_max)
    exact = max(ls * math.exp(-k * beta) for k, ls in enumerate(prof))
    exact0 = max(ls * math.exp(-k * (beta - BETA_SLACK)) for k, ls in enumerate(prof))
    for fn in (smooth_sensitivity_quantile, smooth_sensitivity_quantile_quadratic):
        got = fn(sorted(x), q, 0, 7, beta, relation)  # type: ignore[arg-type]
        assert got >= exact
        floor = max(7 * math.exp(-600), 2.0**-960)
        assert got <= TIGHT * max(exact0, floor)


# --------------------------------------------------------------------------- fast == quadratic
def _dataset(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:  # heavy ties, values at both bounds
        x = rng.integers(-2, 13, n).astype(np.float64)
    elif kind == 1:
        x = rng.normal(5, 3, n)
    elif kind == 2:
        x = np.concatenate((np.zeros(n // 3), rng.uniform(0, 10, n - 2 * (n // 3)), np.full(n // 3, 10.0)))
    else:
        x = np.full(n, 4.25)
    return np.sort(np.clip(x, 0, 10))


@pytest.mark.parametrize("relation", RELATIONS)
def test_fast_equals_quadratic_random(relation: str) -> None:
    rng = np.random.default_rng(2024)
    qs = ["1/2", "1/3", "0", "1", "0.9", "1/7", "2/3", 0.1]
    for it in range(240):
        n = int(rng.integers(0, 80))
        x = _dataset(rng, n, it % 4)
        q, beta = qs[it % len(qs)], [0.01, 0.1, 0.5, 2.0, 10.0][it % 5]
        fast = smooth_sensitivity_quantile(x, q, 0, 10, beta, relation)  # type: ignore[arg-type]
        slow = smooth_sensitivity_quantile_quadratic(x, q, 0, 10, beta, relation)  # type: ignore[arg-type]
        assert fast == pytest.approx(slow, rel=2e-9), (n, q, beta, it)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_fast_equals_quadratic_n2000(relation: str, kind: int) -> None:
    rng = np.random.default_rng(kind)
    x = _dataset(rng, 2000, kind)
    for q, beta in [("1/2", 0.002), ("1/4", 0.05), ("0.95", 0.5)]:
        fast = smooth_sensitivity_quantile(x, q, 0, 10, beta, relation)  # type: ignore[arg-type]
        slow = smooth_sensitivity_quantile_quadratic(x, q, 0, 10, beta, relation)  # type: ignore[arg-type]
        assert fast == pytest.approx(slow, rel=2e-9)


# --------------------------------------------------------------------------- smoothness of the result
@pytest.mark.parametrize("relation", RELATIONS)
def test_result_is_beta_smooth_on_every_neighbour(relation: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        x = tuple(sorted(int(v) for v in rng.choice(DOMAIN, int(rng.integers(1, 6)))))
        beta = float(rng.choice([0.05, 0.4, 2.0]))
        s_x = smooth_sensitivity_quantile(x, "1/2", 0, 7, beta, relation)  # type: ignore[arg-type]
        for y in _neighbours(x, DOMAIN, relation):
            s_y = smooth_sensitivity_quantile(y, "1/2", 0, 7, beta, relation)  # type: ignore[arg-type]
            assert s_x <= math.exp(beta) * s_y


# --------------------------------------------------------------------------- generic profile
def test_profile_early_stop_equals_full_scan() -> None:
    calls: list[int] = []

    def ls_at(k: int) -> float:
        calls.append(k)
        return float(min(2 * k + 1, 50))

    got = smooth_from_profile(ls_at, 0.3, 50.0, 10_000)
    full = max(min(2 * k + 1, 50) * math.exp(-k * 0.3) for k in range(10_000))
    assert full <= got <= full * TIGHT * math.exp(10_000 * BETA_SLACK)
    assert max(calls) < 100  # stopped long before k_max


def test_profile_truncation_includes_tail() -> None:
    got = smooth_from_profile(lambda k: 0.0, 0.5, 8.0, 3)
    assert got >= 8.0 * math.exp(-4 * 0.5)


def test_profile_never_below_true_max_with_large_k() -> None:
    # the maximum sits at k = 2000 with k*beta = 200: 1 + 4 eps would not cover fl(k*beta)
    beta = 0.1

    def ls_at(k: int) -> float:
        return 1e-100 if k < 2000 else 1.0

    got = smooth_from_profile(ls_at, beta, 1.0, 5000)
    assert got >= math.exp(-2000 * beta)


def test_small_beta_returns_cap() -> None:
    assert smooth_sensitivity_quantile(range(5), "1/2", 0, 3, 2.0**-21) == 3.0
    assert smooth_from_profile(lambda k: 0.0, 2.0**-21, 4.0, 5) == 4.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": float("nan")}, "beta"),
        ({"q": "3/2"}, "q"),
        ({"lower": 5, "upper": 1}, "lower"),
        ({"relation": "swap"}, "relation"),
        ({"sorted_values": [3.0, 1.0]}, "sorted_values"),
        ({"sorted_values": [1.0, float("nan")]}, "sorted_values"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"sorted_values": [1.0, 2.0], "q": "1/2", "lower": 0, "upper": 3, "beta": 0.5}
    args.update(kwargs)
    with pytest.raises(InvalidArgument) as err:
        smooth_sensitivity_quantile(**args)  # type: ignore[arg-type]
    assert err.value.field == field


@pytest.mark.parametrize(
    ("ls_at", "cap", "k_max", "field"),
    [(lambda k: 1.0, -1.0, 3, "ls_cap"), (lambda k: 1.0, 1.0, -1, "k_max"), (lambda k: 2.0, 1.0, 3, "ls_at")],
)
def test_profile_invalid_arguments(ls_at: object, cap: float, k_max: int, field: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        smooth_from_profile(ls_at, 0.5, cap, k_max)  # type: ignore[arg-type]
    assert err.value.field == field


def test_large_n_is_fast_and_sane() -> None:
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 1, 200_000))
    s = smooth_sensitivity_quantile(x, "1/2", 0, 1, 0.01)
    # a quadratic reference on a window would be too slow; compare with the closed
    # form lower bound (one-sided gaps) and the cap
    assert 0 < s <= 1.0
    assert s >= (x[100_000 + 100] - x[99_999]) * math.exp(-0.01 * 101)
    s_ar = smooth_sensitivity_quantile(x, "1/2", 0, 1, 0.01, "add_remove")
    assert 0 < s_ar <= 1.0
