"""A Spark DataFrame as a dpalg dataset: schema from ``df.schema``, reductions on the executors.

:func:`spark_dataset` wraps a ``pyspark.sql.DataFrame`` (classic or Spark
Connect) in a :class:`~dpalg.data.Dataset` backed by a :class:`SparkSource`.
Nothing is read to build it: names and types come from ``df.schema`` (the plan
is analysed, no job runs), so the runner's schema check happens before the
charge with no row read. Mechanisms that read through the reductions seam get
:class:`~dpalg.data._spark_reductions.SparkReductions`; the others ask the
dataset for a column, which is then collected to the driver as numpy, once, and
cached by the dataset.

This module imports pyspark only inside its functions, so importing it (or
collecting its doctests) never needs pyspark; :func:`dpalg.data.as_dataset`
calls it only when it is given a Spark frame (recognised by the frame's type's
module, without importing pyspark), so ``import dpalg`` never loads pyspark.

**The schema in numpy terms** (decided by the Spark type alone, never by the rows):

=============================================  ==========================================
Spark                                          numpy (for the schema check)
=============================================  ==========================================
``BooleanType``, ``ByteType`` .. ``LongType``  ``bool``, ``int8`` .. ``int64``
``FloatType``, ``DoubleType``                  ``float32``, ``float64``
``StringType``, ``CharType``, ``VarcharType``  ``str`` (keys only: not numeric)
``BinaryType``                                 ``bytes`` (keys only)
``DecimalType``, ``NullType``                  ``object`` (per-value policy, via numpy)
``DateType``, ``Timestamp*``, intervals        ``datetime64``, ``timedelta64`` (refused)
arrays, maps, structs, others                  a structured dtype naming the type (refused)
=============================================  ==========================================

**Row order.** A column collected to the driver comes in the frame's row order.
A frame that was shuffled (``repartition``) has no fixed row order between two
jobs, so the source persists the frame on first use (``persist()``, lazy: the
first job fills the cache) and every later job, and every collected column,
reads the same rows in the same order.

**Evaluated before the charge.** A DataFrame is a plan: the user's ANSI cast or
Python UDF may fail on one value, and the first job to run it would otherwise
be a reduction after the charge (a release that raises on x and not on x'
without that row; the error text quotes the value). The runner calls
:meth:`SparkSource.evaluate` after the schema check: it persists the frame and
runs one aggregate that counts the rows and hashes every column the plan reads
(``max(xxhash64(c))``: a value the optimizer cannot drop, where a bare
``count()`` may prune the columns), so the cache is filled and the read columns
are computed once, before anything is charged; the run's reductions read the
cache. A failure there is refused without its text
(:mod:`dpalg.data._evaluation`); one after the charge (a lost executor, an
evicted cache partition recomputed through a non-deterministic function) is a
:class:`~dpalg.BackendError` naming its type only.

**Column names.** Spark resolves names case-insensitively by default
(``spark.sql.caseSensitive=false``): a frame with ``v`` and ``V`` cannot read
either (``AMBIGUOUS_REFERENCE``), and neither can one with two columns of one
name (after a join). :meth:`SparkSource.name_problem` finds such a read column
from the schema and the session's setting, and the runner refuses it before the
charge, naming the columns; a case-sensitive session reads ``v`` as ``v``.

**Lifecycle.** A run persists the input once and releases it when it ends: the
runner (``plan.run``, ``Session.run``) calls :meth:`SparkSource.close` when the
run that adapted the frame ends, whether it succeeded or raised. A
:class:`~dpalg.data.Dataset` the caller built (``as_dataset(df)``) is the
caller's: its cache lives until :meth:`SparkSource.close` or until the source is
garbage-collected. A frame the caller persisted already is never unpersisted.

**Spark Connect.** A Connect frame (``pyspark.sql.connect``) is recognised by its
type's module too and reduced on the server with the same expressions; it needs
``pyspark[connect]`` (grpcio, grpcio-status, googleapis-common-protos, zstandard)
and no Java here. ``pyspark.sql.functions`` builds Connect columns only in a
Connect client process, so a Connect frame in a process that is not one is
refused before any job (:func:`connect_problem`).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import BackendInfo, Dataset
from dpalg.data._expr import ColumnKind, derived_type
from dpalg.data._numeric import to_float
from dpalg.data._reductions import Reductions
from dpalg.data._groups import GroupKey
from dpalg.data._keys import Key
from dpalg.data._spark_collect import arrow_table, ordered_parts
from dpalg.data._spark_grouping import SparkCoding, SparkParts, spark_coding, spark_parts
from dpalg.data._spark_reductions import SparkReductions
from dpalg.data._spark_expr import spark_expr
from dpalg.data._spark_types import F, is_spark_frame, java_problem, numpy_dtype, quoted, spark_kind
from dpalg.data._transform import RowSteps

__all__ = ["F", "SparkSource", "connect_problem", "is_spark_frame", "java_problem", "numpy_dtype", "quoted", "spark_dataset", "spark_kind"]


@final
class SparkSource:
    """The columns of a Spark DataFrame (a :class:`~dpalg.data._dataset.ColumnSource`).

    The schema is read from ``df.schema`` (analysis only). The frame is persisted
    on first use (module docstring); the row count is asked for once and cached.
    """

    __slots__ = ("__weakref__", "_evaluated", "_fields", "_frame", "_n", "_persisted", "_release", "_schema")

    def __init__(self, frame: Any, *, persist: bool = True) -> None:
        """``persist=False``: a frame derived from one a run persisted already (a group's rows), read as it is."""
        self._frame = frame
        self._fields: tuple[str, ...] = tuple(str(f.name) for f in frame.schema.fields)  # duplicates kept
        self._schema: dict[str, Any] = {str(f.name): f.dataType for f in frame.schema.fields}
        self._evaluated: frozenset[str] | None = None  # the columns evaluate() computed into this run's cache
        self._n: int | None = None
        self._persisted = not persist
        self._release: weakref.finalize[[Any], SparkSource] | None = None  # set when this source persisted the frame

    @property
    def frame(self) -> Any:
        """The DataFrame, persisted on first access (every job of a run reads the same rows in the same order)."""
        if not self._persisted:
            self._persisted = True
            try:
                cached = bool(self._frame.is_cached)
            except Exception:  # noqa: BLE001 -- a frame that cannot say: persist it (persist is idempotent)
                cached = False
            if not cached:
                self._frame = self._frame.persist()
                self._release = weakref.finalize(self, _unpersist, self._frame)  # at the latest when collected
        return self._frame

    def close(self) -> None:
        """The end of a run: release the cache this source made (a frame the caller persisted is left alone).

        Idempotent and never raises. A source used again afterwards persists the frame again.
        """
        release, self._release = self._release, None
        self._persisted = False
        self._evaluated = None
        if release is not None:
            release()  # a finalizer runs once: the garbage collector will not unpersist again

    def evaluate(self, names: tuple[str, ...]) -> None:
        """Before the charge: persist the frame, and compute the row count and the columns ``names`` in one job.

        One aggregate over the persisted frame, ``count(1)`` and
        ``max(xxhash64(c))`` for each read column: every value of every read
        column is computed (a hash cannot be answered without it, and the
        optimizer cannot drop it) and the cache is filled. Raises whatever
        Spark raises (the runner refuses it before the charge, without its
        text). Runs once per run and set of columns.
        """
        if self._evaluated is not None and set(names) <= self._evaluated and self._n is not None:
            return
        touched = [F.max(F.xxhash64(F.col(quoted(name)))).alias(f"h{i}") for i, name in enumerate(names)]
        row = self.frame.agg(F.count(F.lit(1)).alias("n"), *touched).collect()[0]
        self._n = int(row["n"])
        self._evaluated = frozenset(names) | (self._evaluated or frozenset())

    def name_problem(self, name: str) -> str | None:
        """Why Spark cannot read the column ``name`` unambiguously (from the schema and the session's setting), or ``None``.

        Two columns of one name are ambiguous always; two names equal but for
        case are ambiguous under Spark's default case-insensitive resolution
        (``spark.sql.caseSensitive=false``; read once, from the frame's
        session; a session that cannot say is taken to be case-insensitive).
        """
        same = sum(1 for f in self._fields if f == name)
        if same > 1:
            return f"names {same} columns of the data: Spark cannot tell them apart; rename or drop all but one"
        twins = [f for f in self._fields if f != name and _same_ignoring_case(f, name)]
        if not twins or self._case_sensitive():
            return None
        return (
            f"and {sorted(twins)} are one column name to Spark, which resolves names case-insensitively "
            "(spark.sql.caseSensitive=false): rename one of them, or set spark.sql.caseSensitive=true"
        )

    def _case_sensitive(self) -> bool:
        try:
            setting = self._frame.sparkSession.conf.get("spark.sql.caseSensitive", "false")
        except Exception:  # noqa: BLE001 -- a session that cannot say: Spark's default (case-insensitive)
            return False
        return str(setting).strip().lower() == "true"

    @property
    def known_rows(self) -> int | None:
        """The row count, if a job has counted it already (no job runs to ask)."""
        return self._n

    def note_rows(self, n: int) -> None:
        """Record the row count a reduction's pass counted along the way (so no job asks for it again)."""
        if self._n is None:
            self._n = n

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._schema)

    def spark_dtype(self, name: str) -> Any:
        """The column's Spark type."""
        return self._schema[name]

    def dtype(self, name: str) -> np.dtype[np.generic]:
        return numpy_dtype(self._schema[name])

    def column_type(self, name: str) -> ColumnType:
        """The column's type for schema errors, as Spark prints it (``string``, ``decimal(10,2)``)."""
        dtype = self._schema[name]
        simple = getattr(dtype, "simpleString", None)
        shown = simple() if callable(simple) else type(dtype).__name__
        return ColumnType(numpy_dtype(dtype), str(shown), "spark")

    def count_rows(self) -> int:
        if self._n is None:
            self._n = int(self.frame.count())
        return self._n

    def values(self, name: str, *, as_double: bool = False) -> list[Any]:
        """One column collected to the driver as Python values, in the frame's row order (``None`` for null).

        In jobs whose results stay well under ``spark.driver.maxResultSize``
        (:mod:`dpalg.data._spark_collect`): a column larger than the cap is
        collected in several jobs, the same values in the same order.
        """
        from pyspark.sql import types as T

        col = F.col(quoted(name))
        spark_type = self._schema[name]
        if as_double:
            col, spark_type = col.cast("double"), T.DoubleType()
        frame = self.frame
        out: list[Any] = []
        for part in ordered_parts(frame, col, spark_type, n_rows=self._n):
            out.extend(_pylist(part))
        return out

    def materialise(self, name: str) -> npt.NDArray[np.generic]:
        kind = spark_kind(self._schema[name])
        values = self.values(name)
        dtype = self.dtype(name)
        if kind == "float":
            return np.array([np.nan if v is None else v for v in values], dtype=dtype)
        if kind in ("int", "bool") and all(v is not None for v in values):
            return np.array(values, dtype=dtype)
        if dtype.kind in "mM":  # dates, timestamps, intervals: the numpy type the schema names (refused by every role)
            return np.array([np.datetime64("NaT") if v is None else v for v in values], dtype=dtype)
        if kind == "bytes":
            values = [bytes(v) if isinstance(v, (bytearray, memoryview)) else v for v in values]
        out = np.empty(len(values), dtype=object)  # nullable ints stay exact Python ints (ids above 2**53 stay distinct)
        out[:] = values
        return out

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        if spark_kind(self._schema[name]) in ("float", "int", "bool", "null"):  # Spark's casts to double round to nearest, as numpy's
            values = self.values(name, as_double=True)
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        return to_float(self.materialise(name), owner="Dataset", field=name)

    def reductions(self, dataset: Dataset) -> Reductions:
        return SparkReductions(dataset, self)

    def join_with(self, other: SparkSource, left_key: str, right_key: str) -> Dataset:
        """The inner equi-join with ``other`` on the executors (:mod:`dpalg.data._tables`); nulls never match."""
        left, right = self.frame, other.frame
        joined = left.join(right, left[quoted(left_key)] == right[quoted(right_key)], "inner")
        return Dataset.from_source(SparkSource(joined))

    def transform(self, steps: RowSteps, kinds: Mapping[str, ColumnKind], kept: tuple[str, ...]) -> Dataset:
        """A query's row steps as ``filter``/``select`` on the executors (:mod:`dpalg.data._transform`); no row reaches the driver."""
        frame = self.frame
        if steps.where is not None:
            frame = frame.filter(spark_expr(steps.where, kinds, "bool"))
        columns = [F.col(quoted(k)).alias(k) for k in kept]
        columns += [spark_expr(expr, kinds, derived_type(expr, kinds)).alias(name) for name, expr in steps.derive]
        return Dataset.from_source(SparkSource(frame.select(*columns), persist=False))

    def grouping(
        self, dataset: Dataset, by: tuple[str, ...], keys: tuple[GroupKey, ...] | None, *, other: bool,
        labels: Sequence[GroupKey] | None, unit: str | None, reads: tuple[str, ...], owner: str,
    ) -> SparkCoding | None:  # fmt: skip
        """A GROUP BY's grouping on the executors (:mod:`dpalg.data._spark_grouping`), or ``None``: the numpy answers."""
        return spark_coding(
            dataset, self, lambda frame: SparkSource(frame, persist=False), by, keys,
            other=other, labels=labels, unit=unit, reads=reads, owner=owner,
        )  # fmt: skip

    def parts(self, dataset: Dataset, by: str, keys: tuple[Key, ...], *, unit: str | None) -> SparkParts | None:
        """Parallel's split by key on the executors (:func:`~dpalg.data._spark_grouping.spark_parts`), or ``None``: the numpy split."""
        return spark_parts(dataset, self, lambda frame: SparkSource(frame, persist=False), by, keys, unit=unit)

    @property
    def backend(self) -> BackendInfo:
        """``spark`` (``spark-connect`` for a Connect frame) with the pyspark, numpy and session Spark versions.

        The session's version is one call to the JVM (classic) or the server
        (Connect); a session that cannot answer is recorded without it.
        """
        extra: dict[str, str] = {}
        try:
            extra["spark"] = str(self._frame.sparkSession.version)
        except Exception:  # noqa: BLE001 -- informative only: a certificate must not fail on it
            pass
        name = "spark-connect" if ".connect." in type(self._frame).__module__ else "spark"
        return BackendInfo.installed(name, ["pyspark", "numpy"], extra)

    def __repr__(self) -> str:  # never prints values
        return "SparkSource(DataFrame)"


def _pylist(frame: Any) -> list[Any]:
    """The one column of ``frame`` collected as Python values (through Arrow when it can: no Row object per value)."""
    table = arrow_table(frame)
    if table is not None:
        return list(table.column(0).to_pylist())
    return [row[0] for row in frame.collect()]


def _same_ignoring_case(a: str, b: str) -> bool:
    """Java's ``String.equalsIgnoreCase`` (Spark's case-insensitive resolver): equal length, each character equal up to case.

    Examples:
        >>> _same_ignoring_case("v", "V"), _same_ignoring_case("Straße", "STRASSE"), _same_ignoring_case("ab", "a")
        (True, False, False)
    """
    return len(a) == len(b) and all(x == y or x.upper() == y.upper() or x.lower() == y.lower() for x, y in zip(a, b))


def _unpersist(frame: Any) -> None:
    try:
        frame.unpersist()
    except Exception:  # noqa: BLE001 -- the session may be gone already (interpreter exit)
        pass


def spark_dataset(frame: object) -> Dataset:
    """A :class:`~dpalg.data.Dataset` backed by a Spark DataFrame (nothing is read; the schema is analysed).

    Raises:
        ImportError: pyspark cannot be imported (:func:`~dpalg.data.as_dataset`
            turns it into an error naming the extra).
        Unsupported: a classic (JVM) frame, but no Java is found; a Spark Connect
            frame in a process that is not a Connect client (below).
    """
    import pyspark  # noqa: F401 -- ImportError here names the missing extra in as_dataset

    if not is_spark_frame(frame):
        raise InvalidArgument("spark_dataset", "frame", type(frame).__name__, "must be a pyspark.sql DataFrame")
    if ".connect." in type(frame).__module__:  # Spark Connect runs the JVM on the server, not here
        problem = connect_problem()
    else:
        problem = java_problem()
    if problem is not None:
        raise Unsupported(f"as_dataset: {problem}")
    return Dataset.from_source(SparkSource(binary_strings(frame)))


def binary_strings(frame: Any) -> Any:
    """The frame with every top-level string column of a non-binary collation read in Spark's binary collation.

    A collation changes how Spark compares and groups strings, not the strings:
    under ``UTF8_LCASE``, ``"a"`` and ``"A"`` are one group-by key, one distinct
    value and equal in ``isin`` and in a join. The data policy compares strings by
    their code points (numpy, polars and Spark's ``UTF8_BINARY`` agree), so each
    such column is re-read as ``collate(column, 'UTF8_BINARY')`` under its own name
    (the same values, compared as bytes) before anything reads it, and every
    executor path then groups and compares it as the numpy backend does. A frame
    without such a column is returned as it is (nothing changes, nothing is
    persisted). The columns are renamed by position for the re-read and given
    their names back after it, so a frame whose names repeat is re-read too (a
    repeated name could not select one column; the schema check refuses it where a
    role reads it, but another column of the frame may be collated).
    """
    fields = list(frame.schema.fields)
    collated = [type(f.dataType).__name__ == "StringType" and getattr(f.dataType, "collation", None) not in (None, "UTF8_BINARY") for f in fields]
    if not any(collated):
        return frame
    names = [str(f.name) for f in fields]
    positions = [f"c{i}" for i in range(len(names))]  # distinct, whatever the names are
    columns = [F.collate(F.col(p), "UTF8_BINARY").alias(p) if re_read else F.col(p) for p, re_read in zip(positions, collated)]
    return frame.toDF(*positions).select(*columns).toDF(*names)


def connect_problem() -> str | None:
    """Why a Spark Connect frame cannot be reduced in this process, or ``None``.

    ``pyspark.sql.functions`` builds Connect columns only in a Connect client
    process (``pyspark.sql.utils.is_remote()``: ``SparkSession.builder.remote(...)``
    marks the process so, and so does the Connect-only ``pyspark-client``); in a
    process that runs a classic session and only holds a Connect session beside
    it, every expression would be a classic column that the Connect frame refuses.
    """
    try:
        from pyspark.sql.utils import is_remote
    except ImportError:  # a pyspark without the function: let the frame answer
        return None
    if is_remote():
        return None
    return (
        "a Spark Connect DataFrame needs a Connect client process (create the session with "
        "SparkSession.builder.remote(...), or set SPARK_CONNECT_MODE_ENABLED=1): pyspark.sql.functions "
        "builds classic columns here"
    )
