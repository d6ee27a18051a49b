"""The per-unit questions of :class:`~dpalg.data.Reductions` in polars expressions.

:class:`~dpalg.data._polars_reductions.PolarsReductions` answers ``per_unit_sums``,
``per_unit_row_counts``, ``per_unit_max`` and the users' bounded totals
(``unit_total_sum``, ``unit_totals``: :mod:`dpalg.data._unit_totals`, without a row cap
or for a count under one; a sum under a row cap needs the numpy keyed row choice) with
the functions here: one
``group_by`` on the unit key, one aggregate per unit; only one number per unit
(never an id) crosses into numpy, where it is sorted (the protocol's canonical
ascending order, :mod:`dpalg.data._reductions`). No column is converted to numpy.
Every answer is bit-identical to :class:`~dpalg.data.NumpyReductions` on the same
values (``tests/data/test_per_unit_backends.py``).

* **Units.** The key of :meth:`PolarsReductions.unit_count`: a float id is read as
  Float64 with NaN as null (NaN is not null in polars); ``-0.0`` and ``0.0`` are one
  group (polars hashes floats canonically in a ``group_by``; ``x + 0.0`` would not
  help: polars returns ``-0.0`` for ``-0.0 + 0.0``); Categorical and Enum are read as String; integers (``Int64`` with
  nulls, ``UInt64`` above ``2**63``) group exactly, never through a float. The
  null group (missing ids) is dropped: those rows are nobody's. ``Decimal``,
  ``Object``, ``Int128`` ids are answered by the numpy backend (value by value,
  exactly: a ``Decimal`` id is never cast to a float, so ``2**53`` and ``2**53 + 1`` stay two units;
  where ``1``, ``1.0``, ``"1"`` and ``True`` in one ``Object`` column are
  resolved by the key policy).
* **Values.** The column as Float64, NaN kept. Aggregates skip nulls; NaN is
  made null where it would count (``is_not_nan`` for counts, a ``when`` before a
  maximum) and, in sums, becomes null in the cast of its term to ``Int64``
  (``strict=False``): polars' ``clip`` and the rounding keep NaN, and the cast
  turns it into null. A unit whose values are all missing keeps its group.
* **Lattice terms.** The chain of :func:`~dpalg.data.per_unit_sums` after the
  query's clip: ``clip(lower_bound)``, ``clip(upper_bound)`` (``np.clip`` is
  ``minimum(maximum(x, lower), upper)``), the clamp to ``±2**62·2**k``, times
  ``2**-k`` (a normal float for ``k`` in ``[-1000, 900]``: the correctly rounded
  ``ldexp``), ties-to-even rounding by :func:`~dpalg.data._polars_exprs.rint_expr`
  (the magic constant below ``2**51``, the floor form above), cast to ``Int64``
  (``|t| <= 2**62``, exact).
* **Exact totals.** polars' integer sums wrap on overflow. With ``B`` the public
  bound of :func:`~dpalg.data._user_units.unit_term_bound` and ``n`` the row
  count: an ``Int64`` sum when ``n·B < 2**63`` (no partial sum of any subset can
  overflow), else an ``Int128`` sum (``|sum| <= n·2**62 < 2**127`` for any frame
  polars can hold). The total is clamped to ``[0, 2**62]`` in polars and converted
  to float64 by :func:`~dpalg.data._user_units.lattice_totals_to_float`, the numpy
  backend's own conversion.
* **Maxima.** The clipped values, ``+inf`` clipped to the largest finite float,
  ``max`` per unit (exact), null (no present value) as ``-inf``; a zero is made
  ``+0.0`` in numpy (``+ 0.0`` in polars keeps ``-0.0``).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt
import polars as pl

from dpalg.data._polars_exprs import key_expr, nan_to_null, rint_expr
from dpalg.data._unit_spec import UnitTotals, UnitTotalSpec
from dpalg.data._unit_totals import ROW_LATTICE_LIMIT
from dpalg.data._user_units import lattice_totals_to_float, unit_term_bound

__all__ = ["UNIT_KEY_KINDS", "raw_values", "total_sum", "totals_sorted", "unit_key", "unit_max", "unit_row_counts", "unit_sums", "unit_totals"]

#: id kinds grouped in polars (others: the numpy backend)
UNIT_KEY_KINDS: Final = ("float", "int", "bool", "null", "str", "bytes")
_LONG_SUM_LIMIT: Final = 1 << 63
_TOTAL_LIMIT: Final = 1 << 62
_FMAX: Final = float(np.finfo(np.float64).max)


def unit_key(column: str, kind: str) -> pl.Expr:
    """The id column as a grouping key (:func:`~dpalg.data._polars_exprs.key_expr`: the key policy's reading)."""
    return key_expr(column, kind)


def raw_values(column: str) -> pl.Expr:
    """A numeric column as Float64, NaN kept (the numpy backend's float64 column, nulls as nulls)."""
    return pl.col(column).cast(pl.Float64)


def _clipped(x: pl.Expr, lower: float | None, upper: float | None) -> pl.Expr:
    """``np.clip(x, lower, upper)``, one bound at a time (NaN and null stay)."""
    if lower is not None:
        x = x.clip(lower_bound=lower)
    if upper is not None:
        x = x.clip(upper_bound=upper)
    return x


def _per_unit(frame: pl.LazyFrame, key: pl.Expr, value: pl.Expr) -> npt.NDArray[np.generic]:
    """One aggregate per unit (the null key, missing ids, is no unit), sorted ascending."""
    grouped = frame.group_by(key.alias("u")).agg(value.alias("v")).filter(pl.col("u").is_not_null()).select("v")
    return np.sort(grouped.collect().get_column("v").to_numpy())


def unit_sums(
    frame: pl.LazyFrame, key: pl.Expr, x: pl.Expr, lower: float | None, upper: float | None, k: int, n_rows: int
) -> npt.NDArray[np.float64]:
    """Each unit's exact lattice total, clamped to ``[0, 2**62]``, as float64, ascending (module docstring).

    Args:
        frame: the data.
        key: the unit key (:func:`unit_key`).
        x: the values as Float64, NaN kept (:func:`raw_values`).
        lower, upper: the row clip (``None``: none on that side); validated by the caller.
        k: the lattice exponent, in ``[-1000, 900]`` (validated by the caller).
        n_rows: the row count (public; chooses the exact sum type).
    """
    limit = math.ldexp(1.0, 62 + k)
    scaled = _clipped(x, lower, upper).clip(-limit, limit) * math.ldexp(1.0, -k)
    bound = unit_term_bound(lower, upper, k)
    term = rint_expr(scaled, float(bound) + 1.0).cast(pl.Int64, strict=False)  # NaN -> null; |scaled| < bound + 1
    total = term.sum() if n_rows * bound < _LONG_SUM_LIMIT else term.cast(pl.Int128).sum()
    clamped = total.clip(0, _TOTAL_LIMIT).cast(pl.Int64)
    return lattice_totals_to_float(np.asarray(_per_unit(frame, key, clamped), dtype=np.int64), k)  # monotone: ascending


def unit_row_counts(frame: pl.LazyFrame, key: pl.Expr, x: pl.Expr | None, *, floats: bool) -> npt.NDArray[np.int64]:
    """Each unit's rows (``x`` ``None``) or present values (non-null, and not NaN when ``floats``), ascending."""
    if x is None:
        counted = pl.len()
    else:
        counted = x.is_not_nan().sum() if floats else x.count()  # is_not_nan of null is null: not summed
    return np.asarray(_per_unit(frame, key, counted.cast(pl.Int64)), dtype=np.int64)


def unit_max(frame: pl.LazyFrame, key: pl.Expr, x: pl.Expr, lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
    """Each unit's largest clipped present value (``+inf`` as the largest float, ``-inf`` for none, ``+0.0``), ascending."""
    largest = _clipped(nan_to_null(x), lower, upper).clip(upper_bound=_FMAX).max().fill_null(-math.inf)
    return np.asarray(_per_unit(frame, key, largest), dtype=np.float64) + 0.0  # + 0.0: -0.0 is 0.0 (equal, so still sorted)


def _total_term(x: pl.Expr, spec: UnitTotalSpec) -> tuple[pl.Expr, int]:
    """A sum's lattice term per row (null for a missing value) and the public bound of ``|term|``.

    :func:`~dpalg.data._unit_totals.row_lattice_terms` after the row clip: the
    clip's nearest floats, then its floats from inside; the clamp to ``±2**61``
    lattice steps; times ``2**-k`` (exact: a power of two, normal for ``k`` in
    ``[-999, 900]``); ties-to-even rounding (:func:`rint_expr`); NaN becomes null in
    the cast, as a missing value is no term.
    """
    clip = spec.row_clip()
    v = x
    limit = math.ldexp(float(ROW_LATTICE_LIMIT), spec.k)
    bound = ROW_LATTICE_LIMIT
    if clip is not None:
        v = v.clip(clip[0], clip[1]).clip(clip[2], clip[3])
        largest = max(abs(clip[2]), abs(clip[3]))
        if largest < limit:  # then |x·2**-k| < 2**61: finite
            bound = max(1, math.ceil(math.ldexp(largest, -spec.k)))
    scaled = v.clip(-limit, limit) * math.ldexp(1.0, -spec.k)
    return rint_expr(scaled, float(bound) + 1.0).cast(pl.Int64, strict=False), bound


def unit_totals(frame: pl.LazyFrame, key: pl.Expr, x: pl.Expr | None, spec: UnitTotalSpec, n_rows: int, *, floats: bool) -> pl.LazyFrame:
    """One row per user: ``v``, the user's clamped total (:mod:`dpalg.data._unit_totals`), for a spec without a
    row choice (no ``max_rows``, or a count under it: each user keeps ``min(n_u, r)`` rows whichever rows are kept).

    Args:
        frame: the data (the key and the values' columns).
        key: the unit key (:func:`unit_key`); the null key (missing ids) is nobody's rows.
        x: the values as Float64, NaN kept (:func:`raw_values`); ``None`` for a count of rows.
        spec: the question; ``spec.k`` in ``[-1000, 900]`` (the caller sends others to numpy).
        n_rows: the row count (public; chooses the exact sum type).
        floats: the value column is read as floats (NaN is missing).
    """
    assert spec.k <= 900 and (spec.max_rows is None or spec.kind == "count")
    if spec.kind == "count":
        if x is None:
            total = pl.len().cast(pl.Int64)
        else:
            total = (x.is_not_nan().sum() if floats else x.count()).cast(pl.Int64)
        if spec.max_rows is not None:
            total = pl.min_horizontal(total, pl.lit(spec.max_rows, dtype=pl.Int64))
    elif spec.k <= -1000:  # row_lattice_terms: every term is 0
        total = pl.lit(0, dtype=pl.Int64)
    else:
        assert x is not None
        term, bound = _total_term(x, spec)
        total = term.sum() if n_rows * bound < _LONG_SUM_LIMIT else term.cast(pl.Int128).sum()
    clamped = total.clip(spec.lower, spec.upper).cast(pl.Int64)  # |lower|, |upper| <= 2**62
    return frame.group_by(key.alias("u")).agg(clamped.alias("v")).filter(pl.col("u").is_not_null()).select("v")


def total_sum(per_unit: pl.LazyFrame, spec: UnitTotalSpec, n_rows: int) -> UnitTotals:
    """``Σ_u v`` (exact: an ``Int64`` sum when no partial sum can overflow, else ``Int128``) and the number of users."""
    v = pl.col("v")
    summed = v.sum() if n_rows * spec.total_bound < _LONG_SUM_LIMIT else v.cast(pl.Int128).sum()
    row = per_unit.select(summed.alias("s"), pl.len().alias("n")).collect().row(0)
    return UnitTotals(int(row[0] or 0), int(row[1]))


def totals_sorted(per_unit: pl.LazyFrame) -> npt.NDArray[np.int64]:
    """Every ``v``, ascending (the protocol's canonical order)."""
    return np.sort(np.asarray(per_unit.collect().get_column("v").to_numpy(), dtype=np.int64))
