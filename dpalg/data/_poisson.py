"""Poisson sampling of privacy units: each unit kept independently, by a keyed PRF of its identity.

``Subsample(plan, rate=q)`` (:mod:`dpalg.graph._subsample`) keeps each unit (a row at
row level, a user with all their rows at user level) independently with probability
at most ``q``. The decision for a unit is

    keep  iff  PRF(secret, identity of the unit) < T,  T = floor(q · 2^64),

where the PRF is keyed BLAKE2b (RFC 7693; keyed BLAKE2 is a PRF under the standard
assumption on its compression function) with an 8-byte output read as an unsigned
64-bit word, and the secret is a fresh 256-bit key drawn from :mod:`dpalg.noise`
on every run (:func:`dpalg.noise.prf_secret`). With the PRF modelled as a random
function, distinct identities get independent uniform words, so each unit is kept
independently with probability exactly ``T / 2^64`` ≤ ``q`` (:func:`keep_probability`).

**The identity of a unit** is exact (never a truncated hash, so two units never
share a fate by a collision):

* a user: their id, as a normalised key (:func:`dpalg.data._keys.normalise_key`:
  ``1`` and ``1.0`` are one id, ``True`` is not ``1``); rows whose id is missing
  belong to no user and are never kept;
* a row: its values in the given columns (the columns the plan reads, in sorted
  order), each a normalised key (missing values -- None, NaN -- are one value), and
  its **occurrence number**: its rank (0, 1, 2, …) among the rows identical to it in
  those columns (:func:`~dpalg.data._row_choice.exact_occurrences`). Identical rows
  are interchangeable to the plan, so which of them carries which number does not
  matter, and adding a row adds exactly one fresh identity (the row with the
  number of its copies before) and leaves the others' identities as they were.

So the sample is **unit-local** (a unit's fate depends only on its identity and the
secret: adding or removing one unit changes no other unit's fate), independent of
the row order and of the partitioning, and bit-identical on every backend for a
seeded run. Each identity is encoded as length-prefixed, type-tagged bytes
(:func:`key_bytes`), so the encoding is injective.

What privacy needs of this (the amplification theorem's hypothesis): the fates of
the units of a dataset are independent Bernoulli draws with probability at most
``q``, independent of the plan's own randomness. That holds exactly for a random
function; with keyed BLAKE2b it holds up to the PRF's distinguishing advantage.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._keys import Key, key_index
from dpalg.data._row_choice import exact_occurrences

__all__ = ["key_bytes", "keep_probability", "keep_threshold", "poisson_rows", "row_words", "unit_words"]

_WORD_BITS: Final = 64
_PERSON: Final = b"dpalg-subsample"
_MISSING: Final = b"m" + (0).to_bytes(8, "little")


def keep_threshold(rate: Fraction) -> int:
    """``T = floor(rate · 2^64)``: a unit is kept iff its 64-bit word is below ``T``.

    Examples:
        >>> keep_threshold(Fraction(1, 2)) == 2**63
        True
        >>> keep_threshold(Fraction(1, 3)) == (2**64) // 3
        True
    """
    if not isinstance(rate, Fraction) or not 0 < rate < 1:
        raise InvalidArgument("keep_threshold", "rate", rate, "must be a Fraction in (0, 1)")
    return (rate.numerator << _WORD_BITS) // rate.denominator


def keep_probability(rate: Fraction) -> Fraction:
    """The exact probability that one unit is kept: ``floor(rate · 2^64) / 2^64`` (≤ ``rate``, within 2^-64 of it).

    Examples:
        >>> keep_probability(Fraction(1, 4))
        Fraction(1, 4)
        >>> Fraction(1, 3) - keep_probability(Fraction(1, 3)) < Fraction(1, 2**64)
        True
    """
    return Fraction(keep_threshold(rate), 1 << _WORD_BITS)


def _part(tag: bytes, payload: bytes) -> bytes:
    return tag + len(payload).to_bytes(8, "little") + payload


def _int_payload(x: int) -> bytes:
    return x.to_bytes(x.bit_length() // 8 + 1, "little", signed=True)


def key_bytes(key: Key | None) -> bytes:
    """An injective, type-tagged byte encoding of a normalised key (``None``: missing).

    Keys are normalised (:func:`dpalg.data._keys.normalise_key`) before they reach
    here, so an integral number is an ``int`` and equal keys have equal bytes.

    Examples:
        >>> key_bytes(1) == key_bytes(True), key_bytes(1) == key_bytes("1"), key_bytes(0.5)[:1]
        (False, False, b'f')
    """
    if key is None:
        return _MISSING
    if isinstance(key, bool):
        return _part(b"t", b"\x01" if key else b"\x00")
    if isinstance(key, int):
        return _part(b"i", _int_payload(key))
    if isinstance(key, float):
        return _part(b"f", struct.pack("<d", key + 0.0))
    if isinstance(key, Fraction):
        return _part(b"q", _part(b"n", _int_payload(key.numerator)) + _part(b"d", _int_payload(key.denominator)))
    if isinstance(key, str):
        return _part(b"s", key.encode("utf-8", "surrogatepass"))
    if isinstance(key, bytes):
        return _part(b"b", key)
    raise InvalidArgument("key_bytes", "key", type(key).__name__, "must be a normalised key (bool, int, float, Fraction, str, bytes) or None")


def _prf(secret: bytes, messages: Sequence[bytes]) -> npt.NDArray[np.uint64]:
    """Keyed BLAKE2b of each message, 8 bytes read as a little-endian unsigned word."""
    if not isinstance(secret, bytes) or not 32 <= len(secret) <= 64:
        size = len(secret) if isinstance(secret, bytes) else type(secret).__name__
        raise InvalidArgument("poisson sampling", "secret", size, "must be 32 to 64 bytes (dpalg.noise.prf_secret)")
    joined = b"".join(hashlib.blake2b(m, key=secret, digest_size=8, person=_PERSON).digest() for m in messages)
    return np.frombuffer(joined, dtype="<u8").astype(np.uint64)


def _column_parts(column: npt.ArrayLike, owner: str) -> tuple[list[bytes], npt.NDArray[np.intp]]:
    """The encoding of each distinct key of a column (the last entry: missing) and each row's index into it."""
    keys, codes = key_index(column, owner=owner)
    parts = [key_bytes(k) for k in keys]
    parts.append(_MISSING)
    return parts, codes  # code -1 picks the last entry: missing


def unit_words(ids: npt.ArrayLike, secret: bytes, *, owner: str = "Subsample") -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.intp]]:
    """One PRF word per distinct present id, and each row's index into them (``-1``: missing id).

    Examples:
        >>> words, codes = unit_words(np.array(["a", "b", None, "a"], dtype=object), bytes(32))
        >>> len(words), codes.tolist()
        (2, [0, 1, -1, 0])
    """
    parts, codes = _column_parts(ids, owner)
    return _prf(secret, parts[:-1]), codes


def row_words(data: Dataset, columns: Sequence[str], secret: bytes, *, owner: str = "Subsample") -> npt.NDArray[np.uint64]:
    """One PRF word per row: of its content over ``columns`` (in the order given) and its occurrence number.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> d = as_dataset({"a": np.array([1, 1, 2, 1])})
        >>> w = row_words(d, ["a"], bytes(32))
        >>> len(set(w.tolist()))  # the three rows a=1 are occurrences 0, 1, 2: three identities
        4
        >>> bool(np.all(row_words(as_dataset({"a": np.array([2, 1, 1, 1])}), ["a"], bytes(32)) == w[[2, 0, 1, 3]]))
        True
    """
    n = data.n_rows
    tables: list[list[bytes]] = []
    codes: list[npt.NDArray[np.intp]] = []
    for name in columns:
        parts, c = _column_parts(data.column(name), owner)
        tables.append(parts)
        codes.append(c)
    occurrences = exact_occurrences(codes, n).tolist()
    code_lists = [c.tolist() for c in codes]
    messages = [
        b"".join(table[code_list[i]] for table, code_list in zip(tables, code_lists)) + _part(b"o", int(occurrences[i]).to_bytes(8, "little"))
        for i in range(n)
    ]
    return _prf(secret, messages)


def poisson_rows(
    data: Dataset, secret: bytes, rate: Fraction, *, unit: str | None, columns: Sequence[str], owner: str = "Subsample",
) -> npt.NDArray[np.bool_]:
    """The mask of the rows kept by Poisson sampling of the units at ``rate`` (module docstring).

    Args:
        data: the dataset.
        secret: the PRF key (a fresh :func:`dpalg.noise.prf_secret` per run).
        rate: q in (0, 1); each unit is kept with probability :func:`keep_probability`.
        unit: the id column (user level: a user's rows are kept or dropped together;
            rows with a missing id are dropped), or ``None`` (row level).
        columns: at row level, the columns that make a row's content (sorted here).
        owner: the caller's name for error messages.
    """
    threshold = np.uint64(keep_threshold(rate))
    if unit is not None:
        words, codes = unit_words(data.column(unit), secret, owner=owner)
        keep_unit = np.append(words < threshold, False)  # index -1: missing id, never kept
        out: npt.NDArray[np.bool_] = keep_unit[codes]
        return out
    kept: npt.NDArray[np.bool_] = row_words(data, sorted(set(columns)), secret, owner=owner) < threshold
    return kept
