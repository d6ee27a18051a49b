"""A user-level histogram's counts on Spark executors: :func:`~dpalg.data._unit_totals.numpy_unit_key_counts`, bit for bit.

:class:`~dpalg.data._spark_reductions.SparkReductions` answers
``unit_key_counts`` here (the histograms under ``MaxKeysPerUser`` and
``MaxRowsPerUser``). The per-user choice of kept keys and rows runs on the
executors, with the numpy backend's own code:

1. the rows with a present id and key (``u`` the unit key of
   :func:`~dpalg.data._spark_units.unit_key`, null for a missing id; a null key is
   no key; public keys: only values that can match one) are ``repartition``-ed by
   ``u``, so all rows of a user land in one partition (an explicit partition count
   is never coalesced or split by adaptive execution);
2. each partition is read into numpy exactly as
   :meth:`~dpalg.data._spark.SparkSource.materialise` reads a column
   (:func:`~dpalg.data._spark_types.arrow_to_numpy`) and given to
   :func:`~dpalg.data._unit_totals.kept_key_rows`, the numpy backend's code. A
   user's kept rows are a function of the secret and that user's rows only
   (:func:`~dpalg.data.select_keys` ranks a user's keys by ``PRF(secret, user,
   key)``, ties by key hash then by the key's code, an order of the keys alone;
   :func:`~dpalg.data.select_rows` ranks rows by ``PRF(secret, user, content,
   occurrence)``), so a partition holding whole users keeps, for every user, the
   rows the numpy backend keeps on the whole frame;
3. each partition emits one row per key it counts: the key's index among the
   public keys, or one of its values as the column holds it (private keys), with
   the count of kept rows; a ``groupBy`` on the executors adds the partitions' counts.

Only one row per key reaches the driver (in jobs under the driver's result cap:
:func:`~dpalg.data._spark_collect.unordered_parts`; the keys' order does not
matter, their counts are added), where private keys are normalised and
merged under the key policy (:func:`~dpalg.data._source_reductions.key_histogram`,
as the plain key histogram does). A partition is held in one executor's memory:
``max(parallelism, ⌈n/2**20⌉)`` partitions keep it near ``2**20`` rows (a user's
rows are never split).

A ``DecimalType`` id or key is grouped and repartitioned as it is and read into each
partition as the ``Decimal`` objects the numpy backend reads (the key policy's key,
applied per value by the numpy code); a private key's record is normalised in the
driver. A ``NullType`` id or key leaves no row. Collated strings are answered by the
numpy backend on the collected columns (the caller's fallback); dates are refused
as keys and ids by the schema check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, final

import numpy as np
import numpy.typing as npt

from dpalg.data._keys import Key
from dpalg.data._source_reductions import key_histogram
from dpalg.data._spark_collect import arrow_table, unordered_parts
from dpalg.data._spark_types import arrow_to_numpy, quoted
from dpalg.data._spark_unit_totals import arrow_partition, user_partitions
from dpalg.data._spark_units import unit_key
from dpalg.data._unit_totals import UnitKeySpec, kept_key_rows

if TYPE_CHECKING:
    from pyspark.sql import functions as F
else:
    from dpalg.data._spark_types import F  # the lazy proxy: pyspark is imported on first use

__all__ = ["kept_key_counts"]


def kept_key_counts(
    frame: Any, unit_kind: str, spec: UnitKeySpec, candidates: list[object] | None, n_rows: int, secret: bytes
) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
    """The answer of ``unit_key_counts`` (module docstring): the counting job, collected in jobs under the result cap.

    Args:
        frame: the DataFrame (persisted by the source).
        unit_kind: the id column's kind (:func:`~dpalg.data._spark_units.unit_key_kind`, not ``None``).
        spec: the question.
        candidates: for public keys, the values (in the column's type) a row must hold to match one (a superset).
        n_rows: the frame's row count (public; chooses the partitions).
        secret: the key of the choice.
    """
    key = F.col(quoted(spec.column))
    selected = frame.select(unit_key(spec.unit, unit_kind).alias("u"), F.col(quoted(spec.unit)).alias("i"), key.alias("c"))
    selected = selected.where(F.col("u").isNotNull() & F.col("c").isNotNull())
    if candidates is not None:
        if not candidates:
            return spec.keys or (), np.zeros(len(spec.keys or ()), dtype=np.int64)
        selected = selected.where(F.col("c").isin(candidates))
    from pyspark.sql.types import LongType, StructField, StructType

    listed = spec.keys is not None
    key_type = LongType() if listed else selected.schema["c"].dataType
    schema = StructType([StructField("k", key_type, True), StructField("n", LongType(), False)])
    parts = user_partitions(frame, n_rows)
    counter = _KeptKeys(selected.schema["i"].dataType, selected.schema["c"].dataType, spec, secret)
    per_part = selected.repartition(parts, "u").mapInArrow(counter, schema)
    most = len(spec.keys) if spec.keys is not None else n_rows  # public keys: one row each at most; private: keys <= rows
    pairs = _pairs(per_part.groupBy("k").agg(F.sum("n").alias("n")), most)
    if spec.keys is None:
        return key_histogram(pairs)
    counts = np.zeros(len(spec.keys), dtype=np.int64)
    for index, n in pairs:
        counts[int(index)] += n
    return spec.keys, counts


def _pairs(frame: Any, most: int) -> list[tuple[Any, int]]:
    """The rows ``(key, count)`` of the grouped frame, in any order, in jobs under the result cap
    (:func:`~dpalg.data._spark_collect.unordered_parts`; ``most`` bounds the rows; Arrow when it can)."""
    out: list[tuple[Any, int]] = []
    for part in unordered_parts(frame, variable_key=False, most=most):  # the schema says whether the key is a string
        table = arrow_table(part)
        if table is not None:
            out.extend(zip(table.column(0).to_pylist(), (int(c) for c in table.column(1).to_pylist())))
        else:
            out.extend((row[0], int(row[1])) for row in part.collect())
    return out


@final
class _KeptKeys:
    """Executors (``mapInArrow``): the users of one partition, their kept rows by the numpy code, counted per key."""

    def __init__(self, unit_type: Any, key_type: Any, spec: UnitKeySpec, secret: bytes) -> None:
        self.unit_type, self.key_type, self.spec, self.secret = unit_type, key_type, spec, secret

    def __repr__(self) -> str:  # never shows the secret
        return f"_KeptKeys({self.spec!r})"

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        column = arrow_partition(batches)
        if column is None:
            return
        raw = column("c")
        ids = arrow_to_numpy(column("i"), self.unit_type)
        content = arrow_to_numpy(raw, self.key_type)
        keys, codes, keep = kept_key_rows(ids, content, self.spec, self.secret)
        rows = np.flatnonzero(keep)
        counts = np.bincount(codes[rows], minlength=len(keys))
        present = np.flatnonzero(counts)
        if not present.size:
            return
        if self.spec.keys is not None:
            label = pa.array(present.astype(np.int64), type=pa.int64())
        else:  # one value of each counted key, as the column holds it (normalised and merged in the driver)
            first = np.zeros(len(keys), dtype=np.int64)
            first[codes[rows]] = rows
            label = raw.take(pa.array(first[present]))
        yield pa.RecordBatch.from_arrays([label, pa.array(counts[present].astype(np.int64), type=pa.int64())], names=["k", "n"])
