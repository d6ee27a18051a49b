"""The grouping seam: what a GROUP BY asks of a backend, and the numpy answers.

The GROUP BY runner (:mod:`dpalg.release._release`) asks four data-dependent
questions, in this order, and nothing else about the rows:

1. **the group codes** (:func:`group_coding`): every row's group, for public keys
   (with an optional "other" group) or for the distinct present keys, which are
   then the labels, sorted in key order (:func:`~dpalg.data._groups.group_index`);
2. **the per-user bound** (:meth:`GroupCoding.bounded`): each user keeps the rows
   of the ``m`` groups of lowest keyed priority
   (:func:`~dpalg.data._groups.bound_groups`);
3. **the distinct users (or rows) of every group**
   (:meth:`GroupCoding.distinct_units`), which private keys are selected on;
4. **the released groups** (:meth:`GroupCoding.released`): their row counts,
   counts of present values and exact fixed-point sums, all groups at once, and
   one group's rows as a :class:`~dpalg.data.Dataset` for the other aggregates
   (:class:`ReleasedGroups`; :class:`~dpalg.data._grouped.GroupedRows` answers it
   in memory).

Every answer is small (one number per group) except the rows of one group,
which is a dataset, so a backend that keeps the rows where they are answers
these questions there. :class:`NumpyCoding` answers them in memory with the
numpy functions. A dataset's :class:`~dpalg.data._dataset.ColumnSource` may
offer its own answers with a ``grouping(dataset, by, keys, other=, unit=, reads=, owner=)``
method (as it offers its reductions with ``reductions(dataset)``; the Spark
source does, :mod:`dpalg.data._spark_grouping`); it returns ``None`` when it
cannot (a column type it does not read exactly), and the numpy answers are used.
Every backend's answers are bit-identical to the numpy ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, final

import numpy as np
import numpy.typing as npt

from dpalg.data._dataset import Dataset
from dpalg.data._grouped import GroupedRows, public_int_codes
from dpalg.data._groups import GroupKey, bound_groups, distinct_units_per_group, group_index
from dpalg.data._keys import Key
from dpalg.data._reductions import LatticeSum, SumSpec

__all__ = ["GroupCoding", "KeyParts", "NumpyCoding", "ReleasedGroups", "group_coding", "key_parts"]


class ReleasedGroups(Protocol):
    """The released groups of a GROUP BY and their reductions, all groups at once.

    Each answer equals, bit for bit, what :class:`~dpalg.data.NumpyReductions`
    answers on that group's rows (:class:`~dpalg.data._grouped.GroupedRows`).
    """

    @property
    def n_groups(self) -> int:
        """How many groups are released."""
        ...

    def row_counts(self) -> npt.NDArray[np.int64]:
        """Each released group's number of rows (missing values included)."""
        ...

    def present_counts(self, column: str) -> npt.NDArray[np.int64]:
        """Each released group's number of present values of a numeric column."""
        ...

    def clipped_sums(self, spec: SumSpec) -> list[LatticeSum]:
        """Each released group's exact fixed-point sum."""
        ...

    def rows(self, i: int) -> Dataset:
        """The ``i``-th released group's rows, as a dataset of the same backend when it can be."""
        ...


class GroupCoding(Protocol):
    """Every row's group, held by the backend that holds the rows (module docstring)."""

    @property
    def labels(self) -> tuple[GroupKey, ...]:
        """The groups' keys: the public labels, or the distinct present keys in key order."""
        ...

    def bounded(self, unit: str, max_groups: int, secret: bytes) -> GroupCoding:
        """The coding after each user keeps at most ``max_groups`` groups (:func:`~dpalg.data._groups.bound_groups`)."""
        ...

    def distinct_units(self, unit: str | None) -> npt.NDArray[np.int64]:
        """How many distinct users (``unit=None``: rows) each group holds (:func:`~dpalg.data._groups.distinct_units_per_group`)."""
        ...

    def released(self, groups: Sequence[int]) -> ReleasedGroups:
        """The released groups (distinct codes, in release order)."""
        ...

    def close(self) -> None:
        """Release what the coding holds (a backend's cache); idempotent."""
        ...


@final
class NumpyCoding:
    """The numpy answers: each row's code in memory (the columns are read into the driver)."""

    __slots__ = ("_codes", "_data", "_labels", "_owner")

    def __init__(self, data: Dataset, labels: tuple[GroupKey, ...], codes: npt.NDArray[np.intp], owner: str) -> None:
        self._data, self._labels, self._codes, self._owner = data, labels, codes, owner

    @classmethod
    def build(cls, data: Dataset, by: Sequence[str], keys: Sequence[GroupKey] | None, *, other: bool, labels: Sequence[GroupKey] | None, owner: str) -> NumpyCoding:
        """:func:`~dpalg.data._groups.group_index` (one integer column and public keys: a table lookup)."""
        codes = public_int_codes(data.column(by[0]), keys, other=other) if keys is not None and len(by) == 1 else None
        if codes is None:
            present, codes = group_index(data, by, keys, other=other, owner=owner)
        else:
            present = tuple(keys or ())
        return cls(data, tuple(labels) if labels is not None else present, codes, owner)

    @property
    def labels(self) -> tuple[GroupKey, ...]:
        return self._labels

    @property
    def codes(self) -> npt.NDArray[np.intp]:
        """Every row's code (``-1``: in no group)."""
        return self._codes

    def bounded(self, unit: str, max_groups: int, secret: bytes) -> NumpyCoding:
        codes = bound_groups(self._data, unit, self._labels, self._codes, max_groups, secret, owner=self._owner)
        return NumpyCoding(self._data, self._labels, codes, self._owner)

    def distinct_units(self, unit: str | None) -> npt.NDArray[np.int64]:
        return distinct_units_per_group(self._data, unit, self._codes, len(self._labels), owner=self._owner)

    def released(self, groups: Sequence[int]) -> GroupedRows:
        return GroupedRows(self._data, self._codes, len(self._labels), groups)

    def close(self) -> None:
        pass

    def __repr__(self) -> str:  # never prints values
        return f"NumpyCoding({len(self._labels)} groups of {self._data!r})"


def group_coding(
    data: Dataset,
    by: Sequence[str],
    keys: Sequence[GroupKey] | None,
    *,
    other: bool = False,
    labels: Sequence[GroupKey] | None = None,
    unit: str | None = None,
    reads: Sequence[str] = (),
    owner: str = "GroupBy",
) -> GroupCoding:
    """Every row's group, answered by the dataset's backend when it can, else in memory.

    Args:
        data: the dataset.
        by: the key columns.
        keys: the public keys (normalised, distinct), or ``None`` for the keys present.
        other: with public keys, a row whose present key is not listed goes to group ``len(keys)``.
        labels: the labels of the groups with public keys (the keys, then the "other" label).
        unit: the id column the later questions ask about (a backend that cannot group it answers nothing).
        reads: every column the aggregates read (a backend that copies the rows keeps these).
        owner: the caller's name for error messages (which never show a value).

    Examples:
        >>> from dpalg.data import as_dataset
        >>> coding = group_coding(as_dataset({"k": ["b", "a", None, "b"]}), ["k"], None)
        >>> coding.labels, coding.released([1]).row_counts().tolist()
        (('a', 'b'), [2])
    """
    source = data.source
    grouping = getattr(source, "grouping", None)  # a backend that groups where its rows are (optional)
    if callable(grouping):
        found = grouping(data, tuple(by), None if keys is None else tuple(keys), other=other, labels=labels, unit=unit, reads=tuple(reads), owner=owner)
        if found is not None:
            coding: GroupCoding = found
            return coding
    return NumpyCoding.build(data, by, keys, other=other, labels=labels, owner=owner)


class KeyParts(Protocol):
    """The parts of a split by key, as a backend holds them (:func:`key_parts`)."""

    @property
    def datasets(self) -> list[Dataset]:
        """One dataset per listed key, in the order of the keys."""
        ...

    def close(self) -> None:
        """Release what the backend keeps for the parts (once every part has run)."""
        ...


def key_parts(data: Dataset, by: str, keys: Sequence[Key], *, unit: str | None) -> KeyParts | None:
    """``Parallel``'s parts computed where the rows are, or ``None``: the caller splits in memory.

    A dataset's :class:`~dpalg.data._dataset.ColumnSource` may offer a
    ``parts(dataset, by, keys, unit=)`` method (the Spark source does:
    :func:`~dpalg.data._spark_grouping.spark_parts`) returning the same rows as the
    in-memory split; it returns ``None`` for a column type it does not read exactly.
    """
    parts = getattr(data.source, "parts", None)
    if callable(parts):
        found: KeyParts | None = parts(data, by, tuple(keys), unit=unit)
        return found
    return None
