"""The skeleton shared by the reductions of a :class:`~dpalg.data.Dataset` backed by a ColumnSource (polars, Spark).

Each backend answers the :class:`~dpalg.data.Reductions` questions its own way; what
they share is the pairing with the dataset (the numpy backend over the same dataset
answers the column types a backend does not compute) and a repr that never prints
values.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from dpalg.data._dataset import ColumnSource, Dataset
from dpalg.data._numpy_reductions import NumpyReductions

__all__ = ["SourceReductions"]

S = TypeVar("S", bound=ColumnSource)


class SourceReductions(Generic[S]):
    """A dataset and its backend source; subclasses implement the reductions."""

    __slots__ = ("_data", "_source")

    def __init__(self, data: Dataset, source: S) -> None:
        self._data = data
        self._source = source

    @property
    def dataset(self) -> Dataset:
        """The underlying dataset (for user functions, which receive rows)."""
        return self._data

    def __repr__(self) -> str:  # never prints values
        return f"{type(self).__name__}({self._data!r})"

    def _numpy(self) -> NumpyReductions:
        """The numpy backend over the same dataset: for the types the backend does not compute (columns converted once)."""
        return NumpyReductions(self._data)
