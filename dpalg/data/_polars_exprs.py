"""Polars expressions shared by the polars reductions: missing values and ties-to-even rounding.

Both :mod:`dpalg.data._polars_reductions` and :mod:`dpalg.data._polars_units`
build on these (one module below both, so neither imports the other's internals).

* :func:`nan_to_null`: NaN is not null in polars; the data policy reads both as missing.
* :func:`rint_expr`: ``np.rint`` (ties to even) as a polars expression; polars'
  ``round`` was half away from zero in the versions checked, so it is not used.
* :func:`key_expr`: a column as grouping keys, with the key policy's reading of floats.
"""

from __future__ import annotations

import functools
from typing import Final

import numpy as np
import polars as pl

from dpalg._errors import InvalidArgument

__all__ = ["MAGIC", "key_expr", "magic_rounding_ok", "nan_to_null", "rint_expr"]

#: ``fl(v + MAGIC) − MAGIC`` rounds v to an integer, ties to even, for ``|v| <= 2**51``
MAGIC: Final = 1.5 * 2.0**52
_MAGIC_LIMIT: Final = 2.0**51


def nan_to_null(x: pl.Expr) -> pl.Expr:
    """``x.fill_nan(None)``, written as one ``when`` (polars lowers ``fill_nan`` to ``is_not_nan | is_null``)."""
    return pl.when(x.is_nan()).then(None).otherwise(x)  # a null x: is_nan is null, so otherwise: null


def _rint_floor(v: pl.Expr) -> pl.Expr:
    """Ties-to-even rounding from ``floor``, for every finite v (``|v| >= 2**52`` is already an integer)."""
    f = v.floor()
    d = v - f  # exact: f and v are within 1 of each other
    odd = (f - (f * 0.5).floor() * 2.0) == 1.0  # exact for every float: f·0.5 and 2·floor(·) are exact
    up = (d > 0.5) | ((d == 0.5) & odd)
    return f + up.cast(pl.Float64)


def _rint_magic(v: pl.Expr) -> pl.Expr:
    """Ties-to-even rounding of ``|v| <= 2**51`` by the addition of ``1.5·2**52`` (module docstring)."""
    return (v + MAGIC) - MAGIC


def rint_expr(v: pl.Expr, bound: float, *, method: str | None = None) -> pl.Expr:
    """``np.rint`` as a polars expression, for values of magnitude at most ``bound`` (public).

    ``method`` forces ``"magic"`` or ``"floor"`` (tests); by default the magic
    constant is used when ``bound <= 2**51`` and :func:`magic_rounding_ok`. The
    value equals ``np.rint``'s; the sign of a zero may not (``-0.5`` gives ``0.0``),
    which no caller sees: terms become integers, grid points are offsets.

    Examples:
        >>> v = pl.Series([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996])
        >>> pl.select(rint_expr(pl.lit(v), 3.0)).to_series().to_list()
        [0.0, 2.0, 2.0, 0.0, -2.0, 2.0]
    """
    if method is None:
        method = "magic" if bound <= _MAGIC_LIMIT and magic_rounding_ok() else "floor"
    if method == "magic":
        return _rint_magic(v)
    if method == "floor":
        return _rint_floor(v)
    raise InvalidArgument("rint_expr", "method", method, "must be None, 'magic' or 'floor'")


#: ties and near-ties on which the polars rounding must equal np.rint
_ROUNDING_PROBES: Final = [
    0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994, 4503599627370495.5,
    2251799813685247.5, -2251799813685247.5, 2.0**51, -(2.0**51), 1e-300, -1e-300, 0.0, -0.0, 7.5, 1234567.5,
]  # fmt: skip


@functools.cache
def magic_rounding_ok() -> bool:
    """Whether ``(v + 1.5·2**52) − 1.5·2**52`` in this polars equals ``np.rint`` on ties (checked once).

    False would mean polars simplified the expression; the floor form is then used.
    """
    probes = [v for v in _ROUNDING_PROBES if abs(v) <= _MAGIC_LIMIT]
    got = pl.DataFrame({"v": probes}).select(_rint_magic(pl.col("v"))).to_series().to_numpy()
    return bool(np.array_equal(got, np.rint(np.array(probes)), equal_nan=True))


def key_expr(column: str, kind: str) -> pl.Expr:
    """The column as keys: floats as Float64 with NaN as null (``group_by`` merges the zeros); Categorical and Enum as String."""
    col = pl.col(column)
    if kind == "float":
        return nan_to_null(col.cast(pl.Float64))
    if kind == "str":
        return col.cast(pl.String)
    return col
