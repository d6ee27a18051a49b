"""Users' bounded totals in polars (``PolarsReductions.unit_total_sum``/``unit_totals``): the numpy backend's, bit for bit.

* the seam's answers equal :class:`~dpalg.data.NumpyReductions`' on adversarial
  values and ids (NaN, None, ±inf, −0.0, ties at .5, ids above 2**53, str and
  float ids), on both exact-sum paths (``Int64``, and ``Int128`` as if the frame
  were huge), and on hypothesis frames;
* the polars path is the one taken (numpy's answer is refused) for every spec it
  serves: no row cap, or a count under a row cap; a sum under a row cap is
  numpy's (the keyed row choice);
* seeded releases of the user-level Laplace count/sum/mean and ``AutoClipSum`` are
  identical on a dict, a polars DataFrame and a LazyFrame.

Broken variants caught (checked by hand): rounding terms half away from zero instead
of half to even (``round(0, mode="half_away_from_zero")`` for ``rint``) fails the
adversarial test (ties at 0.5, 2.5, -2.5); dropping the clamp of the totals fails the
seeded releases.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl
import pytest
from backend_support import INF, NAN, UNIT_FLOATS, UNIT_IDS as IDS, seeded_release, synthetic_users, unit_total_specs as specs
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import Clip, ClipPerUser, MaxRowsPerUser, PureDP, Query
from dpalg.data import _polars_units as pu
from dpalg.data import as_dataset, as_reductions
from dpalg.data._numpy_reductions import NumpyReductions
from dpalg.data._polars_reductions import PolarsReductions
from dpalg.data._unit_totals import UnitTotalSpec
from dpalg.mechanisms import AutoClipSum, Laplace

SECRET = bytes(range(32))
def _check(frame: dict[str, list[Any]], polars: pl.DataFrame | pl.LazyFrame) -> None:
    want = NumpyReductions(as_dataset(frame))
    got = as_reductions(as_dataset(polars))
    assert isinstance(got, PolarsReductions)
    for spec in specs():
        assert got.unit_total_sum(spec, SECRET) == want.unit_total_sum(spec, SECRET), spec
        assert got.unit_totals(spec, SECRET).tolist() == want.unit_totals(spec, SECRET).tolist(), spec


@pytest.mark.parametrize("path", ["Int64", "Int128"])
def test_answers_equal_numpy_on_adversarial_values(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "Int128":  # as if the frame were huge: every exact sum in Int128
        monkeypatch.setattr(pu, "_LONG_SUM_LIMIT", 0)
    cases: list[tuple[list[Any], pl.DataType]] = [
        (IDS, pl.Int64()),
        (["a", "b", None, "a", "", "é", "a", "b", "A", None] * 3, pl.String()),
        ([1.0, -0.0, NAN, None, 0.0, 2.5, INF, 1.0, 1.0, 2.5] * 3, pl.Float64()),
    ]
    for ids, dtype in cases:
        frame = {"id": ids, "x": UNIT_FLOATS}
        polars = pl.DataFrame({"id": pl.Series(ids, dtype=dtype), "x": pl.Series(UNIT_FLOATS, dtype=pl.Float64, nan_to_null=False)})
        _check(frame, polars)
        _check(frame, polars.lazy())
    empty = as_reductions(as_dataset(pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "x": pl.Series([], dtype=pl.Float64)})))
    for spec in specs():
        assert empty.unit_total_sum(spec, SECRET).units == 0
        assert empty.unit_totals(spec, SECRET).size == 0


@settings(max_examples=40, deadline=None)
@given(
    ids=st.lists(st.one_of(st.none(), st.integers(-3, 5)), min_size=0, max_size=40),
    xs=st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, 1.5, -2.5, 2.0**61, -0.0])), min_size=40, max_size=40),
    k=st.integers(-60, 60),
    clip=st.one_of(st.none(), st.tuples(st.fractions(-(10**6), 10**6), st.fractions(-(10**6), 10**6))),
)
def test_answers_equal_numpy_on_hypothesis_frames(ids: list[int | None], xs: list[float | None], k: int, clip: tuple[Fraction, Fraction] | None) -> None:
    xs = xs[: len(ids)]
    row = (None, None) if clip is None else (min(clip), max(clip))
    spec = UnitTotalSpec("id", "x", "sum", k, -(2**62), 2**62, row[0], row[1])
    frame = {"id": ids, "x": xs}
    want = NumpyReductions(as_dataset(frame))
    got = as_reductions(as_dataset(pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "x": pl.Series(xs, dtype=pl.Float64, nan_to_null=False)})))
    assert got.unit_totals(spec, SECRET).tolist() == want.unit_totals(spec, SECRET).tolist()
    assert got.unit_total_sum(spec, SECRET) == want.unit_total_sum(spec, SECRET)


def test_the_polars_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    polars = pl.DataFrame({"id": pl.Series(IDS, dtype=pl.Int64), "x": pl.Series(UNIT_FLOATS, dtype=pl.Float64)})
    got = as_reductions(as_dataset(polars))

    def refuse(self: object) -> object:
        raise AssertionError("answered by numpy")

    monkeypatch.setattr(PolarsReductions, "_numpy", refuse)
    for spec in specs():
        if spec.max_rows is not None and spec.kind == "sum":
            with pytest.raises(AssertionError, match="numpy"):
                got.unit_total_sum(spec, SECRET)
        else:
            got.unit_total_sum(spec, SECRET)
            got.unit_totals(spec, SECRET)


PLANS: list[Callable[[], Any]] = [  # a checked plan runs once: each run builds its own
    lambda: Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 1000), epsilon=1),
    lambda: Laplace(Query.count(user="uid") | MaxRowsPerUser(5), epsilon=1),
    lambda: Laplace(Query.mean("x", user="uid") | ClipPerUser(-5, 60), epsilon=1),
    lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 30) | MaxRowsPerUser(3) | ClipPerUser(0, 50), epsilon=1),
    lambda: AutoClipSum(Query.sum("x", user="uid"), epsilon=1, upper_limit=10**6),
]


def test_seeded_releases_are_identical_on_a_dict_and_on_polars() -> None:
    users = synthetic_users(1500)
    columns = {"uid": users["uid"], "x": users["v"]}
    frame = pl.DataFrame({"uid": pl.Series(columns["uid"], dtype=pl.String), "x": pl.Series(columns["x"], dtype=pl.Float64, nan_to_null=False)})
    for make in PLANS:
        want, _ = seeded_release(make(), PureDP(1), columns)
        for data in (frame, frame.lazy()):
            got, _ = seeded_release(make(), PureDP(1), data)
            assert got == want, make()


def test_numpy_totals_are_what_the_test_compares_with() -> None:
    """The reference itself: one user's total, by hand (ties to even at the lattice 2**-1)."""
    spec = UnitTotalSpec("id", "x", "sum", -1, -100, 100)
    want = NumpyReductions(as_dataset({"id": np.array([1, 1, 1, 2]), "x": np.array([0.25, 0.75, 1.25, 2.0])}))
    assert want.unit_totals(spec, SECRET).tolist() == [0 + 2 + 2, 4]
