"""Per-unit reductions: the only way user-level mechanisms read data (the reductions protocol, docs/architecture.md).

A *unit* is one user: all rows sharing one value of the id column. The
neighbouring relation is "add or remove one user with all their rows". Every
function here maps rows to one small number (or set) per unit, and each unit's
result depends only on that unit's own rows (in their row order). Adding or
removing a user therefore adds or removes exactly one entry and leaves every
other unit's entry bit-for-bit unchanged -- the property the loss functions of
:mod:`dpalg.sensitivity._down_sens` rely on. A distributed backend implements
these reductions and nothing above ``data/`` changes.

Data policy (in addition to the one of :mod:`dpalg.data._dataset`):

* ids follow the key policy (:func:`dpalg.data._keys.normalise_key`): a row
  whose id is missing (``None``, ``NaN``, ``pd.NA``, ``NaT`` or a value of an
  unsupported type) belongs to no unit and is dropped *everywhere* (it is
  nobody's data: no unit's entry depends on it); ``1`` and ``"1"`` are two
  users, ``1`` and ``1.0`` one user, ``True`` and ``1`` two users, and ids are
  compared exactly (``Decimal(2**53)`` and ``Decimal(2**53 + 1)`` are two users:
  a merge would let an added user change another one's entry). Raising
  instead would make the release fail or not depending on one row -- a
  data-dependent error is itself a leak;
* a ``NaN``/``None`` value means "no value": the row is dropped, but its user
  still exists (a user whose rows are all missing contributes 0, or no value);
* :func:`per_unit_sums` sums each user's rows exactly on a public lattice
  ``2**k`` (rows clamped to ``±2**62·2**k``) and clamps the *user's total* to
  ``[0, 2**62·2**k]``: ``max(sum, 0)`` makes the user sum monotone (removing a
  user removes a non-negative term; seed 004, Eq. 3). The clamps act on one
  user's rows and total only, so they are unit-local and cost no privacy;
  raising an error instead would reveal that some user's total is negative;
* :func:`per_unit_max` maps ``+inf`` to the largest finite float64 (``-inf``
  means "below everything", like a user without values), so every entry is
  finite or ``-inf`` and no release path can fail because one user holds
  ``+inf`` (a data-dependent error would itself leak).

The order of units is the total order of their ids (:func:`dpalg.data._keys.key_order`). Results are
plain numpy arrays; nothing here draws randomness or prints values.

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. CCS 2022.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._keys import Key, key_index, normalise_key
from dpalg.data._lattice_sums import TERM_LIMIT, per_unit_lattice_sums
from dpalg.data._numeric import as_column, to_float

__all__ = [
    "check_unit_clip",
    "check_unit_lattice",
    "clip_rows",
    "lattice_totals_to_float",
    "per_unit_max",
    "per_unit_row_counts",
    "per_unit_sums",
    "per_unit_value_sets",
    "unit_count",
    "unit_index",
    "unit_key_index",
    "unit_term_bound",
]

_FMAX: Final = float(np.finfo(np.float64).max)


def _as_1d(values: npt.ArrayLike, owner: str, field: str) -> npt.NDArray[np.generic]:
    arr = as_column(values)
    if arr.ndim != 1:
        raise InvalidArgument(owner, field, f"ndim={arr.ndim}", "must be 1-D")
    return arr


def _missing(arr: npt.NDArray[np.generic]) -> npt.NDArray[np.bool_]:
    """Rows whose value is missing under the key policy."""
    if arr.dtype == object:
        return np.fromiter((normalise_key(v) is None for v in arr.tolist()), dtype=np.bool_, count=arr.shape[0])
    if arr.dtype.kind == "f":
        mask: npt.NDArray[np.bool_] = np.isnan(arr)
        return mask
    return np.zeros(arr.shape[0], dtype=np.bool_)


def _numeric(values: npt.ArrayLike, owner: str) -> npt.NDArray[np.float64]:
    return to_float(_as_1d(values, owner, "values"), owner=owner)


def unit_index(ids: npt.ArrayLike, *, owner: str = "unit_index") -> tuple[int, npt.NDArray[np.intp]]:
    """The number of units and, for every row, the index of its unit.

    The one place unit ids are read ("Releases are total", docs/architecture.md): every
    user-level path goes through it, so a missing id means "no user" everywhere.

    Args:
        ids: the id column (one value per row; bool, int, float, str, bytes or
            object dtype).
        owner: the caller's name, used in error messages.

    Returns:
        ``(n_units, codes)`` with ``0 <= codes[i] < n_units``, or ``-1`` for a
        row whose id is missing (it belongs to no unit); units are in the order
        of :func:`dpalg.data._keys.key_order` of their ids.

    Raises:
        InvalidArgument: only if ids are not 1-D or have an unsupported dtype
            (the public schema) -- never because of an id's value.

    Examples:
        >>> n, codes = unit_index(["b", "a", "b", None])
        >>> n, codes.tolist()
        (2, [1, 0, 1, -1])
        >>> n, codes = unit_index(np.array([1, "1", 1.0, float("nan"), True], dtype=object))
        >>> n, codes.tolist()
        (3, [1, 2, 1, -1, 0])
    """
    keys, codes = unit_key_index(ids, owner=owner)
    return len(keys), codes


def unit_key_index(
    ids: npt.ArrayLike, *, owner: str = "unit_index", ordered: bool = True
) -> tuple[tuple[Key, ...], npt.NDArray[np.intp]]:
    """:func:`unit_index` with the units' ids: ``(keys, codes)``, ``keys[c]`` the normalised id of unit ``c``.

    ``ordered=False``: the units in an unspecified order (:func:`~dpalg.data._keys.key_index`), for a
    caller that reads the codes only as a grouping of the rows into users.

    Examples:
        >>> keys, codes = unit_key_index(["b", "a", "b", None])
        >>> keys, codes.tolist()
        (('a', 'b'), [1, 0, 1, -1])
    """
    return key_index(_as_1d(ids, owner, "ids"), owner=owner, ordered=ordered)


def _check_lengths(n_ids: int, n_values: int, owner: str) -> None:
    if n_ids != n_values:
        raise InvalidArgument(owner, "values", f"length={n_values}", f"must have the length of ids ({n_ids})")


def unit_count(ids: npt.ArrayLike) -> int:
    """Number of distinct users (units).

    Examples:
        >>> unit_count([3, 1, 3, 7])
        3
    """
    return unit_index(ids, owner="unit_count")[0]


def per_unit_sums(ids: npt.ArrayLike, values: npt.ArrayLike, *, k: int = -20) -> npt.NDArray[np.float64]:
    """Each user's total contribution, exact on the lattice ``2**k``, clamped to ``[0, 2**62·2**k]``.

    Missing values are dropped. Each row is clamped to ``±2**62·2**k`` (``±inf``
    included) and rounded half-even to a multiple of ``2**k``; each user's total is
    the *exact* sum of their rounded rows (:func:`per_unit_lattice_sums`), so it
    depends only on that user's multiset of rows: never on the row order, the
    partitioning or other users (a float sum in row order does: ``1e16 + 1 − 1e16``
    is 0 or 1 depending on the order). A negative total becomes 0 (the monotone
    envelope of the signed sum, see the module docstring). The total is converted
    to float64 at the end (rounded to nearest; a per-user map).

    Args:
        ids: the id column.
        values: the numeric column, same length.
        k: the lattice exponent, an int in [-1000, 900] (public; the default 2**-20
            clamps rows and totals at 2**42, about 4.4e12).

    Returns:
        One non-negative finite float64 per user, in sorted id order.

    Raises:
        InvalidArgument: on shape mismatch, a non-numeric dtype or a bad ``k``
            (never for a value).

    Examples:
        >>> per_unit_sums(["u", "v", "u", "w"], [2.0, -5.0, 1.5, float("nan")]).tolist()
        [3.5, 0.0, 0.0]
        >>> per_unit_sums([1, 1, 1], [1e16, 1.0, -1e16], k=0).tolist() == per_unit_sums([1, 1, 1], [1e16, -1e16, 1.0], k=0).tolist() == [1.0]
        True

    References:
        Fang, Dong, Yi, CCS 2022 (user sums with unbounded contributions).
    """
    check_unit_lattice("per_unit_sums", k)
    n_units, inv = unit_index(ids, owner="per_unit_sums")
    vals = _numeric(values, "per_unit_sums")
    _check_lengths(inv.shape[0], vals.shape[0], "per_unit_sums")
    keep = ~np.isnan(vals) & (inv >= 0)
    limit = math.ldexp(1.0, 62 + k)
    with np.errstate(all="ignore"):
        terms = np.rint(np.ldexp(np.clip(vals[keep], -limit, limit), -k)).astype(np.int64)  # exact scaling, half-even
    totals = per_unit_lattice_sums(inv[keep], n_units, np.clip(terms, -TERM_LIMIT, TERM_LIMIT), 0, TERM_LIMIT)
    return lattice_totals_to_float(totals, k)


def per_unit_max(ids: npt.ArrayLike, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Each user's largest value (``-inf`` for a user with no values).

    ``+inf`` becomes the largest finite float64 (see the module docstring).

    Examples:
        >>> per_unit_max([1, 2, 1, 3], [4.0, 9.0, 7.0, float("nan")]).tolist()
        [7.0, 9.0, -inf]
    """
    n_units, inv = unit_index(ids, owner="per_unit_max")
    vals = _numeric(values, "per_unit_max")
    _check_lengths(inv.shape[0], vals.shape[0], "per_unit_max")
    keep = ~np.isnan(vals) & (inv >= 0)
    out = np.full(n_units, -np.inf, dtype=np.float64)
    np.maximum.at(out, inv[keep], np.minimum(vals[keep], _FMAX))
    return out


def per_unit_row_counts(ids: npt.ArrayLike, values: npt.ArrayLike | None = None) -> npt.NDArray[np.int64]:
    """Each user's number of rows (or of non-missing ``values`` when given).

    Examples:
        >>> per_unit_row_counts(["a", "b", "a"]).tolist()
        [2, 1]
        >>> per_unit_row_counts(["a", "b", "a"], [1.0, float("nan"), 2.0]).tolist()
        [2, 0]
    """
    n_units, inv = unit_index(ids, owner="per_unit_row_counts")
    if values is None:
        return np.bincount(inv[inv >= 0], minlength=n_units).astype(np.int64)
    arr = _as_1d(values, "per_unit_row_counts", "values")
    _check_lengths(inv.shape[0], arr.shape[0], "per_unit_row_counts")
    keep = ~_missing(arr) & (inv >= 0)
    return np.bincount(inv[keep], minlength=n_units).astype(np.int64)


def per_unit_value_sets(
    ids: npt.ArrayLike, values: npt.ArrayLike
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The set of distinct values of each user, as CSR arrays of value codes.

    Values are replaced by integer codes (their rank among all distinct values;
    equal values get equal codes across users), so no raw value leaves this
    function. Missing values are dropped.

    Args:
        ids: the id column.
        values: the column whose distinct values are counted, read as keys
            (missing values are dropped; see :func:`dpalg.data._keys.normalise_key`).

    Returns:
        ``(indptr, codes)``: user ``u`` holds the sorted distinct codes
        ``codes[indptr[u]:indptr[u + 1]]``; ``indptr`` has ``n_units + 1`` entries.

    Examples:
        >>> indptr, codes = per_unit_value_sets(["a", "b", "a", "a"], ["x", "x", "y", "x"])
        >>> indptr.tolist(), codes.tolist()
        ([0, 2, 3], [0, 1, 0])
    """
    n_units, inv = unit_index(ids, owner="per_unit_value_sets")
    arr = _as_1d(values, "per_unit_value_sets", "values")
    _check_lengths(inv.shape[0], arr.shape[0], "per_unit_value_sets")
    distinct, vcodes = key_index(arr, owner="per_unit_value_sets")
    keep = (vcodes >= 0) & (inv >= 0)
    if not np.any(keep):
        return np.zeros(n_units + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n_vals = len(distinct)
    pair = inv[keep].astype(np.int64) * n_vals + vcodes[keep].astype(np.int64)
    pair = np.unique(pair)
    units = pair // n_vals
    codes = pair % n_vals
    indptr = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(np.bincount(units, minlength=n_units), out=indptr[1:])
    return indptr, codes.astype(np.int64)


# -- shared by the backends of the per-unit reductions (dpalg.data._reductions) ------------


def check_unit_lattice(owner: str, k: object) -> int:
    """``k`` if it is a lattice exponent :func:`per_unit_sums` accepts (an int in [-1000, 900]), else raise.

    Examples:
        >>> check_unit_lattice("per_unit_sums", -20)
        -20
    """
    if isinstance(k, bool) or not isinstance(k, int) or not -1000 <= k <= 900:
        raise InvalidArgument(owner, "k", k, "must be an int in [-1000, 900]")
    return k


def check_unit_clip(owner: str, lower: float | None, upper: float | None) -> None:
    """Raise unless ``lower``, ``upper`` are floats (or ``None``: no bound on that side), not NaN, ``lower <= upper``.

    The bounds are public (a query's clip), so the message may show them.
    """
    for field, bound in (("lower", lower), ("upper", upper)):
        if bound is not None and (not isinstance(bound, float) or math.isnan(bound)):
            raise InvalidArgument(owner, field, bound, "must be a float that is not NaN, or None")
    if lower is not None and upper is not None and lower > upper:
        raise InvalidArgument(owner, "lower", lower, f"must be <= upper={upper}")


def clip_rows(values: npt.NDArray[np.float64], lower: float | None, upper: float | None) -> npt.NDArray[np.float64]:
    """``np.clip(values, lower, upper)`` (NaN stays NaN; a ``None`` bound clips nothing on its side).

    Examples:
        >>> clip_rows(np.array([-1.0, 5.0, np.nan]), 0.0, None).tolist()
        [0.0, 5.0, nan]
    """
    if lower is None and upper is None:
        return values
    return np.clip(values, lower, upper)


def unit_term_bound(lower: float | None, upper: float | None, k: int) -> int:
    """The largest ``|term|`` a row can give :func:`per_unit_sums` after ``clip_rows(·, lower, upper)`` (public).

    Terms are monotone in the value, so the bound is the larger magnitude of the
    terms of the two (clamped) bounds; a missing bound is ``±inf``, whose term is
    ``∓2**62``. Backends use it to choose an exact sum type (a long sum of ``n``
    terms cannot overflow when ``n·bound < 2**63``).

    Examples:
        >>> unit_term_bound(0.0, 100.0, -10), unit_term_bound(None, 1.0, 0) == 2**62
        (102400, True)
    """
    limit = math.ldexp(1.0, 62 + k)
    ends = np.array([-math.inf if lower is None else lower, math.inf if upper is None else upper], dtype=np.float64)
    with np.errstate(all="ignore"):
        terms = np.rint(np.ldexp(np.clip(ends, -limit, limit), -k))  # the chain of per_unit_sums
    return max(1, int(np.max(np.abs(terms))))


def lattice_totals_to_float(totals: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.float64]:
    """Users' clamped exact totals (int64, in units of ``2**k``) as float64: ``ldexp(float(total), k)``.

    The one conversion every backend uses, in the driver (rounded to nearest, a
    per-user map), so equal integer totals give equal floats on every backend.

    Examples:
        >>> lattice_totals_to_float(np.array([3, 2**53 + 1]), -1).tolist()
        [1.5, 4503599627370496.0]
    """
    return np.ldexp(np.asarray(totals, dtype=np.int64).astype(np.float64), k)
