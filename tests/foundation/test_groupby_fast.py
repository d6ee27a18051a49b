"""The grouped fast path of GroupBy: exact, and the per-group release's statistics and noise.

* (a) :class:`~dpalg.data._grouped.GroupedRows` answers, for every released group,
  bit for bit what :class:`~dpalg.data.NumpyReductions` answers on that group's rows
  (hypothesis data with NaN, ±inf, None, missing keys, empty groups, values at the
  lattice clamp, negative bounds, several lattice steps, tiny blocks so that every
  summation path runs); :func:`~dpalg.data._grouped.public_int_codes` gives
  ``group_index``'s codes.
* (b) ``Laplace/Gaussian.release_groups`` computes per group the statistics and
  noise parameters of ``noise_terms`` on that group's rows, asks the sampler for
  exactly the per-group path's parameters (recorded by a fake sampler), and
  post-processes as ``release`` does (constant fake noises: the outputs are equal).
* (c) a seeded GroupBy release is the same on dict, pandas and polars data and after
  a permutation of the rows; under a constant fake noise it is the per-group
  release of every aggregate on every group's rows.
* (d) broken variants (a float64 accumulation of the grouped sum; the mean's count
  noised with the sum's parameter) are caught by the checks of (a) and (b).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pandas as pd
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpalg import Clip, MaxRowsPerUser, PureDP, Query
from dpalg.data import Dataset, LatticeSum, NumpyReductions, SumSpec, as_dataset
from dpalg.data import _grouped as gd
from dpalg.data._groups import group_index
from dpalg.graph._compose import PureToApprox
from dpalg.graph._groupby import GroupBy, KeySet, PartitionSelection
from dpalg.measures import ApproxDP
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace
from dpalg.mechanisms.global_noise import _grouped as mg
from dpalg.mechanisms.global_noise import _laplace_gaussian as lg
from dpalg.noise import AbstractRandomness
from dpalg.noise._random import resolve_rng

_values = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.5, 2.5, -3.0, 1e308, -1e308, 5e-324, float("nan"), float("inf"), float("-inf")]),
    st.sampled_from([2.0**52, -(2.0**52), 2.0**52 - 1, 2.0**53, 3.0 * 2**51, -(2.0**52) + 1]),  # at the lattice clamp
    st.integers(-50, 50).map(float),
)
_bounds = st.tuples(
    st.sampled_from(["-1e308", "-4503599627370496", "-4503599627370497", "-1000", "-3", "-1/3", "0", "1/10", "2"]),
    st.sampled_from(["-2", "0", "1/3", "1", "7/2", "100", "4503599627370496", "4503599627370497", "1e308"]),
).map(lambda t: (Fraction(t[0]), Fraction(t[1]))).filter(lambda t: t[0] <= t[1])


@st.composite
def _grouped_data(draw: st.DrawFn) -> tuple[Dataset, npt.NDArray[np.intp], int, list[int]]:
    n_codes = draw(st.integers(1, 6))
    rows = draw(st.lists(st.tuples(st.integers(-1, n_codes - 1), _values), max_size=40))
    codes = np.array([c for c, _ in rows], dtype=np.intp)
    column = [v for _, v in rows]
    as_object = draw(st.booleans()) or any(v is None for v in column)
    x = np.array(column, dtype=object) if as_object else np.array(column, dtype=np.float64)
    released = draw(st.permutations(range(n_codes)))
    groups = released[: draw(st.integers(0, n_codes))]  # some codes not released, in any order
    return as_dataset({"x": x}), codes, n_codes, list(groups)


def _rows_of(codes: npt.NDArray[np.intp], code: int) -> npt.NDArray[np.intp]:
    return np.flatnonzero(codes == code)  # independent of GroupedRows' own split


def check_grouped_reductions(data: Dataset, codes: npt.NDArray[np.intp], n_codes: int, groups: list[int], specs: list[SumSpec]) -> None:
    """(a): every answer of GroupedRows equals NumpyReductions on the group's rows, bit for bit."""
    grouped = gd.GroupedRows(data, codes, n_codes, groups)
    per_group = [NumpyReductions(data.take(_rows_of(codes, g))) for g in groups]
    assert grouped.n_groups == len(groups)
    assert grouped.row_counts().tolist() == [r.n_rows for r in per_group]
    assert grouped.present_counts("x").tolist() == [r.count("x") for r in per_group]
    for spec in specs:
        got = grouped.clipped_sums(spec)
        want = [r.clipped_sums([spec])[0] for r in per_group]
        assert got == want, (spec, got, want)
        assert all(type(s.total) is int and type(s.count) is int for s in got)
    for i, g in enumerate(groups):
        assert grouped.row_indices(i).tolist() == _rows_of(codes, g).tolist()
        assert grouped.rows(i).numeric("x").tobytes() == data.take(_rows_of(codes, g)).numeric("x").tobytes()


_EXAMPLE_CODES = np.array([0, 0, 0, 1, -1], dtype=np.intp)
_EXAMPLE = (as_dataset({"x": np.array([2.0**52, 2.0**52, 1.0, 3.0, 7.0])}), _EXAMPLE_CODES, 2, [1, 0])  # group 0's sum is 2**53 + 1
_EXAMPLE_SPEC = SumSpec("x", Fraction(-(2**52)), Fraction(2**52), 0)


@pytest.mark.parametrize("block", [4, 1 << 20], ids=["tiny-blocks", "default-blocks"])
@settings(max_examples=250, deadline=None)
@given(case=_grouped_data(), bounds=st.lists(_bounds, min_size=1, max_size=2), ks=st.lists(st.integers(-60, 30), min_size=1, max_size=3))
@example(case=_EXAMPLE, bounds=[(_EXAMPLE_SPEC.lower, _EXAMPLE_SPEC.upper)], ks=[0])
def test_grouped_reductions_equal_per_group_numpy_reductions(
    block: int, case: tuple[Dataset, npt.NDArray[np.intp], int, list[int]], bounds: list[tuple[Fraction, Fraction]], ks: list[int],
) -> None:
    data, codes, n_codes, groups = case
    specs = [SumSpec("x", lo, hi, k) for lo, hi in bounds for k in ks]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gd, "GROUP_BLOCK", block)  # 4: the digit path runs for every lattice bound >= 2**51
        check_grouped_reductions(data, codes, n_codes, groups, specs)


def test_grouped_reductions_on_a_polars_frame_equal_the_numpy_answers() -> None:
    gen = np.random.default_rng(3)
    x = gen.normal(0, 100, 500)
    x[::17] = np.nan
    frame = pl.DataFrame({"x": x}).with_columns(pl.when(pl.Series(np.arange(500) % 23 == 0)).then(None).otherwise(pl.col("x")).alias("x"))
    numpy_x = x.copy()
    numpy_x[np.arange(500) % 23 == 0] = np.nan
    codes = gen.integers(-1, 5, 500).astype(np.intp)
    spec = SumSpec("x", Fraction(-50), Fraction(120), -7)
    on_polars = gd.GroupedRows(as_dataset(frame), codes, 5, [4, 0, 2])
    on_numpy = gd.GroupedRows(as_dataset({"x": numpy_x}), codes, 5, [4, 0, 2])
    assert on_polars.clipped_sums(spec) == on_numpy.clipped_sums(spec)
    assert on_polars.present_counts("x").tolist() == on_numpy.present_counts("x").tolist()
    check_grouped_reductions(as_dataset(frame), codes, 5, [4, 0, 2], [spec])


_INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"]


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(_INT_DTYPES),
    values=st.lists(st.integers(-(2**63), 2**64 - 1), max_size=30),
    keys=st.lists(
        st.one_of(st.integers(-300, 300), st.integers(-(2**63), 2**64), st.booleans(), st.sampled_from([2.5, "a", "b", -0.5])),
        max_size=8,
    ),
    other=st.booleans(),
)
def test_public_int_codes_equal_group_index(dtype: str, values: list[int], keys: list[object], other: bool) -> None:
    info = np.iinfo(np.dtype(dtype))
    column = np.array([min(max(v, int(info.min)), int(info.max)) for v in values], dtype=dtype)
    public = KeySet(list(dict.fromkeys(keys)), other="zz" if other else None)  # normalised, distinct keys (as GroupBy's)
    got = gd.public_int_codes(column, public.keys, other=other)
    if got is None:  # the listed int keys span too many values: the caller takes group_index
        return
    _, want = group_index(as_dataset({"k": column}), ["k"], public.keys, other=other)
    assert got.tolist() == want.tolist()


def test_public_int_codes_declines_uint64_and_wide_key_ranges() -> None:
    assert gd.public_int_codes(np.array([1], dtype=np.uint64), [1]) is None
    assert gd.public_int_codes(np.array([1.0]), [1]) is None
    assert gd.public_int_codes(np.array([1]), [0, 2**40]) is None
    extreme = gd.public_int_codes(np.array([2**63 - 1, -(2**63), 0]), [-(2**63), -(2**63) + 1])
    assert extreme is not None and extreme.tolist() == [-1, 0, -1]


# --- (b) the grouped release: the per-group statistics, noise parameters and post-processing ----------------

_NODES: list[Laplace | Gaussian] = [
    Laplace(Query.count(), epsilon=1),
    Laplace(Query.count("x"), epsilon="1/3", nonnegative=False),
    Laplace(Query.sum("x") | Clip(-3, 10), epsilon=1),
    Laplace(Query.sum("x") | Clip(0, 0), epsilon=1),  # sensitivity 0: no noise drawn
    Laplace(Query.sum("x") | Clip(-1e6, -2), epsilon=2, relation="substitution", granularity=-3),
    Laplace(Query.mean("x") | Clip(-3, 10), epsilon=1),
    Laplace(Query.mean("x") | Clip(0, 1), epsilon=1, granularity=0),  # both terms share one parameter
    Laplace(Query.mean("x") | Clip("1/10", 2.5), epsilon="0.3", relation="substitution"),
    Gaussian(Query.count(), rho="1/2"),
    Gaussian(Query.sum("x") | Clip(-5, 5), rho=1, granularity=2),
    Gaussian(Query.mean("x") | Clip(-100, 1e9), rho="1/8"),
    Gaussian(Query.mean("x") | Clip(-2, 2), rho=1, granularity=1),
]


def check_grouped_terms(node: Laplace | Gaussian, data: Dataset, codes: npt.NDArray[np.intp], n_codes: int, groups: list[int]) -> None:
    """(b), deterministic: each group's grouped terms are ``noise_terms`` on its rows (values, parameters, k, sensitivity)."""
    grouped = gd.GroupedRows(data, codes, n_codes, groups)
    terms = mg.grouped_terms(node.query, lg.public_noise_terms(node), grouped)
    for i, g in enumerate(groups):
        assert [t.of_group(i) for t in terms] == lg.noise_terms(node, data.take(_rows_of(codes, g))), (node, i)


class FakeSampler:
    """A sampler that records (kind, parameter, size) and returns a constant noise per parameter.

    The noise of parameter ``p`` is ``z[i]``, ``i`` the rank of ``p`` among the parameters
    set by :meth:`use` (terms that share a parameter share the noise), so a mean's sum
    and count can get noises of opposite signs.
    """

    def __init__(self, z: int) -> None:
        self.z = [z]
        self.params: list[Fraction] = []
        self.calls: list[tuple[str, Fraction, int]] = []

    def use(self, params: list[Fraction], z: list[int]) -> None:
        self.params, self.z = sorted(set(params)), z

    def _noise(self, param: Fraction, size: int) -> npt.NDArray[np.object_]:
        i = self.params.index(param) if param in self.params else 0
        return np.full(size, self.z[i % len(self.z)], dtype=object)

    def laplace(self, scale: Fraction, size: int, rng: AbstractRandomness) -> npt.NDArray[np.object_]:
        self.calls.append(("laplace", scale, size))
        return self._noise(scale, size)

    def gaussian(self, sigma2: Fraction, size: int, rng: AbstractRandomness) -> npt.NDArray[np.object_]:
        self.calls.append(("gaussian", sigma2, size))
        return self._noise(sigma2, size)

    def drawn(self) -> Counter[tuple[str, Fraction]]:
        """How many noises were drawn with each (kind, parameter)."""
        out: Counter[tuple[str, Fraction]] = Counter()
        for kind, param, size in self.calls:
            out[(kind, param)] += size
        return out


@contextmanager
def fake_noise(z: int) -> Iterator[FakeSampler]:
    """Replace the exact samplers of the per-group and the grouped release by one :class:`FakeSampler`."""
    fake = FakeSampler(z)
    with pytest.MonkeyPatch.context() as patch:
        for module in (lg, mg):
            patch.setattr(module, "discrete_laplace", fake.laplace)
            patch.setattr(module, "discrete_gaussian", fake.gaussian)
        yield fake


def check_grouped_release(
    node: Laplace | Gaussian, data: Dataset, codes: npt.NDArray[np.intp], n_codes: int, groups: list[int], fake: FakeSampler,
) -> None:
    """(b), the noise and the post-processing: the grouped release asks the sampler for the per-group path's
    parameters (as many noises of each) and, given the same noises, releases the same values."""
    rng = resolve_rng(0)
    fake.calls.clear()
    per_group = [node.release(data.take(_rows_of(codes, g)), rng) for g in groups]
    per_group_drawn = fake.drawn()
    fake.calls.clear()
    grouped = node.release_groups(gd.GroupedRows(data, codes, n_codes, groups), rng)
    assert grouped is not None
    assert fake.drawn() == per_group_drawn
    assert all(size == len(groups) for _, _, size in fake.calls)  # one vectorised draw per term kind
    assert [(type(v), v) for v in grouped] == [(type(v), v) for v in per_group]


@settings(max_examples=150, deadline=None)
@given(node=st.sampled_from(_NODES), case=_grouped_data())
def test_grouped_terms_are_noise_terms_per_group(node: Laplace | Gaussian, case: tuple[Dataset, npt.NDArray[np.intp], int, list[int]]) -> None:
    check_grouped_terms(node, *case)


@settings(max_examples=150, deadline=None)
@given(node=st.sampled_from(_NODES), case=_grouped_data(), z=st.lists(st.sampled_from([0, 1, -1, 3, -40, 2**40, -(2**40), -(2**70)]), min_size=2, max_size=2))
@example(node=Laplace(Query.mean("x") | Clip(-3, 10), epsilon=1), case=_EXAMPLE, z=[1, -(2**70)])  # a mean below its lower bound (z: count, then sum parameter)
@example(node=Laplace(Query.mean("x") | Clip(-3, 10), epsilon=1), case=_EXAMPLE, z=[1, 2**70])  # above its upper bound
@example(node=Laplace(Query.mean("x") | Clip(-3, 10), epsilon=1), case=_EXAMPLE, z=[-(2**70), 1])  # a non-positive noisy count
def test_grouped_release_draws_the_per_group_noise_and_post_processes_alike(
    node: Laplace | Gaussian, case: tuple[Dataset, npt.NDArray[np.intp], int, list[int]], z: list[int],
) -> None:
    with fake_noise(0) as fake:
        fake.use([t.param for t in lg.public_noise_terms(node)], z)
        check_grouped_release(node, *case, fake)


@settings(max_examples=400, deadline=None)
@given(
    s=st.one_of(st.integers(-(2**70), 2**70), st.integers(-50, 50)),
    n=st.integers(1, 2**40),
    k=st.integers(-1100, 60),
    bounds=_bounds,
)
def test_the_grouped_mean_formula_is_the_per_group_formula(s: int, n: int, k: int, bounds: tuple[Fraction, Fraction]) -> None:
    lower, upper = bounds
    centre = (lower + upper) // 2 // Fraction(2) ** k if -1000 <= k <= 1000 else 0
    step = Fraction(2) ** k
    try:
        want: float | type[OverflowError] = float(min(max((Fraction(s) / n + centre) * step, lower), upper))  # _release's formula
    except OverflowError:
        want = OverflowError
    try:
        got: float | type[OverflowError] = mg._mean_value(s, n, int(centre), k, lower, upper)
    except OverflowError:
        got = OverflowError
    assert got == want


def test_grouped_release_declines_user_level_and_histograms() -> None:
    grouped = gd.GroupedRows(as_dataset({"x": [1.0], "u": [1], "c": ["a"]}), np.array([0]), 1, [0])
    rng = resolve_rng(0)
    assert Laplace(Query.histogram("c", ["a", "b"]), epsilon=1).release_groups(grouped, rng) is None
    assert Laplace(Query.count(user="u") | MaxRowsPerUser(2), epsilon=1).release_groups(grouped, rng) is None
    assert ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1).release_groups(grouped, rng) is None


# --- (c) the runner --------------------------------------------------------------------------------------


def _aggregates() -> dict[str, Laplace | ExponentialQuantile]:
    return {
        "n": Laplace(Query.count(), epsilon="1/4"),
        "present": Laplace(Query.count("x"), epsilon="1/4", nonnegative=False),
        "total": Laplace(Query.sum("x") | Clip(-5, 40), epsilon="1/4"),
        "mean": Laplace(Query.mean("x") | Clip(-5, 40), epsilon="1/4"),
        "median": ExponentialQuantile(Query.median("x") | Clip(-5, 40), epsilon="1/4"),  # the per-group path
    }


def _frame(seed: int, missing_keys: bool) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    n = 400
    k = gen.integers(0, 9, n).astype(np.float64 if missing_keys else np.int64)
    if missing_keys:
        k[gen.random(n) < 0.05] = np.nan
    x = gen.normal(10, 15, n)
    x[gen.random(n) < 0.05] = np.nan
    x[:3] = [np.inf, -np.inf, 1e300]
    return pd.DataFrame({"k": k, "x": x})


def _inputs(df: pd.DataFrame) -> Iterator[tuple[str, object]]:
    yield "pandas", df
    k = [None if v != v else int(v) for v in df["k"].tolist()]
    yield "dict", {"k": k, "x": [None if v != v else v for v in df["x"].tolist()]}
    yield "polars", pl.DataFrame({"k": pl.Series(k, dtype=pl.Int64), "x": pl.Series(df["x"].to_numpy())})
    perm = np.random.default_rng(99).permutation(len(df))
    yield "pandas permuted", df.iloc[perm].reset_index(drop=True)


def _run(make: Callable[[], GroupBy[PureDP]] | Callable[[], GroupBy[ApproxDP]], data: object, seed: int) -> object:
    plan = make()
    budget = plan.cost()
    plan.check(budget)  # type: ignore[arg-type]  # the plan's own cost
    return plan.run(data, rng=seed).value


@pytest.mark.parametrize("missing_keys", [False, True])
@pytest.mark.parametrize("keys", [KeySet([0, 1, 2, 3, 5, 11]), KeySet([3, 1, 0, 2], other="rest")], ids=["listed", "other"])
def test_seeded_groupby_is_the_same_on_every_input_and_row_order(keys: KeySet, missing_keys: bool) -> None:
    df = _frame(1, missing_keys)

    def make() -> GroupBy[PureDP]:
        return GroupBy("k", keys=keys, aggregates=_aggregates())

    results = {name: _run(make, data, 7) for name, data in _inputs(df)}
    first = results["pandas"]
    assert isinstance(first, dict) and list(first) == list(keys.labels)
    for name, value in results.items():
        assert value == first, name


def test_seeded_groupby_over_selected_keys_is_the_same_on_every_input() -> None:
    df = _frame(2, True)

    def make() -> GroupBy[ApproxDP]:
        aggs = {name: PureToApprox(node) for name, node in _aggregates().items()}
        return GroupBy("k", keys=PartitionSelection(epsilon=1, delta="1e-6"), aggregates=aggs)

    results = [_run(make, data, 5) for _, data in _inputs(df)]
    assert results[0] and all(r == results[0] for r in results)


def test_string_keys_take_group_index_and_agree_across_inputs() -> None:
    df = _frame(4, False).assign(k=lambda f: f["k"].map(lambda v: f"dept{int(v)}"))

    def make() -> GroupBy[PureDP]:
        return GroupBy("k", keys=KeySet(["dept3", "dept0", "nobody"]), aggregates=_aggregates())

    a = _run(make, df, 3)
    b = _run(make, pl.from_pandas(df), 3)
    c = _run(make, df.iloc[::-1].reset_index(drop=True), 3)
    assert a == b == c


@pytest.mark.parametrize("z", [0, 2, -3, -1000])
def test_groupby_release_is_each_groups_release_under_a_constant_noise(z: int) -> None:
    with fake_noise(z):
        _check_constant_noise_groupby()


def _check_constant_noise_groupby() -> None:
    df = _frame(5, True)
    keys = KeySet([4, 0, 8, 2, 13], other=-1)
    aggs = {name: node for name, node in _aggregates().items() if name != "median"}
    aggs["hist"] = Laplace(Query.histogram("k", [0, 1]), epsilon="1/4")  # per-group path, same sampler

    def make() -> GroupBy[PureDP]:
        return GroupBy("k", keys=keys, aggregates=aggs)

    got = _run(make, df, 0)
    data = as_dataset(df)
    _, codes = group_index(data, ["k"], keys.keys, other=True)
    rng = resolve_rng(0)
    want = {key: {name: node.release(data.take(_rows_of(codes, i)), rng) for name, node in aggs.items()} for i, key in enumerate(keys.labels)}
    assert got == want


# --- (d) the checks above catch broken variants -------------------------------------------------------------


def _float_term_sums(self: gd.GroupedRows, x: npt.NDArray[np.float64], scale: float, a: float, b: float, bound: int) -> list[int]:
    terms = np.rint(np.fmin(np.fmax(x * scale, a), b))
    return [int(v) for v in np.bincount(self._pos, weights=terms, minlength=self.n_groups + 1)[1:].tolist()]  # float64 totals


def test_a_float64_grouped_sum_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    check_grouped_reductions(*_EXAMPLE, [_EXAMPLE_SPEC])  # the exact sums pass
    monkeypatch.setattr(gd.GroupedRows, "_term_sums", _float_term_sums)
    with pytest.raises(AssertionError):
        check_grouped_reductions(*_EXAMPLE, [_EXAMPLE_SPEC])


def test_a_count_noised_with_the_sums_parameter_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_noise(1) as fake:
        _check_broken_count_parameter(monkeypatch, fake)


def _check_broken_count_parameter(monkeypatch: pytest.MonkeyPatch, fake: FakeSampler) -> None:
    node = Laplace(Query.mean("x") | Clip(-3, 10), epsilon=1)
    data, codes = as_dataset({"x": [1.0, 2.0, None, 9.0]}), np.array([0, 1, 1, 0], dtype=np.intp)
    check_grouped_terms(node, data, codes, 2, [0, 1])
    check_grouped_release(node, data, codes, 2, [0, 1], fake)
    honest = mg.grouped_terms

    def broken(query: Query, public: list[lg.NoiseTerm], groups: gd.GroupedRows) -> list[mg.GroupedTerm]:
        centred, count = honest(query, public, groups)
        return [centred, mg.GroupedTerm(count.label, count.values, centred.param, count.k, centred.sensitivity)]

    monkeypatch.setattr(mg, "grouped_terms", broken)
    with pytest.raises(AssertionError):
        check_grouped_terms(node, data, codes, 2, [0, 1])
    with pytest.raises(AssertionError):
        check_grouped_release(node, data, codes, 2, [0, 1], fake)


def test_lattice_sum_type_is_the_reductions_type() -> None:
    (s,) = gd.GroupedRows(as_dataset({"x": [1.0]}), np.array([0]), 1, [0]).clipped_sums(SumSpec("x", Fraction(0), Fraction(1), 0))
    assert s == LatticeSum(1, 1, 0)
