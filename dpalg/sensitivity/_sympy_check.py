"""Symbolic checks of user-supplied LS_k formulas: non-negative and non-decreasing in k.

A PTR or smooth-sensitivity bound ``F(k)`` on ``LS_k`` must be non-decreasing in
``k`` (LS_k is, and the PTR distance must be 1-Lipschitz) and non-negative.
:func:`check_monotone` decides this for real ``k ≥ 0`` and fails closed:

* **proven**: by structural rules (sums/products/Min/Max/exp/positive powers of
  non-negative non-decreasing terms, constants ≥ 0), else by the sign of
  ``dF/dk`` (``is_nonnegative`` with ``k`` a non-negative symbol), else, for an
  integer ``k``, by the sign of ``F(k+1) − F(k)``;
* **refuted**: only with a concrete numeric counterexample, found on a grid of k
  in [0, 50] and random positive values of the other symbols;
* **unproven**: anything else (``strict`` callers refuse it).

Other free symbols are public parameters, assumed positive unless ``assumptions``
says otherwise (``{"n": {"integer": True, "positive": True}}``).

Strings are parsed by :func:`dpalg.sensitivity._formula.parse_formula`, dpalg's own
whitelist over Python's :mod:`ast` (numbers, declared symbols, ``+ - * / **`` and
``Min``, ``Max``, ``Abs``, ``floor``, ``ceiling``, ``log``, ``exp``, ``sqrt``, ``sin``,
``cos``), which builds sympy objects directly: no string reaches ``eval``,
``sympify`` or ``parse_expr``. The declared symbols of a string formula are ``var``,
the keys of ``assumptions`` and the names in ``symbols``; any other name is refused.

Every sympy failure inside the check (an assumption query that raises, a
simplification that would be too costly on a large expression) makes the verdict
*unproven*, never an exception.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Literal, final

import attrs
import sympy

from dpalg._errors import InvalidArgument
from dpalg.sensitivity._formula import parse_formula

__all__ = ["MonotoneCheck", "check_monotone", "parse_formula", "require_monotone", "safe_parse"]

Status = Literal["proven", "unproven", "refuted"]
Assumptions = Mapping[str, Mapping[str, bool]]

#: above this many operations (:func:`sympy.count_ops`) no ``simplify`` is attempted: unproven
MAX_SIMPLIFY_OPS = 80


@final
@attrs.frozen
class MonotoneCheck:
    """The verdict of :func:`check_monotone`.

    Attributes:
        status: ``"proven"``, ``"unproven"`` or ``"refuted"``.
        counterexample: for refuted formulas, ``(k1, k2, F(k1), F(k2))`` with
            ``k1 < k2`` and ``F(k1) > F(k2)``, or ``(k, F(k))`` with ``F(k) < 0``
            (with the parameter values used appended as ``(name, value)`` pairs).
        reason: which rule decided, or why nothing did.
        formula: the formula as sympy prints it.
    """

    status: Status
    counterexample: tuple[object, ...] | None
    reason: str
    formula: str


def safe_parse(text: str, local: Mapping[str, object], owner: str, field: str) -> sympy.Expr:
    """Parse a formula string without letting it run code: :func:`parse_formula`.

    Args:
        text: the formula.
        local: every name the formula may use, mapped to a sympy ``Symbol`` or to a
            rational number (a public constant); any other name is refused.
        owner: the class or function named in an error.
        field: the parameter named in an error.

    Raises:
        InvalidArgument: outside the grammar or the limits of
            :mod:`dpalg.sensitivity._formula`, or an undeclared name.

    Examples:
        >>> import sympy
        >>> safe_parse("0.5*k + c", {"k": sympy.Symbol("k"), "c": sympy.Rational(3)}, "demo", "formula")
        k/2 + 3
    """
    symbols: dict[str, sympy.Expr] = {}
    for name, value in local.items():
        if not isinstance(value, sympy.Expr):
            raise InvalidArgument(owner, field, name, "is declared with a value that is not a sympy Symbol or number")
        symbols[name] = value
    return parse_formula(text, symbols, owner=owner, field=field)


def _parse(formula: sympy.Expr | str, var: str, assumptions: Assumptions, symbols: Sequence[str]) -> sympy.Expr:
    if isinstance(formula, sympy.Basic):
        if not isinstance(formula, sympy.Expr):
            raise InvalidArgument("check_monotone", "formula", type(formula).__name__, "must be a sympy expression or a string")
        return formula
    if not isinstance(formula, str):
        raise InvalidArgument("check_monotone", "formula", type(formula).__name__, "must be a sympy expression or a string")
    declared: dict[str, sympy.Expr] = {}
    for name in (var, *assumptions, *symbols):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgument("check_monotone", "symbols", repr(name)[:40], "must be identifiers")
        if name in assumptions:
            declared[name] = sympy.Symbol(name, **dict(assumptions[name]))
        else:
            declared[name] = sympy.Symbol(name, real=True) if name == var else sympy.Symbol(name, positive=True)
    return parse_formula(formula, declared, owner="check_monotone", field="formula")


def _rebind(expr: sympy.Expr, var: str, assumptions: Assumptions) -> tuple[sympy.Expr, sympy.Symbol]:
    """Replace k by a non-negative symbol and other symbols by assumed ones (positive by default)."""
    kk = sympy.Symbol(var, nonnegative=True)
    subs: dict[sympy.Basic, sympy.Basic] = {}
    for s in expr.free_symbols:
        assert isinstance(s, sympy.Symbol)
        if s.name == var:
            subs[s] = kk
        elif s.name in assumptions:
            subs[s] = sympy.Symbol(s.name, **dict(assumptions[s.name]))
        else:
            subs[s] = sympy.Symbol(s.name, positive=True)
    return expr.xreplace(subs), kk


def _structural(e: sympy.Expr, k: sympy.Symbol) -> bool:
    """Non-negative AND non-decreasing in k, by composition rules only."""
    if k not in e.free_symbols:
        return bool(e.is_nonnegative)
    if e == k:
        return True
    if isinstance(e, (sympy.Add, sympy.Mul, sympy.Min)):
        return all(_structural(a, k) for a in e.args)
    if isinstance(e, sympy.Max):  # max of non-decreasing terms, one of them non-negative
        return all(_nondecreasing_only(a, k) for a in e.args) and any(_structural(a, k) for a in e.args)
    if isinstance(e, sympy.Pow):
        base, ex = e.args
        if k not in ex.free_symbols:
            if bool(ex.is_negative):  # g**(-c): g > 0 non-increasing, e.g. 1/Max(n - k, 1)
                return _positive_nonincreasing(base, k)
            return bool(ex.is_nonnegative) and _structural(base, k)
        if k not in base.free_symbols:  # c**g(k) with c >= 1 and g non-decreasing (need not be >= 0)
            return bool((base - 1).is_nonnegative) and _nondecreasing_only(ex, k)
        return False
    if isinstance(e, sympy.exp):
        return _nondecreasing_only(e.args[0], k)
    if isinstance(e, (sympy.ceiling, sympy.floor)):
        return _structural(e.args[0], k) and bool(e.args[0].is_nonnegative)
    return False


def _nonincreasing(e: sympy.Expr, k: sympy.Symbol) -> bool:
    """Non-increasing in k (any sign), by composition rules only."""
    if k not in e.free_symbols:
        return True
    if isinstance(e, sympy.Add):
        return all(_nonincreasing(a, k) for a in e.args)
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if bool(coeff.is_negative):
            return _nondecreasing_only(rest, k)
        return bool(coeff.is_nonnegative) and rest != e and _nonincreasing(rest, k)
    if isinstance(e, (sympy.Max, sympy.Min)):
        return all(_nonincreasing(a, k) for a in e.args)
    return False


def _positive_nonincreasing(e: sympy.Expr, k: sympy.Symbol) -> bool:
    """Strictly positive and non-increasing in k, by composition rules only."""
    if k not in e.free_symbols:
        return bool(e.is_positive)
    if isinstance(e, sympy.Max):  # non-increasing arguments, one of them positive
        return all(_nonincreasing(a, k) for a in e.args) and any(_positive_nonincreasing(a, k) for a in e.args)
    if isinstance(e, sympy.Min):
        return all(_positive_nonincreasing(a, k) for a in e.args)
    return False


def _nondecreasing_only(e: sympy.Expr, k: sympy.Symbol) -> bool:
    if k not in e.free_symbols:
        return True
    if _structural(e, k):
        return True
    if isinstance(e, sympy.Add):  # constants may be negative in an exponent
        return all(_nondecreasing_only(a, k) for a in e.args)
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        return bool(coeff.is_nonnegative) and _structural(rest, k)
    return False


def _numeric_refutation(expr: sympy.Expr, var: str, trials: int, seed: int) -> tuple[str, tuple[object, ...]] | None:
    kvar = next((s for s in expr.free_symbols if isinstance(s, sympy.Symbol) and s.name == var), None)
    others = sorted((s for s in expr.free_symbols if s is not kvar), key=lambda s: str(s))
    grid = [i / 4 for i in range(0, 201)]
    rng = random.Random(seed)
    for t in range(trials):
        point: dict[sympy.Basic, sympy.Basic] = {}
        for s in others:
            raw: int | float
            if t == 0:
                raw = 1
            elif getattr(s, "is_integer", False):
                raw = rng.randint(1, 50)
            else:
                raw = rng.choice([rng.randint(1, 20), rng.random() * 10 + 0.01])
            point[s] = sympy.Integer(raw) if isinstance(raw, int) else sympy.Float(raw)
        g = expr.xreplace(point)
        f = sympy.lambdify([kvar] if kvar is not None else [sympy.Dummy()], g, modules=["math", {"Min": min, "Max": max,
                                                                                            "ceiling": math.ceil, "floor": math.floor}])
        params = tuple((str(s), float(v)) for s, v in point.items())
        ks = grid if kvar is None or not kvar.is_integer else list(range(0, 51))
        vals: list[float] = []
        for kv in ks:
            try:
                v = float(f(kv))
            except (ValueError, ZeroDivisionError, OverflowError, TypeError):
                v = float("nan")
            vals.append(v)
        for kv, v in zip(ks, vals):
            if not math.isnan(v) and v < -1e-12 * max(1.0, abs(v)):
                return "negative value", (kv, v) + params
        best_k, best_v = None, -math.inf
        for kv, v in zip(ks, vals):
            if math.isnan(v):
                continue
            if best_k is not None and best_v - v > 1e-9 * max(1.0, abs(best_v)):
                return "decrease", (best_k, kv, best_v, v) + params
            if v > best_v:
                best_k, best_v = kv, v
    return None


def check_monotone(
    formula: sympy.Expr | str,
    var: str = "k",
    strict: bool = False,
    assumptions: Assumptions | None = None,
    *,
    symbols: Sequence[str] | None = None,
) -> MonotoneCheck:
    """Decide whether ``F(var)`` is non-decreasing and non-negative for real ``var ≥ 0``.

    Args:
        formula: a sympy expression or a string (parsed by
            :func:`~dpalg.sensitivity._formula.parse_formula`, see the module).
        var: the distance variable.
        strict: recorded for symmetry with :func:`require_monotone`; never raises here.
        assumptions: sympy assumptions per other symbol (default: positive).
            ``{var: {"integer": True}}`` makes the distance an integer, enabling
            the ``F(k+1) − F(k)`` rule.
        symbols: further names a string formula may use (public parameters,
            positive unless ``assumptions`` says otherwise). ``var`` and the keys
            of ``assumptions`` are always declared; any other name is refused.

    Returns:
        A :class:`MonotoneCheck`. Whatever sympy raises while deciding makes the
        verdict ``"unproven"`` (fail closed), never an exception.

    Raises:
        InvalidArgument: the formula is not a safe, parseable expression in the
            declared symbols.

    Examples:
        >>> check_monotone("b*Min(k + 1, n)", symbols=("b", "n")).status
        'proven'
        >>> r = check_monotone("5 - k")
        >>> r.status, r.counterexample
        ('refuted', (5.25, -0.25))
        >>> check_monotone("sqrt(a**2 - a)*k", symbols=("a",)).status
        'unproven'

    References:
        Nissim, Raskhodnikova, Smith (2007) (LS_k is non-decreasing in k);
        Dwork, Lei (2009) (PTR needs a 1-Lipschitz distance).
    """
    del strict
    assume: dict[str, Mapping[str, bool]] = dict(assumptions or {})
    raw = _parse(formula, var, assume, tuple(symbols or ()))
    try:
        text = str(raw)
    except Exception:  # pragma: no cover - printing a built expression does not fail
        text = "<formula>"
    try:
        verdict = _decide(raw, var, assume, text)
    except Exception as exc:  # noqa: BLE001 - sympy raises many types (ValueError: nan is not comparable, ...)
        return MonotoneCheck("unproven", None, f"sympy could not decide ({type(exc).__name__}); failing closed", text)
    return verdict


def _simplified(expr: sympy.Expr) -> sympy.Expr | None:
    """``sympy.simplify(expr)``, or None when the expression is too large for it to be cheap."""
    if sympy.count_ops(expr) > MAX_SIMPLIFY_OPS:
        return None
    result = sympy.simplify(expr)
    return result if isinstance(result, sympy.Expr) else None


def _decide(raw: sympy.Expr, var: str, assume: Mapping[str, Mapping[str, bool]], text: str) -> MonotoneCheck:
    expr, k = _rebind(raw, var, {s: a for s, a in assume.items() if s != var})
    integer_k = bool(assume.get(var, {}).get("integer", False))
    if _structural(expr, k):
        return MonotoneCheck("proven", None, "structural rules (non-negative, non-decreasing terms)", text)
    large = sympy.count_ops(expr) > MAX_SIMPLIFY_OPS
    nonneg = expr.is_nonnegative
    if nonneg is None:
        simple = _simplified(expr)
        nonneg = None if simple is None else simple.is_nonnegative
    if nonneg:
        deriv = sympy.diff(expr, k)
        simple_deriv = None if deriv.is_nonnegative else _simplified(deriv)
        if deriv.is_nonnegative or (simple_deriv is not None and simple_deriv.is_nonnegative):
            return MonotoneCheck("proven", None, f"F >= 0 and dF/d{var} >= 0 (sympy assumptions)", text)
        if integer_k:
            ki = sympy.Symbol(var, integer=True, nonnegative=True)
            step = _simplified(expr.xreplace({k: ki + 1}) - expr.xreplace({k: ki}))
            if step is not None and step.is_nonnegative:
                return MonotoneCheck("proven", None, f"F >= 0 and F({var}+1) - F({var}) >= 0 for integer {var}", text)
    probe = expr
    if integer_k:
        probe = expr.xreplace({k: sympy.Symbol(var, integer=True, nonnegative=True)})
    found = _numeric_refutation(probe, var, trials=12, seed=0)
    if found is not None:
        kind, cex = found
        return MonotoneCheck("refuted", cex, f"numeric counterexample ({kind})", text)
    if large:
        return MonotoneCheck("unproven", None, f"no structural rule; the formula is too large (more than {MAX_SIMPLIFY_OPS} "
                             "operations) for sympy's simplification; no counterexample found", text)
    return MonotoneCheck("unproven", None, "no structural rule, sign of the derivative undecided by sympy, no counterexample found", text)


def require_monotone(
    formula: sympy.Expr | str,
    var: str = "k",
    strict: bool = False,
    assumptions: Assumptions | None = None,
    *,
    symbols: Sequence[str] | None = None,
) -> MonotoneCheck:
    """:func:`check_monotone`, raising for refuted formulas (and unproven ones when ``strict``).

    Raises:
        InvalidArgument: refuted (the message shows the counterexample), or
            unproven with ``strict=True``, or a string formula outside the grammar.

    Examples:
        >>> require_monotone("k + 1").status
        'proven'
        >>> require_monotone("(k - 3)**2")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: require_monotone: formula='(k - 3)**2' is refused: ...

    References:
        docs/architecture.md, "Invariants" ("symbolic checks fail closed").
    """
    result = check_monotone(formula, var, strict, assumptions, symbols=symbols)
    if result.status == "refuted":
        raise InvalidArgument("require_monotone", "formula", result.formula,
                              f"is refused: not non-decreasing/non-negative in {var}; counterexample {result.counterexample}")
    if strict and result.status == "unproven":
        raise InvalidArgument("require_monotone", "formula", result.formula,
                              f"is unproven monotone in {var} ({result.reason}); strict mode refuses it")
    return result
