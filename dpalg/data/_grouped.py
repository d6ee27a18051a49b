"""Grouped reductions: the reductions of every released group of a GROUP BY at once.

A :class:`GroupedRows` holds a dataset, each row's group code (from
:func:`~dpalg.data._groups.group_index`, after the per-user bound if any) and the
released groups in order. It answers, for all released groups in one pass over
the rows, the questions a row-level count, sum or mean asks
(:class:`~dpalg.data.Reductions`): row counts, counts of present values, and
exact fixed-point clipped sums. Each group's answer equals, bit for bit, what
:class:`~dpalg.data.NumpyReductions` answers on that group's rows
(``data.take(rows)``), the per-group path it replaces:

* a lattice term is computed row by row exactly as :func:`~dpalg.data.lattice_sum`
  computes it (scale by ``2**-k``, ``fmax``/``fmin`` at the same bounds ``a``,
  ``b``, ``rint`` ties to even; a missing value gives ``rint(a)``, subtracted
  afterwards), so every row's term is the same integer;
* the terms of a group are added exactly. With ``B`` the largest ``|term|``
  (public: the clip and the lattice step) and blocks of ``S = 2**20`` rows, a
  block's per-group float64 ``bincount`` is exact when ``S·B < 2**53`` (every
  partial sum is an integer below ``2**53``), and the blocks' sums are added in
  int64, which cannot overflow when ``n·B < 2**62``. Otherwise each term is
  shifted to ``u = t + B`` in ``[0, 2**53]`` and split into a 27-bit and a
  26-bit digit whose per-block sums are exact and whose totals fit int64 (for
  ``n < 2**36`` rows); the group totals are recombined as Python ints. The
  path depends only on the public bound and the number of rows, never on values;
* bounds beyond the fast range of :func:`~dpalg.data.lattice_sum` (``|L|`` or
  ``|U| > 2**52``, an extreme ``k``) run :func:`~dpalg.data.lattice_sum` on each
  group's rows.

A sum of integers is the same integer in any order and any partition, so the
answer is a function of each group's multiset of rows: the row order does not
matter. Polars-backed datasets are answered through their numpy columns
(``Dataset.numeric``): the values the per-group path reads (``take`` slices the
same converted column), so the answers are identical there too.

:func:`public_int_codes` gives each row's group for one integer key column and
public keys in O(n) (a table lookup), the answer of
:func:`~dpalg.data._groups.group_index` (which takes a sort of the column) for
that case.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._numpy_reductions import fast_lattice, inside_bounds, lattice_sum, lattice_terms
from dpalg.data._reductions import LatticeSum, SumSpec

__all__ = ["GroupedRows", "public_int_codes", "stable_group_order"]

#: rows per block of the grouped sums
GROUP_BLOCK: Final = 1 << 20
_EXACT_FLOAT: Final = 1 << 53
_INT64_SAFE: Final = 1 << 62
_LOW_BITS: Final = 27
#: the widest key range answered by a lookup table in :func:`public_int_codes`
_TABLE_LIMIT: Final = 1 << 22


def stable_group_order(codes: npt.NDArray[np.intp], n_codes: int) -> npt.NDArray[np.intp]:
    """The row indices sorted stably by code (codes in ``[-1, n_codes)``).

    The codes are sorted in the narrowest integer type that holds them (a public
    choice: ``n_codes``), so up to ``2**15 - 1`` groups numpy sorts by radix in O(n).

    Examples:
        >>> stable_group_order(np.array([1, -1, 0, 1, 0]), 2).tolist()
        [1, 2, 4, 0, 3]
    """
    small = codes.astype(np.int16) if n_codes < (1 << 15) else codes.astype(np.int32) if n_codes < (1 << 31) else codes
    return np.argsort(small, kind="stable").astype(np.intp, copy=False)


@final
class GroupedRows:
    """The rows of the released groups of a GROUP BY, and their reductions for all groups at once.

    Args:
        data: the dataset.
        codes: each row's group code in ``[-1, n_codes)`` (``-1``: in no group).
        n_codes: the number of group codes (public: the number of keys).
        groups: the released codes, in release order (each at most once).

    Examples:
        >>> from dpalg.data import as_dataset
        >>> g = GroupedRows(as_dataset({"x": [1.0, 2.5, None, 40.0, 3.0]}), np.array([0, 1, 1, -1, 0]), 2, [1, 0])
        >>> g.row_counts().tolist(), g.present_counts("x").tolist()
        ([2, 2], [1, 2])
        >>> [(s.total, s.count) for s in g.clipped_sums(SumSpec("x", Fraction(0), Fraction(10), 0))]
        [(2, 1), (4, 2)]
    """

    __slots__ = ("_counts", "_data", "_groups", "_missing_counts", "_order", "_pos", "_starts")

    def __init__(self, data: Dataset, codes: npt.NDArray[np.intp], n_codes: int, groups: Sequence[int]) -> None:
        wanted = np.asarray(list(groups), dtype=np.intp)
        if wanted.size and (int(wanted.min()) < 0 or int(wanted.max()) >= n_codes or np.unique(wanted).size != wanted.size):
            raise InvalidArgument("GroupedRows", "groups", len(groups), f"must be distinct codes in [0, {n_codes})")
        self._data = data
        self._groups = wanted
        c = np.asarray(codes, dtype=np.intp)
        if wanted.size == n_codes and np.array_equal(wanted, np.arange(n_codes)):
            self._pos = c + 1  # every code released in code order: position = code
        else:
            remap = np.zeros(n_codes + 1, dtype=np.intp)  # index 0: code -1, no released group
            remap[wanted + 1] = np.arange(1, wanted.size + 1, dtype=np.intp)
            self._pos = remap[c + 1]
        self._counts: npt.NDArray[np.int64] | None = None
        self._missing_counts: dict[str, npt.NDArray[np.int64]] = {}
        self._order: npt.NDArray[np.intp] | None = None
        self._starts: npt.NDArray[np.intp] | None = None

    @property
    def dataset(self) -> Dataset:
        """The whole dataset (rows of every group, and of none)."""
        return self._data

    @property
    def n_groups(self) -> int:
        """How many groups are released."""
        return int(self._groups.size)

    def __repr__(self) -> str:  # never prints values
        return f"GroupedRows({self.n_groups} groups of {self._data!r})"

    def _bincount(self, weights: npt.NDArray[np.float64] | None = None) -> npt.NDArray[np.float64] | npt.NDArray[np.intp]:
        return np.bincount(self._pos, weights=weights, minlength=self.n_groups + 1)[1:]

    def row_counts(self) -> npt.NDArray[np.int64]:
        """Each released group's number of rows (missing values included)."""
        if self._counts is None:
            self._counts = self._bincount().astype(np.int64)
        return self._counts

    def _missing(self, column: str, x: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Each released group's number of missing values of ``column`` (the same work whatever the values)."""
        found = self._missing_counts.get(column)
        if found is None:
            found = self._missing_counts[column] = self._bincount(weights=np.isnan(x).astype(np.float64)).astype(np.int64)
        return found

    def present_counts(self, column: str) -> npt.NDArray[np.int64]:
        """Each released group's number of present (not missing) values of a numeric column."""
        return self.row_counts() - self._missing(column, self._data.numeric(column))

    def clipped_sums(self, spec: SumSpec) -> list[LatticeSum]:
        """Each released group's exact fixed-point sum (``NumpyReductions(rows).clipped_sums([spec])[0]``, bit for bit)."""
        x = self._data.numeric(spec.column)
        lower, upper, k = spec.lower, spec.upper, spec.k
        if lower > upper:
            raise InvalidArgument("GroupedRows.clipped_sums", "lower", lower, f"must be <= upper={upper}")
        params = fast_lattice(lower, upper, k, *inside_bounds(lower, upper))  # the fast path of lattice_sum, the same terms
        if params is None:
            return [lattice_sum(x[rows], lower, upper, k) for rows in self._all_rows()]
        scale, a, b = params
        bound = max(abs(round(a)), abs(round(b)), 1)
        totals = self._term_sums(x, scale, a, b, bound)
        missing = self._missing(spec.column, x).tolist()
        counts = self.row_counts().tolist()
        term_a = int(round(a))  # each missing value added the term rint(a) = round(a) (a is an integer or a clip bound)
        return [LatticeSum(int(t) - m * term_a, c - m, k) for t, m, c in zip(totals, missing, counts)]

    def _term_sums(self, x: npt.NDArray[np.float64], scale: float, a: float, b: float, bound: int) -> list[int]:
        """Each group's exact sum of ``rint(clamp(x·scale, a, b))`` over all its rows (a missing value counts ``rint(a)``)."""
        n, g = int(x.size), self.n_groups
        one_float = GROUP_BLOCK * bound < _EXACT_FLOAT and n * bound < _INT64_SAFE
        acc = np.zeros((1 if one_float else 2, g), dtype=np.int64)
        buf = np.empty(min(GROUP_BLOCK, max(n, 1)), dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            for start in range(0, n, GROUP_BLOCK):
                block = x[start : start + GROUP_BLOCK]
                pos = self._pos[start : start + GROUP_BLOCK]
                out = buf[: block.size]
                lattice_terms(block, scale, a, b, out)  # NaN -> a (subtracted by the caller)
                if one_float:
                    acc[0] += np.bincount(pos, weights=out, minlength=g + 1)[1:].astype(np.int64)
                else:
                    u = out.astype(np.int64) + bound  # in [0, 2 * bound] <= 2**53
                    low = (u & ((1 << _LOW_BITS) - 1)).astype(np.float64)
                    high = (u >> _LOW_BITS).astype(np.float64)
                    acc[0] += np.bincount(pos, weights=low, minlength=g + 1)[1:].astype(np.int64)
                    acc[1] += np.bincount(pos, weights=high, minlength=g + 1)[1:].astype(np.int64)
        if one_float:
            return [int(v) for v in acc[0].tolist()]
        rows = self.row_counts().tolist()
        return [(hi << _LOW_BITS) + lo - r * bound for lo, hi, r in zip(acc[0].tolist(), acc[1].tolist(), rows)]

    def _ensure_order(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        if self._order is None or self._starts is None:
            self._order = stable_group_order(self._pos - 1, self.n_groups)
            self._starts = np.concatenate(([0], np.cumsum(np.bincount(self._pos, minlength=self.n_groups + 1)))).astype(np.intp)
        return self._order, self._starts

    def _all_rows(self) -> list[npt.NDArray[np.intp]]:
        order, starts = self._ensure_order()
        return [order[starts[i + 1] : starts[i + 2]] for i in range(self.n_groups)]

    def row_indices(self, i: int) -> npt.NDArray[np.intp]:
        """The row indices of the ``i``-th released group, ascending."""
        if not 0 <= i < self.n_groups:
            raise InvalidArgument("GroupedRows", "i", i, f"must be in [0, {self.n_groups})")
        order, starts = self._ensure_order()
        return order[starts[i + 1] : starts[i + 2]]

    def rows(self, i: int) -> Dataset:
        """The ``i``-th released group's rows as a dataset, in their original order (the per-group path)."""
        return self._data.take(self.row_indices(i))


def public_int_codes(
    column: npt.NDArray[np.generic], keys: Sequence[object], *, other: bool = False
) -> npt.NDArray[np.intp] | None:
    """Each row's index in a public key list, for an integer column: ``group_index``'s codes in O(n).

    Under the key policy the key of an integer value is that int; only the
    listed keys that are plain ints (not bool) can match it. With ``other``, a row
    whose key is not listed gets ``len(keys)``; otherwise ``-1`` (an integer
    column has no missing value).

    Returns ``None`` (use :func:`~dpalg.data._groups.group_index`) when the column
    is not of a signed integer dtype or an unsigned one narrower than 64 bits, or
    when the listed int keys span more than ``2**22`` values (both public).

    Examples:
        >>> public_int_codes(np.array([5, 3, 7, 5]), [5, "a", 3, 4.5]).tolist()
        [0, 2, -1, 0]
        >>> public_int_codes(np.array([5, 3, 7]), [5], other=True).tolist()
        [0, 1, 1]
    """
    arr = np.asarray(column)
    if arr.ndim != 1 or not (arr.dtype.kind == "i" or (arr.dtype.kind == "u" and arr.dtype.itemsize < 8)):
        return None
    info = np.iinfo(arr.dtype)
    listed = [(k, i) for i, k in enumerate(keys) if type(k) is int and info.min <= k <= info.max]
    unlisted = len(keys) if other else -1
    if not listed:
        return np.full(arr.shape[0], unlisted, dtype=np.intp)
    lo = min(k for k, _ in listed)
    hi = max(k for k, _ in listed)
    if hi - lo >= _TABLE_LIMIT:
        return None
    # table[j] is the code of the value lo - 1 + j: its ends stand for every value below lo and above hi
    table = np.full(hi - lo + 3, unlisted, dtype=np.intp)
    for k, i in reversed(listed):  # the first listing of a key wins, as in group_index
        table[k - lo + 1] = i
    if abs(lo - 1) <= 1 << 62:
        # |lo - 1| <= 2**62: a difference that wraps in int64 lands below 0 or above 2**62, never in the table,
        # so the clipped index still sends every value outside [lo, hi] to an end of the table
        return np.take(table, np.subtract(arr, lo - 1, dtype=np.int64), mode="clip")
    clipped = np.clip(arr, max(lo - 1, int(info.min)), min(hi + 1, int(info.max))).astype(np.int64)
    clipped -= lo  # in [-1, hi - lo + 1]: no overflow
    clipped += 1
    return np.take(table, clipped)
