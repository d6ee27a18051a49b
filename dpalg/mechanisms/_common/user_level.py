"""User-level queries read through their contribution bound.

A user-level query (``user=`` names the id column) is released under
"add or remove one user with all their rows". This module turns the data into
what the statistic is computed on, and states how much one user can change it:

* :func:`kept_rows` applies the row policy and the caps: a row counts only
  when its id is present (a missing id is nobody's row), its value is present
  (for a histogram: its key is present, and listed when keys are public), and
  it is among the rows its user keeps under :class:`~dpalg.MaxRowsPerUser` /
  :class:`~dpalg.MaxKeysPerUser` (chosen by :func:`dpalg.data.select_rows` with a
  fresh key from :func:`dpalg.noise.prf_secret`). Every step is a function of one
  user's own rows, so adding a user adds that user's kept rows and changes no
  other row's fate.
* :func:`sorted_user_totals` gives the users' totals on the lattice ``2**k``
  (exact integers, order independent), clamped to the :class:`~dpalg.ClipPerUser`
  range rounded outward.
* :func:`values_per_user` and :func:`histogram_sensitivity` are static: they
  read the query only.

The mechanisms (Laplace, Gaussian, the exponential quantile, noisy max and the
histograms) then reuse their row-level proofs with "one row" replaced by "one
user", who adds at most ``values_per_user`` values of the bounded range.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data import Dataset, Relation, as_reductions
from dpalg.data._keys import Key
from dpalg.data._unit_totals import KeptRowSumSpec, UnitKeySpec, UnitTotalSpec, kept_unit_rows, row_lattice_terms
from dpalg.mechanisms._common.params import floor_log2
from dpalg.noise import AbstractRandomness, prf_secret
from dpalg.noise._fixed_point import lattice_bounds
from dpalg.queries import Query, clip_inside

__all__ = [
    "check_user_level",
    "histogram_sensitivity",
    "kept_row_spec",
    "kept_rows",
    "lattice_terms",
    "row_view",
    "unit_key_spec",
    "unit_total_spec",
    "sorted_user_totals",
    "unit_values",
    "user_key_counts",
    "values_per_user",
]

_BOUND_HINT = (
    "bound each user's contribution: | ClipPerUser(lower, upper) (clips each user's total), "
    "| MaxRowsPerUser(k) (keeps k rows per user) or, for histograms, | MaxKeysPerUser(m)"
)


def check_user_level(owner: str, query: Query, relation: Relation, kinds: tuple[str, ...]) -> None:
    """Refuse a user-level query this mechanism cannot bound (at construction; ``user_count`` excluded).

    Args:
        owner: the node's name, for the message.
        query: the query (row-level queries pass).
        relation: the node's relation; user-level releases are add/remove only.
        kinds: the query kinds the node releases at user level.

    Raises:
        InvalidArgument: an unbounded user-level query, a kind the node does not
            support at user level, or ``relation="substitution"``.
    """
    if query.user is None or query.kind == "user_count":
        return
    if query.kind not in kinds:
        raise InvalidArgument(owner, "query", query, f"user-level {query.kind!r} is not supported here; supported: {kinds}")
    if not query.user_bounded:
        raise InvalidArgument(owner, "query", query, f"has no contribution bound per user: {_BOUND_HINT}")
    if relation != "add_remove":
        raise InvalidArgument(owner, "relation", relation, "must be 'add_remove' for a user-level query (one user added or removed)")
    if query.kind == "histogram" and query.max_rows is None and query.max_keys is None:
        raise InvalidArgument(owner, "query", query, "a user-level histogram needs | MaxKeysPerUser(m) or | MaxRowsPerUser(k)")


def values_per_user(query: Query) -> int:
    """How many of the statistic's values one user adds (static).

    Row-level queries: 1 (one row). ``| ClipPerUser``: 1 (the user's total).
    ``| MaxRowsPerUser(k)`` alone: ``k`` rows.
    """
    if query.user is None or query.per_user_totals or query.max_rows is None:
        return 1
    return query.max_rows


def histogram_sensitivity(query: Query) -> tuple[int, int, int]:
    """(L1, L2², L∞) of a user-level histogram under add/remove of one user (static).

    With at most ``T`` kept rows per user (``T = min(k, m·c)`` for
    ``MaxRowsPerUser(k)`` and ``MaxKeysPerUser(m, rows_per_key=c)``), each count
    raised by at most ``c' = min(k, c)``: L1 = T and L∞ = c'. L2² is the largest
    ``Σ x_i²`` with ``Σ x_i ≤ T`` and ``0 ≤ x_i ≤ c'`` (a convex maximisation:
    ``⌊T/c'⌋`` full counts and the remainder), which uses at most m keys.

    Examples:
        >>> from dpalg import Query, MaxKeysPerUser, MaxRowsPerUser
        >>> histogram_sensitivity(Query.histogram("c", keys=[1, 2], user="u") | MaxKeysPerUser(3, rows_per_key=2))
        (6, 12, 2)
        >>> histogram_sensitivity(Query.histogram("c", keys=[1, 2], user="u") | MaxRowsPerUser(5))
        (5, 25, 5)
    """
    if query.user is None:
        return 1, 1, 1
    caps_total: list[int] = []
    caps_each: list[int] = []
    if query.max_rows is not None:
        caps_total.append(query.max_rows)
        caps_each.append(query.max_rows)
    if query.max_keys is not None and query.rows_per_key is not None:
        caps_total.append(query.max_keys * query.rows_per_key)
        caps_each.append(query.rows_per_key)
    if not caps_total:
        raise InvalidArgument("histogram_sensitivity", "query", query, f"is unbounded: {_BOUND_HINT}")
    total, each = min(caps_total), min(caps_each)
    full, rest = divmod(total, each)
    return total, full * each * each + rest * rest, each


def _present(query: Query, data: Dataset) -> npt.NDArray[np.bool_]:
    """Rows whose value the statistic reads (the data policy): numeric non-NaN, or a present (listed) key."""
    if query.column is None:
        return np.ones(data.n_rows, dtype=np.bool_)
    if query.kind == "histogram":
        if query.keys is not None:
            codes = data.key_codes(query.column, query.keys)
        else:
            codes = data.key_index(query.column)[1]
        mask: npt.NDArray[np.bool_] = codes >= 0
        return mask
    present: npt.NDArray[np.bool_] = ~np.isnan(data.numeric(query.column))
    return present


def kept_rows(query: Query, data: Dataset, secret: bytes, *, ordered: bool = True) -> tuple[int, npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """The rows a user-level statistic reads, after the caps (:func:`dpalg.data._unit_totals.kept_unit_rows`).

    Args:
        query: a user-level query (``user`` set).
        data: the dataset.
        secret: the key of the row choice (:func:`dpalg.noise.prf_secret`).
        ordered: ``False`` when the caller reads ``keep`` only: the users' codes are then
            in an unspecified order, ``keep`` the same (:func:`~dpalg.data._unit_totals.kept_unit_rows`).

    Returns:
        ``(n_units, unit_codes, keep)``: the number of users, every row's user
        (−1 when its id is missing) and the mask of rows kept. A row is kept only
        when its id and value are present and it survives the caps.
    """
    assert query.user is not None
    ids = data.column(query.user)
    present = _present(query, data)
    if query.max_rows is None and query.max_keys is None:
        return kept_unit_rows(ids, present, None, secret, max_rows=None, ordered=ordered)
    content = None if query.column is None else data.column(query.column)
    key_cap = None
    if query.max_keys is not None and query.rows_per_key is not None:
        assert query.column is not None
        if query.keys is not None:
            key_codes = data.key_codes(query.column, query.keys)
        else:
            key_codes = data.key_index(query.column)[1]
        key_cap = (key_codes, query.max_keys, query.rows_per_key)
    return kept_unit_rows(ids, present, content, secret, max_rows=query.max_rows, key_cap=key_cap, ordered=ordered)


def unit_key_spec(query: Query) -> UnitKeySpec:
    """What a user-level histogram counts (static): its keys and caps (:func:`~dpalg.data._unit_totals.kept_key_rows`)."""
    assert query.user is not None and query.column is not None and query.kind == "histogram"
    return UnitKeySpec(query.user, query.column, query.keys, query.max_rows, query.max_keys, query.rows_per_key)


def user_key_counts(query: Query, data: Dataset, secret: bytes) -> tuple[tuple[Key, ...], npt.NDArray[np.int64]]:
    """A user-level histogram's counts of the rows the users keep (the rows :func:`kept_rows` keeps), through the seam.

    Returns:
        ``(query.keys, one count per key)`` for public keys, else the present
        keys with a kept row (in key order) and their counts. On a Spark frame the
        users' choice runs on the executors and only the counts reach the driver.
    """
    return as_reductions(data).unit_key_counts(unit_key_spec(query), secret)


def lattice_terms(values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int64]:
    """Each value rounded (half-even) to the lattice ``2**k``, after clamping to ±2**61 steps (:func:`~dpalg.data._unit_totals.row_lattice_terms`)."""
    return row_lattice_terms(values, k)


def row_values(query: Query, data: Dataset, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """The kept rows' values, clipped to the query's row clip when it has one (NaN rows are never kept)."""
    if query.column is None:
        return np.zeros(int(np.count_nonzero(keep)), dtype=np.float64)
    vals = data.numeric(query.column)[keep]
    if query.lower is not None and query.upper is not None:
        vals = clip_inside(np.clip(vals, float(query.lower), float(query.upper)), query.lower, query.upper)
    return vals


def total_bounds(query: Query, k: int) -> tuple[int, int]:
    """The ClipPerUser range in lattice units of ``2**k``, rounded outward (static)."""
    assert query.user_lower is not None and query.user_upper is not None
    return lattice_bounds(query.user_lower, query.user_upper, k, "ClipPerUser")


def unit_total_spec(query: Query, k: int) -> UnitTotalSpec | None:
    """What a user-level query totals per user (static), or ``None`` for a query read row by row.

    ``| ClipPerUser(L, U)``: each user's kept rows (a count: 1 each; any other
    kind: the row-clipped value on the lattice ``2**k``), the total clamped to
    :func:`total_bounds`. ``Query.count(user=…) | MaxRowsPerUser(r)`` alone: each
    user's kept rows, at most ``r``, so the clamp ``[0, r]`` changes nothing and
    the sum of the totals is the number of kept rows. ``None``: a histogram, a
    key cap, or a sum or mean capped by rows alone (read row by row).
    """
    if query.user is None or query.max_keys is not None or query.kind in ("histogram", "user_count"):
        return None
    kind: Literal["count", "sum"] = "count" if query.kind == "count" else "sum"
    if query.per_user_totals:
        lo, hi = total_bounds(query, k)
    elif kind == "count" and query.max_rows is not None:
        lo, hi = 0, query.max_rows
    else:
        return None
    clipped = kind == "sum" and query.lower is not None and query.upper is not None
    return UnitTotalSpec(
        query.user, query.column, kind, k, lo, hi,
        query.lower if clipped else None, query.upper if clipped else None, query.max_rows,
    )  # fmt: skip


def kept_row_spec(query: Query, k: int) -> KeptRowSumSpec:
    """What a user-level sum or mean capped by rows alone reads (static): the kept rows' fixed-point sum on ``2**k``.

    ``Query.sum/mean(…, user=…) | Clip(l, u) | MaxRowsPerUser(r)`` without
    ``ClipPerUser``: each user's ``r`` kept rows, each clipped to ``[l, u]``, summed
    exactly (:func:`~dpalg.data._unit_totals.numpy_kept_row_sum`); on a Spark frame
    the choice and the sum run on the executors and two numbers reach the driver.
    """
    assert query.user is not None and query.column is not None and query.max_rows is not None and not query.per_user_totals
    lower, upper = query.require_bounds(query.kind)
    return KeptRowSumSpec(query.user, query.column, lower, upper, k, query.max_rows)


def sorted_user_totals(query: Query, data: Dataset, k: int, secret: bytes) -> npt.NDArray[np.int64]:
    """Each user's total on the lattice ``2**k``, clamped to the per-user clip, in ascending order (the seam's ``unit_totals``).

    A count totals the user's kept rows (``k = 0``); a sum totals their kept,
    row-clipped values rounded to the lattice. The total is exact and clamped to
    :func:`total_bounds`; a user with no kept row has total 0, clamped too.

    The same multiset (each user's total is a function of that user's rows and the
    secret only), computed where the data is: on Spark one ``long`` per user reaches
    the driver, in jobs, and no column; in polars one ``group_by``. For a consumer
    that depends on the multiset only (a mean, a quantile, a trimmed mean, a
    distance to instability over sorted values).
    """
    spec = unit_total_spec(query, k)
    assert spec is not None and query.per_user_totals
    return as_reductions(data).unit_totals(spec, secret)


def total_sensitivity(query: Query, k: int) -> int:
    """Largest |clamped total| one user can add, in lattice units of ``2**k`` (static).

    The total lies in the outward-rounded ClipPerUser range ``[L, U]``; when the
    rows are also capped (``MaxRowsPerUser(r)``) and clipped to ``[l, u]`` (a
    count: each row is 1), the raw total lies in ``[r·min(l, 0), r·max(u, 0)]``
    and the clamp maps that interval into ``[clamp(r·min(l,0)), clamp(r·max(u,0))]``.
    """
    lo, hi = total_bounds(query, k)
    cands = [abs(lo), abs(hi)]
    if query.max_rows is not None and (query.kind == "count" or query.lower is not None):
        if query.kind == "count":
            row_lo, row_hi = 0, 1
        else:
            assert query.lower is not None and query.upper is not None
            row_lo, row_hi = lattice_bounds(query.lower, query.upper, k, "Clip")
        r = query.max_rows
        raw_lo, raw_hi = r * min(row_lo, 0), r * max(row_hi, 0)
        cands = [abs(min(max(raw_lo, lo), hi)), abs(min(max(raw_hi, lo), hi))]
    return max(cands)


def real_total_sensitivity(query: Query) -> Fraction:
    """:func:`total_sensitivity` in real units, without the lattice (for choosing the lattice)."""
    assert query.user_lower is not None and query.user_upper is not None
    return max(abs(query.user_lower), abs(query.user_upper))


#: statistics over users' clipped totals that the local-sensitivity mechanisms release (one value per user)
PER_USER_STATS: Final = ("mean", "median", "quantile", "trimmed_mean", "max", "min")


def row_view(owner: str, query: Query) -> Query:
    """The row-level query whose rows are the users' clipped totals (static).

    Under "add or remove one user", a query over ``| ClipPerUser(L, U)`` totals
    sees one value in ``[L, U]`` added or removed: exactly the row-level
    add/remove relation over the totals. So every exact LS_k profile, smooth
    sensitivity and distance to instability of the row-level query with
    ``Clip(L, U)`` applies unchanged to the totals. Row-level queries are
    returned as they are.

    Raises:
        InvalidArgument: a user-level query without ``ClipPerUser`` (with
            ``MaxRowsPerUser`` alone one user moves k values, which these
            profiles do not cover) or of another kind.
    """
    if query.user is None:
        return query
    if not query.per_user_totals or query.kind not in PER_USER_STATS:
        raise InvalidArgument(
            owner, "query", query,
            f"a user-level query needs | ClipPerUser(lower, upper) and a kind in {PER_USER_STATS}: "
            "the local-sensitivity profiles are exact over one value (the clipped total) per user",
        )
    return query.totals_view()


def unit_values(query: Query, data: Dataset, rng: AbstractRandomness) -> npt.NDArray[np.float64]:
    """The values a statistic is computed on: the clipped rows, or the users' clipped totals.

    Totals are exact on the lattice ``2**k`` with ``k = floor(log2(U − L)) − 40``
    (public), converted to float and clamped into ``[L, U]`` (both per-user
    maps), so each user contributes one value in ``[L, U]``.
    """
    if query.user is None:
        return query.values(data)
    view = row_view("unit_values", query)
    lower, upper = view.require_bounds("unit_values")
    secret = prf_secret(rng) if query.max_rows is not None else bytes(32)
    width = upper - lower if upper > lower else Fraction(1)
    k = floor_log2(width) - 40
    # every kind row_view admits is a statistic of the multiset of totals (Query.function is row-level: Query refuses
    # user= on it), so the ascending totals of the seam serve (no column collected on Spark)
    totals = sorted_user_totals(query, data, k, secret)
    return clip_inside(np.ldexp(totals.astype(np.float64), k), lower, upper)
