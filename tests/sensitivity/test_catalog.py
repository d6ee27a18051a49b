"""Brute-force checks of the local-sensitivity catalog on a small domain (both relations)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.data import Relation
from dpalg.queries import Clip, Query, evaluate_values
from dpalg.sensitivity._catalog import (
    distance_to_instability,
    global_sensitivity,
    local_sensitivity_at_distance,
    ls_profile,
    mode_gap_distance,
)
from dpalg.sensitivity._testing import domain_neighbours

DOMAIN = (0, 1, 2, 3)
WIDE = tuple(range(8))  # count_distinct / mode need fresh values
RELATIONS: tuple[Relation, ...] = ("add_remove", "substitution")
Data = tuple[int, ...]

QUERIES: dict[str, Query] = {
    "count": Query.count("x"),
    "sum": Query.sum("x") | Clip(0, 3),
    "mean": Query.mean("x") | Clip(0, 3),
    "median": Query.median("x") | Clip(0, 3),
    "q0": Query.quantile("x", 0) | Clip(0, 3),
    "q1/3": Query.quantile("x", Fraction(1, 3)) | Clip(0, 3),
    "q3/4": Query.quantile("x", Fraction(3, 4)) | Clip(0, 3),
    "q1": Query.quantile("x", 1) | Clip(0, 3),
    "max": Query.max("x") | Clip(0, 3),
    "min": Query.min("x") | Clip(0, 3),
    "count_distinct": Query.count_distinct("x"),
    "histogram": Query.histogram("x"),
}


def value(query: Query, data: Data) -> float | tuple[int, ...]:
    if query.kind == "histogram":
        return tuple(data.count(v) for v in WIDE)
    return evaluate_values(query, np.array(data, dtype=np.float64))


def diff(query: Query, u: Data, v: Data) -> float:
    fu, fv = value(query, u), value(query, v)
    if isinstance(fu, tuple) and isinstance(fv, tuple):
        return float(sum(abs(p - q) for p, q in zip(fu, fv)))
    assert isinstance(fu, float) and isinstance(fv, float)
    return abs(fu - fv)


@lru_cache(maxsize=None)
def neighbours(data: Data, relation: Relation, domain: tuple[int, ...]) -> frozenset[Data]:
    """The datasets one step from ``data`` (``data`` itself left out), cached for the searches below."""
    return frozenset(domain_neighbours(data, relation, domain) - {data})


def ball(data: Data, k: int, relation: Relation, domain: tuple[int, ...]) -> set[Data]:
    seen = {data}
    frontier = {data}
    for _ in range(k):
        frontier = {z for y in frontier for z in neighbours(y, relation, domain)} - seen
        seen |= frontier
    return seen


def brute_ls(query: Query, data: Data, k: int, relation: Relation) -> float:
    domain = WIDE if query.kind in ("count_distinct", "histogram") else DOMAIN
    return max(
        (max((diff(query, y, z) for z in neighbours(y, relation, domain)), default=0.0)
         for y in ball(tuple(sorted(data)), k, relation, domain)),
        default=0.0,
    )


datasets = st.lists(st.integers(0, 3), min_size=0, max_size=5).map(lambda v: tuple(sorted(v)))


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=25, deadline=None)
@given(data=datasets)
def test_ls_k_matches_brute_force(name: str, relation: Relation, data: Data) -> None:
    query = QUERIES[name]
    values = np.array(data, dtype=np.float64)
    prof = ls_profile(query, values, 2, relation)
    for k in range(3):
        expected = brute_ls(query, data, k, relation)
        got = local_sensitivity_at_distance(query, values, k, relation)
        assert got == pytest.approx(expected, abs=1e-9), (k, data)
        assert prof[k] == pytest.approx(got, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("relation", RELATIONS)
def test_ls_k_exhaustive(name: str, relation: Relation) -> None:
    query = QUERIES[name]
    for n in range(0, 5):
        for data in itertools.combinations_with_replacement(DOMAIN, n):
            prof = ls_profile(query, np.array(data, dtype=np.float64), 3, relation)
            for k in range(4):
                assert prof[k] == pytest.approx(brute_ls(query, data, k, relation), abs=1e-9), (k, data)


def brute_mode_distance(data: Data, relation: Relation) -> int:
    """min{k : some y within k has a neighbour with another mode} (capped at n + 2)."""
    domain = WIDE
    q = Query.mode("x")
    for k in range(len(data) + 3):
        for y in ball(data, k, relation, domain):
            fy = value(q, y)
            if any(not (value(q, z) == fy) for z in neighbours(y, relation, domain)):
                return k
    return len(data) + 2


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.integers(1, 3), max_size=5).map(lambda v: tuple(sorted(v))),
       relation=st.sampled_from(RELATIONS))
def test_mode_gap_distance_brute_force(data: Data, relation: Relation) -> None:
    assert mode_gap_distance(np.array(data, dtype=np.float64), relation) == brute_mode_distance(data, relation)


@settings(max_examples=40, deadline=None)
@given(data=datasets, relation=st.sampled_from(RELATIONS), name=st.sampled_from(sorted(QUERIES)),
       bound=st.sampled_from([0.0, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0]))
def test_distance_to_instability_is_first_k_above(data: Data, relation: Relation, name: str, bound: float) -> None:
    query = QUERIES[name]
    values = np.array(data, dtype=np.float64)
    d = distance_to_instability(query, values, bound, relation)
    cap = len(data) + 2
    prof = ls_profile(query, values, cap, relation)
    above = [k for k in range(cap + 1) if prof[k] > bound]
    assert d == (above[0] if above else cap)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_global_sensitivity_dominates_brute_force(name: str, relation: Relation) -> None:
    query = QUERIES[name]
    gs = global_sensitivity(query, relation)
    worst = max(brute_ls(query, d, 0, relation) for n in range(4) for d in itertools.combinations_with_replacement(DOMAIN, n))
    assert float(gs) >= worst - 1e-12
    if name not in ("count_distinct", "histogram", "count"):
        assert float(gs) == pytest.approx(worst)


def test_profile_large_is_monotone_and_matches_single_k() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(0, 100, size=500).astype(np.float64)
    for query in (Query.median("x") | Clip(0, 100), Query.mean("x") | Clip(0, 100), Query.quantile("x", "0.9") | Clip(0, 100)):
        for relation in RELATIONS:
            prof = ls_profile(query, values, 40, relation)
            assert np.all(np.diff(prof) >= 0)
            for k in (0, 7, 40):
                assert prof[k] == pytest.approx(local_sensitivity_at_distance(query, values, k, relation))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: ls_profile(Query.mode("x"), np.zeros(2), 1), "query"),
        (lambda: ls_profile(Query.median("x"), np.zeros(2), 1), "query"),
        (lambda: ls_profile(Query.count("x"), np.zeros(2), -1), "kmax"),
        (lambda: ls_profile(Query.count("x"), np.zeros(2), 1, "bogus"), "relation"),  # type: ignore[arg-type]
        (lambda: local_sensitivity_at_distance(Query.count("x"), np.zeros(2), True), "k"),
        (lambda: distance_to_instability(Query.count("x"), np.zeros(2), -1.0), "bound"),
        (lambda: ls_profile(Query.count("x"), np.array([1.0, np.nan]), 1), "values"),
        (lambda: global_sensitivity(Query.user_count(user="u")), "query"),
    ],
)
def test_invalid_arguments(call: object, field: str) -> None:
    assert callable(call)
    with pytest.raises(InvalidArgument) as info:
        call()
    assert info.value.field == field


@pytest.mark.parametrize("kind", ["median", "q0.9", "max", "min"])
@pytest.mark.parametrize("relation", RELATIONS)
def test_partial_sort_window_matches_full_sort(kind: str, relation: Relation) -> None:
    query = {"median": Query.median("x"), "q0.9": Query.quantile("x", "0.9"), "max": Query.max("x"), "min": Query.min("x")}[kind]
    query = query | Clip(0, 100)
    values = np.random.default_rng(2).integers(0, 100, size=1000).astype(np.float64)
    windowed = ls_profile(query, values, 30, relation)
    full = ls_profile(query, values, 1002, relation)[:31]  # kmax > n: whole array sorted
    np.testing.assert_array_equal(windowed, full)


# --- trimmed mean and mode (issue 5) ------------------------------------------------------
# Both use the real value domain [a, b]. The brute force runs on an integer grid that
# contains a, b and the data: for the trimmed mean an optimal y only adds a's and b's, and
# for the mode only a, b and data values matter. The mode under substitution also moves
# surplus copies onto fresh "filler" values, so its grid leaves room between the data
# values (data on multiples of 4 in {0, …, 12}).

TRIMS = (Fraction(0), Fraction(1, 5), Fraction(1, 4), Fraction(1, 3), Fraction(2, 5), Fraction(49, 100))
GRID = tuple(range(13))
COARSE = (0, 4, 8, 12)


@lru_cache(maxsize=None)
def cached_value(query: Query, data: Data) -> float:
    return evaluate_values(query, np.array(data, dtype=np.float64))


def nan_diff(fu: float, fv: float) -> float:
    """|f(u) − f(v)| where the empty mode (nan) differs from every value by +inf."""
    if np.isnan(fu) or np.isnan(fv):
        return 0.0 if np.isnan(fu) and np.isnan(fv) else float("inf")
    return abs(fu - fv)


@lru_cache(maxsize=None)
def brute_local(query: Query, y: Data, relation: Relation, domain: tuple[int, ...]) -> float:
    fy = cached_value(query, y)
    return max((nan_diff(fy, cached_value(query, z)) for z in neighbours(y, relation, domain)), default=0.0)


def brute_profile(query: Query, data: Data, kmax: int, relation: Relation, domain: tuple[int, ...]) -> list[float]:
    """[LS_0, …, LS_kmax] by enumerating every dataset within distance k (rings of the ball)."""
    seen = {tuple(sorted(data))}
    frontier = set(seen)
    out = [max(brute_local(query, y, relation, domain) for y in seen)]
    for _ in range(kmax):
        frontier = {z for y in frontier for z in neighbours(y, relation, domain)} - seen
        seen |= frontier
        out.append(max([out[-1], *(brute_local(query, y, relation, domain) for y in frontier)]))
    return out


def assert_profile(got: npt.NDArray[np.float64], want: list[float], note: object) -> None:
    for k, (g, w) in enumerate(zip(got.tolist(), want)):
        if w == float("inf"):
            assert g == float("inf"), (k, note)
        else:
            assert g == pytest.approx(w, abs=1e-9), (k, g, w, note)


@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.lists(st.sampled_from((0, 1, 4, 9)), max_size=5).map(lambda v: tuple(sorted(v))), trim=st.sampled_from(TRIMS))
def test_trimmed_mean_ls_k_matches_brute_force(relation: Relation, data: Data, trim: Fraction) -> None:
    query = Query.trimmed_mean("x", trim) | Clip(0, 9)
    values = np.array(data, dtype=np.float64)
    prof = ls_profile(query, values, 3, relation)
    assert_profile(prof, brute_profile(query, data, 3, relation, (0, 1, 4, 9)), data)
    for k in range(4):  # the single-k path is a different algorithm under add/remove
        assert local_sensitivity_at_distance(query, values, k, relation) == pytest.approx(prof[k], abs=1e-12)


@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.lists(st.integers(0, 2), min_size=3, max_size=9).map(lambda v: tuple(sorted(v))), trim=st.sampled_from(TRIMS[1:]))
def test_trimmed_mean_ls_k_brute_force_larger_k(relation: Relation, data: Data, trim: Fraction) -> None:
    query = Query.trimmed_mean("x", trim) | Clip(0, 2)
    prof = ls_profile(query, np.array(data, dtype=np.float64), 6, relation)
    assert_profile(prof, brute_profile(query, data, 6, relation, (0, 1, 2)), data)


@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.lists(st.integers(0, 3), max_size=7).map(lambda v: tuple(sorted(v))))
def test_mode_ls_k_matches_brute_force(relation: Relation, data: Data) -> None:
    query = Query.mode("x") | Clip(0, 3)
    values = np.array(data, dtype=np.float64)
    prof = ls_profile(query, values, 3, relation)
    assert_profile(prof, brute_profile(query, data, 3, relation, DOMAIN), data)
    for k in range(4):
        assert local_sensitivity_at_distance(query, values, k, relation) == prof[k]


@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.lists(st.sampled_from(COARSE), max_size=5).map(lambda v: tuple(sorted(v))),
       shift=st.sampled_from([0, 1, 3]))
def test_mode_ls_k_brute_force_fine_grid(relation: Relation, data: Data, shift: int) -> None:
    """Fresh values anywhere (grid 0..12 around data on a coarser lattice, endpoints fresh or not)."""
    data = tuple(min(12, v + shift) if 0 < v < 12 else v for v in data)
    query = Query.mode("x") | Clip(0, 12)
    prof = ls_profile(query, np.array(data, dtype=np.float64), 3, relation)
    assert_profile(prof, brute_profile(query, data, 3, relation, GRID), data)


@pytest.mark.parametrize("relation", RELATIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.lists(st.sampled_from((0, 1, 2)), min_size=4, max_size=12).map(lambda v: tuple(sorted(v))))
def test_mode_ls_k_brute_force_larger_k(relation: Relation, data: Data) -> None:
    query = Query.mode("x") | Clip(0, 2)
    prof = ls_profile(query, np.array(data, dtype=np.float64), 7, relation)
    assert_profile(prof, brute_profile(query, data, 7, relation, (0, 1, 2)), data)


def _pos(v: int) -> int:
    return max(0, v)


def mode_by_pair_types(data: Data, a: int, b: int, k: int, relation: Relation) -> float:
    """LS_k of the mode straight from the pair types of the docs, every (C, ℓ < h) tried.

    Independent of the threshold/diagonal reductions of the catalog (and much slower): an
    add/remove pair is (P, P + e) with the mode of P + e equal to e ≠ mode(P); a substitution
    pair (y, z) is y with ℓ, h at the listed target counts and the others capped, at cost
    max(removals, additions) (surplus copies go to fresh values). Needs n ≥ 2.
    """
    n = len(data)
    cnt: dict[int, int] = {}
    for v in data:
        cnt[v] = cnt.get(v, 0) + 1
    values = sorted(set(data) | {a, b})
    c1 = max(cnt.values(), default=0)
    if relation == "add_remove" and (n == 0 or k >= n - 1):
        return float("inf")
    if relation == "substitution" and k >= n:
        return float(b - a)  # any y: {a, b, fresh…} → replace a by b (n ≥ 2 here)
    best = 0.0
    for big_c in range(1, c1 + k + 3):
        for li, lo in enumerate(values):
            for hi in values[li + 1 :]:
                others = [w for w in values if w not in (lo, hi)]
                cl, ch = cnt.get(lo, 0), cnt.get(hi, 0)
                if relation == "add_remove":
                    cost_h = (sum(_pos(cnt.get(w, 0) - big_c + (w < lo)) for w in others)
                              + abs(cl - big_c) + min(abs(ch - big_c), abs(ch - big_c - 1)))
                    cost_l = (sum(_pos(cnt.get(w, 0) - big_c + (w < hi)) for w in others)
                              + abs(ch - big_c) + min(abs(cl - big_c + 1), abs(cl - big_c)))
                    ok = min(cost_h, cost_l) <= k
                else:
                    ok = False
                    for t_lo, t_hi, below in ((big_c, big_c, lo), (big_c + 1, big_c, a - 1), (big_c, big_c + 1, a - 1),
                                              (big_c - 1, big_c + 1, lo), (big_c - 1, big_c, hi)):
                        if t_lo + t_hi > n or (below == hi and big_c == 1 and hi == b):
                            continue
                        rem = (sum(_pos(cnt.get(w, 0) - big_c + (w < below)) for w in others)
                               + _pos(cl - t_lo) + _pos(ch - t_hi))
                        ok = ok or max(rem, _pos(t_lo - cl) + _pos(t_hi - ch)) <= k
                if ok:
                    best = max(best, float(hi - lo))
    return best


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.sampled_from((0, 3, 4, 7, 9, 12, 12, 12)), min_size=2, max_size=22).map(lambda v: tuple(sorted(v))),
       relation=st.sampled_from(RELATIONS))
def test_mode_reductions_match_pair_types(data: Data, relation: Relation) -> None:
    """The O(k)/O(k²) reductions against the plain case analysis, for k up to 12."""
    kmax = min(12, len(data))
    prof = ls_profile(Query.mode("x") | Clip(0, 12), np.array(data, dtype=np.float64), kmax, relation)
    assert prof.tolist() == [mode_by_pair_types(data, 0, 12, k, relation) for k in range(kmax + 1)]


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.integers(1, 4), max_size=12), relation=st.sampled_from(RELATIONS))
def test_mode_first_positive_ls_k_is_mode_gap_distance(data: list[int], relation: Relation) -> None:
    """β = 0 PTR: the first k with LS_k > 0 is :func:`mode_gap_distance` (fresh values exist below every mode)."""
    values = np.array(data, dtype=np.float64)
    cap = len(data) + 2
    prof = ls_profile(Query.mode("x") | Clip(0, 5), values, cap, relation)
    positive = np.flatnonzero(prof > 0)
    assert (int(positive[0]) if positive.size else cap) == mode_gap_distance(values, relation)


def test_mode_add_remove_is_infinite_once_a_singleton_is_reachable() -> None:
    query = Query.mode("x") | Clip(0, 10)
    prof = ls_profile(query, np.array([5.0] * 6), 8)
    assert prof[:5].tolist() == [0.0] * 5 and np.isinf(prof[5:]).all()  # n − 1 = 5 removals leave {5}
    assert np.isinf(ls_profile(query, np.zeros(0), 0)).all()
    assert ls_profile(query, np.zeros(0), 3, "substitution").tolist() == [0.0] * 4
    assert ls_profile(query, np.array([4.0]), 2, "substitution").tolist() == [6.0, 10.0, 10.0]


@pytest.mark.parametrize("trim", ["0", "0.1", "1/3", "0.45"])
@pytest.mark.parametrize("kind", ["ints", "uniform", "skewed"])
def test_trimmed_mean_profile_matches_single_k_and_mean(trim: str, kind: str) -> None:
    """The profile (one pass per dataset size) against the per-k scan; trim 0 against the mean."""
    rng = np.random.default_rng([len(trim), ord(trim[-1]), ord(kind[0])])
    for n in (0, 1, 2, 7, 60, 301):
        values = {"ints": rng.integers(0, 11, n).astype(np.float64), "uniform": rng.random(n) * 10,
                  "skewed": (rng.random(n) ** 4) * 10}[kind]
        query = Query.trimmed_mean("x", trim) | Clip(0, 10)
        for relation in RELATIONS:
            prof = ls_profile(query, values, 40, relation)
            assert np.all(np.diff(prof) >= 0)
            for k in (0, 1, 2, 5, 13, 40):
                assert local_sensitivity_at_distance(query, values, k, relation) == pytest.approx(prof[k], abs=1e-12)
            if trim == "0":
                mean = ls_profile(Query.mean("x") | Clip(0, 10), values, 40, relation)
                np.testing.assert_allclose(prof, mean, rtol=0, atol=1e-12)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("query", [Query.trimmed_mean("x", "1/4") | Clip(0, 3), Query.trimmed_mean("x", "2/5") | Clip(0, 3),
                                   Query.mode("x") | Clip(0, 3)], ids=repr)
def test_global_sensitivity_of_trimmed_mean_and_mode(query: Query, relation: Relation) -> None:
    gs = global_sensitivity(query, relation)
    worst = max(brute_local(query, d, relation, DOMAIN) for n in range(5) for d in itertools.combinations_with_replacement(DOMAIN, n))
    assert float(gs) == worst  # attained: (b − a)/2 and b − a for the trimmed mean, b − a / +inf for the mode
    assert global_sensitivity(Query.trimmed_mean("x", "0.1"), relation) == float("inf")


@settings(max_examples=40, deadline=None)
@given(data=datasets, relation=st.sampled_from(RELATIONS), trim=st.sampled_from(TRIMS),
       mode=st.booleans(), bound=st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0]))
def test_distance_to_instability_trimmed_mean_and_mode(data: Data, relation: Relation, trim: Fraction, mode: bool, bound: float) -> None:
    query = Query.mode("x") | Clip(0, 3) if mode else Query.trimmed_mean("x", trim) | Clip(0, 3)
    values = np.array(data, dtype=np.float64)
    cap = len(data) + 2
    prof = ls_profile(query, values, cap, relation)
    above = [k for k in range(cap + 1) if prof[k] > bound]
    assert distance_to_instability(query, values, bound, relation) == (above[0] if above else cap)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ls_profile(Query.trimmed_mean("x", "0.1"), np.zeros(3), 1),
        lambda: local_sensitivity_at_distance(Query.mode("x"), np.zeros(3), 1, "substitution"),
        lambda: local_sensitivity_at_distance(Query.trimmed_mean("x", "0.1") | Clip(0, 1), np.zeros(3), -1),
        lambda: ls_profile(Query.mode("x") | Clip(0, 1), np.array([[0.0]]), 1),
    ],
)
def test_trimmed_mean_and_mode_invalid_arguments(call: object) -> None:
    assert callable(call)
    with pytest.raises(InvalidArgument):
        call()


@pytest.mark.parametrize("relation", RELATIONS)
def test_trimmed_mean_and_mode_large_data(relation: Relation) -> None:
    """n = 10^5: fast, non-decreasing, single k equals the profile."""
    rng = np.random.default_rng(5)
    for values in (rng.integers(0, 100, 10**5).astype(np.float64), rng.normal(50, 15, 10**5).clip(0, 100)):
        for query in (Query.trimmed_mean("x", "0.1") | Clip(0, 100), Query.mode("x") | Clip(0, 100)):
            prof = ls_profile(query, values, 30, relation)
            assert np.all(np.diff(prof) >= 0) and np.all(prof >= 0)
            for k in (0, 9, 30):
                assert local_sensitivity_at_distance(query, values, k, relation) == pytest.approx(prof[k], abs=1e-12)


# --- issue 14: constant work, overflow, NaN ---------------------------------------------------------


def test_distance_with_a_cap_computes_the_profile_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """No early exit on the private γ: the same kmax for an unstable and a stable dataset."""
    from dpalg.sensitivity import _catalog

    seen: list[int] = []
    real = _catalog.ls_profile

    def counting(query: Query, values: npt.NDArray[np.float64], kmax: int, relation: Relation = "add_remove") -> npt.NDArray[np.float64]:
        seen.append(kmax)
        return real(query, values, kmax, relation)

    monkeypatch.setattr(_catalog, "ls_profile", counting)
    q = Query.median("x") | Clip(0, 3)
    unstable, stable = np.array([0.0, 3.0] * 100), np.full(200, 1.0)
    assert distance_to_instability(q, unstable, 0.5, cap=150) == 0
    assert distance_to_instability(q, stable, 0.5, cap=150) == 150  # γ is beyond the cap
    assert seen == [150, 150]


def test_overflow_safe_mean() -> None:
    from dpalg.sensitivity._catalog import overflow_safe_mean

    gen = np.random.default_rng(0)
    for _ in range(20):
        x = gen.normal(0, 10.0 ** float(gen.integers(-5, 300)), size=int(gen.integers(1, 50)))
        assert overflow_safe_mean(x) == math.fsum(x.tolist()) / x.size  # bit-identical on ordinary data
    top = np.finfo(np.float64).max
    assert overflow_safe_mean(np.array([top, top, top])) == top
    assert overflow_safe_mean(np.array([top, -top])) == 0.0
    assert overflow_safe_mean(np.array([1e308] * 5 + [-1e308] * 5 + [3.0])) == pytest.approx(3 / 11)


@pytest.mark.parametrize("relation", RELATIONS)
def test_nan_in_a_profile_becomes_infinity(relation: Relation, monkeypatch: pytest.MonkeyPatch) -> None:
    """An inf − inf anywhere in a formula is read as +inf (conservative), never as a small number."""
    from dpalg.sensitivity import _catalog

    monkeypatch.setattr(_catalog, "_profile", lambda *args: np.array([0.5, np.nan, 0.25]))
    prof = ls_profile(Query.median("x") | Clip(0, 3), np.array([1.0, 2.0]), 2, relation)
    assert prof.tolist() == [0.5, math.inf, math.inf]
    assert distance_to_instability(Query.median("x") | Clip(0, 3), np.array([1.0, 2.0]), 1.0, relation, cap=2) == 1


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("kind", ["mean", "trimmed_mean", "median", "sum", "mode"])
def test_wide_clips_match_the_same_data_at_an_ordinary_scale(kind: str, relation: Relation) -> None:
    """LS_k is homogeneous: Clip(-2^1000·3, 2^1000·3) on data·2^1000 gives the [−3, 3] profile times 2^1000."""
    make = {"mean": Query.mean, "median": Query.median, "sum": Query.sum, "mode": Query.mode}
    small_q = (Query.trimmed_mean("x", "0.2") if kind == "trimmed_mean" else make[kind]("x")) | Clip(-3, 3)
    big_q = (Query.trimmed_mean("x", "0.2") if kind == "trimmed_mean" else make[kind]("x")) | Clip(-3 * 2**1000, 3 * 2**1000)
    data = np.array([-3.0, -1.0, 0.5, 0.5, 2.0, 3.0])
    small = ls_profile(small_q, data, 4, relation)
    big = ls_profile(big_q, np.ldexp(data, 1000), 4, relation)
    assert np.array_equal(np.ldexp(small, 1000), big)
    with np.errstate(all="raise"):  # no floating-point warning escapes either
        wide = ls_profile(big_q, np.ldexp(data, 1022), 4, relation)
    assert not np.isnan(wide).any()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.25, 7.5, 10.0]) | st.floats(0, 10), max_size=30),
    st.integers(0, 45),
)
def test_vectorised_mean_profile_equals_the_per_k_definition(values: list[float], kmax: int) -> None:
    """The (k, r)-grid profile is bit-identical to evaluating the mean's LS_k one k at a time."""
    from dpalg.sensitivity._ls_mean import _mean_ls, _mean_ls_profile

    xs = np.sort(np.array(values, dtype=np.float64))
    per_k = np.array([_mean_ls(xs, 0.0, 10.0, k) for k in range(kmax + 1)])
    assert np.array_equal(_mean_ls_profile(xs, 0.0, 10.0, kmax), per_k)
