"""The PTR neighbour condition for a user LS_k formula, and its float evaluator.

Propose-test-release with a user formula ``F(k, n)`` for ``LS_k`` uses the distance
``γ_F(x) = min{k ≤ C : F(k, n(x)) > b}`` (``C`` the public cap). The PTR proof needs
``γ_F`` to be 1-Lipschitz, which holds when

    F(k, n) ≤ F(k + 1, n′)   for every k ≥ 0 and every n′ a neighbour of n

(``n′ ∈ {n − 1, n, n + 1}`` under add/remove — adding or removing a row whose value
is missing leaves n unchanged —, ``n′ = n`` under substitution): if
``γ_F(x) = g`` then ``F(k, n′) ≤ F(k + 1, n) ≤ b`` for ``k + 1 < g``, so
``γ_F(x′) ≥ g − 1``, and symmetrically. :func:`check_neighbour_condition` decides
this with the clip bounds and parameters already substituted, for integers
``k, n ≥ 0``, and fails closed:

* **refuted**: a counterexample ``(k, n, n′)`` found on the grid ``k ≤ 50``,
  ``n ≤ 300`` in float64 and confirmed exactly by sympy;
* **proven**: for every shift ``s = n′ − n`` either sympy proves
  ``F(k + 1, n + s) − F(k, n) ≥ 0`` from the assumptions on ``k`` and ``n``, or the
  composition rules below prove that ``G(k) = F(k, c + s·k)`` is non-decreasing in
  real ``k ≥ 0`` for every integer ``c`` (so ``G(k) ≤ G(k + 1)``, which is the
  condition at ``n = c + s·k``);
* **unproven**: anything else, including any sympy exception.

A non-finite value of F (a pole, an overflow, NaN) counts as ``+inf``, the
conservative reading of an upper bound on LS_k, both here and at run time
(:func:`evaluate_formula`), which never raises.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Literal, final

import attrs
import numpy as np
import numpy.typing as npt
import sympy

from dpalg._errors import InvalidArgument

__all__ = ["NeighbourCheck", "check_neighbour_condition", "evaluate_formula", "formula_values", "require_neighbour_condition"]

Status = Literal["proven", "unproven", "refuted"]
FloatArray = npt.NDArray[np.float64]

#: the refutation grid: k in 0..GRID_K, n in 0..GRID_N
GRID_K = 50
GRID_N = 300
_MAX_CONFIRM = 8  # exact (sympy) confirmations tried per check


@final
@attrs.frozen
class NeighbourCheck:
    """The verdict of :func:`check_neighbour_condition`.

    Attributes:
        status: ``"proven"``, ``"unproven"`` or ``"refuted"``.
        counterexample: for refuted formulas ``(k, n, n′)`` with ``F(k, n) > F(k + 1, n′)``.
        reason: which rule decided, or why nothing did.
        formula: the formula as sympy prints it (bounds and parameters substituted).
    """

    status: Status
    counterexample: tuple[int, int, int] | None
    reason: str
    formula: str


# --- float evaluation (no code generation: a walk over the sympy tree) --------------------------

_UNARY: dict[type, Callable[[FloatArray], FloatArray]] = {
    sympy.exp: np.exp, sympy.log: np.log, sympy.Abs: np.abs, sympy.floor: np.floor, sympy.ceiling: np.ceil,
    sympy.sin: np.sin, sympy.cos: np.cos,
}  # fmt: skip


def _number(value: sympy.Basic) -> float:
    """A sympy number as a float; an overflow becomes ±inf, anything undefined NaN."""
    if isinstance(value, sympy.Rational):
        try:
            return float(Fraction(int(value.p), int(value.q)))
        except OverflowError:
            return math.inf if value.p > 0 else -math.inf
    if value.is_extended_real is False or value in (sympy.zoo, sympy.nan):
        return math.nan
    if value is sympy.oo:
        return math.inf
    if value is sympy.S.NegativeInfinity:
        return -math.inf
    try:
        return float(value)
    except (OverflowError, TypeError, ValueError):
        return math.nan


def _walk(e: sympy.Basic, env: dict[str, FloatArray]) -> FloatArray:
    if isinstance(e, sympy.Symbol):
        return env[e.name]
    if e.is_Number or isinstance(e, sympy.NumberSymbol) or e in (sympy.zoo, sympy.nan, sympy.oo):
        return np.asarray(_number(e), dtype=np.float64)
    args = [_walk(a, env) for a in e.args]
    if isinstance(e, sympy.Add):
        out = args[0]
        for a in args[1:]:
            out = out + a
        return np.asarray(out, dtype=np.float64)
    if isinstance(e, sympy.Mul):
        out = args[0]
        for a in args[1:]:
            out = out * a
        return np.asarray(out, dtype=np.float64)
    if isinstance(e, sympy.Pow):
        return np.asarray(np.power(args[0], args[1]), dtype=np.float64)
    if isinstance(e, (sympy.Min, sympy.Max)):
        # numpy's minimum/maximum propagate NaN, which is read as +inf at the end
        op = np.minimum if isinstance(e, sympy.Min) else np.maximum
        out = args[0]
        for a in args[1:]:
            out = op(out, a)
        return np.asarray(out, dtype=np.float64)
    for kind, fn in _UNARY.items():
        if isinstance(e, kind) and len(args) == 1:
            return np.asarray(fn(args[0]), dtype=np.float64)
    raise TypeError(f"no float evaluation for {type(e).__name__}")


def formula_values(expr: sympy.Expr, k: FloatArray, n: FloatArray) -> FloatArray:
    """F at the (broadcast) points (k, n) in float64; raises on an unsupported operation.

    Non-finite results (poles, overflow, NaN) are returned as ``+inf``.
    """
    kk, nn = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    with np.errstate(all="ignore"):
        raw = _walk(expr, {"k": kk, "n": nn})
    out = np.broadcast_to(np.asarray(raw, dtype=np.float64), kk.shape).copy()
    out[~np.isfinite(out)] = np.inf
    return out


def evaluate_formula(expr: sympy.Expr, n: int, cap: int) -> FloatArray:
    """``[F(0, n), …, F(cap, n)]`` in float64, computed for every k on every call; never raises.

    The work is one walk of the expression over an array of ``cap + 1`` values,
    whatever ``n`` and whatever the values: a failure or a non-finite value
    gives ``+inf`` (the conservative reading of an upper bound on LS_k).

    Examples:
        >>> evaluate_formula(sympy.Symbol("k") + 1 / (sympy.Symbol("n") - 2), 2, 3).tolist()
        [inf, inf, inf, inf]
        >>> evaluate_formula(sympy.Symbol("k") / 2, 7, 3).tolist()
        [0.0, 0.5, 1.0, 1.5]
    """
    ks = np.arange(cap + 1, dtype=np.float64)
    try:
        return formula_values(expr, ks, np.full(cap + 1, float(n)))
    except Exception:  # a release is total: any failure is the conservative +inf
        return np.full(cap + 1, np.inf)


# --- composition rules ----------------------------------------------------------------------------


def _const(e: sympy.Basic, k: sympy.Symbol) -> bool:
    return k not in e.free_symbols


def _split(e: sympy.Mul, k: sympy.Symbol) -> tuple[sympy.Expr, list[sympy.Expr]]:
    coeff = sympy.Mul(*[a for a in e.args if _const(a, k)])
    return coeff, [a for a in e.args if not _const(a, k)]


def _nondecreasing(e: sympy.Basic, k: sympy.Symbol) -> bool:
    """Non-decreasing in real k ≥ 0 (and defined there), by composition rules only."""
    return _monotone(e, k, up=True)


def _monotone(e: sympy.Basic, k: sympy.Symbol, up: bool) -> bool:
    """Non-decreasing (``up``) or non-increasing in real k ≥ 0, and defined, by rules only."""
    if _const(e, k):
        return _defined(e)
    if e == k:
        return up
    if isinstance(e, (sympy.Add, sympy.Min, sympy.Max)):
        return all(_monotone(a, k, up) for a in e.args)
    if isinstance(e, sympy.Mul):
        coeff, parts = _split(e, k)
        if not _defined(coeff):
            return False
        if coeff.is_nonnegative:
            flip = False
        elif coeff.is_nonpositive:
            flip = True
        else:
            return False
        direction = up != flip
        if len(parts) == 1:
            return _monotone(parts[0], k, direction)
        # a product of non-negative factors that all move the same way moves that way
        return all(bool(p.is_nonnegative) and _monotone(p, k, direction) for p in parts)
    if isinstance(e, sympy.Pow):
        base, ex = e.args
        if _const(ex, k) and _defined(ex):
            if ex.is_positive:
                return bool(base.is_nonnegative) and _monotone(base, k, up)
            if ex.is_negative:
                return bool(base.is_positive) and _monotone(base, k, not up)
            return bool(ex.is_zero)
        if _const(base, k) and _defined(base):
            if (base - 1).is_nonnegative:
                return _monotone(ex, k, up)
            if base.is_positive and (1 - base).is_nonnegative:
                return _monotone(ex, k, not up)
        return False
    if isinstance(e, (sympy.exp, sympy.floor, sympy.ceiling)):
        return _monotone(e.args[0], k, up)
    if isinstance(e, sympy.log):
        return len(e.args) == 1 and bool(e.args[0].is_positive) and _monotone(e.args[0], k, up)
    if isinstance(e, sympy.Abs):
        a = e.args[0]
        if a.is_nonnegative:
            return _monotone(a, k, up)
        if a.is_nonpositive:
            return _monotone(a, k, not up)
    return False


def _defined(e: sympy.Basic) -> bool:
    """Finite wherever the symbols satisfy their assumptions: no pole, no log of 0, no oo."""
    if e.has(sympy.zoo, sympy.nan, sympy.oo, sympy.S.NegativeInfinity):
        return False
    for node in sympy.preorder_traversal(e):
        if isinstance(node, sympy.Pow) and not node.exp.is_nonnegative and not node.base.is_positive:
            return False  # a possible pole
        if isinstance(node, sympy.Pow) and not node.exp.is_integer and not node.base.is_nonnegative:
            return False  # a possibly non-real root
        if isinstance(node, sympy.log) and not node.args[0].is_positive:
            return False
    return True


# --- the check ------------------------------------------------------------------------------------


def _shifts(relation: str) -> tuple[int, ...]:
    if relation == "add_remove":
        return (1, 0, -1)
    if relation == "substitution":
        return (0,)
    raise InvalidArgument("check_neighbour_condition", "relation", relation, "must be 'add_remove' or 'substitution'")


def _rebound(expr: sympy.Expr) -> sympy.Expr:
    """k and n as integer symbols ≥ 0 (matched by name, whatever their assumptions)."""
    subs = {s: sympy.Symbol(s.name, integer=True, nonnegative=True) for s in expr.free_symbols if isinstance(s, sympy.Symbol)}
    return expr.xreplace(subs)


_MAX_DIRECT_OPS = 40
_MAX_DIRECT_POWER = 8
_MAX_DIRECT_NESTING = 4


def _nesting(e: sympy.Basic) -> int:
    """Depth of nested function applications (exp, log, Min, floor, ...)."""
    inner = max((_nesting(a) for a in e.args), default=0)
    return inner + 1 if isinstance(e, (sympy.Function, sympy.Min, sympy.Max)) else inner


def _cheap_for_sympy(expr: sympy.Expr) -> bool:
    """Whether sympy's assumption system and simplify run in bounded time on this F.

    Their cost is unbounded on small inputs: proving (2k+4)**64 - (2k+3)**64 >= 0 took
    10 s, thirty nested exps over a minute. Formulas beyond these public, structural
    limits are decided by the composition rules and the grid search only (else unproven).
    """
    if sympy.count_ops(expr) > _MAX_DIRECT_OPS or _nesting(expr) > _MAX_DIRECT_NESTING:
        return False
    for p in expr.atoms(sympy.Pow):
        base, ex = p.args
        if base.free_symbols and (not ex.is_Rational or abs(ex) > _MAX_DIRECT_POWER):
            return False
    return True


def _direct(expr: sympy.Expr, s: int) -> bool:
    """sympy proves F(k + 1, n + s) − F(k, n) ≥ 0 for integers k ≥ 0, n ≥ max(0, −s)."""
    k = sympy.Symbol("k", integer=True, nonnegative=True)
    m = sympy.Symbol("m", integer=True, nonnegative=True)
    n0 = m + max(0, -s)
    kn, nn = sympy.Symbol("k", integer=True, nonnegative=True), sympy.Symbol("n", integer=True, nonnegative=True)
    low: sympy.Expr = expr.xreplace({kn: k, nn: n0})
    high: sympy.Expr = expr.xreplace({kn: k + 1, nn: n0 + s})
    if not (_defined(low) and _defined(high)):
        return False
    diff = high - low
    if diff.is_nonnegative:
        return True
    if sympy.count_ops(diff) > 400:
        return False
    for form in (sympy.simplify, sympy.factor, sympy.together):
        if form(diff).is_nonnegative:
            return True
    return False


def _path(expr: sympy.Expr, s: int) -> bool:
    """G(k) = F(k, c + s·k) is non-decreasing in real k ≥ 0 for every integer c (rules)."""
    k = sympy.Symbol("k", nonnegative=True)
    c = sympy.Symbol("c", integer=True, nonnegative=True) if s == 0 else sympy.Symbol("c", integer=True)
    g = expr.xreplace({sympy.Symbol("k", integer=True, nonnegative=True): k,
                       sympy.Symbol("n", integer=True, nonnegative=True): c + s * k})
    return _nondecreasing(g, k)


def _grid_violations(expr: sympy.Expr, shifts: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    """Candidates (k, n, n′) with F(k, n) > F(k + 1, n′) in float64 on the grid: the smallest, then the worst."""
    ks = np.arange(GRID_K + 2, dtype=np.float64)[:, None]
    ns = np.arange(GRID_N + 2, dtype=np.float64)[None, :]
    vals = formula_values(expr, ks, ns)  # shape (GRID_K + 2, GRID_N + 2)
    found: list[tuple[float, int, int, int]] = []
    for s in shifts:
        lo_n, hi_n = max(0, -s), GRID_N + 1 - max(0, s)
        low = vals[: GRID_K + 1, lo_n:hi_n]
        high = vals[1 : GRID_K + 2, lo_n + s : hi_n + s]
        with np.errstate(all="ignore"):
            gap = np.where(np.isinf(low) & np.isinf(high), 0.0, low - high)
            scale = np.maximum(1.0, np.abs(np.where(np.isinf(low), high, low)))
            bad = (gap > 1e-9 * scale) | (np.isinf(low) & ~np.isinf(high))
        for i, j in zip(*np.nonzero(bad)):
            found.append((float(gap[i, j] / scale[i, j]), int(i), int(j) + lo_n, int(j) + lo_n + s))
    # the smallest candidates first (readable counterexamples), then the largest violations
    # (robust to float noise); each is confirmed exactly by the caller
    smallest = sorted(found, key=lambda t: (t[1] + t[2], t[1]))[:_MAX_CONFIRM]
    worst = sorted(found, key=lambda t: -t[0])[:_MAX_CONFIRM]
    for _, kk, nn, n2 in dict.fromkeys(smallest + worst):
        yield kk, nn, n2


def _high_precision(expr: sympy.Expr, k: int, n: int) -> sympy.Float | None:
    """F(k, n) to 60 digits, or None when it is not a finite real (then it reads as +inf).

    The numbers are substituted without evaluation and then evaluated by ``evalf``
    (mpmath), so an integer power tower never becomes an exact integer with
    astronomically many digits.
    """
    with sympy.evaluate(False):
        value = expr.xreplace({sympy.Symbol("k", integer=True, nonnegative=True): sympy.Integer(k),
                               sympy.Symbol("n", integer=True, nonnegative=True): sympy.Integer(n)})
    approx = sympy.N(value, 60)
    if not isinstance(approx, sympy.Float) or not approx.is_finite:
        return None if not (approx.is_Integer or approx.is_Rational) else sympy.Float(approx, 60)
    return approx


def _confirmed(expr: sympy.Expr, k: int, n: int, n2: int) -> bool:
    """F(k, n) > F(k + 1, n2) at 60 digits, by more than 1e-40 relative (+inf for non-finite values).

    A violation smaller than that is not confirmed (the check then says unproven):
    refutation errs only towards refusing less, never towards proving.
    """
    low, high = _high_precision(expr, k, n), _high_precision(expr, k + 1, n2)
    if high is None:
        return False
    if low is None:
        return True
    scale = max(sympy.Float(1), abs(low), abs(high))
    return bool(low - high > scale * sympy.Float(10, 60) ** -40)


def check_neighbour_condition(expr: sympy.Expr, relation: str = "add_remove") -> NeighbourCheck:
    """Decide ``F(k, n) ≤ F(k + 1, n′)`` for integers k, n ≥ 0 and n′ a neighbour of n.

    Args:
        expr: F as a sympy expression in the symbols ``k`` and ``n`` only (clip
            bounds and parameters substituted by numbers).
        relation: ``"add_remove"`` (n′ ∈ {n − 1, n, n + 1}) or ``"substitution"`` (n′ = n).

    Returns:
        A :class:`NeighbourCheck`; never raises on a formula (a sympy failure is
        ``"unproven"``).

    Examples:
        >>> k, n = sympy.symbols("k n")
        >>> check_neighbour_condition(3 / sympy.Max(n - k, 1)).status
        'proven'
        >>> r = check_neighbour_condition((k + 1) / (n + 1))
        >>> r.status, r.counterexample
        ('refuted', (1, 0, 1))

    References:
        Dwork, Lei (2009) (PTR needs a 1-Lipschitz distance); docs/architecture.md,
        "Invariants" ("symbolic checks prove what the proof needs").
    """
    shifts = _shifts(relation)
    text = str(expr)
    try:
        if not isinstance(expr, sympy.Expr):
            return NeighbourCheck("unproven", None, "not a sympy expression", text)
        names = {s.name for s in expr.free_symbols if isinstance(s, sympy.Symbol)}
        if not names <= {"k", "n"}:
            return NeighbourCheck("unproven", None, f"free symbols other than k and n: {sorted(names - {'k', 'n'})}", text)
        f = _rebound(expr)
        float_only: tuple[int, int, int] | None = None
        for tried, (kk, nn, n2) in enumerate(_grid_violations(f, shifts)):
            if tried >= 2 * _MAX_CONFIRM:
                break
            if _confirmed(f, kk, nn, n2):
                return NeighbourCheck("refuted", (kk, nn, n2), f"F({kk}, {nn}) > F({kk + 1}, {n2}) (confirmed exactly)", text)
            float_only = float_only or (kk, nn, n2)
        reasons = []
        cheap = _cheap_for_sympy(f)
        for s in shifts:
            if _path(f, s):
                path = {1: "c+k", 0: "c", -1: "c-k"}[s]
                reasons.append(f"n'=n{s:+d}: F(k, {path}) non-decreasing in k (composition rules)")
            elif cheap and _direct(f, s):
                reasons.append(f"n'=n{s:+d}: sympy proves F(k+1, n') - F(k, n) >= 0")
            else:
                why = f"n'=n{s:+d} undecided by sympy and the composition rules"
                if not cheap:
                    why += " (F is beyond the size limits of the sympy proof)"
                if float_only is not None:
                    why += f"; float64 evaluation violates it at (k, n, n') = {float_only}"
                return NeighbourCheck("unproven", None, why, text)
        return NeighbourCheck("proven", None, "; ".join(reasons), text)
    except Exception as exc:  # sympy raises many types; the check fails closed
        return NeighbourCheck("unproven", None, f"sympy failed ({type(exc).__name__})", text)


def require_neighbour_condition(expr: sympy.Expr, relation: str, strict: bool, owner: str, shown: str) -> NeighbourCheck:
    """:func:`check_neighbour_condition`, raising for refuted (always) and unproven (``strict``).

    Raises:
        InvalidArgument: refuted (the message names the counterexample k, n, n′: public
            numbers, no data), or unproven with ``strict=True``.
    """
    result = check_neighbour_condition(expr, relation)
    if result.status == "refuted":
        assert result.counterexample is not None
        kk, nn, n2 = result.counterexample
        raise InvalidArgument(owner, "formula", shown, (
            f"is refused: it breaks the PTR neighbour condition F(k, n) <= F(k+1, n') at k={kk}, n={nn}, n'={n2} "
            "(the PTR distance would not be 1-Lipschitz)"))
    if strict and result.status == "unproven":
        raise InvalidArgument(owner, "formula", shown,
                              f"has an unproven PTR neighbour condition ({result.reason}); strict mode refuses it")
    return result
