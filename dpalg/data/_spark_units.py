"""The per-unit questions of :class:`~dpalg.data.Reductions` on Spark executors.

:class:`~dpalg.data._spark_reductions.SparkReductions` answers ``per_unit_sums``,
``per_unit_row_counts`` and ``per_unit_max`` with the functions here: one
``groupBy`` on the unit key, one aggregate per unit, and only one number per unit
(never an id) reaches the driver, which sorts them (the protocol's canonical
ascending order, :mod:`dpalg.data._reductions`). Every answer is bit-identical to
:class:`~dpalg.data.NumpyReductions` on the same values, whatever the row order
or the partitioning (``tests/data/test_spark_units.py``).

* **Units.** The key of :meth:`SparkReductions.unit_count`: a float id is read as
  double, NaN as null, and ``+ 0.0`` makes ``-0.0`` the id ``0.0``; a double ``1.0``
  is the id ``1`` (one column holds one type, so ``1`` and ``"1"`` or ``True`` can
  never meet in a Spark column). A row whose id is null (or NaN) belongs to no
  unit: its group is dropped. Strings group by their bytes; a string column with a
  non-binary collation (Spark 4, e.g. ``UTF8_LCASE``, which would merge ``"a"``
  and ``"A"``) never reaches here from a user's frame (:func:`~dpalg.data._spark.binary_strings`
  re-reads it in the binary collation); a source built on such a column directly
  is answered by the numpy backend. A ``DecimalType`` id groups as it
  is, never cast to double (``2**53`` and ``2**53 + 1`` are two units; no group-by
  here casts an integer or decimal id): Spark compares decimals exactly and one
  column has one scale, so equal decimals are equal values, which the key policy
  reads as one id (:mod:`dpalg.data._spark_grouping`). A ``NullType`` id is missing
  on every row: no unit.
* **Values.** Null and NaN are missing: the value is null before anything else
  (``greatest``/``least`` skip nulls and order NaN above every number, so a missing
  value must never reach a clip), and every aggregate skips nulls, so a unit whose
  values are all missing still has its group (a total of 0, a count of 0, a
  maximum of ``-inf``).
* **Lattice terms.** The chain of :func:`~dpalg.data.per_unit_sums` after the
  query's clip: ``least(greatest(x, lower), upper)``, clamped to ``±2**62·2**k``,
  times ``2**-k`` (a normal double for ``k`` in ``[-1000, 900]``, so the product
  is the correctly rounded ``ldexp``), ``rint`` (Java's ``Math.rint``, ties to
  even like ``np.rint``), cast to ``long`` (``|t| <= 2**62``).
* **Exact totals**, with ``B`` the public bound of :func:`unit_term_bound` and
  ``n`` the frame's row count: a ``long`` sum when ``n·B < 2**63`` (no partial
  sum of any subset of the terms can overflow, so the sum is exact in any order);
  otherwise, for ``n < 2**32``, each term is split as ``t = h·2**31 + l`` with
  ``h = t >> 31`` (``|h| <= 2**31``) and ``l = t & (2**31 − 1)`` (``0 <= l < 2**31``),
  ``h`` and ``l`` are summed in ``long`` (each sum is below ``n·2**31 < 2**63``) and
  recombined once per unit in ``decimal(38,0)``; beyond that, every term is summed
  in ``decimal(38,0)`` (``|sum| <= n·2**62 < 10**38``). A ``long`` sum that
  overflows raises in ANSI mode and wraps without it, so it is never risked. The
  total is clamped to ``[0, 2**62]`` on the executor and converted to float64 in
  the driver by :func:`~dpalg.data._user_units.lattice_totals_to_float`, the
  numpy backend's own conversion.
* **Maxima.** ``least(clip(x), MAX_FLOAT)`` (``+inf`` becomes the largest finite
  float), ``max`` per unit (exact: a maximum is one of the values), ``-inf`` for a
  unit without a present value; a zero is made ``+0.0`` in the driver (``+ 0.0``),
  where the maxima are sorted.

Nothing here imports pyspark at import time (the functions proxy of
:mod:`dpalg.data._spark_reductions`), draws randomness or prints a value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from dpalg.data._keys import Key
from dpalg.data._spark_collect import arrow_table, unordered_parts
from dpalg.data._spark_types import executor_kind, quoted
from dpalg.data._user_units import lattice_totals_to_float, unit_term_bound

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
else:
    from dpalg.data._spark_types import F  # the lazy proxy: pyspark is imported on first use

__all__ = ["decimal_candidates", "exact_total", "present_values", "unit_key", "unit_key_kind", "unit_max", "unit_row_counts", "unit_sums"]

_LONG_SUM_LIMIT: Final = 1 << 63
_SPLIT_BITS: Final = 31
_SPLIT_ROWS: Final = 1 << 32  # h and l sums of fewer rows stay below 2**63
_TOTAL_LIMIT: Final = 1 << 62
_FMAX: Final = float(np.finfo(np.float64).max)
_KEY_KINDS: Final = ("float", "int", "bool", "null", "str", "bytes")


def unit_key_kind(dtype: Any) -> str | None:
    """The kind of a key or id column grouped on the executors, or ``None`` when the numpy backend answers.

    ``float``, ``int``, ``bool``, ``str`` and ``bytes`` as :func:`~dpalg.data._spark_types.spark_kind`
    reads them; ``decimal`` for a ``DecimalType`` and ``null`` for a ``NullType`` (module
    docstring: a decimal value is one key, every value of a null column is missing). ``None`` for
    strings with a non-binary collation and for every other type (dates, nested types: the
    schema check refuses them as keys and ids before anything runs).

    Examples:
        >>> class DecimalType: ...
        >>> unit_key_kind(DecimalType()), unit_key_kind(object())
        ('decimal', None)
    """
    kind = executor_kind(dtype)
    if kind == "decimal":
        return kind
    if kind not in _KEY_KINDS:
        return None
    if kind == "str" and getattr(dtype, "collation", "UTF8_BINARY") not in ("UTF8_BINARY", None):
        return None
    return kind


def decimal_candidates(dtype: Any, keys: Iterable[Key]) -> list[Decimal]:
    """The values of a ``DecimalType(p, s)`` column that are exactly these keys under the key policy.

    A number key ``q`` (int, float or ``Fraction``; never a bool) is a value of the
    column when ``q·10**s`` is an integer ``n`` with ``|n| < 10**p``: the ``Decimal`` of
    coefficient ``n`` and exponent ``-s`` (built from its digits: no context rounds it),
    which :func:`~dpalg.data.normalise_key` reads as ``q`` (``Decimal('1.00')`` is the
    key ``1``, ``Decimal('0.50')`` the key ``0.5``). A key no value of the column equals
    (a finer fraction, a larger number, ``±inf``, a str) has none.

    Examples:
        >>> from fractions import Fraction
        >>> class DecimalType:
        ...     precision, scale = 4, 2
        >>> decimal_candidates(DecimalType(), [1, 0.5, Fraction(1, 10), -3, 0.125, 100, True, "1"])
        [Decimal('1.00'), Decimal('0.50'), Decimal('0.10'), Decimal('-3.00')]
    """
    precision, scale = int(dtype.precision), int(dtype.scale)
    out: list[Decimal] = []
    for key in keys:
        if isinstance(key, bool) or not isinstance(key, (int, float, Fraction)):
            continue
        if isinstance(key, float) and not math.isfinite(key):
            continue
        scaled = Fraction(key) * Fraction(10) ** scale
        if scaled.denominator != 1 or abs(scaled.numerator) >= 10**precision:
            continue
        n = scaled.numerator
        out.append(Decimal((int(n < 0), tuple(int(d) for d in str(abs(n))), -scale)))
    return out


def unit_key(column: str, kind: str) -> Column:
    """The id column as a grouping key: floats as double, NaN as null, ``-0.0`` as ``0.0``."""
    col = F.col(quoted(column))
    if kind == "float":
        x = col.cast("double")
        return F.when(~F.isnan(x), x) + F.lit(0.0)  # null stays null
    return col


def present_values(column: str, kind: str) -> Column:
    """A numeric column as double, missing values (null and NaN) as null."""
    x = F.col(quoted(column)).cast("double")
    return F.when(~F.isnan(x), x) if kind == "float" else x


def _clipped(x: Column, lower: float | None, upper: float | None) -> Column:
    """``np.clip(x, lower, upper)`` for a present x (the caller keeps nulls null: ``greatest`` skips them)."""
    if lower is not None:
        x = F.greatest(x, F.lit(lower))
    if upper is not None:
        x = F.least(x, F.lit(upper))
    return x


def _collect(frame: Any, dtype: type[np.generic], most: int) -> npt.NDArray[Any]:
    """The one column of a frame with one row per unit, as a numpy array, in any order: in jobs under the result cap
    (:func:`~dpalg.data._spark_collect.unordered_parts`; ``most`` bounds the units: the row count)."""
    chunks: list[npt.NDArray[Any]] = []
    for part in unordered_parts(frame, variable_key=False, most=most):
        table = arrow_table(part)
        chunks.append(np.asarray(table.column(0).to_numpy(), dtype=dtype) if table is not None else np.array([row[0] for row in part.collect()], dtype=dtype))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)


def _per_unit(frame: Any, key: Column, value: Column, dtype: type[np.generic], n_rows: int) -> npt.NDArray[Any]:
    """One aggregate per unit (rows with a null key form no unit), sorted ascending."""
    grouped = frame.groupBy(key.alias("u")).agg(value.alias("v")).where(F.col("u").isNotNull()).select("v")
    return np.sort(_collect(grouped, dtype, n_rows))


def unit_sums(
    frame: Any, key: Column, x: Column, lower: float | None, upper: float | None, k: int, n_rows: int
) -> npt.NDArray[np.float64]:
    """Each unit's exact lattice total, clamped to ``[0, 2**62]``, as float64, ascending (module docstring).

    Args:
        frame: the DataFrame.
        key: the unit key (:func:`unit_key`).
        x: the values, missing as null (:func:`present_values`).
        lower, upper: the row clip (``None``: none on that side); validated by the caller.
        k: the lattice exponent, in ``[-1000, 900]`` (validated by the caller).
        n_rows: the frame's row count (public; chooses the exact sum type).
    """
    limit = math.ldexp(1.0, 62 + k)
    scaled = F.least(F.greatest(_clipped(x, lower, upper), F.lit(-limit)), F.lit(limit)) * F.lit(math.ldexp(1.0, -k))
    term = F.when(x.isNotNull(), F.rint(scaled).cast("long"))
    total = exact_total(term, unit_term_bound(lower, upper, k), n_rows)
    clamped = F.least(F.greatest(total, F.lit(0)), F.lit(_TOTAL_LIMIT)).cast("long")
    return lattice_totals_to_float(_per_unit(frame, key, clamped, np.int64, n_rows), k)  # monotone: still ascending


def exact_total(term: Column, bound: int, n_rows: int) -> Column:
    """The exact sum of a group's ``long`` terms with ``|t| <= bound`` (0 for a group without one); module docstring.

    A ``long`` sum when ``n_rows·bound < 2**63``; else the split sums recombined
    in ``decimal(38,0)`` (``n_rows < 2**32``); else a ``decimal(38,0)`` sum.
    """
    if n_rows * bound < _LONG_SUM_LIMIT:
        return F.coalesce(F.sum(term), F.lit(0))
    if n_rows < _SPLIT_ROWS:  # t = h·2**31 + l: two long sums that cannot overflow, recombined per unit
        high = F.coalesce(F.sum(F.shiftright(term, _SPLIT_BITS)), F.lit(0)).cast("decimal(38,0)")
        low = F.coalesce(F.sum(term.bitwiseAND(F.lit((1 << _SPLIT_BITS) - 1))), F.lit(0)).cast("decimal(38,0)")
        return high * F.lit(1 << _SPLIT_BITS).cast("decimal(38,0)") + low
    return F.coalesce(F.sum(term.cast("decimal(38,0)")), F.lit(0).cast("decimal(38,0)"))


def unit_row_counts(frame: Any, key: Column, x: Column | None, n_rows: int) -> npt.NDArray[np.int64]:
    """Each unit's number of rows (``x`` ``None``) or of present values (``x`` non-null), ascending."""
    counted = F.count(F.lit(1)) if x is None else F.count(x)
    return _per_unit(frame, key, counted, np.int64, n_rows)


def unit_max(frame: Any, key: Column, x: Column, lower: float | None, upper: float | None, n_rows: int) -> npt.NDArray[np.float64]:
    """Each unit's largest clipped present value (``+inf`` as the largest float, ``-inf`` for none, ``+0.0``), ascending."""
    top = F.least(_clipped(x, lower, upper), F.lit(_FMAX))
    largest = F.coalesce(F.max(F.when(x.isNotNull(), top)), F.lit(-math.inf))
    return _per_unit(frame, key, largest, np.float64, n_rows) + 0.0  # + 0.0: -0.0 is 0.0 (equal, so still sorted)
