"""Sample-and-aggregate on Spark: labels and block outputs on the executors, the same as numpy bit for bit.

:func:`spark_block_values` is the Spark half of
:func:`~dpalg.mechanisms.sample_aggregate._backends.release_block_values`. The
driver holds the key (drawn from the noise layer before this runs); the executors
run *the numpy backend's own code* on Arrow batches (``mapInArrow``,
``applyInArrow``; pyspark imported only here, only when a Spark frame is given):

1. **the content** the function may see is selected: the column form's column
   cast to ``double`` with missing values (null, NaN) dropped; the Dataset form's
   ``reads`` columns; the unit column for user level;
2. **labels.** User level: ``PRF(key, id) mod m`` per row
   (:func:`~dpalg.mechanisms.sample_aggregate._blocks.unit_labels`; a missing id
   is in no block; a ``DecimalType`` id is read as the ``Decimal`` the numpy backend
   reads, so its label is the key policy's, and a ``NullType`` id puts every row in no block). Row level: the occurrence of each row among the rows
   identical to it is a window ``row_number() - 1`` partitioned by the content
   (floats with NaN as null and ``-0.0`` as ``0.0``: the key policy's equality);
   identical rows are interchangeable, so whatever rank Spark gives each, the
   multiset of (content, occurrence) pairs is the numpy backend's. Then
   ``PRF(key, content, occurrence) mod m``
   (:func:`~dpalg.mechanisms.sample_aggregate._blocks.content_hashes`,
   :func:`~dpalg.data._row_choice.keyed_labels`), a function of the row alone;
3. **blocks.** ``groupBy(label).applyInArrow``: each block is read into numpy as
   :class:`~dpalg.data._spark.SparkSource` reads a column (the same values and
   dtypes as the numpy backend on the collected frame), put in its canonical form
   and order, and the user function is called exactly as on numpy
   (:func:`~dpalg.mechanisms.sample_aggregate._blocks.call_block`: warnings
   silenced, an exception or a non-number is the public failure value). Only
   the m block outputs reach the driver; the aggregator and all noise stay there.

Nothing depends on the row order or the partitioning, so ``repartition`` changes
nothing. A column whose Spark type the executors do not read (``DecimalType``
content or values, dates, nested types), or a pyspark without ``applyInArrow`` (before 4.0), sends
the release to the numpy backend on the collected columns (``None`` here), which
gives the same answer. Arrow, not pandas, carries the batches: pandas would turn
a nullable integer column into floats (ids above 2**53 would merge). The user function is
pickled to the executors (cloudpickle); one that cannot be pickled is
:class:`~dpalg.Unsupported`, before any data is read. A Spark job that fails for
another reason (a block function that stops its worker with a
``BaseException``, a lost executor) raises :class:`~dpalg.BackendError` (a
``RuntimeError``) naming the exception type only, never its message, which may
hold data, and without chaining the Spark exception.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import BackendError, Unsupported
from dpalg.data import Dataset
from dpalg.data._evaluation import WITHHELD
from dpalg.data._row_choice import keyed_labels
from dpalg.data._spark import SparkSource, quoted, spark_kind
from dpalg.data._spark_types import arrow_to_numpy
from dpalg.data._spark_units import unit_key_kind
from dpalg.mechanisms.sample_aggregate._blocks import (
    BlockFunction,
    ColumnFunction,
    call_block,
    canonical_column,
    content_hashes,
    unit_labels,
)
from dpalg.mechanisms._common.user_function import describe, quiet

__all__ = ["spark_block_values"]

#: Spark types the executors read as keys (the Dataset form's columns, the unit) and as numbers (the column form)
_KEY_KINDS: Final = ("float", "int", "bool", "str", "bytes", "null")
_NUMBER_KINDS: Final = ("float", "int", "bool", "null")


def _canonical(columns: Any, types: Sequence[Any]) -> list[npt.NDArray[np.generic]]:
    """The content columns ``c0, c1, …`` of an Arrow batch or table, canonical."""
    return [canonical_column(arrow_to_numpy(columns.column(f"c{j}"), t)) for j, t in enumerate(types)]


@final
class _RowLabels:
    """Executors: ``PRF(key, content, occurrence) mod m`` per row (``mapInArrow``)."""

    def __init__(self, types: Sequence[Any], secret: bytes, m: int) -> None:
        self.types, self.secret, self.m = tuple(types), secret, m

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        for batch in batches:
            n = batch.num_rows
            hashes = content_hashes(_canonical(batch, self.types), n, self.secret)
            occurrences = np.asarray(batch.column("o").to_numpy(zero_copy_only=False), dtype=np.int64)
            labels = keyed_labels(hashes, occurrences, self.secret, self.m)
            arrays = [batch.column(f"c{j}") for j in range(len(self.types))] + [pa.array(labels, type=pa.int64())]
            yield pa.RecordBatch.from_arrays(arrays, names=[f"c{j}" for j in range(len(self.types))] + ["b"])


@final
class _UnitLabels:
    """Executors: ``PRF(key, id) mod m`` per row, -1 for a missing id (``mapInArrow``)."""

    def __init__(self, types: Sequence[Any], unit_type: Any, secret: bytes, m: int) -> None:
        self.types, self.unit_type, self.secret, self.m = tuple(types), unit_type, secret, m

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            labels = unit_labels(arrow_to_numpy(batch.column("u"), self.unit_type), self.secret, self.m)
            arrays = [batch.column(f"c{j}") for j in range(len(self.types))] + [pa.array(labels, type=pa.int64())]
            yield pa.RecordBatch.from_arrays(arrays, names=[f"c{j}" for j in range(len(self.types))] + ["b"])


@final
class _RunBlock:
    """Executors: the user function on one block, guarded as on numpy (``applyInArrow``)."""

    def __init__(self, fn: BlockFunction | ColumnFunction, names: Sequence[str], types: Sequence[Any], failure: float, column_form: bool) -> None:
        self.fn, self.names, self.types, self.failure, self.column_form = fn, tuple(names), tuple(types), failure, column_form

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa

        block = table.column("b")[0].as_py()
        columns = dict(zip(self.names, _canonical(table, self.types)))
        with quiet():
            value = call_block(self.fn, columns, int(table.num_rows), self.failure, column_form=self.column_form)
        return pa.table({"b": pa.array([block], type=pa.int64()), "v": pa.array([value], type=pa.float64())})


def _group_key(col: Any, kind: str) -> Any:
    """A content column as Spark groups it under the key policy's equality (NaN missing, ``-0.0`` is ``0.0``)."""
    from pyspark.sql import functions as F

    if kind == "float":
        return F.when(~F.isnan(col), col + F.lit(0.0))
    return col


def _picklable(fn: object, owner: str) -> None:
    """Refuse, before any data is read, a block function that cannot be shipped to the executors."""
    from pyspark import cloudpickle

    dumps: Any = cloudpickle.dumps  # untyped
    try:
        dumps(fn)
    except Exception as exc:  # noqa: BLE001 -- the function's own property, never the data's
        raise Unsupported(
            f"{owner}: block_fn={describe(fn)!r} cannot be pickled to the Spark executors ({type(exc).__name__}); "
            "define it at module level or as a closure over picklable values"
        ) from None


def spark_block_values(
    fn: BlockFunction | ColumnFunction, data: Dataset, m: int, unit: str | None, secret: bytes, failure: float,
    *, column: str | None, reads: Sequence[str], owner: str,
) -> npt.NDArray[np.float64] | None:  # fmt: skip
    """The m block outputs computed on the executors (module docstring); ``None``: the numpy path must answer.

    Args:
        fn: the block function (column form with ``column``, else Dataset form).
        data: a dataset backed by a :class:`~dpalg.data._spark.SparkSource`.
        m: the number of blocks.
        unit: ``None`` (row level) or the id column.
        secret: the release's key (:func:`~dpalg.noise.prf_secret`, drawn in the driver).
        failure: the output of an empty or failing block.
        column, reads: the form and the columns the function sees.
        owner: the node's name for messages.

    Raises:
        Unsupported: the function cannot be pickled to the executors.
        BackendError: the Spark job failed (a ``RuntimeError``; the message names the exception type only).
    """
    source = data.source
    assert isinstance(source, SparkSource)
    names = (column,) if column is not None else tuple(reads)
    for name in (*names, *((unit,) if unit is not None else ())):
        data.column_dtype(name)  # an unknown column raises the dataset's error (the schema check did, before the charge)
    kinds = [spark_kind(source.spark_dtype(name)) for name in names]
    if column is not None and kinds[0] not in _NUMBER_KINDS:
        return None
    if column is None and any(k not in _KEY_KINDS for k in kinds):
        return None
    if unit is not None and unit_key_kind(source.spark_dtype(unit)) is None:  # a decimal id's labels: its Decimal, as numpy reads it
        return None
    if not callable(getattr(source.frame.groupBy(), "applyInArrow", None)):  # pyspark < 4.0
        return None
    _picklable(fn, owner)
    failed: str | None = None
    try:
        rows = _run(fn, source, m, unit, secret, failure, column, names, kinds)
    except Exception as exc:  # noqa: BLE001 -- the message may quote data (a worker's traceback): its type only
        failed = type(exc).__name__
    if failed is not None:  # raised outside the handler: the Spark exception is neither __cause__ nor __context__
        raise BackendError(f"{owner}: the Spark job of the block function failed after the charge ({failed}; {WITHHELD}); the charge stands (never refunded)")
    out = np.full(m, failure, dtype=np.float64)  # an empty block is no group: it keeps the failure value
    for block, value in rows:
        out[int(block)] = float(value)
    return out


def _run(
    fn: BlockFunction | ColumnFunction, source: SparkSource, m: int, unit: str | None, secret: bytes, failure: float,
    column: str | None, names: Sequence[str], kinds: Sequence[str],
) -> list[tuple[int, float]]:  # fmt: skip
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    frame = source.frame
    if column is not None:
        x = F.col(quoted(column)).cast("double")
        content = [x.alias("c0")]
    else:
        content = [F.col(quoted(name)).alias(f"c{j}") for j, name in enumerate(names)]
    extra = [F.col(quoted(unit)).alias("u")] if unit is not None else []
    selected = frame.select(*content, *extra)
    if column is not None:  # missing values are dropped (the data policy), before anything else
        selected = selected.where(F.col("c0").isNotNull() & ~F.isnan(F.col("c0")))
    fields = [selected.schema[f"c{j}"] for j in range(len(names))]
    types = [f.dataType for f in fields]
    labelled_schema = StructType([*fields, StructField("b", LongType(), False)])
    if unit is None:
        group = [_group_key(F.col(f"c{j}"), "float" if column is not None else kinds[j]) for j in range(len(names))]
        window = Window.partitionBy(*group).orderBy(*(group or [F.lit(0)]))
        with_occurrence = selected.withColumn("o", F.row_number().over(window) - F.lit(1))
        labelled = with_occurrence.mapInArrow(_RowLabels(types, secret, m), labelled_schema)
    else:
        labels = _UnitLabels(types, selected.schema["u"].dataType, secret, m)
        labelled = selected.mapInArrow(labels, labelled_schema).where(F.col("b") >= 0)
    runner = _RunBlock(fn, names, types, failure, column is not None)
    # a lambda: pyspark infers the UDF's kind from type hints, and a callable object's hints make it fail
    outs = labelled.groupBy("b").applyInArrow(lambda table: runner(table), "b long, v double")
    return [(int(r[0]), float(r[1])) for r in outs.collect()]
