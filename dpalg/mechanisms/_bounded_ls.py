"""Privately bounded local sensitivity (seed 000, Theorem 1) as a general node.

An ε₁-DP step releases noisy counts; from them a bound ĝ on LS(f, x) is built
that holds with probability ≥ 1 − δ; f(x) is then released on a lattice with
exact discrete Laplace noise scaled to ĝ/ε₂. The whole is (ε₁ + ε₂, δ)-DP.
The proof is in ``docs/mechanisms/bounded_ls.md``.

How ĝ is stated. Every private count ``name`` yields two *bound symbols*,
``name_lo`` and ``name_hi``, with ``name_lo <= name <= name_hi`` except with a
probability accounted in δ. The user writes ĝ as a sympy expression (or a
Python function) of these symbols such that

1. at ``name_lo = name_hi = name`` (the true counts) it is ``>= LS(f, x)``
   (the user's claim, documented in the node's repr and certificate), and
2. it is non-decreasing in every ``_hi`` symbol and non-increasing in every
   ``_lo`` symbol on the stated domain: then plugging covering bounds in can only
   increase it. :func:`check_monotone` proves (2) with sympy where it can, and
   searches a grid for a counterexample; refuted expressions are refused,
   unproven ones are recorded as a note of the privacy claim (and refused with
   ``strict=True``).

The seed's code draws float Laplace noise (Mironov 2012 applies) and uses the
tail ``P[|Z| >= T] = e^{-T a}``, which is not the discrete Laplace tail. Here the
width of each interval comes from the exact tail ``P[Z >= m] = p^m / (1 + p)``,
``p = e^{-1/t}``, evaluated at a rigorous rational upper bound of ``p``
(:func:`tail_margin`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Literal, final

import attrs
import numpy as np
import sympy

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil, to_fraction
from dpalg.data import Dataset, Neighbouring, Relation
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common import floor_log2, positive_param, relation_param, unit_interval_param
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.sensitivity._sympy_check import safe_parse

__all__ = [
    "BoundFunction",
    "BoundedLS",
    "MonotoneCheck",
    "NoisyCount",
    "ValueFunction",
    "check_monotone",
    "exp_neg_upper",
    "lattice_release",
    "lattice_terms",
    "round_up_bits",
    "tail_margin",
]

BoundFunction = Callable[[Mapping[str, Fraction]], Fraction]
ValueFunction = Callable[[Dataset], Fraction]
Status = Literal["proven", "unproven", "refuted"]

_GRANULARITY_BITS = 20  # the release lattice step is about 2**-20 of the noise scale
_BOUND_BITS = 8  # ĝ is rounded up to 8 significant bits (at most 0.8% more noise)
_ZERO_BOUND_K = -60  # lattice exponent when ĝ = 0 (f constant on all neighbours)
_VALUE_SLACK = Fraction(1, 10**60)  # absolute error of an irrational f(x), evaluated numerically


def parse_expression(text: str, names: Sequence[str], owner: str, field: str) -> sympy.Expr:
    """Parse a sympy-syntax expression whose free symbols must be among ``names``.

    Every name is bound to a plain sympy ``Symbol`` (so ``E``, ``N``, ``S`` or
    ``I`` never mean sympy constants when they are count names).
    """
    expr = safe_parse(text, {n: sympy.Symbol(n) for n in names}, owner, field)
    unknown = sorted({str(sym) for sym in expr.free_symbols} - set(names))
    if unknown:
        raise InvalidArgument(owner, field, text, f"uses unknown symbols {unknown}; allowed: {sorted(names)}")
    return expr


# --- exact arithmetic: e^{-x} from above, the discrete Laplace tail ------------------


def exp_neg_upper(x: Fraction, bits: int = 96) -> Fraction:
    """A rational ``u >= e^{-x}`` for rational ``x >= 0``, within a relative ``2**-(bits-8)``.

    ``e^{x} >= sum_{j<=N} y^j/j!`` for ``y = x / 2**s >= 0`` (all terms are
    positive), each term floored to ``2**-W``; squaring ``s`` times keeps a lower
    bound of ``e^{x}``, and its reciprocal is an upper bound of ``e^{-x}``.

    Examples:
        >>> import math
        >>> u = exp_neg_upper(Fraction(1))
        >>> u >= Fraction(math.exp(-1)) * (1 - Fraction(1, 10**15)) and u - Fraction(math.exp(-1)) < Fraction(1, 10**20)
        True
    """
    if x < 0:
        raise InvalidArgument("exp_neg_upper", "x", x, "must be >= 0")
    if x == 0:
        return Fraction(1)
    s = max(0, (x.numerator // x.denominator).bit_length())
    work = bits + 2 * s + 32
    one = 1 << work
    y_num, y_den = x.numerator, x.denominator << s  # y = x / 2**s <= 1
    term, total, j = one, one, 0
    while term:
        j += 1
        term = term * y_num // (y_den * j)  # floored: a lower bound of each term
        total += term
    low = Fraction(total, one)  # <= e^{y}
    for _ in range(s):
        low = Fraction((low.numerator * low.numerator * one) // (low.denominator * low.denominator), one)
    return 1 / low  # exact reciprocal of a lower bound: an upper bound, relative error ~2**-(bits+2s)


def tail_margin(scale: ExactLike, delta: ExactLike) -> int:
    """The smallest ``w >= 0`` with ``P[Z > w] <= delta`` (proved) for Z discrete Laplace(scale).

    For Z with pmf ``(1-p)/(1+p) p^|z|``, ``p = e^{-1/t}``: summing the geometric
    series, ``P[Z >= m] = p^m / (1 + p)`` for ``m >= 0``. This is increasing in
    ``p`` (its derivative is ``p^{m-1}(m + (m-1)p)/(1+p)^2 > 0``), so evaluating it
    exactly at a rational ``p_hi >= p`` (:func:`exp_neg_upper`) bounds it from
    above. The result is the smallest ``w`` with the bound at ``m = w + 1`` at most
    ``delta``; it can exceed the true minimum by one only when ``p`` and ``p_hi``
    (96 bits apart) straddle the threshold.

    Args:
        scale: the discrete Laplace scale ``t > 0``.
        delta: the allowed one-sided failure probability, in (0, 1).

    Returns:
        ``w`` with ``P[Z > w] = P[Z < -w] <= delta``.

    Examples:
        >>> tail_margin(1, "0.01")  # P[Z >= 4] = 0.0134, P[Z >= 5] = 0.0049
        4
    """
    t = positive_param("tail_margin", "scale", scale)
    d = unit_interval_param("tail_margin", "delta", delta)
    p_hi = exp_neg_upper(1 / t)
    if p_hi >= 1:  # pragma: no cover - only for absurd scales
        raise InvalidArgument("tail_margin", "scale", scale, "is too large for a rigorous tail bound")

    def tail(m: int) -> Fraction:
        return p_hi**m / (1 + p_hi)

    # float guess m ~ t ln(1/(δ(1+p))), then exact correction in both directions
    log_inv_delta = math.log(d.denominator) - math.log(d.numerator)
    guess = max(1, math.ceil(float(t) * (log_inv_delta - math.log1p(float(p_hi)))))
    m = guess
    while m > 1 and tail(m - 1) <= d:
        m -= 1
    while tail(m) > d:
        m += 1
    return m - 1


def round_up_bits(x: Fraction, bits: int = _BOUND_BITS) -> Fraction:
    """The smallest ``m 2^e >= x`` with ``m < 2**bits`` (``x > 0``); 0 stays 0.

    Rounding a valid upper bound up keeps it valid, and it limits the release
    noise to ``bits`` distinct scales per ε₂ (see :func:`lattice_release`).

    Examples:
        >>> round_up_bits(Fraction(1, 3), 4)
        Fraction(11, 32)
    """
    if x <= 0:
        return Fraction(0)
    e = floor_log2(x) - bits + 1
    step = Fraction(2) ** e
    return fraction_ceil(x / step) * step


def lattice_terms(value: Fraction, bound: Fraction, epsilon: Fraction) -> tuple[int, int, Fraction]:
    """``(m, k, t)`` of :func:`lattice_release` for one value: the output is ``(m + Z) 2**k``
    with Z discrete Laplace of scale ``t`` (lattice units).

    Examples:
        >>> lattice_terms(Fraction(1, 3), Fraction(1, 100), Fraction(1))
        (44739243, -27, Fraction(1343489, 1))
    """
    if bound < 0:
        raise InvalidArgument("lattice_release", "bounds", bound, "must be >= 0")
    if epsilon <= 0:
        raise InvalidArgument("lattice_release", "epsilon", epsilon, "must be > 0")
    g = round_up_bits(bound)
    k = floor_log2(g / epsilon) - _GRANULARITY_BITS if g > 0 else _ZERO_BOUND_K
    step = Fraction(2) ** k
    return round(value / step), k, (g / step + 1) / epsilon


def lattice_release(
    values: Sequence[Fraction], bounds: Sequence[Fraction], epsilon: Fraction, rng: AbstractRandomness
) -> list[Fraction]:
    """Release each exact ``values[i]`` with discrete Laplace noise for sensitivity ``bounds[i]``.

    For each ``i``: ``g = round_up_bits(bounds[i])`` (still ``>= LS``), the
    lattice exponent ``k = floor(log2(g/ε)) - 20`` (a function of the already
    private ``g``), ``m = round(value / 2**k)`` (exact), and the output is
    ``(m + Z) 2**k`` with Z discrete Laplace of scale ``t = (g/2**k + 1)/ε`` in
    lattice units: rounding changes the sensitivity by at most one step, so the
    lattice-unit sensitivity is at most ``g/2**k + 1`` and the release is ε-DP
    for every pair with ``|f(x) - f(x')| <= g`` (Canonne–Kamath–Steinke 2020).
    Trials with equal ``t`` share one vectorised draw (independent samples).
    """
    if len(values) != len(bounds):
        raise InvalidArgument("lattice_release", "bounds", len(bounds), f"must have len(values)={len(values)} entries")
    ms: list[int] = []
    ks: list[int] = []
    scales: list[Fraction] = []
    for value, bound in zip(values, bounds):
        m, k, t = lattice_terms(value, bound, epsilon)
        ms.append(m)
        ks.append(k)
        scales.append(t)
    noise = [0] * len(values)
    groups: dict[Fraction, list[int]] = {}
    for i, t in enumerate(scales):
        groups.setdefault(t, []).append(i)
    for t, idx in groups.items():
        draw = discrete_laplace(t, size=len(idx), rng=rng)
        for i, z in zip(idx, draw.tolist()):
            noise[i] = int(z)
    return [(m + z) * Fraction(2) ** k for m, z, k in zip(ms, noise, ks)]


# --- the private counts -------------------------------------------------------------


def _name(owner: str, field: str, value: object) -> str:
    if not isinstance(value, str) or not value.isidentifier() or value.endswith(("_lo", "_hi")):
        raise InvalidArgument(owner, field, value, "must be a Python identifier not ending in _lo/_hi")
    return value


def _count_name(value: str) -> str:
    return _name("NoisyCount", "name", value)


def _count_where(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgument("NoisyCount", "where", value, "must be None (all rows) or a column name")
    return value


@final
@attrs.frozen
class NoisyCount:
    """A count released with discrete Laplace noise as input to a local-sensitivity bound.

    Args:
        name: the count's name; the bound expression uses ``name_lo`` and ``name_hi``.
        where: ``None`` counts all rows; a column name counts the rows whose value
            there is non-zero and not missing (NaN/None rows are not counted).

    The count has sensitivity 1 under add/remove and under substitution of one row.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> NoisyCount("a", where="clicked").value(as_dataset({"clicked": [1, 0, 1]}))
        2
    """

    name: str = attrs.field(converter=_count_name)
    where: str | None = attrs.field(default=None, converter=_count_where)

    def value(self, data: Dataset) -> int:
        """The exact count (private: used only inside a release)."""
        if self.where is None:
            return data.n_rows
        column = data.numeric(self.where)
        return int(np.count_nonzero(~np.isnan(column) & (column != 0)))


# --- the symbolic monotonicity check ------------------------------------------------


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
    if isinstance(bound, sympy.Expr):
        try:
            return _rational_eval(bound, point)
        except ZeroDivisionError:
            return None
        except _NotRational:
            pass
        value = bound.subs({sympy.Symbol(k): sympy.Rational(v.numerator, v.denominator) for k, v in point.items()})
        if not value.is_finite or not value.is_real:
            return None
        return _to_fraction(value)
    try:
        return to_fraction(bound(point), owner="BoundedLS", field="bound(...)")
    except (ArithmeticError, ValueError):
        # undefined here (a zero division, or a recorded callable during an audit):
        # the point is skipped by the check and ĝ falls back to GS / BOTTOM at release
        return None


def _approximate(value: sympy.Expr) -> Fraction:
    """A rational within ``_VALUE_SLACK`` of the real, finite number ``value`` (exact if rational).

    sympy's ``evalf`` returns the requested number of correct significant digits;
    asking for 80 digits beyond the integer part leaves a margin of 20 digits
    over the promised absolute error ``10**-60``.
    """
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
    if not isinstance(bound, sympy.Expr):
        return MonotoneCheck("unproven", ("a Python function cannot be checked symbolically; no counterexample on the grid",))
    # 2. symbolic proof
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


# --- the node -----------------------------------------------------------------------


def _counts(value: Sequence[NoisyCount]) -> tuple[NoisyCount, ...]:
    counts = tuple(value)
    if not counts:
        raise InvalidArgument("BoundedLS", "counts", counts, "must contain at least one NoisyCount")
    for i, c in enumerate(counts):
        if not isinstance(c, NoisyCount):
            raise InvalidArgument("BoundedLS", f"counts[{i}]", type(c).__name__, "must be a NoisyCount")
    names = [c.name for c in counts]
    if len(set(names)) != len(names):
        raise InvalidArgument("BoundedLS", "counts", names, "must have distinct names")
    return counts


def _domain(value: Mapping[str, int] | tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    items = tuple(value.items()) if isinstance(value, Mapping) else tuple(value)
    for name, limit in items:
        if not isinstance(name, str) or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgument("BoundedLS", "domain", (name, limit), "must map count names to int lower limits >= 0")
    return tuple(sorted(items))


def _bl_eps1(value: ExactLike) -> Fraction:
    return positive_param("BoundedLS", "epsilon_bound", value)


def _bl_eps2(value: ExactLike) -> Fraction:
    return positive_param("BoundedLS", "epsilon_release", value)


def _bl_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("BoundedLS", "delta", value)


def _bl_gs(value: ExactLike | None) -> Fraction | None:
    return None if value is None else positive_param("BoundedLS", "global_sensitivity", value)


def _bl_relation(value: str) -> Relation:
    return relation_param("BoundedLS", value)


def _bl_strict(value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("BoundedLS", "strict", value, "must be a bool")
    return value


@functools.lru_cache(maxsize=256)
def _margin_cached(scale: Fraction, delta: Fraction) -> int:
    return tail_margin(scale, delta)


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str, names: tuple[str, ...], field: str) -> sympy.Expr:
    return parse_expression(text, names, "BoundedLS", field)


@functools.lru_cache(maxsize=256)
def _check_cached(
    bound: str | BoundFunction, used: tuple[str, ...], lower: tuple[tuple[str, int], ...], allowed: tuple[str, ...]
) -> MonotoneCheck:
    expr = parse_expression(bound, allowed, "BoundedLS", "bound") if isinstance(bound, str) else bound
    return _check_expr(expr, used, dict(lower))


def _bl_value(value: str | ValueFunction) -> str | ValueFunction:
    if isinstance(value, str):
        return value.strip()
    if not callable(value):
        raise InvalidArgument("BoundedLS", "value", type(value).__name__, "must be an expression string in the count names or a function Dataset -> Fraction")
    return value


def _bl_bound(value: str | BoundFunction) -> str | BoundFunction:
    if isinstance(value, str):
        return value.strip()
    if not callable(value):
        raise InvalidArgument("BoundedLS", "bound", type(value).__name__, "must be an expression string in <count>_lo/<count>_hi or a function of them")
    return value


@final
@attrs.frozen
class BoundedLS(AbstractPrimitive[ApproxDP]):
    """Release f(x) with noise scaled to a privately computed bound ĝ ≥ LS(f, x).

    Step 1 (ε₁ = ``epsilon_bound``): each of the J ``counts`` is released with
    discrete Laplace noise of scale ``J/ε₁``; its interval is ``noisy ± w`` with
    ``w = tail_margin(J/ε₁, δ/S)`` where S is the number of interval ends in use
    (the symbols of ``bound`` plus the lower end of every count in ``domain``),
    then clamped to ``[0, ∞)``. Step 2: if every count's lower end meets its
    ``domain`` limit, ĝ = ``bound`` at the interval ends (capped by
    ``global_sensitivity``); otherwise ĝ = ``global_sensitivity`` (bail out), or
    the output is ``BOTTOM`` when none is given. Step 3 (ε₂ = ``epsilon_release``):
    f(x) is released by :func:`lattice_release` for sensitivity ĝ (plus
    :meth:`value_slack` when f may be irrational).

    Args:
        value: f, a sympy expression in the count names (evaluated exactly on the
            true counts; an irrational value within ``10**-60``, covered by
            :meth:`value_slack`) or a function ``Dataset -> Fraction`` computing f
            exactly. Where f is undefined (``a/b`` at ``b = 0``) the value is 0;
            the user's LS claim must cover that convention.
        bound: ĝ, a sympy expression (or a function of a mapping) in the symbols
            ``<count>_lo`` and ``<count>_hi``. The user's claim: at the true counts
            (``_lo = _hi = count``) it is at least LS(f, x) whenever every count
            meets its domain limit.
        counts: the :class:`NoisyCount` inputs.
        epsilon_bound: ε₁ > 0 for the counts.
        epsilon_release: ε₂ > 0 for the release of f.
        delta: δ in (0, 1): the probability that some interval misses its count.
        domain: lower limits of counts (``{"b": 2}``) under which ``bound`` is valid.
        global_sensitivity: a public GS of f, used to cap ĝ and on bail-out.
        strict: refuse a bound whose monotonicity sympy cannot prove.
        relation: ``"add_remove"`` (default) or ``"substitution"`` (LS and the
            counts' sensitivity 1 refer to this relation).

    Raises:
        InvalidArgument: a parameter is invalid, ``bound`` uses an unknown symbol,
            its monotonicity is refuted (with a counterexample), or it is
            unproven under ``strict=True``.

    Privacy guarantee:
        (ε₁ + ε₂, δ)-DP under ``relation`` for one row (seed 000, Theorem 1).
        The counts compose to ε₁-DP (discrete Laplace, sensitivity 1, scale
        J/ε₁). With probability ≥ 1 − δ every interval end in use covers its
        count (exact discrete Laplace tail, union bound); then monotonicity and
        the user's claim give ĝ ≥ LS(f, x), and the lattice release is ε₂-DP for
        every neighbour x'. Exact cost: ``ApproxDP(ε₁ + ε₂, δ)``.

    Examples:
        >>> node = BoundedLS("a/b", "1/(b_lo - 1)", (NoisyCount("a", where="in_a"), NoisyCount("b")),
        ...                  epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
        >>> node.cost()
        ApproxDP(1, '1/1000000')
        >>> node.privacy().notes[0]
        'monotonicity of the LS bound: proven: non-increasing in b_lo: proven'
    """

    value: str | ValueFunction = attrs.field(converter=_bl_value)
    bound: str | BoundFunction = attrs.field(converter=_bl_bound)
    counts: tuple[NoisyCount, ...] = attrs.field(converter=_counts)
    epsilon_bound: Fraction = attrs.field(converter=_bl_eps1)
    epsilon_release: Fraction = attrs.field(converter=_bl_eps2)
    delta: Fraction = attrs.field(converter=_bl_delta)
    domain: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=_domain)
    global_sensitivity: Fraction | None = attrs.field(default=None, converter=_bl_gs)
    strict: bool = attrs.field(default=False, converter=_bl_strict)
    relation: Relation = attrs.field(default="add_remove", converter=_bl_relation)
    def __attrs_post_init__(self) -> None:
        names = tuple(c.name for c in self.counts)
        for name, _ in self.domain:
            if name not in names:
                raise InvalidArgument("BoundedLS", "domain", name, f"must name a count; counts: {sorted(names)}")
        self._value_expr()
        result = self._monotone()
        if result.status == "refuted":
            raise InvalidArgument("BoundedLS", "bound", self.bound, f"is not monotone as required; counterexample: {result.counterexample}")
        if result.status == "unproven" and self.strict:
            raise InvalidArgument("BoundedLS", "bound", self.bound, f"monotonicity is unproven and strict=True: {result.note()}")

    # parsed expressions and the check are cached by value (the node holds only its parameters)
    def _value_expr(self) -> sympy.Expr | None:
        if not isinstance(self.value, str):
            return None
        return _parse_cached(self.value, tuple(c.name for c in self.counts), "value")

    def _bound_expr(self) -> sympy.Expr | BoundFunction:
        if not isinstance(self.bound, str):
            return self.bound
        return _parse_cached(self.bound, tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi")), "bound")

    def _monotone(self) -> MonotoneCheck:
        limits = dict(self.domain)
        used = self.symbols_used()
        return _check_cached(self.bound if isinstance(self.bound, str) else self._bound_expr(), used,
                             tuple((s, limits.get(s[:-3], 0)) for s in used),
                             tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi")))

    def symbols_used(self) -> tuple[str, ...]:
        """The bound symbols ĝ depends on (all of them for a Python function)."""
        expr = self._bound_expr()
        if isinstance(self.bound, str):
            assert isinstance(expr, sympy.Expr)
            return tuple(sorted(str(sym) for sym in expr.free_symbols))
        return tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi"))

    def interval_ends(self) -> tuple[str, ...]:
        """The interval ends whose coverage δ pays for (bound symbols and domain lower ends)."""
        ends = set(self.symbols_used()) | {f"{name}_lo" for name, _ in self.domain}
        return tuple(sorted(ends))

    def noise_scale(self) -> Fraction:
        """The discrete Laplace scale of each count, J/ε₁."""
        return len(self.counts) / self.epsilon_bound

    def margin(self) -> int:
        """The half-width w of each interval (exact tail, δ split over the ends in use)."""
        return _margin_cached(self.noise_scale(), self.delta / max(1, len(self.interval_ends())))

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε₁ + ε₂, δ), from the parameters only; the monotonicity check is a note."""
        return PrivacyClaim(
            ApproxDP(self.epsilon_bound + self.epsilon_release, self.delta),
            "privately bounded local sensitivity (seed 000 Thm 1): eps1-DP discrete Laplace counts, "
            "exact-tail intervals (union bound, delta), discrete Laplace on a lattice scaled to the bound / eps2",
            (
                ("epsilon_bound", str(self.epsilon_bound)),
                ("epsilon_release", str(self.epsilon_release)),
                ("delta", str(self.delta)),
                ("counts", ", ".join(c.name for c in self.counts)),
                ("interval_ends", ", ".join(self.interval_ends())),
                ("margin", str(self.margin())),
                ("relation", self.relation),
            ),
            (self._monotone().note(),),
        )

    def bound_from_noisy(self, noisy: Mapping[str, int]) -> Fraction | None:
        """ĝ from the noisy counts (post-processing of the ε₁ step); None: nothing may be released.

        Intervals are ``noisy ± w`` clamped to ``[0, ∞)``; if a count's lower end
        misses its domain limit, or ĝ is undefined, the global sensitivity is used.
        """
        w = self.margin()
        ends: dict[str, Fraction] = {}
        for c in self.counts:
            ends[f"{c.name}_lo"] = Fraction(max(noisy[c.name] - w, 0))
            ends[f"{c.name}_hi"] = Fraction(max(noisy[c.name] + w, 0))
        g: Fraction | None = None
        if all(ends[f"{name}_lo"] >= limit for name, limit in self.domain):
            g = _evaluate(self._bound_expr(), {s: ends[s] for s in self.symbols_used()})
        if g is None or g < 0:
            return self.global_sensitivity
        if self.global_sensitivity is not None:
            return min(g, self.global_sensitivity)
        return g

    def _f(self, data: Dataset, counts: Mapping[str, int]) -> Fraction:
        expr = self._value_expr()
        if expr is not None:
            value = expr.subs({sympy.Symbol(k): sympy.Integer(v) for k, v in counts.items()})
            if not value.is_finite or not value.is_real:
                return Fraction(0)  # f undefined (e.g. a zero count): a fixed public value
            return _approximate(value)  # exact, or within _VALUE_SLACK (see value_slack)
        assert not isinstance(self.value, str)
        return to_fraction(self.value(data), owner="BoundedLS", field="value(data)")

    def value_slack(self) -> Fraction:
        """How much the release widens ĝ to cover the numerical evaluation of f.

        0 when f is a Python function (exact by contract) or a rational function
        of the counts (always evaluated exactly); otherwise f(x) may be irrational
        and is evaluated within ``10**-60`` on every dataset, so two neighbours'
        evaluated values differ by at most ``ĝ + 2·10**-60``. The slack depends on
        the expression only, never on the data.
        """
        expr = self._value_expr()
        if expr is None or expr.is_rational_function(*sorted(expr.free_symbols, key=str)):
            return Fraction(0)
        return 2 * _VALUE_SLACK

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy f(x) as a float (lattice point), or ``BOTTOM`` on bail-out without GS."""
        true = {c.name: c.value(data) for c in self.counts}
        noise = discrete_laplace(self.noise_scale(), size=len(self.counts), rng=rng).tolist()
        g = self.bound_from_noisy({c.name: true[c.name] + int(z) for c, z in zip(self.counts, noise)})
        if g is None:
            from dpalg._bottom import BOTTOM

            return BOTTOM
        (out,) = lattice_release([self._f(data, true)], [g + self.value_slack()], self.epsilon_release, rng)
        return float(out)
