"""Exact per-user totals on a lattice, independent of row order and partitioning.

A per-user total computed as a float sum in row order depends on the order of
the rows and on how they are partitioned: a different order can change the
rounding of *other* users' totals, which breaks the unit-local argument of
every user-level mechanism and any distributed backend. Here every row is an
integer term (a multiple of the lattice step ``2**k``, rounded by the caller)
and each user's total is the exact integer sum of their terms.

:func:`per_unit_lattice_sums` does that in O(n) vectorised work whose amount
does not depend on the values (no data-dependent fast path: the run time reveals
nothing but the sizes). Each term ``t`` with ``|t| <= 2**62`` is shifted to
``u = t + 2**62`` in ``[0, 2**63]`` and split into digits of 21, 21 and 22 bits (the top one ``<= 2**21``); the digit
sums of one user are at most ``n·2**21 < 2**53`` for chunks of ``n < 2**30``
rows, so ``np.bincount``'s float64 accumulation is exact in any order. The digits
are carried and recombined in int64 as ``total = H·2**42 + R`` with
``0 <= R < 2**42``; ``|H| > 2**20`` proves the total is beyond ``±2**62`` and
hence beyond the clamp, otherwise ``H·2**42 + R`` fits in int64 and is clamped
exactly.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = ["TERM_LIMIT", "exact_int_total", "per_unit_lattice_sums"]

#: the largest |term| and |clamp bound| accepted, in lattice units
TERM_LIMIT: Final = 1 << 62
_CHUNK: Final = 1 << 30
_MASK21: Final = (1 << 21) - 1
_INT64_MAX: Final = (1 << 63) - 1


def _digit_sums(codes: npt.NDArray[np.intp], n_units: int, terms: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    sums = [np.zeros(n_units, dtype=np.int64) for _ in range(3)]
    for start in range(0, codes.size, _CHUNK):
        c = codes[start : start + _CHUNK]
        u = terms[start : start + _CHUNK].view(np.uint64) + np.uint64(TERM_LIMIT)  # wraps to t + 2**62 exactly
        digits = (u & np.uint64(_MASK21), (u >> np.uint64(21)) & np.uint64(_MASK21), u >> np.uint64(42))  # last <= 2**21
        for j, digit in enumerate(digits):
            sums[j] += np.bincount(c, weights=digit.astype(np.float64), minlength=n_units).astype(np.int64)
    return sums


def per_unit_lattice_sums(
    unit_codes: npt.NDArray[np.intp], n_units: int, terms: npt.NDArray[np.int64], lower: int, upper: int
) -> npt.NDArray[np.int64]:
    """Each unit's exact total of its integer terms, clamped to ``[lower, upper]``.

    Args:
        unit_codes: each row's unit in ``[0, n_units)``, or ``-1`` (no unit: ignored).
        n_units: the number of units; a unit without rows has total 0 (then clamped).
        terms: one int64 term per row, ``|term| <= 2**62``.
        lower: lower clamp, ``|lower| <= 2**62``.
        upper: upper clamp, ``lower <= upper <= 2**62``.

    Returns:
        One int64 per unit. Exact for every input: the result is a function of
        each unit's multiset of terms only (order, partitioning and other units
        never matter).

    Raises:
        InvalidArgument: shapes, bounds or a term out of range (checked on the
            public range only: a term beyond ``±2**62`` is a caller bug, and the
            message never shows a value).

    Examples:
        >>> per_unit_lattice_sums(np.array([0, 1, 0, -1]), 3, np.array([5, 7, -2, 100]), -10, 4).tolist()
        [3, 4, 0]
        >>> big = 2**62
        >>> per_unit_lattice_sums(np.array([0, 0, 0]), 1, np.array([big, big, -big]), -big, big).tolist()
        [4611686018427387904]
    """
    owner = "per_unit_lattice_sums"
    codes = np.asarray(unit_codes).astype(np.intp, copy=False)
    t = np.asarray(terms)
    if t.dtype != np.int64 or t.shape != codes.shape or codes.ndim != 1:
        raise InvalidArgument(owner, "terms", f"dtype={t.dtype}, shape={t.shape}", f"must be int64 with the shape of unit_codes {codes.shape}")
    if isinstance(n_units, bool) or not isinstance(n_units, int) or n_units < 0:
        raise InvalidArgument(owner, "n_units", n_units, "must be an int >= 0")
    for field, bound in (("lower", lower), ("upper", upper)):
        if isinstance(bound, bool) or not isinstance(bound, int) or abs(bound) > TERM_LIMIT:
            raise InvalidArgument(owner, field, bound, "must be an int with |bound| <= 2**62")
    if lower > upper:
        raise InvalidArgument(owner, "lower", lower, f"must be <= upper={upper}")
    keep = codes >= 0
    codes, t = codes[keep], t[keep]
    if t.size and (int(t.max()) > TERM_LIMIT or int(t.min()) < -TERM_LIMIT):
        raise InvalidArgument(owner, "terms", "(out of range)", "must satisfy |term| <= 2**62 (clamp rows first)")
    if codes.size and int(codes.max()) >= n_units:
        raise InvalidArgument(owner, "unit_codes", "(out of range)", f"must be < n_units={n_units}")
    s0, s1, s2 = _digit_sums(codes, n_units, t)
    count = np.bincount(codes, minlength=n_units).astype(np.int64)
    carry0 = s0 >> 21
    s1 = s1 + carry0
    carry1 = s1 >> 21
    rest = ((s1 & _MASK21) << 21) | (s0 & _MASK21)  # R in [0, 2**42)
    high = s2 + carry1 - (count << 20)  # total = high * 2**42 + R (the 2**62 offsets removed)
    inside = np.abs(high) <= (1 << 20)
    exact = np.where(inside, high, 0) * (1 << 42) + rest
    out = np.where(high > 0, upper, lower).astype(np.int64)
    out[inside] = np.clip(exact[inside], lower, upper)
    return out


def exact_int_total(terms: npt.NDArray[np.int64], bound: int) -> int:
    """The exact sum of int64 values with ``|v| <= bound``, never overflowing.

    The values are summed in int64 chunks short enough that no partial sum can
    overflow, and the chunk sums are added as Python integers; the amount of
    work depends only on the size and the public bound.

    Examples:
        >>> exact_int_total(np.array([2**62, 2**62, 2**62]), 2**62)
        13835058055282163712
    """
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
        raise InvalidArgument("exact_int_total", "bound", bound, "must be an int >= 0")
    arr = np.asarray(terms, dtype=np.int64)
    if arr.size == 0:
        return 0
    chunk = max(1, _INT64_MAX // max(bound, 1))
    if chunk >= arr.size:
        return int(np.sum(arr, dtype=np.int64))
    return sum(int(np.sum(arr[i : i + chunk], dtype=np.int64)) for i in range(0, arr.size, chunk))
