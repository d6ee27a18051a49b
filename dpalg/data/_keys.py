"""Reading a column as keys or unit ids: the key half of the data policy.

The policy is documented once, in :mod:`dpalg.data._dataset` ("Keys and unit
ids"). This module implements it with one normalisation,
:func:`normalise_key`, one total order, :func:`key_order`, and vectorised
indexing (:func:`key_index`, :func:`key_codes`, :func:`key_counts`). Nothing here
raises because of a value, and nothing prints one.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._numeric import as_column, signed_inf
from dpalg.data._sorting import ordered_bits, sort_rows

__all__ = [
    "Key",
    "key_codes",
    "key_counts",
    "key_dtype_problem",
    "key_index",
    "key_order",
    "normalise_key",
]

#: a normalised key (or unit id): what a histogram releases and a unit is named by. A number is
#: held exactly: an ``int`` when integral, else a ``float`` when a float equals it exactly, else a
#: ``Fraction`` (never a rounded float: two distinct ids must stay two users)
Key: TypeAlias = bool | int | float | Fraction | str | bytes

#: a ``Decimal`` whose exact value needs more digits than this (its coefficient without trailing
#: zeros plus the magnitude of its exponent) is not read as a key: it is missing (never rounded). The
#: exact int or fraction of ``Decimal('1e999999999')`` would take gigabytes and minutes to build, and
#: a run time that one value can stretch is itself observable. Every float, every int64/uint64 and
#: every ``DECIMAL(38, s)`` value is far below the bound.
DECIMAL_DIGITS_LIMIT: Final = 10_000

# the rank of each kind of key in the total order: bool < number < str < bytes
_BOOL, _NUMBER, _STR, _BYTES = 0, 1, 2, 3


def key_dtype_problem(dtype: np.dtype[np.generic]) -> str | None:
    """Why a column of this dtype cannot hold keys or ids, or ``None`` if it can.

    Accepted: bool, integers, floats, str, bytes and ``object``. Refused:
    complex, dates and durations, structured dtypes.

    Examples:
        >>> key_dtype_problem(np.dtype("U3")) is None
        True
        >>> key_dtype_problem(np.dtype("datetime64[D]"))
        'has dtype datetime64[D]: keys and ids must be bool, int, float, str, bytes or object'
    """
    if dtype.kind in "biufUSO":
        return None
    return f"has dtype {dtype}: keys and ids must be bool, int, float, str, bytes or object"


def _float_key(x: float) -> Key | None:
    if x != x:
        return None
    return int(x) if x.is_integer() else x


def _exact_key(numerator: int, denominator: int) -> Key:
    """The canonical key of the rational ``numerator / denominator`` (``denominator > 0``).

    An int when integral; else the float that equals it exactly, if there is one
    (``Fraction(1, 2)`` is the key ``0.5``, as ``Decimal('0.5')`` and ``0.5`` are);
    else the reduced ``Fraction``. Equal values get equal keys of the same type,
    distinct values distinct keys: nothing is rounded.
    """
    if denominator == 1:
        return numerator
    exact = Fraction(numerator, denominator)
    if exact.denominator == 1:
        return exact.numerator
    d = exact.denominator
    if d & (d - 1) == 0:  # a float's fractional part has a power-of-two denominator
        try:
            as_float = numerator / denominator  # correctly rounded
        except OverflowError:
            return exact
        if as_float == exact:  # Python compares a float and a Fraction exactly
            return as_float
    return exact


def _decimal_key(value: Decimal) -> Key | None:
    """A ``Decimal`` as an exact key (NaN missing, ``±Infinity`` the float ``±inf``; see :data:`DECIMAL_DIGITS_LIMIT`)."""
    if value.is_nan():
        return None
    if value.is_infinite():
        return math.inf if value > 0 else -math.inf
    if value.is_zero():
        return 0
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite Decimal
    coefficient = "".join(map(str, digits)).rstrip("0")
    exponent += len(digits) - len(coefficient)
    if len(coefficient) + abs(exponent) > DECIMAL_DIGITS_LIMIT:
        return None
    numerator = int(coefficient) * (-1 if sign else 1)
    scale = int(10 ** abs(exponent))
    return numerator * scale if exponent >= 0 else _exact_key(numerator, scale)


def normalise_key(value: object) -> Key | None:
    """One value as a key, or ``None`` when it is missing.

    * ``None``, NaN (float, numpy, ``Decimal``), ``pd.NA`` and ``NaT`` are missing;
    * str and bytes (and their numpy scalars) are themselves;
    * bool and ``numpy.bool_`` stay bool: ``True`` is *not* the key ``1``;
    * numbers are read **exactly**, never through a rounding float: an integral
      int, float, ``Fraction``, ``Decimal`` or numpy number is that int (``1.0``
      and ``Decimal('1.00')`` are the key ``1``, as in Python, so an int column
      that pandas turned into floats because of a missing value still matches
      int keys; ``Decimal(2**53 + 1)`` is ``2**53 + 1``, not ``2**53``); a
      non-integral one is the float that equals it exactly when there is one
      (``Decimal('0.5')`` is ``0.5``), else its exact ``Fraction``
      (``Decimal('0.1')`` is ``Fraction(1, 10)``, not the float ``0.1``);
      ``±inf`` are floats;
    * a ``Decimal`` too long to read exactly in bounded time
      (:data:`DECIMAL_DIGITS_LIMIT`) and every other value (complex, dates,
      tuples, arbitrary objects) does not fit and is missing.

    Never raises.

    Examples:
        >>> [normalise_key(v) for v in (None, float("nan"), 2.0, 2.5, True, "a", 3j)]
        [None, None, 2, 2.5, True, 'a', None]
        >>> [normalise_key(Decimal(v)) for v in ("9007199254740993", "1.50", "0.1", "-0E+7")]
        [9007199254740993, 1.5, Fraction(1, 10), 0]
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is bytes:
        return value  # type: ignore[return-value]
    if kind is float:
        return _float_key(value)  # type: ignore[arg-type]
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return None
    try:
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, Decimal):
            return _decimal_key(value)
        if isinstance(value, numbers.Rational):  # Fraction and other exact rationals
            numerator, denominator = int(value.numerator), int(value.denominator)
            return _exact_key(numerator, denominator) if denominator > 0 else None
        if isinstance(value, (float, np.floating)):
            as_float = float(value)  # exact for float16/32/64 (a wider longdouble is checked below)
            if as_float != as_float:
                return None
            if isinstance(value, np.floating) and value.dtype.itemsize > 8 and not as_float == value:
                return _exact_key(*(int(part) for part in value.as_integer_ratio()))  # a longdouble no float holds
            return _float_key(as_float)
        if isinstance(value, numbers.Real):  # another real type: exactly when it can say its ratio, else as a float
            ratio = getattr(value, "as_integer_ratio", None)
            if callable(ratio):
                numerator, denominator = ratio()
                return _exact_key(int(numerator), int(denominator)) if int(denominator) > 0 else None
            with np.errstate(all="ignore"):
                try:
                    as_float = float(value)
                except OverflowError:
                    as_float = signed_inf(value)
            return _float_key(as_float) if isinstance(as_float, float) else None
    except Exception:  # noqa: BLE001 -- a value that cannot be read as a key is missing
        return None
    return None


def _tag(key: Key) -> int:
    kind = type(key)
    if kind is bool:
        return _BOOL
    if kind is str:
        return _STR
    if kind is bytes:
        return _BYTES
    return _NUMBER


def key_order(key: Key) -> tuple[int, Key]:
    """The sort key of the total order on keys: bool < numbers < str < bytes.

    Within a kind keys compare as Python values (ints, floats and Fractions
    exactly, as numbers: Python compares them without rounding, and NaN is never
    a key); across kinds the rank decides, so sorting never raises.

    Examples:
        >>> sorted(["b", 2, True, 1.5, b"x", "a"], key=key_order)
        [True, 1.5, 2, 'a', 'b', b'x']
        >>> sorted([0.1, Fraction(1, 10), 2**53 + 1, float(2**53)], key=key_order)
        [Fraction(1, 10), 0.1, 9007199254740992.0, 9007199254740993]
    """
    return (_tag(key), key)


def key_index(
    values: npt.ArrayLike, *, owner: str = "key_index", ordered: bool = True
) -> tuple[tuple[Key, ...], npt.NDArray[np.intp]]:
    """The distinct present keys of a column and, for every row, its key's index.

    Args:
        values: a 1-D column (any accepted key dtype, see :func:`key_dtype_problem`).
        owner: the caller's name for error messages.
        ordered: ``False`` when the caller reads the codes only as a grouping (which rows hold
            one key) and never their order: the keys may then come in any order (an object
            column of str or of bytes skips sorting its distinct keys), the grouping and the
            key of each row being the same.

    Returns:
        ``(keys, codes)``: the distinct keys in :func:`key_order` (``ordered=False``: in an
        unspecified order), and ``codes[i]`` the index of row i's key in ``keys``, or ``-1``
        when the row's key is missing. Numeric, str and bytes dtypes take one
        ``np.unique``; an ``object`` column one pass of :func:`normalise_key`.

    Raises:
        InvalidArgument: only for the dtype or shape (public schema).

    Examples:
        >>> keys, codes = key_index(np.array(["b", 1, None, True, 1.0, "b"], dtype=object))
        >>> keys, codes.tolist()
        ((True, 1, 'b'), [2, 1, -1, 0, 1, 2])
    """
    arr = as_column(values)
    if arr.ndim != 1:
        raise InvalidArgument(owner, "values", f"ndim={arr.ndim}", "must be 1-D")
    problem = key_dtype_problem(arr.dtype)
    if problem is not None:
        raise InvalidArgument(owner, "values", f"dtype={arr.dtype}", problem)
    n = arr.shape[0]
    codes = np.full(n, -1, dtype=np.intp)
    if n == 0:
        return (), codes
    if arr.dtype.kind in "iub":  # every row present, an int (or bool) its own key: no mask, no per-key call
        distinct, codes = int_key_index(arr)
        return tuple(distinct.tolist()), codes
    if arr.dtype != object:
        present: npt.NDArray[np.bool_] = ~np.isnan(arr) if arr.dtype.kind == "f" else np.ones(n, dtype=np.bool_)
        uniq, inverse = _unique_inverse(arr[present])
        # distinct floats, ints, strs or bytes stay distinct after normalisation (floats: 0.0 == -0.0 merged by unique)
        if arr.dtype.kind in "iub":  # an int (or bool) is its own key: no per-key call
            keys = tuple(uniq.tolist())
        else:
            keys = tuple(k for k in (normalise_key(v) for v in uniq.tolist()) if k is not None)
        codes[present] = inverse.reshape(-1)
        return keys, codes
    items = arr.tolist()
    kinds = set(map(type, items))
    if kinds == {str} or kinds == {bytes}:  # one kind, its own key: factorise at C speed, then sort the distinct keys
        return _factorise_one_kind(arr, items, ordered=ordered)
    seen: dict[tuple[int, Key], int] = {}
    raw = np.fromiter(
        (-1 if (k := normalise_key(v)) is None else seen.setdefault((_tag(k), k), len(seen)) for v in items),
        dtype=np.intp,
        count=n,
    )
    ranked = sorted(seen)  # (tag, key): the tag decides across kinds, so no comparison raises
    remap = np.empty(len(seen) + 1, dtype=np.intp)
    remap[-1] = -1
    for rank, tagged in enumerate(ranked):
        remap[seen[tagged]] = rank
    return tuple(k for _, k in ranked), remap[raw]


def int_key_index(values: npt.NDArray[np.generic]) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.intp]]:
    """:func:`key_index` of a 1-D int, uint or bool column (unchecked), the distinct keys as an array of its dtype.

    No row of such a column is missing, so every code is in ``[0, len(distinct))``; ``distinct[c]`` is
    ``key_index(values)[0][c]`` (sorted), without a Python object per key.

    Examples:
        >>> distinct, codes = int_key_index(np.array([7, -2, 7]))
        >>> distinct.tolist(), codes.tolist()
        ([-2, 7], [1, 0, 1])
    """
    return _unique_inverse(values)


def _unique_inverse(values: npt.NDArray[np.generic]) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.intp]]:
    """``np.unique(values, return_inverse=True)`` for a column without NaN.

    Bool, int and float (up to 64-bit) columns: one value sort of order-preserving
    bits (:func:`~dpalg.data._sorting.sort_rows`), not an argsort. The distinct
    values are sorted and the inverse is the same as numpy's (``-0.0`` and ``0.0``
    are one value; which of the two stands for it may differ, and both read as the
    key ``0``).
    """
    if values.dtype.kind in "iu" and values.shape[0]:
        low, high = int(values.min()), int(values.max())  # Python ints: exact for any 64-bit dtype
        span = high - low
        if span < max(values.shape[0], 1 << 16):  # dense ids (0 .. n-1 and the like): a table, no sort
            wide = values.astype(np.uint64 if values.dtype.kind == "u" else np.int64, copy=False)
            offsets = np.subtract(wide, wide.dtype.type(low)).astype(np.intp, copy=False)  # in [0, span]: exact (wrap-around)
            seen = np.zeros(span + 1, dtype=np.bool_)
            seen[offsets] = True
            rank = seen.astype(np.intp)
            np.cumsum(rank, out=rank)
            rank -= 1
            # the distinct values are low + the offsets seen, in order (exact: they lie in [low, high])
            distinct = (np.flatnonzero(seen) + low).astype(values.dtype) if high < 2**63 else np.flatnonzero(seen).astype(values.dtype) + values.dtype.type(low)
            return distinct, rank[offsets]
    bits = ordered_bits(values)
    if bits is None:
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.intp, copy=False)
    order, _, sorted_bits = sort_rows(None, bits)
    new = np.empty(order.shape[0], dtype=np.bool_)
    new[:1] = True
    np.not_equal(sorted_bits[1:], sorted_bits[:-1], out=new[1:])
    ranks = new.astype(np.intp)
    np.cumsum(ranks, out=ranks)
    ranks -= 1
    inverse = np.empty(order.shape[0], dtype=np.intp)
    inverse[order] = ranks
    return values[order[new]], inverse


def _factorise_one_kind(
    arr: npt.NDArray[np.generic], items: list[Key], *, ordered: bool = True
) -> tuple[tuple[Key, ...], npt.NDArray[np.intp]]:
    """Distinct keys (sorted) and codes of a column whose values are all str (or all bytes).

    With pandas already imported (the data came from a DataFrame), its hash-based
    ``factorize`` is used (or pyarrow's dictionary encoding, :func:`_arrow_factorise`,
    which gives the same codes); otherwise a dict. All give the same result: the keys
    in sorted order and each row's index among them. ``ordered=False`` (with pandas):
    the keys in the order they first occur, the codes ``factorize``'s -- the same
    grouping of the rows, without sorting the keys and renumbering the rows.
    """
    pd = sys.modules.get("pandas")
    if pd is not None:
        arrow = _arrow_factorise(arr, text=isinstance(items[0], str), ordered=ordered)
        perm: npt.NDArray[np.intp] | None = None
        if arrow is not None:
            found, first_codes, perm = arrow
        else:
            first_codes, first_keys = pd.factorize(arr, sort=False)
            found = first_keys.tolist()
        if not ordered:
            return tuple(found), np.asarray(first_codes, dtype=np.intp)
        if perm is None:
            perm = np.fromiter(sorted(range(len(found)), key=found.__getitem__), dtype=np.intp, count=len(found))
        remap = np.empty(len(found), dtype=np.intp)
        remap[perm] = np.arange(len(found), dtype=np.intp)  # distinct keys: their sorted order is unique
        return tuple(map(found.__getitem__, perm.tolist())), remap[np.asarray(first_codes, dtype=np.intp)]
    distinct = sorted(dict.fromkeys(items))  # one kind: str or bytes, totally ordered
    rank = {k: i for i, k in enumerate(distinct)}
    return tuple(distinct), np.fromiter(map(rank.__getitem__, items), dtype=np.intp, count=len(items))


def _arrow_factorise(
    arr: npt.NDArray[np.generic], *, text: bool, ordered: bool = True
) -> tuple[list[Key], npt.NDArray[np.intp], npt.NDArray[np.intp] | None] | None:
    """``pd.factorize(arr, sort=False)`` of a non-empty object column of str (or of bytes) by pyarrow, when it is imported.

    ``(found, codes, perm)``: the distinct values in order of first occurrence and each row's index
    among them, as ``factorize`` gives them, from a C dictionary encoding of UTF-8 (bytes: the
    bytes) instead of a hash table of Python objects, and ``perm`` the indices of ``found`` in
    sorted order (``None`` unless ``ordered``). Two strs are equal iff their UTF-8 encodings are, and UTF-8's byte order is the
    code point order Python compares strs by, so the grouping and the order are Python's.
    ``None`` when pyarrow is not imported or cannot hold the column (a str with a lone surrogate
    has no UTF-8 encoding): the caller then uses ``factorize``.

    Run time: a column holding a lone surrogate pays the failed conversion and then ``factorize``,
    so whether such a value exists shows in the time a release takes (about the old path's cost
    again). This is the same class of data-dependent time as the row choice's re-sort of the users
    with repeated rows; docs/architecture.md lists these.
    """
    pa = sys.modules.get("pyarrow")
    if pa is None:
        return None
    try:
        encoded = pa.array(arr, type=pa.large_string() if text else pa.large_binary()).dictionary_encode()
        if not isinstance(encoded, pa.DictionaryArray) or encoded.null_count or len(encoded) != arr.shape[0]:
            return None
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.intp)
        found: list[Key] = encoded.dictionary.to_pylist()
        perm = None
        if ordered:
            import pyarrow.compute as pc  # type: ignore[import-untyped]  # pyarrow is imported already

            perm = np.asarray(pc.array_sort_indices(encoded.dictionary).to_numpy(zero_copy_only=False), dtype=np.intp)
    except Exception:  # noqa: BLE001 -- arrow cannot hold this column (not UTF-8): factorize it instead
        return None
    return found, codes, perm


def key_codes(values: npt.ArrayLike, keys: Sequence[Key], *, owner: str = "key_codes") -> npt.NDArray[np.intp]:
    """For every row, the index of its key in the public list ``keys``, or ``-1``.

    ``-1`` means the row's key is missing or not listed. Keys match under
    :func:`normalise_key` (so ``True`` never matches ``1``, ``1.0`` matches ``1``).

    Examples:
        >>> key_codes(np.array([1, "a", None, True], dtype=object), ["a", 1]).tolist()
        [1, 0, -1, -1]
    """
    present, codes = key_index(values, owner=owner)
    wanted: dict[tuple[int, Key], int] = {}
    for i, key in enumerate(keys):
        norm = normalise_key(key)
        if norm is not None:
            wanted.setdefault((_tag(norm), norm), i)
    remap = np.array([wanted.get((_tag(k), k), -1) for k in present] + [-1], dtype=np.intp)
    return remap[codes]


def key_counts(values: npt.ArrayLike, keys: Sequence[Key], *, owner: str = "key_counts") -> npt.NDArray[np.int64]:
    """How many rows hold each key of the public list ``keys`` (missing rows count nowhere).

    Examples:
        >>> key_counts(np.array(["a", None, "b", "a", float("nan")], dtype=object), ["a", "b", "c"]).tolist()
        [2, 1, 0]
    """
    codes = key_codes(values, keys, owner=owner)
    return np.bincount(codes[codes >= 0], minlength=len(keys)).astype(np.int64)
