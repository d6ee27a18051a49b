"""The public schema a mechanism reads: column names, their roles and public keys.

A primitive states the columns it reads (:class:`ColumnUse`); the runner checks
them against the data *before* the charge (:func:`check_columns`), so a typo or
a column of the wrong dtype costs nothing and fails with a clear error. The
check reads names and types only -- never a value -- so its outcome depends on
the public schema alone.

**The table** (``docs/data_policy.md`` shows it with the reasons). A column's
type is read as the numpy dtype the data policy reads it as
(:meth:`~dpalg.data.Dataset.column_type`: a pandas ``string`` column is ``str``,
a ``category`` the dtype of its categories, a polars ``Categorical`` ``str``, a
Spark ``date`` ``datetime64``); its *kind* decides:

=========  ========  ==============  =====================  ========
kind       numeric   key (no list)   key (public keys)      id
=========  ========  ==============  =====================  ========
bool       yes       yes             no (True is not 1)     no
int        yes       yes             int keys only          yes
float      yes       yes             int keys only          yes
str        no        yes             str keys only          yes
bytes      no        yes             no                     yes
object     yes       yes             yes                    yes
date/time  no        no              no                     no
complex    no        no              no                     no
other      no        no              no                     no
=========  ========  ==============  =====================  ========

A refusal names the node path, the column, its type as the user's library names
it, and the fix; a value is never printed (public keys are: they are in the plan).
An ``object`` column is opaque to the schema: its values follow the per-value
policy (a str among numbers is missing), because deciding from the values would
make the refusal itself depend on private data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument, name_param
from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import Dataset

__all__ = ["COLUMN_KINDS", "ColumnRole", "ColumnUse", "check_columns", "column_kind", "value_kind"]

#: ``"numeric"``: read as numbers; ``"key"``: histogram or partition keys;
#: ``"id"``: the privacy unit's id column; ``"expr"``: read by a row expression (typed by
#: :func:`dpalg.data._transform.check_steps`)
ColumnRole = Literal["numeric", "key", "id", "expr"]
_ROLES = ("numeric", "key", "id", "expr")


def _name(value: str) -> str:
    return name_param("ColumnUse", "name", value, "must be a non-empty column name")


def _role(value: str) -> ColumnRole:
    if value == "numeric":
        return "numeric"
    if value == "key":
        return "key"
    if value == "id":
        return "id"
    if value == "expr":
        return "expr"
    raise InvalidArgument("ColumnUse", "role", value, f"must be one of {_ROLES}")


def _keys(value: Iterable[str | int] | None) -> tuple[str | int, ...] | None:
    if value is None:
        return None
    keys = tuple(value)
    for key in keys:
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise InvalidArgument("ColumnUse", "keys", key, "must be str or int")
    return keys


@final
@attrs.frozen(repr=False)
class ColumnUse:
    """One column a node reads, and how it reads it.

    Args:
        name: the column name.
        role: ``"numeric"`` (read through :meth:`Dataset.numeric`), ``"key"``
            (histogram or partition keys, :meth:`Dataset.key_index`) or ``"id"``
            (the unit id column, :func:`~dpalg.data.unit_index`).
        keys: for a ``"key"`` column matched against a public list (a histogram's
            ``keys=``, ``Parallel``'s parts), that list: each key must be of a
            kind the column's type can hold. ``None``: keys are read as found.

    Examples:
        >>> ColumnUse("age", "numeric")
        ColumnUse(name='age', role='numeric')
        >>> ColumnUse("year", "key", keys=(1984, 1990))
        ColumnUse(name='year', role='key', keys=(1984, 1990))
    """

    name: str = attrs.field(converter=_name)
    role: ColumnRole = attrs.field(converter=_role)
    keys: tuple[str | int, ...] | None = attrs.field(default=None, converter=_keys)

    def __attrs_post_init__(self) -> None:
        if self.keys is not None and self.role != "key":
            raise InvalidArgument("ColumnUse", "keys", self.keys, f"apply to a key column only, not to a {self.role} column")

    def __repr__(self) -> str:
        keys = "" if self.keys is None else f", keys={self.keys!r}"
        return f"ColumnUse(name={self.name!r}, role={self.role!r}{keys})"


#: a dtype's kind as the schema table reads it
_KINDS = {"b": "bool", "i": "int", "u": "int", "f": "float", "U": "str", "S": "bytes", "O": "object", "M": "time", "m": "time", "c": "complex"}
#: every row of the schema table, as :func:`value_kind` names it (certificates record a column's type by this name)
COLUMN_KINDS = ("bool", "int", "float", "str", "bytes", "object", "time", "complex", "other")


def value_kind(dtype: np.dtype[np.generic]) -> str:
    """The row of the schema table a policy dtype falls in.

    Examples:
        >>> [value_kind(np.dtype(t)) for t in ("bool", "uint8", "float32", "<U1", "S1", "O", "datetime64[D]", "c16")]
        ['bool', 'int', 'float', 'str', 'bytes', 'object', 'time', 'complex']
    """
    return _KINDS.get(dtype.kind, "other")


def column_kind(data: Dataset, name: str) -> str:
    """The row of the schema table column ``name`` of ``data`` falls in: its declared type, never a value.

    This is the one classification of a column's type: the schema check reads it,
    a release that chooses from the schema reads it, and certificates record it.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> [column_kind(as_dataset({"p": [1, 2], "f": [1.5, 2.0]}), n) for n in ("p", "f")]
        ['int', 'float']
    """
    return value_kind(data.column_dtype(name))


def column_problem(data: Dataset, use: ColumnUse) -> str | None:
    """Why ``data`` cannot serve ``use``, or ``None`` (names and types only, the table of the module docstring)."""
    if use.name not in data.names:
        return f"is not a column of the data; available: {sorted(data.names)}"
    if use.role == "expr":
        return None  # an expression's columns are typed by check_steps, with the expression in the message
    kind = column_kind(data, use.name)  # the schema alone: a polars-backed dataset reads no row here
    if kind == "object" or (kind in ("int", "float") and use.role != "key") or (kind == "bool" and use.role == "numeric"):
        return None  # the common cases, without asking a source for its type's name
    return _problem(data.column_type(use.name), kind, use)


def _problem(column: ColumnType, kind: str, use: ColumnUse) -> str | None:
    shown = column.describe()
    if kind == "complex":
        what = "must be numeric and real (the imaginary part would be lost); pass the real part or the modulus explicitly"
        return f"has a complex dtype, {shown}: {what if use.role == 'numeric' else _KEY_KINDS}"
    if kind in ("time", "other"):
        if use.role == "numeric":
            return f"has dtype {shown}: must be numeric; {_time_fix(column, use.name) if kind == 'time' else 'dpalg reads no value of this type'}"
        return f"has dtype {shown}: {_KEY_KINDS}"
    if use.role == "numeric":
        if kind == "str":
            return (
                f"has a string dtype, {shown}: must be numeric; it holds text, so every value would be missing and the "
                f"release pure noise; convert it first with {_to_number(column, use.name)}"
            )
        if kind == "bytes":
            return f"has a string dtype, {shown}: must be numeric; it holds bytes; decode and convert it first"
        return None
    if use.role == "id" and kind == "bool":
        return f"has dtype {shown}: a bool column names at most two units, it is not an id; pass the column of user ids"
    if use.role == "key" and use.keys is not None:
        return _keys_problem(column, kind, use)
    return None


_KEY_KINDS = "keys and ids must be bool, int, float, str, bytes or object"


def _keys_problem(column: ColumnType, kind: str, use: ColumnUse) -> str | None:
    """The public keys of ``use`` against the column's kind: a key of a kind the column cannot hold never matches."""
    assert use.keys is not None
    strs = [k for k in use.keys if isinstance(k, str)]
    ints = [k for k in use.keys if not isinstance(k, str)]
    shown = column.describe()
    if kind in ("int", "float") and strs:
        return (
            f"has dtype {shown} but keys {_few(strs)} are str: a str key never matches a number, so its count would be "
            f"pure noise; pass {_as_ints(strs)}"
        )
    if kind == "str" and ints:
        return (
            f"has dtype {shown} but keys {_few(ints)} are int: an int key never matches a str, so its count would be "
            f"pure noise; pass str keys: keys=({str(ints[0])!r}, ...)"
        )
    if kind == "bool" and use.keys:
        return (
            f"has dtype {shown}: a bool is never equal to a public key ({_few(list(use.keys))}; True is not the key 1); "
            f"convert the column to int first ({_to_int(column.library, use.name)}) or count it without a key list"
        )
    if kind == "bytes" and use.keys:
        return f"has dtype {shown}: a bytes value never equals a str or int key ({_few(list(use.keys))}); decode the column to str first"
    return None


def _few(keys: Sequence[str | int]) -> str:
    """Up to three public keys, as a tuple."""
    if len(keys) <= 3:
        return repr(tuple(keys))
    return f"({', '.join(repr(k) for k in keys[:3])}, ...)"


def _as_ints(keys: list[str]) -> str:
    """``keys=(1984, ...)`` when the first str key reads as an int, else a sentence."""
    try:
        first = int(keys[0].strip())
    except ValueError:
        return "int keys, or convert the column to str first"
    return f"int keys: keys=({first}, ...)"


def _to_number(column: ColumnType, name: str) -> str:
    library = column.library
    if library == "polars":
        via = ".cast(pl.String)" if column.name in ("Categorical", "Enum") else ""  # polars casts no categorical to a number
        return f"pl.col({name!r}){via}.cast(pl.Float64, strict=False) (text that is not a number becomes null)"
    if library == "spark":
        return f"F.col({name!r}).try_cast('double') (text that is not a number becomes null)"
    return f"pd.to_numeric(df[{name!r}], errors='coerce') (text that is not a number becomes missing)"


def _to_int(library: str, name: str) -> str:
    if library == "polars":
        return f"pl.col({name!r}).cast(pl.Int64)"
    if library == "spark":
        return f"F.col({name!r}).cast('int')"
    return f"df[{name!r}].astype('Int64')"


def _time_fix(column: ColumnType, name: str) -> str:
    if column.library == "polars":
        how = f"pl.col({name!r}).dt.year()"
    elif column.library == "spark":
        how = f"F.year({name!r})"
    else:
        how = f"df[{name!r}].dt.year"
    return f"convert it to a number explicitly first (e.g. {how}, or the days since a public date)"


def check_columns(data: Dataset, uses: Iterable[ColumnUse], *, owner: str = "schema") -> None:
    """Refuse the data when a column is absent or has a type its role (or its public keys) cannot read.

    Raises:
        InvalidArgument: naming the owner (a node path), the column, its role,
            its type and the fix -- never a value.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> check_columns(as_dataset({"age": [1, 2]}), [ColumnUse("agee", "numeric")], owner="Laplace")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Laplace: numeric column='agee' is not a column of the data; available: ['age']
        >>> check_columns(as_dataset({"year": [1984, 1990]}), [ColumnUse("year", "key", keys=("1984",))], owner="Laplace")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Laplace: key column='year' has dtype int64 (numpy) but keys ('1984',) are str: a str key never matches a number, so its count would be pure noise; pass int keys: keys=(1984, ...)
    """
    for use in uses:
        problem = column_problem(data, use)
        if problem is not None:
            raise InvalidArgument(owner, f"{use.role} column", use.name, problem)
