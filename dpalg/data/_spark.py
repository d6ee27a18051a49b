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

import os
import shutil
import weakref
from typing import Any, Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import BackendInfo, Dataset
from dpalg.data._numeric import to_float
from dpalg.data._reductions import Reductions

__all__ = ["SparkSource", "connect_problem", "is_spark_frame", "java_problem", "spark_dataset", "spark_kind"]


class _Functions:
    """``pyspark.sql.functions``, imported on first use: the Spark modules (and their doctest collection) never need pyspark."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # introspection (doctest collection, copy, pickle) never imports pyspark
            raise AttributeError(name)
        from pyspark.sql import functions

        return getattr(functions, name)


#: ``pyspark.sql.functions`` for the Spark backend's modules (typed as the real module where they import it under TYPE_CHECKING)
F: Any = _Functions()

_INTS: Final = {"ByteType": "int8", "ShortType": "int16", "IntegerType": "int32", "LongType": "int64"}
_FLOATS: Final = {"FloatType": "float32", "DoubleType": "float64"}
_STRS: Final = ("StringType", "CharType", "VarcharType")


def is_spark_frame(data: object) -> bool:
    """A pyspark DataFrame (classic or Spark Connect), recognised by its type's module: pyspark is never imported to ask.

    Examples:
        >>> is_spark_frame({"x": [1.0]})
        False
    """
    kind = type(data)
    return kind.__module__.startswith("pyspark.sql") and kind.__name__ == "DataFrame"


def java_problem() -> str | None:
    """Why Spark cannot start a JVM here (no ``java`` on the PATH and no ``JAVA_HOME``), or ``None``."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return None
    if shutil.which("java") is not None:
        return None
    return "Spark needs Java (17 or later): no 'java' on the PATH and JAVA_HOME is not set to a JDK"


def spark_kind(dtype: Any) -> str:
    """How the backend reads a Spark type: ``float``, ``int``, ``bool``, ``null``, ``str``, ``bytes`` or ``other``.

    ``other`` types (``DecimalType``, dates, nested types, strings with a
    non-binary collation) are not computed on the executors: their column is collected to numpy and the numpy backend answers,
    so the data policy applies value by value.
    """
    name = type(dtype).__name__
    if name in _FLOATS:
        return "float"
    if name in _INTS:
        return "int"
    if name == "BooleanType":
        return "bool"
    if name == "NullType":
        return "null"
    if name in _STRS:
        # a non-binary collation (Spark 4: UTF8_LCASE, ICU) makes "a" and "A" one group-by key and one
        # distinct value on the executors, where numpy's key policy sees two: such a column is read in numpy
        return "str" if getattr(dtype, "collation", None) in (None, "UTF8_BINARY") else "other"
    if name == "BinaryType":
        return "bytes"
    return "other"


def numpy_dtype(dtype: Any) -> np.dtype[np.generic]:
    """The numpy dtype the data policy reads a Spark type as (the table of the module docstring)."""
    name = type(dtype).__name__
    if name in _FLOATS:
        return np.dtype(_FLOATS[name])
    if name in _INTS:
        return np.dtype(_INTS[name])
    if name == "BooleanType":
        return np.dtype(np.bool_)
    if name in _STRS:
        return np.dtype(np.str_)
    if name == "BinaryType":
        return np.dtype(np.bytes_)
    if name in ("DecimalType", "NullType"):
        return np.dtype(object)
    if name == "DateType":
        return np.dtype("datetime64[D]")
    if name in ("TimestampType", "TimestampNTZType"):
        return np.dtype("datetime64[us]")
    if name in ("DayTimeIntervalType", "YearMonthIntervalType", "CalendarIntervalType"):
        return np.dtype("timedelta64[us]")
    return np.dtype([(name, "V1")])  # arrays, maps, structs, variants: no role reads them; the message names the type


def quoted(name: str) -> str:
    """A column name quoted for ``F.col`` (a dot or a backtick in a name is then not syntax)."""
    return "`" + name.replace("`", "``") + "`"


@final
class SparkSource:
    """The columns of a Spark DataFrame (a :class:`~dpalg.data._dataset.ColumnSource`).

    The schema is read from ``df.schema`` (analysis only). The frame is persisted
    on first use (module docstring); the row count is asked for once and cached.
    """

    __slots__ = ("__weakref__", "_frame", "_n", "_persisted", "_release", "_schema")

    def __init__(self, frame: Any) -> None:
        self._frame = frame
        self._schema: dict[str, Any] = {str(f.name): f.dataType for f in frame.schema.fields}
        self._n: int | None = None
        self._persisted = False
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
        if release is not None:
            release()  # a finalizer runs once: the garbage collector will not unpersist again

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
        """One column collected to the driver as Python values, in the frame's row order (``None`` for null)."""
        from pyspark.sql import functions as F

        col = F.col(quoted(name))
        if as_double:
            col = col.cast("double")
        selected = self.frame.select(col.alias("v"))
        to_arrow = getattr(selected, "toArrow", None)
        if callable(to_arrow):
            try:
                table = to_arrow()
            except Exception:  # noqa: BLE001 -- no pyarrow, or a type Arrow does not carry: collect rows instead
                table = None
            if table is not None:
                return list(table.column(0).to_pylist())
        return [row[0] for row in selected.collect()]

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
        from dpalg.data._spark_reductions import SparkReductions

        return SparkReductions(dataset, self)

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
    return Dataset.from_source(SparkSource(frame))


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
