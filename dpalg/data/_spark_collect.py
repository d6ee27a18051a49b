"""A column collected to the driver in jobs whose results stay well under ``spark.driver.maxResultSize``.

Spark aborts a job whose task results add up to more than
``spark.driver.maxResultSize`` (default ``1g``; ``0`` is unlimited). A column
collected in one job would then fail *after the charge*, for a reason that
depends on the data's size. So a column is collected in one job when its
estimated result is at most a quarter of the cap (from the type and the row
count alone), and otherwise, after one small planning job, in jobs each
estimated at most ``cap / 2`` less :data:`TASK_BYTES` per partition (the
target; one job if the whole fits it):

* **the estimate** is a bound per row: :data:`ROW_BYTES` for the row framing
  (``collect()`` sends a 4-byte length and an UnsafeRow of an 8-byte null
  bitset and an 8-byte slot per field, a variable-width value padded to 8
  bytes, LZ4-compressed: 28 bytes for one fixed-width field, 36 for a grouped
  key and its count, plus at most 7 of padding; Arrow sends less) plus, for a
  string or binary column, the value's bytes (``octet_length``), plus 16 for a
  decimal;
* **the slices**: one small job counts the rows of each partition (and, for a
  variable-width column, the longest value of each partition): one row per
  partition reaches the driver. Each partition is cut into pieces of at most
  ``target / (bytes per row)`` rows (the partition's longest value bounds every
  row of it), and consecutive pieces are joined into jobs while the sum of their
  bounds stays at most the target; so no job's result can exceed the cap, and a
  value longer than the target is alone in its job (one longer than the cap
  still fails: an environment failure, :class:`~dpalg.BackendError`);
* **the row order**: a job selects the rows whose
  ``monotonically_increasing_id()`` (the partition index in the upper 31 bits,
  the row's position in its partition in the lower 33) lies in its range: a
  contiguous run of the frame's rows, in the frame's order (a filter keeps the
  order within a partition, and a collect concatenates the partitions in
  order). The frame is persisted (:class:`~dpalg.data._spark.SparkSource`), so
  every job reads the same partitions in the same order, and the concatenated
  jobs are exactly the one-shot collect.

The number of jobs depends on public quantities (the cap, the row count, the
partitioning) and, for a string or binary column, on the longest value of each
partition; the collected values are the column itself, which the mechanism
reads anyway. Where the cap cannot be read (a session that cannot say), the
default ``1g`` is assumed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from dpalg.data._spark_types import F

__all__ = ["ROW_BYTES", "SHARE", "arrow_table", "ordered_parts", "parse_bytes", "result_cap", "unordered_parts", "value_bytes"]

#: the bound on one row's share of a collected result, apart from a variable-width value's bytes
ROW_BYTES: Final = 24
#: a job's estimated rows are at most ``cap // SHARE``, less :data:`TASK_BYTES` per partition
SHARE: Final = 2
#: what a task's result holds besides the rows (its metrics), allowed for each partition of a job
TASK_BYTES: Final = 4096
_DEFAULT_CAP: Final = "1g"
_UNITS: Final = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_ID_BITS: Final = 33  # monotonically_increasing_id: partition index << 33 | row position in the partition


def parse_bytes(text: str) -> int | None:
    """A Spark size (``1g``, ``512m``, ``1024k``, ``100b``, a plain number of bytes) in bytes; ``None`` if unreadable.

    Examples:
        >>> parse_bytes("1g"), parse_bytes("512M"), parse_bytes("0"), parse_bytes("2kb"), parse_bytes("lots")
        (1073741824, 536870912, 0, 2048, None)
    """
    match = re.fullmatch(r"\s*([0-9]+)\s*([bkmgtp]?)b?\s*", text.lower())
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2)]


def result_cap(frame: Any) -> int | None:
    """The session's ``spark.driver.maxResultSize`` in bytes, or ``None`` when it is unlimited (``0``)."""
    text: object = None
    session = frame.sparkSession
    try:
        text = session.sparkContext.getConf().get("spark.driver.maxResultSize")
    except Exception:  # noqa: BLE001 -- Spark Connect has no SparkContext here: ask the session's conf
        pass
    if text is None:
        try:
            text = session.conf.get("spark.driver.maxResultSize", None)
        except Exception:  # noqa: BLE001 -- a session that cannot say: Spark's default
            text = None
    cap = parse_bytes(str(text)) if text is not None else None
    if cap is None:
        cap = parse_bytes(_DEFAULT_CAP)
    return None if cap == 0 else cap


def value_bytes(spark_type: Any) -> int | None:
    """The bytes of a value of ``spark_type`` beyond :data:`ROW_BYTES`, or ``None`` for a string or binary type (measured)."""
    name = type(spark_type).__name__
    if name in ("StringType", "CharType", "VarcharType", "BinaryType"):
        return None
    if name == "DecimalType":  # up to 16 bytes in the row's variable part
        return 16
    if name in ("ArrayType", "MapType", "StructType", "VariantType") or name.startswith("UserDefined"):
        return 64  # refused by every role (never read as a column); an estimate, not a bound
    return 0


def ordered_parts(frame: Any, value: Any, spark_type: Any, *, n_rows: int | None, present_only: bool = False) -> Iterator[Any]:
    """Frames of one column ``v`` (``value``, of ``spark_type``) whose collects, concatenated, are the column in row order.

    One frame (the whole column) when the estimated result fits a quarter of
    the cap (or the cap is unlimited); otherwise one per slice (module
    docstring). ``present_only`` drops the rows where the value is null.
    ``frame`` must read the same rows in the same partitions in every job (a
    persisted frame, or one derived from it by narrow steps).
    """
    cap = result_cap(frame)
    fixed = value_bytes(spark_type)
    whole = frame.select(value.alias("v"))
    if present_only:
        whole = whole.where(F.col("v").isNotNull())
    if cap is None or (fixed is not None and n_rows is not None and n_rows * (ROW_BYTES + fixed) <= cap // (2 * SHARE)):  # no planning job
        yield whole
        return
    ranges = _slices(frame, None if fixed is not None else F.octet_length(value), 8 if fixed is None else fixed, cap // SHARE)  # 8: padding
    if ranges is None:
        yield whole
        return
    numbered = frame.select(F.monotonically_increasing_id().alias("i"), value.alias("v"))
    for lo, hi in ranges:
        part = numbered.where((F.col("i") >= F.lit(lo)) & (F.col("i") < F.lit(hi))).select("v")
        yield part.where(F.col("v").isNotNull()) if present_only else part


def unordered_parts(frame: Any, *, variable_key: bool, most: int | None = None) -> Iterator[Any]:
    """Frames whose collects, together, are the rows of ``frame`` (a grouped result, a column of distinct keys, one
    number per user), in some order.

    A row is bounded by :data:`ROW_BYTES`, an 8-byte slot per column, 16 more
    bytes per decimal, and the bytes of each string or binary value (measured per
    partition, as in :func:`ordered_parts`, plus 8 of padding); the types are read
    from the frame's schema. ``variable_key`` is kept for the callers that say a
    key is a string or binary (the schema decides).
    ``most``: a bound on the number of rows known without a job (public keys, a
    grid's cells, the row count); when it fits a quarter of the cap, the frame
    is collected in one job without a planning job.
    When the rows may exceed a quarter of the cap, ``frame`` is persisted (a
    grouped frame is a shuffle: its partitions are fixed only once cached) and
    cut as a column is; the cache is released when the generator finishes or is closed.
    """
    cap = result_cap(frame)
    fields = frame.schema.fields
    variable = [f.name for f in fields if value_bytes(f.dataType) is None]
    # every column's 8-byte slot and a decimal's 16 further bytes; a string or binary value's bytes are measured (+ 8 padding)
    fixed = sum(8 + (value_bytes(f.dataType) or 0) for f in fields) + 8 * len(variable)
    if cap is None or (not variable_key and not variable and most is not None and most * (ROW_BYTES + fixed) <= cap // (2 * SHARE)):
        yield frame
        return
    cached = frame.persist()
    try:
        width = None
        if variable:
            lengths = [F.coalesce(F.octet_length(F.col(f"`{c}`")), F.lit(0)) for c in variable]
            width = lengths[0]
            for more in lengths[1:]:
                width = width + more
        ranges = _slices(cached, width, fixed, cap // SHARE)
        if ranges is None:
            yield cached
            return
        numbered = cached.select(F.monotonically_increasing_id().alias("__dpalg_i"), *[F.col(f"`{c}`") for c in cached.columns])
        for lo, hi in ranges:
            yield numbered.where((F.col("__dpalg_i") >= F.lit(lo)) & (F.col("__dpalg_i") < F.lit(hi))).drop("__dpalg_i")
    finally:
        try:
            cached.unpersist()
        except Exception:  # noqa: BLE001 -- the session may be gone
            pass


def _slices(frame: Any, width: Any, fixed: int, target: int, *, extra: int = 0) -> list[tuple[int, int]] | None:
    """The id ranges ``[lo, hi)`` of the jobs (module docstring), or ``None`` when one job fits ``target`` bytes.

    A row is bounded by :data:`ROW_BYTES` + ``fixed`` + ``extra``, plus its
    variable bytes ``width`` when that is not ``None`` (then each partition's
    largest is asked for).
    """
    p = F.spark_partition_id().alias("p")
    if width is not None:
        widest = F.coalesce(F.max(F.col("w")), F.lit(0))
        rows = frame.select(p, width.alias("w")).groupBy("p").agg(F.count(F.lit(1)).alias("n"), widest.alias("w")).collect()
        stats = sorted((int(r["p"]), int(r["n"]), ROW_BYTES + fixed + extra + int(r["w"])) for r in rows)
    else:
        rows = frame.select(p).groupBy("p").agg(F.count(F.lit(1)).alias("n")).collect()
        stats = sorted((int(r["p"]), int(r["n"]), ROW_BYTES + fixed + extra) for r in rows)
    target = max(target - TASK_BYTES * len(stats), target // 4)
    if sum(n * w for _, n, w in stats) <= target:
        return None
    ranges: list[tuple[int, int]] = []
    start: int | None = None  # the id where the open job starts
    end = 0
    held = 0  # the open job's bound in bytes
    for part, n, w in stats:
        step = max(1, target // w)  # rows per piece: each piece's bound is at most target (a single row may exceed it)
        for first in range(0, n, step):
            rows_here = min(step, n - first)
            size = rows_here * w
            lo = (part << _ID_BITS) + first
            if start is not None and held + size > target:
                ranges.append((start, end))
                start, held = None, 0
            if start is None:
                start = lo
            end = lo + rows_here
            held += size
    if start is not None:
        ranges.append((start, end))
    return ranges


def arrow_table(frame: Any) -> Any:
    """The frame collected as a pyarrow Table (``toArrow``: pyspark >= 4; no Python object per row), or ``None``
    where it cannot be (an older pyspark, no pyarrow, a type Arrow does not carry): the caller then collects rows."""
    to_arrow = getattr(frame, "toArrow", None)
    if not callable(to_arrow):
        return None
    try:
        return to_arrow()
    except Exception:  # noqa: BLE001 -- no pyarrow, or a type Arrow does not carry: the caller collects rows
        return None
