"""Expressions (:mod:`dpalg.data._expr`) as Spark column expressions: the same values, bit for bit, on the executors.

Spark's double arithmetic and comparisons are IEEE (the JVM's ``strictfp``
semantics); the data policy's steps are written out so that ANSI mode never
raises: a division by zero is null (the others' ``±inf``/NaN, then missing),
NaN and ``±inf`` become null and ``-0.0`` becomes ``0.0`` after every numeric
step; ``floor``/``ceil`` go through ``bigint`` only below ``2**52`` (above it a
double is already an integer); minimum and maximum are chosen by comparison
(``least``/``greatest`` skip nulls); ``isin`` of a null is null; ``AND``/``OR``
are three-valued as in :mod:`dpalg.data._expr`. String comparison is Spark's
binary (UTF-8 byte) order, which is code point order. A date column is read as
``date`` (days since 1970-01-01, the numpy backend's day numbers; outside years
1 to 9999 null); ``year``,
``month`` and ``dayofmonth`` are java.time's proleptic Gregorian calendar, as
numpy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from dpalg.data._expr import (
    Arith, Bin, Cast, Col, ColumnKind, Compare, DatePart, Expr, ExprType, IsIn, IsNull, Lit, Logic, Lookup, MinMax, Not, Unary,
    FIRST_DAY, LAST_DAY, compare_type, days, expr_type, in_dates, in_type, parse_date,
)  # fmt: skip
from dpalg.data._spark_types import F, quoted

__all__ = ["spark_expr"]

_BIG = float(2**52)


def _clean(x: Any) -> Any:
    """Not finite (or null) -> null; -0.0 -> 0.0."""
    bad = F.isnan(x) | (F.abs(x) == F.lit(float("inf")))
    return F.when(x.isNull() | bad, F.lit(None).cast("double")).when(x == F.lit(0.0), F.lit(0.0)).otherwise(x)


def _date(value: date) -> Any:
    """A date literal, from its day number: py4j's own date conversion prints a year below 1000 without its zeros, which Spark refuses."""
    return F.date_from_unix_date(F.lit(days(value)))


def spark_expr(expr: Expr, kinds: Mapping[str, ColumnKind], want: ExprType) -> Any:
    """``expr`` as a Spark Column of the given type (double, boolean or string; missing is null)."""

    def side(node: Expr) -> ExprType | None:
        if isinstance(node, Col):
            kind = kinds[node.name]
            return None if kind == "object" else kind
        return expr_type(node, kinds, "expression")

    def go(node: Expr, want: ExprType) -> Any:
        if isinstance(node, Col):
            c = F.col(quoted(node.name))
            if want == "number":
                return _clean(c.cast("double"))
            if want == "date":  # outside years 1 to 9999: missing, as on the other backends
                d = c.cast("date")
                return F.when(F.unix_date(d).between(F.lit(FIRST_DAY), F.lit(LAST_DAY)), d).otherwise(F.lit(None).cast("date"))
            return c.cast("boolean") if want == "bool" else c.cast("string")
        if isinstance(node, Lit):
            v = node.value
            if isinstance(v, bool):
                return F.lit(v)
            if want == "date" and isinstance(v, str):  # checked by compare_type before the charge
                return _date(parse_date(v, "expression"))
            if isinstance(v, date):
                return _date(v)
            if isinstance(v, str):
                return F.lit(v).cast("string")
            return F.lit(v).cast("double")
        if isinstance(node, Arith):
            a, b = go(node.left, "number"), go(node.right, "number")
            if node.op == "/":
                return _clean(F.when(b == F.lit(0.0), F.lit(None).cast("double")).otherwise(a / b))
            return _clean(a + b if node.op == "+" else a - b if node.op == "-" else a * b)
        if isinstance(node, Unary):
            a = go(node.operand, "number")
            if node.op == "neg":
                return _clean(-a)
            if node.op == "abs":
                return _clean(F.abs(a))
            rounded = F.floor(a) if node.op == "floor" else F.ceil(a)
            return _clean(F.when(F.abs(a) >= F.lit(_BIG), a).otherwise(rounded.cast("double")))
        if isinstance(node, MinMax):
            a, b = go(node.left, "number"), go(node.right, "number")
            pick = a <= b if node.op == "min" else a >= b
            return F.when(a.isNull() | b.isNull(), F.lit(None).cast("double")).when(pick, a).otherwise(b)
        if isinstance(node, Bin):
            a = go(node.operand, "number")
            edges = node.edges
            chain = F.when(a.isNull(), F.lit(None).cast("double"))
            for i in range(len(edges) - 1):
                chain = chain.when((a >= F.lit(edges[i])) & (a < F.lit(edges[i + 1])), F.lit(float(i)))
            return chain.otherwise(F.lit(None).cast("double"))
        if isinstance(node, Cast):
            return go(node.operand, "bool").cast("double")
        if isinstance(node, DatePart):
            d = go(node.operand, "date")
            part = F.year(d) if node.part == "year" else F.month(d) if node.part == "month" else F.dayofmonth(d)
            return part.cast("double")
        if isinstance(node, Compare):
            t = compare_type(node, kinds)
            a, b = go(node.left, t), go(node.right, t)
            ops = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
            return ops[node.op]
        if isinstance(node, IsIn):
            t = in_type(node, kinds)
            a = go(node.operand, t)
            if t == "date":
                values = [_date(v) for v in in_dates(node)]
            else:
                values = [F.lit(v).cast("double") if t == "number" else F.lit(v) for v in node.values]
            hit = a.isin(values) if values else F.lit(False)
            return F.when(a.isNull(), F.lit(None).cast("boolean")).otherwise(hit)
        if isinstance(node, Lookup):
            a = go(node.operand, node.key_type())
            kind = "double" if node.value_type() == "number" else "string"
            if not node.pairs:
                return F.lit(None).cast(kind)
            key_kind = "double" if node.key_type() == "number" else "string"
            keys = [F.lit(k).cast(key_kind) for k, _ in node.pairs]
            table = F.create_map(*[part for key, (_, v) in zip(keys, node.pairs) for part in (key, F.lit(v).cast(kind))])
            # a key outside the table is null; the isin guard keeps ANSI mode's missing-key error away
            return F.when(a.isNull() | ~a.isin(keys), F.lit(None).cast(kind)).otherwise(table[a])
        if isinstance(node, IsNull):
            inner = side(node.operand)
            assert inner is not None
            a = go(node.operand, inner)
            return a.isNotNull() if node.negate else a.isNull()
        if isinstance(node, Logic):
            a, b = go(node.left, "bool"), go(node.right, "bool")
            return a & b if node.op == "&" else a | b
        if isinstance(node, Not):
            return ~go(node.operand, "bool")
        raise AssertionError(type(node).__name__)  # pragma: no cover - every node type is handled above

    return go(expr, want)
