"""Rigorous float upper bounds of a user LS formula, and its monotonicity in ``n``.

Two facts :class:`~dpalg.mechanisms.SmoothBound` needs about a user formula
``F(k, n)`` (already parsed by :mod:`dpalg.sensitivity._formula`, clip bounds and
parameters substituted) before it smooths ``F(0, ·)`` over the dataset size:

* :func:`upper_values`: an **upper bound** of ``F(k, n)`` in float64 at many points
  at once, by interval arithmetic over the formula's tree. Every operation
  returns an enclosure ``[lo, hi]`` of its exact result: ``+``, ``−``, ``×``,
  ``÷`` and ``sqrt`` are correctly rounded in IEEE 754, so one step outward
  (``nextafter``) covers them; ``exp``, ``log``, ``**`` with a non-integer or
  symbolic exponent, are widened by a relative ``2^-44`` (numpy's float64
  ``exp``/``log``/``pow`` are within a few ulp, ``2^-52`` each); ``sin``/``cos``
  are enclosed in ``[−1, 1]``; ``floor``/``ceiling``/``Min``/``Max``/``Abs`` are
  monotone or exact. A point where an enclosure is undefined (a pole, a log of a
  non-positive number, NaN, overflow) gets ``+inf``, the conservative reading.
  The work is one walk of the tree over the arrays, whatever the values.
* :func:`check_nonincreasing_in_n`: a proof that ``n ↦ F(0, n)`` is non-negative
  and non-increasing for real ``n ≥ 0`` (so for integers), by composition rules
  (sums and products of such terms, ``g**(−c)`` of a positive non-decreasing
  ``g``, ``c**g`` and ``exp(g)`` of a non-increasing ``g``, ``Min``/``Max``,
  ``floor``/``ceiling``), or a refutation found on ``n ≤ 2000`` in float64 and
  confirmed exactly by sympy; anything else is *unproven* (fail closed). Then
  ``F(0, 0)`` bounds ``F(0, n)`` for every n, which is the public constant the
  truncated smooth bound needs.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final, Literal, final

import attrs
import numpy as np
import numpy.typing as npt
import sympy

from dpalg.sensitivity._sympy_check import _nondecreasing_only, _structural

__all__ = ["NIncreasing", "check_nonincreasing_in_n", "upper_values"]

FloatArray = npt.NDArray[np.float64]
Interval = tuple[FloatArray, FloatArray]

#: relative widening of numpy's exp, log and pow results (each is within a few ulp, 2^-52)
_LIBM_REL: Final = 2.0**-44
_GRID_N: Final = 2000


def _down(x: FloatArray) -> FloatArray:
    return np.nextafter(x, -np.inf)


def _up(x: FloatArray) -> FloatArray:
    return np.nextafter(x, np.inf)


def _widen(lo: FloatArray, hi: FloatArray) -> Interval:
    """Outward by a relative ``2^-44`` plus one ulp (libm results)."""
    return _down(lo - np.abs(lo) * _LIBM_REL), _up(hi + np.abs(hi) * _LIBM_REL)


def _const(value: sympy.Basic, shape: tuple[int, ...]) -> Interval:
    """An enclosure of a sympy number: exact rationals rounded outward, pi widened."""
    if isinstance(value, sympy.Rational):
        num, den = int(value.p), int(value.q)
        try:
            f = num / den  # correctly rounded for Python ints (true division)
        except OverflowError:
            f = np.inf if num > 0 else -np.inf
        point = np.full(shape, f, dtype=np.float64)
        if np.isfinite(f) and Fraction(f) == Fraction(num, den):  # exactly representable: no widening
            return point, point.copy()
        return _down(point), _up(point)
    if isinstance(value, sympy.NumberSymbol) and value.is_real:
        f = float(value)
        return _widen(np.full(shape, f), np.full(shape, f))
    return np.full(shape, -np.inf), np.full(shape, np.inf)


def _sum_bounds(a: FloatArray, b: FloatArray) -> Interval:
    """``[lo, hi]`` around the exact ``a + b``: the rounded sum itself when TwoSum shows it exact."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)  # Knuth's TwoSum: a + b = s + err exactly (finite, no overflow)
    exact = np.isfinite(s) & (err == 0)
    return np.where(exact, s, _down(s)), np.where(exact, s, _up(s))


def _split(x: FloatArray) -> Interval:
    c = x * 134217729.0  # Veltkamp: 2^27 + 1
    high = c - (c - x)
    return high, x - high


def _product_bounds(a: FloatArray, b: FloatArray) -> Interval:
    """``[lo, hi]`` around the exact ``a·b``: the rounded product itself when TwoProduct shows it exact."""
    p = a * b
    with np.errstate(all="ignore"):
        ah, al = _split(a)
        bh, bl = _split(b)
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # Dekker: exact when nothing overflows or underflows
    exact = np.isfinite(p) & np.isfinite(err) & (err == 0) & ((np.abs(p) > 2.0**-900) | (p == 0)) & (np.abs(p) < 2.0**900)
    return np.where(exact, p, _down(p)), np.where(exact, p, _up(p))


def _mul(a: Interval, b: Interval) -> Interval:
    corners = [_product_bounds(x, y) for x in a for y in b]
    lows, highs = np.stack([c[0] for c in corners]), np.stack([c[1] for c in corners])
    bad = np.isnan(lows).any(axis=0) | np.isnan(highs).any(axis=0)  # 0 * inf: undefined, conservative
    return np.where(bad, -np.inf, lows.min(axis=0)), np.where(bad, np.inf, highs.max(axis=0))


def _reciprocal(a: Interval) -> Interval:
    lo, hi = a
    ok = (lo > 0) | (hi < 0)
    with np.errstate(divide="ignore"):
        r_lo, r_hi = _down(1.0 / hi), _up(1.0 / lo)
    return np.where(ok, r_lo, -np.inf), np.where(ok, r_hi, np.inf)


def _int_power(a: Interval, e: int) -> Interval:
    if e < 0:
        return _reciprocal(_int_power(a, -e))
    out = (np.ones_like(a[0]), np.ones_like(a[0]))
    if e % 2 == 0 and e > 0:  # an even power of an interval across 0 starts at 0
        lo, hi = a
        mag_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        mag = (mag_lo, np.maximum(np.abs(lo), np.abs(hi)))
        for _ in range(e):
            out = _mul(out, mag)
        return np.maximum(out[0], 0.0), out[1]
    for _ in range(e):
        out = _mul(out, a)
    return out


def _real_power(base: Interval, ex: Interval) -> Interval:
    """``base ** ex`` for ``base > 0``: monotone in each argument, so a corner is extreme."""
    lo_b, hi_b = base
    ok = lo_b > 0
    corners = np.stack([np.power(b, e) for b in (lo_b, hi_b) for e in ex])
    lo, hi = _widen(corners.min(axis=0), corners.max(axis=0))
    bad = ~ok | np.isnan(corners).any(axis=0)
    return np.where(bad, -np.inf, lo), np.where(bad, np.inf, hi)


def _increasing(fn: np.ufunc, a: Interval) -> Interval:
    """A non-decreasing libm function applied to both ends, widened."""
    return _widen(np.asarray(fn(a[0]), dtype=np.float64), np.asarray(fn(a[1]), dtype=np.float64))


def _walk(e: sympy.Basic, env: dict[str, FloatArray]) -> Interval:
    shape = next(iter(env.values())).shape
    if isinstance(e, sympy.Symbol):
        v = env[e.name]
        return v, v
    if not e.free_symbols:
        if e.is_Number or isinstance(e, sympy.NumberSymbol):
            return _const(e, shape)
    args = [_walk(a, env) for a in e.args]
    if isinstance(e, sympy.Add):
        lo, hi = args[0]
        for a_lo, a_hi in args[1:]:
            lo, hi = _sum_bounds(lo, a_lo)[0], _sum_bounds(hi, a_hi)[1]
        return lo, hi
    if isinstance(e, sympy.Mul):
        out = args[0]
        for a in args[1:]:
            out = _mul(out, a)
        return out
    if isinstance(e, sympy.Pow):
        ex = e.args[1]
        if isinstance(ex, sympy.Integer):
            return _int_power(args[0], int(ex))
        if ex == sympy.Rational(1, 2):
            lo, hi = args[0]
            bad = hi < 0
            return np.where(bad, -np.inf, _down(np.sqrt(np.maximum(lo, 0.0)))), np.where(bad, np.inf, _up(np.sqrt(np.maximum(hi, 0.0))))
        return _real_power(args[0], args[1])
    if isinstance(e, (sympy.Min, sympy.Max)):
        op = np.minimum if isinstance(e, sympy.Min) else np.maximum
        lo, hi = args[0]
        for a_lo, a_hi in args[1:]:
            lo, hi = op(lo, a_lo), op(hi, a_hi)
        return lo, hi
    if isinstance(e, sympy.exp):
        return _increasing(np.exp, args[0])
    if isinstance(e, sympy.log):
        lo, hi = args[0]
        out = _increasing(np.log, (np.where(lo > 0, lo, 0.0), hi))
        bad = ~(hi > 0)  # the log of a non-positive number is undefined: no bound
        return np.where(lo > 0, out[0], -np.inf), np.where(bad, np.inf, out[1])
    if isinstance(e, sympy.floor):
        return np.floor(args[0][0]), np.floor(args[0][1])
    if isinstance(e, sympy.ceiling):
        return np.ceil(args[0][0]), np.ceil(args[0][1])
    if isinstance(e, sympy.Abs):
        lo, hi = args[0]
        across = (lo <= 0) & (hi >= 0)
        return np.where(across, 0.0, np.minimum(np.abs(lo), np.abs(hi))), np.maximum(np.abs(lo), np.abs(hi))
    if isinstance(e, (sympy.sin, sympy.cos)):
        return np.full(shape, -1.0), np.full(shape, 1.0)
    return np.full(shape, -np.inf), np.full(shape, np.inf)  # anything else: no information


def upper_values(expr: sympy.Expr, k: npt.ArrayLike, n: npt.ArrayLike) -> FloatArray:
    """A float64 upper bound of ``F(k, n)`` at each (broadcast) point; ``+inf`` where undefined.

    Never raises on values; the same walk whatever they are (see the module docstring).

    Examples:
        >>> import sympy
        >>> n = sympy.Symbol("n", integer=True, nonnegative=True)
        >>> upper_values(sympy.log(11) / sympy.Max(1, n), 0, [0, 1, 10]).tolist()[1] >= 2.3978952727983707
        True
        >>> upper_values(1 / (n - 2), 0, [2]).tolist()
        [inf]
    """
    kk, nn = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    env = {"k": np.array(kk, dtype=np.float64), "n": np.array(nn, dtype=np.float64)}
    with np.errstate(all="ignore"):
        try:
            _, hi = _walk(expr, env)
        except Exception:  # an unsupported node anywhere: no bound
            return np.full(kk.shape, np.inf)
    out = np.broadcast_to(np.asarray(hi, dtype=np.float64), kk.shape).copy()
    out[~(out < np.inf)] = np.inf  # NaN and +inf
    return out


# --- F(0, n) non-increasing in n --------------------------------------------------------------------


@final
@attrs.frozen
class NIncreasing:
    """The verdict on ``n ↦ F(0, n)`` being non-negative and non-increasing (``status`` as MonotoneCheck)."""

    status: Literal["proven", "unproven", "refuted"]
    reason: str


def _nonincreasing_any(e: sympy.Expr, n: sympy.Symbol) -> bool:
    """Non-increasing in n, any sign."""
    if n not in e.free_symbols or _ni(e, n):
        return True
    if isinstance(e, sympy.Add) or isinstance(e, (sympy.Min, sympy.Max)):
        return all(_nonincreasing_any(a, n) for a in e.args)
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if bool(coeff.is_negative):
            return _nondecreasing_only(rest, n)
        return bool(coeff.is_nonnegative) and rest != e and _nonincreasing_any(rest, n)
    return False


def _ni(e: sympy.Expr, n: sympy.Symbol) -> bool:
    """Non-negative AND non-increasing in real n ≥ 0, by composition rules only."""
    if n not in e.free_symbols:
        return bool(e.is_nonnegative)
    if isinstance(e, (sympy.Add, sympy.Mul, sympy.Min)):
        return all(_ni(a, n) for a in e.args)
    if isinstance(e, sympy.Max):
        return all(_nonincreasing_any(a, n) for a in e.args) and any(_ni(a, n) for a in e.args)
    if isinstance(e, sympy.Pow):
        base, ex = e.args
        if n not in ex.free_symbols:
            if bool(ex.is_negative):  # g**(-c) with g > 0 non-decreasing: e.g. 1/Max(n, 1), 1/sqrt(n + 1)
                positive = bool(base.is_positive) or bool(base.xreplace({n: sympy.Integer(0)}).is_positive)
                return positive and _structural(base, n)
            return bool(ex.is_nonnegative) and _ni(base, n)
        if n not in base.free_symbols:  # c**g(n)
            if bool((base - 1).is_nonnegative):
                return _nonincreasing_any(ex, n)
            return bool(base.is_positive) and bool((1 - base).is_nonnegative) and _nondecreasing_only(ex, n)
        return False
    if isinstance(e, sympy.exp):
        return _nonincreasing_any(e.args[0], n)
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        return _ni(e.args[0], n)
    return False


def check_nonincreasing_in_n(expr0: sympy.Expr) -> NIncreasing:
    """Decide whether ``H(n) = F(0, n)`` is non-negative and non-increasing for n ≥ 0 (fail closed).

    ``expr0`` is F with ``k = 0`` substituted; its only free symbol may be ``n``.

    Examples:
        >>> n = sympy.Symbol("n", integer=True, nonnegative=True)
        >>> check_nonincreasing_in_n(sympy.log(11) / sympy.Max(1, n)).status
        'proven'
        >>> check_nonincreasing_in_n(n / (n + 1)).status
        'refuted'
    """
    symbols = [s for s in expr0.free_symbols if isinstance(s, sympy.Symbol)]
    if any(s.name != "n" for s in symbols):
        return NIncreasing("unproven", f"F(0, n) has free symbols {sorted(s.name for s in symbols)} besides n")
    n = symbols[0] if symbols else sympy.Symbol("n", integer=True, nonnegative=True)
    real_n = sympy.Symbol("n", real=True, nonnegative=True)
    expr = expr0.xreplace({n: real_n}) if symbols else expr0
    try:
        if _ni(expr, real_n):
            return NIncreasing("proven", "composition rules: non-negative, non-increasing terms in n")
    except Exception:  # noqa: BLE001 - a sympy assumption query may raise; fall through to the grid
        pass
    grid = np.arange(_GRID_N + 1, dtype=np.float64)
    from dpalg.sensitivity._ptr_condition import formula_values

    try:
        values = formula_values(expr0, np.zeros_like(grid), grid)
    except Exception:  # noqa: BLE001 - unevaluable: unproven
        return NIncreasing("unproven", "F(0, n) could not be evaluated on the grid n <= 2000")
    for i in np.flatnonzero(values[1:] > values[:-1] * (1 + 2.0**-40) + 1e-300):
        m = int(i)
        try:
            a, b = expr0.xreplace({n: sympy.Integer(m)}), expr0.xreplace({n: sympy.Integer(m + 1)})
            if bool((b - a).evalf(50) > 0):
                return NIncreasing("refuted", f"F(0, {m + 1}) > F(0, {m}) (confirmed exactly)")
        except Exception:  # noqa: BLE001 - not confirmed: keep looking
            continue
    if bool((values < 0).any()):
        return NIncreasing("refuted", f"F(0, n) < 0 at n = {int(np.flatnonzero(values < 0)[0])}")
    return NIncreasing("unproven", "no composition rule applies and no counterexample on n <= 2000")
