"""Several tables in one run, and a query's relation built from them by inner equi-joins (``| From(...)``).

``plan.run({"customer": df_c, "orders": df_o, "lineitem": df_l})``: a mapping whose
values are all tables (DataFrames, Spark or polars frames, datasets, or mappings of
columns) is a multi-table input. Column names must be unique across the tables
(prefix them, as TPC-H does: ``c_custkey``, ``o_custkey``): a query names columns,
and a name must say which table it reads. The input is a :class:`~dpalg.data.Dataset`
backed by a :class:`TablesSource`, whose schema is the union of the tables' (so the
schema check, the lazy-input evaluation and the certificate's schema work as for one
table) and which answers no row question itself: every query on it names its
relation with ``| From(table, Join(...), ...)`` (refused before the charge
otherwise), and :meth:`TablesSource.join` builds that relation where the data is.

**The join** (:class:`From`, :class:`Join`): starting from ``table``, each ``Join(t,
left, right)`` keeps one row per pair (row of the relation so far, row of ``t``) with
equal keys ``left`` and ``right`` (an inner join; keys read by the key policy, a
missing key matches nothing; both key columns int, or both str: checked on the
schema). Every result row carries the columns of all its rows.

**Privacy** (user-level: the query's ``user=`` column, from one of the joined
tables). A result row belongs to the user of its id value. Adding or removing one
user -- the rows holding their id, and the rows of the other tables that join only
with those -- adds or removes exactly that user's result rows: a result row of
another user is made of rows that are not removed (its id row is that user's, and
each row it joins with joins with that row, which stays). So the join result
changes by one user's rows, the relation under which every user-level mechanism is
proved (Dong et al. 2022, R2T, §3, "the primary private relation and foreign keys";
there with unique primary keys, where "joins only with those" is "references
them"). The mechanism must bound a user's contribution (``ClipPerUser``,
``MaxRowsPerUser``, ``R2T``, the shifted inverse): one user may own many result
rows. A row-level query over a join is refused: one input row can be in many
result rows.

Where it runs: numpy columns are joined here (sort-based, exact keys), polars
frames lazily (``join(..., how="inner", coalesce=False)``), Spark frames on the
executors (``DataFrame.join``). Tables of different backends in one input are
refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported, name_param
from dpalg.data._backend_info import BackendInfo
from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import Dataset, as_dataset
from dpalg.data._keys import key_index
from dpalg.data._reductions import Reductions
from dpalg.data._schema import value_kind

__all__ = ["From", "Join", "TablesSource", "is_tables", "tables_dataset"]

_ONE_TABLE = "a query on several tables names its relation with | From(table, Join(...), ...)"


def _table_name(value: object) -> str:
    return name_param("Join", "table", value, "must be a non-empty table name")


def _column_name(value: object) -> str:
    return name_param("Join", "key", value, "must be a non-empty column name")


def _from_table(value: object) -> str:
    return name_param("From", "table", value, "must be a non-empty table name")


@final
@attrs.frozen
class Join:
    """Join the relation so far with ``table``: one row per pair with ``left == right`` (an inner equi-join)."""

    table: str = attrs.field(converter=_table_name)
    left: str = attrs.field(converter=_column_name)
    right: str = attrs.field(converter=_column_name)

    def __repr__(self) -> str:
        return f"Join({self.table!r}, {self.left!r}, {self.right!r})"


def _joins(value: object) -> tuple[Join, ...]:
    if not isinstance(value, tuple) or not all(isinstance(j, Join) for j in value):
        raise InvalidArgument("From", "joins", type(value).__name__, "must be Join(...) nodes")
    if len(value) > 16:
        raise InvalidArgument("From", "joins", len(value), "must be at most 16 joins")
    return value


@final
@attrs.frozen(init=False)
class From:
    """The relation a query reads on a multi-table input: ``From("lineitem", Join("orders", "l_orderkey", "o_orderkey"))``."""

    table: str = attrs.field(converter=_from_table)
    joins: tuple[Join, ...] = attrs.field(default=(), converter=_joins)

    def __init__(self, table: str, *joins: Join) -> None:
        self.__attrs_init__(table, tuple(joins))

    def tables(self) -> tuple[str, ...]:
        """The tables it reads, in join order."""
        return (self.table, *(j.table for j in self.joins))

    def __repr__(self) -> str:
        return f"From({', '.join([repr(self.table), *(repr(j) for j in self.joins)])})"


def _is_table(value: object) -> bool:
    kind = type(value)
    framed = kind.__module__.split(".")[0] in ("pandas", "polars", "pyspark") and kind.__name__ in ("DataFrame", "LazyFrame")
    return framed or isinstance(value, (Dataset, Mapping))


def is_tables(data: object) -> bool:
    """Whether ``data`` is a multi-table input: a non-empty mapping whose every value is a table, not a column.

    Recognised by the values' types only (no frame library is imported, no column is read).

    Examples:
        >>> is_tables({"x": [1.0, 2.0]}), is_tables({"a": {"x": [1.0]}, "b": {"y": [2.0]}})
        (False, True)
    """
    return isinstance(data, Mapping) and bool(data) and all(_is_table(v) for v in data.values())


def tables_dataset(data: Mapping[str, object]) -> Dataset:
    """The multi-table input as a dataset backed by a :class:`TablesSource` (the module docstring)."""
    tables: dict[str, Dataset] = {}
    for name, frame in data.items():
        if not isinstance(name, str) or not name:
            raise InvalidArgument("tables", "name", type(name).__name__, "must be a non-empty str")
        tables[name] = as_dataset(frame)
    return Dataset.from_source(TablesSource(tables))


def _library(data: Dataset) -> str:
    return "numpy" if data.source is None else data.backend.name.split("-")[0]


@final
class TablesSource:
    """Several tables (:mod:`dpalg.data._tables`): the union of their schemas, and the joins a query names."""

    __slots__ = ("_joined", "_owner", "_tables")

    def __init__(self, tables: Mapping[str, Dataset]) -> None:
        self._tables = dict(tables)
        self._owner: dict[str, str] = {}
        for table, data in self._tables.items():
            for column in data.names:
                if column in self._owner:
                    raise InvalidArgument(
                        "tables", f"column {column!r}", f"in {self._owner[column]!r} and {table!r}",
                        "must be unique across the tables (prefix the names, as TPC-H does: o_custkey, c_custkey)",
                    )  # fmt: skip
                self._owner[column] = table
        libraries = {_library(d) for d in self._tables.values()}
        if len(libraries) > 1:
            raise InvalidArgument("tables", "backends", sorted(libraries), "must be one backend for all the tables of a run")
        self._joined: dict[tuple[From, frozenset[str] | None, bool], Dataset] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._owner)

    def table_of(self, column: str) -> str:
        """The table holding ``column``."""
        return self._owner[column]

    def table(self, name: str) -> Dataset:
        """One table."""
        return self._tables[name]

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self._tables)

    def dtype(self, name: str) -> np.dtype[np.generic]:
        return self._tables[self._owner[name]].column_dtype(name)

    def column_type(self, name: str) -> ColumnType:
        return self._tables[self._owner[name]].column_type(name)

    def count_rows(self) -> int:
        raise Unsupported(_ONE_TABLE)

    def materialise(self, name: str) -> npt.NDArray[np.generic]:
        raise Unsupported(_ONE_TABLE)

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        raise Unsupported(_ONE_TABLE)

    def reductions(self, dataset: Dataset) -> Reductions:
        raise Unsupported(_ONE_TABLE)

    @property
    def backend(self) -> BackendInfo:
        first = next(iter(self._tables.values()), None)
        return BackendInfo.installed("numpy", ["numpy"]) if first is None else first.backend

    def evaluate(self, names: tuple[str, ...]) -> None:
        """A lazy table runs its plan for the columns read from it, before the charge (as one table would)."""
        for table, data in self._tables.items():
            mine = tuple(n for n in names if self._owner.get(n) == table)
            evaluate = getattr(data.source, "evaluate", None)
            if mine and callable(evaluate):
                evaluate(mine)

    def close(self) -> None:
        for data in (*self._joined.values(), *self._tables.values()):
            close = getattr(data.source, "close", None)
            if callable(close):
                close()
        self._joined.clear()

    def problem(self, source: From, user: str | None) -> str | None:
        """Why ``source`` cannot be built from these tables (names and types only), or ``None``."""
        seen: set[str] = set()
        for table in source.tables():
            if table not in self._tables:
                return f"names the table {table!r}; the tables are {sorted(self._tables)}"
            if table in seen:
                return f"joins the table {table!r} twice (a self-join is not supported)"
            seen.add(table)
        joined = set(self._tables[source.table].names)
        for join in source.joins:
            if join.left not in joined:
                return f"joins on {join.left!r}, which is not a column of the tables joined before {join.table!r}"
            if join.right not in self._tables[join.table].names:
                return f"joins on {join.right!r}, which is not a column of {join.table!r}"
            kinds = {value_kind(self.dtype(join.left)), value_kind(self.dtype(join.right))}
            if not (kinds == {"int"} or kinds == {"str"}):
                return f"joins {join.left!r} with {join.right!r}: join keys must both be int or both be str (found {sorted(kinds)})"
            joined |= set(self._tables[join.table].names)
        if user is None:
            return "is row-level: over a join one input row can be in many result rows; name the user's id column (user=)"
        if user not in joined:
            return f"reads the user id {user!r}, which is not a column of the joined tables"
        return None

    def join(self, source: From, needed: Iterable[str] | None = None, *, transformed: bool = False) -> Dataset:
        """The relation ``source`` names, built where the data is (cached for the run).

        ``needed``: the columns the caller reads (the join keys are added); the others are not carried through
        the joins (``None``: every column). ``transformed``: the caller applies row steps to the relation at once
        (:func:`~dpalg.data._transform.apply_steps`), which evaluates it once; a backend that builds the join
        lazily (polars) may then leave it unevaluated, so that its optimiser pushes the filter below the joins.
        """
        wanted = None if needed is None else frozenset(needed) | {k for j in source.joins for k in (j.left, j.right)}
        got = self._joined.get((source, wanted, transformed))
        if got is not None:
            return got
        tables = [self._tables[t] for t in source.tables()]
        keys = [(j.left, j.right) for j in source.joins]
        first = tables[0].source
        chain = getattr(type(first), "join_chain", None) if first is not None else None
        same = callable(chain) and all(type(t.source) is type(first) for t in tables)
        made = (chain([t.source for t in tables], keys, wanted, collect=not transformed) if same else None)  # type: ignore[misc]
        if isinstance(made, Dataset):
            out = made
        else:
            out = _project(tables[0], wanted)
            for table, (left, right) in zip(tables[1:], keys):
                out = _join(out, _project(table, wanted), left, right)
        self._joined[(source, wanted, transformed)] = out
        return out

    def __repr__(self) -> str:  # never prints values
        return f"TablesSource({sorted(self._tables)})"


def _project(data: Dataset, wanted: frozenset[str] | None) -> Dataset:
    """``data`` with only the ``wanted`` columns, for numpy columns (a frame's own optimiser prunes the others)."""
    if wanted is None or data.source is not None:
        return data
    names = [n for n in data.names if n in wanted]
    return Dataset({n: data.column(n) for n in names}, {n: data.column_type(n) for n in names})


def _join(left: Dataset, right: Dataset, left_key: str, right_key: str) -> Dataset:
    method = getattr(left.source, "join_with", None)
    if left.source is not None and type(left.source) is type(right.source) and callable(method):
        made = method(right.source, left_key, right_key)
        if isinstance(made, Dataset):
            return made
    return numpy_join(left, right, left_key, right_key)


def numpy_join(left: Dataset, right: Dataset, left_key: str, right_key: str) -> Dataset:
    """The inner equi-join of two datasets in numpy: pairs of rows with equal keys (key policy), left order first.

    Examples:
        >>> a = as_dataset({"k": np.array([1, 2, 2, 3]), "x": np.arange(4.0)})
        >>> b = as_dataset({"kk": np.array([2, 3, 3, 9]), "y": np.array([10.0, 20.0, 30.0, 40.0])})
        >>> j = numpy_join(a, b, "k", "kk")
        >>> j.numeric("x").tolist(), j.numeric("y").tolist()
        ([1.0, 2.0, 3.0, 3.0], [10.0, 10.0, 20.0, 30.0])
    """
    n_left = left.n_rows
    a, b = np.asarray(left.column(left_key)), np.asarray(right.column(right_key))
    both = np.concatenate([a, b]) if a.dtype.kind in "iu" and b.dtype.kind in "iu" else np.concatenate([a.astype(object), b.astype(object)])
    _, codes = key_index(both, owner="Join")
    cl, cr = codes[:n_left], codes[n_left:]
    order = np.argsort(cr, kind="stable")
    sorted_cr = cr[order]
    lo = np.searchsorted(sorted_cr, cl, side="left")
    hi = np.searchsorted(sorted_cr, cl, side="right")
    counts = np.where(cl >= 0, hi - lo, 0)
    li = np.repeat(np.arange(n_left), counts)
    starts = np.repeat(lo, counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    ri = order[starts + offsets]
    columns: dict[str, npt.NDArray[np.generic]] = {}
    types: dict[str, ColumnType] = {}
    for side, rows in ((left, li), (right, ri)):
        for name in side.names:
            columns[name] = side.column(name)[rows]
            types[name] = side.column_type(name)
    return Dataset(columns, types)
