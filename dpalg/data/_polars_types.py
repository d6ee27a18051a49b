"""How the polars backend reads polars types: the kind a reduction computes with, the numpy dtype of the schema.

Below both :mod:`dpalg.data._polars` (the source, which reads the schema with
:func:`numpy_dtype`; the table is in its docstring) and
:mod:`dpalg.data._polars_reductions` (which computes in polars only for the kinds
:func:`polars_kind` names, and reads an ``other`` column in numpy).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import polars as pl

__all__ = ["numpy_dtype", "polars_kind"]

_FLOATS: Final = {pl.Float32: "float32", pl.Float64: "float64"}
_INTS: Final = {
    pl.Int8: "int8", pl.Int16: "int16", pl.Int32: "int32", pl.Int64: "int64",
    pl.UInt8: "uint8", pl.UInt16: "uint16", pl.UInt32: "uint32", pl.UInt64: "uint64",
}  # fmt: skip
if hasattr(pl, "Float16"):  # polars >= 2
    _FLOATS[pl.Float16] = "float16"


def polars_kind(dtype: pl.DataType) -> str:
    """How the backend reads a polars type: ``float``, ``int``, ``bool``, ``null``, ``str``, ``bytes`` or ``other``.

    ``other`` types (``Decimal``, ``Object``, ``Int128``, dates, nested types) are
    not computed in polars: their column is converted to numpy and the numpy
    backend answers, so the data policy applies value by value.

    Examples:
        >>> [polars_kind(t) for t in (pl.Float32, pl.UInt64, pl.Boolean, pl.Categorical, pl.Decimal(10, 2))]
        ['float', 'int', 'bool', 'str', 'other']
    """
    base = dtype.base_type()
    if base in _FLOATS:
        return "float"
    if base in _INTS:
        return "int"
    if base == pl.Boolean:
        return "bool"
    if base == pl.Null:
        return "null"
    if base in (pl.String, pl.Categorical, pl.Enum):
        return "str"
    if base == pl.Binary:
        return "bytes"
    return "other"


def numpy_dtype(dtype: pl.DataType) -> np.dtype[np.generic]:
    """The numpy dtype the data policy reads a polars type as (the table of the module docstring).

    Examples:
        >>> [str(numpy_dtype(t)) for t in (pl.Int64, pl.String, pl.Decimal(10, 2), pl.Date)]
        ['int64', '<U0', 'object', 'datetime64[D]']
    """
    base = dtype.base_type()
    if base in _FLOATS:
        return np.dtype(_FLOATS[base])
    if base in _INTS:
        return np.dtype(_INTS[base])
    if base == pl.Boolean:
        return np.dtype(np.bool_)
    if base in (pl.String, pl.Categorical, pl.Enum):
        return np.dtype(np.str_)
    if base == pl.Binary:
        return np.dtype(np.bytes_)
    if base in (pl.Decimal, pl.Object, pl.Null) or str(base) in ("Int128", "UInt128"):
        return np.dtype(object)
    if base == pl.Date:
        return np.dtype("datetime64[D]")
    if base in (pl.Datetime, pl.Duration):
        unit = getattr(dtype, "time_unit", None) or "us"
        return np.dtype(f"{'datetime64' if base == pl.Datetime else 'timedelta64'}[{unit}]")
    return np.dtype([(str(dtype), "V1")])  # Time, List, Array, Struct, ...: no role reads it; the message names it
