"""Exact lexicographic row orders from one value sort (numpy only).

``np.argsort`` of n 64-bit keys is several times slower than ``np.sort`` of n
64-bit *values* (the latter has vectorised kernels). :func:`sort_order` computes
the order ``np.lexsort((secondary, primary))`` -- rows by (primary code,
secondary key, row index) -- by sorting one packed word per row::

    primary code | top bits of the secondary key | row index

and then re-sorting exactly, by the full secondary key, the few runs whose rows
share a primary code and the kept top bits but not the whole key. The result is
the same permutation as the lexsort whatever the data (the packing is
order-preserving and the fix-up is exact); only the time depends on how many
runs need fixing. When the codes and row indices leave fewer than
:data:`MIN_KEY_BITS` bits for the key, the lexsort itself is used.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["MIN_KEY_BITS", "ordered_bits", "run_ranks", "sort_order", "sort_repeats", "sort_rows"]

#: fewer bits than this left for the secondary key: fall back to ``np.lexsort``
MIN_KEY_BITS: Final = 8

_U64 = np.uint64
_BLOCK: Final = 1 << 15  # words per block of the packing steps (256 KiB: they stay in the cache)
_SIGN: Final = _U64(1 << 63)


def ordered_bits(values: npt.NDArray[np.generic]) -> npt.NDArray[np.uint64] | None:
    """An order-preserving injective map of a bool, int or float (at most 64-bit) column to ``uint64``.

    ``a < b`` iff ``ordered_bits(a) < ordered_bits(b)`` and ``a == b`` iff the images are equal
    (floats: ``-0.0`` and ``0.0`` are one value; NaN must not occur). ``None`` for another dtype.

    Examples:
        >>> ordered_bits(np.array([-2, 3, 0])).argsort().tolist()
        [0, 2, 1]
        >>> b = ordered_bits(np.array([-1.5, -0.0, 0.0, 2.0, -np.inf]))
        >>> b.argsort(kind="stable").tolist(), bool(b[1] == b[2])
        ([4, 0, 1, 2, 3], True)
    """
    kind = values.dtype.kind
    if kind == "b" or kind == "u":
        return values.astype(np.uint64)
    if kind == "i":
        signed: npt.NDArray[np.uint64] = values.astype(np.int64).view(np.uint64) ^ _SIGN
        return signed
    if kind == "f" and values.dtype.itemsize <= 8:
        bits = (values.astype(np.float64) + 0.0).view(np.uint64)  # -0.0 + 0.0 is 0.0
        negative = (bits >> _U64(63)) == _U64(1)
        out: npt.NDArray[np.uint64] = np.where(negative, ~bits, bits | _SIGN)
        return out
    return None


def sort_order(primary: npt.NDArray[np.intp] | None, secondary: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
    """The row indices sorted by (primary, secondary, row index): ``np.lexsort((secondary, primary))``.

    Args:
        primary: non-negative integer codes per row, or ``None`` (sort by ``secondary`` only:
            then the result is ``np.argsort(secondary, kind="stable")``).
        secondary: a ``uint64`` key per row.

    Examples:
        >>> sec = np.array([5, 1, 5, 0, 1], dtype=np.uint64)
        >>> sort_order(np.array([1, 1, 0, 1, 1]), sec).tolist()
        [2, 3, 1, 4, 0]
        >>> sort_order(None, sec).tolist() == np.argsort(sec, kind="stable").tolist()
        True
    """
    return sort_rows(primary, secondary)[0]


def sort_rows(
    primary: npt.NDArray[np.intp] | None, secondary: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None, npt.NDArray[np.uint64]]:
    """:func:`sort_order` with the sorted columns: ``(order, primary[order], secondary[order])``.

    The sorted primary codes (``None`` without primary) are read off the packed words, not gathered.

    Examples:
        >>> order, p, s = sort_rows(np.array([1, 0, 1]), np.array([9, 4, 2], dtype=np.uint64))
        >>> order.tolist(), p.tolist(), s.tolist()
        ([1, 2, 0], [0, 1, 1], [4, 2, 9])
    """
    order, sorted_primary, keys, _ = _sort(primary, secondary, want_repeats=False)
    return order, sorted_primary, keys


def sort_repeats(
    primary: npt.NDArray[np.intp], secondary: npt.NDArray[np.uint64], *, full_range: bool = False
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint64], npt.NDArray[np.intp]]:
    """:func:`sort_rows` and the repeated rows: ``(order, primary[order], secondary[order], repeats)``.

    ``repeats`` are the positions ``p >= 1`` (increasing) of the sorted rows equal to the row
    before them in both keys. They are found among the rows sharing a packed word with the row
    before them (the sort's own check of the truncated keys), without a pass comparing every
    row with the next. ``full_range``: the keys are taken to span all of ``uint64`` (a keyed hash),
    so no pass finds their minimum and maximum; the result is the same, only the number of runs
    whose packed top bits tie may differ.

    Examples:
        >>> order, p, s, rep = sort_repeats(np.array([1, 0, 1, 1]), np.array([9, 4, 2, 9], dtype=np.uint64))
        >>> order.tolist(), p.tolist(), s.tolist(), rep.tolist()
        ([1, 2, 0, 3], [0, 1, 1, 1], [4, 2, 9, 9], [3])
    """
    order, sorted_primary, keys, repeats = _sort(primary, secondary, want_repeats=True, full_range=full_range)
    assert sorted_primary is not None and repeats is not None
    return order, sorted_primary, keys, repeats


def _equal_next(sorted_primary: npt.NDArray[np.intp] | None, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
    """The positions ``p >= 1`` whose sorted row equals the one before it (both keys compared)."""
    same = keys[1:] == keys[:-1]
    if sorted_primary is not None:
        same &= sorted_primary[1:] == sorted_primary[:-1]
    rep = np.flatnonzero(same)
    rep += 1
    return rep


def _sort(
    primary: npt.NDArray[np.intp] | None, secondary: npt.NDArray[np.uint64], *, want_repeats: bool, full_range: bool = False
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None, npt.NDArray[np.uint64], npt.NDArray[np.intp] | None]:
    """:func:`sort_rows`, and with ``want_repeats`` the repeats of :func:`sort_repeats` (else ``None``)."""
    n = secondary.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, None if primary is None else empty.copy(), np.zeros(0, dtype=np.uint64), empty.copy() if want_repeats else None
    row_bits = (n - 1).bit_length()
    code_bits = 0
    if primary is not None:
        code_bits = int(primary.max()).bit_length()
    key_bits = 64 - row_bits - code_bits
    if key_bits < MIN_KEY_BITS or (primary is not None and int(primary.min()) < 0):
        exact = np.lexsort((secondary,) if primary is None else (secondary, primary)).astype(np.intp)
        exact_primary, exact_keys = None if primary is None else primary[exact], secondary[exact]
        return exact, exact_primary, exact_keys, _equal_next(exact_primary, exact_keys) if want_repeats else None
    low = _U64(0) if full_range else secondary.min()
    span = (1 << 64) - 1 if full_range else int(secondary.max() - low)
    # (secondary - low) keeps the order; its top key_bits significant bits go above the row index
    drop = max(span.bit_length() - key_bits, 0)
    packed = np.empty(n, dtype=np.uint64)
    # built block by block (each block's steps stay in the cache; no full-length temporaries)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        block = packed[lo:hi]
        if full_range:  # low is 0: the key itself is shifted
            np.right_shift(secondary[lo:hi], _U64(drop), out=block)
        else:
            np.subtract(secondary[lo:hi], low, out=block)
            if drop:
                np.right_shift(block, _U64(drop), out=block)
        np.left_shift(block, _U64(row_bits), out=block)
        block |= np.arange(lo, hi, dtype=np.uint64)
        if primary is not None and code_bits:
            codes = primary[lo:hi].astype(np.uint64)
            np.left_shift(codes, _U64(row_bits + key_bits), out=codes)
            block |= codes
    packed.sort()
    order = np.empty(n, dtype=np.intp)
    sorted_primary: npt.NDArray[np.intp] | None = None
    if primary is not None:
        sorted_primary = np.zeros(n, dtype=np.intp) if not code_bits else np.empty(n, dtype=np.intp)
    row_mask, head_bits = _U64((1 << row_bits) - 1), _U64(row_bits)
    for lo in range(0, n, _BLOCK):
        block = packed[lo : lo + _BLOCK]
        np.bitwise_and(block, row_mask, out=order[lo : lo + _BLOCK], casting="unsafe")
        np.right_shift(block, head_bits, out=block)  # (primary, top): rows within one head are in row order
        if sorted_primary is not None and code_bits:
            np.right_shift(block, _U64(key_bits), out=sorted_primary[lo : lo + _BLOCK], casting="unsafe")
    head = packed
    if drop == 0:  # the whole key was packed: the sort is exact, and the key is read back
        exact_repeats = None
        if want_repeats:  # one head: one (primary, key)
            exact_repeats = np.flatnonzero(head[1:] == head[:-1])
            exact_repeats += 1
        if key_bits < 64:
            head &= _U64((1 << key_bits) - 1)
        head += low
        return order, sorted_primary, head, exact_repeats
    pairs = np.flatnonzero(head[1:] == head[:-1])  # rows pairs and pairs + 1 share a head
    del packed, head
    keys = secondary[order]
    mixed = keys[pairs] != keys[pairs + 1]
    if not np.any(mixed):
        # rows sharing a head share the primary code: equal keys make equal rows
        return order, sorted_primary, keys, pairs[~mixed] + 1 if want_repeats else None
    # runs of one head holding more than one secondary key: sort them exactly (stable: row order breaks ties).
    # A run is a block of consecutive pair positions; only the pairs are read, never a pass over every row.
    new_block = np.ones(pairs.shape[0], dtype=np.bool_)
    np.not_equal(pairs[1:], pairs[:-1] + 1, out=new_block[1:])
    block_of_pair = np.cumsum(new_block) - 1
    last_of_block = np.append(new_block[1:], True)
    runs = np.unique(block_of_pair[mixed])
    begin = pairs[new_block][runs]
    lengths = pairs[last_of_block][runs] + 2 - begin
    label = np.repeat(np.arange(runs.shape[0], dtype=np.intp), lengths)
    pos = np.arange(label.shape[0], dtype=np.intp) + np.repeat(begin - (np.cumsum(lengths) - lengths), lengths)
    fix = np.lexsort((keys[pos], label))
    order[pos] = order[pos][fix]
    keys[pos] = keys[pos][fix]
    # the re-sorted runs kept their heads: the pairs are the same positions, their keys read again
    return order, sorted_primary, keys, pairs[keys[pairs] == keys[pairs + 1]] + 1 if want_repeats else None


def run_ranks(new: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """Each position's offset from the start of its run; ``new`` marks where runs start (``new[0]`` must be set).

    Examples:
        >>> run_ranks(np.array([True, False, False, True, False])).tolist()
        [0, 1, 2, 0, 1]
    """
    n = new.shape[0]
    starts = np.flatnonzero(new)
    lengths = np.diff(starts, append=n)
    ranks: npt.NDArray[np.intp] = np.arange(n, dtype=np.intp) - np.repeat(starts, lengths)
    return ranks
