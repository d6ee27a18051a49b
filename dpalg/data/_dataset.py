"""The data layer: columns of numpy arrays, the privacy unit and the neighbouring relation.

Data policy (the reference: documented once here, implemented once in
:mod:`dpalg.data._numeric` and :mod:`dpalg.data._keys`, used everywhere). Its
aim is DESIGN §3, "Releases are total": after the charge nothing observable may
depend on the data except through the mechanism's proven output, so **no value
ever makes a release raise**; only the public *schema* (column names and
dtypes) can, and it is checked before the charge.

Datasets

* a dataset is a mapping from column name to a 1-D array; all columns have the
  same length; a pandas or polars DataFrame is accepted through :func:`as_dataset`;
* an empty dataset is valid: every mechanism defines its output on it;
* errors about data name columns, dtypes and shapes, never values.

Schema (checked before the charge, :func:`dpalg.data._schema.check_columns`)

* every node states the columns it reads and their role (numeric, key, id);
  a missing column is refused, and so is a dtype the role cannot read:
  complex (its imaginary part would be silently lost) or str/bytes for a
  numeric column; dates, durations and structured dtypes for any role.

Numbers (:meth:`Dataset.numeric`, :func:`dpalg.data._numeric.to_float`)

* a numeric column is read as float64 (integers exactly up to 2**53);
* ``NaN``, ``None``, ``pd.NA`` and ``NaT`` mean "no value": the row is dropped
  from that query (a row-wise, unit-local transformation, so it is stable and
  costs no privacy);
* in an ``object`` column, bool, int, float, ``Fraction``, ``Decimal`` and
  numpy real scalars convert; every other value (str -- even ``"3"`` --,
  bytes, complex, dates, other objects) does not fit and is missing too;
* ``±inf`` is kept and clipped by the query's bounds; a real too large for a
  float (``10**400``) becomes ``±inf`` (then clipped) -- never an overflow error.

Keys and unit ids (:meth:`Dataset.key_index`, :func:`dpalg.data._keys.normalise_key`)

* histogram and partition keys and unit ids are read the same way;
* ``None``, NaN, ``pd.NA`` and ``NaT`` are missing: a missing key is counted
  under no key; a row with a missing id belongs to no unit and is dropped by
  every user-level path; values of other types than bool, int, float, str and
  bytes (complex, dates, tuples, objects) do not fit and are missing too;
* keys are equal as Python values, with one exception: a bool is never equal
  to an int (``True`` is not the key ``1``; a silent merge would miscount).
  So ``1`` and ``"1"`` are different keys (and users), ``1`` and ``1.0`` the
  same (pandas turns an int column with a missing value into floats);
* keys of mixed types are ordered by kind, then value (bool < numbers < str <
  bytes, :func:`dpalg.data._keys.key_order`), so no comparison ever raises
  and the order of present keys is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._keys import Key, key_codes, key_index
from dpalg.data._numeric import as_column, to_float

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
        """The column as float64, missing values as NaN (see the data policy).

        Never raises because of a value; raises only for the schema.

        Raises:
            InvalidArgument: when ``name`` is not a column or its dtype cannot
                hold numbers (complex, str, dates).
        """
        return to_float(self.column(name), owner="Dataset", field=name)

    def key_index(self, name: str) -> tuple[tuple[Key, ...], npt.NDArray[np.intp]]:
        """The distinct present keys of a column (in key order) and each row's index (-1: missing).

        See :func:`dpalg.data._keys.key_index`.
        """
        return key_index(self.column(name), owner=f"Dataset column {name!r}")

    def key_codes(self, name: str, keys: Sequence[Key]) -> npt.NDArray[np.intp]:
        """Each row's index in the public list ``keys`` (-1: missing or not listed).

        See :func:`dpalg.data._keys.key_codes`.
        """
        return key_codes(self.column(name), keys, owner=f"Dataset column {name!r}")

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
        arr = as_column(_to_numpy(values))  # a Python list mixing kinds stays object: [1, "1"] is not ["1", "1"]
        if arr.ndim != 1:
            raise InvalidArgument("as_dataset", f"column {name!r}", f"ndim={arr.ndim}", "must be 1-D")
        columns[str(name)] = arr
    return Dataset(columns)


def _to_numpy(values: object) -> object:
    to_numpy = getattr(values, "to_numpy", None)
    if callable(to_numpy):
        return to_numpy()
    return values
