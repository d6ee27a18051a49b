"""Reading a column as numbers: the numeric half of the data policy.

The policy itself is documented once, in :mod:`dpalg.data._dataset`. This module
implements it: :func:`to_float` never raises because of a *value*; it raises
only for a *dtype* that cannot hold numbers (complex, strings, dates), which is
the public schema and is checked before any charge (:func:`numeric_dtype_problem`).
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = ["as_column", "numeric_dtype_problem", "signed_inf", "to_float", "to_float_scalar"]


def _kind_of(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (str, np.str_)):
        return "str"
    if isinstance(value, (bytes, np.bytes_)):
        return "bytes"
    if isinstance(value, (numbers.Number, Decimal)):
        return "number"
    return "other"


def as_column(values: object) -> npt.NDArray[np.generic]:
    """``np.asarray(values)``, except that a Python list or tuple mixing kinds of values stays ``object``.

    numpy coerces a list across kinds: ``[1, "1"]`` becomes the strings
    ``["1", "1"]`` and ``[True, 2]`` the ints ``[1, 2]``, which would silently
    merge two keys or two users. A list that mixes bools, numbers, str and bytes
    is kept as an ``object`` column instead, so the data policy sees each value
    as it is. So is a list that numpy would turn into float64 although it holds an
    int beyond 2**53 (``[2**63, -1]``, or ints next to floats), which float64
    would round (two ids would become one). An empty list holds no value to
    infer a type from: it is ``object`` too (not numpy's float64), so the schema
    check reads it as it reads any untyped column. Arrays and DataFrame columns
    keep their dtype.

    Examples:
        >>> as_column([1, "1"]).dtype, as_column([True, 2]).dtype, as_column([1, 2.5]).dtype
        (dtype('O'), dtype('O'), dtype('float64'))
        >>> as_column([2**63, -1]).dtype, as_column([2**53 + 1, 2.0]).dtype  # ints float64 cannot hold stay exact
        (dtype('O'), dtype('O'))
        >>> as_column([]).dtype
        dtype('O')
    """
    if isinstance(values, (list, tuple)) and (len({_kind_of(v) for v in values}) > 1 or not values):
        return _objects(values)  # an empty list has no type: numpy's float64 would refuse str keys on no rows
    arr = np.asarray(values)
    if isinstance(values, (list, tuple)) and arr.dtype.kind == "f" and any(_inexact_int(v) for v in values):
        return _objects(values)  # numpy made float64 of ints beyond 2**53: 2**53 and 2**53 + 1 would be one id
    return arr


def _objects(values: list[object] | tuple[object, ...]) -> npt.NDArray[np.generic]:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return arr


def _inexact_int(value: object) -> bool:
    """A Python int that float64 cannot hold exactly (numpy casts a list of ints beyond int64 to float64)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1 << 53


def numeric_dtype_problem(dtype: np.dtype[np.generic]) -> str | None:
    """Why a column of this dtype cannot be read as numbers, or ``None`` if it can.

    Accepted: bool, signed and unsigned integers, floats, and ``object`` (whose
    values follow the per-value policy). Refused: complex (the imaginary part
    would be silently lost), strings and bytes, dates and anything else.

    Examples:
        >>> numeric_dtype_problem(np.dtype(np.int32)) is None
        True
        >>> numeric_dtype_problem(np.dtype(np.complex128))
        'has a complex dtype (complex128): must be numeric and real (the imaginary part would be lost); pass the real part or the modulus explicitly'
    """
    kind = dtype.kind
    if kind in "biufO":
        return None
    if kind == "c":
        return f"has a complex dtype ({dtype}): must be numeric and real (the imaginary part would be lost); pass the real part or the modulus explicitly"
    if kind in "US":
        return f"has a string dtype ({dtype}): must be numeric; convert the column first"
    return f"has dtype {dtype}: must be numeric"


def signed_inf(value: object) -> float:
    """``±inf`` with the sign of a real too large for a float (NaN if it cannot be compared)."""
    try:
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]  # a Real that overflowed a float
    except Exception:  # noqa: BLE001 -- a value that cannot even be compared is missing
        return math.nan


def to_float_scalar(value: object) -> float:
    """One value under the numeric policy: a float, ``±inf`` for a huge real, or NaN (missing).

    bool, int, float, :class:`~fractions.Fraction`, :class:`~decimal.Decimal` and
    numpy real scalars convert; a real too large for a float becomes ``±inf``;
    ``None``, NaN, ``pd.NA``, ``NaT`` and every value that is not a real number
    (str, bytes, complex, dates, other objects) become NaN. Never raises.

    Examples:
        >>> [to_float_scalar(v) for v in (True, 3, "3", None, 10**400, -(10**400), 2j)]
        [1.0, 3.0, nan, nan, inf, -inf, nan]
    """
    kind = type(value)
    if kind is float:
        return value  # type: ignore[return-value]
    if kind is int or kind is bool:
        try:
            return float(value)  # type: ignore[arg-type]
        except OverflowError:
            return signed_inf(value)
    if value is None or isinstance(value, (str, bytes, bytearray, complex, np.datetime64, np.timedelta64)):
        return math.nan
    if isinstance(value, np.bool_):
        return 1.0 if value else 0.0
    if isinstance(value, Decimal):
        if value.is_nan():
            return math.nan
        return float(value)  # a huge Decimal converts to ±inf without raising
    if isinstance(value, numbers.Real):  # int and float subclasses, Fraction, numpy integers and floats
        try:
            with np.errstate(all="ignore"):
                result = float(value)
        except OverflowError:
            return signed_inf(value)
        except Exception:  # noqa: BLE001 -- a Real whose conversion fails is missing, never an error
            return math.nan
        return result if isinstance(result, float) else math.nan
    return math.nan


def to_float(values: npt.ArrayLike, *, owner: str = "to_float", field: str = "values") -> npt.NDArray[np.float64]:
    """A 1-D column as float64 under the numeric policy (see :mod:`dpalg.data._dataset`).

    Missing values come back as NaN (callers drop them row by row). Numeric
    dtypes convert in one vectorised cast; an ``object`` column takes one pass
    of :func:`to_float_scalar` (the path depends on the dtype only, so the work
    per row does not reveal whether some value failed to fit).

    Raises:
        InvalidArgument: only for the dtype (public schema), never for a value.

    Examples:
        >>> from fractions import Fraction
        >>> to_float(np.array([1, "a", None, Fraction(1, 2), 10**400], dtype=object)).tolist()
        [1.0, nan, nan, 0.5, inf]
    """
    arr = as_column(values)
    if arr.ndim != 1:
        raise InvalidArgument(owner, field, f"ndim={arr.ndim}", "must be 1-D")
    problem = numeric_dtype_problem(arr.dtype)
    if problem is not None:
        raise InvalidArgument(owner, field, f"dtype={arr.dtype}", problem)
    if arr.dtype != object:
        with np.errstate(all="ignore"):  # a longdouble beyond float64 becomes ±inf
            return arr.astype(np.float64, copy=False)
    # an object column always takes the per-value pass: the path (and so the run time per
    # row) is chosen by the public dtype, never by whether some value is a str
    items: list[object] = arr.tolist()
    return np.fromiter((to_float_scalar(v) for v in items), dtype=np.float64, count=len(items))
