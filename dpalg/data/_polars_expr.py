"""Expressions (:mod:`dpalg.data._expr`) as polars expressions: the same values, bit for bit.

Each node maps to the polars operation with the same IEEE double semantics
(``+ - * /``, comparisons, ``abs``, ``floor``, ``ceil``); the data policy's
steps are written out: NaN and non-finite results become null and ``-0.0``
becomes ``0.0`` after every numeric step, minimum and maximum are chosen by
comparison (polars' horizontal min/max skip nulls), ``is_in`` of a null is null,
and ``&``/``|`` are polars' three-valued (Kleene) logic, as SQL's. A str column
(``String``, ``Categorical``, ``Enum``) is read as ``String``; bool as
``Boolean``; int and float columns as ``Float64`` (polars' casts round to
nearest, as numpy's do); a date column as ``Date`` (days since 1970-01-01, the
numpy backend's day numbers; outside years 1 to 9999 null), whose ``dt.year``/``dt.month``/``dt.day`` are
the proleptic Gregorian calendar's, as numpy's. These casts are non-strict, so polars pushes a
predicate that reads them below a join (they cannot fail on the columns this path reads: see ``Col``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import polars as pl

from dpalg.data._expr import (
    Arith, Bin, Cast, Col, ColumnKind, Compare, DatePart, Expr, ExprType, IsIn, IsNull, Lit, Logic, Lookup, MinMax, Not, Unary,
    compare_type, expr_type, in_dates, in_type, parse_date,
)  # fmt: skip

__all__ = ["polars_expr"]


def _clean(x: pl.Expr) -> pl.Expr:
    """Not finite (or null) -> null; -0.0 -> 0.0."""
    return pl.when(x.is_finite()).then(pl.when(x == 0.0).then(pl.lit(0.0, dtype=pl.Float64)).otherwise(x)).otherwise(None)


def polars_expr(expr: Expr, kinds: Mapping[str, ColumnKind], want: ExprType) -> pl.Expr:
    """``expr`` as a polars expression of the given type (numbers Float64, bools Boolean, str String; missing is null)."""

    def side(node: Expr) -> ExprType | None:
        if isinstance(node, Col):
            kind = kinds[node.name]
            return None if kind == "object" else kind
        return expr_type(node, kinds, "expression")

    def go(node: Expr, want: ExprType) -> pl.Expr:
        if isinstance(node, Col):
            # Non-strict casts: the polars path reads only columns of kind number (an int, uint or float type),
            # bool (Boolean), str (String, Categorical, Enum) or date (Date) -- an ``object`` column takes the
            # numpy path (:func:`~dpalg.data._transform.apply_steps`) -- and ``expr_type`` checked before the
            # charge that each column is read as its own kind, so every cast here is total and gives the strict
            # cast's values. Polars treats a strict cast as fallible and keeps a predicate holding one above a
            # join; a non-strict one it pushes below (a filter on a joined table's column then runs on that
            # table's rows before the join, and the rest of the filter on the rows the join keeps).
            c = pl.col(node.name)
            if want == "number":
                return _clean(c.cast(pl.Float64, strict=False))
            if want == "bool":
                return c.cast(pl.Boolean, strict=False)
            if want == "date":  # outside years 1 to 9999: missing (dt.year is null there; numpy reads a year)
                d = c.cast(pl.Date, strict=False)
                return pl.when(d.is_between(pl.lit(date.min, dtype=pl.Date), pl.lit(date.max, dtype=pl.Date))).then(d).otherwise(None)
            return c.cast(pl.String, strict=False)
        if isinstance(node, Lit):
            v = node.value
            if isinstance(v, bool):
                return pl.lit(v, dtype=pl.Boolean)
            if want == "date" and isinstance(v, str):  # checked by compare_type before the charge
                return pl.lit(parse_date(v, "expression"), dtype=pl.Date)
            if isinstance(v, date):
                return pl.lit(v, dtype=pl.Date)
            if isinstance(v, str):
                return pl.lit(v, dtype=pl.String)
            return pl.lit(v, dtype=pl.Float64)
        if isinstance(node, Arith):
            a, b = go(node.left, "number"), go(node.right, "number")
            out = a + b if node.op == "+" else a - b if node.op == "-" else a * b if node.op == "*" else a / b
            return _clean(out)
        if isinstance(node, Unary):
            a = go(node.operand, "number")
            return _clean(-a if node.op == "neg" else a.abs() if node.op == "abs" else a.floor() if node.op == "floor" else a.ceil())
        if isinstance(node, MinMax):
            a, b = go(node.left, "number"), go(node.right, "number")
            pick = a <= b if node.op == "min" else a >= b
            return pl.when(a.is_null() | b.is_null()).then(None).when(pick).then(a).otherwise(b)
        if isinstance(node, Bin):
            a = go(node.operand, "number")
            chain: Any = pl.when(a.is_null()).then(pl.lit(None, dtype=pl.Float64))
            edges = node.edges
            for i in range(len(edges) - 1):
                chain = chain.when((a >= edges[i]) & (a < edges[i + 1])).then(pl.lit(float(i), dtype=pl.Float64))
            binned: pl.Expr = chain.otherwise(pl.lit(None, dtype=pl.Float64))
            return binned
        if isinstance(node, Cast):
            return go(node.operand, "bool").cast(pl.Float64)
        if isinstance(node, DatePart):
            d = go(node.operand, "date")
            part = d.dt.year() if node.part == "year" else d.dt.month() if node.part == "month" else d.dt.day()
            return part.cast(pl.Float64)
        if isinstance(node, Compare):
            t = compare_type(node, kinds)
            a, b = go(node.left, t), go(node.right, t)
            ops = {"==": a.eq(b), "!=": a.ne(b), "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
            return ops[node.op]
        if isinstance(node, IsIn):
            t = in_type(node, kinds)
            a = go(node.operand, t)
            listed = pl.Series(in_dates(node), dtype=pl.Date) if t == "date" else list(node.values)
            return pl.when(a.is_null()).then(pl.lit(None, dtype=pl.Boolean)).otherwise(a.is_in(listed))
        if isinstance(node, Lookup):
            a = go(node.operand, node.key_type())
            number = node.value_type() == "number"
            keys = [k for k, _ in node.pairs]
            new = [v for _, v in node.pairs]
            return a.replace_strict(keys, new, default=None, return_dtype=pl.Float64 if number else pl.String)
        if isinstance(node, IsNull):
            inner = side(node.operand)
            assert inner is not None
            a = go(node.operand, inner)
            return a.is_not_null() if node.negate else a.is_null()
        if isinstance(node, Logic):
            a, b = go(node.left, "bool"), go(node.right, "bool")
            return a & b if node.op == "&" else a | b
        if isinstance(node, Not):
            return ~go(node.operand, "bool")
        raise AssertionError(type(node).__name__)  # pragma: no cover - every node type is handled above

    return go(expr, want)
