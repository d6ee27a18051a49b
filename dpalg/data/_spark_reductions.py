"""The Spark backend of the reductions seam: the questions of :class:`~dpalg.data.Reductions`, on the executors.

:class:`SparkReductions` answers every reduction for a ``pyspark.sql.DataFrame``
with Spark SQL expressions, and every answer is **bit-identical** to
:class:`~dpalg.data.NumpyReductions` on the same values in the same row order
(``tests/data/test_spark_backend.py``). Only small answers reach the driver.

* **Missing values.** Null and NaN are missing and are dropped *before* anything
  else: Spark orders NaN above every number and ``least``/``greatest`` treat NaN
  as the largest value, so a NaN that reached a clip would become the upper bound.
  Integer and boolean columns are cast to double (round to nearest, ties to even,
  as numpy's casts).
* **Fixed-point sums.** The numpy fast path's chain, on the executors:
  ``t = rint(least(greatest(x·2**-k, a), b))`` with the folded bounds
  ``a = max(lo_in·2**-k, L)``, ``b = min(hi_in·2**-k, U)``. Spark's ``rint`` is
  Java's ``Math.rint``, ties to even like ``np.rint`` (Spark's ``round`` is
  HALF_UP and is not used). Each term is an integer with ``|t| <= B <= 2**52``,
  cast to ``long`` and summed with ``try_sum``: a ``long`` sum of integers is
  exact in any order and partitioning as long as no partial sum overflows, and
  ``try_sum`` answers null when one does (in ANSI mode or not). Then, and only
  then (``n·B >= 2**63`` at least), a second job sums the terms as
  ``decimal(38, 0)``, which holds ``n·2**52`` for ``n < 2**74``: exact too, but
  several times slower. The sums and counts of one call are one aggregate, and
  no row count is asked for first. A square-term spec (``centre``) squares each
  term as ``rint((t − c)·(t − c)·2**−s)`` in double, exact while ``|t − c| <= 2**26``
  (:class:`~dpalg.data._source_reductions.SumPlan`); a wider range goes to numpy. Bounds off the fast path go to the numpy
  backend (the column is collected), as they go to its exact path.
* **Grid counts.** The numpy grid index, op for op, grouped by cell; the occupied
  cells come back through Arrow (a million ``Row`` objects would cost seconds), in
  jobs under the driver's result cap (up to ``2**bits + 1`` rows, one per occupied
  cell: :func:`~dpalg.data._spark_collect.unordered_parts`, with ``2**bits + 2`` as
  the public bound on the rows, so a grid whose rows fit a quarter of the cap skips
  the planning job), and are sorted by cell in numpy. **The grid in parts** (``grid_view``, the exponential
  quantile's read; :mod:`dpalg.data._grid_view`): a grid of more than ``2**12``
  cells is counted per block of ``2**(bits − 10)`` cells first (one group-by of
  about 2**10 groups: each block's count and first and last occupied cell), then
  the cells of the blocks a question needs (the rows selected by two comparisons of
  the raw value with the first floats of the cells, ``GridCells.threshold``, as the
  order window's second pass selects its buckets; grouped by cell). The null
  group (missing values) is dropped in the driver: a filter on the cell would be
  pushed below the projection and compute the cell twice per row.
  Two passes of a few thousand groups instead of a group-by of up to ``2**20 + 1``
  cells, all collected: on ``3·10^6`` uniform values, about 1000 and 3000 groups
  reach the driver instead of about 10^6.
* **The order window.** Pass 1 counts the values per bucket, the numpy backend's
  :func:`~dpalg.data._numpy_reductions._bucket_of` computed with the same float
  operations (so the same bucket, monotone in the value), missing values in a
  bucket of their own, so the same pass counts the rows (which decide numpy's
  short path). Pass 2 collects the values of the buckets that hold the ranks, in
  the frame's row order, selected by two comparisons with the smallest floats of
  the first bucket and of the one after the last (the bucket is monotone; a plain
  range also lets a cached frame skip whole batches by their minimum and maximum),
  and the driver sorts, slices and clips them with the
  shared code of :mod:`dpalg.data._source_reductions` (so even the signs of tied
  zeros agree with numpy on the same row order). Two passes, three jobs (the
  group-by's shuffle is a job of its own under adaptive execution).
* **Extremes.** One collect of a union: ``orderBy(v).limit(k)`` both ways and one
  aggregate holding the count and how many zeros of each sign the column holds
  (``-0.0`` is told by its text, computed for zeros only). Sorted and clipped in
  the driver; when a zero is among them and the column holds both ``0.0`` and
  ``-0.0``, the numpy backend answers (its choice among tied zeros depends on its
  blocks).
* **Keys and units.** A group-by (NaN as null), the distinct values normalised by
  :func:`~dpalg.data.normalise_key` and merged when they normalise equal; a unit
  count is a ``count(DISTINCT ·)`` (``x + 0.0`` merges ``-0.0`` with ``0.0``).
* **User-level histograms** (``unit_key_counts``): the numpy key and row
  choice per user partition (:mod:`dpalg.data._spark_unit_keys`); one count per key
  reaches the driver.
* **Decimal values.** A ``DecimalType`` value column is read as the double the
  numpy policy reads (:func:`~dpalg.data._numeric.to_float_scalar`: Python's
  ``float(Decimal)``, the nearest double to the exact decimal, ties to even), on
  the executors, as ``cast(cast(x as string) as double)``: Spark writes the exact
  decimal as text (``BigDecimal.toString``) and parses it with
  ``Double.parseDouble``, whose contract is that same rounding of the exact
  decimal value. From that double on, every reduction above is the double
  column's (counts, distinct counts, fixed-point sums, grid counts, the order
  window, extremes, the per-user questions), so no decimal column is collected.
  (The direct ``cast(x as double)`` is ``BigDecimal.doubleValue``, correctly
  rounded on the JDKs tested, but with no such contract.) A decimal has no NaN
  and no ``-0.0``. ``NullType`` value columns are all missing: read as a null
  double (``null`` kind) they are native too.
* **Decimal and null keys and ids** are grouped on the executors
  (:func:`~dpalg.data._spark_units.unit_key_kind`; the exactness argument is in
  :mod:`dpalg.data._spark_grouping`).
* **Other types** (the types the schema check refuses): the column is collected
  to numpy once and :class:`~dpalg.data.NumpyReductions` answers (its error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import numpy as np
import numpy.typing as npt

from dpalg.data._dataset import ColumnSource
from dpalg.data._grid_view import BLOCK_BITS, BlockedGrid, CountedGrid, GridView
from dpalg.data._keys import Key
from dpalg.data._reductions import LatticeSum, OrderWindow, SumSpec
from dpalg.data._source_reductions import (
    GridCells, SourceReductions, SumPlan, WindowBuckets, bucket_span, chosen_window, key_candidates, key_histogram, listed_keys,
    sorted_window,
)  # fmt: skip
from dpalg.data import _spark_unit_keys as unit_keys
from dpalg.data import _spark_unit_totals as unit_totals
from dpalg.data import _spark_units as units
from dpalg.data._unit_totals import KeptRowCellSpec, KeptRowSumSpec, UnitKeySpec, UnitTotals, UnitTotalSpec
from dpalg.data._spark_collect import arrow_table, ordered_parts, unordered_parts
from dpalg.data._spark_types import executor_kind, quoted, spark_kind

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
else:
    from dpalg.data._spark_types import F  # the lazy proxy: pyspark is imported on first use

__all__ = ["SparkFrameSource", "SparkReductions"]


class SparkFrameSource(ColumnSource, Protocol):
    """What the reductions read from their source (:class:`~dpalg.data._spark.SparkSource` is one; it builds them).

    Written here, below the source, so that the reductions name no module above
    them (dependency inversion: the source depends on this description, not the
    reverse).
    """

    @property
    def frame(self) -> Any:
        """The DataFrame, persisted (every job of a run reads the same rows in the same order)."""
        ...

    def spark_dtype(self, name: str) -> Any:
        """The column's Spark type (schema only)."""
        ...

    @property
    def known_rows(self) -> int | None:
        """The row count, if a job has counted it already."""
        ...

    def note_rows(self, n: int) -> None:
        """Record the row count a reduction's pass counted along the way."""
        ...

_NATIVE_NUMERIC: Final = ("float", "int", "bool", "null")
#: the key and id kinds grouped on the executors (:func:`~dpalg.data._spark_units.unit_key_kind`: a decimal value is one
#: key, a null column holds none)
_NATIVE_KEYS: Final = ("float", "int", "bool", "null", "str", "bytes", "decimal")


def _clip(x: Column, lo: float, hi: float) -> Column:
    """``clip(x, lo, hi)`` for a present (non-NaN) value; null stays null.

    ``least``/``greatest`` take NaN as the largest value and skip nulls (``greatest(null, lo)`` is ``lo``),
    so a missing value must never reach them.
    """
    return F.when(x.isNotNull(), F.least(F.greatest(x, F.lit(lo)), F.lit(hi)))


@final
class SparkReductions(SourceReductions[SparkFrameSource]):
    """:class:`~dpalg.data.Reductions` over a Spark DataFrame, on the executors (module docstring)."""

    __slots__ = ()
    _KEY_KINDS = _NATIVE_KEYS

    def _kind(self, column: str) -> str:
        self._data.column_dtype(column)  # an unknown column raises the dataset's error
        return spark_kind(self._source.spark_dtype(column))

    def _key_kind(self, column: str) -> str:
        self._data.column_dtype(column)  # an unknown column raises the dataset's error
        return units.unit_key_kind(self._source.spark_dtype(column)) or "other"

    def _native(self, column: str) -> bool:
        """Whether ``column`` is read as numbers on the executors (raises what the numpy backend raises first)."""
        self._data.require_numeric(column)
        return self._kind(column) in _NATIVE_NUMERIC or self._decimal(column)

    def _decimal(self, column: str) -> bool:
        """A ``DecimalType`` column (the schema only): its values are read as :func:`decimal_double`."""
        return executor_kind(self._source.spark_dtype(column)) == "decimal"

    def _double(self, column: str) -> Column:
        col = F.col(quoted(column))
        return decimal_double(col) if self._decimal(column) else col.cast("double")

    def _present(self, column: str) -> Column:
        """The column as double, missing (null and NaN) as null."""
        x = self._double(column)
        return F.when(~F.isnan(x), x) if self._kind(column) == "float" else x

    def _agg(self, *exprs: Column) -> Any:
        """One row of scalar aggregates: one pass over the frame."""
        return self._source.frame.agg(*exprs).collect()[0]

    # -- the backend's side of each question (SourceReductions asks them, checked, in the numpy backend's order) --

    def _computes(self, column: str) -> bool:
        return self._native(column)

    def _count(self, column: str) -> int:
        return int(self._agg(F.count(self._present(column)))[0])

    def _count_distinct(self, column: str) -> int:
        return int(self._agg(F.countDistinct(self._present(column) + F.lit(0.0)))[0])  # + 0.0: -0.0 is 0.0

    def _sums(self, planned: dict[int, tuple[SumSpec, SumPlan]]) -> dict[int, tuple[int, int]]:
        terms: dict[int, Column] = {}
        exprs: list[Column] = []
        for i, (s, plan) in planned.items():
            x = self._present(s.column)
            t = F.rint(_clip(x * F.lit(plan.scale), plan.a, plan.b))
            if plan.centre is not None:  # exact in double: |t - centre| <= 2**26 (SumPlan)
                d = t - F.lit(float(plan.centre))
                t = F.rint((d * d) * F.lit(plan.square_scale))
            terms[i] = t.cast("long")
            exprs += [F.try_sum(terms[i]).alias(f"s{i}"), F.count(x).alias(f"n{i}")]  # try_sum: null on overflow
        got = self._agg(*exprs).asDict()
        wide = [F.sum(t.cast("decimal(38,0)")).alias(f"s{i}") for i, t in terms.items() if got[f"s{i}"] is None and got[f"n{i}"]]
        if wide:  # a long partial sum overflowed: again, exactly, in decimal (rare: n·B >= 2**63)
            got.update(self._agg(*wide).asDict())
        return {i: (int(got[f"s{i}"] or 0), int(got[f"n{i}"])) for i in planned}

    def _key_candidates(self, column: str, kind: str, keys: list[Key]) -> list[object]:
        if kind == "decimal":  # the Decimal of the column's scale that is each key (Spark compares decimals exactly)
            return list(units.decimal_candidates(self._source.spark_dtype(column), keys))
        int_dtype = _INT_TYPES.get(type(self._source.spark_dtype(column)).__name__)
        return key_candidates(kind, int_dtype, keys, as_bytes=bytearray, zero_twins=True)  # isin tells -0.0 from 0.0

    def _key_groups(self, column: str, kind: str, candidates: list[object] | None) -> list[tuple[object, int]]:
        keys = self._source.frame.select(self._key_expr(column, kind).alias("k"))
        if candidates is not None:
            keys = keys.where(F.col("k").isin(candidates))
        most = len(candidates) if candidates is not None else self._source.known_rows  # distinct keys <= rows
        return _pairs(keys.groupBy("k").count(), variable=kind in ("str", "bytes"), most=most)

    def _grid_counts(self, column: str, grid: GridCells) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        # cells 0..2**bits and the null group of the missing values: a public bound on the grouped rows
        return _cell_counts(self._cells(column, grid, self._source.frame).groupBy("j").count(), most=grid.size + 2)

    def _grid_view(self, column: str, grid: GridCells) -> GridView:
        if grid.bits <= BLOCK_BITS + 2:  # a small grid: one pass counts it whole
            return CountedGrid(*self._grid_counts(column, grid))
        # pass 1: per block of 2**shift cells, its count and its first and last occupied cell (about 2**10 groups)
        shift = grid.bits - BLOCK_BITS
        cells = self._cells(column, grid, self._source.frame)
        blocks = _arrow_columns(
            cells.groupBy(F.shiftright(F.col("j"), shift).alias("k")).agg(F.count(F.lit(1)), F.min("j"), F.max("j")), 4
        )  # fmt: skip
        order = np.argsort(blocks[0], kind="stable")
        k, count, first, last = (b[order] for b in blocks)

        def fetch(c0: int, c1: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
            # pass 2: the cells c0..c1, selected by two comparisons of the raw value (the cell is monotone in
            # it: cell(x) >= t exactly when x >= theta_t), so the other rows' cells are never computed
            raw = self._double(column)
            keep = ~F.isnan(raw) if self._kind(column) == "float" else raw.isNotNull()
            start, stop = grid.threshold(c0), grid.threshold(c1 + 1)
            if start is not None and start > -math.inf:
                keep = keep & (raw >= F.lit(start))
            if stop is not None:  # (Spark's comparisons take -0.0 as 0.0, as numpy's; the cell of both is 0's)
                keep = keep & (raw < F.lit(stop))
            return _cell_counts(self._cells(column, grid, self._source.frame.where(keep)).groupBy("j").count(), most=c1 - c0 + 2)

        return BlockedGrid(shift, k, count, first, last, fetch, lambda: self._grid_counts(column, grid))

    def _cells(self, column: str, grid: GridCells, rows: Any) -> Any:
        """The grid cell ``j`` of each row of ``rows`` (the numpy grid index, op for op), null for a missing value.

        Not filtered here: a filter on ``j`` would compute the expression twice per row
        (Spark pushes it below the projection); the null group is dropped in the driver.
        """
        v = ((_clip(self._present(column), grid.lo_in, grid.hi_in) * F.lit(0.5)) - F.lit(grid.half_l)) * F.lit(grid.scale)
        r = F.rint(v)
        cell = F.when(~F.isnan(r), _clip(r, 0.0, float(grid.size)).cast("long"))  # NaN (0·inf): counted nowhere
        return rows.select(cell.alias("j"))

    def _order_window(self, column: str, buckets: WindowBuckets, first: int, last: int) -> OrderWindow:
        x = self._present(column)
        known = self._source.known_rows
        if known is not None and known <= buckets.count:  # the numpy backend's short path: every present value, in row order
            return sorted_window(self._collect(x), buckets, first, last)
        # pass 1: the count per bucket; the missing values in bucket `count`, so the same pass counts the rows
        bucket = F.floor((_clip(x, buckets.lo_in, buckets.hi_in) * F.lit(0.5) - F.lit(buckets.lo_in * 0.5)) * F.lit(buckets.scale))
        bucket = _clip(bucket.cast("double"), 0.0, float(buckets.count - 1)).cast("long")
        counts = np.zeros(buckets.count + 1, dtype=np.int64)
        for b, c in _pairs(self._source.frame.select(F.coalesce(bucket, F.lit(buckets.count)).alias("b")).groupBy("b").count(), most=buckets.count + 1):
            counts[int(b)] = c
        self._source.note_rows(int(counts.sum()))
        if int(counts.sum()) <= buckets.count:  # short after all: pass 2 collects every present value
            return sorted_window(self._collect(x), buckets, first, last)
        span = bucket_span(counts[: buckets.count], first, last)
        if span.empty:
            return chosen_window(np.zeros(0, dtype=np.float64), span, buckets)
        # pass 2: the values of buckets b0..b1 in row order (numpy's chosen values), selected by two comparisons:
        # the bucket is monotone, so bucket(x) >= t exactly when x >= theta_t (WindowBuckets.threshold)
        raw = self._double(column)
        keep = ~F.isnan(raw) if self._kind(column) == "float" else raw.isNotNull()
        start = buckets.threshold(span.b0) if span.b0 > 0 else None
        stop = buckets.threshold(span.b1 + 1) if span.b1 + 1 < buckets.count else None
        if start is not None:
            keep = keep & (raw >= F.lit(start))
        if stop is not None:  # (Spark's comparisons take -0.0 as 0.0, as numpy's)
            keep = keep & (raw < F.lit(stop))
        return chosen_window(self._collect(F.when(keep, raw)), span, buckets)

    def _extremes(self, column: str, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64], Callable[[], bool]]:
        # One collect: the count and the zeros of each sign (one aggregate), the k smallest and the k largest.
        x = self._present(column)
        zero = x == F.lit(0.0)
        negative = F.when(zero, x.cast("string").startswith("-"))  # the text tells -0.0 apart (cast only for zeros)
        none = F.lit(None).cast("long")
        query = self._source.frame.agg(
            F.lit(2).alias("t"), F.lit(None).cast("double").alias("v"), F.count(x).alias("n"),
            F.count(F.when(negative, 1)).alias("neg"), F.count(F.when(~negative, 1)).alias("pos"),
        )  # fmt: skip
        if k > 0:
            present = self._source.frame.select(x.alias("v")).where(F.col("v").isNotNull())
            for tag, order in ((0, F.col("v").asc()), (1, F.col("v").desc())):
                part = present.orderBy(order).limit(k).select(F.lit(tag).alias("t"), "v", none.alias("n"), none.alias("neg"), none.alias("pos"))
                query = query.unionAll(part)
        ends: dict[int, list[float]] = {0: [], 1: []}
        n, zeros = 0, (0, 0)
        for row in query.collect():
            if row[0] == 2:
                n, zeros = int(row[2]), (int(row[3]), int(row[4]))
            else:
                ends[int(row[0])].append(float(row[1]))
        small, large = np.array(ends[0], dtype=np.float64), np.array(ends[1], dtype=np.float64)
        return n, small, large, lambda: zeros[0] > 0 and zeros[1] > 0

    def _unit_count(self, unit: str, kind: str) -> int:
        key = self._key_expr(unit, kind)
        if kind == "float":
            key = key  # -0.0 and 0.0 are one id
        return int(self._agg(F.countDistinct(key))[0])

    # -- private -----------------------------------------------------------------------

    def top_key_counts(self, column: str, k: int) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]] | None:
        """The ``k`` present keys with the largest counts (ties: the smaller key first), in key order, and their counts;
        ``None`` for a column that is not bool, int or float (the caller reads the whole histogram).

        One ``groupBy`` on the executors, sorted by count (descending) and key, ``k`` rows collected: all that a
        mode and its gap to the runner-up need (:func:`dpalg.mechanisms.ptr.mode_histogram`). A float key is
        ``x + 0.0`` (``-0.0`` is ``0.0``, one key, as the key policy reads it) and NaN is no key.
        """
        kind = self._kind(column)
        if kind not in ("bool", "int", "float"):
            return None
        key = self._key_expr(column, kind)
        if kind == "float":
            key = key + F.lit(0.0)
        grouped = self._source.frame.select(key.alias("k")).where(F.col("k").isNotNull()).groupBy("k").count()
        rows = grouped.orderBy(F.col("count").desc(), F.col("k").asc()).limit(k).collect()
        return key_histogram((row["k"], int(row["count"])) for row in rows)

    def _key_expr(self, column: str, kind: str) -> Column:
        """The column as keys: floats as double with NaN as null."""
        col = F.col(quoted(column))
        if kind == "float":
            x = col.cast("double")
            return F.when(~F.isnan(x), x)
        return col

    def _collect(self, expr: Column) -> npt.NDArray[np.float64]:
        """The non-null values of ``expr`` in the frame's row order, as float64 (jobs under the result cap: :mod:`dpalg.data._spark_collect`)."""
        from pyspark.sql import types as T

        parts = [_doubles(part) for part in ordered_parts(self._source.frame, expr, T.DoubleType(), n_rows=self._source.known_rows, present_only=True)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    # -- per-unit questions ------------------------------------------------------------
    # Thin: validation, the numpy fallback for what Spark does not group or read, then one
    # groupBy in dpalg.data._spark_units (semantics and exactness argued there).

    def _unit_plan(self, unit: str, column: str | None) -> tuple[Column, Column | None] | None:
        """The unit key and the present values (``None`` without a column); ``None`` when numpy answers.

        Checks in the numpy backend's order: the id column exists, then the value column holds numbers.
        """

        self._data.column_dtype(unit)  # an unknown id column raises the dataset's error first
        key_kind = units.unit_key_kind(self._source.spark_dtype(unit))
        values = None
        if column is not None:
            if not self._native(column):
                return None
            values = self._present(column)  # units.present_values, and a decimal read as decimal_double
        return None if key_kind is None else (units.unit_key(unit, key_kind), values)

    def per_unit_sums(self, unit: str, column: str, lower: float | None, upper: float | None, k: int) -> npt.NDArray[np.float64]:
        from dpalg.data._user_units import check_unit_clip, check_unit_lattice

        check_unit_lattice("per_unit_sums", k)
        check_unit_clip("per_unit_sums", lower, upper)
        plan = self._unit_plan(unit, column)
        if plan is None or plan[1] is None:
            return self._numpy().per_unit_sums(unit, column, lower, upper, k)
        return units.unit_sums(self._source.frame, plan[0], plan[1], lower, upper, k, self.n_rows)

    def per_unit_row_counts(self, unit: str, column: str | None) -> npt.NDArray[np.int64]:

        plan = self._unit_plan(unit, column)
        if plan is None:
            return self._numpy().per_unit_row_counts(unit, column)
        return units.unit_row_counts(self._source.frame, plan[0], plan[1], self.n_rows)

    def unit_total_sum(self, spec: UnitTotalSpec, secret: bytes) -> UnitTotals:
        per_unit = self._per_unit_totals(spec, secret)
        if per_unit is None:
            return self._numpy().unit_total_sum(spec, secret)
        return unit_totals.total_sum(per_unit, spec, self.n_rows)

    def unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        per_unit = self._per_unit_totals(spec, secret)
        if per_unit is None:
            return self._numpy().unit_totals(spec, secret)
        return unit_totals.totals_collected(per_unit, self.n_rows)

    def kept_row_sum(self, spec: KeptRowSumSpec, secret: bytes) -> LatticeSum:
        plan = self._unit_plan(spec.unit, spec.column)
        if plan is None or plan[1] is None:
            return self._numpy().kept_row_sum(spec, secret)
        key_kind = units.unit_key_kind(self._source.spark_dtype(spec.unit))
        assert key_kind is not None
        total, kept = unit_totals.kept_row_sum(self._source.frame, key_kind, plan[1], spec, self.n_rows, secret)
        return LatticeSum(total, kept, spec.k)

    def kept_row_cells(self, spec: KeptRowCellSpec, secret: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        plan = self._unit_plan(spec.unit, spec.column)
        if plan is None or plan[1] is None:
            return self._numpy().kept_row_cells(spec, secret)
        key_kind = units.unit_key_kind(self._source.spark_dtype(spec.unit))
        assert key_kind is not None
        grouped = unit_totals.kept_row_cells(self._source.frame, key_kind, plan[1], spec, self.n_rows, secret)
        return _cell_counts(grouped, most=min(spec.points, self.n_rows))  # occupied points <= rows, and <= the spec's

    def unit_key_counts(self, spec: UnitKeySpec, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        self._data.column_dtype(spec.unit)  # an unknown column raises the dataset's error (ids first, as numpy reads)
        unit_kind = units.unit_key_kind(self._source.spark_dtype(spec.unit))
        kind = self._key_kind(spec.column)
        if unit_kind is None or kind not in self._KEY_KINDS:
            return self._numpy().unit_key_counts(spec, secret)
        if "null" in (unit_kind, kind):  # a null-typed id or key: no row has both (numpy's answer on no rows; nothing read)
            return spec.keys or (), np.zeros(len(spec.keys or ()), dtype=np.int64)
        candidates = None
        if spec.keys is not None:
            candidates = self._key_candidates(spec.column, kind, [k for _, k in listed_keys(spec.keys)])
        return unit_keys.kept_key_counts(self._source.frame, unit_kind, spec, candidates, self.n_rows, secret)

    def _per_unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> Any:
        """The per-user frame of :mod:`dpalg.data._spark_unit_totals`, or ``None`` when numpy answers."""
        plan = self._unit_plan(spec.unit, spec.column)
        if plan is None or spec.k > 900:  # 2**61·2**k may overflow a double beyond: numpy's exact path
            return None
        key_kind = units.unit_key_kind(self._source.spark_dtype(spec.unit))
        assert key_kind is not None
        return unit_totals.per_unit_totals(self._source.frame, key_kind, plan[1], spec, self.n_rows, secret)

    def per_unit_max(self, unit: str, column: str, lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
        from dpalg.data._user_units import check_unit_clip

        check_unit_clip("per_unit_max", lower, upper)
        plan = self._unit_plan(unit, column)
        if plan is None or plan[1] is None:
            return self._numpy().per_unit_max(unit, column, lower, upper)
        return units.unit_max(self._source.frame, plan[0], plan[1], lower, upper, self.n_rows)


_INT_TYPES: Final[dict[str, np.dtype[np.integer[Any]]]] = {
    "ByteType": np.dtype(np.int8), "ShortType": np.dtype(np.int16), "IntegerType": np.dtype(np.int32), "LongType": np.dtype(np.int64),
}  # fmt: skip


def decimal_double(col: Column) -> Column:
    """A decimal column as the double the numpy policy reads: the nearest double to the exact value, ties to even.

    ``Double.parseDouble`` of the exact decimal text is specified as that rounding
    (``Double.valueOf(String)``: the exact decimal value rounded by IEEE 754
    round-to-nearest), as Python's ``float(Decimal)`` is; null stays null.
    """
    return col.cast("string").cast("double")


def _arrow_columns(frame: Any, width: int) -> list[npt.NDArray[np.int64]]:
    """The ``width`` integer columns of a small grouped frame as int64 arrays, the row whose key (column 0) is null dropped."""
    table = arrow_table(frame)
    if table is not None:
        table = table.filter(table.column(0).is_valid())
        return [np.asarray(table.column(i).to_numpy(), dtype=np.int64) for i in range(width)]
    rows = [row for row in frame.collect() if row[0] is not None]
    return [np.array([int(row[i]) for row in rows], dtype=np.int64) for i in range(width)]


def _cell_counts(frame: Any, *, most: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A grouped frame ``(cell, count)`` as ascending cells and their counts (sorted in numpy, not as Python rows).

    One row per occupied cell, up to ``2**bits + 1`` of them: collected in jobs under the driver's
    result cap (:func:`dpalg.data._spark_collect.unordered_parts`), in any order, then sorted by
    cell (each cell is one row, so the order is the cells' alone). ``most`` is the public bound on the
    rows (the grid's cells and the null group): a grid whose rows fit a quarter of the cap skips the
    planning job.
    """
    got = [_arrow_columns(part, 2) for part in unordered_parts(frame, variable_key=False, most=most)]
    if not got:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cells = np.concatenate([g[0] for g in got])
    counts = np.concatenate([g[1] for g in got])
    order = np.argsort(cells, kind="stable")
    return cells[order], counts[order]


def _doubles(frame: Any) -> npt.NDArray[np.float64]:
    """The one double column of ``frame``, in its order, as float64 (one job)."""
    table = arrow_table(frame)
    if table is not None:
        return np.asarray(table.column(0).to_numpy(), dtype=np.float64).copy()
    return np.array([r[0] for r in frame.collect()], dtype=np.float64)


def _pairs(frame: Any, *, variable: bool = False, most: int | None = None) -> list[tuple[Any, int]]:
    """The rows ``(value, count)`` of a grouped frame (Arrow when it can: far cheaper than Row objects).

    A grouped frame has a row per distinct value, as many as the rows at worst:
    it is collected in jobs under the result cap (:func:`dpalg.data._spark_collect.unordered_parts`);
    ``variable``: the key is a string or binary (its bytes are measured);
    ``most``: a public bound on the number of groups, if one is known (a small one saves the planning job).
    """
    out: list[tuple[Any, int]] = []
    for part in unordered_parts(frame, variable_key=variable, most=most):
        table = arrow_table(part)
        if table is not None:
            out.extend(zip(table.column(0).to_pylist(), (int(c) for c in table.column(1).to_pylist())))
        else:
            out.extend((row[0], int(row[1])) for row in part.collect())
    return out
