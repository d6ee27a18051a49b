"""The data layer: columns of numpy arrays, the privacy unit and the neighbouring relation.

The privacy unit and relation are defined in :mod:`dpalg.data._neighbouring` and the
backend record in :mod:`dpalg.data._backend_info`; both are re-exported here.

Data policy (the reference: documented once here, implemented once in
:mod:`dpalg.data._numeric` and :mod:`dpalg.data._keys`, used everywhere). Its
aim is the invariant "releases are total" (``docs/architecture.md``): after the charge nothing observable may
depend on the data except through the mechanism's proven output, so **no value
ever makes a release raise**; only the public *schema* (column names and
dtypes) can, and it is checked before the charge.

Datasets

* a dataset is a mapping from column name to a 1-D array; all columns have the
  same length; a pandas DataFrame is accepted through :func:`as_dataset` (a
  nullable integer column with a missing value keeps exact Python ints, not the
  float64 of ``to_numpy()``, so ids above 2**53 stay distinct);
* a polars DataFrame or LazyFrame stays where it is: :func:`as_dataset` wraps it
  in a :class:`Dataset` backed by a :class:`ColumnSource` whose schema comes from
  the frame's schema (no row is read before the charge), whose reductions run in
  polars (``docs/reductions.md``, "Polars") and whose columns are converted to
  numpy one at a time, only when a mechanism that does not read through the
  reductions seam asks for one. Every answer equals the one for the same values
  given as numpy arrays;
* an empty dataset is valid: every mechanism defines its output on it;
* errors about data name columns, dtypes and shapes, never values.

Schema (checked before the charge, :func:`dpalg.data._schema.check_columns`)

* every node states the columns it reads and their role (numeric, key, id),
  and the public keys a key column is matched against; a missing column is
  refused, and so is a type the role cannot read: complex (its imaginary part
  would be silently lost) or str/bytes for a numeric column; dates, durations
  and structured dtypes for any role; bool for an id; public keys of a kind
  the column cannot hold (str keys on an int column). The table is in
  :mod:`dpalg.data._schema` and ``docs/data_policy.md``;
* the type is the *declared* one (:meth:`Dataset.column_type`): a pandas
  column's dtype is read before it is converted to numpy
  (:mod:`dpalg.data._column_type`: a ``string`` column is str although its
  numpy array is ``object``, a ``category`` is its categories' dtype), a
  polars or Spark column's from the frame's schema. An ``object`` column is
  opaque to the schema and read value by value.

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
  every user-level path; values that are not bools, real numbers, str or
  bytes (complex, dates, tuples, objects) do not fit and are missing too;
* numbers are read **exactly**, never through a rounding float
  (:func:`dpalg.data._keys.normalise_key`): an integral number of any type
  (int, float, ``Decimal``, ``Fraction``, numpy) is that int, a non-integral one
  the float equal to it when there is one, else its exact ``Fraction``. So
  ``Decimal(2**53 + 1)`` is a user of its own, not ``2**53`` (merging two ids
  would let an added user *change* an existing one: twice the declared
  sensitivity of a clipped user total), and ``Decimal('0.1')`` is not the float
  ``0.1``. Every backend reads ids so: numpy ``object`` arrays, pandas ``object``
  and Arrow decimal columns, polars ``Decimal`` and Spark ``DecimalType`` columns
  (value by value, through this policy), integer columns of every width
  (grouped as integers). A ``Decimal`` too long to read exactly in bounded time
  (:data:`dpalg.data._keys.DECIMAL_DIGITS_LIMIT` digits) is missing, never
  rounded;
* keys are equal as Python values, with one exception: a bool is never equal
  to an int (``True`` is not the key ``1``; a silent merge would miscount).
  So ``1`` and ``"1"`` are different keys (and users), ``1``, ``1.0`` and
  ``Decimal('1.00')`` the same (pandas turns an int column with a missing value
  into floats);
* keys of mixed types are ordered by kind, then value (bool < numbers < str <
  bytes, :func:`dpalg.data._keys.key_order`), so no comparison ever raises
  and the order of present keys is deterministic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data._backend_info import BackendInfo, package_version
from dpalg.data._column_type import ColumnType, Library, numpy_column_type, pandas_column_type
from dpalg.data._keys import Key, key_codes, key_index
from dpalg.data._neighbouring import ROW, Neighbouring, Relation, check_relation
from dpalg.data._numeric import as_column, numeric_dtype_problem, to_float

if TYPE_CHECKING:
    from dpalg.data._reductions import Reductions

__all__ = ["BackendInfo", "ColumnSource", "Dataset", "DataLike", "FrameBackend", "Neighbouring", "Relation", "as_dataset", "check_relation", "in_memory_reductions", "run_data", "package_version", "register_frame_backend", "register_in_memory_reductions", "ROW"]

ArrayLike1D = npt.ArrayLike
DataLike = Mapping[str, ArrayLike1D] | object


class ColumnSource(Protocol):
    """Where a :class:`Dataset`'s columns live when they are not numpy arrays (a polars frame, a Spark DataFrame).

    A backend implements this protocol once; :func:`as_dataset` wraps it with
    :meth:`Dataset.from_source`, and :func:`~dpalg.data.as_reductions` hands
    mechanisms the backend's own :class:`~dpalg.data.Reductions`. The schema
    (``names``, :meth:`dtype`) is public and must be known without reading a row:
    the runner checks it before the charge.

    Optionally, a source has a ``close()`` method: a run that built the dataset
    itself (``plan.run(frame)``, ``Session.run``) calls it when the run ends,
    whether it succeeded or raised, to release what the source holds (the Spark
    source unpersists the cache it made). A dataset the caller built with
    :func:`as_dataset` is the caller's and is never closed by a run.

    Two more optional methods serve the runner before the charge
    (:mod:`dpalg.data._evaluation`): ``evaluate(names)`` computes the columns the
    plan reads and the row count, once, and keeps them for the run (a lazy
    source's plan then fails, if it fails, before anything is charged; a source
    without it has each read column converted to numpy instead), and
    ``name_problem(name)`` says why a column name would not resolve to exactly
    one column of the backend (or ``None``).
    """

    @property
    def names(self) -> tuple[str, ...]:
        """The column names."""
        ...

    def dtype(self, name: str) -> np.dtype[np.generic]:
        """The numpy dtype the data policy reads ``name`` as (schema only, no row read).

        A source may also have a ``column_type(name)`` method returning a
        :class:`~dpalg.data._column_type.ColumnType` (the same dtype, and the type
        as its library names it, for schema errors); without one, messages name
        the numpy dtype.
        """
        ...

    def count_rows(self) -> int:
        """The number of rows (reads the data if it must)."""
        ...

    def materialise(self, name: str) -> npt.NDArray[np.generic]:
        """One column as a 1-D numpy array holding the same values (for the mechanisms outside the seam)."""
        ...

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        """One column as float64, missing values as NaN: equal to ``to_float(materialise(name))``."""
        ...

    def reductions(self, dataset: Dataset) -> Reductions:
        """The backend's reductions over ``dataset`` (which is backed by this source)."""
        ...

    @property
    def backend(self) -> BackendInfo:
        """The backend's name and versions, for certificates; never reads a row, never raises.

        A dataset of numpy columns has no source and describes itself as
        ``numpy`` (:attr:`Dataset.backend`).
        """
        ...


@final
class Dataset:
    """Columns of equal length, read-only. Build with :func:`as_dataset`.

    A dataset either holds numpy columns or is backed by a :class:`ColumnSource`
    (a polars frame), whose columns are converted to numpy one at a time, on
    first use, and cached.
    """

    __slots__ = ("_columns", "_n", "_numeric", "_source", "_types")

    def __init__(self, columns: Mapping[str, npt.NDArray[np.generic]], types: Mapping[str, ColumnType] | None = None) -> None:
        """``columns``: 1-D arrays of equal length; ``types``: the declared type of columns whose array dtype
        does not say it (a pandas ``string`` column is an ``object`` array), by name."""
        lengths = {name: arr.shape[0] for name, arr in columns.items()}
        if len(set(lengths.values())) > 1:
            raise InvalidArgument("Dataset", "columns", lengths, "must all have the same length")
        self._columns = dict(columns)
        self._types = {name: kind for name, kind in (types or {}).items() if name in self._columns}
        self._n: int | None = next(iter(lengths.values()), 0)
        self._source: ColumnSource | None = None
        self._numeric: dict[str, npt.NDArray[np.float64]] = {}

    @classmethod
    def from_source(cls, source: ColumnSource) -> Dataset:
        """A dataset whose columns live in ``source``; nothing is read until a column or a reduction is asked for."""
        data = cls({})
        data._n = None
        data._source = source
        return data

    @property
    def source(self) -> ColumnSource | None:
        """The backend holding the columns, or ``None`` for numpy columns."""
        return self._source

    @property
    def backend(self) -> BackendInfo:
        """Which backend answers this dataset's reductions, with its versions (recorded in certificates).

        ``numpy`` for numpy columns (a mapping or a pandas DataFrame); a sourced
        dataset asks its :class:`ColumnSource`. Reads no row.

        Examples:
            >>> as_dataset({"x": [1.0]}).backend.name
            'numpy'
        """
        if self._source is None:
            return BackendInfo.installed("numpy", ["numpy"])
        describe = getattr(self._source, "backend", None)  # a source written before the protocol asked for it
        if isinstance(describe, BackendInfo):
            return describe
        kind = type(self._source)
        return BackendInfo.installed(f"{kind.__module__}.{kind.__qualname__}", ["numpy"])

    @property
    def n_rows(self) -> int:
        """Number of rows (public only when the plan says so; mechanisms never print it)."""
        if self._n is None:
            assert self._source is not None  # only a sourced dataset defers its length
            self._n = self._source.count_rows()
        return self._n

    @property
    def names(self) -> tuple[str, ...]:
        """Column names."""
        return self._source.names if self._source is not None else tuple(self._columns)

    def _unknown(self, name: str) -> InvalidArgument:
        return InvalidArgument("Dataset", "column", name, f"is not a column; available: {sorted(self.names)}")

    def column_dtype(self, name: str) -> np.dtype[np.generic]:
        """The column's dtype, read from the schema alone (never from a value).

        (Not ``dtype``: numpy reads an object's ``dtype`` attribute as an array's.)

        For a polars frame this is the numpy dtype the data policy reads the
        polars type as (``String`` is a str dtype, ``Int64`` is int64 whether or
        not it holds nulls), so the schema check gives the same answer whatever
        the rows.

        Raises:
            InvalidArgument: when ``name`` is not a column.
        """
        if self._source is None:
            declared = self._types.get(name)
            if declared is not None:
                return declared.dtype
            try:
                return self._columns[name].dtype
            except KeyError:
                raise self._unknown(name) from None
        if name not in self._source.names:
            raise self._unknown(name)
        return self._source.dtype(name)

    def column_type(self, name: str) -> ColumnType:
        """The column's public type: the dtype :meth:`column_dtype` returns, and the type as the user's library
        names it (``"str (pandas)"``, ``"String (polars)"``), for schema errors. Reads the schema alone.

        Raises:
            InvalidArgument: when ``name`` is not a column.

        Examples:
            >>> as_dataset({"x": np.array([1.5])}).column_type("x").describe()
            'float64 (numpy)'
        """
        if self._source is None:
            declared = self._types.get(name)
            return declared if declared is not None else numpy_column_type(self.column_dtype(name))
        dtype = self.column_dtype(name)
        stated = getattr(self._source, "column_type", None)  # optional in ColumnSource
        found = stated(name) if callable(stated) else None
        if isinstance(found, ColumnType):
            return found
        return ColumnType(dtype, str(dtype), _library(self.backend.name))

    def column(self, name: str) -> npt.NDArray[np.generic]:
        """The raw column (read-only view); a sourced column is converted to numpy once, on first use."""
        arr = self._columns.get(name)
        if arr is None:
            if self._source is None or name not in self._source.names:
                raise self._unknown(name)
            arr = as_column(self._source.materialise(name))
            if arr.ndim != 1:
                raise InvalidArgument("as_dataset", f"column {name!r}", f"ndim={arr.ndim}", "must be 1-D")
            self._columns[name] = arr
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
        if self._source is None:
            if name in self._types:
                self.require_numeric(name)  # the declared type decides (a pandas string column is an object array)
            return to_float(self.column(name), owner="Dataset", field=name)
        values = self._numeric.get(name)
        if values is None:
            self.require_numeric(name)  # the schema decides, before any row is converted
            values = self._numeric[name] = self._source.numeric(name)
        view = values.view()
        view.flags.writeable = False
        return view

    def require_numeric(self, name: str) -> None:
        """Raise what :meth:`numeric` raises for the schema (an unknown column, a dtype that holds no numbers), reading no row.

        Raises:
            InvalidArgument: as :meth:`numeric`.
        """
        dtype = self.column_dtype(name)
        problem = numeric_dtype_problem(dtype)
        if problem is not None:
            raise InvalidArgument("Dataset", name, f"dtype={dtype}", problem)

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
        """A sub-dataset (used by parallel composition, group privacy and sample-and-aggregate).

        A sourced dataset's sub-dataset converts a column only when it is read
        (once for the whole dataset, then sliced), so a column the plan never reads
        is never converted, whatever its type.
        """
        if self._source is None:
            return Dataset({k: v[rows] for k, v in self._columns.items()}, self._types)
        return Dataset.from_source(_Rows(self, rows))

    def __repr__(self) -> str:  # never prints values
        shown = f"<Dataset columns={list(self.names)}"
        return shown + (">" if self._source is None else f" source={self._source!r}>")


@final
class _Rows:
    """Some rows of a sourced dataset (a :class:`ColumnSource`): its columns, converted once and sliced."""

    __slots__ = ("_parent", "_rows")

    def __init__(self, parent: Dataset, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> None:
        self._parent, self._rows = parent, rows

    @property
    def names(self) -> tuple[str, ...]:
        return self._parent.names

    def dtype(self, name: str) -> np.dtype[np.generic]:
        return self._parent.column_dtype(name)

    def column_type(self, name: str) -> ColumnType:
        return self._parent.column_type(name)

    def count_rows(self) -> int:
        rows = np.asarray(self._rows)
        return int(np.count_nonzero(rows)) if rows.dtype == np.bool_ else int(rows.size)

    def materialise(self, name: str) -> npt.NDArray[np.generic]:
        return self._parent.column(name)[self._rows]

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        return self._parent.numeric(name)[self._rows]

    def reductions(self, dataset: Dataset) -> Reductions:
        return in_memory_reductions(dataset)  # the rows are in memory now

    @property
    def backend(self) -> BackendInfo:
        return self._parent.backend  # the rows were read from the parent's backend

    def __repr__(self) -> str:  # never prints values
        return f"rows of {self._parent!r}"


@final
@attrs.frozen
class FrameBackend:
    """How :func:`as_dataset` adapts one kind of frame that stays where it is (a polars or Spark frame).

    Backends register themselves (:func:`register_frame_backend`, done in
    :mod:`dpalg.data._frames`), so this module never imports a backend: the
    backends import it.

    Attributes:
        recognises: whether an object is such a frame, decided by its type's module
            and name (the frame library is never imported to ask).
        adapt: the :class:`Dataset` backed by the frame; imports the frame library
            and the backend, and raises ``ImportError`` when they cannot be imported.
        missing: the :class:`~dpalg.Unsupported` message for such an ``ImportError``.
    """

    recognises: Callable[[object], bool]
    adapt: Callable[[object], Dataset]
    missing: Callable[[object, ImportError], str]


_FRAME_BACKENDS: list[FrameBackend] = []
_IN_MEMORY: list[Callable[[Dataset], Reductions]] = []


def register_frame_backend(backend: FrameBackend) -> None:
    """Let :func:`as_dataset` adapt the frames ``backend`` recognises (checked in registration order)."""
    _FRAME_BACKENDS.append(backend)


def register_in_memory_reductions(make: Callable[[Dataset], Reductions]) -> None:
    """The reductions of a dataset whose rows are in memory (numpy), registered by :mod:`dpalg.data._numpy_reductions`."""
    _IN_MEMORY[:] = [make]


def in_memory_reductions(dataset: Dataset) -> Reductions:
    """:class:`~dpalg.data.NumpyReductions` over ``dataset`` (registered by the module that defines it)."""
    return _IN_MEMORY[0](dataset)


def as_dataset(data: object) -> Dataset:
    """Adapt a mapping of 1-D arrays, a pandas DataFrame, a polars DataFrame or LazyFrame, or a Spark DataFrame.

    A polars frame is not converted: the dataset reads its schema from the
    frame, answers the reductions in polars and converts a column to numpy only
    when a mechanism outside the reductions seam asks for it (the module
    docstring). A Spark DataFrame (``pyspark.sql``, classic or Spark Connect) is
    handled the same way, its reductions computed on the executors.

    Raises:
        InvalidArgument: when a column is not 1-D or lengths differ.
        Unsupported: a polars frame, but polars (>= 1.0) cannot be imported; a Spark
            DataFrame, but pyspark cannot be imported or Java is missing.
    """
    if isinstance(data, Dataset):
        return data
    for frames in _FRAME_BACKENDS:
        if frames.recognises(data):
            try:
                return frames.adapt(data)
            except ImportError as exc:
                raise Unsupported(frames.missing(data, exc)) from exc
    columns: dict[str, npt.NDArray[np.generic]] = {}
    types: dict[str, ColumnType] = {}
    if isinstance(data, Mapping):
        items = list(data.items())
    elif hasattr(data, "columns") and hasattr(data, "__getitem__"):
        # a pandas DataFrame: .columns and column access by name
        items = [(str(name), data[name]) for name in getattr(data, "columns")]
    else:
        raise InvalidArgument("as_dataset", "data", type(data).__name__, "must be a mapping of column -> 1-D array or a DataFrame")
    for name, values in items:
        declared = pandas_column_type(values)  # the pandas dtype, read before to_numpy() hides it
        arr = as_column(_to_numpy(values))  # a Python list mixing kinds stays object: [1, "1"] is not ["1", "1"]
        if arr.ndim != 1:
            raise InvalidArgument("as_dataset", f"column {name!r}", f"ndim={arr.ndim}", "must be 1-D")
        columns[str(name)] = arr
        if declared is not None:
            types[str(name)] = declared
    return Dataset(columns, types)


def _library(backend: str) -> Library:
    """The library a source's backend name stands for (``spark-connect`` is Spark)."""
    if backend == "polars":
        return "polars"
    if backend.startswith("spark"):
        return "spark"
    return "numpy"


def _to_numpy(values: object) -> object:
    to_numpy = getattr(values, "to_numpy", None)
    if not callable(to_numpy):
        return values
    dtype = getattr(values, "dtype", None)
    if getattr(dtype, "kind", None) in ("i", "u") and type(dtype).__module__.startswith("pandas") and getattr(values, "hasnans", False):
        # a nullable pandas integer column (Int64, int64[pyarrow]) with a missing value: to_numpy() gives
        # float64, which merges ids above 2**53; keep the exact Python ints (None for missing), as polars does
        return to_numpy(dtype=object, na_value=None)
    return to_numpy()


@contextlib.contextmanager
def run_data(data: object) -> Iterator[Dataset]:
    """``as_dataset(data)`` for the length of one run: what the run adapted, the run releases.

    When the run ends, returning or raising, the source of a dataset this run made
    (from a Spark or polars frame) is closed if it has a ``close()`` (optional in
    :class:`~dpalg.data.ColumnSource`): a Spark source unpersists the cache it
    made, so the input is persisted once per run. A :class:`~dpalg.data.Dataset`
    the caller passed is the caller's, and is left open.
    """
    dataset = as_dataset(data)
    try:
        yield dataset
    finally:
        close = getattr(dataset.source, "close", None) if dataset is not data else None
        if callable(close):
            close()
