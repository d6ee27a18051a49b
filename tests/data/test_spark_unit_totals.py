"""Users' bounded totals on Spark: user-level bounding on the executors, bit for bit the numpy backend.

* seeded releases of ``Laplace(sum | ClipPerUser)``, ``Laplace(count | MaxRowsPerUser)``,
  ``Laplace(mean | ClipPerUser)``, ``Laplace(sum | Clip | MaxRowsPerUser | ClipPerUser)``
  (the Arrow path: the keyed row choice on the executors), the sum and mean under
  ``Clip | MaxRowsPerUser`` alone (the kept rows' exact sum per user partition:
  ``kept_row_sum``) and ``AutoClipSum`` are
  identical on a dict and on a Spark frame under ``repartition(1)``, ``(7)`` and
  ``(7, "uid")``;
* the seam's answers equal the numpy backend's on adversarial values and ids
  (NaN, None, ±inf, −0.0, ties, ids above 2**53), on every exact-sum path;
* no column is collected to the driver (the collecting reads of the source raise),
  and the per-user collection is chunked (a small chunk size, several jobs, same answer);
* unit locality of the executors' row choice: adding a user and reordering the
  rows changes no other user's total, and adds exactly that user's kept rows to
  ``kept_row_sum`` (a positional choice fails both: checked by hand, see the tests'
  docstrings).

One session-scoped SparkSession (tests/conftest.py); ``spark.driver.maxResultSize``
is fixed when a session starts, so the size limit is tested by refusing the
collecting reads instead of by a second session with a small limit.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
from backend_support import ID_VALUES, INF, NAN, UNIT_FLOATS, UNIT_IDS as IDS, USER_LAYOUTS, float_values, seeded_release, comparable
from backend_support import spark_module_marks, synthetic_users, unit_total_specs as specs, user_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = spark_module_marks()

from dpalg import ZCDP, Clip, ClipPerUser, MaxRowsPerUser, PureDP, Query  # noqa: E402
from dpalg.data import as_dataset, as_reductions  # noqa: E402
from dpalg.data import _spark_unit_totals as sut  # noqa: E402
from dpalg.data import _spark_units as su  # noqa: E402
from dpalg.data._numpy_reductions import NumpyReductions  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.data._unit_totals import KeptRowSumSpec, UnitTotalSpec  # noqa: E402
from dpalg.mechanisms import AutoClipSum, Gaussian, Laplace  # noqa: E402


PLANS: list[Callable[[], Any]] = [  # a checked plan runs once: each run builds its own
    lambda: Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 1000), epsilon=1),
    lambda: Laplace(Query.count(user="uid") | MaxRowsPerUser(5), epsilon=1),
    lambda: Laplace(Query.mean("x", user="uid") | ClipPerUser(-5, 60), epsilon=1),
    lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 30) | MaxRowsPerUser(3) | ClipPerUser(0, 50), epsilon=1),
    lambda: AutoClipSum(Query.sum("x", user="uid"), epsilon=1, upper_limit=10**6),
    lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(5), epsilon=1),  # kept_row_sum
    lambda: Laplace(Query.mean("x", user="uid") | Clip(-5, 60) | MaxRowsPerUser(3), epsilon=1),
]


def test_seeded_releases_are_identical_on_a_dict_and_on_spark(spark: Any) -> None:
    users = synthetic_users(1500)
    columns = {"uid": users["uid"], "x": users["v"]}
    frame = spark.createDataFrame(list(zip(columns["uid"], columns["x"])), "uid string, x double")
    shuffles = {"1": frame.repartition(1), "7": frame.repartition(7), "7 by uid": frame.repartition(7, "uid")}
    for make in PLANS:
        want, certificate = seeded_release(make(), PureDP(1), columns)
        for label, shuffled in shuffles.items():
            got, got_certificate = seeded_release(make(), PureDP(1), shuffled)
            assert (got, comparable(got_certificate)) == (want, comparable(certificate)), (label, make())


@pytest.mark.parametrize("path", ["long", "decimal"])
def test_answers_equal_numpy_on_adversarial_values(spark: Any, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "decimal":  # as if the frame were huge: every exact sum in decimal(38,0)
        monkeypatch.setattr(su, "_LONG_SUM_LIMIT", 0)
        monkeypatch.setattr(su, "_SPLIT_ROWS", 0)
        monkeypatch.setattr(sut, "_LONG_SUM_LIMIT", 0)
    values = UNIT_FLOATS
    want = NumpyReductions(as_dataset({"id": IDS, "x": values}))
    frame = spark.createDataFrame(list(zip(IDS, values)), "id long, x double").repartition(3)
    got = as_reductions(as_dataset(frame))
    secret = bytes(range(32))
    for spec in specs():
        assert got.unit_total_sum(spec, secret) == want.unit_total_sum(spec, secret), spec
        assert got.unit_totals(spec, secret).tolist() == want.unit_totals(spec, secret).tolist(), spec


def test_string_float_and_empty_ids(spark: Any) -> None:
    secret = bytes(range(32))
    cases: list[tuple[str, list[Any]]] = [
        ("id string", ["a", "b", None, "a", "", "é", "a", "b", "A", None] * 3),
        ("id double", [1.0, -0.0, NAN, None, 0.0, 2.5, INF, 1.0, 1.0, 2.5] * 3),
    ]
    for ddl, ids in cases:
        xs = UNIT_FLOATS
        want = NumpyReductions(as_dataset({"id": ids, "x": xs}))
        got = as_reductions(as_dataset(spark.createDataFrame(list(zip(ids, xs)), f"{ddl}, x double")))
        for spec in specs():
            assert got.unit_total_sum(spec, secret) == want.unit_total_sum(spec, secret), (ddl, spec)
    empty = as_reductions(as_dataset(spark.createDataFrame([], "id long, x double")))
    for spec in specs():
        assert empty.unit_total_sum(spec, secret).units == 0
        assert empty.unit_totals(spec, secret).size == 0


def test_no_column_is_collected_and_the_per_user_collection_is_chunked(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    users = synthetic_users(1200)
    want = [seeded_release(make(), PureDP(1), {"uid": users["uid"], "x": users["v"]})[0] for make in PLANS]

    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)
    monkeypatch.setattr(sut, "_USERS_PER_JOB", 64)  # about 300 users: several collection jobs
    frame = spark.createDataFrame(list(zip(users["uid"], users["v"])), "uid string, x double").repartition(5)
    got = [seeded_release(make(), PureDP(1), frame)[0] for make in PLANS]
    assert got == want


def _totals_by_user(spark: Any, ids: list[Any], xs: list[Any], spec: UnitTotalSpec, secret: bytes) -> dict[Any, int]:
    frame = spark.createDataFrame(list(zip(ids, xs)), "id long, x double").repartition(7)
    per_unit = sut.per_unit_totals(SparkSource(frame).frame, "int", su.present_values("x", "float"), spec, len(ids), secret)
    return {int(r["u"]): int(r["v"]) for r in per_unit.collect()}


def test_the_executors_row_choice_is_unit_local(spark: Any) -> None:
    """Adding a user and reordering the rows changes no other user's total on the Arrow path.

    Checked by hand: with ``select_rows`` replaced in :mod:`dpalg.data._unit_totals` by a
    positional choice (each user's first ``r`` rows in partition order), this test fails.
    """
    gen = np.random.default_rng(5)
    ids = [int(u) for u in gen.integers(0, 40, 600)]
    xs = [float(v) for v in gen.integers(0, 50, 600)]
    spec = UnitTotalSpec("id", "x", "sum", 0, 0, 2**62, max_rows=3)
    secret = bytes(range(32))
    before = _totals_by_user(spark, ids, xs, spec, secret)
    order = gen.permutation(len(ids))
    more_ids = [99] * 9 + [ids[i] for i in order]
    more_xs = [float(v) for v in range(9)] + [xs[i] for i in order]
    after = _totals_by_user(spark, more_ids, more_xs, spec, secret)
    assert set(after) == set(before) | {99}
    assert {u: after[u] for u in before} == before
    numpy_totals = NumpyReductions(as_dataset({"id": ids, "x": xs})).unit_totals(spec, secret)
    assert sorted(before.values()) == numpy_totals.tolist()


def test_statistics_of_the_users_totals_read_no_column(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local-sensitivity mechanisms and the quantile over users' clipped totals read them through the seam's
    ``unit_totals`` (one number per user): the dict's seeded release, with the collecting reads refused."""
    from dpalg import ApproxDP
    from dpalg.mechanisms import ExponentialQuantile, ProposeTest, SmoothBound

    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: ExponentialQuantile(Query.median("x", user="uid") | ClipPerUser(0, 100), epsilon=1, grid_bits=8), PureDP(1)),
        (lambda: ProposeTest(Query.median("x", user="uid") | ClipPerUser(0, 100), bound=1, epsilon=1, delta="0.01"), ApproxDP(2, "0.01")),
        (lambda: SmoothBound(Query.median("x", user="uid") | ClipPerUser(0, 100), epsilon=1, delta="0.01"), ApproxDP(1, "0.01")),
        (lambda: SmoothBound(Query.mean("x", user="uid") | MaxRowsPerUser(3) | Clip(0, 50) | ClipPerUser(0, 100), epsilon=1, delta="0.01"), ApproxDP(1, "0.01")),
    ]  # fmt: skip
    users = synthetic_users(1200)
    want = [seeded_release(make(), budget, {"uid": users["uid"], "x": users["v"]})[0] for make, budget in plans]

    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)
    frame = spark.createDataFrame(list(zip(users["uid"], users["v"])), "uid string, x double").repartition(5)
    got = [seeded_release(make(), budget, frame)[0] for make, budget in plans]
    assert got == want


def kept_row_specs() -> list[KeptRowSumSpec]:
    """The kept rows' sums every backend must answer as numpy does: ties, a bound no float holds, huge bounds, extreme k."""
    return [
        KeptRowSumSpec("id", "x", Fraction(0), Fraction(10), -20, 2),
        KeptRowSumSpec("id", "x", Fraction(-1, 3), Fraction(7, 2), -1, 1),  # ties at .5, a bound no float holds
        KeptRowSumSpec("id", "x", Fraction(-(10**300)), Fraction(10**300), -999, 3),  # terms far beyond int64: Python ints
        KeptRowSumSpec("id", "x", Fraction(-(10**300)), Fraction(10**300), 900, 2),
        KeptRowSumSpec("id", "x", Fraction(-5), Fraction(5), -1000, 2),  # every term 0
        KeptRowSumSpec("id", "x", Fraction(0), Fraction(2**62), 0, 5),
    ]


def test_kept_row_sums_equal_numpy_on_adversarial_values_and_ids(spark: Any) -> None:
    secret = bytes(range(32))
    cases: list[tuple[str, list[Any]]] = [
        ("id long", IDS),
        ("id string", ["a", "b", None, "a", "", "é", "a", "b", "A", None] * 3),
        ("id double", [1.0, -0.0, NAN, None, 0.0, 2.5, INF, 1.0, 1.0, 2.5] * 3),
    ]
    for ddl, ids in cases:
        want = NumpyReductions(as_dataset({"id": ids, "x": UNIT_FLOATS}))
        frame = spark.createDataFrame(list(zip(ids, UNIT_FLOATS)), f"{ddl}, x double").repartition(3)
        got = as_reductions(as_dataset(frame))
        for spec in kept_row_specs():
            assert got.kept_row_sum(spec, secret) == want.kept_row_sum(spec, secret), (ddl, spec)
    empty = as_reductions(as_dataset(spark.createDataFrame([], "id long, x double")))
    for spec in kept_row_specs():
        assert (empty.kept_row_sum(spec, secret).total, empty.kept_row_sum(spec, secret).count) == (0, 0)


@st.composite
def _user_frames(draw: st.DrawFn) -> tuple[str, list[Any], list[Any], str, int]:
    kind = draw(st.sampled_from(["int", "float", "str"]))
    n = draw(st.integers(0, 40))
    ids = draw(st.lists(st.sampled_from(ID_VALUES[kind]), min_size=n, max_size=n))
    xs = draw(st.lists(float_values, min_size=n, max_size=n))
    return {"int": "long", "float": "double", "str": "string"}[kind], ids, xs, draw(st.sampled_from(USER_LAYOUTS)), draw(st.integers(1, 4))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_user_frames(), spec_index=st.integers(0, 5))
def test_kept_row_sums_equal_numpy_on_hypothesis_frames(spark: Any, case: tuple[str, list[Any], list[Any], str, int], spec_index: int) -> None:
    id_type, ids, xs, layout, cap = case
    spec = attrs.evolve(kept_row_specs()[spec_index], unit="uid", max_rows=cap)
    secret = bytes(range(1, 33))
    want = NumpyReductions(as_dataset({"uid": ids, "x": xs})).kept_row_sum(spec, secret)
    frame = user_layout(spark.createDataFrame(list(zip(ids, xs)), f"uid {id_type}, x double"), layout)
    assert as_reductions(as_dataset(frame)).kept_row_sum(spec, secret) == want


def test_seeded_kept_row_releases_are_identical_in_every_layout(spark: Any) -> None:
    """Laplace and Gaussian sums and means under ``Clip | MaxRowsPerUser``: the dict's seeded release in each layout."""
    users = synthetic_users(900)
    columns = {"uid": users["uid"], "x": users["v"]}
    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(5), epsilon=1), PureDP(1)),
        (lambda: Laplace(Query.mean("x", user="uid") | Clip(-5, 60) | MaxRowsPerUser(2), epsilon=1, granularity=-3), PureDP(1)),
        (lambda: Gaussian(Query.mean("x", user="uid") | Clip(0, 30) | MaxRowsPerUser(4), rho="0.5"), ZCDP("0.5")),
    ]
    frame = spark.createDataFrame(list(zip(columns["uid"], columns["x"])), "uid string, x double")
    for make, budget in plans:
        want = seeded_release(make(), budget, columns)
        for layout in USER_LAYOUTS:
            got = seeded_release(make(), budget, user_layout(frame, layout))
            assert (got[0], comparable(got[1])) == (want[0], comparable(want[1])), (layout, make())


def test_the_kept_row_sum_is_unit_local(spark: Any) -> None:
    """Adding a user (its rows first, the others' reordered) adds exactly that user's own kept rows to ``kept_row_sum``.

    Checked by hand: with ``select_rows`` replaced in :mod:`dpalg.data._unit_totals` by a positional choice
    (each user's first ``r`` rows in partition order), this test fails.
    """
    gen = np.random.default_rng(8)
    ids = [int(u) for u in gen.integers(0, 40, 600)]
    xs = [float(v) for v in gen.integers(0, 50, 600)]
    spec = KeptRowSumSpec("id", "x", Fraction(0), Fraction(100), 0, 3)
    secret = bytes(range(32))

    def kept(ids: list[Any], xs: list[Any]) -> Any:
        return as_reductions(as_dataset(spark.createDataFrame(list(zip(ids, xs)), "id long, x double").repartition(7))).kept_row_sum(spec, secret)

    before = kept(ids, xs)
    order = gen.permutation(len(ids))
    new_xs = [float(v) for v in range(9)]
    after = kept([99] * 9 + [ids[i] for i in order], new_xs + [xs[i] for i in order])
    alone = NumpyReductions(as_dataset({"id": [99] * 9, "x": new_xs})).kept_row_sum(spec, secret)
    assert (after.total, after.count) == (before.total + alone.total, before.count + alone.count)
    assert before == NumpyReductions(as_dataset({"id": ids, "x": xs})).kept_row_sum(spec, secret)


def test_a_quantile_under_a_row_cap_reads_no_column_and_is_the_same_in_every_layout(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ExponentialQuantile`` of a user-level median or quantile under ``Clip | MaxRowsPerUser`` (no ``ClipPerUser``)
    reads the kept rows' grid counts per user partition (``kept_row_cells``): the dict's seeded release in each
    layout, with the collecting reads refused; and the seam's counts equal numpy's on adversarial ids and values."""
    from dpalg.data._unit_totals import KeptRowCellSpec
    from dpalg.mechanisms import ExponentialQuantile

    users = synthetic_users(900)
    columns = {"uid": users["uid"], "x": users["v"]}
    plans: list[Callable[[], Any]] = [
        lambda: ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(3), epsilon=1, grid_bits=10),
        lambda: ExponentialQuantile(Query.quantile("x", "3/4", user="uid") | Clip(-5, 60) | MaxRowsPerUser(2), epsilon=2, grid_bits=6, selection="permute_and_flip"),
    ]
    want = [seeded_release(make(), PureDP(2), columns) for make in plans]

    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    frame = spark.createDataFrame(list(zip(columns["uid"], columns["x"])), "uid string, x double")
    secret = bytes(range(32))
    specs = [KeptRowCellSpec("id", "x", Fraction(0), Fraction(10), 4, 2), KeptRowCellSpec("id", "x", Fraction(-1, 3), Fraction(7, 2), 40, 1)]
    adversarial = [
        (NumpyReductions(as_dataset({"id": IDS, "x": UNIT_FLOATS})), spark.createDataFrame(list(zip(IDS, UNIT_FLOATS)), "id long, x double").repartition(3)),
    ]
    with monkeypatch.context() as patch:
        for read in ("values", "materialise", "numeric"):
            patch.setattr(SparkSource, read, refuse)
        for make, (value, certificate) in zip(plans, want):
            for layout in USER_LAYOUTS:
                got = seeded_release(make(), PureDP(2), user_layout(frame, layout))
                assert (got[0], comparable(got[1])) == (value, comparable(certificate)), (layout, make())
        for numpy_side, spark_frame in adversarial:
            for spec in specs:
                cells, counts = as_reductions(as_dataset(spark_frame)).kept_row_cells(spec, secret)
                want_cells, want_counts = numpy_side.kept_row_cells(spec, secret)
                assert cells.tolist() == want_cells.tolist() and counts.tolist() == want_counts.tolist(), spec
