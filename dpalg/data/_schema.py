"""The public schema a mechanism reads: column names and their roles.

A primitive states the columns it reads (:class:`ColumnUse`); the runner checks
them against the data *before* the charge (:func:`check_columns`), so a typo or
a column of the wrong dtype costs nothing and fails with a clear error. The
check reads names and dtypes only -- never a value -- so its outcome depends on
the public schema alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._keys import key_dtype_problem
from dpalg.data._numeric import numeric_dtype_problem

__all__ = ["ColumnRole", "ColumnUse", "check_columns"]

#: ``"numeric"``: read as numbers; ``"key"``: histogram or partition keys;
#: ``"id"``: the privacy unit's id column
ColumnRole = Literal["numeric", "key", "id"]
_ROLES = ("numeric", "key", "id")


def _name(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgument("ColumnUse", "name", value, "must be a non-empty column name")
    return value


def _role(value: str) -> ColumnRole:
    if value == "numeric":
        return "numeric"
    if value == "key":
        return "key"
    if value == "id":
        return "id"
    raise InvalidArgument("ColumnUse", "role", value, f"must be one of {_ROLES}")


@final
@attrs.frozen
class ColumnUse:
    """One column a node reads, and how it reads it.

    Args:
        name: the column name.
        role: ``"numeric"`` (read through :meth:`Dataset.numeric`), ``"key"``
            (histogram or partition keys, :meth:`Dataset.key_index`) or ``"id"``
            (the unit id column, :func:`~dpalg.data.unit_index`).

    Examples:
        >>> ColumnUse("age", "numeric")
        ColumnUse(name='age', role='numeric')
    """

    name: str = attrs.field(converter=_name)
    role: ColumnRole = attrs.field(converter=_role)


def column_problem(data: Dataset, use: ColumnUse) -> str | None:
    """Why ``data`` cannot serve ``use``, or ``None`` (names and dtypes only)."""
    if use.name not in data.names:
        return f"is not a column of the data; available: {sorted(data.names)}"
    dtype = data.column_dtype(use.name)  # the schema alone: a polars-backed dataset reads no row here
    return numeric_dtype_problem(dtype) if use.role == "numeric" else key_dtype_problem(dtype)


def check_columns(data: Dataset, uses: Iterable[ColumnUse], *, owner: str = "schema") -> None:
    """Refuse the data when a column is absent or has a dtype its role cannot read.

    Raises:
        InvalidArgument: naming the owner (a node path), the column, its role
            and the problem -- never a value.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> check_columns(as_dataset({"age": [1, 2]}), [ColumnUse("agee", "numeric")], owner="Laplace")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Laplace: numeric column='agee' is not a column of the data; available: ['age']
    """
    for use in uses:
        problem = column_problem(data, use)
        if problem is not None:
            raise InvalidArgument(owner, f"{use.role} column", use.name, problem)
