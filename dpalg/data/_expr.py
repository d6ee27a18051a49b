"""Row expressions as data: ``col("price") * (1 - col("discount"))``, never a string.

An expression is a small tree of frozen nodes (:class:`Expr`), built with
:func:`col`, :func:`lit`, Python operators and a few methods. It is a value: it
prints as the code that builds it, compares structurally (``==`` compares two
trees; the row-wise equality is :meth:`Expr.eq`), is recorded in a certificate
node by node and rebuilt by ``dpalg audit`` through the constructors below (no
string is ever parsed or evaluated).

**Types.** Every expression has a type -- ``"number"``, ``"bool"``, ``"str"``
or ``"date"`` -- derived from the public schema before any row is read
(:func:`expr_type`): a column's declared type gives its own (bool; int and float
are numbers; str; a calendar date), an ``object`` column takes the type its use
asks for (the other side of a comparison, the operand of arithmetic), and a
mismatch (a str column in arithmetic, a number compared with a str) is refused
with the node, the column and the fix. Bytes, complex, timestamp and duration
columns are refused.

**Dates.** A date column is a numpy ``datetime64[D]`` array (a pandas
``date32[pyarrow]`` column, a polars ``Date`` column and a Spark ``DateType``
column read as one), or an ``object`` column whose values are
``datetime.date``. A timestamp (``datetime64[ns]``, pandas' default, polars
``Datetime``, Spark ``TimestampType``, with or without a time zone) is refused
by its type: whether its values all fall at midnight is a property of the
data, so deciding from it would let the refusal depend on private values. A
date literal is a ``datetime.date`` (``lit(date(1994, 1, 1))``, or a date on
the other side of a comparison); a str literal compared with, or listed in
``is_in`` of, a date expression is read as a date when the expression is typed
against the schema, strictly as ``YYYY-MM-DD`` (:func:`parse_date`), and a
malformed one is refused there, naming it (a literal is public: it is in the
plan). A date outside years 1 to 9999 (the range of ``datetime.date`` and of
SQL's ``DATE``; numpy and Spark hold farther ones, and polars' calendar functions
return null for them) is missing, as a number that is not finite is. Dates
compare (``== != < <= > >=``, ``is_in``, ``is_null``) by their
proleptic Gregorian day number, and :meth:`Expr.year`, :meth:`Expr.month` and
:meth:`Expr.day` give numbers; arithmetic on a date is refused (at
construction for a date literal, when typed for a date column). An ``object``
column compared with a str literal that reads as a date is refused as
ambiguous: its values may be dates (they would all be missing in a str
comparison) or str.

**Values** (the data policy: missing in, missing out). Numbers are float64 and
every operation is IEEE double arithmetic, correctly rounded on every backend
(``+ - * /``, comparisons, ``abs``, ``floor``, ``ceil``, minimum and maximum by
comparison); transcendental functions are left out because backends round them
differently. After every numeric step a value that is not finite (an overflow,
``x / 0``, ``inf − inf``) becomes missing, and ``-0.0`` becomes ``0.0`` (the
sign of a zero is not kept: backends disagree on it). A read numeric column
follows the same rule, so an expression never yields ``±inf`` (a plain column
given to a query by name keeps ``±inf`` and clips it). A comparison, ``is_in``
or arithmetic with a missing operand is missing; ``&`` and ``|`` follow SQL's
three-valued logic (``False & missing`` is ``False``, ``True | missing`` is
``True``); ``is_null`` is never missing. A filter keeps the rows whose
predicate is true: missing drops the row. Strings compare by code points (the
order numpy, polars and Spark's binary collation share). Nothing here raises on
a value: every refusal depends on the expression and the schema only.

**Limits** (checked at construction): at most 16 levels and 256 nodes, number
literals finite and, for integers, at most 2**53 in size (exact in a double),
str literals at most 1,000 characters, at most 10,000 ``is_in`` values and 256
``bin`` edges.

The numpy evaluation is here (:func:`evaluate`); the polars and Spark
translations are in :mod:`dpalg.data._polars_expr` and
:mod:`dpalg.data._spark_expr`, and all three give the same values bit for bit.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final, Literal, Union, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._schema import value_kind

__all__ = [
    "Arith", "Bin", "Cast", "Col", "Compare", "DatePart", "Expr", "ExprType", "IsIn", "IsNull", "Lit", "Logic", "Lookup", "MinMax", "Not",
    "Unary", "col", "columns_of", "evaluate", "expr_type", "lit", "maximum", "minimum", "predicate", "read_types", "substitute", "derived_type",
    "compare_type", "in_type", "in_dates", "parse_date", "days", "FIRST_DAY", "LAST_DAY",
]  # fmt: skip

ExprType = Literal["number", "bool", "str", "date"]
#: a literal's Python value
LitValue = Union[bool, float, str, datetime.date]
Operand = Union["Expr", bool, int, float, str, datetime.date]

MAX_DEPTH: Final = 16
MAX_NODES: Final = 256
MAX_STR: Final = 1000
MAX_IN: Final = 10_000
MAX_EDGES: Final = 257
_EXACT_INT: Final = 2**53
_ISO_DATE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: ``date(1970, 1, 1).toordinal()``: day numbers count from the Unix epoch, as numpy, polars and Spark do
_EPOCH_ORDINAL: Final = 719_163
#: the day numbers of 0001-01-01 and 9999-12-31: a date outside them is missing (module docstring)
FIRST_DAY: Final = 1 - _EPOCH_ORDINAL
LAST_DAY: Final = datetime.date.max.toordinal() - _EPOCH_ORDINAL
_OWNER: Final = "expression"


class Expr:
    """A row expression (module docstring). Build with :func:`col` and :func:`lit`; combine with operators."""

    __slots__ = ()

    def __attrs_post_init__(self) -> None:  # run by every node's attrs __init__ (and by a certificate's rebuild)
        _check_size(self)

    def children(self) -> tuple[Expr, ...]:
        """The sub-expressions: the fields that hold an expression, in field order."""
        fields = attrs.fields(type(self))  # type: ignore[arg-type]
        return tuple(v for f in fields if isinstance(v := getattr(self, f.name), Expr))

    # arithmetic -------------------------------------------------------------------------
    def __add__(self, other: Operand) -> Expr:
        return Arith("+", self, _wrap(other))

    def __radd__(self, other: Operand) -> Expr:
        return Arith("+", _wrap(other), self)

    def __sub__(self, other: Operand) -> Expr:
        return Arith("-", self, _wrap(other))

    def __rsub__(self, other: Operand) -> Expr:
        return Arith("-", _wrap(other), self)

    def __mul__(self, other: Operand) -> Expr:
        return Arith("*", self, _wrap(other))

    def __rmul__(self, other: Operand) -> Expr:
        return Arith("*", _wrap(other), self)

    def __truediv__(self, other: Operand) -> Expr:
        return Arith("/", self, _wrap(other))

    def __rtruediv__(self, other: Operand) -> Expr:
        return Arith("/", _wrap(other), self)

    def __neg__(self) -> Expr:
        return Unary("neg", self)

    def __abs__(self) -> Expr:
        return Unary("abs", self)

    def abs(self) -> Expr:
        """``|x|``."""
        return Unary("abs", self)

    def floor(self) -> Expr:
        """The largest integer <= x (a number)."""
        return Unary("floor", self)

    def ceil(self) -> Expr:
        """The smallest integer >= x (a number)."""
        return Unary("ceil", self)

    def minimum(self, other: Operand) -> Expr:
        """The smaller of the two (missing if either is)."""
        return MinMax("min", self, _wrap(other))

    def maximum(self, other: Operand) -> Expr:
        """The larger of the two (missing if either is)."""
        return MinMax("max", self, _wrap(other))

    # comparisons (``==`` stays structural: use eq / ne) --------------------------------------
    def __lt__(self, other: Operand) -> Expr:
        return Compare("<", self, _wrap(other))

    def __le__(self, other: Operand) -> Expr:
        return Compare("<=", self, _wrap(other))

    def __gt__(self, other: Operand) -> Expr:
        return Compare(">", self, _wrap(other))

    def __ge__(self, other: Operand) -> Expr:
        return Compare(">=", self, _wrap(other))

    def eq(self, other: Operand) -> Expr:
        """Row-wise equality (``==`` compares two expressions as trees)."""
        return Compare("==", self, _wrap(other))

    def ne(self, other: Operand) -> Expr:
        """Row-wise inequality."""
        return Compare("!=", self, _wrap(other))

    def is_in(self, values: Iterable[bool | int | float | str | datetime.date]) -> Expr:
        """Whether the value is one of the public ``values`` (all numbers, all str or all dates)."""
        return IsIn(self, tuple(values))

    def is_null(self) -> Expr:
        """Whether the value is missing (never missing itself)."""
        return IsNull(self, False)

    def is_not_null(self) -> Expr:
        """Whether the value is present (never missing itself)."""
        return IsNull(self, True)

    def year(self) -> Expr:
        """The year of a date, as a number (``col("orderdate").year().eq(1994)``)."""
        return DatePart(self, "year")

    def month(self) -> Expr:
        """The month (1 to 12) of a date, as a number."""
        return DatePart(self, "month")

    def day(self) -> Expr:
        """The day of the month (1 to 31) of a date, as a number."""
        return DatePart(self, "day")

    def cast(self, to: Literal["number"]) -> Expr:
        """A bool as the number 1 or 0."""
        return Cast(self, to)

    def lookup(self, table: Mapping[bool | int | float | str, bool | int | float | str | None]) -> Expr:
        """The public value ``table[x]`` (a join with a public table on a unique key); missing when x is not a key."""
        return Lookup(self, tuple(table.items()))

    def bin(self, edges: Sequence[int | float]) -> Expr:
        """The index i of the bin ``[edges[i], edges[i+1])`` holding the value, as a number; outside all bins, missing."""
        return Bin(self, tuple(float(e) if not isinstance(e, bool) else e for e in edges))

    # logic -------------------------------------------------------------------------------------
    def __and__(self, other: Operand) -> Expr:
        return Logic("&", self, _wrap(other))

    def __rand__(self, other: Operand) -> Expr:
        return Logic("&", _wrap(other), self)

    def __or__(self, other: Operand) -> Expr:
        return Logic("|", self, _wrap(other))

    def __ror__(self, other: Operand) -> Expr:
        return Logic("|", _wrap(other), self)

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise InvalidArgument(
            _OWNER, "truth value", "expression",
            "is not a Python bool: use & | ~ instead of and / or / not, and .eq() for row-wise equality",
        )  # fmt: skip


def _wrap(value: object) -> Expr:
    if isinstance(value, Expr):
        return value
    return lit(value)  # type: ignore[arg-type]


def _check_size(node: Expr) -> None:
    depth, count = _measure(node)
    if depth > MAX_DEPTH:
        raise InvalidArgument(_OWNER, "depth", depth, f"must be at most {MAX_DEPTH} levels")
    if count > MAX_NODES:
        raise InvalidArgument(_OWNER, "size", count, f"must be at most {MAX_NODES} nodes")


def _measure(node: Expr) -> tuple[int, int]:
    depth, count = 1, 1
    for child in node.children():
        d, c = _measure(child)
        depth, count = max(depth, d + 1), count + c
    return depth, count


def _expr(value: object) -> Expr:
    if not isinstance(value, Expr):
        raise InvalidArgument(_OWNER, "operand", type(value).__name__, "must be an expression (col(...), lit(...))")
    return value


def _number_operand(value: object) -> Expr:
    """An operand of arithmetic, minimum/maximum or bin: an expression, and not a date literal."""
    node = _expr(value)
    if isinstance(node, Lit) and isinstance(node.value, datetime.date):
        raise InvalidArgument(
            _OWNER, "operand", repr(node), "is a date: arithmetic, minimum/maximum and bin take numbers; compare dates, or take .year(), .month() or .day()",
        )  # fmt: skip
    return node


def _column_name(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_STR:
        raise InvalidArgument("col", "name", type(value).__name__ if not isinstance(value, str) else value[:40], "must be a non-empty column name")
    return value


@final
@attrs.frozen(repr=False, order=False)
class Col(Expr):
    """A column of the data."""

    name: str = attrs.field(converter=_column_name)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def _lit_value(value: object) -> LitValue:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if abs(v) > _EXACT_INT:
            raise InvalidArgument("lit", "value", "an integer", f"must be at most 2**53 in size (exact as a double); got {v.bit_length()} bits")
        return float(v)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            raise InvalidArgument("lit", "value", f, "must be finite (a missing value is written col(...).is_null())")
        return f + 0.0  # -0.0 is 0.0 (module docstring)
    if isinstance(value, str):
        if len(value) > MAX_STR:
            raise InvalidArgument("lit", "value", f"a str of {len(value)} characters", f"must be at most {MAX_STR} characters")
        return value
    if isinstance(value, datetime.datetime):  # a subclass of date (so is pandas' Timestamp): checked first
        raise InvalidArgument("lit", "value", repr(value)[:80], "is a timestamp: expressions compare dates only; pass its .date()")
    if isinstance(value, datetime.date):
        return datetime.date(value.year, value.month, value.day)  # a subclass's extras dropped
    if isinstance(value, np.datetime64):
        item = value.item() if np.datetime_data(value.dtype)[0] == "D" else None
        if not isinstance(item, datetime.date):  # NaT, a finer unit, or a day outside years 1 to 9999
            raise InvalidArgument("lit", "value", str(value)[:80], "must be a datetime64[D] day in years 1 to 9999 (or a datetime.date)")
        return item
    raise InvalidArgument("lit", "value", type(value).__name__, "must be a bool, an int, a float, a str or a datetime.date")


def parse_date(text: str, owner: str) -> datetime.date:
    """A str literal read as a date: exactly ``YYYY-MM-DD`` naming a real calendar day, else refused naming it.

    The literal is public (it is in the plan), so the message shows it.

    Examples:
        >>> parse_date("1994-01-01", "Where")
        datetime.date(1994, 1, 1)
        >>> parse_date("1994-02-30", "Where")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Where: date literal='1994-02-30' must be an ISO date YYYY-MM-DD naming a calendar day (it is compared with a date)
    """
    try:
        if _ISO_DATE.fullmatch(text):
            return datetime.date.fromisoformat(text)
    except ValueError:
        pass
    raise InvalidArgument(owner, "date literal", text[:40], "must be an ISO date YYYY-MM-DD naming a calendar day (it is compared with a date)")


def days(value: datetime.date) -> int:
    """The day number of a date: days since 1970-01-01 (proleptic Gregorian), as numpy, polars and Spark count."""
    return value.toordinal() - _EPOCH_ORDINAL


@final
@attrs.frozen(repr=False, order=False)
class Lit(Expr):
    """A public constant: a bool, a number (stored as a double), a str or a ``datetime.date``."""

    value: LitValue = attrs.field(converter=_lit_value)

    def __repr__(self) -> str:
        return self.bare() if _LEGACY.get() else f"lit({self.bare()})"

    def bare(self) -> str:
        """The value as Python writes it (an integral double as an int): what an operator beside an expression shows."""
        v = self.value
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
            return str(int(v))
        return repr(v)


def _one_of(owner: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidArgument(owner, "op", value, f"must be one of {allowed}")
    return str(value)


def _arith_op(value: object) -> str:
    return _one_of("Arith", value, ("+", "-", "*", "/"))


def _unary_op(value: object) -> str:
    return _one_of("Unary", value, ("neg", "abs", "floor", "ceil"))


def _minmax_op(value: object) -> str:
    return _one_of("MinMax", value, ("min", "max"))


def _compare_op(value: object) -> str:
    return _one_of("Compare", value, ("==", "!=", "<", "<=", ">", ">="))


def _logic_op(value: object) -> str:
    return _one_of("Logic", value, ("&", "|"))


#: Python's binding strengths (comparisons below ``|`` below ``&``), so that a repr reads back as the same tree
_PRECEDENCE: Final = {"cmp": 1, "|": 2, "&": 3, "+": 4, "-": 4, "*": 5, "/": 5}
#: the text of dpalg 0.x certificates written before reprs read back (``a >= b & c``, bare literals): audit only
_LEGACY_PRECEDENCE: Final = {"|": 1, "&": 2, "cmp": 3, "+": 4, "-": 4, "*": 5, "/": 5}
_LEGACY: Final = contextvars.ContextVar("dpalg_legacy_expr_text", default=False)


@contextlib.contextmanager
def legacy_text() -> Iterator[None]:
    """Inside, expressions print as certificates written before their reprs read back did (for ``dpalg audit``'s
    check of an older certificate's ``plan_repr``): operators by the old table (a comparison bound tighter than
    ``&``/``|``), literals always bare, no parentheses around a prefix operator."""
    token = _LEGACY.set(True)
    try:
        yield
    finally:
        _LEGACY.reset(token)


def _own(node: Expr) -> int:
    """How tightly ``repr(node)`` binds: an operator's strength, 6 for a prefix ``-``/``~``, 9 for a call or a name."""
    if isinstance(node, (Arith, Logic)):
        return _PRECEDENCE[node.op]
    if isinstance(node, Compare):
        return 1 if node.op not in ("==", "!=") else 9  # ``==``/``!=`` are shown as the methods .eq()/.ne()
    if isinstance(node, Not) or (isinstance(node, Unary) and node.op == "neg"):
        return 6
    return 9


def _text(node: Expr, parent: int, right: bool = False) -> str:
    """``repr(node)`` as an operand: in parentheses where Python would group it otherwise, and a literal as ``lit(...)``
    where Python would not make it an expression (before ``.method()``, after a prefix ``-``/``~``), so a repr reads back
    as the same tree."""
    if _LEGACY.get():
        table = _LEGACY_PRECEDENCE
        own = table.get(getattr(node, "op", ""), 9) if isinstance(node, (Arith, Logic)) else (3 if isinstance(node, Compare) else 9)
        text = repr(node)
        return f"({text})" if own < parent or (right and own == parent) else text
    if isinstance(node, Lit):
        return repr(node) if parent >= 6 else node.bare()
    own, text = _own(node), repr(node)
    return f"({text})" if own < parent or (right and own == parent) else text


def _operands(left: Expr, right: Expr, parent: int, reflected: bool = False) -> tuple[str, str]:
    """Both sides of a binary operator. A literal on the left is ``lit(...)`` when the right is a literal too (``1 + 2``
    would be Python's 3) or when Python would reflect the operator (``'a' > col('s')`` reads back as
    ``col('s') < 'a'``: ``reflected``, the comparisons)."""
    if _LEGACY.get():
        p = 4 if reflected else parent
        return _text(left, p), _text(right, p, right=not reflected)
    shown = repr(left) if isinstance(left, Lit) and (reflected or isinstance(right, Lit)) else _text(left, parent)
    return shown, _text(right, parent, right=True)


@final
@attrs.frozen(repr=False, order=False)
class Arith(Expr):
    """``left op right`` on numbers: ``+ - * /``."""

    op: str = attrs.field(converter=_arith_op)
    left: Expr = attrs.field(converter=_number_operand)
    right: Expr = attrs.field(converter=_number_operand)

    def __repr__(self) -> str:
        left, right = _operands(self.left, self.right, (_LEGACY_PRECEDENCE if _LEGACY.get() else _PRECEDENCE)[self.op])
        return f"{left} {self.op} {right}"


@final
@attrs.frozen(repr=False, order=False)
class Unary(Expr):
    """``-x``, ``abs(x)``, ``floor(x)``, ``ceil(x)`` on a number."""

    op: str = attrs.field(converter=_unary_op)
    operand: Expr = attrs.field(converter=_number_operand)

    def __repr__(self) -> str:
        if self.op == "neg":
            return f"-{_text(self.operand, 6)}"
        return f"{_text(self.operand, 9)}.{self.op}()"


@final
@attrs.frozen(repr=False, order=False)
class MinMax(Expr):
    """The smaller (``min``) or larger (``max``) of two numbers, by comparison."""

    op: str = attrs.field(converter=_minmax_op)
    left: Expr = attrs.field(converter=_number_operand)
    right: Expr = attrs.field(converter=_number_operand)

    def __repr__(self) -> str:
        return f"{_text(self.left, 9)}.{'minimum' if self.op == 'min' else 'maximum'}({_text(self.right, 0)})"


@final
@attrs.frozen(repr=False, order=False)
class Compare(Expr):
    """``left op right``: ``== != < <= > >=`` on two numbers or two str (``==``/``!=`` on bools too)."""

    op: str = attrs.field(converter=_compare_op)
    left: Expr = attrs.field(converter=_expr)
    right: Expr = attrs.field(converter=_expr)

    def __repr__(self) -> str:
        if self.op in ("==", "!="):
            return f"{_text(self.left, 9)}.{'eq' if self.op == '==' else 'ne'}({_text(self.right, 0)})"
        left, right = _operands(self.left, self.right, 2, reflected=True)  # every operator but | binds tighter than a comparison
        return f"{left} {self.op} {right}"


@final
@attrs.frozen(repr=False, order=False)
class Logic(Expr):
    """``left & right`` or ``left | right`` on bools (three-valued)."""

    op: str = attrs.field(converter=_logic_op)
    left: Expr = attrs.field(converter=_expr)
    right: Expr = attrs.field(converter=_expr)

    def __repr__(self) -> str:
        left, right = _operands(self.left, self.right, (_LEGACY_PRECEDENCE if _LEGACY.get() else _PRECEDENCE)[self.op])
        return f"{left} {self.op} {right}"


@final
@attrs.frozen(repr=False, order=False)
class Not(Expr):
    """``~x`` on a bool."""

    operand: Expr = attrs.field(converter=_expr)

    def __repr__(self) -> str:
        return f"~{_text(self.operand, 9)}"


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("IsNull", "negate", type(value).__name__, "must be a bool")
    return value


@final
@attrs.frozen(repr=False, order=False)
class IsNull(Expr):
    """Whether the value is missing (``negate``: present)."""

    operand: Expr = attrs.field(converter=_expr)
    negate: bool = attrs.field(default=False, converter=_flag)

    def __repr__(self) -> str:
        return f"{_text(self.operand, 9)}.{'is_not_null' if self.negate else 'is_null'}()"


def _in_values(value: object) -> tuple[float, ...] | tuple[str, ...] | tuple[datetime.date, ...]:
    if not isinstance(value, tuple):
        raise InvalidArgument("IsIn", "values", type(value).__name__, "must be a tuple of public values")
    if len(value) > MAX_IN:
        raise InvalidArgument("IsIn", "values", f"{len(value)} values", f"must be at most {MAX_IN}")
    read = [_lit_value(v) for v in value]
    if all(isinstance(v, str) for v in read):
        return tuple(sorted(set(str(v) for v in read)))
    if all(isinstance(v, float) for v in read):
        return tuple(sorted(set(v for v in read if isinstance(v, float))))
    if all(isinstance(v, datetime.date) for v in read):
        return tuple(sorted(set(v for v in read if isinstance(v, datetime.date))))
    raise InvalidArgument("IsIn", "values", "mixed or bool values", "must be all numbers, all str or all dates")


@final
@attrs.frozen(repr=False, order=False)
class IsIn(Expr):
    """Whether the value is one of public values (all numbers, all str or all dates; stored sorted, without repeats)."""

    operand: Expr = attrs.field(converter=_expr)
    values: tuple[float, ...] | tuple[str, ...] | tuple[datetime.date, ...] = attrs.field(converter=_in_values)

    def value_type(self) -> ExprType:
        """``"str"``, ``"date"`` or ``"number"`` (an empty list is a number list)."""
        if not self.values:
            return "number"
        first = self.values[0]
        return "str" if isinstance(first, str) else ("date" if isinstance(first, datetime.date) else "number")

    def __repr__(self) -> str:
        return f"{_text(self.operand, 9)}.is_in([{', '.join(Lit(v).bare() for v in self.values)}])"


def _cast_to(value: object) -> str:
    if value != "number":
        raise InvalidArgument("Cast", "to", value, "must be 'number' (a bool as 1 or 0)")
    return "number"


def _date_part(value: object) -> str:
    return _one_of("DatePart", value, ("year", "month", "day"))


@final
@attrs.frozen(repr=False, order=False)
class DatePart(Expr):
    """The year, month (1 to 12) or day of the month (1 to 31) of a date, as a number (proleptic Gregorian)."""

    operand: Expr = attrs.field(converter=_expr)
    part: str = attrs.field(converter=_date_part)

    def __repr__(self) -> str:
        return f"{_text(self.operand, 9)}.{self.part}()"


@final
@attrs.frozen(repr=False, order=False)
class Cast(Expr):
    """A bool as the number 1 or 0."""

    operand: Expr = attrs.field(converter=_expr)
    to: str = attrs.field(default="number", converter=_cast_to)

    def __repr__(self) -> str:
        return f"{_text(self.operand, 9)}.cast({self.to!r})"


def _edges(value: object) -> tuple[float, ...]:
    if not isinstance(value, tuple) or not 2 <= len(value) <= MAX_EDGES:
        raise InvalidArgument("Bin", "edges", type(value).__name__, f"must be 2 to {MAX_EDGES} increasing finite numbers")
    out = tuple(_lit_value(v) for v in value)
    if not all(isinstance(v, float) for v in out):
        raise InvalidArgument("Bin", "edges", "non-numbers", "must be numbers")
    floats = [v for v in out if isinstance(v, float)]
    if any(b <= a for a, b in zip(floats, floats[1:])):
        raise InvalidArgument("Bin", "edges", "not increasing", "must be strictly increasing")
    return tuple(floats)


@final
@attrs.frozen(repr=False, order=False)
class Bin(Expr):
    """The index i with ``edges[i] <= x < edges[i+1]`` (a number); outside ``[edges[0], edges[-1])`` missing."""

    operand: Expr = attrs.field(converter=_number_operand)
    edges: tuple[float, ...] = attrs.field(converter=_edges)

    def __repr__(self) -> str:
        return f"{_text(self.operand, 9)}.bin([{', '.join(Lit(e).bare() for e in self.edges)}])"


def _pairs(value: object) -> tuple[tuple[LitValue, LitValue | None], ...]:
    if not isinstance(value, tuple):
        raise InvalidArgument("Lookup", "pairs", type(value).__name__, "must be a tuple of (key, value) pairs")
    if len(value) > MAX_IN:
        raise InvalidArgument("Lookup", "pairs", f"{len(value)} keys", f"must be at most {MAX_IN}")
    out: dict[LitValue, LitValue | None] = {}
    for item in value:
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidArgument("Lookup", "pairs", type(item).__name__, "must hold (key, value) pairs")
        key = _lit_value(item[0])
        if isinstance(key, (bool, datetime.date)):
            raise InvalidArgument("Lookup", "key", repr(key), "must be a number or a str")
        if key in out:
            raise InvalidArgument("Lookup", "key", key if isinstance(key, float) else key[:40], "appears twice: the public keys must be unique")
        out[key] = None if item[1] is None else _lit_value(item[1])
    keys = list(out)
    if keys and not (all(isinstance(k, str) for k in keys) or all(isinstance(k, float) for k in keys)):
        raise InvalidArgument("Lookup", "keys", "mixed", "must be all numbers or all str")
    found = [v for v in out.values() if v is not None]
    if found and not (all(isinstance(v, str) for v in found) or all(isinstance(v, float) and not isinstance(v, bool) for v in found)):
        raise InvalidArgument("Lookup", "values", "mixed or bool", "must be all numbers or all str (or None for missing)")
    return tuple(sorted(out.items(), key=lambda kv: kv[0]))


@final
@attrs.frozen(repr=False, order=False)
class Lookup(Expr):
    """The public value paired with the operand's value (a join with a public table on a unique key); missing if none.

    ``pairs``: ``(key, value)`` with unique keys (all numbers or all str) and values all numbers or all str
    (``None``: missing). Row-wise: a row's result depends on its own value and the public pairs only.
    """

    operand: Expr = attrs.field(converter=_expr)
    pairs: tuple[tuple[LitValue, LitValue | None], ...] = attrs.field(converter=_pairs)

    def key_type(self) -> ExprType:
        """The keys' type (``"number"`` for an empty table)."""
        return "str" if self.pairs and isinstance(self.pairs[0][0], str) else "number"

    def value_type(self) -> ExprType:
        """The values' type (``"number"`` when every value is missing)."""
        found = [v for _, v in self.pairs if v is not None]
        return "str" if found and isinstance(found[0], str) else "number"

    def __repr__(self) -> str:
        if len(self.pairs) <= 8:
            shown = ", ".join(f"{Lit(k).bare()}: {None if v is None else Lit(v).bare()}" for k, v in self.pairs)
            return f"{_text(self.operand, 9)}.lookup({{{shown}}})"
        import hashlib

        digest = hashlib.sha256(repr(self.pairs).encode()).hexdigest()[:12]
        return f"{_text(self.operand, 9)}.lookup(<{len(self.pairs)} public pairs, sha256 {digest}>)"


def substitute(expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """``expr`` with every ``col(name)`` of ``mapping`` replaced by ``mapping[name]`` (a public join's columns)."""
    if isinstance(expr, Col):
        return mapping.get(expr.name, expr)
    changes: dict[str, Expr] = {}
    for field in attrs.fields(type(expr)):  # type: ignore[arg-type]
        value = getattr(expr, field.name)
        if isinstance(value, Expr):
            new = substitute(value, mapping)
            if new is not value:
                changes[field.name] = new
    return attrs.evolve(expr, **changes) if changes else expr  # type: ignore[misc]


def col(name: str) -> Expr:
    """A column of the data, as an expression.

    Examples:
        >>> col("price") * (1 - col("discount"))
        col('price') * (1 - col('discount'))
        >>> (col("shipdate") >= "1994-01-01") & col("qty").is_in([1, 2])
        (col('shipdate') >= '1994-01-01') & col('qty').is_in([1, 2])
    """
    return Col(name)


def lit(value: bool | int | float | str | datetime.date) -> Expr:
    """A public constant: a bool, a number (at most 2**53 in size if an int; finite), a str or a date.

    Examples:
        >>> import datetime
        >>> col("shipdate") >= lit(datetime.date(1994, 1, 1))
        col('shipdate') >= datetime.date(1994, 1, 1)
        >>> lit(2**53 + 1)
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: lit: value='an integer' must be at most 2**53 in size (exact as a double); got 54 bits
    """
    return Lit(value)


def minimum(a: Operand, b: Operand) -> Expr:
    """The smaller of two numbers (missing if either is)."""
    return MinMax("min", _wrap(a), _wrap(b))


def maximum(a: Operand, b: Operand) -> Expr:
    """The larger of two numbers (missing if either is)."""
    return MinMax("max", _wrap(a), _wrap(b))


def predicate(value: object, owner: str, field: str) -> Expr:
    """``value`` as a filter predicate (an :class:`Expr`), refused otherwise with the fix for the usual slip."""
    if isinstance(value, bool):
        raise InvalidArgument(owner, field, value, "must be an expression; write col(...).eq(...) for row-wise equality (== compares expressions)")
    if not isinstance(value, Expr):
        raise InvalidArgument(owner, field, type(value).__name__, "must be an expression built with dpalg.col")
    return value


def columns_of(expr: Expr) -> tuple[str, ...]:
    """The columns ``expr`` reads, in first-use order."""
    out: dict[str, None] = {}

    def walk(node: Expr) -> None:
        if isinstance(node, Col):
            out.setdefault(node.name, None)
        for child in node.children():
            walk(child)

    walk(expr)
    return tuple(out)


# --- types -----------------------------------------------------------------------------------------

#: a column's type for expressions: its own, or ``"object"`` (takes the type its use asks for)
ColumnKind = Literal["number", "bool", "str", "date", "object"]

_DATE_DTYPE: Final = np.dtype("datetime64[D]")


def read_types(data: Dataset, names: Iterable[str], owner: str) -> dict[str, ColumnKind]:
    """The expression kind of each column (the schema only), refusing columns expressions cannot read."""
    out: dict[str, ColumnKind] = {}
    for name in names:
        if name not in data.names:
            raise InvalidArgument(owner, f"col({name!r})", "missing", f"is not a column of the data; available: {sorted(data.names)}")
        dtype = data.column_dtype(name)
        kind = value_kind(dtype)
        if kind == "bool":
            out[name] = "bool"
        elif kind in ("int", "float"):
            out[name] = "number"
        elif kind == "str":
            out[name] = "str"
        elif kind == "object":
            out[name] = "object"
        elif dtype == _DATE_DTYPE:
            out[name] = "date"
        elif kind == "time":
            column = data.column_type(name)
            raise InvalidArgument(owner, f"col({name!r})", column.describe(), _timestamp_fix(column.library, column.dtype, name))
        else:
            shown = data.column_type(name).describe()
            raise InvalidArgument(
                owner, f"col({name!r})", shown,
                "cannot be read by an expression (bool, int, float, str and date columns can; convert it to one of them first)",
            )  # fmt: skip
    return out


def _timestamp_fix(library: str, dtype: np.dtype[np.generic], name: str) -> str:
    """Why a timestamp or duration column is refused (its type alone), and how to make it a date column."""
    if dtype.kind == "m":
        return "is a duration: expressions read dates (a calendar day), not durations; convert it to a number first"
    if library == "polars":
        how = f"pl.col({name!r}).dt.date()"
    elif library == "spark":
        how = f"F.to_date({name!r})"
    elif library == "pandas":
        how = f"df[{name!r}].astype('date32[pyarrow]'), which drops the time of day"
    else:
        how = f"values.astype('datetime64[D]'), which drops the time of day"
    return (
        "is a timestamp: expressions read dates (a calendar day: numpy datetime64[D], polars Date, Spark DateType); "
        f"whether a timestamp's values are all at midnight would be read from the data, so its type is refused: convert it with {how}"
    )


def expr_type(expr: Expr, kinds: Mapping[str, ColumnKind], owner: str, want: ExprType | None = None) -> ExprType:
    """The type of ``expr`` given the columns' kinds (``want``: the type its context asks for), or refuse."""

    def bad(node: Expr, what: str) -> InvalidArgument:
        return InvalidArgument(owner, "expression", repr(node)[:200], what)

    def number(node: Expr, side: Expr) -> None:
        t = of(side, "number")
        if t == "date":
            raise bad(node, "has a date operand; arithmetic, minimum/maximum and bin take numbers: compare dates, or take .year(), .month() or .day()")
        if t != "number":
            raise bad(node, f"has a {t} operand; arithmetic, minimum/maximum and bin take numbers")

    def of(node: Expr, want: ExprType | None) -> ExprType:
        if isinstance(node, Col):
            kind = kinds[node.name]
            if kind == "object":
                if want is None:
                    raise bad(node, "reads an object column whose type is not public here: compare it with a literal, use it in arithmetic, or give the column a dtype")
                return want
            return kind
        if isinstance(node, Lit):
            return _lit_type(node.value)
        if isinstance(node, (Arith, MinMax)):
            for side in (node.left, node.right):
                number(node, side)
            return "number"
        if isinstance(node, (Unary, Bin)):
            number(node, node.operand)
            return "number"
        if isinstance(node, DatePart):
            if of(node.operand, "date") != "date":
                raise bad(node, f"takes a date; its operand is a {of(node.operand, 'date')}")
            return "number"
        if isinstance(node, Cast):
            if of(node.operand, "bool") != "bool":
                raise bad(node, "casts a bool to a number; its operand is not a bool")
            return "number"
        if isinstance(node, Compare):
            t = compare_type(node, kinds, owner)
            lt = t if _read_as_date(node.left, t) else of(node.left, t)
            rt = t if _read_as_date(node.right, t) else of(node.right, t)
            if lt != rt:
                raise bad(node, f"compares a {lt} with a {rt}")
            if lt == "bool" and node.op not in ("==", "!="):
                raise bad(node, "orders bools; only .eq() and .ne() compare them")
            return "bool"
        if isinstance(node, IsIn):
            t = in_type(node, kinds, owner)
            if of(node.operand, t) != t:
                raise bad(node, f"tests a {of(node.operand, t)} against {t} values")
            return "bool"
        if isinstance(node, Lookup):
            t = node.key_type()
            if of(node.operand, t) != t:
                raise bad(node, f"looks up a {of(node.operand, t)} among {t} keys")
            return node.value_type()
        if isinstance(node, IsNull):
            inner = _side_type(node.operand, kinds)
            if inner is None:
                raise bad(node, "tests an object column for missing values; its type is not public: give the column a dtype")
            of(node.operand, inner)
            return "bool"
        if isinstance(node, (Logic, Not)):
            for side in node.children():
                if of(side, "bool") != "bool":
                    raise bad(node, "takes bools (a comparison, is_in, is_null)")
            return "bool"
        raise bad(node, "is not an expression node")  # pragma: no cover

    return of(expr, want)


def _lit_type(value: LitValue) -> ExprType:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "str"
    return "date" if isinstance(value, datetime.date) else "number"


def _read_as_date(node: Expr, t: ExprType) -> bool:
    """A str literal on a side of a date comparison: read as a date (:func:`parse_date`, checked by :func:`compare_type`)."""
    return t == "date" and isinstance(node, Lit) and isinstance(node.value, str)


def _is_iso_date(text: str) -> bool:
    try:
        parse_date(text, _OWNER)
    except InvalidArgument:
        return False
    return True


def compare_type(node: Compare, kinds: Mapping[str, ColumnKind], owner: str = _OWNER) -> ExprType:
    """The type a comparison compares in: its sides' own, where an ISO str literal takes a date side's type.

    The literal is parsed here (refused, naming it, if it is not a date), so every backend
    that asks this function reads the same date. A bare ``object`` column takes the other
    side's type; compared with a str literal that reads as a date it is refused as ambiguous.
    """
    left, right = _side_type(node.left, kinds), _side_type(node.right, kinds)
    if left is None and right is None:
        raise InvalidArgument(owner, "expression", repr(node)[:200], "compares two object columns; give one of them a dtype or compare with a literal")
    for mine, other in ((node.left, right), (node.right, left)):
        if isinstance(mine, Lit) and isinstance(mine.value, str):
            if other == "date":
                parse_date(mine.value, owner)
                return "date"
            if other is None and _is_iso_date(mine.value):
                raise InvalidArgument(owner, "expression", repr(node)[:200], _AMBIGUOUS)
    t = left or right
    assert t is not None
    return t


_AMBIGUOUS = (
    "compares an object column with a str that reads as a date: its values may be datetime.date (then compare with "
    "lit(datetime.date(...))) or str (then give the column a str dtype, e.g. pandas 'string'); give it a dtype either way"
)


def in_type(node: IsIn, kinds: Mapping[str, ColumnKind], owner: str = _OWNER) -> ExprType:
    """The type ``is_in`` tests in: its values', where str values tested against a date are read as dates (:func:`in_dates`)."""
    t = node.value_type()
    if t != "str":
        return t
    operand = _side_type(node.operand, kinds)
    if operand == "date":
        in_dates(node, owner)
        return "date"
    if operand is None and any(_is_iso_date(str(v)) for v in node.values):
        raise InvalidArgument(owner, "expression", repr(node)[:200], _AMBIGUOUS)
    return t


def in_dates(node: IsIn, owner: str = _OWNER) -> tuple[datetime.date, ...]:
    """The values of a date ``is_in``: dates, or str values each read by :func:`parse_date`."""
    return tuple(v if isinstance(v, datetime.date) else parse_date(str(v), owner) for v in node.values)


def derived_type(expr: Expr, kinds: Mapping[str, ColumnKind]) -> ExprType:
    """The type of a derived column: a number, or a str (a histogram's keys); checked by ``check_steps``."""
    return expr_type(expr, kinds, _OWNER, "number")


def _side_type(node: Expr, kinds: Mapping[str, ColumnKind]) -> ExprType | None:
    """The type of a comparison side on its own, ``None`` for a bare object column (it takes the other side's)."""
    if isinstance(node, Col):
        kind = kinds[node.name]
        return None if kind == "object" else kind
    return expr_type(node, kinds, _OWNER)


# --- numpy evaluation --------------------------------------------------------------------------------

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: str values as a numpy unicode array ("" where missing): compared by code point, vectorised
StrArray = npt.NDArray[np.str_]
#: dates as day numbers since 1970-01-01 (0 where missing), with their presence
DayArray = npt.NDArray[np.int64]
#: what an expression evaluates to: float64 numbers (NaN for missing), or (values, present) for bool, str and date
Values = Union[FloatArray, tuple[BoolArray, BoolArray], tuple[StrArray, BoolArray], tuple[DayArray, BoolArray]]


def _clean(v: FloatArray) -> FloatArray:
    """Not finite -> missing (NaN), -0.0 -> 0.0 (module docstring)."""
    out = np.where(np.isfinite(v), v, np.nan)
    return np.where(out == 0.0, 0.0, out)


def evaluate(expr: Expr, data: Dataset, kinds: Mapping[str, ColumnKind], want: ExprType | None = None) -> Values:
    """The value of ``expr`` on every row of ``data`` (numpy): float64 with NaN for missing, or (values, present) for bool, str and date.

    ``kinds`` comes from :func:`read_types` (the schema, checked before the charge).
    """
    with np.errstate(all="ignore"):
        return _eval(expr, data, kinds, want if want is not None else expr_type(expr, kinds, _OWNER))


def _eval(node: Expr, data: Dataset, kinds: Mapping[str, ColumnKind], want: ExprType) -> Values:
    n = data.n_rows
    if isinstance(node, Col):
        return _read(data, node.name, want)
    if isinstance(node, Lit):
        v = node.value
        if isinstance(v, bool):
            return np.full(n, v), np.ones(n, dtype=bool)
        if isinstance(v, datetime.date) or (want == "date" and isinstance(v, str)):
            return np.full(n, _lit_days(v), dtype=np.int64), np.ones(n, dtype=bool)
        if isinstance(v, str):
            return np.full(n, v, dtype=f"<U{max(1, len(v))}"), np.ones(n, dtype=bool)
        return np.full(n, v, dtype=np.float64)
    if isinstance(node, Arith):
        a, b = _num(node.left, data, kinds), _num(node.right, data, kinds)
        op = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[node.op]
        return _clean(op(a, b))
    if isinstance(node, Unary):
        a = _num(node.operand, data, kinds)
        f = {"neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil}[node.op]
        return _clean(f(a))
    if isinstance(node, MinMax):
        a, b = _num(node.left, data, kinds), _num(node.right, data, kinds)
        pick = a <= b if node.op == "min" else a >= b
        return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(pick, a, b))
    if isinstance(node, Bin):
        a = _num(node.operand, data, kinds)
        edges = np.asarray(node.edges, dtype=np.float64)
        i = np.searchsorted(edges, np.where(np.isnan(a), -np.inf, a), side="right") - 1
        inside = ~np.isnan(a) & (i >= 0) & (i < len(edges) - 1)
        return np.where(inside, i, np.nan).astype(np.float64)
    if isinstance(node, Cast):
        values, present = _bool(node.operand, data, kinds)
        return np.where(present, values.astype(np.float64), np.nan)
    if isinstance(node, DatePart):
        day_numbers, present = _pair(node.operand, data, kinds, "date")
        return np.where(present, _calendar(day_numbers, node.part), np.nan)
    if isinstance(node, Compare):
        t = compare_type(node, kinds)
        op = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[node.op]
        if t == "number":
            a, b = _num(node.left, data, kinds), _num(node.right, data, kinds)
            present = ~np.isnan(a) & ~np.isnan(b)
            return np.where(present, op(a, b), False), present
        sa, pa = _side(node.left, data, kinds, t)
        sb, pb = _side(node.right, data, kinds, t)
        present = np.ones(n, dtype=bool) & pa & pb
        return np.asarray(op(sa, sb), dtype=bool) & present, present  # a missing entry holds "" (or False): compared, then masked
    if isinstance(node, IsIn):
        t = in_type(node, kinds)
        if t == "number":
            a = _num(node.operand, data, kinds)
            present = ~np.isnan(a)
            return np.isin(a, np.asarray(node.values, dtype=np.float64)) & present, present
        if t == "date":
            d, present = _pair(node.operand, data, kinds, "date")
            return np.isin(d, np.asarray([days(v) for v in in_dates(node)], dtype=np.int64)) & present, present
        s, present = _pair(node.operand, data, kinds, "str")
        hit = np.zeros(n, dtype=bool)
        if present.any():
            hit[present] = np.isin(s[present], np.asarray(node.values, dtype=str))
        return hit, present
    if isinstance(node, Lookup):
        return _lookup(node, data, kinds)
    if isinstance(node, IsNull):
        inner = _side_type(node.operand, kinds)
        assert inner is not None
        got = _eval(node.operand, data, kinds, inner)
        missing = np.isnan(got) if isinstance(got, np.ndarray) else ~got[1]
        return (~missing if node.negate else missing), np.ones(n, dtype=bool)
    if isinstance(node, Logic):
        av, ap = _bool(node.left, data, kinds)
        bv, bp = _bool(node.right, data, kinds)
        a_true, a_false = ap & av, ap & ~av
        b_true, b_false = bp & bv, bp & ~bv
        if node.op == "&":
            false = a_false | b_false
            true = a_true & b_true
        else:
            true = a_true | b_true
            false = a_false & b_false
        return true, true | false
    if isinstance(node, Not):
        nv, np_ = _bool(node.operand, data, kinds)
        return ~nv & np_, np_
    raise InvalidArgument(_OWNER, "node", type(node).__name__, "is not an expression node")  # pragma: no cover


def _lookup(node: Lookup, data: Dataset, kinds: Mapping[str, ColumnKind]) -> FloatArray | tuple[StrArray, BoolArray]:
    n = data.n_rows
    keys = [k for k, _ in node.pairs]
    if node.key_type() == "number":
        a = _num(node.operand, data, kinds)
        present = ~np.isnan(a)
        sorted_keys = np.asarray(keys, dtype=np.float64)
        probe = np.where(present, a, 0.0)
    else:
        s, present = _pair(node.operand, data, kinds, "str")
        sorted_keys = np.asarray(sorted(keys), dtype=str) if keys else np.asarray([], dtype=str)  # code point order
        probe = np.where(present, s, "")
    if len(keys):
        at = np.clip(np.searchsorted(sorted_keys, probe), 0, len(keys) - 1)
        hit = present & (sorted_keys[at] == probe)
    else:
        at, hit = np.zeros(n, dtype=np.intp), np.zeros(n, dtype=bool)
    by_key = dict(node.pairs)
    ordered = [by_key[k] for k in (sorted_keys.tolist() if len(keys) else [])]
    if node.value_type() == "number":
        table = np.asarray([np.nan if v is None else v for v in ordered] or [np.nan], dtype=np.float64)
        return np.where(hit, table[np.minimum(at, len(table) - 1)], np.nan)
    found = np.asarray([v is not None for v in ordered] or [False], dtype=bool)
    table_s = np.asarray([("" if v is None else v) for v in ordered] or [""], dtype=str)
    idx = np.minimum(at, len(table_s) - 1)
    ok = hit & found[idx]
    return np.where(ok, table_s[idx], ""), ok


def _num(node: Expr, data: Dataset, kinds: Mapping[str, ColumnKind]) -> FloatArray:
    got = _eval(node, data, kinds, "number")
    assert isinstance(got, np.ndarray)
    return got


def _bool(node: Expr, data: Dataset, kinds: Mapping[str, ColumnKind]) -> tuple[BoolArray, BoolArray]:
    got = _eval(node, data, kinds, "bool")
    assert isinstance(got, tuple)
    return got[0].astype(bool), got[1]


def _side(node: Expr, data: Dataset, kinds: Mapping[str, ColumnKind], t: ExprType) -> tuple[npt.NDArray[np.generic] | str | bool | int, BoolArray | bool]:
    """A comparison side: a literal as a scalar (numpy broadcasts it; no column of copies), else :func:`_pair`."""
    if isinstance(node, Lit) and not isinstance(node.value, float):
        v = node.value
        if isinstance(v, datetime.date) or (t == "date" and isinstance(v, str)):
            return _lit_days(v), True
        return v, True
    return _pair(node, data, kinds, t)


def _lit_days(value: str | datetime.date) -> int:
    """A date literal's day number (a str one was checked by :func:`compare_type` or :func:`in_type` before the charge)."""
    return days(value if isinstance(value, datetime.date) else parse_date(value, _OWNER))


def _calendar(day_numbers: npt.NDArray[np.generic], part: str) -> FloatArray:
    """Year, month or day of the month of day numbers (numpy's proleptic Gregorian calendar), as float64."""
    d = day_numbers.astype("datetime64[D]")
    month_start = d.astype("datetime64[M]")
    if part == "year":
        out = d.astype("datetime64[Y]").astype(np.int64) + 1970
    elif part == "month":
        out = month_start.astype(np.int64) % 12 + 1
    else:
        out = (d - month_start.astype("datetime64[D]")).astype(np.int64) + 1
    return out.astype(np.float64)


def _pair(node: Expr, data: Dataset, kinds: Mapping[str, ColumnKind], t: ExprType) -> tuple[npt.NDArray[np.generic], BoolArray]:
    """A str (unicode array) or bool value with its presence, as evaluated (no conversion)."""
    got = _eval(node, data, kinds, t)
    assert isinstance(got, tuple)
    return got[0], got[1]


def _read(data: Dataset, name: str, want: ExprType) -> Values:
    if want == "number":
        return _clean(data.numeric(name))
    arr = data.column(name)
    n = len(arr)
    if want == "date":
        return _read_dates(arr)
    if want == "bool":
        if arr.dtype == np.bool_:
            return arr.astype(bool), np.ones(n, dtype=bool)
        present = np.fromiter((isinstance(v, (bool, np.bool_)) for v in arr), dtype=bool, count=n)
        values = np.fromiter((bool(v) if p else False for v, p in zip(arr, present)), dtype=bool, count=n)
        return values, present
    if arr.dtype.kind == "U":
        return np.asarray(arr, dtype=str), np.ones(n, dtype=bool)
    present = np.fromiter((isinstance(v, str) for v in arr), dtype=bool, count=n)
    return np.asarray(np.where(present, arr, ""), dtype=str), present


def _read_dates(arr: npt.NDArray[np.generic]) -> tuple[DayArray, BoolArray]:
    """A date column as day numbers: a ``datetime64`` array (NaT missing), or values of which a ``datetime.date`` is a date.

    In an ``object`` column (a dict of ``datetime.date``, a pandas ``date32[pyarrow]`` column
    converted to numpy, a Spark or polars date column collected) every other value -- ``None``,
    ``NaT``, a ``datetime.datetime`` (a time of day), a str -- is missing (the data policy).
    """
    n = len(arr)
    if arr.dtype.kind == "M":
        numbers = arr.astype("datetime64[D]").view(np.int64)  # NaT is the smallest int64: outside the range below
        present = (numbers >= FIRST_DAY) & (numbers <= LAST_DAY)
        return np.where(present, numbers, 0), present
    present = np.fromiter((isinstance(v, datetime.date) and not isinstance(v, datetime.datetime) for v in arr), dtype=bool, count=n)
    out = np.fromiter((days(v) if p else 0 for v, p in zip(arr, present)), dtype=np.int64, count=n)
    return out, present
