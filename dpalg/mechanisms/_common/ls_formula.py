"""The sympy side of :class:`~dpalg.mechanisms.LocalSensAtDistance`: parse, prove and probe a formula.

Imported only when a formula is given (cold start: ``import dpalg`` never loads
sympy). The checks are cached per formula text, parameters and clip bounds.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import sympy

from dpalg._errors import InvalidArgument
from dpalg.sensitivity._ptr_condition import NeighbourCheck, formula_values, require_neighbour_condition
from dpalg.sensitivity._sympy_check import MonotoneCheck, require_monotone, safe_parse

__all__ = ["Verdict", "checked", "exact_at", "formula_text"]


def formula_text(value: object) -> str | None:
    """The text of a sympy expression given as a formula, or None for anything else."""
    if isinstance(value, sympy.Basic):
        return str(sympy.sstr(value))
    return None


def exact_at(expr: sympy.Expr, k: int, n: int) -> sympy.Expr:
    """F(k, n) exactly (sympy)."""
    subs = {sympy.Symbol("k"): sympy.Integer(k), sympy.Symbol("n", integer=True, nonnegative=True): sympy.Integer(n)}
    value = expr.subs(subs)
    assert isinstance(value, sympy.Expr)  # substituting numbers into an Expr gives an Expr
    return value


@final
@attrs.frozen
class Verdict:
    """What construction established about a formula (cached per formula, params and bounds)."""

    monotone: MonotoneCheck
    neighbour: NeighbourCheck
    expr: sympy.Expr  # bounds and params substituted: a function of k and n only


def _public_probe(expr: sympy.Expr) -> None:
    """Evaluate F once on a public synthetic grid: a formula dpalg cannot evaluate is refused now."""
    ks = np.arange(4, dtype=np.float64)[:, None]
    formula_values(expr, ks, np.arange(4, dtype=np.float64)[None, :])


@functools.lru_cache(maxsize=256)
def checked(
    formula: str, params: tuple[tuple[str, Fraction], ...], bounds: tuple[Fraction, Fraction] | None, strict: bool
) -> Verdict:
    expr = _parsed(formula, params)  # safe_parse refuses code-like strings
    if bounds is not None:  # the clip bounds are public constants of the query
        expr = expr.subs({
            sympy.Symbol("lower", real=True): sympy.Rational(bounds[0].numerator, bounds[0].denominator),
            sympy.Symbol("upper", real=True): sympy.Rational(bounds[1].numerator, bounds[1].denominator),
        })
    monotone = require_monotone(expr, var="k", strict=strict, assumptions={"n": {"integer": True, "nonnegative": True}})
    extra = sorted(s.name for s in expr.free_symbols if isinstance(s, sympy.Symbol) and s.name not in ("k", "n"))
    if extra:
        raise InvalidArgument("LocalSensAtDistance", "formula", formula,
                              f"uses {extra}, which this query does not define (lower/upper need a clipped query)")
    neighbour = require_neighbour_condition(expr, "add_remove", strict, "LocalSensAtDistance", formula)
    try:
        _public_probe(expr)
    except Exception as exc:  # the evaluator supports exactly the formula grammar
        raise InvalidArgument("LocalSensAtDistance", "formula", formula,
                              f"cannot be evaluated numerically ({type(exc).__name__})") from None
    return Verdict(monotone, neighbour, expr)



@functools.lru_cache(maxsize=256)
def _parsed(formula: str, params: tuple[tuple[str, Fraction], ...]) -> sympy.Expr:
    local = {name: sympy.Rational(v.numerator, v.denominator) for name, v in params} | {
        "k": sympy.Symbol("k"), "n": sympy.Symbol("n", integer=True, nonnegative=True),
        "lower": sympy.Symbol("lower", real=True), "upper": sympy.Symbol("upper", real=True),
    }
    return safe_parse(formula, local, "LocalSensAtDistance", "formula")

