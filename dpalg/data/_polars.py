"""A polars DataFrame or LazyFrame as a dpalg dataset: schema from the frame, reductions in polars.

:func:`polars_dataset` wraps a frame in a :class:`~dpalg.data.Dataset` backed by a
:class:`PolarsSource`. Nothing is read to build it: the public schema (names and
types) comes from the frame's schema (``LazyFrame.collect_schema()`` resolves the
plan without running it), so the runner's schema check happens before the charge
with no row read. Mechanisms that read through the reductions seam get
:class:`~dpalg.data._polars_reductions.PolarsReductions`; the others ask the
dataset for a column, which is then converted to numpy once and cached.

This module imports polars; :func:`dpalg.data.as_dataset` imports it only when it
is given a polars frame (recognised by the frame's type's module, without importing
polars), so ``import dpalg`` never loads polars.

**The schema in numpy terms.** The data policy is written for numpy dtypes
(:func:`~dpalg.data._numeric.numeric_dtype_problem`,
:func:`~dpalg.data._keys.key_dtype_problem`). A polars type is read as the numpy
dtype that holds the same values, decided by the type alone, never by the rows
(``Series.to_numpy()`` would turn an ``Int64`` column with a null into float64):

========================================  ======================================
polars                                    numpy (for the schema check)
========================================  ======================================
``Boolean``, ``Int8..64``, ``UInt8..64``  ``bool``, ``int8..64``, ``uint8..64``
``Float32``, ``Float64``                  ``float32``, ``float64``
``String``, ``Categorical``, ``Enum``     ``str`` (keys only: not numeric)
``Binary``                                ``bytes`` (keys only)
``Decimal``, ``Object``, ``Int128``,      ``object`` (per-value policy)
``UInt128``, ``Null``
``Date``, ``Datetime``, ``Duration``      ``datetime64``, ``timedelta64`` (refused)
``Time``, ``List``, ``Array``, ``Struct``  a structured dtype naming the type (refused)
========================================  ======================================

A ``String`` column used as numbers is refused before the charge, as a numpy str
column is (a Python list of strings with a ``None`` would be an object column
whose values are all missing; the type, not the rows, decides here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

import numpy as np
import numpy.typing as npt
import polars as pl

from dpalg._errors import InvalidArgument
from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import BackendInfo, Dataset
from dpalg.data._expr import ColumnKind, derived_type
from dpalg.data._numeric import to_float
from dpalg.data._polars_expr import polars_expr
from dpalg.data._polars_reductions import PolarsReductions
from dpalg.data._polars_types import numpy_dtype, polars_kind
from dpalg.data._reductions import Reductions
from dpalg.data._transform import RowSteps

__all__ = ["PolarsSource", "polars_dataset", "polars_kind"]

#: the oldest polars this backend is written for (``collect_schema``, ``fill_nan``, ``Int128``)
MIN_POLARS: Final = (1, 0)

@final
class PolarsSource:
    """The columns of a polars DataFrame or LazyFrame (a :class:`~dpalg.data._dataset.ColumnSource`).

    Holds the frame as a LazyFrame (a DataFrame's ``lazy()`` costs nothing) and
    its schema. The row count of a LazyFrame is asked for once and cached.

    **A LazyFrame is evaluated before the charge** (:meth:`evaluate`, called by the
    runner after the schema check): the columns the plan reads are collected into
    a DataFrame once, and that DataFrame answers every reduction and every column
    of the run. The user's plan (a strict cast, ``str.to_integer``, a raising
    ``map_elements``) then fails, if it fails, before anything is charged, and the
    run reads one set of rows (a plan with an unordered group-by or a sample may
    give other rows on a second collect). The read columns are held in memory for
    the run, as the numpy backend holds them.
    """

    __slots__ = ("_collected", "_eager", "_frame", "_kind", "_n", "_schema")

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        if isinstance(frame, pl.DataFrame):
            self._eager: pl.DataFrame | None = frame
            self._frame = frame.lazy()
            schema = frame.schema
            self._n: int | None = frame.height
        else:
            self._eager = None
            self._frame = frame
            schema = frame.collect_schema()  # resolves the plan's types; reads no row
            self._n = None
        self._schema: dict[str, pl.DataType] = {str(name): dtype for name, dtype in schema.items()}
        self._kind = "DataFrame" if self._eager is not None else "LazyFrame"
        self._collected: pl.DataFrame | None = None  # a LazyFrame's read columns, once evaluated

    @property
    def frame(self) -> pl.LazyFrame:
        """The data as given, as a LazyFrame (each collect runs the user's plan again: reductions use :meth:`frame_for`)."""
        return self._frame

    def frame_for(self, *exprs: pl.Expr) -> pl.LazyFrame:
        """The frame to compute ``exprs`` over: the collected columns when they hold every column the expressions read.

        Examples:
            >>> src = PolarsSource(pl.LazyFrame({"x": [1.0], "y": [2.0]}))
            >>> src.evaluate(("x",))
            >>> src.frame_for(pl.col("x") * 2, pl.len()).collect_schema().names(), src.frame_for(pl.col("y")) is src.frame
            (['x'], True)
        """
        if self._collected is None:
            return self._frame
        read: set[str] = set()
        for expr in exprs:
            read.update(expr.meta.root_names())
        return self._collected.lazy() if read <= set(self._collected.columns) else self._frame

    @property
    def eager(self) -> pl.DataFrame | None:
        """The columns in memory: the DataFrame given, or a LazyFrame's evaluated columns; else ``None``."""
        return self._eager if self._eager is not None else self._collected

    def evaluate(self, names: tuple[str, ...]) -> None:
        """Run a LazyFrame's plan for the columns ``names`` once, and keep them (with the row count) for the run.

        A DataFrame needs nothing. Columns collected by an earlier call are
        collected again with the new ones, in one collect, so every column of
        the run comes from the same rows. Raises whatever polars raises (the
        runner refuses it before the charge, without its text).

        Examples:
            >>> src = PolarsSource(pl.LazyFrame({"s": ["1", "2"]}).with_columns(x=pl.col("s").cast(pl.Int64)))
            >>> src.evaluate(("x",)); src.eager.columns, src.count_rows()
            (['x'], 2)
        """
        if self._eager is not None:
            return
        have = () if self._collected is None else tuple(self._collected.columns)
        if set(names) <= set(have) and self._n is not None:
            return
        wanted = list(dict.fromkeys((*names, *have)))
        if not wanted:  # no column read: the row count alone (the rows themselves may come from the user's plan)
            self._n = int(self._frame.select(pl.len()).collect().item())
            return
        collected = self._frame.select(*(pl.col(name) for name in wanted)).collect()
        self._collected, self._n = collected, collected.height

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._schema)

    def polars_dtype(self, name: str) -> pl.DataType:
        """The column's polars type."""
        return self._schema[name]

    def dtype(self, name: str) -> np.dtype[np.generic]:
        return numpy_dtype(self._schema[name])

    def column_type(self, name: str) -> ColumnType:
        """The column's type for schema errors: an ``Enum`` is named without its categories."""
        dtype = self._schema[name]
        base = dtype.base_type()
        shown = str(base) if base in (pl.Enum, pl.Categorical) else str(dtype)
        return ColumnType(numpy_dtype(dtype), shown, "polars")

    def count_rows(self) -> int:
        if self._n is None:
            self._n = int(self._frame.select(pl.len()).collect().item())
        return self._n

    def series(self, name: str) -> pl.Series:
        """One column as a polars Series (a LazyFrame not evaluated for it runs its plan for that column only)."""
        eager = self.eager
        if eager is not None and name in eager.columns:
            return eager.get_column(name)
        return self._frame.select(pl.col(name)).collect().to_series()

    def materialise(self, name: str) -> npt.NDArray[np.generic]:
        s = self.series(name)
        base = s.dtype.base_type()
        if str(base) in ("Int128", "UInt128") or (base in (pl.Int64, pl.UInt64) and s.null_count() > 0):
            # numpy has no int128, and to_numpy turns a nullable int64 into float64, which merges
            # ids above 2**53: keep the exact Python ints (None for null), as a list of them would be
            return np.array(s.to_list(), dtype=object)
        return s.to_numpy()

    def numeric(self, name: str) -> npt.NDArray[np.float64]:
        kind = polars_kind(self._schema[name])
        if kind in ("float", "int", "bool", "null"):  # polars' casts to Float64 round to nearest, as numpy's do
            s = self.series(name).cast(pl.Float64).fill_null(float("nan"))
            return np.asarray(s.to_numpy(), dtype=np.float64)
        return to_float(self.materialise(name), owner="Dataset", field=name)

    def reductions(self, dataset: Dataset) -> Reductions:
        return PolarsReductions(dataset, self)

    @staticmethod
    def join_chain(sources: list[PolarsSource], keys: list[tuple[str, str]], wanted: frozenset[str] | None, *, collect: bool = True) -> Dataset:
        """The inner equi-joins of ``sources`` in order on ``keys`` (:mod:`dpalg.data._tables`), as one lazy plan that
        reads only the ``wanted`` columns (and the keys), collected once (``collect=False``: left lazy, for a caller
        that transforms it at once, :meth:`transform`, whose one collect evaluates joins and filter together).

        Keys of different types are joined on their exact decimal text (an int of any width; a categorical's str);
        nulls never match. Collected once: a lazy join's row order may differ from one collect to the next, and
        the run reads its columns one at a time -- two reads in different orders would pair one user's id with
        another row's value.
        """

        def lazy(src: PolarsSource) -> pl.LazyFrame:
            frame = src.eager.lazy() if src.eager is not None else src.frame  # the rows evaluated before the charge
            names = [n for n in src.names if wanted is None or n in wanted]
            return frame.select(*[pl.col(n) for n in names])

        out = lazy(sources[0])
        schema = dict(sources[0]._schema)
        for src, (left_key, right_key) in zip(sources[1:], keys):
            left, right = pl.col(left_key), pl.col(right_key)
            if schema[left_key] != src._schema[right_key]:
                left, right = left.cast(pl.String), right.cast(pl.String)
            out = out.join(lazy(src), left_on=left, right_on=right, how="inner", coalesce=False)
            schema.update(src._schema)
        return Dataset.from_source(PolarsSource(out.collect() if collect else out))

    def transform(self, steps: RowSteps, kinds: Mapping[str, ColumnKind], kept: tuple[str, ...]) -> Dataset:
        """A query's row steps as a lazy ``filter``/``select`` of this frame (:mod:`dpalg.data._transform`), evaluated by polars."""
        # collected once, so that every column of the run comes from one evaluation in one row order (a lazy
        # frame's plan may order its rows differently on each collect)
        return Dataset.from_source(PolarsSource(self.transform_plan(steps, kinds, kept).collect()))

    def transform_plan(self, steps: RowSteps, kinds: Mapping[str, ColumnKind], kept: tuple[str, ...]) -> pl.LazyFrame:
        """The lazy plan :meth:`transform` collects: on a lazy join (:meth:`join_chain`), polars pushes the parts of
        the filter that read one table below the join."""
        derived = [polars_expr(expr, kinds, derived_type(expr, kinds)).alias(name) for name, expr in steps.derive]
        where = None if steps.where is None else polars_expr(steps.where, kinds, "bool")
        frame = self.frame_for(*[pl.col(k) for k in kept], *derived, *([] if where is None else [where]))
        if where is not None:
            frame = frame.filter(where)
        # with_columns, then select by name: a derived value that is the same on every row (all missing, say) is
        # broadcast to the frame's height; a bare select of such an expression gave one row (polars 2.1)
        names = [name for name, _ in steps.derive]
        return frame.with_columns(*derived).select(*kept, *names)

    @property
    def backend(self) -> BackendInfo:
        """``polars``, with the versions of polars and numpy (the same for a DataFrame and a LazyFrame)."""
        return BackendInfo.installed("polars", ["polars", "numpy"])

    def __repr__(self) -> str:  # never prints values
        return f"PolarsSource({self._kind})"


def polars_dataset(frame: object) -> Dataset:
    """A :class:`~dpalg.data.Dataset` backed by a polars DataFrame or LazyFrame (nothing is read).

    Raises:
        ImportError: polars is older than 1.0 (:func:`~dpalg.data.as_dataset` turns
            it into an error naming the extra).

    Examples:
        >>> ds = polars_dataset(pl.DataFrame({"x": [1.0, None], "g": ["a", "b"]}).lazy())
        >>> ds.names, str(ds.column_dtype("g")), ds.n_rows
        (('x', 'g'), '<U0', 2)
    """
    major_minor = tuple(int(p) for p in pl.__version__.split(".")[:2] if p.isdigit())
    if major_minor < MIN_POLARS:
        raise ImportError(f"polars {pl.__version__} is too old: dpalg needs polars >= {'.'.join(map(str, MIN_POLARS))}")
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidArgument("polars_dataset", "frame", type(frame).__name__, "must be a polars DataFrame or LazyFrame")
    return Dataset.from_source(PolarsSource(frame))
