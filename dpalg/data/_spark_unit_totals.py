"""Users' bounded totals on Spark executors: :mod:`dpalg.data._unit_totals`, bit for bit, without collecting a column.

:class:`~dpalg.data._spark_reductions.SparkReductions` answers
``unit_total_sum`` and ``unit_totals`` here. Each user's clamped total is one row
of a per-user frame (column ``v``, a ``long``: ``|total| <= 2**62``), computed on
the executors in one of two ways:

* **SQL** (no row cap, or a count under a row cap): one ``groupBy`` on the unit
  key (:func:`~dpalg.data._spark_units.unit_key`, rows with a null key dropped:
  they are nobody's rows) with the numpy chain as Spark expressions. A sum's term
  is ``rint(least(greatest(clip(x), −2**61·2**k), 2**61·2**k) · 2**−k)`` cast to
  ``long`` (``rint`` ties to even like ``np.rint``; ``2**−k`` is a normal double for
  ``k`` in ``[-999, 900]``, so the product is the correctly rounded ``ldexp``),
  where ``clip`` is ``np.clip(np.clip(x, float(l), float(u)), lo_in, hi_in)`` with
  ``greatest``/``least`` under ``when(x is not null)`` (they skip nulls, so a
  missing value must never reach them); ``k = -1000`` gives terms 0, as numpy.
  The per-user sum is exact (:func:`~dpalg.data._spark_units.exact_total`: a
  ``long`` sum only when no partial sum can overflow) and clamped. A count's total
  is ``count`` of the present values (of the rows without a column); under a row
  cap ``r`` it is ``least(count, r)``: each user keeps ``min(n_u, r)`` rows whichever
  rows the keyed choice keeps, so the count needs no hash.
* **Arrow, per user group** (a sum under ``MaxRowsPerUser``): the rows are
  ``repartition``-ed by the unit key (all rows of a user land in one partition;
  an explicit partition count is never coalesced or split by adaptive
  execution), and each partition is read into numpy exactly as
  :meth:`~dpalg.data._spark.SparkSource.materialise` reads a column
  (:func:`~dpalg.data._spark_types.arrow_to_numpy`) and given to
  :func:`~dpalg.data._unit_totals.numpy_unit_totals`, the numpy backend's own
  code. A user's kept rows and total are a function of the secret and that
  user's rows only (:func:`~dpalg.data.select_rows`: the priority hashes the id,
  the content and the occurrence among identical rows; ranks are taken within the
  user), so a partition holding whole users gives every user the total the
  numpy backend gives it on the whole frame. A partition is held in one
  executor's memory: ``max(parallelism, ⌈n/2**20⌉)`` partitions keep it near
  ``2**20`` rows (a user's rows are never split).

Then only numbers reach the driver: ``unit_total_sum`` aggregates the per-user
frame (an exact ``long`` sum when ``users·max(|L|, |U|) < 2**63``, else
``decimal(38,0)``) into one row; ``unit_totals`` collects one ``long`` per user,
in chunks of about ``2**21`` users (buckets of ``pmod(xxhash64(u), P)``, one job
each, the per-user frame persisted in between), so no single job's result
approaches ``spark.driver.maxResultSize`` (64 MiB in the tests of the size
limit; its default is 1 GiB). The driver holds one ``int64`` per user at most.

Id types the executors do not group (a collated string in a source built on it
directly: a user's frame is re-read in the binary collation first;
:func:`~dpalg.data._spark_units.unit_key_kind`: ``DecimalType`` and ``NullType`` ids
are grouped) and value columns they do not read as numbers are answered by
the numpy backend on the collected columns (``None`` here), as the other
per-unit questions are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, final

import numpy as np
import numpy.typing as npt

from dpalg.data._spark_collect import arrow_table
from dpalg.data._spark_types import arrow_to_numpy, quoted
from dpalg.data._spark_units import exact_total, unit_key
from dpalg.data._unit_totals import (
    ROW_LATTICE_LIMIT, KeptRowCellSpec, KeptRowSumSpec, UnitTotals, UnitTotalSpec, numpy_kept_row_cells, numpy_kept_row_sum, numpy_unit_totals, row_lattice_terms,
)  # fmt: skip

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
else:
    from dpalg.data._spark_types import F  # the lazy proxy: pyspark is imported on first use

__all__ = ["arrow_partition", "kept_row_sum", "per_unit_totals", "total_sum", "totals_collected", "user_partitions"]

_LONG_SUM_LIMIT: Final = 1 << 63
_ROWS_PER_PARTITION: Final = 1 << 20
_USERS_PER_JOB: Final = 1 << 21


def _sql_term(x: Column, spec: UnitTotalSpec) -> tuple[Column, int]:
    """A sum's lattice term per row (null for a missing value) and the public bound of ``|term|``."""
    if spec.k <= -1000:  # row_lattice_terms: every term is 0
        return F.when(x.isNotNull(), F.lit(0).cast("long")), 1
    clip = spec.row_clip()
    v = x
    if clip is not None:
        for lo, hi in ((clip[0], clip[1]), (clip[2], clip[3])):
            v = F.least(F.greatest(v, F.lit(lo)), F.lit(hi))
    limit = float(ROW_LATTICE_LIMIT) * 2.0**spec.k
    scaled = F.least(F.greatest(v, F.lit(-limit)), F.lit(limit)) * F.lit(math.ldexp(1.0, -spec.k))
    term = F.when(x.isNotNull(), F.rint(scaled).cast("long"))
    if clip is None:
        return term, ROW_LATTICE_LIMIT
    ends = row_lattice_terms(np.array([clip[2], clip[3]], dtype=np.float64), spec.k)
    return term, max(1, int(np.max(np.abs(ends))))


def per_unit_totals(frame: Any, key_kind: str, x: Column | None, spec: UnitTotalSpec, n_rows: int, secret: bytes) -> Any:
    """The per-user frame: one row per user, column ``u`` (the unit key) and ``v`` (the clamped total, ``long``).

    Args:
        frame: the DataFrame (persisted by the source).
        key_kind: the id column's kind (:func:`~dpalg.data._spark_units.unit_key_kind`, not ``None``).
        x: the values as double, missing as null (``None`` for a count of rows).
        spec: the question.
        n_rows: the frame's row count (public; chooses the exact sum type and the partitions).
        secret: the key of the row choice (read only on the Arrow path).
    """
    key = unit_key(spec.unit, key_kind)
    lower, upper = F.lit(spec.lower).cast("long"), F.lit(spec.upper).cast("long")
    if spec.kind == "count" or spec.max_rows is None:
        if spec.kind == "count":
            total = F.count(F.lit(1)) if x is None else F.count(x)
            if spec.max_rows is not None:
                total = F.least(total, F.lit(spec.max_rows).cast("long"))
        else:
            assert x is not None
            term, bound = _sql_term(x, spec)
            total = exact_total(term, bound, n_rows)
        clamped = F.least(F.greatest(total, lower), upper).cast("long")
        return frame.groupBy(key.alias("u")).agg(clamped.alias("v")).where(F.col("u").isNotNull())
    assert spec.column is not None and x is not None
    selected = _user_rows(frame, key_kind, spec.unit, x, spec.column)
    parts = user_partitions(frame, n_rows)
    chooser = _CappedTotals(selected.schema["i"].dataType, selected.schema["c"].dataType, spec, secret)
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("u", selected.schema["u"].dataType, True), StructField("v", LongType(), False)])
    return selected.repartition(parts, "u").mapInArrow(chooser, schema)


def _user_rows(frame: Any, key_kind: str, unit: str, x: Column, column: str) -> Any:
    """The rows with a present id: ``u`` (the unit key), ``i`` (the id as it is), ``x`` (the values, missing as null),
    ``c`` (the value column as it is, the content the row choice hashes)."""
    key = unit_key(unit, key_kind)
    selected = frame.select(key.alias("u"), F.col(quoted(unit)).alias("i"), x.alias("x"), F.col(quoted(column)).alias("c"))
    return selected.where(F.col("u").isNotNull())


def kept_row_sum(frame: Any, key_kind: str, x: Column, spec: KeptRowSumSpec, n_rows: int, secret: bytes) -> tuple[int, int]:
    """The exact fixed-point sum of the rows the users keep, and their number (:func:`~dpalg.data._unit_totals.numpy_kept_row_sum`).

    The rows are ``repartition``-ed by the unit key (whole users per partition,
    as for a capped total) and each partition runs the numpy backend's own
    :func:`~dpalg.data._unit_totals.numpy_kept_row_sum`: a user's kept rows are a
    function of the secret and that user's rows only, each kept row's term of that
    row only, and the partition's sum is an exact integer. So the exact sum of the
    partitions' sums is the numpy answer on the whole frame, bit for bit. One row per
    non-empty partition reaches the driver: the partition's sum as decimal text (a
    Python integer of any size: ``n·max(|L|, |U|)`` may exceed any fixed width) and
    its kept rows; the driver adds them as Python integers.
    """
    selected = _user_rows(frame, key_kind, spec.unit, x, spec.column)
    chooser = _KeptRowSums(selected.schema["i"].dataType, selected.schema["c"].dataType, spec, secret)
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("s", StringType(), False), StructField("n", LongType(), False)])
    rows = selected.repartition(user_partitions(frame, n_rows), "u").mapInArrow(chooser, schema).collect()  # one per partition
    return sum(int(r["s"]) for r in rows), sum(int(r["n"]) for r in rows)


def kept_row_cells(frame: Any, key_kind: str, x: Column, spec: KeptRowCellSpec, n_rows: int, secret: bytes) -> Any:
    """The indices of the rows the users keep and their counts (:func:`~dpalg.data._unit_totals.numpy_kept_row_cells`),
    as a grouped frame ``(j, n)``: one row per occupied index.

    The index is the spec's (:func:`~dpalg.data._unit_totals.kept_cell_index`): the
    grid point, the integer candidate ``rint(x − lower)`` or the candidate slot.
    The rows are ``repartition``-ed by the unit key (whole users per partition, as
    for :func:`kept_row_sum`) and each partition runs the numpy backend's own
    :func:`~dpalg.data._unit_totals.numpy_kept_row_cells`: a user's kept rows are a
    function of the secret and that user's rows only, and a kept row's index of
    that row only, so the per-index sums of the partitions' counts (a ``groupBy``
    on the executors) are the numpy counts on the whole frame. No value leaves
    the executors; the caller collects the grouped indices under the result cap.
    """
    selected = _user_rows(frame, key_kind, spec.unit, x, spec.column)
    chooser = _KeptRowCells(selected.schema["i"].dataType, selected.schema["c"].dataType, spec, secret)
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("j", LongType(), False), StructField("n", LongType(), False)])
    cells = selected.repartition(user_partitions(frame, n_rows), "u").mapInArrow(chooser, schema)
    return cells.groupBy("j").agg(F.sum("n").alias("n"))


def total_sum(per_unit: Any, spec: UnitTotalSpec, n_rows: int) -> UnitTotals:
    """``Σ_u v`` (exact) and the number of users, one aggregate (one row reaches the driver)."""
    v = F.col("v")
    if n_rows * spec.total_bound < _LONG_SUM_LIMIT:  # users <= rows: no partial sum can overflow
        summed = F.sum(v)
    else:
        summed = F.sum(v.cast("decimal(38,0)"))  # |sum| <= n·2**62 < 10**38
    row = per_unit.agg(summed.alias("s"), F.count(F.lit(1)).alias("n")).collect()[0]
    return UnitTotals(int(row["s"] or 0), int(row["n"]))


def totals_collected(per_unit: Any, n_rows: int) -> npt.NDArray[np.int64]:
    """Every ``v``, ascending: one job per chunk of about ``2**21`` users (module docstring)."""
    jobs = max(1, -(-n_rows // _USERS_PER_JOB))  # users <= rows
    if jobs == 1:
        return np.sort(_longs(per_unit.select("v")))
    cached = per_unit.persist()
    try:
        bucket = F.pmod(F.xxhash64(F.col("u")), F.lit(jobs))
        chunks = [_longs(cached.where(bucket == F.lit(j)).select("v")) for j in range(jobs)]
    finally:
        cached.unpersist()
    return np.sort(np.concatenate(chunks)) if chunks else np.zeros(0, dtype=np.int64)


def _longs(frame: Any) -> npt.NDArray[np.int64]:
    table = arrow_table(frame)
    if table is not None:
        return np.asarray(table.column(0).to_numpy(), dtype=np.int64)
    return np.array([row[0] for row in frame.collect()], dtype=np.int64)


def user_partitions(frame: Any, n_rows: int) -> int:
    """How many partitions to ``repartition`` whole users into: the parallelism, or enough to keep a partition near
    ``2**20`` rows (a partition is held in one executor's memory; a user's rows are never split)."""
    try:
        parallelism = int(frame.sparkSession.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 -- Spark Connect has no SparkContext here: the partitions follow the size
        parallelism = 1
    return max(parallelism, -(-n_rows // _ROWS_PER_PARTITION), 1)


def arrow_partition(batches: Iterator[Any]) -> Callable[[str], Any] | None:
    """On an executor (``mapInArrow``): one partition's batches read whole, as a function from a column name to one
    Arrow array (``None`` for an empty partition)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    read = list(batches)
    if not read:
        return None
    table = pa.Table.from_batches(read)

    def column(name: str) -> Any:
        chunks = table.column(name).chunks
        return pa.concat_arrays(chunks) if chunks else pa.array([], type=table.schema.field(name).type)

    return column


@final
class _CappedTotals:
    """Executors (``mapInArrow``): the users of one partition, their kept rows and clamped totals by the numpy code."""

    def __init__(self, unit_type: Any, content_type: Any, spec: UnitTotalSpec, secret: bytes) -> None:
        self.unit_type, self.content_type, self.spec, self.secret = unit_type, content_type, spec, secret

    def __repr__(self) -> str:  # never shows the secret
        return f"_CappedTotals({self.spec!r})"

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        column = arrow_partition(batches)
        if column is None:
            return
        units = column("u")
        ids, numeric, content = _partition_columns(column, self.unit_type, self.content_type)
        totals = numpy_unit_totals(ids, numeric, content, self.spec, self.secret)  # in the order of the ids
        # one key per user: the first row of each unit code (unit_index's codes follow the ids' order)
        from dpalg.data._user_units import unit_index

        n_units, codes = unit_index(ids, owner="user-level query")
        first = np.full(n_units, -1, dtype=np.int64)
        rows = np.flatnonzero(codes >= 0)
        first[codes[rows]] = rows  # any row of a user: its rows share the key
        yield pa.RecordBatch.from_arrays([units.take(pa.array(first)), pa.array(totals, type=pa.int64())], names=["u", "v"])


def _partition_columns(column: Callable[[str], Any], unit_type: Any, content_type: Any) -> tuple[Any, npt.NDArray[np.float64], Any]:
    """A partition's ids, values (NaN: missing) and content, read into numpy as the source reads a column."""
    ids = arrow_to_numpy(column("i"), unit_type)
    numeric = np.asarray(column("x").to_numpy(zero_copy_only=False), dtype=np.float64)  # null -> NaN
    return ids, numeric, arrow_to_numpy(column("c"), content_type)


@final
class _KeptRowSums:
    """Executors (``mapInArrow``): one partition's users, their kept rows, and the exact sum of those rows' terms."""

    def __init__(self, unit_type: Any, content_type: Any, spec: KeptRowSumSpec, secret: bytes) -> None:
        self.unit_type, self.content_type, self.spec, self.secret = unit_type, content_type, spec, secret

    def __repr__(self) -> str:  # never shows the secret
        return f"_KeptRowSums({self.spec!r})"

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        column = arrow_partition(batches)
        if column is None:
            return
        ids, numeric, content = _partition_columns(column, self.unit_type, self.content_type)
        total, kept = numpy_kept_row_sum(ids, numeric, content, self.spec, self.secret)
        yield pa.RecordBatch.from_arrays([pa.array([str(total)], type=pa.string()), pa.array([kept], type=pa.int64())], names=["s", "n"])


@final
class _KeptRowCells:
    """Executors (``mapInArrow``): one partition's users, their kept rows, and how many fall on each index (grid point, integer or candidate slot)."""

    def __init__(self, unit_type: Any, content_type: Any, spec: KeptRowCellSpec, secret: bytes) -> None:
        self.unit_type, self.content_type, self.spec, self.secret = unit_type, content_type, spec, secret

    def __repr__(self) -> str:  # never shows the secret
        return f"_KeptRowCells({self.spec!r})"

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        column = arrow_partition(batches)
        if column is None:
            return
        ids, numeric, content = _partition_columns(column, self.unit_type, self.content_type)
        cells, counts = numpy_kept_row_cells(ids, numeric, content, self.spec, self.secret)
        yield pa.RecordBatch.from_arrays([pa.array(cells, type=pa.int64()), pa.array(counts, type=pa.int64())], names=["j", "n"])
