"""The specs of the user-level reductions (:meth:`~dpalg.data.Reductions.unit_total_sum`, ``kept_row_sum``, ``unit_key_counts``) and an answer.

Kept apart from :mod:`dpalg.data._unit_totals` (the numpy answer) so that the reductions protocol can name
them without importing the implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import attrs

from dpalg._errors import InvalidArgument
from dpalg.data._fixed_point import inside_bounds
from dpalg.data._keys import Key
from dpalg.data._lattice_sums import TERM_LIMIT

__all__ = ["KeptRowCellSpec", "KeptRowSumSpec", "UnitKeySpec", "UnitTotalSpec", "UnitTotals"]


def _kind(value: str) -> Literal["count", "sum"]:
    if value == "count":
        return "count"
    if value == "sum":
        return "sum"
    raise InvalidArgument("UnitTotalSpec", "kind", value, "must be 'count' or 'sum'")


def _bound(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > TERM_LIMIT:
        raise InvalidArgument("UnitTotalSpec", "lower/upper", value, "must be an int with |bound| <= 2**62 (lattice units)")
    return value


def _lattice(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -1000 <= value <= 1000:
        raise InvalidArgument("UnitTotalSpec", "k", value, "must be an int in [-1000, 1000]")
    return value


def _cap(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidArgument("UnitTotalSpec", "max_rows", value, "must be None or an int >= 1")
    return value


@attrs.frozen
class UnitTotalSpec:
    """Each user's bounded total (module docstring): what the users' rows add up to, on the lattice ``2**k``.

    Attributes:
        unit: the id column.
        column: the value column (``None``: a count of rows).
        kind: ``"count"`` (each kept row is 1) or ``"sum"`` (each kept value's lattice term).
        k: the lattice exponent (0 for a count).
        lower, upper: the clamp of each user's total, in lattice units.
        row_lower, row_upper: the row clip of a sum (both or neither).
        max_rows: keep at most this many rows per user (the keyed choice), or ``None``.

    Examples:
        >>> UnitTotalSpec("uid", "x", "sum", -10, 0, 1024)
        UnitTotalSpec(unit='uid', column='x', kind='sum', k=-10, lower=0, upper=1024, row_lower=None, row_upper=None, max_rows=None)
    """

    unit: str
    column: str | None
    kind: Literal["count", "sum"] = attrs.field(converter=_kind)
    k: int = attrs.field(converter=_lattice)
    lower: int = attrs.field(converter=_bound)
    upper: int = attrs.field(converter=_bound)
    row_lower: Fraction | None = None
    row_upper: Fraction | None = None
    max_rows: int | None = attrs.field(default=None, converter=_cap)

    def __attrs_post_init__(self) -> None:
        if self.lower > self.upper:
            raise InvalidArgument("UnitTotalSpec", "lower", self.lower, f"must be <= upper={self.upper}")
        if self.kind == "sum" and self.column is None:
            raise InvalidArgument("UnitTotalSpec", "column", None, "a sum needs a value column")
        if (self.row_lower is None) != (self.row_upper is None):
            raise InvalidArgument("UnitTotalSpec", "row_lower", self.row_lower, "row_lower and row_upper go together")
        if self.row_lower is not None and self.row_upper is not None and self.row_lower > self.row_upper:
            raise InvalidArgument("UnitTotalSpec", "row_lower", self.row_lower, f"must be <= row_upper={self.row_upper}")

    @property
    def total_bound(self) -> int:
        """The largest ``|clamped total|`` (public): ``max(|lower|, |upper|)``."""
        return max(abs(self.lower), abs(self.upper))

    def row_clip(self) -> tuple[float, float, float, float] | None:
        """``(float(l), float(u), lo_in, hi_in)``: the nearest floats of the row clip, then the floats inside it."""
        if self.row_lower is None or self.row_upper is None:
            return None
        lo_in, hi_in = inside_bounds(self.row_lower, self.row_upper)
        return float(self.row_lower), float(self.row_upper), lo_in, hi_in


@attrs.frozen
class UnitTotals:
    """The answer of :meth:`~dpalg.data.Reductions.unit_total_sum`: ``Σ_u`` clamped total, and the number of users."""

    total: int
    units: int


def _row_cap(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("KeptRowSumSpec", "max_rows", value, "must be an int >= 1")
    return value


def _fraction(value: Fraction) -> Fraction:
    if not isinstance(value, Fraction):
        raise InvalidArgument("KeptRowSumSpec", "lower/upper", value, "must be a Fraction")
    return value


@attrs.frozen
class KeptRowSumSpec:
    """A user-level sum or mean capped by rows alone (``| Clip(l, u) | MaxRowsPerUser(r)``, no ``ClipPerUser``).

    The answer (:meth:`~dpalg.data.Reductions.kept_row_sum`, a
    :class:`~dpalg.data.LatticeSum`) is the row-level fixed-point sum of the rows
    the users keep: each user keeps ``max_rows`` of their rows whose id and value
    are present (the keyed choice of :func:`~dpalg.data.select_rows`), each kept
    value is clipped to ``[lower, upper]`` (the nearest floats, then the floats
    inside) and summed exactly on the lattice ``2**k``
    (:func:`~dpalg.data._fixed_point.exact_clipped_sum`); ``count`` is the number
    of kept rows.

    Examples:
        >>> KeptRowSumSpec("uid", "x", Fraction(0), Fraction(10), -20, 5)
        KeptRowSumSpec(unit='uid', column='x', lower=Fraction(0, 1), upper=Fraction(10, 1), k=-20, max_rows=5)
    """

    unit: str
    column: str
    lower: Fraction = attrs.field(converter=_fraction)
    upper: Fraction = attrs.field(converter=_fraction)
    k: int = attrs.field(converter=_lattice)
    max_rows: int = attrs.field(converter=_row_cap)

    def __attrs_post_init__(self) -> None:
        if self.lower > self.upper:
            raise InvalidArgument("KeptRowSumSpec", "lower", self.lower, f"must be <= upper={self.upper}")


def _grid_bits(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 62:
        raise InvalidArgument("KeptRowCellSpec", "bits", value, "must be an int in [1, 62]")
    return value


def _cell_candidates(value: Sequence[Fraction] | str | None) -> tuple[Fraction, ...] | Literal["integers"] | None:
    if value is None or value == "integers":
        return None if value is None else "integers"
    if isinstance(value, str) or not value:
        raise InvalidArgument("KeptRowCellSpec", "candidates", value, "must be None, 'integers' or a non-empty sequence of numbers")
    return tuple(Fraction(c) for c in value)


@attrs.frozen
class KeptRowCellSpec:
    """A user-level quantile's grid under a row cap alone (``| Clip(l, u) | MaxRowsPerUser(r)``, no ``ClipPerUser``).

    The answer (:meth:`~dpalg.data.Reductions.kept_row_cells`) is how many of the
    rows the users keep fall on each point of the grid of ``2**bits + 1`` points
    over ``[lower, upper]``: each user keeps ``max_rows`` of their rows whose id
    and value are present (the keyed choice of :func:`~dpalg.data.select_rows`),
    each kept value is clipped to ``[lower, upper]`` (the nearest floats, then the
    floats inside) and mapped to its grid index
    (:func:`~dpalg.data._unit_totals.numpy_kept_row_cells`).

    ``candidates`` puts another index in place of the grid point (``bits`` is then
    not read): ``"integers"``, the integer ``rint(x − lower)`` of the integer
    candidates ``lower..upper`` (both bounds integers); or the public candidates
    ``c_0 < … < c_{m−1}``, the slot ``2j + 1`` of a value equal to ``c_j`` and ``2j``
    of one strictly between ``c_{j−1}`` and ``c_j``
    (:func:`~dpalg.data._unit_totals.candidate_slots`): each candidate's counts
    below and above it are sums of slot counts. Every index is a function of the
    row alone, so the counts add up over any split of the users.

    Examples:
        >>> KeptRowCellSpec("uid", "x", Fraction(0), Fraction(10), 8, 5)
        KeptRowCellSpec(unit='uid', column='x', lower=Fraction(0, 1), upper=Fraction(10, 1), bits=8, max_rows=5, candidates=None)
        >>> ends = (Fraction(0), Fraction(10))
        >>> KeptRowCellSpec("uid", "x", *ends, 8, 5, candidates="integers").points, KeptRowCellSpec("uid", "x", *ends, 8, 5, candidates=(Fraction(1), Fraction(2))).points
        (11, 5)
    """

    unit: str
    column: str
    lower: Fraction = attrs.field(converter=_fraction)
    upper: Fraction = attrs.field(converter=_fraction)
    bits: int = attrs.field(converter=_grid_bits)
    max_rows: int = attrs.field(converter=_row_cap)
    candidates: tuple[Fraction, ...] | Literal["integers"] | None = attrs.field(default=None, converter=_cell_candidates)

    def __attrs_post_init__(self) -> None:
        if self.lower >= self.upper:
            raise InvalidArgument("KeptRowCellSpec", "lower", self.lower, f"must be < upper={self.upper}")
        if self.candidates == "integers" and (self.lower.denominator != 1 or self.upper.denominator != 1):
            raise InvalidArgument("KeptRowCellSpec", "candidates", "integers", f"needs integer bounds: [{self.lower}, {self.upper}]")
        if isinstance(self.candidates, tuple) and any(b <= a for a, b in zip(self.candidates, self.candidates[1:])):
            raise InvalidArgument("KeptRowCellSpec", "candidates", len(self.candidates), "must be strictly increasing")

    @property
    def points(self) -> int:
        """How many indices a kept row can fall on (public): the grid's ``2**bits + 1``, the integers', or ``2m + 1`` slots."""
        if self.candidates is None:
            return (1 << self.bits) + 1
        if self.candidates == "integers":
            return int(self.upper - self.lower) + 1
        return 2 * len(self.candidates) + 1


def _keys(value: Sequence[Key] | None) -> tuple[Key, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class UnitKeySpec:
    """A user-level histogram's counts (:meth:`~dpalg.data.Reductions.unit_key_counts`): the keys each user keeps.

    Attributes:
        unit: the id column.
        column: the key column.
        keys: the public keys (a row with a missing or unlisted key is never
            kept), or ``None``: the keys present in the column.
        max_rows: keep at most this many rows per user (the keyed row choice), or ``None``.
        max_keys, rows_per_key: keep at most ``max_keys`` keys per user, and
            ``rows_per_key`` rows of each (the keyed key choice), or both ``None``.

    Examples:
        >>> UnitKeySpec("uid", "c", ("a", "b"), max_keys=1, rows_per_key=1)
        UnitKeySpec(unit='uid', column='c', keys=('a', 'b'), max_rows=None, max_keys=1, rows_per_key=1)
    """

    unit: str
    column: str
    keys: tuple[Key, ...] | None = attrs.field(converter=_keys)
    max_rows: int | None = attrs.field(default=None, converter=_cap)
    max_keys: int | None = attrs.field(default=None)
    rows_per_key: int | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        for name in ("max_keys", "rows_per_key"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidArgument("UnitKeySpec", name, value, "must be None or an int >= 1")
        if (self.max_keys is None) != (self.rows_per_key is None):
            raise InvalidArgument("UnitKeySpec", "max_keys", self.max_keys, "max_keys and rows_per_key go together")

    def key_cap(self) -> tuple[int, int] | None:
        """``(max_keys, rows_per_key)``, or ``None`` without a key cap."""
        if self.max_keys is None or self.rows_per_key is None:
            return None
        return self.max_keys, self.rows_per_key
