"""Row transformations of a query: derived columns and a filter, applied where the data is.

A query may read a column computed from others (``Query.mean(col("price") *
(1 - col("discount")))``) and keep only the rows a predicate holds for
(``| Where(col("shipdate") >= "1994-01-01")``). Both are **row-wise**: a row's
derived value and whether it is kept depend on that row's own values only
(:mod:`dpalg.data._expr` has no aggregate, window or row-order operation). So
adding or removing one row adds or removes at most one transformed row, and
adding or removing one user (all rows sharing an id) adds or removes only that
user's transformed rows: the transformation is 1-stable under both relations
(McSherry 2009, PINQ §3: ``Where`` and ``Select`` are stable with constant 1),
and a mechanism run on the transformed rows keeps its privacy guarantee and its
cost. The id column is never derived, so the unit of every row is unchanged.

Order: the filter is applied to the rows as given, and the derived columns are
computed on the rows it keeps; a mechanism's own steps (clipping, per-user caps)
come after both. :func:`check_steps` runs before the charge (the columns exist
and the expressions type-check against the public schema); :func:`apply_steps`
after it never raises on a value.

Where the data is (:func:`apply_steps`): numpy columns are evaluated here; a
polars frame gets ``select``/``filter`` of translated expressions, evaluated
lazily by polars (:mod:`dpalg.data._polars_expr`); a Spark frame the same on the
executors (:mod:`dpalg.data._spark_expr`), so no column reaches the driver. A
column of ``object`` type (Decimal, mixed values) is read value by value in
numpy on every backend: the policy's exact reading of each value is what makes
the three agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._expr import ColumnKind, Expr, columns_of, evaluate, expr_type, read_types

__all__ = ["RowSteps", "apply_steps", "check_steps"]


def _derive(value: object) -> tuple[tuple[str, Expr], ...]:
    if not isinstance(value, tuple):
        raise InvalidArgument("RowSteps", "derive", type(value).__name__, "must be a tuple of (name, expression)")
    for item in value:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], Expr)):
            raise InvalidArgument("RowSteps", "derive", type(item).__name__, "must hold (name, expression) pairs")
    return value


@final
@attrs.frozen
class RowSteps:
    """A query's row transformations: derived numeric columns ``(name, expr)`` and a filter ``where`` (or ``None``)."""

    derive: tuple[tuple[str, Expr], ...] = attrs.field(converter=_derive)
    where: Expr | None = None
    #: the derived columns are keys (a histogram's): a str is allowed as well as a number
    keys: bool = False
    #: the names public tables add (``JoinPublic``): a column of the data with such a name is ambiguous
    public: tuple[str, ...] = ()

    def reads(self) -> tuple[str, ...]:
        """The columns of the data the steps read."""
        names: dict[str, None] = {}
        if self.where is not None:
            names.update(dict.fromkeys(columns_of(self.where)))
        for _, expr in self.derive:
            names.update(dict.fromkeys(columns_of(expr)))
        return tuple(names)


def check_steps(data: Dataset, steps: RowSteps, owner: str) -> dict[str, ColumnKind]:
    """Refuse, before the charge, steps the data's schema cannot serve; return the columns' expression kinds."""
    clash = sorted(set(steps.public) & set(data.names))
    if clash:
        raise InvalidArgument(owner, "JoinPublic", clash[0], "is both a column of the data and of a joined public table: rename one")
    for name, _ in steps.derive:  # a derived column replaces the data's column of that name (the id column, say)
        if name in data.names:
            raise InvalidArgument(owner, f"column {name[:100]!r}", "a column of the data", "is also the name of a derived expression: rename the data's column")
    kinds = read_types(data, steps.reads(), owner)
    if steps.where is not None and expr_type(steps.where, kinds, owner, "bool") != "bool":
        raise InvalidArgument(owner, "where", repr(steps.where)[:200], "must be a condition (a comparison, is_in, is_null, & | ~)")
    for name, expr in steps.derive:
        t = expr_type(expr, kinds, owner, "number")
        if t != "number" and not (steps.keys and t == "str"):
            raise InvalidArgument(owner, f"column {name[:100]!r}", repr(expr)[:200], "must be a number expression" + (" or a str" if steps.keys else ""))
    return kinds


def apply_steps(data: Dataset, steps: RowSteps, keep: Sequence[str]) -> Dataset:
    """The rows ``steps.where`` keeps, with the columns ``keep`` (those of the data) and the derived columns.

    Checked before the charge by :func:`check_steps`; never raises on a value.
    """
    kinds = read_types(data, steps.reads(), "Where")
    kept = tuple(name for name in dict.fromkeys(keep) if name in data.names and name not in dict(steps.derive))
    source = data.source
    if source is not None and "object" not in kinds.values():
        transform = getattr(source, "transform", None)
        if callable(transform):
            made = transform(steps, kinds, kept)
            if isinstance(made, Dataset):
                return made
    return _numpy_steps(data, steps, kinds, kept)


def _numpy_steps(data: Dataset, steps: RowSteps, kinds: dict[str, ColumnKind], kept: tuple[str, ...]) -> Dataset:
    rows = data
    if steps.where is not None:
        got = evaluate(steps.where, data, kinds, "bool")
        assert isinstance(got, tuple)
        rows = data.take(np.flatnonzero(np.asarray(got[0], dtype=bool) & got[1]))
    columns = {name: rows.column(name) for name in kept}
    types = {name: rows.column_type(name) for name in kept}
    for name, expr in steps.derive:
        if expr_type(expr, kinds, "Where", "number") == "str":  # a histogram's key column: str, None for missing
            got = evaluate(expr, rows, kinds, "str")
            assert isinstance(got, tuple)
            keys = got[0].astype(object)
            keys[~got[1]] = None
            columns[name] = keys
        else:
            value = evaluate(expr, rows, kinds, "number")
            assert isinstance(value, np.ndarray)
            columns[name] = value
    return Dataset(columns, types)
