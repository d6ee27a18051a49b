"""A column's public type: what the schema check reads, and how its message names it.

The data policy is written for numpy dtypes (:mod:`dpalg.data._dataset`): a
column's *policy dtype* is the numpy dtype that holds the same kind of values.
For a numpy column it is the array's dtype. A pandas column is converted to numpy
when the dataset is built, and that conversion can hide its type: a ``string``
column (pandas 3's default for text) or a ``category`` of str becomes an
``object`` array of str, whose values the numeric policy reads as missing --
every one of them. So :func:`pandas_column_type` reads the pandas dtype itself,
before the conversion, and maps it to the policy dtype below. The mapping
depends on the dtype alone, never on a value (a nullable ``Int64`` column is
int64 whether or not it holds a missing value):

=================================================  ==========================================
pandas dtype                                       policy dtype
=================================================  ==========================================
numpy-backed (``int64``, ``float64``, ``object``   the same numpy dtype
..., ``datetime64[ns]``, ``timedelta64[ns]``)
``Int8..64``, ``UInt8..64``, ``Float32/64``,       ``int8..64``, ``uint8..64``, ``float32/64``,
``boolean``                                        ``bool``
``str`` / ``string`` (any storage)                 ``str``
``category``                                       the policy dtype of its *categories' dtype*
                                                   (the categories themselves are never read)
``datetime64[.., tz]``                             ``datetime64``
``Sparse[T]``                                      the policy dtype of ``T``
``period``, ``interval``                           a structured dtype naming the type (refused)
``ArrowDtype``: bool, ints, floats                 ``bool``, ``int*``, ``uint*``, ``float*``
``ArrowDtype``: string, large_string, string_view  ``str``
``ArrowDtype``: binary types                       ``bytes``
``ArrowDtype``: decimal, null                      ``object`` (per-value policy)
``ArrowDtype``: date, timestamp, duration          ``datetime64``, ``timedelta64``
``ArrowDtype``: dictionary                         the policy dtype of its value type
``ArrowDtype``: time, nested; other extension      a structured dtype naming the type (refused)
types
=================================================  ==========================================

The *name* of a type is how the user's library prints it, never a value and
never a category: ``str(CategoricalDtype)`` is ``"category"`` (its ``repr``
lists the categories, which may have been built from the data, so it is never
used); a ``category`` is named ``"category of <its categories' dtype>"``.

This module imports neither pandas nor pyarrow: a pandas dtype is recognised by
its type's name and module, and pyarrow's type predicates are imported only when
an ``ArrowDtype`` (which needs pyarrow) is already in hand.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal, final

import attrs
import numpy as np

__all__ = ["ColumnType", "Library", "numpy_column_type", "pandas_column_type"]

#: the library whose type a column has (names the type and the fix in a schema error)
Library = Literal["numpy", "pandas", "polars", "spark"]


@final
@attrs.frozen
class ColumnType:
    """A column's public type.

    Attributes:
        dtype: the numpy dtype the data policy reads the column as (decides every
            schema check).
        name: the type as the user's library names it (shown in messages).
        library: ``"numpy"``, ``"pandas"``, ``"polars"`` or ``"spark"``.

    Examples:
        >>> numpy_column_type(np.dtype("<U3"))
        ColumnType(dtype=dtype('<U3'), name='<U3', library='numpy')
    """

    dtype: np.dtype[np.generic]
    name: str
    library: Library

    def describe(self) -> str:
        """``"<name> (<library>)"``, e.g. ``"str (pandas)"``: for messages."""
        return f"{self.name} ({self.library})"


def numpy_column_type(dtype: np.dtype[np.generic]) -> ColumnType:
    """A numpy column's type: its own dtype."""
    return ColumnType(dtype, str(dtype), "numpy")


def _refused(name: str) -> np.dtype[np.generic]:
    """A structured dtype naming a type no role reads (every role refuses the ``V`` kind)."""
    return np.dtype([(name, "V1")])


def _is_pandas_dtype(dtype: object) -> bool:
    return type(dtype).__module__.split(".")[0] == "pandas"


def pandas_column_type(values: object) -> ColumnType | None:
    """The type of a pandas column (a Series, an Index or a pandas array), or ``None`` for anything else.

    Reads ``values.dtype`` only, never a value (the table of the module docstring).

    Examples:
        >>> import pandas as pd
        >>> [pandas_column_type(pd.Series(v, dtype=t)).describe() for v, t in ((["a"], "string"), ([1], "Int64"))]
        ['string (pandas)', 'Int64 (pandas)']
        >>> pandas_column_type(pd.Series(["secret"], dtype="category")).dtype.kind  # a category of str reads as str
        'U'
        >>> pandas_column_type(pd.Series(["secret"], dtype="category")).name
        'category of str'
        >>> pandas_column_type([1, 2]) is None
        True
    """
    if type(values).__module__.split(".")[0] != "pandas":
        return None
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, np.dtype):
        return ColumnType(dtype, str(dtype), "pandas")
    if dtype is None or not _is_pandas_dtype(dtype):
        return None
    policy, name = _pandas_dtype(dtype, depth=0)
    return ColumnType(policy, name, "pandas")


def _pandas_dtype(dtype: object, depth: int) -> tuple[np.dtype[np.generic], str]:
    """(policy dtype, name) of a pandas or numpy dtype."""
    if isinstance(dtype, np.dtype):
        return dtype, str(dtype)
    kind = type(dtype).__name__
    name = str(dtype)
    if kind == "CategoricalDtype":
        categories = getattr(dtype, "categories", None)
        inner = getattr(categories, "dtype", None)
        if inner is None or depth > 2:  # categories not yet known: values of any kind
            return np.dtype(object), "category"
        policy, inner_name = _pandas_dtype(inner, depth + 1)
        return policy, f"category of {inner_name}"
    if kind == "StringDtype":
        return np.dtype(np.str_), name
    if kind == "SparseDtype" and depth <= 2:
        policy, _ = _pandas_dtype(getattr(dtype, "subtype", None), depth + 1)
        return policy, name
    if kind == "DatetimeTZDtype":
        return np.dtype(f"datetime64[{getattr(dtype, 'unit', 'ns')}]"), name
    if kind == "ArrowDtype":
        return _arrow_dtype(getattr(dtype, "pyarrow_dtype", None), depth), name
    if kind.endswith("Dtype") and kind[:-5] in _NULLABLE:  # Int64Dtype, BooleanDtype, Float64Dtype, ...
        numpy_dtype = getattr(dtype, "numpy_dtype", None)
        if isinstance(numpy_dtype, np.dtype):
            return numpy_dtype, name
    return _refused(name), name  # period, interval and other extension types: no role reads them


_NULLABLE = frozenset({
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64", "Boolean",
})  # fmt: skip


def _arrow_dtype(arrow: Any, depth: int) -> np.dtype[np.generic]:
    """The policy dtype of a pyarrow type (pyarrow is imported already: an ArrowDtype holds one)."""
    pa: Any = importlib.import_module("pyarrow")  # untyped: read through Any
    if not isinstance(arrow, pa.DataType):
        return _refused(str(arrow))
    types = pa.types
    if types.is_dictionary(arrow) and depth <= 2:
        return _arrow_dtype(arrow.value_type, depth + 1)
    if types.is_boolean(arrow):
        return np.dtype(np.bool_)
    if types.is_integer(arrow) or types.is_floating(arrow):
        number: np.dtype[np.generic] = np.dtype(arrow.to_pandas_dtype())
        return number
    if types.is_string(arrow) or types.is_large_string(arrow) or _is(types, "is_string_view", arrow):
        return np.dtype(np.str_)
    if types.is_binary(arrow) or types.is_large_binary(arrow) or types.is_fixed_size_binary(arrow) or _is(types, "is_binary_view", arrow):
        return np.dtype(np.bytes_)
    if types.is_decimal(arrow) or types.is_null(arrow):
        return np.dtype(object)
    if types.is_date(arrow):
        return np.dtype("datetime64[D]")
    if types.is_timestamp(arrow):
        return np.dtype(f"datetime64[{arrow.unit}]")
    if types.is_duration(arrow):
        return np.dtype(f"timedelta64[{arrow.unit}]")
    return _refused(str(arrow))


def _is(types: object, predicate: str, arrow: object) -> bool:
    """``pa.types.<predicate>(arrow)`` where this pyarrow has it (the view types are recent)."""
    test = getattr(types, predicate, None)
    return bool(test(arrow)) if callable(test) else False
