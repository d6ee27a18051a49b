"""What the reductions of a :class:`~dpalg.data.Dataset` backed by a ColumnSource (polars, Spark) share.

Each backend computes on its side only what must read the rows (its own
expressions: terms and their sums, bucket counts, group-bys, filters); every step
the driver takes lives here, once, so that both backends reach the numpy
backend's answer by the same code:

* the questions themselves (:class:`SourceReductions`): the checks in the numpy
  backend's order, the fallback to the numpy backend for the column types a
  backend does not compute, then one hook of the backend per question;
* :class:`SumPlan`: the numpy fast path's test and folded clip bounds of a
  fixed-point sum, computed the same way (the executors apply them);
* :class:`GridCells`: the numpy grid's checks and constants;
* the order window (:class:`WindowBuckets`, :func:`bucket_span`,
  :func:`sorted_window`, :func:`chosen_window`): the numpy backend's buckets, the
  search from bucket counts to the buckets ``b0..b1`` that hold the ranks, and the
  sort, slice and clip of the values collected in row order;
* extremes: sorted and clipped as numpy does, or handed to numpy when tied zeros
  of both signs make its choice depend on its blocks;
* keys (:func:`listed_keys`, :func:`listed_counts`, :func:`key_histogram`,
  :func:`key_candidates`): grouped values normalised and merged under the key
  policy, as :func:`~dpalg.data.key_counts` and :func:`~dpalg.data.key_index` do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any, ClassVar, Final, Generic, TypeVar, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, fraction_floor
from dpalg.data import _numpy_reductions as _numpy_backend
from dpalg.data._dataset import ColumnSource, Dataset
from dpalg.data._fixed_point import square_term
from dpalg.data._grid_view import CountedGrid, GridView
from dpalg.data._keys import Key, key_order, normalise_key
from dpalg.data._numpy_reductions import MAX_COUNTED_GRID_BITS, NumpyReductions, inside_bounds
from dpalg.data._reductions import LatticeSum, OrderWindow, SumSpec
from dpalg.data._unit_totals import KeptRowCellSpec, KeptRowSumSpec, UnitKeySpec, UnitTotals, UnitTotalSpec

__all__ = [
    "BucketSpan", "GridCells", "SourceReductions", "SumPlan", "WindowBuckets", "bucket_span", "chosen_window", "first_reaching",
    "key_candidates", "key_histogram", "listed_counts", "listed_keys", "sorted_window", "window_ranks",
]  # fmt: skip

S = TypeVar("S", bound=ColumnSource)

#: the widest ``|t - centre|`` whose square a backend computes in float64 (the square is at most 2**52, exact)
SQUARE_FLOAT_WIDTH: Final = 1 << 26


class SourceReductions(Generic[S]):
    """The questions of :class:`~dpalg.data.Reductions` for a sourced dataset, asked in the numpy backend's order.

    Each question is answered here up to what must read the rows: the checks
    (raised as the numpy backend raises them, first the column's schema, then the
    arguments), the fallback to the numpy backend for the column types the
    backend does not compute, and the driver's steps on the small answers. A
    backend implements the hooks below (``_kind``, ``_computes`` and the
    executor-side ``_count`` .. ``_unit_count``), each one of its own expressions.
    """

    __slots__ = ("_data", "_source")

    #: the column kinds whose keys the backend groups itself (others: the numpy backend)
    _KEY_KINDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, data: Dataset, source: S) -> None:
        self._data = data
        self._source = source

    @property
    def dataset(self) -> Dataset:
        """The underlying dataset (for user functions, which receive rows)."""
        return self._data

    def __repr__(self) -> str:  # never prints values
        return f"{type(self).__name__}({self._data!r})"

    def _numpy(self) -> NumpyReductions:
        """The numpy backend over the same dataset: for the types the backend does not compute (columns converted once)."""
        return NumpyReductions(self._data)

    # -- the protocol --------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return self._data.n_rows

    def count(self, column: str) -> int:
        return self._count(column) if self._computes(column) else self._numpy().count(column)

    def count_distinct(self, column: str) -> int:
        return self._count_distinct(column) if self._computes(column) else self._numpy().count_distinct(column)

    def clipped_sums(self, specs: Sequence[SumSpec]) -> list[LatticeSum]:
        plans = SumPlan.for_specs(specs, self._computes)
        planned = {i: (s, plan) for i, (s, plan) in enumerate(zip(specs, plans)) if plan is not None}
        got = self._sums(planned) if planned else {}
        out: list[LatticeSum] = []
        for i, s in enumerate(specs):  # a type the backend does not compute, or bounds beyond the fast path: numpy
            out.append(LatticeSum(*got[i], s.k) if i in got else self._numpy().clipped_sums([s])[0])
        return out

    def key_counts(self, column: str, keys: Sequence[Key]) -> npt.NDArray[np.int64]:
        kind = self._key_kind(column)
        if kind not in self._KEY_KINDS:
            return self._numpy().key_counts(column, keys)
        wanted = listed_keys(keys)
        candidates = self._key_candidates(column, kind, [k for _, k in wanted])
        if not candidates:
            return np.zeros(len(keys), dtype=np.int64)
        return listed_counts(self._key_groups(column, kind, candidates), wanted, len(keys))

    def key_histogram(self, column: str) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        kind = self._key_kind(column)
        if kind not in self._KEY_KINDS:
            return self._numpy().key_histogram(column)
        return key_histogram(self._key_groups(column, kind, None))

    def grid_counts(
        self, column: str, lower: Fraction, upper: Fraction, bits: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        native = self._computes(column)
        grid = GridCells(lower, upper, bits)
        return self._grid_counts(column, grid) if native else self._numpy().grid_counts(column, lower, upper, bits)

    def grid_view(self, column: str, lower: Fraction, upper: Fraction, bits: int) -> GridView:
        native = self._computes(column)
        grid = GridCells(lower, upper, bits)
        return self._grid_view(column, grid) if native else self._numpy().grid_view(column, lower, upper, bits)

    def order_window(self, column: str, lower: Fraction, upper: Fraction, first: int, last: int) -> OrderWindow:
        if not self._computes(column):
            return self._numpy().order_window(column, lower, upper, first, last)
        return self._order_window(column, WindowBuckets(lower, upper), first, last)

    def extremes(self, column: str, lower: Fraction, upper: Fraction, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        native = self._computes(column)
        if k < 0:
            raise InvalidArgument("extremes", "k", k, "must be >= 0")
        if not native:
            return self._numpy().extremes(column, lower, upper, k)
        n, small, large, signed_zeros = self._extremes(column, k)
        m = min(k, n)
        if m == 0:
            empty = np.zeros(0, dtype=np.float64)
            return n, empty, empty
        # The numpy backend's multiset; among equal floats only the sign of a zero can differ: when a zero is
        # among them and the column holds both 0.0 and -0.0, numpy answers (its choice depends on its blocks).
        if (np.any(small == 0) or np.any(large == 0)) and signed_zeros():
            return self._numpy().extremes(column, lower, upper, k)
        lo_in, hi_in = inside_bounds(lower, upper)
        return n, np.clip(np.sort(small)[:m], lo_in, hi_in), np.clip(np.sort(large)[-m:], lo_in, hi_in)

    def unit_count(self, unit: str) -> int:
        kind = self._key_kind(unit)
        return self._unit_count(unit, kind) if kind in self._KEY_KINDS else self._numpy().unit_count(unit)

    def unit_total_sum(self, spec: UnitTotalSpec, secret: bytes) -> UnitTotals:
        """The numpy backend's answer on the collected columns (a backend that computes it overrides this)."""
        return self._numpy().unit_total_sum(spec, secret)

    def unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        """The numpy backend's answer on the collected columns (a backend that computes it overrides this)."""
        return self._numpy().unit_totals(spec, secret)

    def kept_row_sum(self, spec: KeptRowSumSpec, secret: bytes) -> LatticeSum:
        """The numpy backend's answer on the collected columns (a backend that computes it overrides this)."""
        return self._numpy().kept_row_sum(spec, secret)

    def kept_row_cells(self, spec: KeptRowCellSpec, secret: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The numpy backend's answer on the collected columns (a backend that computes it overrides this)."""
        return self._numpy().kept_row_cells(spec, secret)

    def unit_key_counts(self, spec: UnitKeySpec, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        """The numpy backend's answer on the collected columns (a backend that computes it overrides this)."""
        return self._numpy().unit_key_counts(spec, secret)

    # -- the backend's hooks ---------------------------------------------------------------

    def _kind(self, column: str) -> str:
        """How the backend reads the column's type: ``float``, ``int``, ``bool``, ``null``, ``str``, ``bytes`` or ``other``.

        Raises the dataset's error for an unknown column.
        """
        raise NotImplementedError

    def _key_kind(self, column: str) -> str:
        """How the backend reads the column as keys or ids (:attr:`_KEY_KINDS`: grouped by the backend); :meth:`_kind` unless
        the backend groups a type it does not read as numbers (Spark's decimals). Raises the dataset's error for an unknown column."""
        return self._kind(column)

    def _computes(self, column: str) -> bool:
        """Whether the backend reads ``column`` as numbers (else numpy answers); raises the numpy backend's schema errors first."""
        raise NotImplementedError

    def _count(self, column: str) -> int:
        """How many values are present."""
        raise NotImplementedError

    def _count_distinct(self, column: str) -> int:
        """How many distinct present values (``-0.0`` is ``0.0``)."""
        raise NotImplementedError

    def _sums(self, planned: dict[int, tuple[SumSpec, SumPlan]]) -> dict[int, tuple[int, int]]:
        """The exact ``(total, count)`` of each planned sum, by its index in the call."""
        raise NotImplementedError

    def _key_candidates(self, column: str, kind: str, keys: list[Key]) -> list[object]:
        """The values, in the column's type, a row must hold to match one of the normalised ``keys`` (a superset)."""
        raise NotImplementedError

    def _key_groups(self, column: str, kind: str, candidates: list[object] | None) -> list[tuple[object, int]]:
        """``(value, rows)`` for each distinct value (only ``candidates`` when given; missing values as ``None``)."""
        raise NotImplementedError

    def _grid_counts(self, column: str, grid: GridCells) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The occupied cells of ``grid`` (ascending) and their counts."""
        raise NotImplementedError

    def _grid_view(self, column: str, grid: GridCells) -> GridView:
        """The grid's counts to be asked in parts: the whole grid by default (a backend that counts blocks first overrides this)."""
        return CountedGrid(*self._grid_counts(column, grid))

    def _order_window(self, column: str, buckets: WindowBuckets, first: int, last: int) -> OrderWindow:
        """The window, from the buckets' counts and the values collected in row order (:func:`bucket_span`, :func:`chosen_window`)."""
        raise NotImplementedError

    def _extremes(
        self, column: str, k: int
    ) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64], Callable[[], bool]]:
        """The present count, (at least) the ``min(k, n)`` smallest and largest present values, and whether the column holds zeros of both signs."""
        raise NotImplementedError

    def _unit_count(self, unit: str, kind: str) -> int:
        """How many distinct present ids (``-0.0`` is ``0.0``)."""
        raise NotImplementedError


@final
class GridCells:
    """The numpy backend's grid of ``grid_counts``: its checks and its constants, computed the same way.

    A value's cell is ``clip(rint((clip(x, lo_in, hi_in)·0.5 − half_l)·scale), 0, size)``.

    Raises:
        InvalidArgument: what the numpy backend raises for the arguments.
    """

    __slots__ = ("bits", "half_l", "hi_in", "lo_in", "scale", "size")

    def __init__(self, lower: Fraction, upper: Fraction, bits: int) -> None:
        if not 1 <= bits <= MAX_COUNTED_GRID_BITS or lower >= upper:
            raise InvalidArgument("grid_counts", "bits", bits, f"must be in [1, {MAX_COUNTED_GRID_BITS}] with lower < upper")
        self.size = 1 << bits
        self.bits = bits
        self.lo_in, self.hi_in = inside_bounds(lower, upper)
        self.half_l = float(lower) * 0.5
        self.scale = float(Fraction(2 * self.size) / (upper - lower))

    def cells(self, xs: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """The numpy backend's cell of each present value (its float operations, in its order)."""
        with np.errstate(all="ignore"):
            out = np.clip(xs, self.lo_in, self.hi_in)
            np.multiply(out, 0.5, out=out)
            np.subtract(out, self.half_l, out=out)
            np.multiply(out, self.scale, out=out)
            np.rint(out, out=out)
            np.clip(out, 0, self.size, out=out)
            return np.nan_to_num(out, nan=float(self.size + 1)).astype(np.int64)

    def threshold(self, t: int) -> float | None:
        """The smallest float whose cell is at least ``t`` (``None``: none); the cell is monotone in the value."""
        return first_reaching(self.cells, t)


# -- fixed-point sums -------------------------------------------------------------------------


@final
class SumPlan:
    """The folded clip bounds of one fixed-point sum on the numpy backend's fast path.

    A term is ``rint(clip(x·scale, a, b))``, an integer of magnitude at most ``bound``.
    With ``centre`` (a square-term spec), the term is ``rint((t - centre)**2 · 2**-shift)``
    of that ``t``, computed in float64 where it is exact: the fast path is taken only
    when ``|t - centre| <= 2**26`` on the whole range ``[round(a), round(b)]``, so
    ``t - centre`` (a difference of integral floats) and its square (``<= 2**52``) are
    exact, the scaling by ``2**-shift`` is exact (a power of two, far from the
    subnormals), and ``rint`` rounds half to even: the integer
    :func:`~dpalg.data._fixed_point.square_term` of ``t``, bit for bit. Square terms lie in
    ``[0, bound]``, ``bound <= 2**52``.
    """

    __slots__ = ("a", "b", "bound", "centre", "scale", "shift", "square_scale", "square_width")

    def __init__(self, scale: float, a: float, b: float, centre: int | None = None, shift: int = 0) -> None:
        self.scale, self.a, self.b = scale, a, b
        self.centre, self.shift = centre, shift
        self.square_scale = math.ldexp(1.0, -shift)
        if centre is None:
            self.square_width = 0
            self.bound = max(abs(round(a)), abs(round(b)), 1)  # every term's magnitude is at most this
        else:
            self.square_width = max(abs(round(a) - centre), abs(round(b) - centre))
            self.bound = max(square_term(self.square_width, 0, shift), 1)

    @classmethod
    def fast(cls, spec: SumSpec) -> SumPlan | None:
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
        if spec.centre is not None and max(abs(round(a) - spec.centre), abs(round(b) - spec.centre)) > SQUARE_FLOAT_WIDTH:
            return None  # a square beyond 2**52 is not exact in float64: the numpy backend's integer path answers
        return cls(scale, a, b, spec.centre, spec.shift)

    @classmethod
    def for_specs(cls, specs: Sequence[SumSpec], computes: Callable[[str], bool]) -> list[SumPlan | None]:
        """Validate every spec first, in the numpy backend's order (column, then bounds); a plan per spec.

        ``computes(column)`` raises the numpy backend's schema errors and says whether
        the backend computes the column; ``None``: the numpy backend answers that spec.
        """
        plans: list[SumPlan | None] = []
        for s in specs:
            native = computes(s.column)
            if s.lower > s.upper:
                raise InvalidArgument("lattice_sum", "lower", s.lower, f"must be <= upper={s.upper}")
            plans.append(cls.fast(s) if native else None)
        return plans

    @property
    def zero_term(self) -> int:
        """The term of ``0.0`` (a backend that maps NaN to 0.0 subtracts it once per NaN)."""
        t = round(min(max(0.0 * self.scale, self.a), self.b))  # Python's round is half to even, as np.rint
        return t if self.centre is None else square_term(t, self.centre, self.shift)

    @property
    def square_bound(self) -> float:
        """The largest ``(t - centre)**2 · 2**-shift`` before its rounding (public; for the rounding expression)."""
        return float(self.square_width * self.square_width) * self.square_scale


# -- the order window ---------------------------------------------------------------------------


def _ordered(x: float) -> int:
    """A float's position in the total order of floats (``-0.0`` and ``0.0`` share 0)."""
    bits = int(np.array([x], dtype=np.float64).view(np.int64)[0])
    return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF)


def _from_ordered(o: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """The floats at positions ``o`` of the total order (the inverse of :func:`_ordered`)."""
    bits = np.where(o >= 0, o, (-o) | np.int64(-(2**63))).astype(np.int64)
    return bits.view(np.float64)


_ORDERED_NEG_INF: Final = _ordered(-math.inf)
_ORDERED_POS_INF: Final = _ordered(math.inf)
_PROBES: Final = 1024  # floats tried at once per step of the threshold search (2**64 floats: 7 steps)


@final
class WindowBuckets:
    """The numpy order window's buckets of ``[lower, upper]``: its constants, its bucket function, its thresholds.

    ``count`` buckets, a value's bucket ``floor((clip(x)·0.5 − lo_in·0.5)·scale)``
    clipped to ``[0, count)`` (monotone in the value); a backend computes the same
    float operations on its side, or compares with :meth:`threshold`.
    """

    __slots__ = ("_cache", "count", "hi_in", "lo_in", "scale")

    def __init__(self, lower: Fraction, upper: Fraction) -> None:
        self.lo_in, self.hi_in = inside_bounds(lower, upper)
        half_width = self.hi_in * 0.5 - self.lo_in * 0.5  # as the numpy backend computes it
        self.count: int = _numpy_backend._WINDOW_BUCKETS  # read when used: the tests shrink it, for every backend
        self.scale = self.count / half_width if half_width > 0 else 0.0
        self._cache: dict[int, float | None] = {}

    def buckets(self, xs: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """The numpy backend's bucket of each value (its own function, so the same float operations)."""
        with np.errstate(all="ignore"):
            return _numpy_backend._bucket_of(xs, self.lo_in, self.hi_in, self.scale, np.empty_like(xs))

    def threshold(self, t: int) -> float | None:
        """``theta_t``: the smallest float x with ``bucket(x) >= t`` (``None``: no float reaches t); :func:`first_reaching`."""
        if t not in self._cache:
            self._cache[t] = first_reaching(self.buckets, t)
        return self._cache[t]


def first_reaching(index: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.int64]], t: int) -> float | None:
    """The smallest float x with ``index(x) >= t`` for an ``index`` monotone in the value (``None``: no float reaches t).

    So ``index(x) < t`` exactly when ``x < theta``: a backend selects the values of
    some buckets or cells by two comparisons with the raw value. A search over the
    ordered floats (NaN excluded) that tries 1023 of them per step (7 steps).
    """
    ends = index(np.array([-math.inf, math.inf]))
    if ends[1] < t:
        return None
    if ends[0] >= t:
        return -math.inf
    below, above = _ORDERED_NEG_INF, _ORDERED_POS_INF  # index(below) < t <= index(above)
    while above - below > 1:
        step = max((above - below) // _PROBES, 1)
        probes = np.arange(below + step, above, step, dtype=np.int64)[: _PROBES - 1]
        reached = index(_from_ordered(probes)) >= t  # monotone: False..False True..True
        i = int(np.argmax(reached)) if bool(reached.any()) else probes.size
        if i < probes.size:
            above = int(probes[i])
        if i > 0:
            below = int(probes[i - 1])
    return float(_from_ordered(np.array([above], dtype=np.int64))[0])


def window_ranks(n: int, first: int, last: int) -> tuple[int, int]:
    """The requested ranks clamped to ``[0, n)``: ``(lo, hi)``, empty when ``hi < lo``."""
    return min(max(first, 0), n), min(max(last, -1), n - 1)


def sorted_window(kept: npt.NDArray[np.float64], grid: WindowBuckets, first: int, last: int) -> OrderWindow:
    """The numpy backend's short path: every present value (in row order; sorted here in place), sliced and clipped."""
    kept.sort()
    n = int(kept.size)
    lo, hi = window_ranks(n, first, last)
    window = kept[lo : hi + 1].copy() if lo <= hi else np.zeros(0, dtype=np.float64)
    return OrderWindow(n, lo, np.clip(window, grid.lo_in, grid.hi_in, out=window))


@final
class BucketSpan:
    """The buckets ``b0..b1`` that hold ranks ``lo..hi`` of ``n`` present values, and how many values lie below ``b0``."""

    __slots__ = ("b0", "b1", "below", "hi", "lo", "n")

    def __init__(self, n: int, lo: int, hi: int, b0: int, b1: int, below: int) -> None:
        self.n, self.lo, self.hi, self.b0, self.b1, self.below = n, lo, hi, b0, b1, below

    @property
    def empty(self) -> bool:
        """No rank is requested inside ``[0, n)``."""
        return self.hi < self.lo


def bucket_span(counts: npt.NDArray[np.int64], first: int, last: int) -> BucketSpan:
    """From the present values' count per bucket (pass 1) to the buckets the ranks fall in, as the numpy backend finds them."""
    cum = np.cumsum(counts)
    n = int(cum[-1]) if cum.size else 0
    lo, hi = window_ranks(n, first, last)
    if hi < lo:
        return BucketSpan(n, lo, hi, 0, -1, 0)
    b0 = int(np.searchsorted(cum, lo, side="right"))  # the bucket holding rank lo
    b1 = int(np.searchsorted(cum, hi, side="right"))
    return BucketSpan(n, lo, hi, b0, b1, int(cum[b0 - 1]) if b0 > 0 else 0)


def chosen_window(chosen: npt.NDArray[np.float64], span: BucketSpan, grid: WindowBuckets) -> OrderWindow:
    """The window from the values of buckets ``b0..b1`` in row order (the numpy backend's chosen array; sorted here in place)."""
    if span.empty:
        return OrderWindow(span.n, span.lo, np.zeros(0, dtype=np.float64))
    chosen.sort()
    window = chosen[span.lo - span.below : span.hi - span.below + 1].copy()
    return OrderWindow(span.n, span.lo, np.clip(window, grid.lo_in, grid.hi_in, out=window))


# -- keys -----------------------------------------------------------------------------------------


def _py(value: object) -> object:
    """A grouped value as the Python value numpy would hold (Spark returns binary as ``bytearray``)."""
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


def listed_keys(keys: Sequence[Key]) -> dict[tuple[int, Key], int]:
    """Each public key's normalised form and the index of its first listing (numpy's ``key_codes``)."""
    wanted: dict[tuple[int, Key], int] = {}
    for i, key in enumerate(keys):
        norm = normalise_key(key)
        if norm is not None:
            wanted.setdefault(key_order(norm), i)
    return wanted


def listed_counts(groups: Iterable[tuple[object, int]], wanted: dict[tuple[int, Key], int], size: int) -> npt.NDArray[np.int64]:
    """How many rows hold each listed key, from ``(value, count)`` groups matched exactly under the key policy."""
    out = np.zeros(size, dtype=np.int64)
    for value, n in groups:
        norm = normalise_key(_py(value))
        if norm is not None and (index := wanted.get(key_order(norm))) is not None:
            out[index] += n
    return out


def key_histogram(groups: Iterable[tuple[object, int]]) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
    """The distinct present keys in key order and their counts, from ``(value, count)`` groups (merged when they normalise equal)."""
    merged: dict[tuple[int, Key], int] = {}
    for value, n in groups:
        norm = normalise_key(_py(value))
        if norm is not None:  # missing values count under no key
            tagged = key_order(norm)
            merged[tagged] = merged.get(tagged, 0) + n
    ordered = sorted(merged)
    return tuple(k for _, k in ordered), np.array([merged[t] for t in ordered], dtype=np.int64)


def key_candidates(
    kind: str, int_dtype: np.dtype[np.integer[Any]] | None, keys: Iterable[Key], *,
    as_bytes: Callable[[bytes], object] = bytes, zero_twins: bool = False,
) -> list[object]:  # fmt: skip
    """The values, in the column's type, that a row must hold to match one of the normalised ``keys``.

    A superset is enough (the grouped values are matched exactly afterwards); a key
    no value of the type can equal is left out. ``int_dtype`` is the numpy type of
    an integer column, ``as_bytes`` the backend's binary value, ``zero_twins`` adds
    ``-0.0`` beside ``0.0`` for a backend whose ``isin`` tells them apart.
    """
    out: list[object] = []
    for key in keys:
        if kind == "bool" and type(key) is bool:
            out.append(key)
        elif kind == "str" and type(key) is str:
            out.append(key)
        elif kind == "bytes" and type(key) is bytes:
            out.append(as_bytes(key))
        elif kind == "int" and type(key) is int and int_dtype is not None:
            info = np.iinfo(int_dtype)
            if info.min <= key <= info.max:
                out.append(key)
        elif kind == "float" and type(key) in (int, float):
            try:
                value = float(key)  # rounds a large int: a superset, matched exactly afterwards
            except OverflowError:
                continue  # an int beyond every float equals no float
            out.append(value)
            if zero_twins and value == 0.0:
                out.append(-0.0)
    return out
