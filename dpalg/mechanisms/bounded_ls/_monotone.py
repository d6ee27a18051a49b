"""The symbolic monotonicity check of :class:`~dpalg.mechanisms.BoundedLS` bounds (fails closed).

A bound ĝ must be non-decreasing in every ``<count>_hi`` symbol and non-increasing
in every ``<count>_lo`` symbol; :func:`check_monotone` refutes it with a
counterexample on a grid, proves it with sympy, or reports it unproven. Also the
exact (or rigorously rounded) evaluation of expressions and user bound
functions at a point. See ``docs/mechanisms/bounded_ls.md``.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.mechanisms._common.user_function import FAILED, as_exact, call_quietly, quiet

if TYPE_CHECKING:  # sympy is imported where an expression is parsed or proven (cold start)
    from typing_extensions import TypeIs

    import sympy

__all__ = ["BoundFunction", "MonotoneCheck", "Status", "check_monotone", "is_expression", "parse_expression"]

BoundFunction = Callable[[Mapping[str, Fraction]], Fraction]
Status = Literal["proven", "unproven", "refuted"]

_VALUE_SLACK = Fraction(1, 10**60)  # absolute error of an irrational f(x), evaluated numerically


def is_expression(bound: object) -> TypeIs[sympy.Expr]:
    """Whether ``bound`` is a sympy expression (without importing sympy: none exists before it is imported)."""
    module = sys.modules.get("sympy")
    return module is not None and isinstance(bound, module.Expr)


def parse_expression(text: str, names: Sequence[str], owner: str, field: str) -> sympy.Expr:
    """Parse a sympy-syntax expression whose free symbols must be among ``names``.

    Every name is bound to a plain sympy ``Symbol`` (so ``E``, ``N``, ``S`` or
    ``I`` never mean sympy constants when they are count names).
    """
    import sympy

    from dpalg.sensitivity._sympy_check import safe_parse

    expr = safe_parse(text, {n: sympy.Symbol(n) for n in names}, owner, field)
    unknown = sorted({str(sym) for sym in expr.free_symbols} - set(names))
    if unknown:
        raise InvalidArgument(owner, field, text, f"uses unknown symbols {unknown}; allowed: {sorted(names)}")
    return expr


@final
@attrs.frozen
class MonotoneCheck:
    """The outcome of :func:`check_monotone` for every bound symbol.

    ``status`` is ``"refuted"`` when a counterexample was found (shown in
    ``counterexample``), ``"proven"`` when sympy proved every partial derivative's
    sign, else ``"unproven"``. ``details`` has one line per symbol.
    """

    status: Status
    details: tuple[str, ...]
    counterexample: str | None = None

    def note(self) -> str:
        """One line for the privacy claim's notes (ends up in the certificate)."""
        head = f"monotonicity of the LS bound: {self.status}"
        return head + ": " + "; ".join(self.details)


def _direction(symbol: str) -> Literal["up", "down"]:
    return "up" if symbol.endswith("_hi") else "down"


def _sign_proof(expr: sympy.Expr, symbol: sympy.Symbol, direction: Literal["up", "down"], shifts: dict[sympy.Symbol, sympy.Expr]) -> bool | None:
    """True if proven monotone in ``direction``, None if undecided.

    Sufficient rules, applied recursively before differentiating: a sum is
    monotone if every term is; ``Max``/``Min`` if every argument is; a product
    with one factor depending on ``symbol`` if that factor is monotone and the
    other factors have a proven sign (a non-positive cofactor flips the
    direction). Otherwise the partial derivative, with every symbol shifted to
    ``lower + u`` (``u >= 0``), must have a proven sign.
    """
    import sympy

    if not expr.has(symbol):
        return True
    if isinstance(expr, (sympy.Max, sympy.Min, sympy.Add)):
        results = [_sign_proof(arg, symbol, direction, shifts) for arg in expr.args]
        return True if all(r is True for r in results) else None
    if isinstance(expr, sympy.Mul):
        with_symbol = [f for f in expr.args if f.has(symbol)]
        if len(with_symbol) == 1:
            rest = sympy.Mul(*[f for f in expr.args if not f.has(symbol)])
            sign = sympy.factor(sympy.together(rest.subs(shifts)))
            flipped: Literal["up", "down"] = "down" if direction == "up" else "up"
            if sign.is_nonnegative and _sign_proof(with_symbol[0], symbol, direction, shifts):
                return True
            if sign.is_nonpositive and _sign_proof(with_symbol[0], symbol, flipped, shifts):
                return True
    derivative = sympy.diff(expr, symbol)
    if derivative.has(sympy.Heaviside, sympy.DiracDelta, sympy.Subs, sympy.Derivative):
        return None
    shifted = sympy.factor(sympy.together(derivative.subs(shifts)))
    known = shifted.is_nonnegative if direction == "up" else shifted.is_nonpositive
    return True if known else None


def _grid(symbols: Sequence[str], lower: Mapping[str, int]) -> list[dict[str, int]]:
    axes = [[lower.get(s, 0) + v for v in (0, 1, 2, 3, 5, 8, 13)] for s in symbols]
    return [dict(zip(symbols, point)) for point in itertools.product(*axes)] if len(symbols) <= 5 else [
        dict(zip(symbols, point)) for point in itertools.islice(itertools.product(*axes), 20000)
    ]


class _NotRational(Exception):
    """The expression leaves the rational operations (sqrt, log, ...): use sympy."""


def _rational_eval(expr: sympy.Expr, point: Mapping[str, Fraction]) -> Fraction:
    """Exact evaluation of +, ×, integer powers, Max and Min with Fractions (fast path).

    Raises ZeroDivisionError where the expression is undefined and _NotRational
    for any other operation.
    """
    import sympy

    if isinstance(expr, sympy.Symbol):
        return point[expr.name]
    if isinstance(expr, sympy.Rational):
        return Fraction(int(expr.p), int(expr.q))
    args = [_rational_eval(arg, point) for arg in expr.args]
    if isinstance(expr, sympy.Add):
        return sum(args, Fraction(0))
    if isinstance(expr, sympy.Mul):
        out = Fraction(1)
        for v in args:
            out *= v
        return out
    if isinstance(expr, sympy.Pow) and args[1].denominator == 1:
        return args[0] ** int(args[1])
    if isinstance(expr, sympy.Max):
        return max(args)
    if isinstance(expr, sympy.Min):
        return min(args)
    raise _NotRational


def _evaluate(bound: sympy.Expr | BoundFunction, point: Mapping[str, Fraction]) -> Fraction | None:
    """The bound at ``point`` (exact, or a rational upper bound), or ``None`` where it is undefined.

    Total: a zero division, a non-finite or non-real value, an evaluation that
    overflows, and for a Python function any :class:`Exception` or a result that
    is not a finite number all mean "undefined" (the point is skipped by the
    check; at release ĝ falls back to GS or BOTTOM, post-processing of the
    noisy counts).
    """
    if is_expression(bound):
        import sympy

        try:
            return _rational_eval(bound, point)
        except ZeroDivisionError:
            return None
        except _NotRational:
            pass
        try:
            value = bound.subs({sympy.Symbol(k): sympy.Rational(v.numerator, v.denominator) for k, v in point.items()})
            if not value.is_finite or not value.is_real:
                return None
            return _to_fraction(value)
        except Exception:  # noqa: BLE001 - e.g. an OverflowError of exp at a huge count: undefined
            return None
    # a user function (or, during an audit, a recorded stub that refuses to run)
    with quiet():
        result = call_quietly(bound, point)  # type: ignore[arg-type]
    return None if result is FAILED else as_exact(result)


def _approximate(value: sympy.Expr) -> Fraction:
    """A rational within ``_VALUE_SLACK`` of the real, finite number ``value`` (exact if rational).

    sympy's ``evalf`` returns the requested number of correct significant digits;
    asking for 80 digits beyond the integer part leaves a margin of 20 digits
    over the promised absolute error ``10**-60``.
    """
    import sympy

    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    magnitude = abs(float(sympy.N(value, 15)))
    digits = 80 + (max(0, int(math.log10(magnitude)) + 1) if magnitude > 0 else 0)
    return Fraction(str(sympy.N(value, digits)))


def _to_fraction(value: sympy.Expr) -> Fraction:
    """An exact rational upper bound of ``value`` (ĝ may be irrational: sqrt, log)."""
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return _approximate(value) + _VALUE_SLACK  # rounding up keeps ĝ a valid bound


def check_monotone(
    bound: str | BoundFunction,
    symbols: Sequence[str],
    lower: Mapping[str, int] | None = None,
) -> MonotoneCheck:
    """Check that ``bound`` is non-decreasing in ``*_hi`` and non-increasing in ``*_lo`` symbols.

    Domain: every symbol ``s`` ranges over ``s >= lower.get(s, 0)``. Proof: after
    substituting ``s = lower + u_s`` with ``u_s >= 0`` (sympy assumption), the sign
    of each partial derivative is asked from sympy (``Max``/``Min`` are checked
    argument by argument, which is sufficient). Counterexample search: on a grid,
    each symbol is stepped by one in its bad direction; an increase of the bound
    when a ``_lo`` symbol grows (or a decrease when a ``_hi`` symbol grows) refutes
    the claim. Python functions cannot be proven; they are grid-tested only.

    Args:
        bound: a sympy-syntax expression string, or a Python function of a
            mapping symbol -> value.
        symbols: the bound symbols (``<name>_lo`` / ``<name>_hi``).
        lower: lower limits of the symbols' domain (default 0).

    Returns:
        A :class:`MonotoneCheck` (refuted / proven / unproven).

    Examples:
        >>> check_monotone("1/(b_lo - 1)", ["b_lo"], {"b_lo": 2}).status
        'proven'
        >>> check_monotone("Max(a_hi, b_hi - a_lo)/(b_lo**2 - b_lo)", ["a_hi", "a_lo", "b_hi", "b_lo"], {"b_lo": 2}).status
        'proven'
        >>> check_monotone("(b_hi - a_lo)/(b_lo**2 - b_lo)", ["a_lo", "b_hi", "b_lo"], {"b_lo": 2}).counterexample
        'b_lo: bound({a_lo: 1, b_hi: 0, b_lo: 2}) = -1/2 < bound({a_lo: 1, b_hi: 0, b_lo: 3}) = -1/6'
        >>> check_monotone("Max(0, b_hi - a_lo)/(b_lo**2 - b_lo)", ["a_lo", "b_hi", "b_lo"], {"b_lo": 2}).status
        'proven'
        >>> result = check_monotone("b_lo", ["b_lo"])
        >>> result.status, result.counterexample
        ('refuted', 'b_lo: bound({b_lo: 0}) = 0 < bound({b_lo: 1}) = 1')
    """
    low = dict(lower or {})
    if isinstance(bound, str):
        return _check_expr(parse_expression(bound, symbols, "check_monotone", "bound"), symbols, low)
    return _check_expr(bound, symbols, low)


def _check_expr(bound: sympy.Expr | BoundFunction, symbols: Sequence[str], low: Mapping[str, int]) -> MonotoneCheck:
    details: list[str] = []
    # 1. counterexample search (refutation is always shown)
    for point in _grid(symbols, low):
        base = _evaluate(bound, {k: Fraction(v) for k, v in point.items()})
        if base is None:
            continue
        for s in symbols:
            moved = dict(point)
            moved[s] += 1
            after = _evaluate(bound, {k: Fraction(v) for k, v in moved.items()})
            if after is None:
                continue
            if _direction(s) == "down" and after > base:
                shown = ", ".join(f"{k}: {v}" for k, v in point.items())
                shown_after = ", ".join(f"{k}: {v}" for k, v in moved.items())
                return MonotoneCheck("refuted", (f"{s} must not increase the bound",), f"{s}: bound({{{shown}}}) = {base} < bound({{{shown_after}}}) = {after}")
            if _direction(s) == "up" and after < base:
                shown = ", ".join(f"{k}: {v}" for k, v in point.items())
                shown_after = ", ".join(f"{k}: {v}" for k, v in moved.items())
                return MonotoneCheck("refuted", (f"{s} must not decrease the bound",), f"{s}: bound({{{shown}}}) = {base} > bound({{{shown_after}}}) = {after}")
    if not is_expression(bound):
        return MonotoneCheck("unproven", ("a Python function cannot be checked symbolically; no counterexample on the grid",))
    # 2. symbolic proof
    import sympy

    shifts: dict[sympy.Symbol, sympy.Expr] = {}
    for s in symbols:
        shifts[sympy.Symbol(s)] = low.get(s, 0) + sympy.Symbol(f"u_{s}", nonnegative=True)
    status: Status = "proven"
    for s in symbols:
        want = "non-decreasing" if _direction(s) == "up" else "non-increasing"
        if _sign_proof(bound, sympy.Symbol(s), _direction(s), shifts):
            details.append(f"{want} in {s}: proven")
        else:
            status = "unproven"
            details.append(f"{want} in {s}: unproven (no counterexample on the grid)")
    return MonotoneCheck(status, tuple(details))
