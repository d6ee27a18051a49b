"""The polars backend of the reductions seam: the questions of :class:`~dpalg.data.Reductions`, asked in polars.

:class:`PolarsReductions` answers every reduction for a polars DataFrame or
LazyFrame with polars expressions, and every answer is **bit-identical** to
:class:`~dpalg.data.NumpyReductions` on the same values (the conformance suite,
``tests/data/test_polars_backend.py``). Only small answers cross into numpy: a
count, a sum, the occupied grid points, the values of the order window's buckets,
the k extremes. How each reduction is made equal:

* **Missing values.** NaN is not null in polars: a float column is read as
  ``cast(Float64).fill_nan(None)`` where values are kept (keys, extremes), so both
  are dropped before anything else. Counts are ``len − null_count − #NaN``
  (counting ``fill_nan(None)`` costs a ``when/then`` over the column). Integer and
  boolean columns are cast to Float64 (round to nearest, ties to even, as numpy's
  casts) and hold no NaN.
* **Fixed-point sums** (:meth:`PolarsReductions.clipped_sums`). The same chain as
  the numpy fast path: ``t = rint(clip(x·2**-k, a, b))`` with the folded bounds
  ``a = max(lo_in·2**-k, L)``, ``b = min(hi_in·2**-k, U)`` (module docstring of
  :mod:`dpalg.data._numpy_reductions`). polars' ``clip`` keeps NaN, so NaN is
  replaced by ``0.0`` before the chain and its term, ``round(clip(0, a, b))``, is
  subtracted once per NaN afterwards (the numpy backend does the same with the
  lower bound); nulls stay null and are not summed. Rounding is ties-to-even by
  :func:`rint_expr` (below). The sum of the ``m = len − null_count`` terms is
  exact:

  - *Float64*, when ``m·B < 2**53`` with ``B = max(|round(a)|, |round(b)|, 1)``:
    every partial sum of any subset of the terms is an integer of magnitude at
    most ``m·B < 2**53``, so every addition is exact, in whatever order or
    grouping polars adds (pairwise, by chunk, by thread);
  - *Int128* otherwise (a second pass): each term is an integer with
    ``|t| <= B <= 2**52``, exact in Int64, and ``|sum| <= m·2**52 < 2**116`` for any
    row count a polars frame can hold (< 2**64), far inside Int128. (Int64 would
    wrap: polars' integer sum does not raise on overflow.)

  Bounds outside the fast path (``|L|`` or ``|U|`` above ``2**52``, a lattice
  exponent beyond ±1022, a scaled bound that overflows) are exotic; there the
  column is converted to numpy and the numpy backend's exact path answers.
  A square-term spec (``centre``) squares each term as ``rint((t − c)²·2**−s)``
  in Float64, exact while ``|t − c| <= 2**26`` (:class:`~dpalg.data._source_reductions.SumPlan`);
  a wider range goes to the numpy backend.
* **Rounding** (:func:`rint_expr`). ``fl(v + C) - C`` with ``C = 1.5·2**52`` is
  ``round_half_even(v)`` for ``|v| <= 2**51``: ``v + C`` lies in ``[2**52, 2**53]``,
  where floats are the integers, so the one rounding of the addition is to an
  integer, ties to even; ``C`` is even, so the parity of the result is the parity
  of the rounded ``v``; the subtraction is exact. For larger bounds ties-to-even is
  built from ``floor``: ``f = floor(v)``, ``d = v − f`` (exact), up when ``d > 1/2``
  or ``d = 1/2`` and ``f`` is odd. Both are checked against ``np.rint`` on ties and
  near-ties once per process (:func:`magic_rounding_ok`), and the floor form is
  used if polars ever folds ``(v + C) − C``. polars' own ``round`` is not used:
  only recent versions take ``mode="half_to_even"`` (older ones round half away
  from zero), and it measured about 4x slower than the two additions.
* **Grid counts.** The grid index of the numpy backend,
  ``clip(rint((clip(x)·0.5 − l/2)·scale), 0, 2**bits)``, computed op for op, then
  a count per cell. ``clip(fl(v + C), C, C + 2**bits) − C`` equals
  ``clip(rint(v), 0, 2**bits)`` for every v (the rounding is exact for
  ``|v| <= 2**51``, and ``fl(· + C)`` is monotone, so larger values land on the
  clip). NaN (a missing value, or ``0·inf``) becomes null in the cast to Int32 and
  is counted nowhere, as the numpy backend drops its sentinel cell. Grids of up to
  ``2**12`` cells are counted by a group-by; larger ones by sorting the cells and
  reading their runs (polars has no bincount, and a group-by over ~600 000
  occupied cells was 3-6x slower than the sort here).
* **The order window.** The numpy backend sorts, in row order, the values of the
  buckets ``b0..b1`` that hold the requested ranks, where a value's bucket is
  :func:`~dpalg.data._numpy_reductions._bucket_of` (monotone in the value). Here
  the same buckets are found without computing any bucket in polars: for each
  bucket t, ``theta_t``, the smallest float whose bucket is ``>= t``, is found by
  a search over the ordered floats (1023 probes a step, 7 steps) with the numpy
  bucket function itself, so ``bucket(x) < t`` exactly when ``x < theta_t``. The count of values below a
  bucket is one comparison and a sum in polars; a binary search over ``t`` (about
  16 such counts) finds ``b0``, ``b1`` and the count below ``b0``; one filter
  returns the values with ``theta_b0 <= x < theta_(b1+1)`` in row order, which is
  the numpy backend's array of chosen values, element for element. It is sorted,
  sliced and clipped by the same numpy code, so even the signs of tied zeros agree.
  A column of at most ``2**16`` rows takes the numpy backend's short path (all
  present values, in row order). A LazyFrame's column is collected into polars
  once (one column, as the numpy backend holds), since the search reads it ~17
  times.
* **Extremes.** ``bottom_k`` and ``top_k`` of the present values, sorted and
  clipped by numpy. The values are the same multiset as the numpy backend's; the
  only bit pattern that can differ among equal floats is the sign of a zero, so
  when a zero is among them and the column holds both ``0.0`` and ``-0.0`` the
  numpy backend answers (its choice among tied zeros depends on its partition).
* **Keys and units.** A group-by on the column (Categorical and Enum read as
  String, NaN as missing); the distinct values, a small answer, are normalised by
  :func:`~dpalg.data.normalise_key`, merged when they normalise equal (``0.0`` and
  ``-0.0``) and ordered by :func:`~dpalg.data.key_order`, as the numpy backend
  does. :meth:`PolarsReductions.key_counts` first filters the rows to the public
  keys' values in the column's type (a superset of the matches), then matches the
  grouped values exactly under the key policy.
* **A LazyFrame's input.** The runner evaluates it before the charge
  (:meth:`~dpalg.data._polars.PolarsSource.evaluate`: the read columns collected
  once); every question here is then asked of that DataFrame
  (:meth:`~dpalg.data._polars.PolarsSource.frame_for`), so the user's plan runs
  once per run and cannot fail after the charge.
* **Other types.** ``Decimal``, ``Object``, ``Int128`` and the types no role reads
  are not computed in polars: the column is converted to numpy (once, cached by the
  dataset) and :class:`~dpalg.data.NumpyReductions` answers, so the policy applies
  value by value and a refused type is refused with the same error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Final, Protocol, final

import numpy as np
import numpy.typing as npt
import polars as pl

from dpalg.data._dataset import ColumnSource
from dpalg.data._keys import Key
from dpalg.data import _polars_units as units
from dpalg.data._polars_types import polars_kind
from dpalg.data._polars_exprs import MAGIC, key_expr, magic_rounding_ok, nan_to_null, rint_expr
from dpalg.data._reductions import OrderWindow, SumSpec
from dpalg.data._unit_spec import UnitTotals, UnitTotalSpec
from dpalg.data._source_reductions import (
    BucketSpan, GridCells, SourceReductions, SumPlan, WindowBuckets, chosen_window, key_candidates, sorted_window, window_ranks,
)  # fmt: skip

__all__ = ["PolarsFrameSource", "PolarsReductions", "magic_rounding_ok", "rint_expr"]

_EXACT_FLOAT: Final = 1 << 53
_NATIVE_NUMERIC: Final = ("float", "int", "bool", "null")
_HASHED_GRID_BITS: Final = 12  # grids up to 2**12 cells are counted by a group-by, larger ones by a sort
_NATIVE_KEYS: Final = ("float", "int", "bool", "null", "str", "bytes")


class PolarsFrameSource(ColumnSource, Protocol):
    """What the reductions read from their source (:class:`~dpalg.data._polars.PolarsSource` is one; it builds them).

    Written here, below the source, so that the reductions name no module above
    them (dependency inversion: the source depends on this description, not the
    reverse).
    """

    def polars_dtype(self, name: str) -> pl.DataType:
        """The column's polars type (schema only)."""
        ...

    def frame_for(self, *exprs: pl.Expr) -> pl.LazyFrame:
        """The frame to compute ``exprs`` over (the collected columns when they hold every column read)."""
        ...

    @property
    def eager(self) -> pl.DataFrame | None:
        """The columns in memory, if any; else ``None``."""
        ...


@final
class PolarsReductions(SourceReductions[PolarsFrameSource]):
    """:class:`~dpalg.data.Reductions` over a polars DataFrame or LazyFrame, in polars (module docstring).

    Built by :func:`~dpalg.data.as_reductions` for a dataset that
    :func:`~dpalg.data.as_dataset` made from a polars frame.

    Examples:
        >>> from dpalg.data import as_dataset, as_reductions
        >>> r = as_reductions(as_dataset(pl.DataFrame({"x": [1.0, 2.5, None, 40.0, float("nan")]}).lazy()))
        >>> (type(r).__name__, r.n_rows, r.count("x"))
        ('PolarsReductions', 5, 3)
        >>> [(s.total, s.count) for s in r.clipped_sums([SumSpec("x", Fraction(0), Fraction(10), -1)])]
        [(27, 3)]
    """

    __slots__ = ()
    _KEY_KINDS = _NATIVE_KEYS

    def _kind(self, column: str) -> str:
        self._data.column_dtype(column)  # an unknown column raises the dataset's error
        return polars_kind(self._source.polars_dtype(column))

    def _in_polars(self, column: str) -> bool:
        """Whether ``column`` is read as numbers in polars; else the numpy backend answers.

        Raises first what the numpy backend raises first (its ``numeric(column)`` is
        evaluated before any other check): an unknown column, a type that holds no
        numbers.
        """
        self._data.require_numeric(column)
        return self._kind(column) in _NATIVE_NUMERIC

    def _present(self, column: str) -> pl.Expr:
        """The column as Float64, missing values (null and NaN) as null."""
        x = pl.col(column).cast(pl.Float64)
        return nan_to_null(x) if self._kind(column) == "float" else x

    def _raw(self, column: str) -> pl.Expr:
        """The column as Float64, NaN kept (the numpy backend's float64 column, nulls as nulls)."""
        return pl.col(column).cast(pl.Float64)

    def _row(self, *exprs: pl.Expr) -> tuple[Any, ...]:
        """One row of scalar aggregates, in one pass over the frame."""
        return self._source.frame_for(*exprs).select(*exprs).collect().row(0)

    def _counts(self, column: str, tag: str) -> list[pl.Expr]:
        """Rows, nulls and NaNs of a column (``rows{tag}``, ``null{tag}``, ``nan{tag}``): present = rows − nulls − NaNs.

        Cheaper than counting ``fill_nan(None)``, which polars computes as a
        ``when/then`` over the whole column.
        """
        x = pl.col(column)
        nan = x.is_nan().sum() if self._kind(column) == "float" else pl.lit(0)
        return [pl.len().alias(f"rows{tag}"), x.null_count().alias(f"null{tag}"), nan.alias(f"nan{tag}")]

    # -- polars' side of each question (SourceReductions asks them, checked, in the numpy backend's order) --

    def _computes(self, column: str) -> bool:
        return self._in_polars(column)

    def _count(self, column: str) -> int:
        rows, nulls, nans = self._row(*self._counts(column, ""))
        return int(rows) - int(nulls) - int(nans)

    def _count_distinct(self, column: str) -> int:
        # + 0.0 turns -0.0 into 0.0 (np.unique merges them); nulls are dropped, not counted as a value
        (n,) = self._row((self._present(column) + 0.0).drop_nulls().n_unique().alias("n"))
        return int(n)

    def _sums(self, planned: dict[int, tuple[SumSpec, SumPlan]]) -> dict[int, tuple[int, int]]:
        exprs: list[pl.Expr] = []
        for i, (s, plan) in planned.items():
            raw, stats = self._raw(s.column), self._counts(s.column, f"{i}")
            exprs += [_terms(plan, raw, floats=self._kind(s.column) == "float").sum().alias(f"s{i}"), *stats]
        got = dict(zip([e.meta.output_name() for e in exprs], self._row(*exprs)))
        wide: list[pl.Expr] = []  # sums a Float64 sum cannot hold exactly: again, in Int128
        for i, (s, plan) in planned.items():
            if (int(got[f"rows{i}"]) - int(got[f"null{i}"])) * plan.bound >= _EXACT_FLOAT:
                terms = _terms(plan, self._raw(s.column), floats=self._kind(s.column) == "float")
                wide.append(terms.cast(pl.Int64).cast(pl.Int128).sum().alias(f"s{i}"))
        if wide:
            got.update(zip([e.meta.output_name() for e in wide], self._row(*wide)))
        out: dict[int, tuple[int, int]] = {}
        for i, (_, plan) in planned.items():
            total, nan = int(got[f"s{i}"] or 0), int(got[f"nan{i}"])
            count = int(got[f"rows{i}"]) - int(got[f"null{i}"]) - nan
            out[i] = (total - nan * plan.zero_term, count)  # each NaN added the term of 0.0
        return out

    def _key_candidates(self, column: str, kind: str, keys: list[Key]) -> list[object]:
        dtype = self._source.polars_dtype(column)
        return key_candidates(kind, np.dtype(str(dtype).lower()) if kind == "int" else None, keys)

    def _key_groups(self, column: str, kind: str, candidates: list[object] | None) -> list[tuple[object, int]]:
        key = key_expr(column, kind)
        keys = self._source.frame_for(key).select(key.alias("k"))
        if candidates is not None:  # the rows that can match, first: a group-by over fewer rows
            keys = keys.filter(pl.col("k").is_in(pl.Series(candidates, dtype=_key_dtype(kind, self._source.polars_dtype(column))).implode()))
        grouped = keys.group_by("k").agg(pl.len().alias("n")).collect()
        return [(value, int(n)) for value, n in grouped.iter_rows()]

    def _grid_counts(self, column: str, grid: GridCells) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        size = grid.size
        v = ((self._raw(column).clip(grid.lo_in, grid.hi_in) * 0.5) - grid.half_l) * grid.scale
        if magic_rounding_ok():
            cell = (v + MAGIC).clip(MAGIC, MAGIC + size) - MAGIC  # = clip(rint(v), 0, size) for every v (docstring)
        else:
            cell = rint_expr(v, math.inf, method="floor").clip(0.0, float(size))
        cell = cell.cast(pl.Int32, strict=False)  # NaN (a missing value, or 0·inf) becomes null: counted nowhere
        frame = self._source.frame_for(cell)
        if size <= 1 << _HASHED_GRID_BITS:  # few cells: a hash group-by
            counted = frame.select(cell.alias("j")).group_by("j").agg(pl.len().alias("n")).drop_nulls().sort("j").collect()
        else:  # many cells: a sort and its runs beat a group-by whose table outgrows the cache
            runs = cell.sort().rle().struct.rename_fields(["n", "j"]).alias("runs")
            counted = frame.select(runs).unnest("runs").drop_nulls().collect()
        return (
            np.asarray(counted.get_column("j").to_numpy(), dtype=np.int64),
            np.asarray(counted.get_column("n").to_numpy(), dtype=np.int64),
        )

    def _order_window(self, column: str, buckets: WindowBuckets, first: int, last: int) -> OrderWindow:
        col = self._column_frame(column)  # one Float64 column "x", NaN kept, nulls kept
        x = pl.col("x")
        if col.height <= buckets.count:  # the numpy backend's short path: every present value, in row order
            return sorted_window(col.filter(x.is_not_nan()).get_column("x").to_numpy().astype(np.float64), buckets, first, last)
        (n_present,) = col.select(x.is_not_nan().sum()).row(0)
        n = int(n_present)
        lo, hi = window_ranks(n, first, last)
        if hi < lo:
            return chosen_window(np.zeros(0, dtype=np.float64), BucketSpan(n, lo, hi, 0, -1, 0), buckets)

        def below(ts: Sequence[int]) -> dict[int, int]:
            """How many present values lie in buckets below each t (one pass for all of them)."""
            exprs = []
            known: dict[int, int] = {}
            for t in ts:
                theta = buckets.threshold(t)
                if theta is None:
                    known[t] = n
                else:  # NaN < theta is false in polars (NaN sorts above every number); nulls are not summed
                    exprs.append((x < theta).sum().alias(str(t)))
            if exprs:
                known.update({int(name): int(c) for name, c in col.select(exprs).row(0, named=True).items()})
            return known

        # b = the bucket holding rank r: the smallest b with C(b + 1) > r, where C(t) = #values in buckets < t.
        # Binary search on t for lo and hi together: C(0) = 0 <= r < n = C(B).
        bounds = {lo: [0, buckets.count], hi: [0, buckets.count]}  # [t with C(t) <= r, t with C(t) > r]
        counts: dict[int, int] = {0: 0}
        while any(b - a > 1 for a, b in bounds.values()):
            mids = sorted({(a + b) // 2 for a, b in bounds.values() if b - a > 1} - set(counts))
            counts.update(below(mids))
            for r, ab in bounds.items():
                if ab[1] - ab[0] > 1:
                    mid = (ab[0] + ab[1]) // 2
                    ab[counts[mid] > r] = mid
        b0, b1 = bounds[lo][1] - 1, bounds[hi][1] - 1
        before = counts[b0] if b0 in counts else below([b0])[b0]
        keep = x.is_not_nan()
        start = buckets.threshold(b0)
        if b0 > 0 and start is not None:
            keep = keep & (x >= start)
        stop = buckets.threshold(b1 + 1) if b1 + 1 < buckets.count else None
        if stop is not None:
            keep = keep & (x < stop)
        chosen = col.filter(keep).get_column("x").to_numpy().astype(np.float64)  # row order: numpy's chosen values
        return chosen_window(chosen, BucketSpan(n, lo, hi, b0, b1, before), buckets)

    def _extremes(self, column: str, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64], Callable[[], bool]]:
        v = self._present(column)
        n_raw, small_raw, large_raw = self._row(
            v.count().alias("n"), v.bottom_k(k).implode().alias("small"), v.top_k(k).implode().alias("large")
        )
        small = np.array([y for y in small_raw if y is not None], dtype=np.float64)
        large = np.array([y for y in large_raw if y is not None], dtype=np.float64)
        return int(n_raw), small, large, lambda: self._signed_zeros(column)

    def _unit_count(self, unit: str, kind: str) -> int:
        key = key_expr(unit, kind)
        if kind == "float":
            key = key + 0.0  # -0.0 and 0.0 are one id (both normalise to the key 0)
        (n,) = self._row(key.drop_nulls().n_unique().alias("n"))
        return int(n)

    # -- private -----------------------------------------------------------------------

    def _column_frame(self, column: str) -> pl.DataFrame:
        """One column as Float64 named ``x`` in a DataFrame (a LazyFrame's plan runs once, for that column)."""
        expr = self._raw(column).alias("x")
        eager = self._source.eager
        if eager is not None and column in eager.columns:
            return eager.select(expr)
        return self._source.frame_for(expr).select(expr).collect()

    def _signed_zeros(self, column: str) -> bool:
        """Whether the present values hold both ``0.0`` and ``-0.0``."""
        v = self._present(column)
        zero = v == 0.0
        neg, pos = self._row((zero & ((1.0 / v) < 0.0)).sum().alias("neg"), (zero & ((1.0 / v) > 0.0)).sum().alias("pos"))
        return int(neg) > 0 and int(pos) > 0

    # -- per-unit questions ------------------------------------------------------------
    # Thin: validation, the numpy fallback for what polars does not group or read, then one
    # group_by in dpalg.data._polars_units (semantics and exactness argued there).

    def _unit_kinds(self, unit: str, column: str | None) -> tuple[str, str | None] | None:
        """The id kind and the value kind (``None`` without a column), or ``None`` when numpy answers.

        Checks in the numpy backend's order: the id column exists, then the value column holds numbers.
        """
        key_kind = self._kind(unit)  # an unknown id column raises the dataset's error first
        if column is not None and not self._in_polars(column):
            return None
        return None if key_kind not in units.UNIT_KEY_KINDS else (key_kind, None if column is None else self._kind(column))

    def per_unit_sums(self, unit: str, column: str, lower: float | None, upper: float | None, k: int) -> npt.NDArray[np.float64]:
        from dpalg.data._user_units import check_unit_clip, check_unit_lattice

        check_unit_lattice("per_unit_sums", k)
        check_unit_clip("per_unit_sums", lower, upper)
        kinds = self._unit_kinds(unit, column)
        if kinds is None:
            return self._numpy().per_unit_sums(unit, column, lower, upper, k)
        key, x = units.unit_key(unit, kinds[0]), units.raw_values(column)
        return units.unit_sums(self._source.frame_for(key, x), key, x, lower, upper, k, self.n_rows)

    def per_unit_row_counts(self, unit: str, column: str | None) -> npt.NDArray[np.int64]:

        kinds = self._unit_kinds(unit, column)
        if kinds is None:
            return self._numpy().per_unit_row_counts(unit, column)
        x = None if column is None else units.raw_values(column)
        key = units.unit_key(unit, kinds[0])
        frame = self._source.frame_for(key) if x is None else self._source.frame_for(key, x)
        return units.unit_row_counts(frame, key, x, floats=kinds[1] == "float")

    def unit_total_sum(self, spec: UnitTotalSpec, secret: bytes) -> UnitTotals:
        per_unit = self._unit_totals(spec)
        if per_unit is None:
            return self._numpy().unit_total_sum(spec, secret)
        return units.total_sum(per_unit, spec, self.n_rows)

    def unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        per_unit = self._unit_totals(spec)
        if per_unit is None:
            return self._numpy().unit_totals(spec, secret)
        return units.totals_sorted(per_unit)

    def _unit_totals(self, spec: UnitTotalSpec) -> pl.LazyFrame | None:
        """The per-user totals in polars (:func:`~dpalg.data._polars_units.unit_totals`), or ``None`` when numpy answers:
        a sum under a row cap (the keyed row choice is numpy's), an id or value type polars does not read, ``k > 900``."""
        if spec.k > 900 or (spec.max_rows is not None and spec.kind == "sum"):
            return None
        kinds = self._unit_kinds(spec.unit, spec.column)
        if kinds is None:
            return None
        key = units.unit_key(spec.unit, kinds[0])
        x = None if spec.column is None else units.raw_values(spec.column)
        frame = self._source.frame_for(key) if x is None else self._source.frame_for(key, x)
        return units.unit_totals(frame, key, x, spec, self.n_rows, floats=kinds[1] == "float")

    def per_unit_max(self, unit: str, column: str, lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
        from dpalg.data._user_units import check_unit_clip

        check_unit_clip("per_unit_max", lower, upper)
        kinds = self._unit_kinds(unit, column)
        if kinds is None:
            return self._numpy().per_unit_max(unit, column, lower, upper)
        key, x = units.unit_key(unit, kinds[0]), units.raw_values(column)
        return units.unit_max(self._source.frame_for(key, x), key, x, lower, upper)


def _terms(plan: SumPlan, raw: pl.Expr, *, floats: bool) -> pl.Expr:
    """Each value's lattice term, as an integral Float64: nulls stay null, NaN gets the term of 0.0.

    NaN is replaced *before* the chain (polars' ``clip`` keeps NaN) by a value
    whose term is known exactly (:attr:`SumPlan.zero_term`, subtracted once per
    NaN); replacing it by null would cost a ``when/then`` over the column. Only a
    float column (``floats``) can hold NaN.
    """
    filled = pl.when(raw.is_nan()).then(0.0).otherwise(raw) if floats else raw  # fill_nan's when/then, one test lighter
    t = rint_expr((filled * plan.scale).clip(plan.a, plan.b), max(abs(plan.a), abs(plan.b)))
    if plan.centre is None:
        return t
    d = t - float(plan.centre)  # exact: integral floats, |d| <= 2**26 (SumPlan)
    return rint_expr((d * d) * plan.square_scale, plan.square_bound)


def _key_dtype(kind: str, dtype: pl.DataType) -> pl.DataType:
    if kind == "float":
        return pl.Float64()
    if kind == "str":
        return pl.String()
    return dtype
