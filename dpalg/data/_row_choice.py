"""Which rows a user keeps: keyed hashes and the per-user caps.

``MaxRowsPerUser(k)`` and ``MaxKeysPerUser(m)`` keep a bounded number of each
user's rows. The choice is made by a keyed hash (a pseudo-random function keyed
by a fresh secret drawn from :mod:`dpalg.noise` on every run) of the user, the
row's content and its occurrence number among the user's identical rows:

* it is a function of the secret and *that user's* multiset of rows only: the
  same whatever the row order, the partitioning, or the other users (adding or
  removing one user changes no other user's kept rows);
* it is unpredictable without the secret, so a user cannot steer which of
  their rows count, and it is unbiased with respect to row order.

**Privacy never depends on the hash.** Any choice of at most k rows per user
that depends only on that user's rows bounds the user's contribution by k rows,
whatever the key and however weak the mixing; a collision or a bad key could
only make the choice less uniform (utility). The mixing used here is the
64-bit finaliser of MurmurHash3 (``fmix64``) around xors with key words, on
numpy ``uint64`` arrays (wrap-around arithmetic, no Python loop over rows).

Identical rows of one user are interchangeable, so which of them carries which
occurrence number does not matter: the kept *multiset* is order independent.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._keys import Key, key_index, normalise_key
from dpalg.data._numeric import as_column
from dpalg.data._sorting import sort_repeats

__all__ = ["exact_occurrences", "keyed_hashes", "keyed_labels", "row_hashes", "select_keys", "select_rows", "select_many_rows", "select_unit_rows", "unit_hashes", "secret_words"]

_U64 = np.uint64
_C1: Final = _U64(0xFF51AFD7ED558CCD)
_C2: Final = _U64(0xC4CEB9FE1A85EC53)
_GOLD: Final = _U64(0x9E3779B97F4A7C15)
_S33: Final = _U64(33)
_TAGS: Final = {bool: 1, int: 2, float: 2, Fraction: 2, str: 3, bytes: 4}
_BLOCK: Final = 1 << 15  # words per block of the elementwise hash steps (256 KiB: the passes stay in the cache)
_SHORT: Final = 32  # longer keys get a keyed digest each, so no array is ever wider than 32 characters


def _fmix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """MurmurHash3's 64-bit finaliser on an array (a bijection of uint64; wrap-around multiply)."""
    arr = np.array(h, dtype=np.uint64, ndmin=1)
    out = _fmix_owned(arr)
    return out if np.ndim(h) else out.reshape(())


def _fmix_owned(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """:func:`_fmix` computed in place in ``h`` (an array the caller owns), with one scratch array.

    A long 1-D array is processed in blocks of :data:`_BLOCK` words, each of whose eight steps then
    reads and writes the cache, not memory (elementwise: the same result).
    """
    if h.ndim == 1 and h.shape[0] > _BLOCK:
        tmp = np.empty(_BLOCK, dtype=np.uint64)
        for lo in range(0, h.shape[0], _BLOCK):
            block = h[lo : lo + _BLOCK]
            _fmix_block(block, tmp[: block.shape[0]])
        return h
    return _fmix_block(h, np.empty_like(h))


def _fmix_block(h: npt.NDArray[np.uint64], tmp: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    np.right_shift(h, _S33, out=tmp)
    h ^= tmp
    h *= _C1
    np.right_shift(h, _S33, out=tmp)
    h ^= tmp
    h *= _C2
    np.right_shift(h, _S33, out=tmp)
    h ^= tmp
    return h


_C1_INV: Final = _U64(pow(0xFF51AFD7ED558CCD, -1, 1 << 64))
_C2_INV: Final = _U64(pow(0xC4CEB9FE1A85EC53, -1, 1 << 64))


def _unfmix_owned(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The inverse of :func:`_fmix_owned`, in place: ``_unfmix_owned(_fmix(x)) == x``.

    ``x ^= x >> 33`` is its own inverse (33 >= 32: the shifted bits never reach the shifted part),
    and a multiply by an odd constant is undone by a multiply by its inverse modulo 2**64.

    Examples:
        >>> x = np.array([0, 1, 2**64 - 1, 0x0123456789ABCDEF], dtype=np.uint64)
        >>> bool(np.all(_unfmix_owned(_fmix(x)) == x))
        True
    """
    tmp = np.empty(min(h.shape[0], _BLOCK), dtype=np.uint64)
    for lo in range(0, h.shape[0], _BLOCK):  # block by block, in the cache (elementwise: the same result)
        block = h[lo : lo + _BLOCK]
        scratch = tmp[: block.shape[0]]
        for constant in (_C2_INV, _C1_INV, None):
            np.right_shift(block, _S33, out=scratch)
            block ^= scratch
            if constant is not None:
                block *= constant
    return h


def secret_words(secret: bytes) -> npt.NDArray[np.uint64]:
    """The four 64-bit key words of a secret of at least 32 bytes (checked)."""
    return _words(secret)


def _words(secret: bytes) -> npt.NDArray[np.uint64]:
    if not isinstance(secret, bytes) or len(secret) < 32:
        raise InvalidArgument("keyed_hashes", "secret", f"{len(secret) if isinstance(secret, bytes) else type(secret).__name__}", "must be at least 32 bytes")
    return np.frombuffer(secret[:32], dtype=np.uint64).copy()


def _mix(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64] | np.uint64, key: np.uint64) -> npt.NDArray[np.uint64]:
    """A keyed combination of two hashes (order matters): ``_fmix(_fmix(a ^ key) * GOLD ^ b)``."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    h = np.empty(shape or (1,), dtype=np.uint64)
    if len(shape) == 1 and shape[0] > _BLOCK:  # block by block, in the cache (elementwise: the same result)
        tmp = np.empty(_BLOCK, dtype=np.uint64)
        a_arr, b_arr = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
        for lo in range(0, shape[0], _BLOCK):
            block = h[lo : lo + _BLOCK]
            scratch = tmp[: block.shape[0]]
            np.bitwise_xor(a_arr[lo : lo + _BLOCK], key, out=block, dtype=np.uint64)
            _fmix_block(block, scratch)
            block *= _GOLD
            np.bitwise_xor(block, b_arr[lo : lo + _BLOCK], out=block, dtype=np.uint64)
            _fmix_block(block, scratch)
        return h
    np.bitwise_xor(a, key, out=h.reshape(shape), dtype=np.uint64)
    h = _fmix_owned(h)
    h *= _GOLD
    h ^= b
    out = _fmix_owned(h)
    return out if shape else out.reshape(())


def _float_bits(key: Key) -> float | None:
    """A number key as the float that equals it exactly, or ``None`` when no float does (a big int, a Fraction)."""
    try:
        as_float = float(key)
    except OverflowError:
        return None
    return as_float if as_float == key else None


def _int_bytes(x: int) -> bytes:
    """An int's exact two's-complement bytes, length-prefixed (never its decimal text: no digit limit)."""
    raw = x.to_bytes(x.bit_length() // 8 + 1, "little", signed=True)
    return len(raw).to_bytes(8, "little") + raw


def _exact_number_bytes(key: int | Fraction) -> bytes:
    """An exact encoding of a number key no float holds (an int beyond 2**53, a Fraction): equal keys, equal bytes."""
    if isinstance(key, Fraction):
        return b"q" + _int_bytes(key.numerator) + _int_bytes(key.denominator)
    return b"i" + _int_bytes(int(key))


def _hash_short(text: list[str], lengths: npt.NDArray[np.int64], key: np.uint64) -> npt.NDArray[np.uint64]:
    """Keyed hashes of strings of at most ``_SHORT`` characters, one vectorised step per position.

    The code points are read off one UTF-32 buffer of all the strings (a lone surrogate is its own
    code point, as in a numpy ``str_`` array), at each string's offset plus the position.
    """
    if not text:
        return np.zeros(0, dtype=np.uint64)
    points = np.frombuffer("".join(text).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    offsets = np.cumsum(lengths)
    offsets -= lengths
    h = lengths.astype(np.uint64)
    step = np.empty_like(h)
    at = np.empty_like(offsets)
    for col in range(int(lengths.max(initial=0))):
        # positions past a key's own length are padding: they must not touch its hash, or a
        # longer key elsewhere in the column would change it
        np.bitwise_xor(h, key, out=step)
        _fmix_owned(step)
        np.add(offsets, col, out=at)
        np.minimum(at, points.shape[0] - 1, out=at)
        step ^= points[at]
        np.copyto(h, step, where=col < lengths)
    return h


def _hash_keys(keys: Sequence[Key], words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """One keyed hash per distinct normalised key, type-tagged (1 and "1" and True differ)."""
    out = np.zeros(len(keys), dtype=np.uint64)
    if not keys:
        return out
    all_str = set(map(type, keys)) == {str}
    if all_str:  # the common case, without a Python step per key
        tags = np.full(len(keys), _TAGS[str], dtype=np.uint64)
    else:
        tags = np.fromiter((_TAGS.get(type(k), 5) for k in keys), dtype=np.uint64, count=len(keys))
    numeric = np.flatnonzero(tags == 2)
    if numeric.size:
        # a number a float holds exactly: its float's bits (so the vectorised path of keyed_hashes agrees);
        # any other (an int beyond 2**53, a Fraction): a keyed digest of its exact bytes, never a rounded float
        exact = [_float_bits(keys[i]) for i in numeric.tolist()]
        floats = [j for j, f in enumerate(exact) if f is not None]
        vals = np.array([exact[j] for j in floats], dtype=np.float64) + 0.0  # -0.0 -> 0.0
        out[numeric[floats]] = vals.view(np.uint64)
        for j, f in enumerate(exact):
            if f is None:
                raw = _exact_number_bytes(keys[int(numeric[j])])  # type: ignore[arg-type]
                digest = hashlib.blake2b(raw, key=words.tobytes(), digest_size=8, person=b"dpalg-number").digest()
                out[numeric[j]] = np.frombuffer(digest, dtype=np.uint64)[0]
    others = np.flatnonzero((tags != 2) & (tags != 1))
    if others.size:
        if all_str:  # the keys are the text
            text: list[str] = list(keys)  # type: ignore[arg-type]
        else:
            text = [k if isinstance(k, str) else repr(k) for k in (keys[i] for i in others.tolist())]
        lengths = np.fromiter(map(len, text), dtype=np.int64, count=len(text))
        short = np.flatnonzero(lengths <= _SHORT)
        short_text = text if short.size == len(text) else [text[i] for i in short.tolist()]
        out[others[short]] = _hash_short(short_text, lengths[short], words[2])
        for i in np.flatnonzero(lengths > _SHORT).tolist():  # long keys: one keyed digest each (never a wide array)
            digest = hashlib.blake2b(text[i].encode("utf-8", "surrogatepass"), key=words.tobytes(), digest_size=8).digest()
            out[others[i]] = np.frombuffer(digest, dtype=np.uint64)[0]
    bools = np.flatnonzero(tags == 1)
    if bools.size:
        out[bools] = np.array([int(bool(keys[i])) for i in bools.tolist()], dtype=np.uint64)
    return _mix(out, tags, words[0])


def keyed_hashes(column: npt.ArrayLike, secret: bytes) -> npt.NDArray[np.uint64]:
    """One 64-bit keyed hash per row: a function of the secret and the row's normalised key only.

    Values follow the key policy (:func:`dpalg.data._keys.normalise_key`): ``1``
    and ``1.0`` hash alike, ``1``, ``"1"`` and ``True`` differ, ``-0.0`` is ``0.0``;
    numbers are hashed exactly (a number a float holds by that float's bits, any
    other -- an int beyond 2**53, a ``Fraction`` -- by a keyed digest of its exact
    value), so two distinct ids never share a hash by rounding;
    a missing value (None, NaN) hashes to a fixed keyed constant. Each distinct
    key is hashed once, vectorised.

    Examples:
        >>> h = keyed_hashes(np.array([1, 1.0, "1", None, True], dtype=object), bytes(32))
        >>> bool(h[0] == h[1]), bool(h[0] == h[2]), bool(h[0] == h[4])
        (True, False, False)
    """
    words = _words(secret)
    arr = as_column(column)
    if arr.ndim == 1 and (arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and arr.dtype.itemsize <= 8)):
        # numbers: hashed directly, vectorised (no sort); float16/32/64 and ints up to 2**53 are exact as float64
        n = arr.shape[0]
        h = np.empty(n, dtype=np.uint64)
        tag, any_missing = np.uint64(_TAGS[int]), False
        for lo in range(0, n, _BLOCK):  # block by block: the float copies stay in the cache
            with np.errstate(all="ignore"):
                vals = arr[lo : lo + _BLOCK].astype(np.float64)  # ints as floats (1 == 1.0, as the key policy)
                vals += 0.0  # -0.0 -> 0.0
            h[lo : lo + _BLOCK] = _mix(vals.view(np.uint64), tag, words[0])
            any_missing = any_missing or (arr.dtype.kind == "f" and bool(np.isnan(vals).any()))
        if any_missing:
            h[np.isnan(arr)] = _fmix(words[3:4] ^ _GOLD)[0]
        if arr.dtype.kind in "iu":  # an int beyond 2**53 may share a float with its neighbour: hashed exactly
            # 2**53 + 1 reads as 2**53: every int whose float is >= 2**53 in magnitude
            if arr.dtype.itemsize < 8:  # at most 2**32 in magnitude
                big = np.zeros(0, dtype=np.intp)
            elif arr.dtype.kind == "u":
                big = np.flatnonzero(arr >= np.uint64(2**53))
            else:
                big = np.flatnonzero((arr >= np.int64(2**53)) | (arr <= np.int64(-(2**53))))
            if big.size:
                keys, codes = key_index(arr[big], owner="keyed_hashes")
                h[big] = _hash_keys(keys, words)[codes]
        return h
    keys, codes = key_index(arr, owner="keyed_hashes")
    table = np.append(_hash_keys(keys, words), _fmix(words[3:4] ^ _GOLD))  # index -1: missing
    return table[codes]


def unit_hashes(
    ids: npt.ArrayLike, unit_codes: npt.NDArray[np.intp], n_units: int, secret: bytes, keys: Sequence[Key] | None = None
) -> npt.NDArray[np.uint64]:
    """:func:`keyed_hashes` of each unit's id, one per unit (``table[unit_codes[i]] == keyed_hashes(ids, secret)[i]``).

    ``unit_codes`` are the codes of :func:`dpalg.data.unit_index` of ``ids``: rows with
    one code hold one normalised id, and a keyed hash is a function of the normalised
    id only, so hashing one row of each unit gives every row's hash -- without
    reading the other rows' ids again (for an object column, a second factorisation).
    ``keys``, when given, are the units' normalised ids in code order (the keys of
    :func:`~dpalg.data.key_index` of ``ids``): for int, str, bytes and object ids they are
    hashed as they are, without finding a row of each unit.

    Examples:
        >>> from dpalg.data import unit_index
        >>> ids = np.array(["b", "a", "b", None], dtype=object)
        >>> n, codes = unit_index(ids)
        >>> table = unit_hashes(ids, codes, n, bytes(32))
        >>> bool(np.all(table[codes[:3]] == keyed_hashes(ids, bytes(32))[:3]))
        True
    """
    _check_codes("unit_hashes", unit_codes, n_units)
    arr = as_column(ids)
    if arr.shape != unit_codes.shape:
        raise InvalidArgument("unit_hashes", "ids", f"shape={arr.shape}", f"must match unit_codes {unit_codes.shape}")
    if keys is not None and len(keys) != n_units:
        raise InvalidArgument("unit_hashes", "keys", f"len={len(keys)}", f"must be n_units={n_units}")
    if keys is not None and arr.dtype.kind in "iu":  # the units' ids are the keys themselves (Python ints, exact)
        return keyed_hashes(np.array(keys, dtype=arr.dtype), secret)
    if keys is not None and arr.dtype.kind not in "bf":  # str, bytes, object: the keys are the normalised ids
        return _hash_keys(list(keys), _words(secret))
    rows = np.flatnonzero(unit_codes >= 0)
    first = np.zeros(n_units, dtype=np.intp)
    first[unit_codes[rows][::-1]] = rows[::-1]  # the first row of each unit (any row would do)
    if not n_units:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype.kind in "biuf":
        return keyed_hashes(arr[first], secret)
    # one present id per unit, all distinct: keyed_hashes without indexing them again
    present = arr[first].tolist()
    if set(map(type, present)) != {str}:  # a str is its own key: normalise only other ids
        present = [k for k in map(normalise_key, present) if k is not None]
    return _hash_keys(present, _words(secret))


def row_hashes(data: Dataset, columns: Sequence[str], secret: bytes) -> npt.NDArray[np.uint64]:
    """A keyed hash of each row's content over ``columns`` (in the given order).

    Examples:
        >>> from dpalg.data import as_dataset
        >>> d = as_dataset({"a": np.array([1, 1, 2]), "b": np.array(["x", "x", "x"], dtype=object)})
        >>> h = row_hashes(d, ["a", "b"], bytes(32))
        >>> bool(h[0] == h[1]), bool(h[0] == h[2])
        (True, False)
    """
    words = _words(secret)
    h = np.full(data.n_rows, words[1], dtype=np.uint64)
    for name in columns:
        h = _mix(h, keyed_hashes(data.column(name), secret), words[2])
    return h


def _check_codes(owner: str, unit_codes: npt.NDArray[np.intp], n_units: int, *per_row: npt.NDArray[np.generic]) -> None:
    for arr in per_row:
        if arr.shape != unit_codes.shape:
            raise InvalidArgument(owner, "arrays", f"shape={arr.shape}", f"must match unit_codes {unit_codes.shape}")
    if isinstance(n_units, bool) or not isinstance(n_units, int) or n_units < 0:
        raise InvalidArgument(owner, "n_units", n_units, "must be an int >= 0")


def _group_rank(keys: Sequence[npt.NDArray[np.generic]], groups: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Sort rows by ``keys`` (last key primary, np.lexsort) and rank them within runs equal in the first ``groups`` primary keys."""
    order = np.lexsort(tuple(keys))
    n = order.size
    if n == 0:
        return order, np.zeros(0, dtype=np.intp)
    primary = list(keys)[::-1][:groups]
    new = np.zeros(n, dtype=np.bool_)
    new[0] = True
    for key in primary:
        s = key[order]
        new[1:] |= s[1:] != s[:-1]
    starts = np.flatnonzero(new)
    run_start = starts[np.cumsum(new) - 1]
    return order, np.arange(n, dtype=np.intp) - run_start


def exact_occurrences(codes: Sequence[npt.NDArray[np.intp]], n_rows: int) -> npt.NDArray[np.int64]:
    """Each row's rank (0, 1, 2, …) among the rows equal to it in every code array; exact, no hash.

    ``codes[j][i]`` is an exact code of row i in column j (e.g. the index of its
    key from :func:`~dpalg.data.key_index`, ``-1`` for missing): rows are equal
    when all their codes are. Identical rows are interchangeable, so which of
    them gets which rank does not matter: the multiset of (row, rank) pairs is a
    function of the multiset of rows, and adding one row adds exactly one pair
    (the new row with rank = the number of its copies before). With no code
    array every row is equal to every other (ranks 0 .. n_rows - 1).

    Examples:
        >>> exact_occurrences([np.array([0, 1, 0, 0]), np.array([5, 5, 5, 6])], 4).tolist()
        [0, 0, 1, 0]
    """
    if not codes:
        return np.arange(n_rows, dtype=np.int64)
    for arr in codes:
        if arr.shape != (n_rows,):
            raise InvalidArgument("exact_occurrences", "codes", f"shape={arr.shape}", f"must be ({n_rows},)")
    order, rank = _group_rank(list(codes)[::-1], len(codes))  # the first array primary
    occ = np.empty(n_rows, dtype=np.int64)
    occ[order] = rank
    return occ


def keyed_labels(hashes: npt.NDArray[np.uint64], occurrences: npt.NDArray[np.int64], secret: bytes, m: int) -> npt.NDArray[np.int64]:
    """``PRF(secret, hash, occurrence) mod m`` per row: a label in ``[0, m)`` from the row's own hash and rank only.

    Vectorised; the same label on every backend for the same (hash, occurrence)
    (sample-and-aggregate's block labels, :mod:`dpalg.mechanisms.sample_aggregate`).

    Examples:
        >>> labels = keyed_labels(np.array([1, 1, 2], dtype=np.uint64), np.array([0, 0, 0]), bytes(32), 4)
        >>> bool(labels[0] == labels[1]), bool(np.all((labels >= 0) & (labels < 4)))
        (True, True)
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidArgument("keyed_labels", "m", m, "must be an int >= 1")
    words = _words(secret)
    mixed = _mix(np.asarray(hashes, dtype=np.uint64), np.asarray(occurrences).astype(np.uint64), words[3] ^ _GOLD)
    out: npt.NDArray[np.int64] = (mixed % _U64(m)).astype(np.int64)
    return out


def _unit_heads(unit_hash: npt.NDArray[np.uint64], key: np.uint64) -> npt.NDArray[np.uint64]:
    """The part of ``_mix(unit_hash, b, key)`` that does not read ``b``: ``_mix(a, b, key) == _fmix(head ^ b)``."""
    h = np.bitwise_xor(unit_hash, key, dtype=np.uint64)
    h = _fmix_owned(h)
    h *= _GOLD
    return h


def select_rows(
    unit_codes: npt.NDArray[np.intp],
    n_units: int,
    unit_hash: npt.NDArray[np.uint64],
    content_hash: npt.NDArray[np.uint64],
    max_rows: int,
    secret: bytes,
) -> npt.NDArray[np.bool_]:
    """Keep at most ``max_rows`` rows of each unit, chosen by a keyed hash.

    Args:
        unit_codes: every row's unit (``-1``: no unit; such a row is never kept).
        n_units: the number of units.
        unit_hash: per row, a keyed hash of its unit's id (:func:`keyed_hashes`).
        content_hash: per row, a keyed hash of its content (:func:`keyed_hashes`
            or :func:`row_hashes`).
        max_rows: the cap ``k >= 1``.
        secret: the key (at least 32 bytes; :func:`dpalg.noise.prf_secret`).

    Returns:
        The mask of kept rows. A row's priority is ``PRF(secret, unit, content,
        occurrence)``; each unit keeps its ``k`` lowest priorities (ties broken by
        content, then occurrence). The kept multiset of a unit is a function of the
        secret and that unit's multiset of rows only.

    Examples:
        >>> codes = np.array([0, 0, 0, 1, -1])
        >>> h = keyed_hashes(np.array(["a", "a", "a", "b", "c"], dtype=object), bytes(32))
        >>> c = keyed_hashes(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), bytes(32))
        >>> select_rows(codes, 2, h, c, 2, bytes(32)).astype(int).tolist().count(1)
        3
    """
    _check_codes("select_rows", unit_codes, n_units, unit_hash, content_hash)
    words = _words(secret)
    out = np.zeros(unit_codes.size, dtype=np.bool_)
    valid = unit_codes >= 0
    every = bool(np.all(valid))
    rows = np.arange(unit_codes.size, dtype=np.intp) if every else np.flatnonzero(valid)
    if rows.size == 0:
        return out
    units, content, hashes = (unit_codes, content_hash, unit_hash) if every else (unit_codes[rows], content_hash[rows], unit_hash[rows])
    kept = _select_by_priority(units, _unit_heads(hashes, words[0]), content, max_rows, words)
    out[rows[kept]] = True
    return out


def select_unit_rows(
    unit_codes: npt.NDArray[np.intp],
    n_units: int,
    unit_table: npt.NDArray[np.uint64],
    content_hash: npt.NDArray[np.uint64],
    max_rows: int,
    secret: bytes,
) -> npt.NDArray[np.bool_]:
    """:func:`select_rows` with one id hash per unit: ``unit_table[c]`` is the hash of unit ``c``'s id (:func:`unit_hashes`).

    The same mask as ``select_rows(unit_codes, n_units, unit_table[unit_codes], content_hash, ...)``:
    the part of the priority that reads the id alone is computed once per unit, not per row,
    and a unit with at most ``max_rows`` rows keeps them all without a hash being read.

    Examples:
        >>> codes = np.array([0, 0, 0, 1, -1])
        >>> table = unit_hashes(np.array(["a", "a", "a", "b", "c"], dtype=object), codes, 2, bytes(32))
        >>> c = keyed_hashes(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), bytes(32))
        >>> bool(np.all(select_unit_rows(codes, 2, table, c, 2, bytes(32)) == select_rows(codes, 2, table[codes], c, 2, bytes(32))))
        True
    """
    _check_codes("select_unit_rows", unit_codes, n_units, content_hash)
    if unit_table.shape != (n_units,):
        raise InvalidArgument("select_unit_rows", "unit_table", f"shape={unit_table.shape}", f"must be ({n_units},)")
    words = _words(secret)
    out = np.zeros(unit_codes.size, dtype=np.bool_)
    valid = unit_codes >= 0
    sizes = np.bincount(unit_codes[valid], minlength=n_units)
    big = sizes > max_rows  # a unit with at most max_rows rows keeps every row: no priority needed
    if not np.all(big):
        row_big = big[unit_codes] & valid  # code -1 reads the last unit: masked by valid
        out[valid & ~row_big] = True
        valid = row_big
    rows = np.flatnonzero(valid)
    if rows.size == 0:
        return out
    units = unit_codes if rows.size == unit_codes.size else unit_codes[rows]
    content = content_hash if rows.size == unit_codes.size else content_hash[rows]
    out[rows[select_many_rows(units, unit_table, content, max_rows, words)]] = True
    return out


def select_many_rows(
    units: npt.NDArray[np.intp],
    unit_table: npt.NDArray[np.uint64],
    content: npt.NDArray[np.uint64],
    max_rows: int,
    words: npt.NDArray[np.uint64],
) -> npt.NDArray[np.intp]:
    """The indices of the rows :func:`select_unit_rows` keeps, for rows whose units are known to be valid codes.

    Unchecked (the caller's arrays come from :func:`~dpalg.data.unit_index`): every code in
    ``[0, len(unit_table))``; ``words`` is the secret's key words. Rows of a unit with at most
    ``max_rows`` rows are kept like any other (the caller may drop such units first).
    """
    heads = _unit_heads(unit_table, words[0])[units]
    return _select_by_priority(units, heads, content, max_rows, words)


def _select_by_priority(
    units: npt.NDArray[np.intp],
    heads: npt.NDArray[np.uint64],
    content: npt.NDArray[np.uint64],
    max_rows: int,
    words: npt.NDArray[np.uint64],
) -> npt.NDArray[np.intp]:
    """The indices of the rows kept: each unit's ``max_rows`` rows of lowest priority (every unit code >= 0).

    The priority of a row is ``_mix(_mix(unit_hash, content, w0), occurrence, w1)``, its occurrence the
    row's rank, in row order, among the rows of its unit with its content hash; ``heads`` is
    :func:`_unit_heads` of the row's unit hash (``heads`` is consumed). One sort finds the occurrences
    and, for most rows, the order: for a fixed unit ``p1 = _mix(unit_hash, content, w0)`` and
    ``q = _mix(p1, 0, w1)`` are bijections of the content hash (``_fmix`` is a bijection, an xor and a
    multiply by an odd constant too), so sorting by (unit, q, row index) puts each unit's identical rows
    next to each other in row order -- their occurrence is their rank in that run, exactly the rank of
    a sort by (unit, content hash, row index) -- and a row whose occurrence is 0 has priority q.
    A repeated row's priority ``_fmix(h ^ occurrence)`` is computed from its q, whose
    ``h = _fmix^-1(q)`` is the part of ``_mix(p1, ., w1)`` before the occurrence is mixed in.
    Only the units holding a repeated row are sorted again, by their rows' priorities, and of them
    only the rows that can be kept: the first ``max_rows + c`` rows of a unit with ``c`` repeated rows
    (they hold its first ``max_rows`` distinct rows, already in priority order; a later distinct row
    has ``max_rows`` distinct rows of strictly lower priority) and its repeated rows beyond them.
    Equal priorities within a unit among those rows (a 64-bit tie) are broken by content, then
    occurrence, as in a lexsort of (unit, priority, content, occurrence, row index).
    """
    q = heads
    q ^= content
    q = _fmix_owned(q)  # p1 = _mix(unit_hash, content, w0)
    q ^= words[1]
    q = _fmix_owned(q)
    q *= _GOLD
    q = _fmix_owned(q)  # _mix(p1, 0, w1): the priority of a row whose occurrence is 0
    # again: the rows identical (in unit and content hash) to the one before them, in runs of
    # consecutive positions after their first copy
    order, sorted_units, sorted_q, again = sort_repeats(units, q, full_range=True)
    del q
    n = order.size
    starts = np.empty(n, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(sorted_units[1:], sorted_units[:-1], out=starts[1:])
    if again.size == 0:  # every occurrence is 0: q is the priority, distinct within a unit
        return order[_run_heads(*_runs(starts), max_rows)]
    block = np.ones(again.size, dtype=np.bool_)
    np.not_equal(again[1:], again[:-1] + 1, out=block[1:])
    occ_again = np.where(block, again, 0)
    np.maximum.accumulate(occ_again, out=occ_again)
    np.subtract(again + 1, occ_again, out=occ_again)  # the rank within the run of identical rows
    g = _unfmix_owned(sorted_q[again])  # _fmix(p1 ^ w1) * GOLD, read back from q (no gather of p1)
    g ^= occ_again.view(np.uint64)
    priority = sorted_q  # rows in the first sort's order; a repeated row's priority replaces its q
    priority[again] = _fmix_owned(g)  # _mix(p1, occ, w1)
    del g
    # re-sort the units holding a repeated row ("touched"), only their rows that can be kept: a unit's
    # distinct rows are in priority order, so its j-th distinct row lies at most j + c rows into the
    # unit (c: the unit's repeated rows) -- the first max_rows + c rows hold every distinct row that
    # can be kept (a later one has max_rows distinct rows strictly below it), the repeated rows beyond
    # them are added
    unit_starts, lengths = _runs(starts)
    run_of_again = np.searchsorted(unit_starts, again, side="right") - 1
    take = np.bincount(run_of_again, minlength=unit_starts.size)  # repeated rows per unit
    touched = take > 0
    kept_first = order[_run_heads(unit_starts[~touched], lengths[~touched], max_rows)]
    take += max_rows
    np.minimum(take, lengths, out=take)
    beyond = again[again - unit_starts[run_of_again] >= take[run_of_again]]
    pos = np.concatenate((_run_heads(unit_starts[touched], take[touched], n), beyond))
    del take, run_of_again
    order2, units2, _, ties = sort_repeats(sorted_units[pos], priority[pos], full_range=True)
    if ties.size:  # two rows of one unit with one priority
        occ = np.zeros(n, dtype=np.int64)
        occ[again] = occ_again
        return _tie_break(units, content, order, occ, priority, max_rows)
    starts2 = np.empty(order2.size, dtype=np.bool_)
    starts2[:1] = True
    np.not_equal(units2[1:], units2[:-1], out=starts2[1:])
    kept_again = order[pos[order2[_run_heads(*_runs(starts2), max_rows)]]]
    return np.concatenate((kept_first, kept_again))


def _run_heads(first: npt.NDArray[np.intp], lengths: npt.NDArray[np.intp], k: int | npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The positions of the first ``k`` rows of each run (runs begin at ``first``, of ``lengths`` rows; ``k`` one per run or for all).

    Examples:
        >>> _run_heads(np.array([0, 3, 4]), np.array([3, 1, 2]), 2).tolist()
        [0, 1, 3, 4, 5]
    """
    take = np.minimum(lengths, k)
    offsets = np.cumsum(take)
    offsets -= take
    pos = np.repeat(first - offsets, take)
    pos += np.arange(pos.shape[0], dtype=np.intp)
    return pos


def _runs(starts: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Where the runs begin (``starts`` marks them; ``starts[0]`` set) and their lengths."""
    first = np.flatnonzero(starts)
    return first, np.diff(first, append=starts.shape[0])


def _tie_break(
    units: npt.NDArray[np.intp],
    content: npt.NDArray[np.uint64],
    order: npt.NDArray[np.intp],
    sorted_occ: npt.NDArray[np.intp],
    sorted_priority: npt.NDArray[np.uint64],
    max_rows: int,
) -> npt.NDArray[np.intp]:
    """Two rows of one unit share a 64-bit priority: rank by (unit, priority, content, occurrence, row index)."""
    occ = np.empty(units.size, dtype=np.int64)
    occ[order] = sorted_occ
    priority = np.empty(units.size, dtype=np.uint64)
    priority[order] = sorted_priority
    order2, rank = _group_rank([occ, content, priority, units], 1)
    kept: npt.NDArray[np.intp] = order2[rank < max_rows]
    return kept


def select_keys(
    unit_codes: npt.NDArray[np.intp],
    n_units: int,
    unit_hash: npt.NDArray[np.uint64],
    key_codes: npt.NDArray[np.intp],
    key_hash: npt.NDArray[np.uint64],
    max_keys: int,
    rows_per_key: int,
    secret: bytes,
) -> npt.NDArray[np.bool_]:
    """Keep at most ``max_keys`` keys per unit and ``rows_per_key`` rows in each.

    A unit's keys are ranked by ``PRF(secret, unit, key)`` (ties by key hash, then
    key); the lowest ``max_keys`` are kept, with their first ``rows_per_key`` rows
    (the rows of one unit and key are identical in the key, so any of them will
    do). Rows with a missing unit or key (code ``-1``) are never kept.

    Examples:
        >>> units = np.array([0, 0, 0, 0])
        >>> keys = np.array([0, 1, 1, 2])
        >>> uh = keyed_hashes(np.array(["u"] * 4, dtype=object), bytes(32))
        >>> kh = keyed_hashes(keys, bytes(32))
        >>> int(select_keys(units, 1, uh, keys, kh, 2, 1, bytes(32)).sum())
        2
    """
    _check_codes("select_keys", unit_codes, n_units, unit_hash, key_codes, key_hash)
    words = _words(secret)
    out = np.zeros(unit_codes.size, dtype=np.bool_)
    rows = np.flatnonzero((unit_codes >= 0) & (key_codes >= 0))
    if rows.size == 0:
        return out
    units, keys, khash = unit_codes[rows], key_codes[rows], key_hash[rows]
    priority = _mix(unit_hash[rows], khash, words[2])
    order, occ = _group_rank([keys, khash, priority, units], 4)  # rank among the rows of one (unit, key)
    first = np.zeros(rows.size, dtype=np.bool_)
    first[order[occ == 0]] = True
    # rank the unit's distinct keys: first rows of each (unit, key), in priority order
    heads = np.flatnonzero(first)
    horder, krank = _group_rank([keys[heads], khash[heads], priority[heads], units[heads]], 1)
    pair_rank = np.empty(heads.size, dtype=np.intp)
    pair_rank[horder] = krank
    head_rank = np.empty(rows.size, dtype=np.intp)
    head_rank[heads] = pair_rank
    # every row inherits the rank of its (unit, key): runs are contiguous in the sorted order
    run_id = np.cumsum(first[order]) - 1
    sorted_heads = order[first[order]]
    key_rank = np.empty(rows.size, dtype=np.intp)
    key_rank[order] = head_rank[sorted_heads[run_id]]
    occ_row = np.empty(rows.size, dtype=np.intp)
    occ_row[order] = occ
    keep = (occ_row < rows_per_key) & (key_rank < max_keys)
    out[rows[keep]] = True
    return out
