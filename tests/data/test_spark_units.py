"""Per-unit reductions on Spark (issue 17), in local mode: bit for bit the numpy backend's answers.

* ``per_unit_sums``, ``per_unit_row_counts``, ``per_unit_max`` and ``unit_count`` of
  :class:`SparkReductions` equal :class:`NumpyReductions` on the same dataset, bit
  for bit, on adversarial data (NaN, None, ±inf, −0.0, ids above 2**53 as nullable
  longs, string, bool and binary ids, decimal ids and values and collated strings
  answered by numpy, duplicates, empty frames, users whose values are all missing,
  ties at .5, totals beyond a long on all three exact paths: long, split, decimal),
  and raise the same errors;
* ``repartition(1)``, ``repartition(7)`` and ``repartition(7, "id")`` change nothing
  (the answers are in the canonical ascending order, so not even a zero's sign moves);
* no column is collected to the driver;
* end to end: seeded shifted-inverse plans give the same release and certificate
  on a dict, a polars frame and a Spark frame.

Every test is ``@pytest.mark.spark``; one session-scoped SparkSession (tests/conftest.py).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from backend_support import INF, NAN, UNIT_FLOATS as FLOATS, Question, answer, backend_name, comparable
from backend_support import seeded_release, shifted_plans, spark_module_marks, synthetic_users, unit_max, unit_sums

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg.data import Reductions, as_dataset, as_reductions  # noqa: E402
from dpalg.data import _spark_units as su  # noqa: E402
from dpalg.data._numpy_reductions import NumpyReductions  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402

# fewer cases than the polars suite (each is a Spark job): the long, split and row-clamp paths, ties, extremes
SUM_CASES: list[tuple[float | None, float | None, int]] = [
    (None, None, -20), (0.0, 10.0, -1), (None, None, 0), (0.0, 1.5, 0), (None, None, -1000), (-3.0, None, 900),
]  # fmt: skip
MAX_CASES: list[tuple[float | None, float | None]] = [(None, None), (0.0, 5.0)]


def questions(*, full: bool = False, count_units: bool = True) -> list[Question]:
    """The per-unit questions (every case when ``full``; else one per exact path: each is a Spark job)."""
    unit, column = "id", "x"
    out: list[Question] = [
        ("rows", lambda r: r.per_unit_row_counts(unit, None)),
        ("present", lambda r: r.per_unit_row_counts(unit, column)),
        ("unknown unit", lambda r: r.per_unit_sums("nope", column, None, None, 0)),
        ("unknown column", lambda r: r.per_unit_max(unit, "nope", None, None)),
        ("bad k", lambda r: r.per_unit_sums(unit, column, None, None, -1001)),
        ("bad clip", lambda r: r.per_unit_max(unit, column, 2.0, 1.0)),
    ]
    if count_units:
        out.append(("unit_count", lambda r: r.unit_count(unit)))
    sums, maxima = (SUM_CASES, MAX_CASES) if full else (SUM_CASES[:2], MAX_CASES[:1])
    out += [(f"sums {c}", unit_sums(unit, column, *c)) for c in sums]
    out += [(f"max {c}", unit_max(unit, column, *c)) for c in maxima]
    return out


def assert_same(reference: Reductions | list[Reductions], backend: Reductions, label: str = "", *,
                asked: list[Question] | None = None) -> None:  # fmt: skip
    """Each answer of ``backend`` (asked once: each is a Spark job) bit-equal to every reference's."""
    assert type(backend).__name__ == "SparkReductions"
    references = reference if isinstance(reference, list) else [reference]
    for name, ask in questions() if asked is None else asked:
        got = answer(lambda: ask(backend))
        for i, ref in enumerate(references):
            want = answer(lambda: ask(ref))
            assert got == want, f"{label} {name}: spark {got} != numpy #{i} {want}"


N = len(FLOATS)

ID_COLUMNS: dict[str, tuple[str, list[Any]]] = {
    "double": ("double", [1.0, 1.0, NAN, None, -0.0, 0.0, 2.5, 1e300, -INF, INF] * 3),
    "float": ("float", [1.0, 1.0, NAN, None, -0.0, 0.0, 2.5, 1e30, -INF, INF] * 3),
    "huge nullable long": ("long", [2**53, 2**53 + 1, None, 2**62, -(2**63), 2**53 + 1, 7, 2**53, None, 1] * 3),
    "int": ("int", [1, 2, None, 1, -(2**31)] * 6),
    "string": ("string", ["a", "b", None, "a", "", "é", "1", "b", "A", None] * 3),
    "bool": ("boolean", [True, False, None] * 10),
    "binary": ("binary", [bytearray(b"a"), bytearray(b""), None, bytearray(b"a"), bytearray(b"\x00")] * 6),
    "decimal (numpy answers)": ("decimal(10,1)", [Decimal("1.0"), Decimal("1"), None, Decimal("2.5"), Decimal("-0.0")] * 6),
    "lower-case collation (numpy answers)": ("string collate UTF8_LCASE", ["a", "A", None, "b", "B"] * 6),
}


@pytest.mark.parametrize("kind", list(ID_COLUMNS))
def test_id_columns_are_bit_identical(spark: Any, kind: str) -> None:
    ddl, ids = ID_COLUMNS[kind]
    try:
        frame = spark.createDataFrame(list(zip(ids, FLOATS)), f"id {ddl}, x double")
    except Exception as exc:  # noqa: BLE001 -- collations need Spark 4
        if "collat" in kind:
            pytest.skip(f"this Spark has no collations ({type(exc).__name__})")
        raise
    ds = as_dataset(frame)
    # a collated string column is read in numpy by every reduction (spark_kind says "other"): unit_count too
    asked = questions(full=kind == "double")
    references: list[Reductions] = [NumpyReductions(ds)]  # numpy on the same dataset (its columns collected)
    if kind in ("double", "huge nullable long", "string", "bool"):  # and on the dict, as a user would write it
        references.append(NumpyReductions(as_dataset({"id": ids, "x": FLOATS})))
    assert_same(references, as_reductions(ds), kind, asked=asked)


VALUE_COLUMNS: dict[str, tuple[str, list[Any]]] = {
    "nullable long": ("long", [2**63 - 1, None, -(2**63), 5, 3, 2**53 + 1, 0, None, 7, 1]),
    "bool": ("boolean", [True, None, False, True, True, False, None, True, False, True]),
    "float": ("float", [0.5, NAN, None, INF, -0.0, 1.5, 2.5, 3e38, -1.0, 0.25]),
    "decimal (numpy answers)": ("decimal(10,2)", [Decimal("1.5"), None, Decimal("2.50"), Decimal("-1"), Decimal("0.5")] * 2),
    "all missing": ("double", [NAN, None] * 5),
}


@pytest.mark.parametrize("kind", list(VALUE_COLUMNS))
def test_value_columns_are_bit_identical(spark: Any, kind: str) -> None:
    ddl, values = VALUE_COLUMNS[kind]
    ids = ["u", "v", "u", None, "w", "v", "u", "w", "x", "u"]
    ds = as_dataset(spark.createDataFrame(list(zip(ids, values)), f"id string, x {ddl}"))
    assert_same(NumpyReductions(ds), as_reductions(ds), kind)


def test_empty_frames_and_string_values(spark: Any) -> None:
    ds = as_dataset(spark.createDataFrame([], "id long, x double"))
    assert_same(NumpyReductions(as_dataset({"id": np.zeros(0, dtype=np.int64), "x": np.zeros(0)})), as_reductions(ds))
    ds = as_dataset(spark.createDataFrame([(1, "a"), (2, "b")], "id long, x string"))
    assert_same(NumpyReductions(ds), as_reductions(ds), "str values: the same schema error")


@pytest.mark.parametrize("path", ["long", "split", "decimal"])
def test_totals_beyond_a_long_are_exact_on_every_path(spark: Any, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    big = 2.0**62
    ids = [1, 1, 1, 2, 2, 3, 3, 4, 5, 5] * 3
    values = [big, big, big, -big, 1.0, 5.0, -5.0, 2.0**61, 2.5, 0.5] * 3
    if path == "decimal":
        monkeypatch.setattr(su, "_SPLIT_ROWS", 0)  # as if the frame had 2**32 rows: every term summed in decimal(38,0)
    lower, upper = (0.0, 10.0) if path == "long" else (None, None)
    frame = spark.createDataFrame(list(zip(ids, values)), "id long, x double").repartition(3)
    got = as_reductions(as_dataset(frame)).per_unit_sums("id", "x", lower, upper, 0)
    want = NumpyReductions(as_dataset({"id": ids, "x": values})).per_unit_sums("id", "x", lower, upper, 0)
    assert got.tobytes() == want.tobytes()
    if path != "long":
        assert got.tolist() == [0.0, 0.0, 6.0, 2.0**62, 2.0**62]  # users 2, 3: negative or 0; 5: ties to even; 1, 4: clamped


def test_repartitioning_changes_nothing(spark: Any) -> None:
    ids = ID_COLUMNS["double"][1]
    want = NumpyReductions(as_dataset({"id": ids, "x": FLOATS}))
    frame = spark.createDataFrame(list(zip(ids, FLOATS)), "id double, x double")
    for label, shuffled in (("1", frame.repartition(1)), ("7", frame.repartition(7)), ("7 by id", frame.repartition(7, "id"))):
        assert_same(want, as_reductions(as_dataset(shuffled)), f"repartition({label})", asked=questions(full=label == "7 by id"))


def test_no_column_is_collected_to_the_driver(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    monkeypatch.setattr(SparkSource, "values", refuse)
    frame = spark.createDataFrame([(1, 1.0), (None, 2.0), (2**60, NAN)], "id long, x double")
    r = as_reductions(as_dataset(frame))
    assert r.per_unit_sums("id", "x", 0.0, 1.0, -3).tolist() == [0.0, 1.0]
    assert r.per_unit_row_counts("id", "x").tolist() == [0, 1]
    assert r.per_unit_max("id", "x", None, None).tolist() == [-INF, 1.0]


# -- end to end ------------------------------------------------------------------------------


def test_seeded_shifted_inverse_releases_are_identical_on_a_dict_polars_and_spark(spark: Any) -> None:
    pl = pytest.importorskip("polars")
    columns = synthetic_users(3000)  # synthetic data only
    frames = [
        pl.DataFrame(columns, schema={"uid": pl.String, "v": pl.Float64}),
        spark.createDataFrame(list(zip(columns["uid"], columns["v"])), "uid string, v double").repartition(7, "uid"),
    ]
    for make, budget in shifted_plans(huge_clip=False):
        value, certificate = seeded_release(make(), budget, columns)
        for frame, name in zip(frames, ("polars", "spark")):
            got_value, got_certificate = seeded_release(make(), budget, frame)
            assert (got_value, comparable(got_certificate)) == (value, comparable(certificate)), (name, make())
            assert backend_name(got_certificate) in (None, name)
