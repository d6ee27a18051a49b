"""Users' bounded totals: the per-user questions of the user-level Laplace/Gaussian and AutoClipSum releases.

A user-level count, sum or mean under :class:`~dpalg.ClipPerUser` (and the count
under :class:`~dpalg.MaxRowsPerUser`) reads the data through one object, a
:class:`UnitTotalSpec`: each user's exact lattice total of their (kept) rows,
clamped to ``[lower, upper]``. The reductions seam answers two questions about
those totals (:meth:`~dpalg.data.Reductions.unit_total_sum` and
:meth:`~dpalg.data.Reductions.unit_totals`); this module holds the numpy
answer, which every other backend reproduces bit for bit:

1. **rows.** A row counts when its id is present (a missing id is nobody's row)
   and, for a sum or a count of a column, its value is present (not NaN).
   Under ``max_rows = r`` each user keeps ``r`` of those rows, chosen by the keyed
   priority of :func:`~dpalg.data.select_rows` (a function of the secret and that
   user's multiset of rows only): :func:`kept_unit_rows`.
2. **terms.** A count's term is 1. A sum's term is the value clipped to the row
   clip's floats from inside (``np.clip(np.clip(x, float(l), float(u)), lo_in, hi_in)``,
   what :func:`dpalg.queries.clip_inside` does), clamped to ``±2**61`` lattice
   steps and rounded half-even to the lattice ``2**k``: :func:`row_lattice_terms`.
3. **totals.** Each user's exact integer total, clamped to ``[lower, upper]``
   (:func:`~dpalg.data.per_unit_lattice_sums`; a user whose values are all
   missing has total 0, clamped too).

Every step is a function of one user's rows, so a user's total depends on
nothing else (the row order, the partitioning, the other users): the argument
that lets the Spark backend compute it on the executors, one user group at a
time, and still agree with this code bit for bit.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg.data._dataset import Dataset
from dpalg.data._fixed_point import exact_clipped_sum, inside_bounds, round_to_lattice
from dpalg.data._lattice_sums import exact_int_total, per_unit_lattice_sums
from dpalg.data._numeric import as_column
from dpalg.data._keys import Key, int_key_index, key_codes, key_index
from dpalg.data._row_choice import keyed_hashes, secret_words, select_keys, select_many_rows, select_rows, unit_hashes
from dpalg.data._unit_spec import KeptRowCellSpec, KeptRowSumSpec, UnitKeySpec, UnitTotals, UnitTotalSpec
from dpalg.data._user_units import unit_key_index

__all__ = [
    "KeptRowCellSpec", "KeptRowSumSpec", "ROW_LATTICE_LIMIT", "UnitKeySpec", "UnitTotalSpec", "UnitTotals", "candidate_slots", "dataset_kept_row_cells", "dataset_kept_row_sum", "dataset_unit_key_counts",
    "dataset_unit_totals", "kept_cell_index", "kept_key_rows", "kept_unit_rows", "numpy_kept_row_cells", "numpy_kept_row_sum", "numpy_unit_key_counts", "numpy_unit_totals",
    "row_lattice_terms", "sum_of_totals",
]  # fmt: skip

#: rows are clamped to this many lattice steps before a per-user total (public; see :func:`row_lattice_terms`)
ROW_LATTICE_LIMIT: Final = 1 << 61


def row_lattice_terms(values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int64]:
    """Each value rounded (half-even) to the lattice ``2**k``, after clamping to ±2**61 steps.

    The clamp is public and per row, so it keeps every per-user total a
    function of that user's rows; at the automatic lattice it lies about 2**41
    noise scales out, far beyond any clip a user would set.

    Examples:
        >>> row_lattice_terms(np.array([1.5, -2.5, float("inf")]), -1).tolist()
        [3, -5, 2305843009213693952]
    """
    limit = float(ROW_LATTICE_LIMIT) * 2.0**k if k > -1000 else 0.0
    clipped = np.clip(values, -limit, limit) if limit > 0 else np.zeros_like(values)
    terms = round_to_lattice(clipped, k)
    return np.clip(terms.astype(np.int64), -ROW_LATTICE_LIMIT, ROW_LATTICE_LIMIT)


def kept_unit_rows(
    ids: npt.NDArray[np.generic],
    present: npt.NDArray[np.bool_],
    content: npt.NDArray[np.generic] | None,
    secret: bytes,
    *,
    max_rows: int | None,
    key_cap: tuple[npt.NDArray[np.intp], int, int] | None = None,
    ordered: bool = True,
) -> tuple[int, npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """The rows a user-level statistic reads, after the caps: ``(n_units, unit_codes, keep)``.

    Args:
        ids: the id column.
        present: the rows whose value the statistic reads.
        content: the column whose keyed hash is a row's content (``None``: every row alike).
        secret: the key of the row choice (:func:`dpalg.noise.prf_secret`).
        max_rows: the row cap, or ``None``.
        key_cap: ``(key_codes, max_keys, rows_per_key)`` of a histogram's key cap, or ``None``.
        ordered: ``False`` for a caller that reads ``keep`` (and ``n_units``) only: the units'
            codes are then a grouping of the rows in an unspecified order (for str ids, the
            distinct ids are not sorted), and ``keep`` is the same mask.

    A row is kept only when its id and value are present and it survives the
    caps (the key cap first, then the row cap on the rows that survived it:
    a function of the user's rows again).

    ``keep`` does not depend on the order of the codes: a code is read only to say
    which rows belong to one user -- each user's row count, the per-user table of id
    hashes (``table[c]`` is the hash of unit ``c``'s id, whatever ``c`` is), and the
    sorts by (code, priority, row index) of :func:`~dpalg.data._sorting.sort_rows` and
    by (code, priority, key hash, key) in ``select_keys``, whose kept rows are each
    unit's first rows in its own run -- never to rank two users or break a tie
    within one. So ``ordered=False`` keeps the same rows (checked against the ordered
    codes in ``tests/data/test_row_choice_unordered.py``).
    """
    arr = as_column(ids)
    distinct: npt.NDArray[np.generic] | None = None
    unit_keys: tuple[Key, ...] | None = None
    if arr.ndim == 1 and arr.dtype.kind in "iub":  # every id present; the distinct ids stay an array (no Python int each)
        distinct, codes = int_key_index(arr)
        n_units = distinct.shape[0]
        keep = present.copy()
    else:
        unit_keys, codes = unit_key_index(ids, owner="user-level query", ordered=ordered)
        n_units = len(unit_keys)
        keep = present & (codes >= 0)
    if max_rows is None and key_cap is None:
        return n_units, codes, keep
    if key_cap is None:
        # the row cap alone: a user with at most max_rows rows keeps them all (select_unit_rows keeps
        # the same rows), so when such users hold many rows only the other users' rows are hashed
        assert max_rows is not None
        if n_units == 0:
            return n_units, codes, keep.copy()
        n_keep = int(np.count_nonzero(keep))
        big = np.bincount(codes[keep] if n_keep < codes.size else codes, minlength=n_units) > max_rows
        chosen = keep & big[codes] if 8 * int(np.count_nonzero(big)) < 7 * n_units else keep  # code -1 reads the last user: masked by keep
        out = keep & ~chosen
        # one hash per user, not per row (an int id's hash is keyed_hashes of the id: unit_hashes of its keys)
        table = keyed_hashes(distinct, secret) if distinct is not None else unit_hashes(ids, codes, n_units, secret, unit_keys)
        if int(np.count_nonzero(chosen)) == codes.size:  # every row: no gather
            hashes = np.zeros(codes.size, dtype=np.uint64) if content is None else keyed_hashes(content, secret)
            out[select_many_rows(codes, table, hashes, max_rows, secret_words(secret))] = True
            return n_units, codes, out
        rows = np.flatnonzero(chosen)
        hashes = np.zeros(rows.size, dtype=np.uint64) if content is None else keyed_hashes(content[rows], secret)
        out[rows[select_many_rows(codes[rows], table, hashes, max_rows, secret_words(secret))]] = True
        return n_units, codes, out
    rows = np.flatnonzero(keep)
    sub_codes = codes[rows]
    if np.asarray(ids).dtype.kind in "biuf":  # numbers are hashed row by row, vectorised
        unit_hash = keyed_hashes(ids[rows], secret)
    else:  # one hash per user (an object column is not factorised a second time)
        unit_hash = unit_hashes(ids, codes, n_units, secret)[sub_codes]
    hashes = np.zeros(rows.size, dtype=np.uint64) if content is None else keyed_hashes(content[rows], secret)
    chosen = np.ones(rows.size, dtype=np.bool_)
    if key_cap is not None:
        key_codes, max_keys, rows_per_key = key_cap
        chosen &= select_keys(sub_codes, n_units, unit_hash, key_codes[rows], hashes, max_keys, rows_per_key, secret)
    if max_rows is not None:
        capped = np.zeros(rows.size, dtype=np.bool_)
        idx = np.flatnonzero(chosen)
        capped[idx] = select_rows(sub_codes[idx], n_units, unit_hash[idx], hashes[idx], max_rows, secret)
        chosen = capped
    out = np.zeros(ids.shape[0], dtype=np.bool_)
    out[rows[chosen]] = True
    return n_units, codes, out


def numpy_unit_totals(
    ids: npt.NDArray[np.generic],
    numeric: npt.NDArray[np.float64] | None,
    content: npt.NDArray[np.generic] | None,
    spec: UnitTotalSpec,
    secret: bytes,
) -> npt.NDArray[np.int64]:
    """Each user's clamped total (module docstring), in the order of the users' ids.

    Args:
        ids: the id column.
        numeric: the value column as float64 (NaN: missing), or ``None`` for a count of rows.
        content: the value column as it is (its keyed hash is a row's content under ``max_rows``), or ``None``.
        spec: what to total.
        secret: the key of the row choice (read only under ``max_rows``).

    Examples:
        >>> spec = UnitTotalSpec("u", "x", "sum", 0, 0, 5)
        >>> numpy_unit_totals(np.array(["a", "b", "a"], dtype=object), np.array([2.0, 9.0, 1.5]), None, spec, bytes(32)).tolist()
        [4, 5]
    """
    present = np.ones(ids.shape[0], dtype=np.bool_) if numeric is None else ~np.isnan(numeric)
    if spec.kind == "count" and spec.max_rows is not None:
        # each user keeps min(n_u, r) of their n_u present rows whichever rows the keyed choice keeps: no hash needed
        n_units, codes, keep = kept_unit_rows(ids, present, None, secret, max_rows=None)
        counts = np.bincount(codes[keep], minlength=n_units).astype(np.int64)
        return np.clip(np.minimum(counts, spec.max_rows), spec.lower, spec.upper)
    n_units, codes, keep = kept_unit_rows(ids, present, content, secret, max_rows=spec.max_rows)
    if spec.kind == "count":
        terms = np.ones(int(np.count_nonzero(keep)), dtype=np.int64)
    else:
        assert numeric is not None
        vals = numeric[keep]
        clip = spec.row_clip()
        if clip is not None:
            vals = np.clip(np.clip(vals, clip[0], clip[1]), clip[2], clip[3])
        terms = row_lattice_terms(vals, spec.k)
    return per_unit_lattice_sums(codes[keep], n_units, terms, spec.lower, spec.upper)


def dataset_unit_totals(data: Dataset, spec: UnitTotalSpec, secret: bytes) -> npt.NDArray[np.int64]:
    """:func:`numpy_unit_totals` on a dataset's columns (read in this order: ids, values, values as they are)."""
    ids = data.column(spec.unit)
    numeric = None if spec.column is None else data.numeric(spec.column)
    content = None if spec.column is None or spec.max_rows is None else data.column(spec.column)
    return numpy_unit_totals(ids, numeric, content, spec, secret)


def numpy_kept_row_sum(
    ids: npt.NDArray[np.generic],
    numeric: npt.NDArray[np.float64],
    content: npt.NDArray[np.generic],
    spec: KeptRowSumSpec,
    secret: bytes,
) -> tuple[int, int]:
    """The exact fixed-point sum of the rows the users keep under ``spec.max_rows``, and their number.

    Each user keeps ``spec.max_rows`` of their rows whose id and value are present
    (:func:`kept_unit_rows`); a kept value is clipped to the nearest floats of
    ``[lower, upper]``, then to the floats inside (what
    :func:`dpalg.queries.clip_inside` does), and the terms are summed exactly by
    :func:`~dpalg.data._fixed_point.exact_clipped_sum` (each term
    ``round_half_even(v / 2**k)`` clamped to the bounds rounded outward). Every
    term is a function of its row alone and the sum is an exact integer, so the
    answer on the whole frame is the exact sum of the answers on any split of the
    rows into groups of whole users (the Spark backend's partitions).

    Args:
        ids: the id column.
        numeric: the value column as float64 (NaN: missing).
        content: the value column as it is (its keyed hash is a row's content).
        spec: the question.
        secret: the key of the row choice.

    Examples:
        >>> spec = KeptRowSumSpec("u", "x", Fraction(0), Fraction(5), 0, 2)
        >>> x = np.array([2.0, 9.0, 1.5, np.nan])
        >>> numpy_kept_row_sum(np.array(["a", "b", "a", "a"], dtype=object), x, x, spec, bytes(32))  # 2 + 5 + 2 (1.5 to even)
        (9, 3)
    """
    vals = _kept_values(ids, numeric, content, spec.lower, spec.upper, spec.max_rows, secret)
    return exact_clipped_sum(vals, spec.lower, spec.upper, spec.k), int(vals.size)


def _kept_values(
    ids: npt.NDArray[np.generic], numeric: npt.NDArray[np.float64], content: npt.NDArray[np.generic],
    lower: Fraction, upper: Fraction, max_rows: int, secret: bytes,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """The values of the rows the users keep under ``max_rows`` (id and value present), clipped to the nearest floats
    of ``[lower, upper]`` and then to the floats inside (what :func:`dpalg.queries.clip_inside` does)."""
    present = ~np.isnan(numeric)
    _, _, keep = kept_unit_rows(ids, present, content, secret, max_rows=max_rows, ordered=False)  # the codes are not read
    lo_in, hi_in = inside_bounds(lower, upper)
    return np.clip(np.clip(numeric[keep], float(lower), float(upper)), lo_in, hi_in)


def dataset_kept_row_sum(data: Dataset, spec: KeptRowSumSpec, secret: bytes) -> tuple[int, int]:
    """:func:`numpy_kept_row_sum` on a dataset's columns (read in this order: ids, values, values as they are)."""
    ids = data.column(spec.unit)
    return numpy_kept_row_sum(ids, data.numeric(spec.column), data.column(spec.column), spec, secret)


def grid_index(values: npt.NDArray[np.float64], lower: Fraction, upper: Fraction, bits: int) -> npt.NDArray[np.int64]:
    """Each value's point on the grid of ``2**bits + 1`` points over ``[lower, upper]``: the exponential quantile's
    ``clip(rint((x·0.5 − lower·0.5)·(2·2**bits / (upper − lower))), 0, 2**bits)``, op for op (halves keep
    ``x − lower`` finite near the float maximum)."""
    size = 1 << bits
    with np.errstate(all="ignore"):
        pos = (values * 0.5 - float(lower) * 0.5) * float(Fraction(2 * size) / (upper - lower))
    return np.clip(np.rint(pos), 0, size).astype(np.int64)


def numpy_kept_row_cells(
    ids: npt.NDArray[np.generic],
    numeric: npt.NDArray[np.float64],
    content: npt.NDArray[np.generic],
    spec: KeptRowCellSpec,
    secret: bytes,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The occupied grid points (ascending) of the rows the users keep under ``spec.max_rows``, and their counts.

    The rows kept are :func:`numpy_kept_row_sum`'s (:func:`kept_unit_rows`: a
    function of the secret and each user's rows alone), each kept value clipped
    the same way and mapped to its point by :func:`grid_index`, a function of
    the row alone. So the counts on the whole frame are the sums of the counts on
    any split of the rows into groups of whole users (the Spark backend's
    partitions).

    Examples:
        >>> spec = KeptRowCellSpec("u", "x", Fraction(0), Fraction(4), 2, 2)
        >>> x = np.array([2.0, 9.0, 1.0, np.nan])
        >>> numpy_kept_row_cells(np.array(["a", "b", "a", "a"], dtype=object), x, x, spec, bytes(32))  # 2, 4 (clipped), 1
        (array([1, 2, 4]), array([1, 1, 1]))
    """
    vals = _kept_values(ids, numeric, content, spec.lower, spec.upper, spec.max_rows, secret)
    cells, counts = np.unique(kept_cell_index(vals, spec), return_counts=True)
    return cells.astype(np.int64), counts.astype(np.int64)


def kept_cell_index(values: npt.NDArray[np.float64], spec: KeptRowCellSpec) -> npt.NDArray[np.int64]:
    """Each kept (clipped) value's index under ``spec``: its grid point (:func:`grid_index`), its integer candidate
    (``rint(x − lower)``, what the exponential quantile's integer runs compute), or its candidate slot (:func:`candidate_slots`)."""
    if spec.candidates is None:
        return grid_index(values, spec.lower, spec.upper, spec.bits)
    if spec.candidates == "integers":
        return np.rint(values - float(spec.lower)).astype(np.int64)  # exact: an integer in [lower, upper], |x| <= 2**53
    return candidate_slots(values, spec.candidates)


def candidate_slots(values: npt.NDArray[np.float64], candidates: tuple[Fraction, ...]) -> npt.NDArray[np.int64]:
    """Each value's slot among the increasing ``candidates``: ``#{j : c_j <= x} + #{j : c_j < x}``, compared exactly.

    A value equal to ``c_j`` is in slot ``2j + 1``, one strictly between ``c_{j−1}``
    and ``c_j`` in slot ``2j``; so ``x < c_j`` exactly when the slot is at most ``2j``
    and ``x > c_j`` when it is at least ``2j + 2``. The comparisons are exact: with
    ``theta_j`` the smallest float ``>= c_j`` and ``phi_j`` the largest float ``<= c_j``,
    ``x < c_j`` is ``x < theta_j`` and ``x > c_j`` is ``x > phi_j`` for every float ``x``
    (the exponential quantile's ``candidate_scores`` makes the same comparisons).

    Examples:
        >>> candidate_slots(np.array([0.5, 1.0, 1.5, 2.0, 3.0]), (Fraction(1), Fraction(2))).tolist()
        [0, 1, 2, 3, 4]
        >>> candidate_slots(np.array([0.1]), (Fraction(1, 10),)).tolist()  # the float 0.1 is above 1/10
        [2]
    """
    nearest = [float(c) for c in candidates]
    theta = np.array([f if f >= c else np.nextafter(f, np.inf) for f, c in zip(nearest, candidates)], dtype=np.float64)
    phi = np.array([f if f <= c else np.nextafter(f, -np.inf) for f, c in zip(nearest, candidates)], dtype=np.float64)
    return (np.searchsorted(theta, values, side="right") + np.searchsorted(phi, values, side="left")).astype(np.int64)


def dataset_kept_row_cells(data: Dataset, spec: KeptRowCellSpec, secret: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`numpy_kept_row_cells` on a dataset's columns (read in this order: ids, values, values as they are)."""
    ids = data.column(spec.unit)
    return numpy_kept_row_cells(ids, data.numeric(spec.column), data.column(spec.column), spec, secret)


def sum_of_totals(totals: npt.NDArray[np.int64], spec: UnitTotalSpec) -> UnitTotals:
    """``Σ_u`` total (exact) and the number of users."""
    return UnitTotals(exact_int_total(totals, spec.total_bound), int(totals.size))


def kept_key_rows(
    ids: npt.NDArray[np.generic],
    content: npt.NDArray[np.generic],
    spec: UnitKeySpec,
    secret: bytes,
    *,
    owner: str = "user-level histogram",
) -> tuple[tuple[Key, ...], npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """The rows a user-level histogram counts: ``(keys, codes, keep)``.

    ``keys`` are the public keys, or the present keys in key order; ``codes[i]``
    is row i's index in ``keys`` (−1: missing or unlisted). A row is read when its
    id and its key are present (and listed); each user then keeps the rows
    :func:`kept_unit_rows` chooses under the key cap and the row cap. The codes
    that break ties between a user's keys are the public keys' indices or the
    keys' ranks in key order, an order of the keys alone: so any subset of the
    rows that holds whole users gives each of them the same kept rows.
    """
    if spec.keys is not None:
        keys, codes = spec.keys, key_codes(content, spec.keys, owner=owner)
    else:
        keys, codes = key_index(content, owner=owner)
    cap = spec.key_cap()
    key_cap = None if cap is None else (codes, cap[0], cap[1])
    _, _, keep = kept_unit_rows(ids, codes >= 0, content, secret, max_rows=spec.max_rows, key_cap=key_cap, ordered=False)
    return keys, codes, keep


def numpy_unit_key_counts(
    ids: npt.NDArray[np.generic],
    content: npt.NDArray[np.generic],
    spec: UnitKeySpec,
    secret: bytes,
    *,
    owner: str = "user-level histogram",
) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
    """A user-level histogram's counts: how many rows :func:`kept_key_rows` keeps hold each key.

    Returns:
        ``(spec.keys, counts)`` for public keys (one count per listed key), or
        the present keys with at least one kept row, in key order, and their counts.

    Examples:
        >>> spec = UnitKeySpec("u", "c", None, max_keys=1, rows_per_key=2)
        >>> ids = np.array(["a", "a", "a", "b"], dtype=object)
        >>> keys, counts = numpy_unit_key_counts(ids, np.array(["x", "x", "y", "y"], dtype=object), spec, bytes(32))
        >>> int(counts.sum()) in (2, 3)  # user a keeps one key (both x rows, or its y row); b keeps its y row
        True
    """
    keys, codes, keep = kept_key_rows(ids, content, spec, secret, owner=owner)
    counts = np.bincount(codes[keep], minlength=len(keys)).astype(np.int64)
    if spec.keys is not None:
        return keys, counts
    present = np.flatnonzero(counts)
    return tuple(keys[i] for i in present.tolist()), counts[present]


def dataset_unit_key_counts(data: Dataset, spec: UnitKeySpec, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
    """:func:`numpy_unit_key_counts` on a dataset's columns (read in this order: ids, keys)."""
    ids = data.column(spec.unit)
    return numpy_unit_key_counts(ids, data.column(spec.column), spec, secret, owner=f"Dataset column {spec.column!r}")
