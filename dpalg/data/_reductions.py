"""The reductions seam (docs/architecture.md, "The reductions protocol"): the small, exact questions a mechanism asks of the data.

A mechanism's ``release`` never needs a whole column: it needs a count, an exact
fixed-point sum, the counts of a grid or of public keys, or a few order
statistics around a rank. :class:`Reductions` names those questions; every answer
is exact (an ``int``, or a small array whose size depends only on public
parameters and, for the order window, on the requested ranks). A backend
implements the protocol once: :class:`~dpalg.data.NumpyReductions` answers in one
block-wise pass with memory O(block) for sums and grid counts; the Spark and
Polars backends answer the same questions on executors (a Spark frame) or in
polars (a polars frame).

Windows and caps are **public**: a caller asks for the ranks it needs, computed
from public quantities (ε, δ, the clip, the lattice step), never from the data.

Semantics shared by every backend (the data policy, ``docs/data_policy.md``):

* a numeric column's missing values (None, NaN, anything that does not fit a
  float) are dropped before clipping; ``±inf`` are clipped like any value;
* clipping to ``[lower, upper]`` uses the floats nearest the exact bounds *from
  inside* (:func:`dpalg.queries.clip_inside`), so no clipped value leaves the exact
  range;
* a lattice term is ``round_half_even(clip(x) / 2**k)``, clamped to
  ``[floor(lower/2**k), ceil(upper/2**k)]``; sums of terms are exact Python ints,
  whatever the order or the partitioning of the rows;
* a :class:`SumSpec` with ``centre=c`` (and ``shift=s``) sums the *square terms*
  ``round_half_even((t - c)**2 / 2**s)`` of the lattice terms ``t`` instead, in units of
  ``2**(2k + s)``: integer arithmetic, exact (:mod:`dpalg.data._fixed_point`).

**Per-unit questions** (``per_unit_sums``, ``per_unit_row_counts``,
``per_unit_max``; the user-level mechanisms' only way to read rows). A unit is
one value of the id column under the key policy (:mod:`dpalg.data._user_units`:
a missing id is no unit, ``1`` and ``1.0`` are one unit, ``-0.0`` is ``0.0``); a
unit whose values are all missing still exists. The answers are those of
:func:`~dpalg.data.per_unit_sums`, :func:`~dpalg.data.per_unit_row_counts` and
:func:`~dpalg.data.per_unit_max` after ``np.clip(values, lower, upper)`` (the
*nearest*-float clip that the shifted inverse has always applied, not
``clip_inside``), with one difference: the entries are in **ascending order of
value**, not in the order of the ids, and a zero is ``+0.0``. Every consumer
(:class:`~dpalg.sensitivity.UserLoss`) depends only on the multiset of entries
(it sorts them); ascending order is the one canonical order every backend produces
cheaply (the driver sorts one number per unit, and never needs the ids, which
stay on the executors), so a seeded release is bit-identical across backends and
partitionings.

**Users' bounded totals** (``unit_total_sum``, ``unit_totals``; the user-level
Laplace/Gaussian count, sum and mean under ``ClipPerUser``, the count under
``MaxRowsPerUser``, :class:`~dpalg.mechanisms.AutoClipSum`). Each user's exact
lattice total of their kept rows, clamped (:mod:`dpalg.data._unit_totals`
defines it, with the numpy answer). ``unit_total_sum`` returns only the exact sum
of the clamped totals and the number of users; ``unit_totals`` one integer per
user (ascending), for a mechanism that needs each total.

**The rows users keep** (``kept_row_sum``; the user-level Laplace/Gaussian sum
and mean under ``Clip`` and ``MaxRowsPerUser`` without ``ClipPerUser``). The
row-level fixed-point sum of the rows each user keeps, and their number
(:func:`~dpalg.data._unit_totals.numpy_kept_row_sum`): the choice is made per user,
the sum is exact, so only the sum and the count are returned.

**A user-level histogram's counts** (``unit_key_counts``; the histograms under
``MaxKeysPerUser`` or ``MaxRowsPerUser``). Each key's count of the rows the users
keep under the caps (:func:`~dpalg.data._unit_totals.numpy_unit_key_counts`): the
choice is made per user, and only one count per key is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._keys import Key

if TYPE_CHECKING:
    from dpalg.data._grid_view import GridView
    from dpalg.data._unit_spec import KeptRowCellSpec, KeptRowSumSpec, UnitKeySpec, UnitTotals, UnitTotalSpec

__all__ = ["LatticeSum", "OrderWindow", "Reductions", "SumSpec"]


def _centre(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidArgument("SumSpec", "centre", value, "must be None or an int (lattice units)")
    return value


def _shift(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_SHIFT:
        raise InvalidArgument("SumSpec", "shift", value, f"must be an int in [0, {_MAX_SHIFT}]")
    return value


_MAX_SHIFT = 62


@attrs.frozen
class SumSpec:
    """One fixed-point sum to compute: ``column`` clipped to ``[lower, upper]`` on the lattice ``2**k``.

    With ``centre`` set (an integer, in units of ``2**k``) the sum is of the
    *square terms* ``round_half_even((t - centre)**2 / 2**shift)`` of the lattice
    terms ``t``, in units of ``2**(2k + shift)`` (the second moment of a
    variance); ``shift`` applies to square terms only. The default (``centre=None``,
    ``shift=0``) is the plain sum, so specs written before these fields existed are
    unchanged.

    Examples:
        >>> SumSpec("x", Fraction(0), Fraction(10), -2, centre=20, shift=3)
        SumSpec(column='x', lower=Fraction(0, 1), upper=Fraction(10, 1), k=-2, centre=20, shift=3)
    """

    column: str
    lower: Fraction
    upper: Fraction
    k: int
    centre: int | None = attrs.field(default=None, converter=_centre)
    shift: int = attrs.field(default=0, converter=_shift)

    def __attrs_post_init__(self) -> None:
        if self.centre is None and self.shift != 0:
            raise InvalidArgument("SumSpec", "shift", self.shift, "must be 0 unless centre is set (it scales square terms)")


@attrs.frozen
class LatticeSum:
    """The exact answer to a :class:`SumSpec`.

    Attributes:
        total: the exact sum of the lattice terms, in units of ``2**k`` (of the
            square terms, in units of ``2**(2k + shift)``, for a spec with ``centre``).
        count: how many values were present (not missing).
        k: the lattice exponent.
    """

    total: int
    count: int
    k: int


@attrs.frozen
class OrderWindow:
    """The sorted, clipped values at ranks ``first..first + len(values) - 1`` of ``n`` present values.

    ``first`` and the window's end are the requested ranks clamped to ``[0, n)``;
    ``values`` is empty when ``n == 0``.
    """

    n: int
    first: int
    values: npt.NDArray[np.float64] = attrs.field(eq=False)

    def at(self, rank: int) -> float:
        """The value at ``rank`` (which must lie inside the window)."""
        i = rank - self.first
        if not 0 <= i < self.values.size:
            raise IndexError(f"rank {rank} is outside the window [{self.first}, {self.first + self.values.size})")
        return float(self.values[i])


@runtime_checkable
class Reductions(Protocol):
    """What a mechanism may ask of the data. Every answer is exact and small.

    Implementations: :class:`~dpalg.data.NumpyReductions` (in memory); the
    Spark and Polars backends follow the same contract (``docs/reductions.md``).
    """

    @property
    def n_rows(self) -> int:
        """The number of rows (missing values included)."""
        ...

    def count(self, column: str) -> int:
        """How many values of a numeric column are present (not missing)."""
        ...

    def count_distinct(self, column: str) -> int:
        """How many distinct present values a numeric column holds."""
        ...

    def clipped_sums(self, specs: Sequence[SumSpec]) -> list[LatticeSum]:
        """Exact fixed-point sums, one per spec, with the count of present values."""
        ...

    def key_counts(self, column: str, keys: Sequence[Key]) -> npt.NDArray[np.int64]:
        """How many rows hold each public key (missing or unlisted keys count nowhere)."""
        ...

    def key_histogram(self, column: str) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        """The distinct present keys (normalised, in key order) and how many rows hold each."""
        ...

    def grid_counts(
        self, column: str, lower: Fraction, upper: Fraction, bits: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The occupied points ``j`` of the grid ``lower + (upper - lower)·j/2**bits`` (ascending) and their counts.

        A value goes to the grid point nearest its clipped value (the rounding of
        :class:`~dpalg.mechanisms.ExponentialQuantile`); missing values count nowhere.
        """
        ...

    def grid_view(self, column: str, lower: Fraction, upper: Fraction, bits: int) -> GridView:
        """The counts of :meth:`grid_counts`, to be asked in parts (:mod:`dpalg.data._grid_view`): the occupied cells near some ranks.

        The whole grid (a :class:`~dpalg.data._grid_view.CountedGrid`) where it is
        cheap; a backend whose answers cross a network counts blocks of cells first
        and the cells of a block when a question needs them. Raises what
        :meth:`grid_counts` raises.
        """
        ...

    def order_window(self, column: str, lower: Fraction, upper: Fraction, first: int, last: int) -> OrderWindow:
        """The sorted clipped values at ranks ``first..last`` (0-based, clamped to the present values)."""
        ...

    def extremes(self, column: str, lower: Fraction, upper: Fraction, k: int) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(n, smallest, largest)``: the ``min(k, n)`` smallest and largest clipped values, ascending."""
        ...

    def unit_count(self, unit: str) -> int:
        """How many distinct units (users) the id column holds (missing ids are no unit)."""
        ...

    def per_unit_sums(self, unit: str, column: str, lower: float | None, upper: float | None, k: int) -> npt.NDArray[np.float64]:
        """Each unit's exact fixed-point total of ``column`` (module docstring: ascending, one entry per unit).

        Row by row: a missing value is dropped; ``np.clip(x, lower, upper)`` (a
        ``None`` bound clips nothing on its side); clamp to ``±2**62·2**k``; the term
        ``rint(x·2**-k)`` (ties to even). A unit's total is the exact integer sum of
        its terms, clamped to ``[0, 2**62]`` and returned as ``ldexp(float(total), k)``:
        :func:`~dpalg.data.per_unit_sums`, bit for bit, whatever the row order or
        partitioning.

        Raises:
            InvalidArgument: an unknown column, a dtype that holds no numbers or
                ids, ``k`` outside ``[-1000, 900]``, a NaN bound or ``lower > upper``
                (never because of a value).
        """
        ...

    def per_unit_row_counts(self, unit: str, column: str | None) -> npt.NDArray[np.int64]:
        """Each unit's number of rows, or of present (not missing) numeric values of ``column``; ascending."""
        ...

    def unit_total_sum(self, spec: UnitTotalSpec, secret: bytes) -> UnitTotals:
        """``Σ_u`` of the users' clamped totals (exact) and the number of users (:mod:`dpalg.data._unit_totals`).

        ``secret`` keys the row choice under ``spec.max_rows`` (it is never shown).
        """
        ...

    def unit_totals(self, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
        """Each user's clamped total (:mod:`dpalg.data._unit_totals`), one per user, ascending."""
        ...

    def kept_row_sum(self, spec: KeptRowSumSpec, secret: bytes) -> LatticeSum:
        """The exact fixed-point sum of the rows the users keep under ``spec.max_rows``, and how many they keep.

        :func:`~dpalg.data._unit_totals.numpy_kept_row_sum` defines the answer
        (``total`` in units of ``2**spec.k``, ``count`` the kept rows). ``secret``
        keys the row choice.
        """
        ...

    def kept_row_cells(self, spec: KeptRowCellSpec, secret: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The grid points (ascending) of the rows the users keep under ``spec.max_rows``, and how many fall on each.

        :func:`~dpalg.data._unit_totals.numpy_kept_row_cells` defines the answer
        (a user-level quantile's grid under a row cap). ``secret`` keys the row choice.
        """
        ...

    def unit_key_counts(self, spec: UnitKeySpec, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
        """A user-level histogram's counts: each key's rows among the rows the users keep under the caps.

        :func:`~dpalg.data._unit_totals.numpy_unit_key_counts` defines the answer:
        ``(spec.keys, one count per listed key)``, or the present keys with a kept
        row (normalised, in key order) and their counts. ``secret`` keys the choice.
        """
        ...

    def per_unit_max(self, unit: str, column: str, lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
        """Each unit's largest ``np.clip(x, lower, upper)``, ascending (:func:`~dpalg.data.per_unit_max`).

        Missing values are dropped, ``+inf`` becomes the largest finite float, a
        unit without a present value gives ``-inf``, a zero is ``+0.0``.
        """
        ...
