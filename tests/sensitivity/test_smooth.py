"""Smooth sensitivity: brute force from the definition, fast == quadratic, rounding, smoothness."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.queries import Clip, Query
from dpalg.sensitivity import smooth_sensitivity
from dpalg.sensitivity._catalog import ls_profile
from dpalg.sensitivity._testing import domain_neighbours
from dpalg.sensitivity._testing import value_neighbours as neighbours
from dpalg.sensitivity._smooth import smooth_sensitivity_from_profile
from dpalg.sensitivity._smooth_quantile import quantile_ls_k, smooth_sensitivity_quantile, smooth_sensitivity_quantile_quadratic
from dpalg.sensitivity._smooth_rounding import FLOOR, Relation

RELATIONS: tuple[Relation, ...] = ("substitution", "add_remove")
QS = [Fraction(0), Fraction(1, 5), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(3, 4), Fraction(1)]


# --- brute force from the definitions ----------------------------------------------

Data = tuple[int, ...]


def value(y: Data, q: Fraction) -> int:
    """The quantile convention of dpalg.queries (lower bound 0 on empty data)."""
    if not y:
        return 0
    return sorted(y)[max(0, math.ceil(q * len(y)) - 1)]


@lru_cache(maxsize=None)
def brute_ls(y: Data, q: Fraction, relation: Relation, top: int) -> int:
    fy = value(y, q)
    return max([abs(fy - value(z, q)) for z in neighbours(y, relation, top)], default=0)


def brute_ls_k(x: Data, q: Fraction, relation: Relation, top: int, k: int) -> int:
    """max LS(y) over every dataset y within distance k of x (breadth-first)."""
    seen = {tuple(sorted(x))}
    front = set(seen)
    for _ in range(k):
        front = {z for y in front for z in neighbours(y, relation, top)} - seen
        seen |= front
    return max(brute_ls(y, q, relation, top) for y in seen)


def brute_smooth(x: Data, q: Fraction, relation: Relation, top: int, beta: float, kmax: int) -> float:
    return max(math.exp(-beta * k) * brute_ls_k(x, q, relation, top, k) for k in range(kmax + 1))


DATA = st.integers(2, 4).flatmap(lambda top: st.tuples(st.just(top), st.lists(st.integers(0, top), max_size=4)))


@settings(max_examples=120, deadline=None)
@given(data=DATA, q=st.sampled_from(QS), relation=st.sampled_from(RELATIONS), k=st.integers(0, 3))
def test_ls_k_equals_brute_force(data: tuple[int, list[int]], q: Fraction, relation: Relation, k: int) -> None:
    top, xs = data
    x = tuple(sorted(xs))
    if relation == "substitution" and not x:
        return
    want = brute_ls_k(x, q, relation, top, k)
    got = quantile_ls_k(x, q, 0, top, k, relation)
    assert want <= got <= want * (1 + 2**-50)


@settings(max_examples=60, deadline=None)
@given(data=DATA, q=st.sampled_from(QS), relation=st.sampled_from(RELATIONS), beta=st.sampled_from([0.3, 0.7, 1.5]))
def test_smooth_sensitivity_equals_brute_force(data: tuple[int, list[int]], q: Fraction, relation: Relation, beta: float) -> None:
    top, xs = data
    x = tuple(sorted(xs))
    if relation == "substitution" and not x:
        assert smooth_sensitivity_quantile(x, q, 0, top, beta, relation) == 0.0
        return
    # LS_k = top once k ≥ n + 1, so the max over k ≤ n + 1 is the full max
    want = brute_smooth(x, q, relation, top, beta, len(x) + 1)
    fast = smooth_sensitivity_quantile(x, q, 0, top, beta, relation)
    slow = smooth_sensitivity_quantile_quadratic(x, q, 0, top, beta, relation)
    # β₀ ≥ β(1 − 2⁻²⁰) (21-bit rounding, module docstring) bounds the excess
    for got in (fast, slow):
        assert want <= got <= want * math.exp(beta * 2**-19 * (len(x) + 2)) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(data=DATA, q=st.sampled_from(QS), relation=st.sampled_from(RELATIONS), beta=st.sampled_from([0.2, 0.9]))
def test_the_computed_bound_is_beta_smooth_on_every_neighbour(data: tuple[int, list[int]], q: Fraction, relation: Relation, beta: float) -> None:
    top, xs = data
    x = tuple(sorted(xs))
    sx = smooth_sensitivity_quantile(x, q, 0, top, beta, relation)
    assert sx >= brute_ls(x, q, relation, top)
    for y in neighbours(x, relation, top):
        sy = smooth_sensitivity_quantile(y, q, 0, top, beta, relation)
        assert sx <= math.exp(beta) * sy


# --- reference values ------------------------------------------------------------------


@pytest.mark.parametrize(("beta", "want"), [(0.1, 5.48812), (0.5, 1.56191), (1.0, 1.0)])
def test_reference_values_median_substitution(beta: float, want: float) -> None:
    for fn in (smooth_sensitivity_quantile, smooth_sensitivity_quantile_quadratic):
        got = fn(np.arange(7.0), Fraction(1, 2), 0, 10, beta, "substitution")
        assert got >= want - 5e-6
        assert got == pytest.approx(want, abs=5e-6)


def test_reference_values_are_upper_bounds_of_the_exact_expression() -> None:
    # β = 0.1: k = 6, LS_6 = 10; β = 0.5: k = 3, LS_3 = 7; β = 1: k = 0, LS_0 = 1
    exact = {0.1: 10 * math.exp(-0.6), 0.5: 7 * math.exp(-1.5), 1.0: 1.0}
    for beta, v in exact.items():
        got = smooth_sensitivity_quantile(np.arange(7.0), "1/2", 0, 10, beta, "substitution")
        assert v <= got <= v * math.exp(beta * 2**-19 * 7) * (1 + 1e-9)


# --- fast == quadratic ------------------------------------------------------------------


def _random_sorted(gen: np.random.Generator, n: int, kind: int) -> tuple[npt.NDArray[np.float64], float, float]:
    if kind == 0:  # heavy ties on a small integer domain, values at both bounds
        return np.sort(gen.integers(0, 6, n).astype(np.float64)), 0.0, 5.0
    if kind == 1:
        return np.sort(gen.uniform(-3, 7, n)), -3.0, 7.0
    if kind == 2:  # clipped: many values exactly at the bounds
        return np.sort(np.clip(gen.normal(0, 5, n), -2, 2)), -2.0, 2.0
    x = np.sort(np.round(gen.exponential(3, n), 1))
    return np.clip(x, 0, 10), 0.0, 10.0


@pytest.mark.parametrize("relation", RELATIONS)
def test_fast_equals_quadratic_on_random_inputs(relation: Relation) -> None:
    gen = np.random.Generator(np.random.PCG64(11))
    for trial in range(53):  # 50 small inputs and 3 large ones (the quadratic reference is slow there; more below)
        n = int(gen.integers(0, 120)) if trial < 50 else int(gen.integers(500, 2001))
        x, lo, hi = _random_sorted(gen, n, trial % 4)
        q = QS[trial % len(QS)] if trial % 3 else Fraction(int(gen.integers(1, 99)), 100)
        beta = float(gen.choice([0.003, 0.05, 0.3, 2.0]))
        fast = smooth_sensitivity_quantile(x, q, lo, hi, beta, relation)
        slow = smooth_sensitivity_quantile_quadratic(x, q, lo, hi, beta, relation)
        assert fast == pytest.approx(slow, rel=1e-9), (n, q, beta)


@pytest.mark.slow
@pytest.mark.parametrize("relation", RELATIONS)
def test_fast_equals_quadratic_many_n_2000(relation: Relation) -> None:
    gen = np.random.Generator(np.random.PCG64(12))
    for trial in range(16 if relation == "add_remove" else 40):
        x, lo, hi = _random_sorted(gen, 2000, trial % 4)
        q = Fraction(int(gen.integers(0, 101)), 100)
        beta = float(gen.choice([0.001, 0.01, 0.1, 1.0]))
        fast = smooth_sensitivity_quantile(x, q, lo, hi, beta, relation)
        slow = smooth_sensitivity_quantile_quadratic(x, q, lo, hi, beta, relation)
        assert fast == pytest.approx(slow, rel=1e-9)


# --- rounding and degenerate inputs ---------------------------------------------------


def test_never_underflows_to_zero() -> None:
    x = np.full(20_000, 5.0)  # all ties: S* ≈ e^{−β·10⁴}·5, far below the float range
    for relation in RELATIONS:
        s = smooth_sensitivity_quantile(x, "1/2", 0, 10, 1.0, relation)
        assert s == FLOOR > 0


def test_degenerate_range_and_empty_data() -> None:
    assert smooth_sensitivity_quantile([3.0, 3.0], "1/2", 3, 3, 0.5, "add_remove") == 0.0
    assert smooth_sensitivity_quantile([], "1/2", 0, 10, 0.5, "substitution") == 0.0
    # add/remove on empty data: adding one row moves the median from l to anything
    assert smooth_sensitivity_quantile([], "1/2", 0, 10, 0.5, "add_remove") == pytest.approx(10.0)


def test_tiny_beta_returns_the_global_cap() -> None:
    s = smooth_sensitivity_quantile([1.0, 2.0, 3.0], "1/2", 0, 10, 1e-9, "substitution")
    assert 10.0 <= s <= 10.0 * (1 + 1e-12)


def test_fractional_bounds_are_rounded_outward() -> None:
    s = smooth_sensitivity_quantile([], "1/2", Fraction(1, 10), Fraction(7, 10), 0.5, "add_remove")
    assert Fraction(s) >= Fraction(6, 10)


def test_large_n_is_fast_and_matches_the_profile() -> None:
    gen = np.random.Generator(np.random.PCG64(3))
    x = np.sort(gen.uniform(0, 100, 200_000))
    for relation in RELATIONS:
        s = smooth_sensitivity_quantile(x, "1/2", 0, 100, 0.05, relation)

        def prof(ks: npt.NDArray[np.int64], relation: Relation = relation) -> npt.NDArray[np.float64]:
            return np.array([quantile_ls_k(x, "1/2", 0, 100, int(k), relation) for k in ks])

        ref = smooth_sensitivity_from_profile(prof, 0.05, ls_cap=100.0 * (1 + 2**-50), k_max=x.size + 1, vectorised=True)
        assert s == pytest.approx(ref, rel=1e-9)


# --- the generic profile form -----------------------------------------------------------


def test_profile_early_stop_is_exact() -> None:
    calls: list[int] = []

    def ls(k: int) -> float:
        calls.append(k)
        return min(1.0 + k, 50.0)

    s = smooth_sensitivity_from_profile(ls, 0.2, ls_cap=50.0, k_max=10_000)
    want = max(math.exp(-0.2 * k) * min(1.0 + k, 50.0) for k in range(10_001))
    assert want <= s <= want * math.exp(0.2 * 2**-19 * 200) * (1 + 1e-9)
    assert max(calls) < 200  # stopped long before k_max


def test_profile_includes_the_tail_beyond_k_max() -> None:
    s = smooth_sensitivity_from_profile(lambda k: 0.0, 0.5, ls_cap=10.0, k_max=3)
    assert s >= 10.0 * math.exp(-0.5 * 4)


def test_profile_vectorised_equals_scalar() -> None:
    a = smooth_sensitivity_from_profile(lambda k: float(k % 7), 0.3, ls_cap=6.0, k_max=100)
    b = smooth_sensitivity_from_profile(lambda ks: (ks % 7).astype(np.float64), 0.3, ls_cap=6.0, k_max=100, vectorised=True)
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": float("nan")}, "beta"),
        ({"beta": True}, "beta"),
        ({"ls_cap": -1.0}, "ls_cap"),
        ({"k_max": -1}, "k_max"),
        ({"k_max": 1.5}, "k_max"),
    ],
)
def test_profile_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"beta": 0.5, "ls_cap": 1.0, "k_max": 10} | kwargs
    with pytest.raises(InvalidArgument) as info:
        smooth_sensitivity_from_profile(lambda k: 0.0, args["beta"], ls_cap=args["ls_cap"], k_max=args["k_max"])  # type: ignore[arg-type]
    assert info.value.field == field


def test_profile_rejects_values_above_the_cap() -> None:
    with pytest.raises(InvalidArgument, match="ls_at"):
        smooth_sensitivity_from_profile(lambda k: 2.0, 0.5, ls_cap=1.0, k_max=10)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (([1.0, 0.0], "1/2", 0, 1, 0.5, "substitution"), "sorted_values"),  # unsorted
        (([1.0, 5.0], "1/2", 0, 1, 0.5, "substitution"), "sorted_values"),  # outside the clip
        (([np.nan], "1/2", 0, 1, 0.5, "substitution"), "sorted_values"),
        (([0.5], "3/2", 0, 1, 0.5, "substitution"), "q"),
        (([0.5], "1/2", 2, 1, 0.5, "substitution"), "lower"),
        (([0.5], "1/2", 0, 1, -0.5, "substitution"), "beta"),
        (([0.5], "1/2", 0, 1, 0.5, "swap"), "relation"),
    ],
)
def test_quantile_invalid_arguments(args: tuple[object, ...], field: str) -> None:
    for fn in (smooth_sensitivity_quantile, smooth_sensitivity_quantile_quadratic):
        with pytest.raises(InvalidArgument) as info:
            fn(*args)  # type: ignore[arg-type]
        assert info.value.field == field
        assert "5.0" not in str(info.value)  # never prints data


# --- exhaustive LS_k on a non-uniform domain (ported from the second implementation) ----

EX_DOMAIN = (0, 1, 3, 4, 7)  # bounds [0, 7], both included


@lru_cache(maxsize=None)
def _ex_ls(y: Data, q: Fraction, relation: Relation) -> int:
    fy = value(y, q)
    return max((abs(fy - value(z, q)) for z in _ex_neighbours(y, relation)), default=0)


@lru_cache(maxsize=None)
def _ex_neighbours(y: Data, relation: Relation) -> frozenset[Data]:
    return frozenset(domain_neighbours(y, relation, EX_DOMAIN))


def _ex_profile(x: Data, q: Fraction, relation: Relation, k_max: int) -> list[int]:
    seen = {x}
    front = {x}
    cur = _ex_ls(x, q, relation)
    out = [cur]
    for _ in range(k_max):
        front = {z for y in front for z in _ex_neighbours(y, relation)} - seen
        seen |= front
        cur = max([cur] + [_ex_ls(y, q, relation) for y in front])
        out.append(cur)
    return out


def test_ls_k_exhaustive_small_domain() -> None:
    import itertools

    for q in (Fraction(1, 2), Fraction(1, 3), Fraction(0), Fraction(1), Fraction(3, 4)):
        for relation in RELATIONS:
            for n in range(0, 4):
                for x in itertools.combinations_with_replacement(EX_DOMAIN, n):
                    want = _ex_profile(x, q, relation, 4)
                    got = [quantile_ls_k(x, q, 0, 7, k, relation) for k in range(5)]
                    assert all(w <= g <= w * (1 + 2**-50) for w, g in zip(want, got)), (q, relation, x)


def test_profile_never_below_the_true_max_at_large_k() -> None:
    # the maximum sits at k = 2000 with kβ = 200: the exponent's rounding must be covered
    s = smooth_sensitivity_from_profile(lambda k: 1e-100 if k < 2000 else 1.0, 0.1, ls_cap=1.0, k_max=5000)
    assert s >= math.exp(-2000 * 0.1)


# --- the public interface: dpalg.sensitivity.smooth_sensitivity ------------------------

MED = Query.median("x") | Clip(0, 10)


@pytest.mark.parametrize(("beta", "want"), [(0.1, 5.48812), (0.5, 1.56191), (1.0, 1.0)])
def test_interface_reference_values(beta: float, want: float) -> None:
    got = smooth_sensitivity(MED, np.arange(7), beta)
    assert isinstance(got, float)
    assert got == pytest.approx(want, abs=5e-6) and got >= want - 5e-6


@settings(max_examples=60, deadline=None)
@given(data=DATA, relation=st.sampled_from(RELATIONS), beta=st.sampled_from([0.2, 0.6, 1.3]), kind=st.sampled_from(["median", "q", "max", "min"]))
def test_interface_equals_brute_force(data: tuple[int, list[int]], relation: Relation, beta: float, kind: str) -> None:
    """Median, a quantile, max and min (both relations) against the definition on {0..top}."""
    top, xs = data
    x = tuple(sorted(xs))
    if relation == "substitution" and not x:
        return
    if kind == "min":  # min(x) = top − max(top − x) on [0, top]; empty data: top
        query, q, y = Query.min("x") | Clip(0, top), Fraction(1), tuple(sorted(top - v for v in x))
    elif kind == "max":
        query, q, y = Query.max("x") | Clip(0, top), Fraction(1), x
    else:
        qq = Fraction(1, 2) if kind == "median" else Fraction(1, 3)
        query = (Query.median("x") if kind == "median" else Query.quantile("x", qq)) | Clip(0, top)
        q, y = qq, x
    want = brute_smooth(y, q, relation, top, beta, len(x) + 1)
    got = smooth_sensitivity(query, np.array(x, dtype=np.float64), beta, relation)
    assert want <= got <= want * math.exp(beta * 2**-19 * (len(x) + 2)) * (1 + 1e-9)


def test_interface_other_catalog_queries_use_the_catalog_profile() -> None:
    x = np.array([0.0, 1, 1, 2, 5, 8])
    for query in (Query.mean("x") | Clip(0, 10), Query.sum("x") | Clip(0, 10), Query.count("x")):
        for relation in RELATIONS:
            beta = 0.4
            prof = ls_profile(query, x, x.size + 40, relation)
            want = max(math.exp(-beta * k) * float(v) for k, v in enumerate(prof))
            assert smooth_sensitivity(query, x, beta, relation) == pytest.approx(want, rel=1e-9, abs=1e-20)


def test_interface_drops_nan_and_clips() -> None:
    raw = np.array([np.nan, -5.0, 1.0, 2.0, 50.0])
    assert smooth_sensitivity(MED, raw, 0.5) == smooth_sensitivity(MED, [0.0, 1.0, 2.0, 10.0], 0.5)


@pytest.mark.parametrize(
    ("query", "field"),
    [(Query.mode("x"), "query"), (Query.median("x"), "query"), (Query.sum("x"), "query"), ("median", "query")],
)
def test_interface_rejects_queries_without_ls_k(query: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        smooth_sensitivity(query, [1.0], 0.5)
    assert info.value.field == field
    with pytest.raises(InvalidArgument):
        smooth_sensitivity(MED, [1.0], 0.5, relation="swap")
