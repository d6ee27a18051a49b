"""Conformance: the reductions seam answers exactly what the old full-array computations did (issue 16).

Each reduction of :class:`~dpalg.data.NumpyReductions` is compared with the
computation the mechanisms ran on the whole column before the seam
(``Query.values`` then ``exact_clipped_sum``, ``np.unique``, ``np.sort``), on
hypothesis columns with NaN, ±inf, huge values, ties and empty data, and with
blocks small enough that every column spans several of them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import LatticeSum, NumpyReductions, Reductions, Relation, SumSpec, as_dataset, as_reductions
from dpalg.data import _numpy_reductions as nr
from dpalg.noise import exact_clipped_sum
from dpalg.queries import Clip, Query

_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.5, -3.0, 1e308, -1e308, 5e-324, float("nan"), float("inf")]),
    st.integers(-50, 50).map(float),
)
_columns = st.lists(_values, max_size=60).map(lambda v: np.array(v, dtype=np.float64))
_bounds = st.tuples(
    st.sampled_from(["-1e308", "-1000", "-3", "0", "1/10", "1/3", "2", "10", "1e300"]),
    st.sampled_from(["-2", "0", "1/10", "1/3", "1", "7/2", "100", "1e308", "2e308"]),
).map(lambda t: (Fraction(t[0]), Fraction(t[1]))).filter(lambda t: t[0] <= t[1])


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nr, "BLOCK", 7)  # several blocks per column: block boundaries are exercised
    monkeypatch.setattr(nr, "_WINDOW_BUCKETS", 4)  # the bucketed order window, on short columns


def _old_values(x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction) -> npt.NDArray[np.float64]:
    return Query.sum("x").__or__(Clip(lower, upper)).values(as_dataset({"x": x}))


def _finite_bounds(lower: Fraction, upper: Fraction) -> bool:
    return abs(lower) <= Fraction(17, 10) * Fraction(10) ** 308 and abs(upper) <= Fraction(17, 10) * Fraction(10) ** 308


@settings(max_examples=300, deadline=None)
@given(x=_columns, bounds=_bounds, k=st.integers(-80, 40))
def test_clipped_sums_equal_the_full_array_sum(x: npt.NDArray[np.float64], bounds: tuple[Fraction, Fraction], k: int) -> None:
    lower, upper = bounds
    if not _finite_bounds(lower, upper):
        return
    old = _old_values(x, lower, upper)
    expected = LatticeSum(exact_clipped_sum(old, lower, upper, k), int(old.size), k)
    r = as_reductions(as_dataset({"x": x}))
    assert r.clipped_sums([SumSpec("x", lower, upper, k)]) == [expected]
    assert r.count("x") == old.size


@settings(max_examples=200, deadline=None)
@given(x=_columns, bounds=_bounds, bits=st.integers(1, 6))
def test_grid_counts_equal_the_old_grid_index(x: npt.NDArray[np.float64], bounds: tuple[Fraction, Fraction], bits: int) -> None:
    lower, upper = bounds
    if lower >= upper or not _finite_bounds(lower, upper):
        return
    old = _old_values(x, lower, upper)
    size = 1 << bits
    with np.errstate(all="ignore"):
        pos = (old * 0.5 - float(lower) * 0.5) * float(Fraction(2 * size) / (upper - lower))
    idx = np.clip(np.rint(pos), 0, size).astype(np.int64)
    expected = np.bincount(idx, minlength=size + 1)
    cells, counts = NumpyReductions(as_dataset({"x": x})).grid_counts("x", lower, upper, bits)
    assert cells.tolist() == np.flatnonzero(expected).tolist()
    assert counts.tolist() == expected[cells].tolist()
    sparse_cells, sparse_counts = nr.grid_counts(x, lower, upper, 20)  # a grid much larger than the column: the sorting path
    with np.errstate(all="ignore"):
        pos20 = (old * 0.5 - float(lower) * 0.5) * float(Fraction(2 << 20) / (upper - lower))
    want20 = np.unique(np.clip(np.rint(pos20), 0, 1 << 20).astype(np.int64), return_counts=True)
    assert sparse_cells.tolist() == want20[0].tolist() and sparse_counts.tolist() == want20[1].tolist()


@settings(max_examples=200, deadline=None)
@given(x=_columns, bounds=_bounds, first=st.integers(-3, 70), width=st.integers(-2, 20), k=st.integers(0, 12))
def test_order_window_and_extremes_equal_the_sorted_column(
    x: npt.NDArray[np.float64], bounds: tuple[Fraction, Fraction], first: int, width: int, k: int
) -> None:
    lower, upper = bounds
    if not _finite_bounds(lower, upper):
        return
    full = np.sort(_old_values(x, lower, upper))
    r = NumpyReductions(as_dataset({"x": x}))
    w = r.order_window("x", lower, upper, first, first + width)
    lo, hi = max(first, 0), min(first + width, full.size - 1)
    assert w.n == full.size
    assert w.values.tolist() == (full[lo : hi + 1].tolist() if lo <= hi else [])
    n, small, large = r.extremes("x", lower, upper, k)
    m = min(k, n)
    assert n == full.size
    assert small.tolist() == full[:m].tolist()
    assert large.tolist() == (full[full.size - m :].tolist() if m else [])


def test_counts_distinct_and_units() -> None:
    r = as_reductions(as_dataset({"x": [1.0, 1.0, None, 2.0, float("nan")], "u": ["a", "b", None, "a", "c"]}))
    assert isinstance(r, Reductions)
    assert (r.n_rows, r.count("x"), r.count_distinct("x"), r.unit_count("u")) == (5, 3, 2, 3)
    assert r.key_counts("u", ["a", "c", "z"]).tolist() == [2, 1, 0]


def test_empty_column_answers() -> None:
    r = NumpyReductions(as_dataset({"x": np.zeros(0)}))
    assert r.clipped_sums([SumSpec("x", Fraction(0), Fraction(1), -3)]) == [LatticeSum(0, 0, -3)]
    assert [a.tolist() for a in r.grid_counts("x", Fraction(0), Fraction(1), 2)] == [[], []]
    assert r.order_window("x", Fraction(0), Fraction(1), 0, 5).values.size == 0
    assert r.extremes("x", Fraction(0), Fraction(1), 3)[0] == 0


def test_fast_sum_path_is_taken_and_wide_bounds_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = nr._lattice_sum_exact

    def spy(*args: object) -> LatticeSum:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nr, "_lattice_sum_exact", spy)
    x = np.array([1.0, 2.0, np.nan])
    nr.lattice_sum(x, Fraction(0), Fraction(10), -20)
    assert calls == []  # ordinary bounds: the block-wise float path
    nr.lattice_sum(x, Fraction(0), Fraction(10) ** 300, -20)
    assert calls == [1]  # terms beyond 2**52: the exact path


def test_a_wrong_fold_of_the_integer_clamp_is_caught() -> None:
    """The broken variant (clamp to the outward lattice bounds instead of the clip) differs."""
    x = np.array([5.0])
    lower, upper, k = Fraction(0), Fraction(2, 5), 0  # ceil(0.4) = 1, but clip(5, 0, 0.4) rounds to 0
    assert nr.lattice_sum(x, lower, upper, k).total == exact_clipped_sum(np.clip(x, 0, 0.4), lower, upper, k) == 0
    assert int(np.rint(np.clip(x, 0, 1))[0]) == 1  # what clamping to [L, U] = [0, 1] would have given


# --- mechanisms' summaries against their full-array computations --------------------------

_moderate = st.lists(
    st.one_of(st.floats(-200, 200), st.sampled_from([0.0, 10.0, -10.0, 3.5, float("nan"), float("inf"), -float("inf")])),
    max_size=40,
).map(lambda v: np.array(v, dtype=np.float64))


@settings(max_examples=200, deadline=None)
@given(x=_moderate, bounds=st.sampled_from([(-10, 10), (0, 1), (0, 100), ("-1/3", "7/3"), (5, 6)]),
       relation=st.sampled_from(["add_remove", "substitution"]), cap=st.integers(0, 12), beta=st.sampled_from([0.0, 0.01, 0.3, 2.0]))
def test_ptr_mean_summary_equals_the_full_array_profile(
    x: npt.NDArray[np.float64], bounds: tuple[object, object], relation: str, cap: int, beta: float
) -> None:
    from dpalg.mechanisms.ptr._propose_test import exact_value
    from dpalg.mechanisms.ptr._summary import mean_distance_and_value
    from dpalg.sensitivity import distance_to_instability, ls_profile
    from dpalg.sensitivity._ls_mean import mean_ls_profile_from_extremes

    lower, upper = Fraction(str(bounds[0])), Fraction(str(bounds[1]))
    query = Query.mean("x") | Clip(lower, upper)
    values = query.values(as_dataset({"x": x}))
    rel: Relation = "add_remove" if relation == "add_remove" else "substitution"
    gamma, value = mean_distance_and_value(query, rel, as_dataset({"x": x}), beta, cap)
    assert gamma == distance_to_instability(query, values, beta, rel, cap=cap)
    old = exact_value(query, values)
    assert abs(value - old) <= float(max(abs(lower), abs(upper))) * 2.0**-49  # within the release's float-error slack
    if rel == "add_remove":
        xs = np.sort(values)
        m = min(cap + 1, xs.size)
        summary = mean_ls_profile_from_extremes(
            xs.size, sum((Fraction(v) for v in xs.tolist()), Fraction(0)), xs[:m], xs[xs.size - m :], float(lower), float(upper), cap
        )
        want = ls_profile(query, values, cap, rel)
        assert np.array_equal(np.isinf(summary), np.isinf(want))
        finite = ~np.isinf(want)
        assert bool(np.all(np.abs(summary[finite] - want[finite]) <= 1e-12 * np.abs(want[finite]) + 1e-15))


@settings(max_examples=200, deadline=None)
@given(idx=st.lists(st.integers(0, 16), max_size=30), q=st.sampled_from(["1/2", "1/4", "9/10", "0", "1"]))
def test_quantile_runs_from_counts_equal_the_sorted_runs(idx: list[int], q: str) -> None:
    from dpalg.mechanisms.selection._exponential import quantile_runs, quantile_runs_from_counts

    arr = np.array(idx, dtype=np.int64)
    counts = np.bincount(arr, minlength=17)
    occupied = np.flatnonzero(counts).astype(np.int64)
    got = quantile_runs_from_counts(occupied, counts[occupied], 16, Fraction(q))
    want = quantile_runs(arr, 16, Fraction(q))
    assert all(g.tolist() == w.tolist() for g, w in zip(got, want))


def test_order_window_with_huge_bounds_and_infinities() -> None:
    x = np.array([np.inf, -np.inf, 1e308, -1e308, 0.0, np.nan, 3.0])
    lower, upper = Fraction(-10**308), Fraction(10**308)
    full = np.sort(_old_values(x, lower, upper))
    w = NumpyReductions(as_dataset({"x": x})).order_window("x", lower, upper, 0, 10)
    assert w.values.tolist() == full.tolist() and w.n == 6
    flat = NumpyReductions(as_dataset({"x": np.array([np.inf, 2.0, -np.inf])})).order_window("x", Fraction(2), Fraction(2), 0, 2)
    assert flat.values.tolist() == [2.0, 2.0, 2.0]  # lower == upper: one bucket, infinities clipped, never missing


@settings(max_examples=200, deadline=None)
@given(x=_moderate, kind=st.sampled_from(["median", "quantile", "max", "min"]), bounds=st.sampled_from([(-10, 10), (0, 1), ("-1/3", "7/3")]),
       relation=st.sampled_from(["add_remove", "substitution"]), cap=st.integers(0, 12), beta=st.sampled_from([0.0, 0.05, 0.5, 3.0]))
def test_ptr_order_window_equals_the_full_array_profile(
    x: npt.NDArray[np.float64], kind: str, bounds: tuple[object, object], relation: str, cap: int, beta: float
) -> None:
    from dpalg.mechanisms.ptr._propose_test import exact_value
    from dpalg.mechanisms.ptr._summary import order_distance_and_value
    from dpalg.sensitivity import distance_to_instability

    base = {"median": Query.median("x"), "quantile": Query.quantile("x", "3/10"), "max": Query.max("x"), "min": Query.min("x")}[kind]
    query = base | Clip(Fraction(str(bounds[0])), Fraction(str(bounds[1])))
    data = as_dataset({"x": x})
    values = query.values(data)
    rel: Relation = "add_remove" if relation == "add_remove" else "substitution"
    gamma, value = order_distance_and_value(query, rel, data, beta, cap)
    assert gamma == distance_to_instability(query, values, beta, rel, cap=cap)
    assert value == exact_value(query, values)


@pytest.mark.parametrize("kind", ["median", "max", "min"])
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_ptr_order_window_on_a_long_column_with_ties(kind: str, relation: Relation) -> None:
    from dpalg.mechanisms.ptr._propose_test import exact_value
    from dpalg.mechanisms.ptr._summary import order_distance_and_value
    from dpalg.sensitivity import distance_to_instability

    gen = np.random.default_rng(7)
    x = np.concatenate([np.round(gen.normal(5, 2, 3000), 1), [np.nan] * 5, [np.inf, -np.inf]])
    query = {"median": Query.median("x"), "max": Query.max("x"), "min": Query.min("x")}[kind] | Clip(0, 10)
    values = query.values(as_dataset({"x": x}))
    for beta in (0.0, 0.1, 1.0):
        gamma, value = order_distance_and_value(query, relation, as_dataset({"x": x}), beta, 40)
        assert gamma == distance_to_instability(query, values, beta, relation, cap=40)
        assert value == exact_value(query, values)


def test_key_histogram_is_the_present_keys_in_key_order() -> None:
    r = NumpyReductions(as_dataset({"k": np.array(["b", None, "a", "b", 1, 1.0, float("nan")], dtype=object)}))
    keys, counts = r.key_histogram("k")
    assert keys == (1, "a", "b") and counts.tolist() == [2, 1, 2]


def test_as_reductions_picks_the_backend_by_type() -> None:
    data = as_dataset({"x": [1.0]})
    r = as_reductions(data)
    assert isinstance(r, NumpyReductions) and as_reductions(r) is r
    with pytest.raises(Exception, match="Reductions backend"):
        as_reductions({"x": [1.0]})  # type: ignore[arg-type]
