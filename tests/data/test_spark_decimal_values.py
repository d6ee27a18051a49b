"""``DecimalType`` (and ``NullType``) value columns on Spark: read on the executors, bit for bit the numpy backend.

The numpy policy reads a decimal value as Python's ``float(Decimal)`` (the nearest
double to the exact value, ties to even: :func:`dpalg.data._numeric.to_float_scalar`);
the Spark backend reads it on the executors as ``cast(cast(x as string) as double)``
(``Double.parseDouble`` of the exact text: the same rounding, by its contract), and
every reduction from there on is the double column's. One frame, built once per
module, holds three decimal columns and a ``void`` one. Checked here:

* the executors' read is ``float(Decimal)`` on every value of every decimal column
  (one job): ``decimal(38,0)`` near ``10**37`` and odd integers beyond ``2**53``,
  ``decimal(10,2)`` cents (a compact decimal: Spark holds it as a long),
  ``decimal(38,20)`` values exactly halfway between two doubles and their
  neighbours, ``±1e-20``, negatives, nulls;
* every seam answer that reads a value column (counts, distinct counts, the
  fixed-point sums, grid counts and the grid in parts, the order window, extremes,
  the per-user questions and the kept rows' sums and grid counts) equals the numpy
  backend's on the ``decimal(38,20)`` column (values outside the clip on both
  sides); on the two other columns every value as the extremes return it and the
  clipped sums on the finest lattice the executors sum (terms near ``2**50``), with
  values outside the clip; all with the collecting reads of the source refused
  (so no column is collected);
* seeded releases over a decimal column (composed: a sum and a median on the grid; a
  user-level mean and median under a row cap) equal the dict's, the
  frame in ``repartition(7, uid)`` (the read is row by row: no other layout can
  change it; the user-level paths repartition by the id themselves);
* a ``NullType`` value column is answered by every seam question without a collection.

Broken variants, checked by hand: reading the decimal as ``cast(x as float)`` (32
bits) or ``cast(x as long)`` (truncated) in :func:`decimal_double` fails the read, the
seam and the release tests; the old backend, which collected a decimal column, fails
the seam and the release tests (``column x38_20 collected``). The plain
``cast(x as double)`` passes on Spark 4.3 / JDK 17, where ``BigDecimal.doubleValue``
is correctly rounded too (asserted in :func:`test_the_executors_read_is_float_of_decimal`),
so a direct cast is not a bug this runtime can show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from backend_support import answer, comparable, seeded_release, spark_module_marks, user_layout

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


ROWS = 20
COLUMNS: dict[str, list[Any]] = {
    "x38_0": [Decimal(10**37 + 2**70 * i + 1) for i in range(6)] + [Decimal(2**53 + 1), Decimal(2**54 + 2), Decimal(-(10**37) + 3), None, Decimal(0), Decimal(7),
              Decimal(10**38 - 1), Decimal(-(10**38) + 1), Decimal(2**53 + 3), Decimal(3 * 2**60 + 1), None, Decimal(-5), Decimal(10**37), Decimal(1)],
    "x10_2": [Decimal("0.01"), Decimal("0.03"), Decimal("-0.01"), Decimal("0.10"), Decimal("0.15"), Decimal("0.25"), None, Decimal("12345678.99"),
              Decimal("-99999999.99"), Decimal("0.35"), Decimal("0.45"), Decimal("0.00"), Decimal("0.29"), Decimal("0.31"), Decimal("-0.02"), None,
              Decimal("0.07"), Decimal("99999999.99"), Decimal("0.20"), Decimal("0.30")],
    "x38_20": _halfway(6) + [Decimal("1E-20"), Decimal("-1E-20")],
}  # fmt: skip
TYPES = {"x38_0": "decimal(38,0)", "x10_2": "decimal(10,2)", "x38_20": "decimal(38,20)"}
UIDS = [i % 4 for i in range(ROWS)]

#: the clip of each column's questions (values outside it on both sides)
BOUNDS: dict[str, tuple[Fraction, Fraction]] = {
    "x38_0": (Fraction(-(10**37)), Fraction(10**37 + 2**72)),  # 10**37 + 2**70·i beyond it for i >= 4, ±(10**38 - 1) too
    "x10_2": (Fraction(-1, 100), Fraction(3, 10)),
    "x38_20": (Fraction(0), Fraction(2**52)),
}
#: bounds that clip no value: the extremes are then every value as read
WIDE: dict[str, tuple[Fraction, Fraction]] = {"x38_0": (Fraction(-(10**38)), Fraction(10**38)), "x10_2": (Fraction(-(10**8)), Fraction(10**8))}


def _sums(column: str, lower: Fraction, upper: Fraction) -> list[SumSpec]:
    k_fine = int(np.floor(np.log2(float(upper - lower)))) - 50  # terms near 2**50: the finest lattice on the executors
    return [SumSpec(column, lower, upper, k) for k in (k_fine, k_fine + 1, k_fine + 30)]


def _questions(column: str, lower: Fraction, upper: Fraction) -> list[tuple[str, Callable[[Reductions], object]]]:
    specs = _sums(column, lower, upper)
    k_fine = specs[0].k
    cells = KeptRowCellSpec("uid", column, lower, upper, 6, 2)
    return [
        ("count", lambda r: r.count(column)),
        ("count_distinct", lambda r: r.count_distinct(column)),
        ("clipped_sums", lambda r: r.clipped_sums(specs)),
        ("grid_counts", lambda r: r.grid_counts(column, lower, upper, 8)),
        ("grid_view", lambda r: r.grid_view(column, lower, upper, 16).full()),
        ("order_window", lambda r: r.order_window(column, lower, upper, 1, 5)),
        ("extremes", lambda r: r.extremes(column, lower, upper, 3)),
        ("per_unit_sums", lambda r: r.per_unit_sums("uid", column, float(lower), float(upper), -10)),
        ("per_unit_max", lambda r: r.per_unit_max("uid", column, float(lower), float(upper))),
        ("unit_totals", lambda r: r.unit_totals(UnitTotalSpec("uid", column, "sum", -10, -(2**62), 2**62, row_lower=lower, row_upper=upper, max_rows=2), SECRET)),
        ("kept_row_sum", lambda r: r.kept_row_sum(KeptRowSumSpec("uid", column, lower, upper, k_fine, 2), SECRET)),
        ("kept_row_cells", lambda r: r.kept_row_cells(cells, SECRET)),
    ]


@pytest.fixture(scope="module")
def frame(spark: Any) -> Iterator[Any]:
    """The module's frame: ``uid long``, the three decimal columns and ``none void``."""
    rows = list(zip(UIDS, *COLUMNS.values(), [None] * ROWS))
    schema = ", ".join(["uid long", *(f"{c} {t}" for c, t in TYPES.items()), "none void"])
    df = spark.createDataFrame(rows, schema)
    yield df


def _numpy() -> Reductions:
    columns: dict[str, Any] = {"uid": UIDS, **{c: np.array(v, dtype=object) for c, v in COLUMNS.items()}, "none": np.array([None] * ROWS, dtype=object)}
    return as_reductions(as_dataset(columns))


def _refuse_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)


def test_the_executors_read_is_float_of_decimal(frame: Any) -> None:
    """``decimal_double`` is Python's ``float(Decimal)`` on every value (one job); so is Spark's direct cast on this
    runtime (``BigDecimal.doubleValue``), which the backend does not rely on."""
    from pyspark.sql import functions as F

    reads = [(F.col(c), decimal_double(F.col(c)), F.col(c).cast("double")) for c in COLUMNS]
    rows = frame.select(*(e.alias(f"{c}_{i}") for c, read in zip(COLUMNS, reads) for i, e in enumerate(read))).collect()
    assert len(rows) == ROWS
    for row in rows:
        for c in COLUMNS:
            want = None if row[f"{c}_0"] is None else float(row[f"{c}_0"])
            assert (row[f"{c}_1"], row[f"{c}_2"]) == (want, want), (c, row[f"{c}_0"])


def _every_value(column: str) -> list[tuple[str, Callable[[Reductions], object]]]:
    """Every value of ``column`` as read (the extremes under bounds that clip none), and its clipped sums."""
    specs = _sums(column, *BOUNDS[column])
    return [
        (f"{column} extremes", lambda r: r.extremes(column, *WIDE[column], ROWS)),
        (f"{column} clipped_sums", lambda r: r.clipped_sums(specs)),
    ]


def test_decimal_values_are_read_on_the_executors_as_numpy_reads_them(frame: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    want, got = _numpy(), as_reductions(as_dataset(frame))
    _refuse_collection(monkeypatch)
    asks = [(f"x38_20 {name}", ask) for name, ask in _questions("x38_20", *BOUNDS["x38_20"])]
    for column in ("x38_0", "x10_2"):
        asks += _every_value(column)
    for name, ask in asks:
        assert answer(lambda: ask(got)) == answer(lambda: ask(want)), name


def test_a_null_type_value_column_is_all_missing_without_a_collection(frame: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    want, got = _numpy(), as_reductions(as_dataset(frame))
    _refuse_collection(monkeypatch)
    for name, ask in _questions("none", Fraction(0), Fraction(10)):
        assert answer(lambda: ask(got)) == answer(lambda: ask(want)), name


def test_seeded_releases_over_a_decimal_column_are_the_dicts(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two composed releases (the row-level and the user-level mechanisms: one run each, the frame persisted and checked once)."""
    from dpalg import Compose, GroupBy, KeySet
    from dpalg.mechanisms import ExponentialQuantile, Laplace

    gen = np.random.default_rng(11)
    uids = [int(u) for u in gen.integers(0, 60, 300)]
    xs: list[Any] = [Decimal(int(v)).scaleb(-2) for v in gen.integers(-500, 9000, 300)]
    xs[::37] = [None] * len(xs[::37])
    plans: list[Callable[[], Any]] = [
        lambda: Compose(
            Laplace(Query.sum("x") | Clip(0, 50), epsilon=1),
            ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=1, grid_bits=10),
        ),
        lambda: Compose(
            Laplace(Query.mean("x", user="uid") | Clip(-5, 60) | MaxRowsPerUser(3), epsilon=1),
            ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(2), epsilon=1, grid_bits=8),
        ),
        lambda: Compose(  # grouped reductions of a decimal value: one key column (a group-by) and two (the numpy coding per batch)
            GroupBy("g", keys=KeySet([0, 1, 2]), aggregates={
                "s": Laplace(Query.sum("x") | Clip(0, 50), epsilon=1), "m": Laplace(Query.mean("x") | Clip(-5, 90), epsilon=1),
            }),
            GroupBy(("g", "h"), keys=KeySet([(0, 0), (1, 1), (2, 0)]), aggregates={"s": Laplace(Query.sum("x") | Clip(-5, 50), epsilon=1)}),
        ),  # fmt: skip
    ]
    gs, hs = [u % 3 for u in uids], [u % 2 for u in uids]
    want = [seeded_release(make(), make().cost(), {"uid": uids, "g": gs, "h": hs, "x": np.array(xs, dtype=object)}) for make in plans]
    rows = list(zip(uids, gs, hs, xs))
    frame = user_layout(spark.createDataFrame(rows, "uid long, g long, h long, x decimal(10,2)"), "repartition(7, uid)")
    _refuse_collection(monkeypatch)
    for make, (value, certificate) in zip(plans, want):
        got = seeded_release(make(), make().cost(), frame)
        assert (got[0], comparable(got[1])) == (value, comparable(certificate)), make()
