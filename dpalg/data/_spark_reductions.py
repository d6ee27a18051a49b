"""The Spark backend of the reductions seam: the questions of :class:`~dpalg.data.Reductions`, on the executors.

:class:`SparkReductions` answers every reduction for a ``pyspark.sql.DataFrame``
with Spark SQL expressions, and every answer is **bit-identical** to
:class:`~dpalg.data.NumpyReductions` on the same values in the same row order
(``tests/data/test_spark_backend.py``). Only small answers reach the driver.

* **Missing values.** Null and NaN are missing and are dropped *before* anything
  else: Spark orders NaN above every number and ``least``/``greatest`` treat NaN
  as the largest value, so a NaN that reached a clip would become the upper bound.
  Integer and boolean columns are cast to double (round to nearest, ties to even,
  as numpy's casts).
* **Fixed-point sums.** The numpy fast path's chain, on the executors:
  ``t = rint(least(greatest(x·2**-k, a), b))`` with the folded bounds
  ``a = max(lo_in·2**-k, L)``, ``b = min(hi_in·2**-k, U)``. Spark's ``rint`` is
  Java's ``Math.rint``, ties to even like ``np.rint`` (Spark's ``round`` is
  HALF_UP and is not used). Each term is an integer with ``|t| <= B <= 2**52``,
  cast to ``long``. When ``n_rows·B < 2**63`` no partial sum of any subset of the
  terms can overflow, so a ``long`` sum is exact in any order and partitioning;
  otherwise the terms are summed as ``decimal(38, 0)`` (a ``long`` sum would raise
  in ANSI mode on overflow, and wrap without it; ``decimal(38,0)`` holds
  ``n·2**52`` for ``n < 2**74``), which is exact too but several times slower.
  The sums and counts of one call are one ``agg`` job. Bounds off the fast path go to the numpy
  backend (the column is collected), as they go to its exact path.
* **Grid counts.** The numpy grid index, op for op, grouped by cell.
* **The order window.** Pass 1 counts the present values per bucket, the numpy
  backend's :func:`~dpalg.data._numpy_reductions._bucket_of` computed with the
  same float operations (so the same bucket, monotone in the value); pass 2
  collects the values of the buckets that hold the ranks, in the frame's row
  order, which numpy sorts, slices and clips exactly as the numpy backend does
  (so even the signs of tied zeros agree with numpy on the same row order).
* **Extremes.** ``orderBy(...).limit(k)`` both ways; sorted and clipped in numpy.
  When a zero is among them and the column holds both ``0.0`` and ``-0.0``, the
  numpy backend answers (its choice among tied zeros depends on its blocks).
* **Keys and units.** A group-by (NaN as null), the distinct values normalised by
  :func:`~dpalg.data.normalise_key` and merged when they normalise equal; a unit
  count is a ``count(DISTINCT ·)`` (``x + 0.0`` merges ``-0.0`` with ``0.0``).
* **Other types** (``DecimalType``, ``NullType`` and refused types): the column
  is collected to numpy once and :class:`~dpalg.data.NumpyReductions` answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, fraction_floor
from dpalg.data import _numpy_reductions as _numpy_backend
from dpalg.data._dataset import Dataset
from dpalg.data._keys import Key, key_order, normalise_key
from dpalg.data._numpy_reductions import MAX_COUNTED_GRID_BITS, NumpyReductions, inside_bounds
from dpalg.data._reductions import LatticeSum, OrderWindow, SumSpec
from dpalg.data._source_reductions import SourceReductions
from dpalg.data._spark import SparkSource, quoted, spark_kind

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
else:

    class _Functions:
        """``pyspark.sql.functions``, imported on first use: this module (and its doctest collection) never needs pyspark."""

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):  # introspection (doctest collection, copy, pickle) never imports pyspark
                raise AttributeError(name)
            from pyspark.sql import functions

            return getattr(functions, name)

    F = _Functions()

__all__ = ["SparkReductions"]

#: a long sum of n terms of magnitude <= B cannot overflow when n·B < 2**63 (every partial sum is then exact)
_LONG_SUM_LIMIT: Final = 1 << 63
_NATIVE_NUMERIC: Final = ("float", "int", "bool", "null")
_NATIVE_KEYS: Final = ("float", "int", "bool", "str", "bytes")


def _clip(x: Column, lo: float, hi: float) -> Column:
    """``clip(x, lo, hi)`` for a present (non-NaN) value; null stays null.

    ``least``/``greatest`` take NaN as the largest value and skip nulls (``greatest(null, lo)`` is ``lo``),
    so a missing value must never reach them.
    """
    return F.when(x.isNotNull(), F.least(F.greatest(x, F.lit(lo)), F.lit(hi)))


@final
class SparkReductions(SourceReductions[SparkSource]):
    """:class:`~dpalg.data.Reductions` over a Spark DataFrame, on the executors (module docstring)."""

    __slots__ = ()

    def _kind(self, column: str) -> str:
        self._data.column_dtype(column)  # an unknown column raises the dataset's error
        return spark_kind(self._source.spark_dtype(column))

    def _native(self, column: str) -> bool:
        """Whether ``column`` is read as numbers on the executors (raises what the numpy backend raises first)."""
        self._data.require_numeric(column)
        return self._kind(column) in _NATIVE_NUMERIC

    def _double(self, column: str) -> Column:
        return F.col(quoted(column)).cast("double")

    def _present(self, column: str) -> Column:
        """The column as double, missing (null and NaN) as null."""
        x = self._double(column)
        return F.when(~F.isnan(x), x) if self._kind(column) == "float" else x

    def _agg(self, *exprs: Column) -> Any:
        """One row of scalar aggregates: one job."""
        return self._source.frame.agg(*exprs).collect()[0]

    # -- the protocol ------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return self._data.n_rows

    def count(self, column: str) -> int:
        if not self._native(column):
            return self._numpy().count(column)
        return int(self._agg(F.count(self._present(column)))[0])

    def count_distinct(self, column: str) -> int:
        if not self._native(column):
            return self._numpy().count_distinct(column)
        return int(self._agg(F.countDistinct(self._present(column) + F.lit(0.0)))[0])  # + 0.0: -0.0 is 0.0

    def clipped_sums(self, specs: Sequence[SumSpec]) -> list[LatticeSum]:
        plans: list[_SumPlan | None] = []
        for s in specs:  # validate every spec first, in the numpy backend's order: column, then bounds
            native = self._native(s.column)
            if s.lower > s.upper:
                raise InvalidArgument("lattice_sum", "lower", s.lower, f"must be <= upper={s.upper}")
            plans.append(_SumPlan.fast(s) if native else None)
        exprs: list[Column] = []
        for i, (s, plan) in enumerate(zip(specs, plans)):
            if plan is not None:
                x = self._present(s.column)
                terms = F.rint(_clip(x * F.lit(plan.scale), plan.a, plan.b)).cast("long")
                if self.n_rows * plan.bound >= _LONG_SUM_LIMIT:  # a long sum could overflow: sum exactly in decimal
                    terms = terms.cast("decimal(38,0)")
                exprs += [F.sum(terms).alias(f"s{i}"), F.count(x).alias(f"n{i}")]
        got = self._agg(*exprs).asDict() if exprs else {}
        out: list[LatticeSum] = []
        for i, (s, plan) in enumerate(zip(specs, plans)):
            if plan is None:
                out.append(self._numpy().clipped_sums([s])[0])
            else:
                total = got[f"s{i}"]
                out.append(LatticeSum(0 if total is None else int(total), int(got[f"n{i}"]), s.k))
        return out

    def key_counts(self, column: str, keys: Sequence[Key]) -> npt.NDArray[np.int64]:
        kind = self._kind(column)
        if kind not in _NATIVE_KEYS:
            return self._numpy().key_counts(column, keys)
        wanted: dict[tuple[int, Key], int] = {}
        for i, key in enumerate(keys):  # the first listing of a key counts it (numpy's key_codes)
            norm = normalise_key(key)
            if norm is not None:
                wanted.setdefault(key_order(norm), i)
        out = np.zeros(len(keys), dtype=np.int64)
        candidates = _candidates(kind, self._source.spark_dtype(column), [k for _, k in wanted])
        if not candidates:
            return out
        k = self._key_expr(column, kind)
        rows = self._source.frame.select(k.alias("k")).where(F.col("k").isin(candidates)).groupBy("k").count().collect()
        for value, n in rows:
            norm = normalise_key(_py(value))
            if norm is not None and (index := wanted.get(key_order(norm))) is not None:
                out[index] += int(n)
        return out

    def key_histogram(self, column: str) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        kind = self._kind(column)
        if kind not in _NATIVE_KEYS:
            return self._numpy().key_histogram(column)
        rows = self._source.frame.select(self._key_expr(column, kind).alias("k")).groupBy("k").count().collect()
        merged: dict[tuple[int, Key], int] = {}
        for value, n in rows:
            norm = normalise_key(_py(value))
            if norm is not None:
                tagged = key_order(norm)
                merged[tagged] = merged.get(tagged, 0) + int(n)
        ordered = sorted(merged)
        return tuple(k for _, k in ordered), np.array([merged[t] for t in ordered], dtype=np.int64)

    def grid_counts(
        self, column: str, lower: Fraction, upper: Fraction, bits: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        native = self._native(column)
        if not 1 <= bits <= MAX_COUNTED_GRID_BITS or lower >= upper:
            raise InvalidArgument("grid_counts", "bits", bits, f"must be in [1, {MAX_COUNTED_GRID_BITS}] with lower < upper")
        if not native:
            return self._numpy().grid_counts(column, lower, upper, bits)
        size = 1 << bits
        lo_in, hi_in = inside_bounds(lower, upper)
        half_l = float(lower) * 0.5  # the numpy backend's constants, computed the same way
        scale = float(Fraction(2 * size) / (upper - lower))
        v = ((_clip(self._present(column), lo_in, hi_in) * F.lit(0.5)) - F.lit(half_l)) * F.lit(scale)
        r = F.rint(v)
        cell = F.when(~F.isnan(r), _clip(r, 0.0, float(size)).cast("long"))  # NaN (0·inf): counted nowhere
        rows = self._source.frame.select(cell.alias("j")).where(F.col("j").isNotNull()).groupBy("j").count().collect()
        pairs = sorted((int(j), int(n)) for j, n in rows)
        return np.array([j for j, _ in pairs], dtype=np.int64), np.array([n for _, n in pairs], dtype=np.int64)

    def order_window(self, column: str, lower: Fraction, upper: Fraction, first: int, last: int) -> OrderWindow:
        if not self._native(column):
            return self._numpy().order_window(column, lower, upper, first, last)
        lo_in, hi_in = inside_bounds(lower, upper)
        buckets = _numpy_backend._WINDOW_BUCKETS  # read when used: the tests shrink it, for both backends
        x = self._present(column)
        if self.n_rows <= buckets:  # the numpy backend's short path: every present value, in row order, sorted
            kept = self._collect(x)
            kept.sort()
            n = int(kept.size)
            lo, hi = min(max(first, 0), n), min(max(last, -1), n - 1)
            window = kept[lo : hi + 1].copy() if lo <= hi else np.zeros(0, dtype=np.float64)
            return OrderWindow(n, lo, np.clip(window, lo_in, hi_in, out=window))
        half_width = hi_in * 0.5 - lo_in * 0.5
        scale = buckets / half_width if half_width > 0 else 0.0
        bucket = F.floor((_clip(x, lo_in, hi_in) * F.lit(0.5) - F.lit(lo_in * 0.5)) * F.lit(scale))
        bucket = _clip(bucket.cast("double"), 0.0, float(buckets - 1)).cast("long")
        rows = self._source.frame.select(bucket.alias("b")).where(F.col("b").isNotNull()).groupBy("b").count().collect()
        counts = np.zeros(buckets, dtype=np.int64)
        for b, c in rows:
            counts[int(b)] = int(c)
        cum = np.cumsum(counts)
        n = int(cum[-1])
        lo, hi = min(max(first, 0), n), min(max(last, -1), n - 1)
        if hi < lo:
            return OrderWindow(n, lo, np.zeros(0, dtype=np.float64))
        b0 = int(np.searchsorted(cum, lo, side="right"))
        b1 = int(np.searchsorted(cum, hi, side="right"))
        below = int(cum[b0 - 1]) if b0 > 0 else 0
        chosen = self._collect(F.when(bucket.between(b0, b1), x))  # row order: numpy's chosen values
        chosen.sort()
        window = chosen[lo - below : hi - below + 1].copy()
        return OrderWindow(n, lo, np.clip(window, lo_in, hi_in, out=window))

    def extremes(self, column: str, lower: Fraction, upper: Fraction, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        native = self._native(column)
        if k < 0:
            raise InvalidArgument("extremes", "k", k, "must be >= 0")
        if not native:
            return self._numpy().extremes(column, lower, upper, k)
        lo_in, hi_in = inside_bounds(lower, upper)
        present = self._source.frame.select(self._present(column).alias("v")).where(F.col("v").isNotNull())
        n = self.count(column)
        m = min(k, n)
        if m == 0:
            empty = np.zeros(0, dtype=np.float64)
            return n, empty, empty
        small = np.array([r[0] for r in present.orderBy(F.col("v").asc()).limit(m).collect()], dtype=np.float64)
        large = np.array([r[0] for r in present.orderBy(F.col("v").desc()).limit(m).collect()], dtype=np.float64)
        if (np.any(small == 0) or np.any(large == 0)) and self._signed_zeros(column):
            return self._numpy().extremes(column, lower, upper, k)  # which tied zero numpy keeps depends on its blocks
        return n, np.clip(np.sort(small), lo_in, hi_in), np.clip(np.sort(large), lo_in, hi_in)

    def unit_count(self, unit: str) -> int:
        kind = self._kind(unit)
        if kind not in _NATIVE_KEYS:
            return self._numpy().unit_count(unit)
        key = self._key_expr(unit, kind)
        if kind == "float":
            key = key + F.lit(0.0)  # -0.0 and 0.0 are one id
        return int(self._agg(F.countDistinct(key))[0])

    # -- private -----------------------------------------------------------------------

    def _key_expr(self, column: str, kind: str) -> Column:
        """The column as keys: floats as double with NaN as null."""
        col = F.col(quoted(column))
        if kind == "float":
            x = col.cast("double")
            return F.when(~F.isnan(x), x)
        return col

    def _collect(self, expr: Column) -> npt.NDArray[np.float64]:
        """The non-null values of ``expr`` in the frame's row order, as float64 (one job)."""
        selected = self._source.frame.select(expr.alias("v")).where(F.col("v").isNotNull())
        to_arrow = getattr(selected, "toArrow", None)
        if callable(to_arrow):
            try:
                return np.asarray(to_arrow().column(0).to_numpy(), dtype=np.float64).copy()
            except Exception:  # noqa: BLE001 -- no pyarrow: collect rows
                pass
        return np.array([r[0] for r in selected.collect()], dtype=np.float64)

    def _signed_zeros(self, column: str) -> bool:
        """Whether the present values hold both ``0.0`` and ``-0.0`` (told apart by their text: Spark's ``atan2`` adds 0.0)."""
        x = self._present(column)
        zero = x == F.lit(0.0)
        negative = x.cast("string").startswith("-")
        row = self._agg(F.sum(F.when(zero & negative, 1).otherwise(0)), F.sum(F.when(zero & ~negative, 1).otherwise(0)))
        return int(row[0] or 0) > 0 and int(row[1] or 0) > 0


def _py(value: object) -> object:
    """A collected key as the Python value numpy would hold (Spark returns binary as ``bytearray``)."""
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


@final
class _SumPlan:
    """The folded clip bounds of one fixed-point sum on the numpy backend's fast path."""

    __slots__ = ("a", "b", "bound", "scale")

    def __init__(self, scale: float, a: float, b: float) -> None:
        self.scale, self.a, self.b = scale, a, b
        self.bound = max(abs(round(a)), abs(round(b)), 1)  # every term's magnitude is at most this

    @classmethod
    def fast(cls, spec: SumSpec) -> _SumPlan | None:
        """The numpy backend's fast-path test and constants, computed the same way; ``None`` off the fast path."""
        lo_in, hi_in = inside_bounds(spec.lower, spec.upper)
        step = Fraction(2) ** spec.k
        big_l, big_u = fraction_floor(spec.lower / step), fraction_ceil(spec.upper / step)
        if not (-1022 <= -spec.k <= 1023 and max(abs(big_l), abs(big_u)) <= 1 << 52):
            return None
        scale = math.ldexp(1.0, -spec.k)
        with np.errstate(over="ignore"):
            a = max(lo_in * scale, float(big_l))
            b = min(hi_in * scale, float(big_u))
        if not (math.isfinite(a) and math.isfinite(b) and a <= b):
            return None
        return cls(scale, a, b)


def _candidates(kind: str, dtype: Any, keys: Sequence[Key]) -> list[Any]:
    """The values, in the column's Spark type, a row must hold to match one of the normalised ``keys`` (a superset)."""
    out: list[Any] = []
    for key in keys:
        if kind == "bool" and type(key) is bool:
            out.append(key)
        elif kind == "str" and type(key) is str:
            out.append(key)
        elif kind == "bytes" and type(key) is bytes:
            out.append(bytearray(key))
        elif kind == "int" and type(key) is int:
            info = np.iinfo(np.dtype({"ByteType": "int8", "ShortType": "int16", "IntegerType": "int32"}.get(type(dtype).__name__, "int64")))
            if info.min <= key <= info.max:
                out.append(key)
        elif kind == "float" and type(key) in (int, float):
            try:
                value = float(key)  # rounds a large int: a superset, matched exactly afterwards
            except OverflowError:
                continue  # an int beyond every float equals no float
            out.append(value)
            if value == 0.0:
                out.append(-0.0)
    return out
