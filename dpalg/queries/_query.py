"""Queries: what a statistic *is*, separate from how it is released.

A :class:`Query` is a frozen description (kind, column, bounds, parameters).
``Query.mean("age") | Clip(0, 100)`` clips the column to [0, 100] first. The
sensitivities of each query live in :mod:`dpalg.sensitivity`; this module only
defines values, so every mechanism agrees on what it is estimating.

Value conventions (n = number of non-missing values after clipping, x sorted):

* ``quantile(q)`` is the order statistic ``x[max(0, ceil(q·n) − 1)]`` (0-based);
  ``median`` is ``quantile(1/2)``, the lower median. Empty data: the lower bound.
* ``mean`` of empty data is the midpoint of the bounds.
* ``variance`` is the *population* variance ``(1/n)·Σ(x − mean)²`` of the clipped
  present values (divisor n, not n − 1); ``stdev`` is its square root. Empty
  data: 0 for both.
* ``trimmed_mean(trim)`` drops ``floor(trim·n)`` values at each end.
* ``mode`` is the most frequent value, the smallest among ties; empty: ``nan``.
* user-level queries (``user=`` given) protect one user with all their rows;
  their contribution is bounded with :class:`ClipPerUser`, :class:`MaxRowsPerUser`
  or :class:`MaxKeysPerUser` (:mod:`dpalg.queries._bounding`). ``count(user=)``
  counts *rows*, ``count_users(user=)`` counts *users*.

(About 600 lines on purpose: nearly all of it is the one frozen class :class:`Query` -- a
constructor per kind, the modifiers, the schema it reads and its exact value -- which a split
would scatter; the user-level modifiers already live in :mod:`dpalg.queries._bounding`.)
"""

from __future__ import annotations

import functools

import math
from fractions import Fraction
from collections.abc import Callable
from typing import Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ColumnUse, Dataset, Key, Neighbouring, as_dataset, unit_count, unit_index
from dpalg.data._expr import Col, Expr, Lookup, predicate, substitute
from dpalg.data._tables import From, TablesSource
from dpalg.data._numpy_reductions import inside_bounds
from dpalg.data._transform import RowSteps, apply_steps
from dpalg.queries._bounding import ClipPerUser, MaxKeysPerUser, MaxRowsPerUser, cap_param

__all__ = ["BOUNDED_KINDS", "Clip", "JoinPublic", "Query", "QueryKind", "UserFunction", "Where", "clip_inside", "refuse_user_function"]

#: a user-defined statistic: the clipped values (sorted, read-only) to a real number
UserFunction = Callable[[npt.NDArray[np.float64]], object]

#: the nodes that accept a ``Query.function`` (named in every refusal)
USER_FUNCTION_NODES = (
    "ProposeTest(LocalSensAtDistance(query, formula), bound=..., ...), SmoothBound(LocalSensAtDistance(query, formula), ...), "
    "SmoothBoundCauchy(LocalSensAtDistance(query, formula), ...) or SampleAggregateMean/Median/Mode(query, ...)"
)

QueryKind = Literal[
    "count", "sum", "mean", "median", "quantile", "trimmed_mean", "mode", "histogram",
    "max", "min", "count_distinct", "user_sum", "user_count", "user_max", "function", "variance", "stdev",
]  # fmt: skip
_KINDS: tuple[str, ...] = QueryKind.__args__  # type: ignore[attr-defined]

#: kinds whose global or local sensitivity needs a clipping range
BOUNDED_KINDS: frozenset[str] = frozenset(
    {"sum", "mean", "median", "quantile", "trimmed_mean", "max", "min", "function", "variance", "stdev"}
)
_NEEDS_COLUMN: frozenset[str] = frozenset(set(_KINDS) - {"count", "user_count"})
#: kinds that read their column as keys or exact values: no derived column
_NO_DERIVED: frozenset[str] = frozenset({"mode", "count_distinct", "user_count", "function"})
#: a column of the data by name, or a row expression (``dpalg.col("price") * 2``)
ColumnArg = str | Expr




def _lower(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="lower")


def _upper(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="upper")


def _q(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="q")


def _trim(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="trim")


def _keys(value: tuple[str | int, ...] | list[str | int] | None) -> tuple[str | int, ...] | None:
    if value is None:
        return None
    keys = tuple(value)
    if not keys:  # a release over no key is an empty noise vector: refused here, not after the charge
        raise InvalidArgument("Query", "keys", keys, "must list at least one key (keys=None: the keys are not public)")
    for k in keys:
        if isinstance(k, bool) or not isinstance(k, (str, int)):
            raise InvalidArgument("Query", "keys", k, "must be str or int")
    if len(set(keys)) != len(keys):
        raise InvalidArgument("Query", "keys", "(duplicates)", "must be distinct")
    return keys


def _user_lower(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="user_lower")


def _user_upper(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="user_upper")


def _max_rows(value: int | None) -> int | None:
    return None if value is None else cap_param("Query", "max_rows", value)


def _max_keys(value: int | None) -> int | None:
    return None if value is None else cap_param("Query", "max_keys", value)


def _rows_per_key(value: int | None) -> int | None:
    return None if value is None else cap_param("Query", "rows_per_key", value)


def _fallback(value: ExactLike | None) -> Fraction | None:
    return None if value is None else to_fraction(value, owner="Query", field="fallback")


def refuse_user_function(owner: str, query: object) -> None:
    """Refuse a ``Query.function`` in a node that needs a global sensitivity or a catalog profile.

    A user function has no sensitivity dpalg can compute; it is released only
    under the user's promise of an LS_k bound, which this node cannot take.
    """
    if isinstance(query, Query) and query.kind == "function":
        raise InvalidArgument(
            owner, "query", query,
            f"is a user-defined statistic: {owner} needs a sensitivity dpalg knows, and it has none; "
            f"release it with {USER_FUNCTION_NODES} (the nodes that accept Query.function)",
        )  # fmt: skip

#: kinds a user-level contribution bound applies to, per modifier
_PER_USER_CLIP_KINDS: frozenset[str] = frozenset({"sum", "count", "mean", "median", "quantile", "trimmed_mean", "max", "min"})
_ROW_CAP_KINDS: frozenset[str] = frozenset({"sum", "count", "mean", "median", "quantile", "histogram"})


def _clip_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="Clip", field="lower")


def _clip_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="Clip", field="upper")


@final
@attrs.frozen(repr=False)
class Clip:
    """Clip a column to ``[lower, upper]`` before the query sees it.

    Examples:
        >>> Query.mean("age") | Clip(0, 100)
        Query.mean('age') | Clip(0, 100)
    """

    lower: Fraction = attrs.field(converter=_clip_lower)
    upper: Fraction = attrs.field(converter=_clip_upper)

    def __attrs_post_init__(self) -> None:
        if self.lower > self.upper:
            raise InvalidArgument("Clip", "lower", self.lower, f"must be <= upper={self.upper}")

    def __repr__(self) -> str:
        return f"Clip({_num(self.lower)}, {_num(self.upper)})"


def _condition(value: object) -> Expr:
    return predicate(value, "Where", "condition")


@final
@attrs.frozen(repr=False)
class Where:
    """Keep the rows a condition holds for: ``Query.mean("x") | Where(col("year") >= 2000) | Clip(0, 10)``.

    The condition is a row expression (:func:`dpalg.col`); a row where it is false
    or missing is dropped before the statistic (and before any clipping or per-user
    bound). Row-wise, so 1-stable: the query's cost does not change
    (:mod:`dpalg.data._transform`). Two ``Where`` are joined by ``&``.
    """

    condition: Expr = attrs.field(converter=_condition)

    def __repr__(self) -> str:
        return f"Where({self.condition!r})"


_MAX_PUBLIC_ROWS = 10_000
_MAX_PUBLIC_COLUMNS = 32
PublicCell = bool | float | str | None


def _cell(value: object, column: str) -> PublicCell:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        if abs(int(value)) > 2**53:
            raise InvalidArgument("JoinPublic", f"table[{column!r}]", "an integer", "must be at most 2**53 in size (exact as a double)")
        return float(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise InvalidArgument("JoinPublic", f"table[{column!r}]", float(value), "must be finite or missing")
        return float(value) + 0.0
    if isinstance(value, str):
        return value
    raise InvalidArgument("JoinPublic", f"table[{column!r}]", type(value).__name__, "must hold bools, numbers, str or None")


def _public_table(value: object) -> tuple[tuple[str, tuple[PublicCell, ...]], ...]:
    if isinstance(value, tuple) and all(isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str) for c in value):
        items = list(value)  # a rebuilt table (a certificate): the same converter checks it again
    elif hasattr(value, "items") and callable(getattr(value, "items")):
        items = list(value.items())
    elif hasattr(value, "columns") and hasattr(value, "__getitem__"):
        items = [(str(name), value[name]) for name in getattr(value, "columns")]  # a pandas or polars DataFrame
    else:
        raise InvalidArgument("JoinPublic", "table", type(value).__name__, "must be a mapping of column -> values or a DataFrame (public data)")
    if not 2 <= len(items) <= _MAX_PUBLIC_COLUMNS:
        raise InvalidArgument("JoinPublic", "table", f"{len(items)} columns", f"must have 2 to {_MAX_PUBLIC_COLUMNS} columns (the key and what it adds)")
    out: list[tuple[str, tuple[PublicCell, ...]]] = []
    n: int | None = None
    for name, column in items:
        if not isinstance(name, str) or not name:
            raise InvalidArgument("JoinPublic", "table", type(name).__name__, "column names must be non-empty str")
        to_list = getattr(column, "to_list", None) or getattr(column, "tolist", None)
        cells = tuple(_cell(v, name) for v in (to_list() if callable(to_list) else list(column)))
        if n is not None and len(cells) != n:
            raise InvalidArgument("JoinPublic", f"table[{name!r}]", len(cells), f"must have {n} values like the other columns")
        n = len(cells)
        if n > _MAX_PUBLIC_ROWS:
            raise InvalidArgument("JoinPublic", "table", f"{n} rows", f"must have at most {_MAX_PUBLIC_ROWS} rows (it is recorded in the certificate)")
        out.append((name, cells))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _lookups(table: tuple[tuple[str, tuple[PublicCell, ...]], ...], on: str) -> tuple[tuple[str, Expr], ...]:
    """:meth:`JoinPublic.lookups`, memoised: the expressions are immutable, and a table of 10,000 rows takes
    tens of milliseconds to check as lookup pairs, which the schema check, the run and the certificate
    would otherwise repeat for every query that reads it."""
    keys = dict(table)[on]
    return tuple((name, Lookup(Col(on), tuple(zip(keys, values)))) for name, values in table if name != on)


@final
@attrs.frozen(repr=False)
class JoinPublic:
    """Join each row with a **public** table on a unique key: its columns become readable as ``col(name)``.

    ``Query.sum(col("price")) | JoinPublic(nations, on="nationkey") | Where(col("region").eq("ASIA"))``.
    The table is public data (it is recorded in the certificate; at most 10,000 rows and 32
    columns). Its key column ``on`` must be unique and never missing -- checked here, on public
    data -- so each private row meets at most one public row: the join is a row-wise map
    (:class:`~dpalg.data._expr.Lookup`), 1-stable, and the query's cost does not change. A row
    whose key is missing or absent from the table gets missing values (a left join). A table
    column whose name is also a column of the data is refused before the charge (ambiguous).
    """

    table: tuple[tuple[str, tuple[PublicCell, ...]], ...] = attrs.field(converter=_public_table)
    on: str = attrs.field(kw_only=True)

    def __attrs_post_init__(self) -> None:
        names = [name for name, _ in self.table]
        if self.on not in names:
            raise InvalidArgument("JoinPublic", "on", self.on, f"must be a column of the public table: {names}")
        if len(set(names)) != len(names):
            raise InvalidArgument("JoinPublic", "table", "repeated names", "column names must be unique")
        keys = dict(self.table)[self.on]
        if any(k is None for k in keys):
            raise InvalidArgument("JoinPublic", "on", self.on, "must have no missing key in the public table")
        if len(set(keys)) != len(keys):
            raise InvalidArgument("JoinPublic", "on", self.on, "must be unique in the public table (each private row meets one public row)")
        self.lookups()  # the columns' values are checked as lookup values (all numbers or all str)

    def lookups(self) -> dict[str, Expr]:
        """Each added column as an expression: ``col(on).lookup({key: value})``."""
        return dict(_lookups(self.table, self.on))  # built and checked once per table (a plan asks many times)

    def __repr__(self) -> str:
        names = [name for name, _ in self.table]
        rows = len(self.table[0][1]) if self.table else 0
        return f"JoinPublic(<public table, {rows} rows: {', '.join(names)}>, on={self.on!r})"


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"'{x}'"


@final
@attrs.frozen(repr=False)
class Query:
    """A statistic of one column (or of users' rows). Build with the classmethods."""

    kind: QueryKind
    column: str | None = None
    lower: Fraction | None = attrs.field(default=None, converter=_lower)
    upper: Fraction | None = attrs.field(default=None, converter=_upper)
    q: Fraction | None = attrs.field(default=None, converter=_q)
    trim: Fraction | None = attrs.field(default=None, converter=_trim)
    keys: tuple[str | int, ...] | None = attrs.field(default=None, converter=_keys)
    user: str | None = None
    user_lower: Fraction | None = attrs.field(default=None, converter=_user_lower)
    user_upper: Fraction | None = attrs.field(default=None, converter=_user_upper)
    max_rows: int | None = attrs.field(default=None, converter=_max_rows)
    max_keys: int | None = attrs.field(default=None, converter=_max_keys)
    rows_per_key: int | None = attrs.field(default=None, converter=_rows_per_key)
    fn: UserFunction | None = None
    name: str | None = None
    fallback: Fraction | None = attrs.field(default=None, converter=_fallback)
    #: the value column as a row expression (``column`` is then its text); ``None``: a column of the data
    derived: Expr | None = None
    #: the rows the query reads: those this condition holds for (``| Where(...)``); ``None``: all rows
    where: Expr | None = None
    #: public tables joined on a unique key (``| JoinPublic(...)``): their columns are readable by the expressions
    joins: tuple[JoinPublic, ...] = ()
    #: on a multi-table input, the relation the query reads (``| From(table, Join(...), ...)``); ``None``: the one table
    source: From | None = None

    def __attrs_post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise InvalidArgument("Query", "kind", self.kind, f"must be one of {_KINDS}")
        if self.kind in _NEEDS_COLUMN and (not isinstance(self.column, str) or not self.column):
            raise InvalidArgument("Query", "column", self.column, f"must be a column name for {self.kind}")
        if (self.lower is None) != (self.upper is None):
            raise InvalidArgument("Query", "lower/upper", (self.lower, self.upper), "must both be set (use | Clip(l, u))")
        if self.lower is not None and self.upper is not None and self.lower > self.upper:
            raise InvalidArgument("Query", "lower", self.lower, f"must be <= upper={self.upper}")
        if self.kind == "quantile" and (self.q is None or not 0 <= self.q <= 1):
            raise InvalidArgument("Query", "q", self.q, "must be in [0, 1]")
        if self.kind == "trimmed_mean" and (self.trim is None or not 0 <= self.trim < Fraction(1, 2)):
            raise InvalidArgument("Query", "trim", self.trim, "must be in [0, 1/2)")
        if self.kind.startswith("user_") and (not isinstance(self.user, str) or not self.user):
            raise InvalidArgument("Query", "user", self.user, f"must name the id column for {self.kind}")
        if self.user is not None and (not isinstance(self.user, str) or not self.user):
            raise InvalidArgument("Query", "user", self.user, "must be None or a non-empty id column name")
        self._check_function()
        self._check_bounding()
        self._check_steps()

    def _check_steps(self) -> None:
        """``derived`` is an expression whose text is ``column``; ``where`` a condition expression."""
        if self.derived is not None:
            if not isinstance(self.derived, Expr):
                raise InvalidArgument("Query", "derived", type(self.derived).__name__, "must be an expression built with dpalg.col")
            if self.kind in _NO_DERIVED:
                raise InvalidArgument("Query", "column", repr(self.derived)[:200], f"must be a column name for {self.kind} (it reads the column's values as keys)")
            if self.column != repr(self.derived):
                raise InvalidArgument("Query", "column", self.column, "must be the text of the derived expression")
        if self.where is not None:
            predicate(self.where, "Query", "where")

    def _check_function(self) -> None:
        """``fn``, ``name`` and ``fallback`` belong to ``Query.function`` only, which is row-level."""
        if self.kind != "function":
            for field in ("fn", "name", "fallback"):
                if getattr(self, field) is not None:
                    raise InvalidArgument("Query", field, field, f"applies to Query.function only, not to {self.kind}")
            return
        if self.fn is None or not callable(self.fn):
            raise InvalidArgument("Query", "fn", type(self.fn).__name__, "must be a callable (clipped values -> float)")
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 200:
            raise InvalidArgument("Query", "name", self.name, "must be a non-empty string of at most 200 characters")
        if self.user is not None:
            raise InvalidArgument("Query", "user", self.user, "must be None: Query.function is row-level")
        if self.fallback is None or abs(self.fallback) > 2**1000:
            raise InvalidArgument("Query", "fallback", self.fallback, "must be a number with |fallback| <= 2**1000")

    def _check_bounding(self) -> None:
        """The contribution-bound fields: consistent, and only on user-level queries of a kind they apply to."""
        if (self.user_lower is None) != (self.user_upper is None):
            raise InvalidArgument("Query", "user_lower/user_upper", (self.user_lower, self.user_upper), "must both be set (use | ClipPerUser(l, u))")
        if self.user_lower is not None and self.user_upper is not None and self.user_lower > self.user_upper:
            raise InvalidArgument("Query", "user_lower", self.user_lower, f"must be <= user_upper={self.user_upper}")
        if (self.max_keys is None) != (self.rows_per_key is None):
            raise InvalidArgument("Query", "max_keys/rows_per_key", (self.max_keys, self.rows_per_key), "must both be set (use | MaxKeysPerUser(m))")
        modifiers = [
            ("ClipPerUser", self.user_lower is not None, _PER_USER_CLIP_KINDS),
            ("MaxRowsPerUser", self.max_rows is not None, _ROW_CAP_KINDS),
            ("MaxKeysPerUser", self.max_keys is not None, frozenset({"histogram"})),
        ]
        for name, present, kinds in modifiers:
            if not present:
                continue
            if self.user is None:
                raise InvalidArgument("Query", "user", None, f"must name the id column to use {name} (it bounds one user's rows)")
            if self.kind not in kinds:
                raise InvalidArgument("Query", "kind", self.kind, f"cannot take {name}, which applies to {sorted(kinds)} only")
        if self.kind == "count" and self.user_lower is not None and self.user_lower < 0:
            raise InvalidArgument("Query", "user_lower", self.user_lower, "must be >= 0 for a count (a user's row count is never negative)")

    # --- constructors -----------------------------------------------------
    @classmethod
    def _of(cls, kind: QueryKind, column: ColumnArg | None, **fields: object) -> Query:
        """A query of ``kind`` on a column by name, or on a row expression (its text becomes the column's name)."""
        if isinstance(column, Expr):
            return cls(kind, repr(column), derived=column, **fields)  # type: ignore[arg-type]
        return cls(kind, column, **fields)  # type: ignore[arg-type]

    @classmethod
    def count(cls, column: ColumnArg | None = None, *, user: str | None = None) -> Query:
        """Number of rows (or of non-missing values of ``column``)."""
        return cls._of("count", column, user=user)

    @classmethod
    def sum(cls, column: ColumnArg, *, user: str | None = None) -> Query:
        """Sum of a column; needs ``| Clip(l, u)`` for a finite sensitivity."""
        return cls._of("sum", column, user=user)

    @classmethod
    def mean(cls, column: ColumnArg, *, user: str | None = None) -> Query:
        """Mean of a column (needs a clip); user-level with ``user=`` and a contribution bound."""
        return cls._of("mean", column, user=user)

    @classmethod
    def variance(cls, column: ColumnArg) -> Query:
        """Population variance ``(1/n)·Σ(x − mean)²`` of the clipped values (needs a clip; empty data: 0).

        Row level only: :class:`~dpalg.mechanisms.Laplace` and
        :class:`~dpalg.mechanisms.Gaussian` release it from a noisy count, sum
        and sum of squares.

        Examples:
            >>> q = Query.variance("x") | Clip(0, 10)
            >>> q, q.evaluate({"x": [2.0, 6.0, 30.0]})  # the values 2, 6, 10: (16 + 0 + 16)/3
            (Query.variance('x') | Clip(0, 10), 10.666666666666666)
        """
        return cls._of("variance", column)

    @classmethod
    def stdev(cls, column: ColumnArg) -> Query:
        """Population standard deviation, the square root of :meth:`variance` (needs a clip; empty data: 0).

        Examples:
            >>> (Query.stdev("x") | Clip(0, 10)).evaluate({"x": [1.0, 3.0]})
            1.0
        """
        return cls._of("stdev", column)

    @classmethod
    def median(cls, column: ColumnArg, *, user: str | None = None) -> Query:
        """Lower median (needs a clip); user-level with ``user=`` and a contribution bound."""
        return cls._of("median", column, user=user)

    @classmethod
    def quantile(cls, column: ColumnArg, q: ExactLike, *, user: str | None = None) -> Query:
        """The q-quantile ``x[max(0, ceil(q n) - 1)]`` (needs a clip); user-level with ``user=``."""
        return cls._of("quantile", column, q=q, user=user)

    @classmethod
    def trimmed_mean(cls, column: ColumnArg, trim: ExactLike) -> Query:
        """Mean after dropping ``floor(trim·n)`` values at each end (needs a clip)."""
        return cls._of("trimmed_mean", column, trim=trim)

    @classmethod
    def mode(cls, column: str) -> Query:
        """Most frequent value (smallest among ties)."""
        return cls("mode", column)

    @classmethod
    def histogram(
        cls, column: ColumnArg, keys: tuple[str | int, ...] | list[str | int] | None = None, *, user: str | None = None
    ) -> Query:
        """Counts per key; ``keys=None`` means the key set is not public; user-level with ``user=``."""
        return cls._of("histogram", column, keys=keys, user=user)

    @classmethod
    def max(cls, column: ColumnArg) -> Query:
        """Maximum (needs a clip)."""
        return cls._of("max", column)

    @classmethod
    def min(cls, column: ColumnArg) -> Query:
        """Minimum (needs a clip)."""
        return cls._of("min", column)

    @classmethod
    def count_distinct(cls, column: str, *, user: str | None = None) -> Query:
        """Number of distinct values."""
        return cls("count_distinct", column, user=user)

    @classmethod
    def user_sum(cls, column: ColumnArg, *, user: str) -> Query:
        """Sum over users of each user's total (user-level; contributions >= 0)."""
        return cls._of("user_sum", column, user=user)

    @classmethod
    def count_users(cls, *, user: str) -> Query:
        """Number of distinct users (user-level; sensitivity 1). ``Query.count(user=)`` counts rows."""
        return cls("user_count", None, user=user)

    @classmethod
    def user_count(cls, *, user: str) -> Query:
        """The same query as :meth:`count_users` (number of distinct users)."""
        return cls.count_users(user=user)

    @classmethod
    def user_max(cls, column: ColumnArg, *, user: str) -> Query:
        """Largest value over all users' rows (user-level)."""
        return cls._of("user_max", column, user=user)

    @classmethod
    def function(
        cls, fn: UserFunction, *, column: str, name: str | None = None, fallback: ExactLike = 0
    ) -> Query:
        """A user-defined statistic: ``fn`` of the column's clipped values (needs a clip).

        ``fn`` receives a read-only float64 array of the non-missing values,
        clipped and **sorted ascending** (so the statistic is a function of the
        multiset of values, as add/remove neighbours need). Its value is f̃(x) =
        ``fn(x)`` when that is a finite real number, and the public ``fallback``
        when ``fn`` raises or returns anything else (NaN, ±inf, a string, …):
        f̃ is what a release estimates and what an LS_k promise is about.

        ``name`` (default: ``fn``'s qualified name) stands for ``fn`` in reprs and
        certificates, which never record code. ``ProposeTest`` and
        ``SmoothBound``/``SmoothBoundCauchy`` take it inside
        ``LocalSensAtDistance(query, formula)`` (the user's LS_k promise), and the
        sample-and-aggregate nodes take it as their block statistic.

        Examples:
            >>> import numpy as np
            >>> def log1p_mean(x): return float(np.mean(np.log1p(x)))
            >>> Query.function(log1p_mean, column="x") | Clip(0, 10)
            Query.function(log1p_mean, column='x', name='log1p_mean') | Clip(0, 10)
        """
        if name is None:
            name = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)
        return cls("function", column, fn=fn, name=name, fallback=fallback)

    # --- combinators ------------------------------------------------------
    def __or__(self, modifier: Clip | ClipPerUser | MaxRowsPerUser | MaxKeysPerUser | Where | JoinPublic | From) -> Query:
        if isinstance(modifier, From):
            if self.source is not None:
                raise InvalidArgument("From", "table", modifier.table, "a query reads one relation: it has a From already")
            return attrs.evolve(self, source=modifier)
        if isinstance(modifier, JoinPublic):
            taken = {name for j in self.joins for name, _ in j.table if name != j.on}
            added = {name for name, _ in modifier.table if name != modifier.on}
            if taken & added:
                raise InvalidArgument("JoinPublic", "table", sorted(taken & added)[0], "is added by an earlier JoinPublic of this query")
            return attrs.evolve(self, joins=(*self.joins, modifier))
        if isinstance(modifier, Where):
            return attrs.evolve(self, where=modifier.condition if self.where is None else self.where & modifier.condition)
        if isinstance(modifier, ClipPerUser):
            return attrs.evolve(self, user_lower=modifier.lower, user_upper=modifier.upper)
        if isinstance(modifier, MaxRowsPerUser):
            return attrs.evolve(self, max_rows=modifier.k)
        if isinstance(modifier, MaxKeysPerUser):
            return attrs.evolve(self, max_keys=modifier.m, rows_per_key=modifier.rows_per_key)
        if not isinstance(modifier, Clip):
            return NotImplemented
        if self.kind in ("count", "user_count"):
            raise InvalidArgument("Query", "clip", modifier, f"does not apply to {self.kind}")
        return attrs.evolve(self, lower=modifier.lower, upper=modifier.upper)

    @property
    def user_bounded(self) -> bool:
        """Whether a user-level contribution bound (ClipPerUser, MaxRowsPerUser, MaxKeysPerUser) is set."""
        return self.user_lower is not None or self.max_rows is not None or self.max_keys is not None

    @property
    def per_user_totals(self) -> bool:
        """Whether the statistic is taken over users' clipped totals (``| ClipPerUser``), one value per user."""
        return self.user_lower is not None

    @property
    def bounded(self) -> bool:
        """Whether a clipping range is set."""
        return self.lower is not None

    @property
    def neighbouring_unit(self) -> str | None:
        """The id column of user-level queries (``None``: one row)."""
        return self.user

    def neighbouring(self, relation: Literal["add_remove", "substitution"] = "add_remove") -> Neighbouring:
        """The neighbouring relation of this query under ``relation``."""
        return Neighbouring(self.user, relation)

    def require_bounds(self, owner: str) -> tuple[Fraction, Fraction]:
        """The clip range, or an error telling the user to add one."""
        if self.lower is None or self.upper is None:
            raise InvalidArgument(owner, "query", self, "needs a clipping range: add | Clip(lower, upper)")
        return self.lower, self.upper

    def row_steps(self) -> RowSteps | None:
        """The query's row transformations (a derived column, a filter), or ``None`` when it reads the data as given."""
        if self.derived is None and self.where is None:
            return None
        assert self.column is not None or self.derived is None
        public: dict[str, Expr] = {}
        for join in self.joins:
            public.update(join.lookups())
        derived = None if self.derived is None else substitute(self.derived, public)
        where = None if self.where is None else substitute(self.where, public)
        derive = () if derived is None or self.column is None else ((self.column, derived),)
        return RowSteps(derive, where, keys=self.kind == "histogram", public=tuple(public))

    def columns(self) -> tuple[ColumnUse, ...]:
        """The columns this query reads and their roles (public schema, checked before a charge).

        A histogram reads its column as keys (matched against its public
        ``keys=`` when it has them, so the schema check can refuse keys of a
        kind the column cannot hold); every other query reads its column as
        numbers; ``user=`` names the id column.

        Examples:
            >>> Query.histogram("city").columns()
            (ColumnUse(name='city', role='key'),)
            >>> Query.histogram("year", keys=(1984, 1990)).columns()
            (ColumnUse(name='year', role='key', keys=(1984, 1990)),)
            >>> Query.user_sum("pages", user="uid").columns()
            (ColumnUse(name='pages', role='numeric'), ColumnUse(name='uid', role='id'))
        """
        uses: list[ColumnUse] = []
        if self.source is not None:  # the join keys (typed by the tables' schema check)
            for join in self.source.joins:
                uses.extend((ColumnUse(join.left, "expr"), ColumnUse(join.right, "expr")))
        steps = self.row_steps()
        if steps is not None:  # the columns the expressions read (typed against the schema by check_steps)
            uses.extend(ColumnUse(name, "expr") for name in steps.reads())
        if self.column is not None and self.derived is None:
            if self.kind == "histogram":
                uses.append(ColumnUse(self.column, "key", keys=self.keys))
            else:
                uses.append(ColumnUse(self.column, "numeric"))
        if self.user is not None:
            uses.append(ColumnUse(self.user, "id"))
        return tuple(uses)

    # --- data access ------------------------------------------------------
    def values(self, data: Dataset) -> npt.NDArray[np.float64]:
        """The column with missing values dropped and, if bounded, clipped."""
        if self.column is None:
            return np.zeros(data.n_rows, dtype=np.float64)
        raw = data.numeric(self.column)
        kept = raw[~np.isnan(raw)]
        if self.lower is not None and self.upper is not None:
            kept = np.clip(kept, float(self.lower), float(self.upper))
            # float(lower) rounds to nearest; never let a clipped value leave [lower, upper]
            kept = clip_inside(kept, self.lower, self.upper)
        return kept

    def evaluate(self, data: object) -> float | dict[Key, float]:
        """The exact (non-private) value, for utility measurements and tests.

        ``data`` is anything ``plan.run`` accepts (a ``{column: values}`` dict, a
        pandas or polars frame, a :class:`~dpalg.data.Dataset`).

        Histograms return ``{key: count}`` (over ``keys`` when public, else the
        keys present, in key order); keys and missing values follow the data
        policy (:mod:`dpalg.data._dataset`). Every other query returns a float.

        With ``| ClipPerUser(l, u)`` the statistic is taken over the users'
        clipped totals (what the release estimates). Row caps
        (``MaxRowsPerUser``, ``MaxKeysPerUser``) are *not* applied: the rows they
        keep are chosen afresh on every run, so the value here is the uncapped
        statistic and the difference is the cap's bias.

        Examples:
            >>> from dpalg.data import as_dataset
            >>> d = as_dataset({"uid": ["a", "a", "b"], "x": [3.0, 4.0, 50.0]})
            >>> (Query.sum("x", user="uid") | ClipPerUser(0, 10)).evaluate(d)
            17.0
            >>> Query.mean("x").evaluate({"x": [1.0, 2.0, 6.0]})
            3.0
        """
        if not isinstance(data, Dataset):
            data = as_dataset(data)
        if self.source is not None and isinstance(data.source, TablesSource):
            data = data.source.join(self.source)
        steps = self.row_steps()
        if steps is not None:
            data = apply_steps(data, steps, [u.name for u in self.columns()])
        if self.per_user_totals and self.user is not None:
            return evaluate_values(self.totals_view(), self._user_totals(data))
        match self.kind:
            case "histogram":
                assert self.column is not None
                if self.keys is not None:
                    codes = data.key_codes(self.column, self.keys)
                    listed = np.bincount(codes[codes >= 0], minlength=len(self.keys)).tolist()
                    return {k: float(c) for k, c in zip(self.keys, listed)}
                # keys present in the data (normalised, missing ones dropped), in key order
                present, codes = data.key_index(self.column)
                found = np.bincount(codes[codes >= 0], minlength=len(present)).tolist()
                return {k: float(c) for k, c in zip(present, found)}
            case "user_count":
                assert self.user is not None
                return float(unit_count(data.column(self.user)))
            case "user_sum" | "user_max":
                assert self.user is not None and self.column is not None
                raw = data.numeric(self.column)
                ok = ~np.isnan(raw)
                vals = raw[ok]
                if self.lower is not None and self.upper is not None:
                    vals = clip_inside(vals, self.lower, self.upper)
                if self.kind == "user_sum":
                    return float(np.sum(vals))
                return float(np.max(vals)) if vals.size else 0.0
            case _:
                return evaluate_values(self, self.values(data))

    def totals_view(self) -> Query:
        """The row-level query whose rows are the users' clipped totals (``| ClipPerUser`` queries).

        Adding or removing one user adds or removes one value in the per-user
        range, so every row-level profile of this query applies to the totals.

        Examples:
            >>> (Query.median("x", user="uid") | ClipPerUser(0, 50)).totals_view()
            Query.median('x') | Clip(0, 50)
        """
        return Query(self.kind, self.column, self.user_lower, self.user_upper, q=self.q, trim=self.trim)

    def _user_totals(self, data: Dataset) -> npt.NDArray[np.float64]:
        """Each user's total (rows clipped first; a count counts rows), clipped to the per-user range (float; not private)."""
        assert self.user is not None and self.user_lower is not None and self.user_upper is not None
        n_units, codes = unit_index(data.column(self.user), owner="Query.evaluate")
        if self.column is None:
            keep = codes >= 0
            weights = np.ones(int(np.count_nonzero(keep)), dtype=np.float64)
        else:
            raw = data.numeric(self.column)
            keep = (codes >= 0) & ~np.isnan(raw)
            weights = raw[keep] if self.kind != "count" else np.ones(int(np.count_nonzero(keep)), dtype=np.float64)
            if self.lower is not None and self.upper is not None and self.kind != "count":
                weights = clip_inside(np.clip(weights, float(self.lower), float(self.upper)), self.lower, self.upper)
        with np.errstate(all="ignore"):
            totals = np.bincount(codes[keep], weights=weights, minlength=n_units).astype(np.float64)
        return clip_inside(np.nan_to_num(totals, nan=0.0), self.user_lower, self.user_upper)

    def __repr__(self) -> str:
        args: list[str] = []
        if self.kind == "function":  # the function by its public name: no code, no address
            args = [str(self.name), f"column={self.column!r}", f"name={self.name!r}"]
            if self.fallback:
                args.append(f"fallback={_num(self.fallback)}")
        elif self.derived is not None:
            args.append(repr(self.derived))
        elif self.column is not None:
            args.append(repr(self.column))
        if self.q is not None:
            args.append(_num(self.q))
        if self.trim is not None:
            args.append(_num(self.trim))
        if self.keys is not None:
            args.append(repr(self.keys))
        if self.user is not None:
            args.append(f"user={self.user!r}")
        name = "count_users" if self.kind == "user_count" else self.kind
        text = f"Query.{name}({', '.join(args)})"
        if self.source is not None:
            text += f" | {self.source!r}"
        for join in self.joins:
            text += f" | {join!r}"
        if self.where is not None:
            text += f" | {Where(self.where)!r}"
        if self.lower is not None and self.upper is not None:
            text += f" | Clip({_num(self.lower)}, {_num(self.upper)})"
        if self.max_rows is not None:
            text += f" | {MaxRowsPerUser(self.max_rows)!r}"
        if self.max_keys is not None and self.rows_per_key is not None:
            text += f" | {MaxKeysPerUser(self.max_keys, self.rows_per_key)!r}"
        if self.user_lower is not None and self.user_upper is not None:
            text += f" | {ClipPerUser(self.user_lower, self.user_upper)!r}"
        return text


def clip_inside(values: npt.NDArray[np.float64], lower: Fraction, upper: Fraction) -> npt.NDArray[np.float64]:
    """Clip to the floats nearest ``[lower, upper]`` from inside: no result leaves the exact range."""
    lo, hi = inside_bounds(lower, upper)
    return np.clip(values, lo, hi)


def quantile_index(q: Fraction, n: int) -> int:
    """0-based index of the q-quantile among n sorted values (n >= 1)."""
    num = q.numerator * n
    ceil = -((-num) // q.denominator)
    return max(0, ceil - 1)


def evaluate_values(query: Query, values: npt.NDArray[np.float64]) -> float:
    """The query's value on an already extracted (dropped/clipped) 1-D array."""
    n = values.size
    lo = float(query.lower) if query.lower is not None else float("nan")
    hi = float(query.upper) if query.upper is not None else float("nan")
    match query.kind:
        case "count":
            return float(n)
        case "sum":
            return float(np.sum(values))
        case "mean":
            return float(np.mean(values)) if n else (lo + hi) / 2
        case "variance" | "stdev":
            var = float(np.var(values)) if n else 0.0  # population variance (ddof=0)
            return var if query.kind == "variance" else math.sqrt(var)
        case "median" | "quantile":
            if n == 0:
                return lo
            q = query.q if query.q is not None else Fraction(1, 2)
            return float(np.partition(values, quantile_index(q, n))[quantile_index(q, n)])
        case "trimmed_mean":
            assert query.trim is not None
            drop = (query.trim.numerator * n) // query.trim.denominator
            kept = np.sort(values)[drop : n - drop]
            return float(np.mean(kept)) if kept.size else (lo + hi) / 2
        case "mode":
            if n == 0:
                return float("nan")
            uniq, counts = np.unique(values, return_counts=True)
            return float(uniq[int(np.argmax(counts))])
        case "max":
            return float(np.max(values)) if n else lo
        case "min":
            return float(np.min(values)) if n else hi
        case "count_distinct":
            return float(np.unique(values).size)
        case "function":  # user code runs only inside the mechanism that accepts it, through its total-call machinery
            raise InvalidArgument(
                "evaluate_values", "query", query, "is a user function: evaluated by ProposeTest(LocalSensAtDistance(...)) only"
            )
        case "histogram" | "user_sum" | "user_count" | "user_max":
            raise InvalidArgument("evaluate_values", "query", query, "needs the dataset (keys or user ids); use Query.evaluate")
