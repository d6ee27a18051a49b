"""The in-memory backend of the reductions seam: one block-wise pass, memory O(block).

Every function here takes a float64 column (missing values as NaN, see the data
policy) and answers one question of :class:`~dpalg.data.Reductions` exactly. The
array forms (:func:`lattice_sum`, :func:`grid_counts`, :func:`order_window`,
:func:`extremes`) take any float64 array, so a later ``per_unit`` reduction can
apply them to users' totals; the user-level paths do not use them yet.

**Fixed-point sums in blocks.** The chain clip → scale by ``2**-k`` → round half
to even → exact sum runs on blocks of ``2**16`` values in preallocated buffers.
Scaling by a power of two is exact for floats outside the subnormal range (where
every value rounds to 0 anyway), so ``round(clip(x, a, b)/2**k)`` equals
``round(clip(x/2**k, a/2**k, b/2**k))``; the integer clamp to ``[L, U]`` commutes
with rounding (``L, U`` are integers), so it folds into the float clip. Missing
values are mapped to the lower bound by ``fmax`` (the path is the same for every
block, whatever the data) and their terms are subtracted exactly afterwards.
A block's terms are integers of magnitude at most ``B``; when ``block·B < 2**53``
the float sum of the block is exact (every partial sum is an integer below
``2**53``), otherwise the terms are summed in int64 chunks of at most
``2**62 / B`` values. Bounds beyond the fast path's range (``|L|``, ``|U| >
2**52``, a scaled bound that overflows) take the exact per-block path of
:func:`dpalg.noise.exact_clipped_sum`. Either way the answer equals the
full-array computation bit for bit (tested on hypothesis data).

**Square terms** (a :class:`~dpalg.data.SumSpec` with ``centre``). The block's
lattice terms ``t`` (integral floats, in ``[round(a), round(b)]``) become int64 and
their square terms ``round_half_even((t - c)**2 / 2**s)`` are computed in int64
when ``|t - c| <= 2**31`` on that whole range (:func:`dpalg.data._fixed_point.square_terms`),
then summed exactly; a wider range takes the exact path, where the terms are
Python ints. A missing value's square term (of ``round(a)``) is subtracted per
missing value, as for plain sums.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, fraction_floor
from dpalg.data._dataset import Dataset, register_in_memory_reductions
from dpalg.data._fixed_point import exact_clipped_sum, exact_square_sum, square_term, square_terms
from dpalg.data._lattice_sums import exact_int_total
from dpalg.data._keys import Key, key_counts, key_index
from dpalg.data._fixed_point import inside_bounds
from dpalg.data._grid_view import CountedGrid
from dpalg.data._reductions import LatticeSum, OrderWindow, Reductions, SumSpec

if TYPE_CHECKING:
    from dpalg.data._unit_spec import KeptRowCellSpec, KeptRowSumSpec, UnitKeySpec, UnitTotals, UnitTotalSpec
from dpalg.data._user_units import (
    check_unit_clip, check_unit_lattice, clip_rows, per_unit_max, per_unit_row_counts, per_unit_sums, unit_count,
)  # fmt: skip

__all__ = [
    "BLOCK", "NumpyReductions", "as_reductions", "extremes", "grid_counts", "inside_bounds", "lattice_sum", "order_window",
]  # fmt: skip

#: values per block of the one-pass reductions (a 512 KiB float64 buffer)
BLOCK: Final = 1 << 16
_EXACT_FLOAT: Final = 1 << 53
_INT64_MAX: Final = (1 << 63) - 1
#: the widest |t - centre| whose square terms the fast path computes in int64 (the square is below 2**62)
_SQUARE_INT64: Final = 1 << 31
#: the largest grid counted with bincount (larger grids sort the present values)
MAX_COUNTED_GRID_BITS: Final = 24


def _blocks(x: npt.NDArray[np.float64], size: int | None = None) -> list[npt.NDArray[np.float64]]:
    step = BLOCK if size is None else size
    return [x[i : i + step] for i in range(0, x.size, step)]


def fast_lattice(lower: Fraction, upper: Fraction, k: int, lo_in: float, hi_in: float) -> tuple[float, float, float] | None:
    """``(scale, a, b)`` of the fast path (module docstring): a term is ``rint(clamp(x·scale, a, b))``; ``None`` when
    the bounds or the lattice leave float range (the exact path then applies). Shared by every backend in memory,
    so a term is one definition."""
    step = Fraction(2) ** k
    big_l, big_u = fraction_floor(lower / step), fraction_ceil(upper / step)
    if not (-1022 <= -k <= 1023 and max(abs(big_l), abs(big_u)) <= 1 << 52):
        return None
    scale = math.ldexp(1.0, -k)
    with np.errstate(over="ignore"):
        a = max(lo_in * scale, float(big_l))
        b = min(hi_in * scale, float(big_u))
    return (scale, a, b) if math.isfinite(a) and math.isfinite(b) and a <= b else None


def lattice_terms(block: npt.NDArray[np.float64], scale: float, a: float, b: float, out: npt.NDArray[np.float64]) -> None:
    """The fast path's terms of ``block`` into ``out`` (as floats): ``rint(clamp(x·scale, a, b))``; NaN and -inf give ``a``."""
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(block, scale, out=out)
        np.fmax(out, a, out=out)
        np.fmin(out, b, out=out)
        np.rint(out, out=out)


def lattice_sum(
    x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, k: int, centre: int | None = None, shift: int = 0
) -> LatticeSum:
    """The exact sum of the lattice terms of ``x`` clipped to ``[lower, upper]``, and the present count.

    Equal to ``exact_clipped_sum(clip_inside(x[~isnan(x)]), lower, upper, k)`` bit for bit
    (module docstring), in one block-wise pass. With ``centre``: the sum of the
    square terms, equal to :func:`~dpalg.data._fixed_point.exact_square_sum` of the same values.

    Examples:
        >>> s = lattice_sum(np.array([0.5, 7.0, np.nan, -3.0]), Fraction(0), Fraction(2), -1)
        >>> (s.total, s.count)
        (5, 3)
        >>> lattice_sum(np.array([0.5, 7.0, np.nan, -3.0]), Fraction(0), Fraction(2), -1, centre=2).total  # 1 + 4 + 4
        9
    """
    if lower > upper:
        raise InvalidArgument("lattice_sum", "lower", lower, f"must be <= upper={upper}")
    lo_in, hi_in = inside_bounds(lower, upper)
    params = fast_lattice(lower, upper, k, lo_in, hi_in)
    if params is not None and centre is not None and max(abs(round(params[1]) - centre), abs(round(params[2]) - centre)) > _SQUARE_INT64:
        params = None
    if params is None:
        return _lattice_sum_exact(x, lower, upper, k, lo_in, hi_in, centre, shift)
    scale, a, b = params
    if centre is not None:
        return _square_sum_fast(x, a, b, scale, k, centre, shift)
    bound = max(abs(round(a)), abs(round(b)), 1)
    float_exact = BLOCK * bound < _EXACT_FLOAT
    chunk = max(1, _INT64_MAX // bound)
    total = 0
    missing = 0
    buf = np.empty(min(BLOCK, x.size), dtype=np.float64)
    mask = np.empty(buf.size, dtype=np.bool_)
    with np.errstate(over="ignore", invalid="ignore"):
        for block in _blocks(x):
            out = buf[: block.size]
            lattice_terms(block, scale, a, b, out)  # NaN -> a (subtracted below)
            if float_exact:
                total += int(out.sum())
            else:
                ints = out.astype(np.int64)
                total += sum(int(ints[i : i + chunk].sum()) for i in range(0, ints.size, chunk))
            m = mask[: block.size]
            np.isnan(block, out=m)
            missing += int(np.count_nonzero(m))
    total -= missing * int(round(a))  # each missing value added the term round(a)
    return LatticeSum(total, int(x.size) - missing, k)


def _square_sum_fast(x: npt.NDArray[np.float64], a: float, b: float, scale: float, k: int, centre: int, shift: int) -> LatticeSum:
    """The fast path's terms (module docstring), squared in int64 (``|t - centre| <= 2**31``) and summed exactly."""
    lo_t, hi_t = round(a), round(b)
    half_width = max(abs(lo_t - centre), abs(hi_t - centre))
    bound = max(square_term(half_width, 0, shift), 1)
    total = 0
    missing = 0
    buf = np.empty(min(BLOCK, x.size), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for block in _blocks(x):
            out = buf[: block.size]
            lattice_terms(block, scale, a, b, out)  # NaN -> a (subtracted below)
            squares = square_terms(out.astype(np.int64), centre, shift, half_width)
            total += exact_int_total(squares.astype(np.int64), bound)
            missing += int(np.count_nonzero(np.isnan(block)))
    total -= missing * square_term(lo_t, centre, shift)  # each missing value added the square term of round(a)
    return LatticeSum(total, int(x.size) - missing, k)


def _lattice_sum_exact(
    x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, k: int, lo_in: float, hi_in: float,
    centre: int | None = None, shift: int = 0,
) -> LatticeSum:  # fmt: skip
    total = 0
    count = 0
    for block in _blocks(x):
        kept = np.clip(block[~np.isnan(block)], lo_in, hi_in)
        count += int(kept.size)
        if centre is None:
            total += exact_clipped_sum(kept, lower, upper, k)
        else:
            total += exact_square_sum(kept, lower, upper, k, centre, shift)
    return LatticeSum(total, count, k)


def grid_counts(
    x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, bits: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The occupied points of the grid ``j = 0..2**bits`` on ``[lower, upper]`` (ascending) and their counts.

    The grid index of a value is ``clip(rint((y/2 − l/2)·2^(bits+1)/(u − l)), 0, 2**bits)``
    with ``y`` the value clipped inside ``[lower, upper]`` (the halves keep ``y − l``
    finite near the float maximum), as :class:`~dpalg.mechanisms.ExponentialQuantile`
    has always computed it. Block-wise: a column much shorter than the grid is
    counted by sorting its indices, a longer one with ``bincount`` over the grid;
    memory is O(block + min(n, grid)).

    Examples:
        >>> cells, counts = grid_counts(np.array([0.0, 0.4, 1.0, np.nan, 9.0]), Fraction(0), Fraction(1), 1)
        >>> (cells.tolist(), counts.tolist())
        ([0, 1, 2], [1, 1, 2])
    """
    if not 1 <= bits <= MAX_COUNTED_GRID_BITS or lower >= upper:
        raise InvalidArgument("grid_counts", "bits", bits, f"must be in [1, {MAX_COUNTED_GRID_BITS}] with lower < upper")
    size = 1 << bits
    lo_in, hi_in = inside_bounds(lower, upper)
    half_l = float(lower) * 0.5
    scale = float(Fraction(2 * size) / (upper - lower))
    dense = x.size * 8 >= size  # public shape only: the column's length against the grid's
    counts = np.zeros(size + 2, dtype=np.int64) if dense else None
    parts: list[npt.NDArray[np.int64]] = []
    block_size = max(BLOCK, min(1 << 20, size // 4)) if dense else BLOCK  # amortise bincount's O(size) per block
    buf = np.empty(min(block_size, max(x.size, 1)), dtype=np.float64)
    with np.errstate(all="ignore"):
        for block in _blocks(x, block_size):
            out = buf[: block.size]
            np.clip(block, lo_in, hi_in, out=out)
            np.multiply(out, 0.5, out=out)
            np.subtract(out, half_l, out=out)
            np.multiply(out, scale, out=out)
            np.rint(out, out=out)
            np.clip(out, 0, size, out=out)
            np.nan_to_num(out, copy=False, nan=float(size + 1))  # missing: the sentinel cell, dropped
            if counts is not None:
                counts += np.bincount(out.astype(np.int64), minlength=size + 2)
            else:
                parts.append(out.astype(np.int64))
    if counts is not None:
        cells = np.flatnonzero(counts[: size + 1]).astype(np.int64)
        return cells, counts[cells]
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    cells, found = np.unique(idx[idx <= size], return_counts=True)
    return cells.astype(np.int64), found.astype(np.int64)


#: buckets of the order window's first pass
_WINDOW_BUCKETS: Final = 1 << 16


def _bucket_of(
    block: npt.NDArray[np.float64], lo_in: float, hi_in: float, scale: float, out: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """Each value's bucket in ``[0, B)`` (monotone in the value), ``B`` for a missing value."""
    buckets = _WINDOW_BUCKETS
    np.clip(block, lo_in, hi_in, out=out)  # halves: y/2 - l/2 stays finite even for a clip of +-1.7e308
    np.multiply(out, 0.5, out=out)
    np.subtract(out, lo_in * 0.5, out=out)
    np.multiply(out, scale, out=out)
    np.floor(out, out=out)
    np.clip(out, 0, buckets - 1, out=out)
    np.nan_to_num(out, copy=False, nan=float(buckets))
    return out.astype(np.int64)


def order_window(x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, first: int, last: int) -> OrderWindow:
    """The sorted clipped present values at ranks ``first..last`` (clamped to ``[0, n)``).

    Two block-wise passes, no copy of the column: the first counts the values in
    ``2**16`` buckets of ``[lower, upper]`` (the bucket is monotone in the value, so
    ranks are preserved), the second collects the values of the buckets that hold
    the requested ranks, which are sorted and clipped (clipping is monotone). When
    ties or a narrow distribution put most values in those buckets the second
    pass collects them all: the memory is then one copy of the column, never more.

    Examples:
        >>> w = order_window(np.array([5.0, np.nan, 1.0, 9.0, 3.0]), Fraction(0), Fraction(8), 1, 2)
        >>> (w.n, w.first, w.values.tolist())
        (4, 1, [3.0, 5.0])
    """
    lo_in, hi_in = inside_bounds(lower, upper)
    if x.size <= _WINDOW_BUCKETS:  # a short column: one sorted copy is cheaper than two passes over buckets
        kept = x[~np.isnan(x)]
        kept.sort()
        n = int(kept.size)
        lo, hi = min(max(first, 0), n), min(max(last, -1), n - 1)
        window = kept[lo : hi + 1].copy() if lo <= hi else np.zeros(0, dtype=np.float64)
        return OrderWindow(n, lo, np.clip(window, lo_in, hi_in, out=window))
    half_width = hi_in * 0.5 - lo_in * 0.5
    scale = _WINDOW_BUCKETS / half_width if half_width > 0 else 0.0
    counts = np.zeros(_WINDOW_BUCKETS + 1, dtype=np.int64)
    buf = np.empty(min(BLOCK, max(x.size, 1)), dtype=np.float64)
    with np.errstate(all="ignore"):
        for block in _blocks(x):
            counts += np.bincount(_bucket_of(block, lo_in, hi_in, scale, buf[: block.size]), minlength=_WINDOW_BUCKETS + 1)
    cum = np.cumsum(counts[:_WINDOW_BUCKETS])
    n = int(cum[-1])
    lo = min(max(first, 0), n)
    hi = min(max(last, -1), n - 1)
    if hi < lo:
        return OrderWindow(n, lo, np.zeros(0, dtype=np.float64))
    b0 = int(np.searchsorted(cum, lo, side="right"))  # the bucket holding rank lo
    b1 = int(np.searchsorted(cum, hi, side="right"))
    below = int(cum[b0 - 1]) if b0 > 0 else 0
    parts: list[npt.NDArray[np.float64]] = []
    with np.errstate(all="ignore"):
        for block in _blocks(x):
            bucket = _bucket_of(block, lo_in, hi_in, scale, buf[: block.size])
            parts.append(block[(bucket >= b0) & (bucket <= b1)])
    chosen = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
    chosen.sort()
    window = chosen[lo - below : hi - below + 1].copy()
    return OrderWindow(n, lo, np.clip(window, lo_in, hi_in, out=window))


def extremes(x: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(n, smallest, largest)``: the ``min(k, n)`` smallest and largest clipped present values, ascending.

    Block-wise: each block keeps its own k smallest and k largest (a partition),
    and the candidates are merged at the end; memory O(block + k·blocks).

    Examples:
        >>> n, lo, hi = extremes(np.array([5.0, np.nan, 1.0, 9.0, 3.0]), Fraction(0), Fraction(8), 2)
        >>> (n, lo.tolist(), hi.tolist())
        (4, [1.0, 3.0], [5.0, 8.0])
    """
    if k < 0:
        raise InvalidArgument("extremes", "k", k, "must be >= 0")
    lo_in, hi_in = inside_bounds(lower, upper)
    small: list[npt.NDArray[np.float64]] = []
    large: list[npt.NDArray[np.float64]] = []
    n = 0
    for block in _blocks(x):
        v = block[~np.isnan(block)]
        n += int(v.size)
        if v.size > 2 * k and k > 0:
            v = np.partition(v, [k - 1, v.size - k])
            small.append(v[:k].copy())
            large.append(v[v.size - k :].copy())
        elif k > 0:
            small.append(v)
            large.append(v)
    m = min(k, n)
    if m == 0:
        empty = np.zeros(0, dtype=np.float64)
        return n, empty, empty
    s = np.sort(np.concatenate(small))[:m]
    g = np.sort(np.concatenate(large))[-m:]
    return n, np.clip(s, lo_in, hi_in), np.clip(g, lo_in, hi_in)


@final
class NumpyReductions:
    """:class:`~dpalg.data.Reductions` over an in-memory :class:`~dpalg.data.Dataset`.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> r = NumpyReductions(as_dataset({"x": [1.0, 2.5, None, 40.0]}))
        >>> (r.n_rows, r.count("x"))
        (4, 3)
        >>> [(s.total, s.count) for s in r.clipped_sums([SumSpec("x", Fraction(0), Fraction(10), 0)])]
        [(13, 3)]
    """

    __slots__ = ("_data",)

    def __init__(self, data: Dataset) -> None:
        self._data = data

    @property
    def dataset(self) -> Dataset:
        """The underlying dataset (for user functions, which receive rows)."""
        return self._data

    def __repr__(self) -> str:  # never prints values
        return f"NumpyReductions({self._data!r})"

    @property
    def n_rows(self) -> int:
        return self._data.n_rows

    def count(self, column: str) -> int:
        x = self._data.numeric(column)
        return int(x.size) - sum(int(np.count_nonzero(np.isnan(b))) for b in _blocks(x))

    def count_distinct(self, column: str) -> int:
        x = self._data.numeric(column)
        return int(np.unique(x[~np.isnan(x)]).size)

    def clipped_sums(self, specs: Sequence[SumSpec]) -> list[LatticeSum]:
        return [lattice_sum(self._data.numeric(s.column), s.lower, s.upper, s.k, s.centre, s.shift) for s in specs]

    def key_counts(self, column: str, keys: Sequence[Key]) -> npt.NDArray[np.int64]:
        return key_counts(self._data.column(column), keys, owner=f"Dataset column {column!r}")

    def key_histogram(self, column: str) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        keys, codes = key_index(self._data.column(column), owner=f"Dataset column {column!r}")  # one pass
        return keys, np.bincount(codes[codes >= 0], minlength=len(keys)).astype(np.int64)

    def grid_counts(
        self, column: str, lower: Fraction, upper: Fraction, bits: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        return grid_counts(self._data.numeric(column), lower, upper, bits)

    def grid_view(self, column: str, lower: Fraction, upper: Fraction, bits: int) -> CountedGrid:
        return CountedGrid(*self.grid_counts(column, lower, upper, bits))

    def order_window(self, column: str, lower: Fraction, upper: Fraction, first: int, last: int) -> OrderWindow:
        return order_window(self._data.numeric(column), lower, upper, first, last)

    def extremes(self, column: str, lower: Fraction, upper: Fraction, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        return extremes(self._data.numeric(column), lower, upper, k)

    def unit_count(self, unit: str) -> int:
        return unit_count(self._data.column(unit))

    # -- per-unit questions: ascending entries, +0.0 for a zero (the protocol's canonical order) --

    def per_unit_sums(self, unit: str, column: str, lower: float | None, upper: float | None, k: int) -> npt.NDArray[np.float64]:
        check_unit_lattice("per_unit_sums", k)
        check_unit_clip("per_unit_sums", lower, upper)
        ids = self._data.column(unit)  # the shifted inverse's order of reads, so the same error comes first
        values = clip_rows(self._data.numeric(column), lower, upper)
        return np.sort(per_unit_sums(ids, values, k=k))  # totals are >= 0: no -0.0

    def per_unit_row_counts(self, unit: str, column: str | None) -> npt.NDArray[np.int64]:
        ids = self._data.column(unit)
        return np.sort(per_unit_row_counts(ids, None if column is None else self._data.numeric(column)))

    def unit_total_sum(self, spec: UnitTotalSpec, secret: bytes) -> UnitTotals:
        from dpalg.data._unit_totals import sum_of_totals

        return sum_of_totals(self._unit_totals(spec, secret), spec)

    def unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        return np.sort(self._unit_totals(spec, secret))

    def kept_row_sum(self, spec: KeptRowSumSpec, secret: bytes) -> LatticeSum:
        from dpalg.data._unit_totals import dataset_kept_row_sum

        return LatticeSum(*dataset_kept_row_sum(self._data, spec, secret), spec.k)

    def kept_row_cells(self, spec: KeptRowCellSpec, secret: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        from dpalg.data._unit_totals import dataset_kept_row_cells

        return dataset_kept_row_cells(self._data, spec, secret)

    def _unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        """The users' clamped totals in id order (the user-level mechanisms' reads, in their order)."""
        from dpalg.data._unit_totals import dataset_unit_totals

        return dataset_unit_totals(self._data, spec, secret)

    def unit_key_counts(self, spec: UnitKeySpec, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        from dpalg.data._unit_totals import dataset_unit_key_counts

        return dataset_unit_key_counts(self._data, spec, secret)

    def per_unit_max(self, unit: str, column: str, lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
        check_unit_clip("per_unit_max", lower, upper)
        ids = self._data.column(unit)
        maxima = per_unit_max(ids, clip_rows(self._data.numeric(column), lower, upper))
        return np.sort(maxima + 0.0)  # + 0.0: -0.0 is 0.0, so the sort has one answer


def as_reductions(data: Dataset | Reductions) -> Reductions:
    """The reductions backend for ``data``, chosen by its type (``docs/reductions.md``).

    A :class:`~dpalg.data.Dataset` of numpy columns is answered in memory by
    :class:`NumpyReductions`; a dataset backed by another store (a polars frame,
    :meth:`Dataset.from_source`) by that store's backend; an object that already
    implements :class:`~dpalg.data.Reductions` is used as it is.

    Raises:
        InvalidArgument: a type no backend serves.
    """
    if isinstance(data, Dataset):
        source = data.source
        return NumpyReductions(data) if source is None else source.reductions(data)
    if isinstance(data, Reductions):
        return data
    raise InvalidArgument("as_reductions", "data", type(data).__name__, "must be a dpalg Dataset (see as_dataset) or a Reductions backend")


register_in_memory_reductions(NumpyReductions)  # the rows of Dataset.take() are in memory: answered here
