"""Grouping rows for a GROUP BY: group keys, the per-user group bound, and each group's rows.

Three steps, each a function of public parameters and the data only (no randomness
but the secret of the keyed hash, which the noise layer draws):

1. :func:`group_index` gives every row its group: the index of its key (one
   column, or the tuple of several) in a public key list, or in the sorted list of
   the distinct keys present in the data. Keys follow the key policy
   (:func:`~dpalg.data.normalise_key`): a row with a missing key in any of the
   ``by`` columns is in no group; ``True`` is not the key ``1``; ``1.0`` is ``1``.
   With an "other" group, a row whose (present) key is not listed goes to it.
2. :func:`bound_groups` keeps, for every user, the rows of at most ``m`` of the
   user's groups, chosen by a keyed hash of the user and the group key
   (:func:`~dpalg.data.select_keys`): the choice depends only on that user's rows
   and the secret, so adding or removing one user changes no other user's kept rows.
3. each group's rows and its reductions for all groups at once are
   :class:`~dpalg.data._grouped.GroupedRows` (one stable sort of the codes, not one
   pass per group), reached through :mod:`dpalg.data._grouping`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._keys import Key, _tag, key_index, key_order, normalise_key
from dpalg.data._row_choice import _mix, _words, keyed_hashes
from dpalg.data._user_units import unit_index

__all__ = ["GroupKey", "bound_groups", "distinct_units_per_group", "group_index", "group_key_order", "label_hashes", "normalise_group_key"]

#: a group's key: one column's key, or the tuple of several columns' keys
GroupKey = Key | tuple[Key, ...]

_NO_GROUP: Final = -1


def normalise_group_key(value: object, width: int) -> GroupKey | None:
    """A public group key under the key policy, or ``None`` when it cannot be one.

    With one ``by`` column a key is one value; with ``width`` columns it is a tuple
    of ``width`` values, each normalised (``None`` when any part is missing).

    Examples:
        >>> normalise_group_key(2.0, 1), normalise_group_key(("a", 1.0), 2), normalise_group_key(("a",), 2)
        (2, ('a', 1), None)
    """
    if width == 1:
        return normalise_key(value)
    if not isinstance(value, tuple) or len(value) != width:
        return None
    parts = tuple(normalise_key(v) for v in value)
    if any(p is None for p in parts):
        return None
    return parts  # type: ignore[return-value]  # no part is None (checked above)


def group_key_order(key: GroupKey) -> tuple[tuple[int, Key], ...]:
    """The sort key of group keys: lexicographic in :func:`~dpalg.data.key_order` of the parts."""
    if isinstance(key, tuple):
        return tuple(key_order(k) for k in key)
    return (key_order(key),)


def _tagged(key: GroupKey) -> object:
    if isinstance(key, tuple):
        return tuple((_tag(k), k) for k in key)
    return (_tag(key), key)


def _present_groups(data: Dataset, by: Sequence[str], owner: str) -> tuple[tuple[GroupKey, ...], npt.NDArray[np.intp]]:
    """The distinct present group keys (sorted) and each row's index among them (-1: a part is missing)."""
    if len(by) == 1:
        return key_index(data.column(by[0]), owner=owner)
    per_column = [key_index(data.column(name), owner=owner) for name in by]
    stacked = np.stack([codes for _, codes in per_column], axis=1)
    present = np.all(stacked >= 0, axis=1)
    codes = np.full(stacked.shape[0], _NO_GROUP, dtype=np.intp)
    if not np.any(present):
        return (), codes
    # per-column codes are ranks in key order, so the lexicographic order of the code rows is the key order
    combos, inverse = np.unique(stacked[present], axis=0, return_inverse=True)
    codes[present] = inverse.reshape(-1)
    combined: tuple[GroupKey, ...] = tuple(tuple(per_column[j][0][int(c)] for j, c in enumerate(row)) for row in combos.tolist())
    return combined, codes


def group_index(
    data: Dataset,
    by: Sequence[str],
    keys: Sequence[GroupKey] | None,
    *,
    other: bool = False,
    owner: str = "GroupBy",
) -> tuple[tuple[GroupKey, ...], npt.NDArray[np.intp]]:
    """Every row's group.

    Args:
        data: the dataset.
        by: the key columns (one or more).
        keys: the public keys (normalised, distinct), or ``None`` for the keys present in the data.
        other: with public keys, send a row whose present key is not listed to one
            more group, index ``len(keys)``.
        owner: the caller's name for error messages (which never show a value).

    Returns:
        ``(group_keys, codes)``: the keys of the groups (the public list, or the
        distinct present keys in key order) and each row's group index, ``-1``
        for a row in no group.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> d = as_dataset({"k": ["b", "a", None, "c", "a"]})
        >>> group_index(d, ["k"], None)[1].tolist()
        [1, 0, -1, 2, 0]
        >>> group_index(d, ["k"], ["a", "b"], other=True)[1].tolist()
        [1, 0, -1, 2, 0]
    """
    present, codes = _present_groups(data, by, owner)
    if keys is None:
        return present, codes
    wanted: dict[object, int] = {}
    for i, key in enumerate(keys):
        wanted.setdefault(_tagged(key), i)
    unlisted = len(keys) if other else _NO_GROUP
    remap = np.array([wanted.get(_tagged(k), unlisted) for k in present] + [_NO_GROUP], dtype=np.intp)
    return tuple(keys), remap[codes]


def label_hashes(labels: Sequence[GroupKey], secret: bytes) -> npt.NDArray[np.uint64]:
    """A keyed hash of every group's label: a function of the secret and the label only.

    Hashing the label (not a row's raw key) matters for the "other" group, whose rows
    hold different raw keys: the group's hash must not depend on which row comes first.
    """
    if not labels:
        return np.zeros(0, dtype=np.uint64)
    words = _words(secret)
    parts = [tuple(k) if isinstance(k, tuple) else (k,) for k in labels]
    h = keyed_hashes(np.array([p[0] for p in parts] + [None], dtype=object)[:-1], secret)
    for j in range(1, len(parts[0])):
        h = _mix(h, keyed_hashes(np.array([p[j] for p in parts] + [None], dtype=object)[:-1], secret), words[j % 4])
    return h


def bound_groups(
    data: Dataset,
    unit: str,
    labels: Sequence[GroupKey],
    codes: npt.NDArray[np.intp],
    max_groups: int,
    secret: bytes,
    *,
    owner: str = "GroupBy",
) -> npt.NDArray[np.intp]:
    """The group codes after each user keeps at most ``max_groups`` groups (dropped rows get ``-1``).

    A user's groups are ranked by a keyed hash of (user, group key) (the
    priority of :func:`~dpalg.data.select_keys`, ties broken by the key's hash,
    then the key); the ``max_groups`` lowest are kept with all their rows. The
    choice depends only on the secret and that user's groups. Rows with a missing
    id belong to no user and are dropped. One sort of the rows' (user, group)
    pairs, then one of the distinct pairs.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> d = as_dataset({"u": [1, 1, 1, 2], "k": ["a", "b", "c", "a"]})
        >>> keys, codes = group_index(d, ["k"], None)
        >>> kept = bound_groups(d, "u", keys, codes, 2, bytes(32))
        >>> int((kept[:3] >= 0).sum()), int(kept[3])
        (2, 0)
    """
    if max_groups < 1:
        raise InvalidArgument(owner, "max_groups", max_groups, "must be >= 1")
    ids = data.column(unit)
    n_units, unit_codes = unit_index(ids, owner=owner)
    out = np.full(codes.size, _NO_GROUP, dtype=np.intp)
    rows = np.flatnonzero((unit_codes >= 0) & (codes >= 0))
    if rows.size == 0:
        return out
    words = _words(secret)
    n_groups = max(len(labels), 1)
    # one entry per distinct (user, group): its first row stands for it (the hashes depend on the pair only)
    pairs, first, inverse = np.unique(unit_codes[rows].astype(np.int64) * n_groups + codes[rows], return_index=True, return_inverse=True)
    heads = rows[first]
    users, groups = unit_codes[heads], codes[heads]
    group_hash = label_hashes(labels, secret)[groups]
    priority = _mix(keyed_hashes(ids[heads], secret), group_hash, words[2])
    # a user's groups in order of the keyed priority (ties: the group key's hash, then the key): keep the first m
    order = np.lexsort((groups, group_hash, priority, users))
    sorted_users = users[order]
    new = np.ones(order.size, dtype=np.bool_)
    new[1:] = sorted_users[1:] != sorted_users[:-1]
    rank = np.arange(order.size, dtype=np.intp) - np.flatnonzero(new)[np.cumsum(new) - 1]
    kept = np.empty(order.size, dtype=np.bool_)
    kept[order] = rank < max_groups
    keep_rows = kept[inverse.reshape(-1)]
    out[rows[keep_rows]] = codes[rows[keep_rows]]
    return out


def distinct_units_per_group(data: Dataset, unit: str | None, codes: npt.NDArray[np.intp], n_groups: int, *, owner: str = "GroupBy") -> npt.NDArray[np.int64]:
    """How many distinct users (or, with ``unit=None``, rows) each group holds.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> d = as_dataset({"u": [1, 1, 2, None], "k": ["a", "a", "a", "a"]})
        >>> distinct_units_per_group(d, "u", np.array([0, 0, 0, 0]), 1).tolist()
        [2]
    """
    if unit is None:
        return np.bincount(codes[codes >= 0], minlength=n_groups).astype(np.int64)
    n_units, users = unit_index(data.column(unit), owner=owner)
    rows = (codes >= 0) & (users >= 0)
    if not np.any(rows):
        return np.zeros(n_groups, dtype=np.int64)
    pairs = np.unique(codes[rows].astype(np.int64) * max(n_units, 1) + users[rows])
    return np.bincount(pairs // max(n_units, 1), minlength=n_groups).astype(np.int64)
