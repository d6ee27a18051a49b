"""Per-unit reductions (issue 17): the numpy and polars backends answer bit for bit the same.

* the protocol's per-unit questions (``per_unit_sums``, ``per_unit_row_counts``,
  ``per_unit_max``, ``unit_count``) on a polars DataFrame and LazyFrame equal
  :class:`NumpyReductions` on the same values, bit for bit, on adversarial data:
  NaN, None, ±inf, −0.0, ids above 2**53 as nullable ints, UInt64 ids above 2**63,
  string, Categorical, bool and binary ids, ``1``/``1.0``/``"1"``/``True`` in one
  Object column (answered by numpy), duplicates, empty frames, users whose values
  are all missing, lattice ties at .5, totals that overflow int64 (the Int128 path);
  and so do the errors (unknown column, bad ``k``, bad clip);
* the answers are in the canonical order (ascending, zeros ``+0.0``) and equal the
  sorted answers of :mod:`dpalg.data._user_units`, whatever the row order;
* polars computes them without converting a column to numpy;
* end to end: seeded shifted-inverse plans give the same release and certificate on
  a dict and on a polars frame (Spark: ``tests/data/test_spark_units.py``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from backend_support import INF, NAN, UNIT_FLOATS as FLOATS, Question, answer, backend_name, comparable
from backend_support import seeded_release, shifted_plans, synthetic_users, unit_max, unit_sums
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("polars")

import polars as pl  # noqa: E402

from dpalg.data import Reductions, as_dataset, as_reductions, per_unit_max, per_unit_sums  # noqa: E402
from dpalg.data._numpy_reductions import NumpyReductions  # noqa: E402
from dpalg.data._polars_reductions import PolarsReductions  # noqa: E402

# (lower, upper, k): no clip (rows clamped at ±2**62·2**k, the Int128 path), the shifted
# inverse's lattices, one-sided clips, ties at .5 on 2**0 and 2**-1, the extreme lattices
SUM_CASES: list[tuple[float | None, float | None, int]] = [
    (None, None, -20), (0.0, 10.0, -1), (0.0, 10.0, 0), (0.25, 2.5, 2), (0.0, 1e300, -40), (None, 5.0, 0),
    (-3.0, None, -2), (0.0, 0.0, 0), (None, None, 900), (None, None, -1000), (0.0, 1.5, 0), (None, None, 0),
]  # fmt: skip
MAX_CASES: list[tuple[float | None, float | None]] = [(None, None), (0.0, 5.0), (-1e308, None), (None, -0.0)]


def questions(unit: str = "id", column: str = "x") -> list[Question]:
    """Every per-unit question, with the argument errors both backends must raise alike."""
    out: list[Question] = [
        ("unit_count", lambda r: r.unit_count(unit)),
        ("rows", lambda r: r.per_unit_row_counts(unit, None)),
        ("present", lambda r: r.per_unit_row_counts(unit, column)),
        ("unknown unit", lambda r: r.per_unit_sums("nope", column, None, None, 0)),
        ("unknown column", lambda r: r.per_unit_max(unit, "nope", None, None)),
        ("bad k", lambda r: r.per_unit_sums(unit, column, None, None, 901)),
        ("bad clip", lambda r: r.per_unit_max(unit, column, 2.0, 1.0)),
        ("nan clip", lambda r: r.per_unit_sums(unit, column, NAN, None, 0)),
    ]
    out += [(f"sums {c}", unit_sums(unit, column, *c)) for c in SUM_CASES]
    out += [(f"max {c}", unit_max(unit, column, *c)) for c in MAX_CASES]
    return out


def assert_same(reference: Reductions, backend: Reductions, label: str = "") -> None:
    for name, ask in questions():
        want, got = answer(lambda: ask(reference)), answer(lambda: ask(backend))
        assert got == want, f"{label} {name}: {type(backend).__name__} {got} != numpy {want}"


def check_frame(frame: pl.DataFrame, columns: dict[str, list[Any]] | None = None) -> None:
    """The polars DataFrame and LazyFrame against the numpy backend on the same dataset (and on ``columns``, a dict)."""
    reference = NumpyReductions(as_dataset(frame))  # the frame's columns converted by the dataset, its schema policy
    for kind, data in (("DataFrame", frame), ("LazyFrame", frame.lazy())):
        backend = as_reductions(as_dataset(data))
        assert isinstance(backend, PolarsReductions)
        assert_same(reference, backend, kind)
        if columns is not None:
            assert_same(NumpyReductions(as_dataset(columns)), backend, f"{kind} (dict)")


N = len(FLOATS)

# id columns: (polars dtype, values); each is paired with FLOATS as the values
ID_COLUMNS: dict[str, tuple[Any, list[Any]]] = {
    "float": (pl.Float64, [1.0, 1.0, NAN, None, -0.0, 0.0, 2.5, 1e300, -INF, INF] * 3),
    "float32": (pl.Float32, [1.0, 1.0, NAN, None, -0.0, 0.0, 2.5, 1e30, -INF, INF] * 3),
    "huge nullable int": (pl.Int64, [2**53, 2**53 + 1, None, 2**62, -(2**63), 2**53 + 1, 7, 2**53, None, 1] * 3),
    "uint64 above 2**63": (pl.UInt64, [2**64 - 1, 2**63, 2**64 - 1, 0, 2**63 + 1] * 6),
    "str": (pl.String, ["a", "b", None, "a", "", "é", "1", "b", "A", None] * 3),
    "categorical": (pl.Categorical, ["a", "b", None, "a", "c"] * 6),
    "bool": (pl.Boolean, [True, False, None] * 10),
    "binary": (pl.Binary, [b"a", b"", None, b"a", b"\x00"] * 6),
    "object mixed": (pl.Object, [1, 1.0, "1", True, None, NAN, 1, "1", False, 2**60] * 3),
    "decimal": (pl.Decimal(10, 1), [Decimal("1.0"), Decimal("1"), None, Decimal("2.5"), Decimal("-0.0")] * 6),
    "null": (pl.Null, [None] * N),
}


@pytest.mark.parametrize("kind", list(ID_COLUMNS))
def test_id_columns_are_bit_identical(kind: str) -> None:
    dtype, ids = ID_COLUMNS[kind]
    frame = pl.DataFrame({"id": pl.Series(ids, dtype=dtype), "x": pl.Series(FLOATS, dtype=pl.Float64)})
    # a dict of these lists means other values: numpy reads [2**64 - 1, 2**63, 0] as float64 (merging ids)
    as_dict = kind not in ("object mixed", "decimal", "categorical", "uint64 above 2**63")
    check_frame(frame, {"id": ids, "x": FLOATS} if as_dict else None)


VALUE_COLUMNS: dict[str, tuple[Any, list[Any]]] = {
    "nullable int": (pl.Int64, [2**63 - 1, None, -(2**63), 5, 3, 2**53 + 1, 0, None, 7, 1]),
    "bool": (pl.Boolean, [True, None, False, True, True, False, None, True, False, True]),
    "float32": (pl.Float32, [0.5, NAN, None, INF, -0.0, 1.5, 2.5, 3e38, -1.0, 0.25]),
    "decimal": (pl.Decimal(10, 2), [Decimal("1.5"), None, Decimal("2.50"), Decimal("-1"), Decimal("0.5")] * 2),
    "null": (pl.Null, [None] * 10),
    "all missing": (pl.Float64, [NAN, None] * 5),
}


@pytest.mark.parametrize("kind", list(VALUE_COLUMNS))
def test_value_columns_are_bit_identical(kind: str) -> None:
    dtype, values = VALUE_COLUMNS[kind]
    ids = ["u", "v", "u", None, "w", "v", "u", "w", "x", "u"]
    check_frame(pl.DataFrame({"id": ids, "x": pl.Series(values, dtype=dtype)}))


def test_empty_frames_and_string_values() -> None:
    check_frame(pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "x": pl.Series([], dtype=pl.Float64)}), {"id": [], "x": []})
    check_frame(pl.DataFrame({"id": [1, 2], "x": ["a", "b"]}))  # a str value column: the same schema error


def test_totals_beyond_int64_are_clamped_exactly_and_negative_totals_are_zero() -> None:
    big = 2.0**62
    ids = [1, 1, 1, 2, 2, 3, 3, 4]
    values = [big, big, big, -big, 1.0, 5.0, -5.0, 2.0**61]
    frame = pl.DataFrame({"id": ids, "x": values})
    check_frame(frame, {"id": ids, "x": values})
    got = as_reductions(as_dataset(frame)).per_unit_sums("id", "x", None, None, 0)
    assert got.tolist() == [0.0, 0.0, 2.0**61, 2.0**62]  # users 2, 3: 0; user 1: 3·2**62 clamped


def test_ties_round_half_to_even() -> None:
    ids = list(range(8))
    values = [0.5, 1.5, 2.5, -0.5, 3.5, 4.5, 0.49999999999999994, 2.5000000000000004]
    frame = pl.DataFrame({"id": ids, "x": values})
    check_frame(frame, {"id": ids, "x": values})
    got = as_reductions(as_dataset(frame)).per_unit_sums("id", "x", None, None, 0)
    assert got.tolist() == [0.0, 0.0, 0.0, 2.0, 2.0, 3.0, 4.0, 4.0]


def test_canonical_order_is_the_sorted_answer_of_the_user_units_functions() -> None:
    ids = np.array(["b", "a", "c", "b", None, "d", "a"], dtype=object)
    values = [4.0, 1.0, -0.0, 2.5, 9.0, NAN, 0.5]
    r = as_reductions(as_dataset(pl.DataFrame({"id": ids.tolist(), "x": values})))
    assert r.per_unit_sums("id", "x", None, None, -1).tolist() == sorted(per_unit_sums(ids, values, k=-1).tolist())
    maxima = r.per_unit_max("id", "x", None, None)
    assert maxima.tolist() == sorted(per_unit_max(ids, values).tolist()) and not np.signbit(maxima[1])


def test_polars_converts_no_column_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg.data._polars import PolarsSource

    def refuse(self: object, name: str) -> object:
        raise AssertionError(f"column {name} converted to numpy")

    monkeypatch.setattr(PolarsSource, "materialise", refuse)
    monkeypatch.setattr(PolarsSource, "numeric", refuse)
    r = as_reductions(as_dataset(pl.DataFrame({"id": [1, None, 2**60], "x": [1.0, 2.0, NAN]}).lazy()))
    r.per_unit_sums("id", "x", 0.0, 1.0, -3)
    r.per_unit_row_counts("id", "x")
    r.per_unit_max("id", "x", None, None)


# -- hypothesis -----------------------------------------------------------------------------

_value = st.one_of(
    st.sampled_from([NAN, None, INF, -INF, -0.0, 0.0, 0.5, 1.5, 2.5, -2.5, 1e308, 2.0**62, 5e-324]),
    st.integers(-20, 20).map(lambda i: i / 4),
    st.floats(allow_nan=False, width=64),
)
_ids = st.sampled_from(["int", "float", "str", "bool"]).flatmap(
    lambda kind: st.lists(
        st.one_of(
            st.none(),
            {
                "int": st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]),
                "float": st.sampled_from([0.0, -0.0, 1.0, 1.5, NAN, INF, 2.0**53]),
                "str": st.sampled_from(["", "a", "b", "1"]),
                "bool": st.booleans(),
            }[kind],
        ),
        max_size=25,
    ).map(lambda ids: (kind, ids))
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ids, st.lists(_value, min_size=25, max_size=25), st.sampled_from(SUM_CASES))
def test_random_frames_are_bit_identical(ids: tuple[str, list[Any]], values: list[Any], case: tuple[Any, Any, int]) -> None:
    kind, column = ids
    dtype = {"int": pl.Int64, "float": pl.Float64, "str": pl.String, "bool": pl.Boolean}[kind]
    x = values[: len(column)]
    frame = pl.DataFrame({"id": pl.Series(column, dtype=dtype), "x": pl.Series(x, dtype=pl.Float64)})
    reference = NumpyReductions(as_dataset({"id": column, "x": x}))
    backend = as_reductions(as_dataset(frame.lazy()))
    asks: list[Question] = [
        ("sums", lambda r: r.per_unit_sums("id", "x", *case)),
        ("rows", lambda r: r.per_unit_row_counts("id", None)),
        ("present", lambda r: r.per_unit_row_counts("id", "x")),
        ("max", lambda r: r.per_unit_max("id", "x", case[0], case[1])),
    ]
    for name, ask in asks:
        assert answer(lambda: ask(backend)) == answer(lambda: ask(reference)), name
    shuffled = NumpyReductions(as_dataset({"id": column[::-1], "x": x[::-1]}))  # the row order changes nothing
    for name, ask in asks:
        assert answer(lambda: ask(shuffled)) == answer(lambda: ask(reference)), f"reversed {name}"


# -- end to end ------------------------------------------------------------------------------


def test_seeded_shifted_inverse_releases_are_identical_on_a_dict_and_on_polars() -> None:
    columns = synthetic_users()
    frame = pl.DataFrame(columns, schema={"uid": pl.String, "v": pl.Float64})
    for make, budget in shifted_plans():
        value, certificate = seeded_release(make(), budget, columns)
        for data in (frame, frame.lazy()):
            got_value, got_certificate = seeded_release(make(), budget, data)
            assert (got_value, comparable(got_certificate)) == (value, comparable(certificate)), make()
            assert backend_name(got_certificate) in (None, "polars")
