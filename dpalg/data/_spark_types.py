"""How the Spark backend reads Spark types, names and functions, without importing pyspark.

Below both :mod:`dpalg.data._spark` (the source) and the modules that compute on
it (:mod:`dpalg.data._spark_reductions`, :mod:`dpalg.data._spark_units`):
the lazy ``pyspark.sql.functions`` proxy :data:`F`, the type classification
(:func:`spark_kind`, :func:`numpy_dtype`, the table in :mod:`dpalg.data._spark`'s
docstring), the frame recogniser and the Java probe. pyspark is imported only
when a function of ``F`` is first used.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["F", "arrow_to_numpy", "executor_kind", "is_spark_frame", "java_problem", "numpy_dtype", "quoted", "spark_kind"]


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
    non-binary collation) are not read as numbers on the executors: a value column of such a type is collected to
    numpy and the numpy backend answers, so the data policy applies value by value. As keys and ids, a
    ``DecimalType`` (and a ``NullType``) column is grouped on the executors all the same
    (:func:`~dpalg.data._spark_units.unit_key_kind`); dates and the other types are refused as keys by the schema check.
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


def executor_kind(dtype: Any) -> str:
    """:func:`spark_kind`, with ``decimal`` for a ``DecimalType``: the executors group a decimal key or id as it is (Spark
    compares decimals exactly) and read a decimal value as the double the numpy policy reads
    (:func:`~dpalg.data._spark_reductions.decimal_double`).

    Examples:
        >>> class DecimalType: ...
        >>> executor_kind(DecimalType()), executor_kind(object())
        ('decimal', 'other')
    """
    return "decimal" if type(dtype).__name__ == "DecimalType" else spark_kind(dtype)


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


def arrow_to_numpy(array: Any, spark_type: Any) -> npt.NDArray[np.generic]:
    """An Arrow column (an executor's batch) as the numpy array :meth:`~dpalg.data._spark.SparkSource.materialise` makes of the same values."""
    kind = spark_kind(spark_type)
    dtype = numpy_dtype(spark_type)
    if kind == "float":  # Arrow turns nulls into NaN
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
    if kind in ("int", "bool") and array.null_count == 0:
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
    values = array.to_pylist()
    if kind == "bytes":
        values = [bytes(v) if isinstance(v, (bytearray, memoryview)) else v for v in values]
    out = np.empty(len(values), dtype=object)  # nullable ints stay exact Python ints, as materialise keeps them
    out[:] = values
    return out
