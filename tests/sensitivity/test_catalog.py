"""Brute-force checks of the local-sensitivity catalog on a small domain (both relations)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import lru_cache

import numpy as np
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
    out: set[Data] = set()
    for i in range(len(data)):
        rest = data[:i] + data[i + 1 :]
        if relation == "add_remove":
            out.add(rest)
        else:
            out.update(tuple(sorted(rest + (v,))) for v in domain)
    if relation == "add_remove":
        out.update(tuple(sorted(data + (v,))) for v in domain)
    out.discard(data)
    return frozenset(out)


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
