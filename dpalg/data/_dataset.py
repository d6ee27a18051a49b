"""The data layer: columns of numpy arrays, the privacy unit and the neighbouring relation.

Data policy (documented once, used everywhere):

* a dataset is a mapping from column name to a 1-D array; all columns have the
  same length; a pandas or polars DataFrame is accepted through :func:`as_dataset`;
* numeric columns are read as float64 (integers exactly up to 2**53);
* ``NaN`` and ``None`` in a numeric column mean "no value": the row is dropped
  from that query (a row-wise, unit-local transformation, so it is stable and
  costs no privacy); ``±inf`` is kept and clipped by the query's bounds;
* an empty dataset is valid: every mechanism defines its output on it;
* errors about data name columns and shapes, never values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = ["Dataset", "DataLike", "Neighbouring", "Relation", "as_dataset", "ROW"]

Relation = Literal["add_remove", "substitution"]
_RELATIONS = ("add_remove", "substitution")


def _relation(value: str) -> Relation:
    if value == "add_remove":
        return "add_remove"
    if value == "substitution":
        return "substitution"
    raise InvalidArgument("Neighbouring", "relation", value, f"must be one of {_RELATIONS}")


def _unit(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgument("Neighbouring", "unit", value, "must be None (one row) or a non-empty id column name")
    return value


@final
@attrs.frozen
class Neighbouring:
    """Which datasets are neighbours: the privacy unit and the relation.

    Args:
        unit: ``None`` for one row, or the name of the id column whose value
            identifies a user (then a unit is *all* rows of one user).
        relation: ``"add_remove"`` (default: add or remove one unit) or
            ``"substitution"`` (replace one unit's data).
    """

    unit: str | None = attrs.field(default=None, converter=_unit)
    relation: Relation = attrs.field(default="add_remove", converter=_relation)

    def describe(self) -> str:
        """A sentence for docs and certificates."""
        who = "one row" if self.unit is None else f"one user (all rows sharing {self.unit!r})"
        how = "adding or removing" if self.relation == "add_remove" else "replacing"
        return f"neighbours differ by {how} {who}"


ROW = Neighbouring()

ArrayLike1D = npt.ArrayLike
DataLike = Mapping[str, ArrayLike1D] | object


@final
class Dataset:
    """Columns of equal length, read-only. Build with :func:`as_dataset`."""

    __slots__ = ("_columns", "_n")

    def __init__(self, columns: Mapping[str, npt.NDArray[np.generic]]) -> None:
        lengths = {name: arr.shape[0] for name, arr in columns.items()}
        if len(set(lengths.values())) > 1:
            raise InvalidArgument("Dataset", "columns", lengths, "must all have the same length")
        self._columns = dict(columns)
        self._n = next(iter(lengths.values()), 0)

    @property
    def n_rows(self) -> int:
        """Number of rows (public only when the plan says so; mechanisms never print it)."""
        return self._n

    @property
    def names(self) -> tuple[str, ...]:
        """Column names."""
        return tuple(self._columns)

    def column(self, name: str) -> npt.NDArray[np.generic]:
        """The raw column (read-only view)."""
        try:
            arr = self._columns[name]
        except KeyError:
            raise InvalidArgument("Dataset", "column", name, f"is not a column; available: {sorted(self._columns)}") from None
        view = arr.view()
        view.flags.writeable = False
        return view

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        """The column as float64 with NaN/None rows still present (see the data policy)."""
        arr = self.column(name)
        if arr.dtype == object:
            try:
                return np.array([np.nan if v is None else float(v) for v in arr], dtype=np.float64)
            except (TypeError, ValueError):
                raise InvalidArgument("Dataset", name, f"dtype={arr.dtype}", "must hold numbers or None") from None
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise InvalidArgument("Dataset", name, f"dtype={arr.dtype}", "must be numeric")
        return arr.astype(np.float64, copy=False)

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> Dataset:
        """A sub-dataset (used by parallel composition and sample-and-aggregate)."""
        return Dataset({k: v[rows] for k, v in self._columns.items()})

    def __repr__(self) -> str:  # never prints values
        return f"<Dataset columns={list(self._columns)}>"


def as_dataset(data: object) -> Dataset:
    """Adapt a mapping of 1-D arrays, a pandas DataFrame or a polars DataFrame.

    Raises:
        InvalidArgument: when a column is not 1-D or lengths differ.
    """
    if isinstance(data, Dataset):
        return data
    columns: dict[str, npt.NDArray[np.generic]] = {}
    if isinstance(data, Mapping):
        items = list(data.items())
    elif hasattr(data, "columns") and hasattr(data, "__getitem__"):
        # pandas and polars both expose .columns and column access by name
        items = [(str(name), _to_numpy(data[name])) for name in getattr(data, "columns")]
    else:
        raise InvalidArgument("as_dataset", "data", type(data).__name__, "must be a mapping of column -> 1-D array or a DataFrame")
    for name, values in items:
        arr = np.asarray(_to_numpy(values))
        if arr.ndim != 1:
            raise InvalidArgument("as_dataset", f"column {name!r}", f"ndim={arr.ndim}", "must be 1-D")
        columns[str(name)] = arr
    return Dataset(columns)


def _to_numpy(values: object) -> object:
    to_numpy = getattr(values, "to_numpy", None)
    if callable(to_numpy):
        return to_numpy()
    return values
