"""User-level reductions: per-unit contributions, the only way user-level code reads rows.

A *unit* is one user: every row that shares one value of the id column. The
neighbouring relation is **add or remove one user with all their rows**. Each
reduction here maps the rows to one small number (or one set) per unit, and the
entry of a unit is computed from that unit's own rows only. Adding or removing
a user therefore adds or removes exactly one entry and leaves all other entries
bit-for-bit unchanged; the loss functions of :mod:`dpalg.sensitivity._down`
rely on this (DESIGN §5: a distributed backend reimplements these reductions,
nothing above ``data/`` changes).

Missing-data and sign policy (on top of :mod:`dpalg.data._dataset`):

* **ids**: a missing id (``None`` or ``NaN``) raises :class:`InvalidArgument`;
  it is a schema error, and the message names the column role, never a value;
* **NaN / None values** mean "no value": the row is dropped, its user still
  exists (contributes 0 to a sum, nothing to a max or a value set);
* **negative values in a sum** are clipped to 0 *row by row* before summing.
  This makes the user sum monotone (removing users never increases it), which
  the shifted inverse mechanism needs (seed 004, Eq. 3). It is a row-local
  transformation, so it costs no privacy; raising an error instead would reveal
  that some row is negative. Clip the column yourself first if you want a
  different policy;
* **+inf** in a sum or a max becomes the largest finite float64, and a user total
  that overflows is clamped to it too, so every entry is finite; ``-inf`` in a
  max means "below everything" and behaves like a user without values.

Units are ordered by sorted id (``np.unique``); nothing here draws randomness or
prints data.

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. ACM CCS 2022.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = [
    "per_unit_max",
    "per_unit_row_counts",
    "per_unit_sums",
    "per_unit_value_sets",
    "unit_count",
    "unit_inverse",
]

_FMAX: Final = float(np.finfo(np.float64).max)


def _one_d(values: npt.ArrayLike, owner: str, field: str) -> npt.NDArray[np.generic]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidArgument(owner, field, f"<array ndim={arr.ndim}>", "must be 1-D")
    return arr


def _is_missing(arr: npt.NDArray[np.generic]) -> npt.NDArray[np.bool_]:
    if arr.dtype == object:
        return np.fromiter(
            (v is None or (isinstance(v, float) and v != v) for v in arr.tolist()), dtype=np.bool_, count=arr.shape[0]
        )
    if np.issubdtype(arr.dtype, np.floating):
        out: npt.NDArray[np.bool_] = np.isnan(arr)
        return out
    return np.zeros(arr.shape[0], dtype=np.bool_)


def _floats(values: npt.ArrayLike, owner: str, n_rows: int) -> npt.NDArray[np.float64]:
    arr = _one_d(values, owner, "values")
    if arr.shape[0] != n_rows:
        raise InvalidArgument(owner, "values", f"<length {arr.shape[0]}>", f"must have the length of ids ({n_rows})")
    if arr.dtype == object:
        try:
            return np.array([np.nan if v is None else float(v) for v in arr.tolist()], dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgument(owner, "values", f"<dtype {arr.dtype}>", "must hold numbers or None") from None
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise InvalidArgument(owner, "values", f"<dtype {arr.dtype}>", "must be numeric")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InvalidArgument(owner, "values", f"<dtype {arr.dtype}>", "must be real")
    return arr.astype(np.float64, copy=False)


def unit_inverse(ids: npt.ArrayLike, *, owner: str = "unit_inverse") -> tuple[int, npt.NDArray[np.intp]]:
    """The number of units and the unit index of every row.

    Args:
        ids: the id column, one entry per row (any mutually comparable dtype).
        owner: the caller's name for error messages.

    Returns:
        ``(n_units, inverse)`` where row ``i`` belongs to unit ``inverse[i]``,
        ``0 <= inverse[i] < n_units``; units are numbered in sorted id order.

    Raises:
        InvalidArgument: if ``ids`` is not 1-D, has a missing id or mixes
            incomparable types.

    Examples:
        >>> n, inv = unit_inverse(["b", "a", "b"])
        >>> n, inv.tolist()
        (2, [1, 0, 1])
    """
    arr = _one_d(ids, owner, "ids")
    if arr.shape[0] == 0:
        return 0, np.zeros(0, dtype=np.intp)
    if bool(_is_missing(arr).any()):
        raise InvalidArgument(owner, "ids", "<missing id>", "must not contain None or NaN (every row needs a user)")
    try:
        uniq, inverse = np.unique(arr, return_inverse=True)
    except TypeError:
        raise InvalidArgument(owner, "ids", f"<dtype {arr.dtype}>", "must be mutually comparable") from None
    return int(uniq.shape[0]), inverse.reshape(-1).astype(np.intp, copy=False)


def unit_count(ids: npt.ArrayLike) -> int:
    """The number of distinct users.

    Args:
        ids: the id column.

    Returns:
        The number of units.

    Examples:
        >>> unit_count([3, 1, 3, 7])
        3
    """
    return unit_inverse(ids, owner="unit_count")[0]


def per_unit_sums(ids: npt.ArrayLike, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Each user's total of non-negative contributions.

    Rows with a missing value are dropped; negative values are clipped to 0 row
    by row; ``+inf`` and overflowing totals become the largest finite float64
    (see the module policy). A total is summed by ``np.bincount`` from its own
    rows only, so adding or removing one user with all their rows changes one
    entry of the result and no other.

    Args:
        ids: the id column.
        values: the numeric column, same length.

    Returns:
        One finite float64 ``>= 0`` per user, in sorted id order.

    Raises:
        InvalidArgument: on a shape mismatch, a non-numeric column or a missing id.

    Examples:
        >>> per_unit_sums(["u", "v", "u", "w"], [2.0, -5.0, 1.5, float("nan")]).tolist()
        [3.5, 0.0, 0.0]

    References:
        Fang, Dong, Yi, CCS 2022 (user-level sums with unbounded contributions).
    """
    n_units, inv = unit_inverse(ids, owner="per_unit_sums")
    vals = _floats(values, "per_unit_sums", inv.shape[0])
    keep = ~np.isnan(vals)
    rows = np.clip(vals[keep], 0.0, _FMAX)
    with np.errstate(over="ignore"):
        totals = np.bincount(inv[keep], weights=rows, minlength=n_units).astype(np.float64, copy=False)
    return np.minimum(totals, _FMAX)


def per_unit_max(ids: npt.ArrayLike, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Each user's largest value; ``-inf`` for a user without values.

    Args:
        ids: the id column.
        values: the numeric column, same length.

    Returns:
        One float64 per user (``+inf`` is clamped to the largest finite float).

    Raises:
        InvalidArgument: on a shape mismatch, a non-numeric column or a missing id.

    Examples:
        >>> per_unit_max([1, 2, 1, 3], [4.0, 9.0, 7.0, float("nan")]).tolist()
        [7.0, 9.0, -inf]
    """
    n_units, inv = unit_inverse(ids, owner="per_unit_max")
    vals = _floats(values, "per_unit_max", inv.shape[0])
    keep = ~np.isnan(vals)
    out = np.full(n_units, -np.inf, dtype=np.float64)
    np.maximum.at(out, inv[keep], np.minimum(vals[keep], _FMAX))
    return out


def per_unit_row_counts(ids: npt.ArrayLike, values: npt.ArrayLike | None = None) -> npt.NDArray[np.int64]:
    """Each user's number of rows, or of non-missing ``values`` when given.

    Args:
        ids: the id column.
        values: optional column whose missing entries are not counted.

    Returns:
        One int64 ``>= 0`` per user, in sorted id order.

    Raises:
        InvalidArgument: on a shape mismatch or a missing id.

    Examples:
        >>> per_unit_row_counts(["a", "b", "a"]).tolist()
        [2, 1]
        >>> per_unit_row_counts(["a", "b", "a"], [1.0, None, 2.0]).tolist()
        [2, 0]
    """
    n_units, inv = unit_inverse(ids, owner="per_unit_row_counts")
    if values is None:
        return np.bincount(inv, minlength=n_units).astype(np.int64)
    arr = _one_d(values, "per_unit_row_counts", "values")
    if arr.shape[0] != inv.shape[0]:
        raise InvalidArgument("per_unit_row_counts", "values", f"<length {arr.shape[0]}>", f"must have the length of ids ({inv.shape[0]})")
    keep = ~_is_missing(arr)
    return np.bincount(inv[keep], minlength=n_units).astype(np.int64)


def per_unit_value_sets(
    ids: npt.ArrayLike, values: npt.ArrayLike
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each user's set of distinct values, in CSR form, for count distinct.

    Values are replaced by integer codes (their rank among all distinct values,
    equal across users), so no raw value leaves this function. Missing values
    are dropped. Codes are data-dependent; use them only to compare values, not
    as public keys.

    Args:
        ids: the id column.
        values: the column whose distinct values are counted (any sortable dtype).

    Returns:
        ``(indptr, codes)``: user ``u`` holds the sorted distinct codes
        ``codes[indptr[u]:indptr[u + 1]]``; ``indptr`` has ``n_units + 1`` entries.

    Raises:
        InvalidArgument: on a shape mismatch, incomparable values or a missing id.

    Examples:
        >>> indptr, codes = per_unit_value_sets(["a", "b", "a", "a"], ["x", "x", "y", "x"])
        >>> indptr.tolist(), codes.tolist()
        ([0, 2, 3], [0, 1, 0])
    """
    n_units, inv = unit_inverse(ids, owner="per_unit_value_sets")
    arr = _one_d(values, "per_unit_value_sets", "values")
    if arr.shape[0] != inv.shape[0]:
        raise InvalidArgument("per_unit_value_sets", "values", f"<length {arr.shape[0]}>", f"must have the length of ids ({inv.shape[0]})")
    keep = ~_is_missing(arr)
    kept = arr[keep]
    indptr = np.zeros(n_units + 1, dtype=np.int64)
    if kept.shape[0] == 0:
        return indptr, np.zeros(0, dtype=np.int64)
    try:
        distinct, vcode = np.unique(kept, return_inverse=True)
    except TypeError:
        raise InvalidArgument("per_unit_value_sets", "values", f"<dtype {arr.dtype}>", "must be mutually comparable") from None
    n_vals = int(distinct.shape[0])
    # one int64 key per (user, value) pair: np.unique dedupes and sorts by user then value
    pair = np.unique(inv[keep].astype(np.int64) * n_vals + vcode.reshape(-1).astype(np.int64))
    units = pair // n_vals
    np.cumsum(np.bincount(units, minlength=n_units), out=indptr[1:])
    return indptr, (pair % n_vals).astype(np.int64)
