"""The truncated smooth bound from an order window of public width (issue 16).

Checks, independently of the implementation's reasoning:

* on small domains, ``Ŝ_K`` equals ``max(max_{k≤K} e^{−kβ}·LS_k, e^{−(K+1)β}(u − l))``
  computed from the exact ``LS_k`` (verified against brute force in test_smooth.py);
* it is β-smooth on every neighbour pair of an exhaustive domain, and a broken
  variant whose K depends on the data (on LS_0) is not;
* the virtual array (data inside the window, the bounds outside) gives the same
  bound as the full sorted data, on hypothesis data;
* SmoothBound's windowed centre and scale agree with the full computation.
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import as_dataset
from dpalg.data._numpy_reductions import order_window
from dpalg.mechanisms import SmoothBound
from dpalg.mechanisms.smooth._smooth_bound import _windowed_center_and_scale
from dpalg.mechanisms._common.smooth_quantile import center_and_scale
from dpalg.queries import Clip, Query
from dpalg.sensitivity._smooth_quantile import quantile_ls_k
from dpalg.sensitivity._smooth_rounding import Relation
from dpalg.sensitivity._testing import value_neighbours as neighbours
from dpalg.sensitivity._smooth_window import smooth_from_window, window_levels, window_ranks

Data = tuple[int, ...]
RELATIONS: tuple[Relation, ...] = ("add_remove", "substitution")


def truncated(x: Data, q: Fraction, top: int, beta: float, levels: int, relation: Relation) -> float:
    terms = [math.exp(-beta * k) * quantile_ls_k(x, q, 0, top, k, relation) for k in range(levels + 1)]
    return max([*terms, math.exp(-beta * (levels + 1)) * top])


def s_k(x: Data, q: Fraction, top: int, beta: float, levels: int, relation: Relation) -> float:
    arr = np.array(x, dtype=np.float64)
    return smooth_from_window(arr.size, 0, arr, q, Fraction(0), Fraction(top), beta, relation, levels)


def domain(top: int, max_n: int) -> list[Data]:
    return [tuple(c) for n in range(max_n + 1) for c in itertools.combinations_with_replacement(range(top + 1), n)]


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("levels", [0, 1, 2])
def test_equals_the_truncated_formula_on_a_small_domain(relation: Relation, levels: int) -> None:
    q, top, beta = Fraction(1, 2), 4, 0.6
    for x in domain(top, 4):
        if relation == "substitution" and not x:
            continue
        want = truncated(x, q, top, beta, levels, relation)
        got = s_k(x, q, top, beta, levels, relation)
        # β₀ ≤ β (21-bit rounding and slack) only raises the weights, by a factor ≤ e^{β 2^-19 (K+1)}
        assert want <= got <= want * math.exp(beta * 2**-19 * (levels + 2)) * (1 + 1e-9)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("levels", [0, 1, 3])
def test_is_beta_smooth_on_every_neighbour_pair(relation: Relation, levels: int) -> None:
    q, top, beta = Fraction(1, 2), 4, 0.5

    @functools.cache  # each dataset's bound once (a dataset is the neighbour of many)
    def bound(x: Data) -> float:
        return s_k(x, q, top, beta, levels, relation)

    for x in domain(top, 4):
        sx = bound(x)
        for y in neighbours(x, relation, top):
            if relation == "substitution" and not x:
                continue
            assert sx <= math.exp(beta) * bound(y)


def test_a_data_dependent_level_breaks_smoothness() -> None:
    """The broken variant: K taken from the data (large when LS_0 is small) is not β-smooth."""
    q, top, beta = Fraction(1, 2), 4, 0.5
    relation: Relation = "add_remove"

    @functools.cache
    def broken(x: Data) -> float:
        levels = 0 if quantile_ls_k(x, q, 0, top, 0, relation) > 0 else 6
        return s_k(x, q, top, beta, levels, relation)

    violations = [
        (x, y) for x in domain(top, 4) for y in neighbours(x, relation, top) if broken(x) > math.exp(beta) * broken(y)
    ]
    assert violations  # the public-K version passes the same enumeration (test above)


_data = st.lists(st.one_of(st.integers(0, 30).map(float), st.floats(0, 30)), max_size=300)


@settings(max_examples=80, deadline=None)
@given(xs=_data, q=st.sampled_from([Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(1)]),
       relation=st.sampled_from(RELATIONS), levels=st.integers(0, 12), beta=st.sampled_from([0.05, 0.4, 1.3]))
def test_the_virtual_array_gives_the_full_datas_bound(xs: list[float], q: Fraction, relation: Relation, levels: int, beta: float) -> None:
    x = np.array(xs, dtype=np.float64)
    lower, upper = Fraction(0), Fraction(30)
    full = np.sort(x)
    first, last = window_ranks(x.size, q, levels)
    w = order_window(x, lower, upper, first, last)
    windowed = smooth_from_window(w.n, w.first, w.values, q, lower, upper, beta, relation, levels)
    whole = smooth_from_window(full.size, 0, full, q, lower, upper, beta, relation, levels)
    assert windowed == whole


def test_a_window_that_does_not_cover_the_ranks_is_refused() -> None:
    x = np.arange(100, dtype=np.float64)
    with pytest.raises(ValueError, match="does not cover"):
        smooth_from_window(100, 40, x[40:45], Fraction(1, 2), Fraction(0), Fraction(100), 0.5, "add_remove", 5)


@pytest.mark.parametrize("kind", ["median", "max", "min"])
def test_smooth_bound_windowed_centre_and_scale_match_the_full_computation(kind: str) -> None:
    relation: Relation = "add_remove"  # SmoothBound over a column is add/remove only (require_fixed_n)
    gen = np.random.default_rng(3)
    x = np.concatenate([gen.normal(50, 10, 5000), [np.nan, np.inf, -np.inf]])
    query = {"median": Query.median("x"), "max": Query.max("x"), "min": Query.min("x")}[kind] | Clip(0, 100)
    node = SmoothBound(query, epsilon=1, delta="1e-6", relation=relation)
    a_w, scale_w = _windowed_center_and_scale(node, as_dataset({"x": x}))
    values = query.values(as_dataset({"x": x}))
    q = Fraction(1) if kind in ("max", "min") else Fraction(1, 2)
    lower, upper = (Fraction(-100), Fraction(0)) if kind == "min" else (Fraction(0), Fraction(100))
    sorted_values = np.sort(-values if kind == "min" else values)
    a_f, scale_f = center_and_scale(sorted_values, q, lower, upper, relation, node.constants(), node.lattice_k())
    assert a_w == a_f
    # the truncation adds at most the constant term e^{-(K+1)β₀}(u − l) ≤ 2^k (module docstring)
    step = Fraction(2) ** node.lattice_k() / node.constants().alpha
    assert scale_f <= scale_w <= scale_f + step * (1 + Fraction(1, 2**30))


def test_window_levels_are_public_and_bound_the_constant_term() -> None:
    beta = 0.03
    levels = window_levels(beta, Fraction(0), Fraction(100), -40)
    assert levels == math.ceil(2 * math.log(100 * 2**40) / beta)
    assert math.exp(-(beta / 2) * (levels + 1)) * 100 <= 2.0**-40
    assert window_levels(beta, Fraction(0), Fraction(1, 2**50), -40) == 0
