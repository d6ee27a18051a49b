"""``DecimalType`` (and ``NullType``) value columns on Spark: read on the executors, bit for bit the numpy backend.

The numpy policy reads a decimal value as Python's ``float(Decimal)`` (the nearest
double to the exact value, ties to even); the Spark backend reads it on the
executors as ``cast(cast(x as string) as double)`` (``Double.parseDouble`` of the
exact text: the same rounding, by its contract), and every reduction from there on
is the double column's. Checked here:

* every seam answer that reads a value column (counts, distinct counts, the
  fixed-point sums, grid counts and the grid in parts, the order window, extremes,
  the per-user questions and the kept rows' sums and grid counts) equals the numpy
  backend's on adversarial decimals (``decimal(38,0)`` near ``10**37`` and odd
  integers beyond ``2**53``, ``decimal(10,2)`` cents, ``decimal(38,20)`` values
  exactly halfway between two doubles, negatives, nulls, values outside the clip),
  with the collecting reads of the source refused (so none is collected);
* seeded releases over a decimal column equal the dict's in the three layouts;
* a ``NullType`` value column is answered without a collection.

Broken variants: the plain ``cast(x as double)`` passes on Spark 4.3 / JDK 17, where
``BigDecimal.doubleValue`` is correctly rounded too (its halfway cases are asserted in
:func:`test_the_executors_read_is_float_of_decimal`), so a direct cast is not a bug
this runtime can show; a lossy read (``cast(x as float)``) is not yet checked against
these tests by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from backend_support import USER_LAYOUTS, answer, comparable, seeded_release, spark_module_marks, user_layout

pytestmark = spark_module_marks()

from dpalg import Clip, MaxRowsPerUser, PureDP, Query  # noqa: E402
from dpalg.data import Reductions, SumSpec, as_dataset, as_reductions  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.data._spark_reductions import decimal_double  # noqa: E402
from dpalg.data._unit_totals import KeptRowCellSpec, KeptRowSumSpec, UnitTotalSpec  # noqa: E402

SECRET = bytes(range(32))


def _halfway(count: int) -> list[Decimal]:
    """Decimals exactly halfway between two doubles (an odd 54-bit numerator over a power of two), and their neighbours."""
    gen = np.random.default_rng(3)
    out: list[Decimal] = []
    with localcontext() as exact:
        exact.prec = 80  # every step exact: num / 2**e has e <= 20 decimals
        for e in range(1, 1 + count):
            num = 2 * int(gen.integers(2**52, 2**53)) + 1
            d = (Decimal(num) / (Decimal(2) ** e)).quantize(Decimal(1).scaleb(-20))
            out += [d, d + Decimal(1).scaleb(-20), -d]
    return out


COLUMNS: dict[str, list[Any]] = {
    "decimal(38,0)": [Decimal(10**37 + 2**70 * i + 1) for i in range(6)] + [Decimal(2**53 + 1), Decimal(2**54 + 2), Decimal(-(10**37) + 3), None, Decimal(0), Decimal(7)],
    "decimal(10,2)": [Decimal("0.01"), Decimal("0.03"), Decimal("-0.01"), Decimal("0.10"), Decimal("0.15"), Decimal("0.25"), None,
                      Decimal("12345678.99"), Decimal("-99999999.99"), Decimal("0.35"), Decimal("0.45"), Decimal("0.00")],
    "decimal(38,20)": _halfway(6),
}  # fmt: skip

BOUNDS: dict[str, tuple[Fraction, Fraction]] = {
    "decimal(38,0)": (Fraction(-(10**37)), Fraction(10**37 + 2**72)),  # 10**37 + 2**70·i beyond it for i >= 4
    "decimal(10,2)": (Fraction(-1, 100), Fraction(3, 10)),  # values outside on both sides
    "decimal(38,20)": (Fraction(0), Fraction(2**52)),
}


def _questions(lower: Fraction, upper: Fraction) -> list[tuple[str, Callable[[Reductions], object]]]:
    width = upper - lower
    k_fine = int(np.floor(np.log2(float(width)))) - 50  # terms near 2**50: the finest lattice on the executors
    specs = [SumSpec("x", lower, upper, k) for k in (k_fine, k_fine + 1, k_fine + 30)]
    cells = KeptRowCellSpec("uid", "x", lower, upper, 6, 2)
    return [
        ("count", lambda r: r.count("x")),
        ("count_distinct", lambda r: r.count_distinct("x")),
        ("clipped_sums", lambda r: r.clipped_sums(specs)),
        ("grid_counts", lambda r: r.grid_counts("x", lower, upper, 8)),
        ("grid_view", lambda r: r.grid_view("x", lower, upper, 16).full()),
        ("order_window", lambda r: r.order_window("x", lower, upper, 1, 5)),
        ("extremes", lambda r: r.extremes("x", lower, upper, 3)),
        ("per_unit_sums", lambda r: r.per_unit_sums("uid", "x", float(lower), float(upper), -10)),
        ("per_unit_max", lambda r: r.per_unit_max("uid", "x", float(lower), float(upper))),
        ("unit_totals", lambda r: r.unit_totals(UnitTotalSpec("uid", "x", "sum", -10, -(2**62), 2**62, row_lower=lower, row_upper=upper, max_rows=2), SECRET)),
        ("kept_row_sum", lambda r: r.kept_row_sum(KeptRowSumSpec("uid", "x", lower, upper, k_fine, 2), SECRET)),
        ("kept_row_cells", lambda r: r.kept_row_cells(cells, SECRET)),
    ]


def _refuse_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)


@pytest.mark.parametrize("ddl", list(COLUMNS))
def test_decimal_values_are_read_on_the_executors_as_numpy_reads_them(spark: Any, ddl: str, monkeypatch: pytest.MonkeyPatch) -> None:
    values = COLUMNS[ddl]
    uids = [i % 4 for i in range(len(values))]
    want = as_reductions(as_dataset({"uid": uids, "x": np.array(values, dtype=object)}))
    frame = spark.createDataFrame(list(zip(uids, values)), f"uid long, x {ddl}").repartition(3)
    got = as_reductions(as_dataset(frame))
    _refuse_collection(monkeypatch)
    for name, ask in _questions(*BOUNDS[ddl]):
        assert answer(lambda: ask(got)) == answer(lambda: ask(want)), (ddl, name)


def test_the_executors_read_is_float_of_decimal(spark: Any) -> None:
    """``decimal_double`` is Python's ``float(Decimal)`` on halfway cases and at the ends of ``decimal(38,0)``;
    so is Spark's direct cast on this runtime (``BigDecimal.doubleValue``), which the backend does not rely on."""
    for ddl, values in COLUMNS.items():
        frame = spark.createDataFrame([(v,) for v in values], f"x {ddl}")
        rows = frame.select(F_col("x"), decimal_double(F_col("x")).alias("d"), F_col("x").cast("double").alias("c")).collect()
        for row in rows:
            want = None if row["x"] is None else float(row["x"])
            assert (row["d"], row["c"]) == (want, want), ddl


def F_col(name: str) -> Any:  # noqa: N802 -- pyspark's col, imported lazily
    from pyspark.sql import functions as F

    return F.col(name)


def test_seeded_releases_over_a_decimal_column_are_the_dicts_in_every_layout(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg.mechanisms import ExponentialQuantile, Laplace

    gen = np.random.default_rng(11)
    uids = [int(u) for u in gen.integers(0, 60, 400)]
    xs: list[Any] = [Decimal(int(v)).scaleb(-2) for v in gen.integers(-500, 9000, 400)]
    xs[::37] = [None] * len(xs[::37])
    plans: list[Callable[[], Any]] = [
        lambda: Laplace(Query.sum("x") | Clip(0, 50), epsilon=1),
        lambda: Laplace(Query.mean("x", user="uid") | Clip(-5, 60) | MaxRowsPerUser(3), epsilon=1),
        lambda: ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=1, grid_bits=10),
        lambda: ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(2), epsilon=1, grid_bits=8),
    ]
    want = [seeded_release(make(), PureDP(1), {"uid": uids, "x": np.array(xs, dtype=object)}) for make in plans]
    frame = spark.createDataFrame(list(zip(uids, xs)), "uid long, x decimal(10,2)")
    _refuse_collection(monkeypatch)
    for make, (value, certificate) in zip(plans, want):
        for layout in USER_LAYOUTS:
            got = seeded_release(make(), PureDP(1), user_layout(frame, layout))
            assert (got[0], comparable(got[1])) == (value, comparable(certificate)), (layout, make())


def test_a_null_type_value_column_is_all_missing_without_a_collection(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = spark.createDataFrame([(1, None), (2, None), (1, None)], "uid long, x void")
    want = as_reductions(as_dataset({"uid": [1, 2, 1], "x": np.array([None] * 3, dtype=object)}))
    got = as_reductions(as_dataset(frame))
    _refuse_collection(monkeypatch)
    for name, ask in _questions(Fraction(0), Fraction(10)):
        assert answer(lambda: ask(got)) == answer(lambda: ask(want)), name
