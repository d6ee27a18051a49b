"""The kept rows' counts per grid point, integer or candidate slot (``kept_row_cells``) on Spark: numpy's, in any layout.

* ``ExponentialQuantile`` of a user-level median or quantile under ``Clip | MaxRowsPerUser``
  (no ``ClipPerUser``) over integer candidates (an int column with ``candidates="auto"``,
  ``"integers"`` on a float column) or explicit candidates: the dict's seeded release, the
  frame in ``repartition(7, uid)`` (the backend repartitions by the id itself: the input
  layout is one more split of the users), with the collecting reads of the source refused
  (before this port the id and value columns were collected: this test then failed with
  ``column uid collected``);
* the seam's counts equal numpy's on hypothesis frames over id types (long, string with
  None, double with NaN) and layouts, for the grid, the integers and explicit candidates;
* many users on few points in 7 partitions: every index's count is a sum over partitions.
  Checked by hand: with the per-partition merge keeping one partition's count per index
  (``F.max("n")`` for ``F.sum("n")`` in ``_spark_unit_totals.kept_row_cells``), this test
  (every spec) and the seeded releases fail.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
from backend_support import ID_VALUES, USER_LAYOUTS, comparable, float_values, seeded_release, spark_module_marks, synthetic_users, user_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = spark_module_marks()

from dpalg import Clip, MaxRowsPerUser, PureDP, Query  # noqa: E402
from dpalg.data import as_dataset, as_reductions  # noqa: E402
from dpalg.data._numpy_reductions import NumpyReductions  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.data._unit_totals import KeptRowCellSpec  # noqa: E402


def test_quantiles_over_integers_and_candidates_under_a_row_cap_read_no_column(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg import Compose
    from dpalg.mechanisms import ExponentialQuantile

    users = synthetic_users(600)
    xs = [None if v is None or v != v else float(v) for v in users["v"]]
    ints = [0 if v is None or not np.isfinite(v) else int(v) // 3 for v in xs]  # no None: the dict column is int too
    columns = {"uid": users["uid"], "x": xs, "n": ints}

    def plan() -> Any:  # one composed release: one run, the frame persisted and checked once
        return Compose(
            ExponentialQuantile(Query.median("n", user="uid") | Clip(0, 40) | MaxRowsPerUser(3), epsilon=1),  # auto: integers
            ExponentialQuantile(Query.quantile("x", "3/4", user="uid") | Clip(-5, 60) | MaxRowsPerUser(2), epsilon=2, candidates="integers"),
            ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(2), epsilon=1,
                                candidates=[Fraction(1, 10), 3, Fraction(22, 7), 10, 50, 99], selection="permute_and_flip"),
        )  # fmt: skip

    value, certificate = seeded_release(plan(), PureDP(4), columns)
    frame = user_layout(spark.createDataFrame(list(zip(columns["uid"], xs, ints)), "uid string, x double, n long"), "repartition(7, uid)")

    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)
    got = seeded_release(plan(), PureDP(4), frame)
    assert (got[0], comparable(got[1])) == (value, comparable(certificate))


SPECS = [
    KeptRowCellSpec("uid", "x", Fraction(-11), Fraction(11), 5, 1),
    KeptRowCellSpec("uid", "x", Fraction(-3), Fraction(7), 5, 2, candidates="integers"),
    KeptRowCellSpec("uid", "x", Fraction(-11), Fraction(11), 5, 3, candidates=(Fraction(-1, 3), Fraction(0), Fraction(1, 10), Fraction(5, 2), Fraction(7))),
]


@st.composite
def _user_frames(draw: st.DrawFn) -> tuple[str, list[Any], list[Any], str]:
    kind = draw(st.sampled_from(["int", "float", "str"]))
    n = draw(st.integers(0, 40))
    ids = draw(st.lists(st.sampled_from(ID_VALUES[kind]), min_size=n, max_size=n))
    xs = draw(st.lists(float_values, min_size=n, max_size=n))
    return {"int": "long", "float": "double", "str": "string"}[kind], ids, xs, draw(st.sampled_from(USER_LAYOUTS))


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_user_frames(), spec_index=st.integers(0, len(SPECS) - 1), cap=st.integers(1, 3))
def test_kept_row_cells_equal_numpy_on_hypothesis_frames(spark: Any, case: tuple[str, list[Any], list[Any], str], spec_index: int, cap: int) -> None:
    id_type, ids, xs, layout = case
    spec = attrs.evolve(SPECS[spec_index], max_rows=cap)
    secret = bytes(range(1, 33))
    want = NumpyReductions(as_dataset({"uid": ids, "x": xs})).kept_row_cells(spec, secret)
    frame = user_layout(spark.createDataFrame(list(zip(ids, xs)), f"uid {id_type}, x double"), layout)
    got = as_reductions(as_dataset(frame)).kept_row_cells(spec, secret)
    assert (got[0].tolist(), got[1].tolist()) == (want[0].tolist(), want[1].tolist())


def test_kept_row_cells_add_over_partitions(spark: Any) -> None:
    """Many users on few points, in 7 partitions: every index's count is a sum over partitions (a merge that keeps
    one partition's count per index fails here whatever the draw)."""
    gen = np.random.default_rng(4)
    ids = [int(u) for u in gen.integers(0, 200, 800)]
    xs = [float(v) for v in gen.integers(0, 4, 800)]
    secret = bytes(range(32))
    want = NumpyReductions(as_dataset({"uid": ids, "x": xs}))
    got = as_reductions(as_dataset(spark.createDataFrame(list(zip(ids, xs)), "uid long, x double").repartition(7, "uid")))
    for spec in SPECS:
        expected, counted = want.kept_row_cells(spec, secret), got.kept_row_cells(spec, secret)
        assert (counted[0].tolist(), counted[1].tolist()) == (expected[0].tolist(), expected[1].tolist()), spec
