"""Privately bounded local sensitivity (seed 000, Theorem 1) as a general node.

An ε₁-DP step releases noisy counts; from them dpalg builds ĝ, an upper bound on
LS(f, x) that holds with probability ≥ 1 − δ; the value f(x) is then released
with exact discrete Laplace noise on a lattice, scaled to ĝ/ε₂. The total is
(ε₁ + ε₂, δ)-DP. See ``docs/mechanisms/bounded_ls.md`` for the proof.

The user states ĝ as a sympy expression in *bound symbols* ``<name>_hi`` (an
upper bound on the count ``name``) and ``<name>_lo`` (a lower bound), or as a
Python function of them. Plugging bounds into an expression gives an upper bound
on its value at the true counts only if the expression is non-decreasing in the
``_hi`` symbols and non-increasing in the ``_lo`` symbols; :func:`check_monotone`
proves this with sympy (signs of partial derivatives after substituting
``s = minimum + t`` with ``t >= 0``) and searches a grid for counterexamples.
Refuted expressions are refused; unproven ones are recorded in
``PrivacyClaim.notes`` (and refused when ``strict=True``).

The seed's code uses float Laplace noise (Mironov 2012's attack applies) and a
tail bound P[|Z| ≥ T] = e^{-Ta} that is not the discrete Laplace tail; here the
interval width uses the exact tail P[Z ≥ m] = p^m/(1 + p), p = e^{-1/t}, with a
rigorous rational upper bound on p.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Literal, Union, final

import attrs
import numpy as np
import sympy

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ROW, Dataset, Neighbouring, Relation
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common import floor_log2, positive_param, relation_param
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.noise._exact import exp_neg_bounds

__all__ = [
    "BoundFunction",
    "BoundedLocalSensitivity",
    "MonotoneResult",
    "PrivateCount",
    "check_monotone",
    "lattice_terms",
    "release_on_lattice",
    "tail_margin",
]

Direction = Literal["upper", "lower"]
BoundFunction = Callable[[Mapping[str, int]], Fraction]
_GRANULARITY_BITS = 20
_P_PREC = 96  # bits of the rational upper bound on p = e^{-1/t}


# --- the exact discrete Laplace tail ------------------------------------------------


def _p_upper(scale: Fraction) -> Fraction:
    """A rational p_hi >= e^{-1/scale}."""
    _, hi = exp_neg_bounds(1 / scale, _P_PREC)
    return Fraction(min(hi, 1 << _P_PREC), 1 << _P_PREC)


def _tail_upper(p_hi: Fraction, m: int) -> Fraction:
    """An upper bound on P[Z >= m] = p^m/(1 + p) (increasing in p for m >= 1)."""
    return p_hi**m / (1 + p_hi)


def tail_margin(scale: ExactLike, delta: ExactLike) -> int:
    """The smallest margin w >= 0 with P[Z > w] <= δ for Z discrete Laplace(scale), proved.

    For ``Z`` with pmf proportional to ``p^|z|``, ``p = e^{-1/t}``:
    ``P[Z >= m] = p^m / (1 + p)`` for ``m >= 1``. This is increasing in ``p``, so
    evaluating it exactly at a rational ``p_hi >= p`` (96-bit rigorous bound)
    bounds the tail from above; the returned ``w = m - 1`` is the smallest for
    which that bound is ``<= δ`` (one step above the true minimum at worst,
    when ``p_hi`` and ``p`` straddle the threshold).

    Args:
        scale: the discrete Laplace scale ``t > 0``.
        delta: the allowed one-sided failure probability, in (0, 1).

    Returns:
        ``w`` such that ``noisy - w <= true`` fails with probability ``<= δ``.

    Examples:
        >>> tail_margin(1, "0.01")  # p = e^-1: P[Z >= 4] = 0.0134, P[Z >= 5] = 0.0049
        4
    """
    t = positive_param("tail_margin", "scale", scale)
    d = to_fraction(delta, owner="tail_margin", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("tail_margin", "delta", delta, "must be in (0, 1)")
    p_hi = _p_upper(t)
    if p_hi >= 1:  # pragma: no cover - only for absurd scales
        raise InvalidArgument("tail_margin", "scale", scale, "is too large for a rigorous tail bound")
    # float guess from m >= t (ln(1/δ) - ln(1 + p)), then exact correction
    guess = max(1, math.ceil(float(t) * (math.log(d.denominator) - math.log(d.numerator) - math.log1p(float(p_hi)))) - 1)
    m = guess
    while m > 1 and _tail_upper(p_hi, m - 1) <= d:
        m -= 1
    while _tail_upper(p_hi, m) > d:
        m += 1
    return m - 1


@functools.lru_cache(maxsize=256)
def _cached_margin(scale: Fraction, delta: Fraction) -> int:
    return tail_margin(scale, delta)


# --- lattice release with a data-dependent (private) sensitivity bound ---------------


def lattice_terms(value: Fraction, bound: Fraction, epsilon: Fraction) -> tuple[int, Fraction, int]:
    """``(m, t, k)``: release ``(m + Z) 2**k``, Z discrete Laplace of scale ``t`` (lattice units).

    ``k = floor(log2(bound/ε)) - 20`` depends only on the (already private)
    bound. ``m`` is the exact nearest integer to ``value / 2**k``; rounding moves
    each value by at most ``2**(k-1)``, so for neighbours whose values differ by
    at most ``bound`` the integers differ by at most ``(bound + 2**k) / 2**k``;
    scale ``t = (bound + 2**k) / (ε 2**k)`` makes the pmf ratio at most ``e^ε``.
    """
    k = floor_log2(bound / epsilon) - _GRANULARITY_BITS if bound > 0 else -60
    step = Fraction(2) ** k
    m = round(value / step)
    t = (bound + step) / (epsilon * step)
    return m, t, k


def release_on_lattice(value: Fraction, bound: Fraction, epsilon: Fraction, rng: AbstractRandomness) -> Fraction:
    """``value`` plus exact discrete Laplace noise calibrated to sensitivity ``bound`` (see :func:`lattice_terms`)."""
    m, t, k = lattice_terms(value, bound, epsilon)
    z = int(discrete_laplace(t, size=1, rng=rng)[0])
    return (m + z) * Fraction(2) ** k


# --- the symbolic monotonicity check -----------------------------------------------


@final
@attrs.frozen
class MonotoneResult:
    """The outcome of :func:`check_monotone`.

    ``status`` is ``"proven"`` (sympy showed every partial derivative has the
    right sign), ``"refuted"`` (``counterexample`` shows a step in the wrong
    direction, checked exactly) or ``"unproven"``.
    """

    status: Literal["proven", "unproven", "refuted"]
    detail: str
    counterexample: tuple[tuple[str, int], ...] = ()


def _nonneg(expr: sympy.Expr) -> bool:
    return bool(expr.is_nonnegative or sympy.expand(expr).is_nonnegative or sympy.factor(expr).is_nonnegative)


def _monotone_part(expr: sympy.Expr, t: sympy.Symbol, sign: int) -> bool | None:
    """Whether expr is monotone in t (sign +1: non-decreasing, -1: non-increasing); None: unknown.

    Structural rules first (sums, products of non-negative factors, powers with
    constant exponents, Max/Min), then the sign of the derivative.
    """
    if t not in expr.free_symbols:
        return True
    if isinstance(expr, (sympy.Max, sympy.Min, sympy.Add)):
        if all(_monotone_part(arg, t, sign) is True for arg in expr.args):
            return True
    elif isinstance(expr, sympy.Mul):
        coeff, rest = expr.as_coeff_Mul()
        if coeff < 0:
            return _monotone_part(-expr, t, -sign)
        factors = sympy.Mul.make_args(rest)
        if all(_nonneg(f) and _monotone_part(f, t, sign) is True for f in factors):
            return True
    elif isinstance(expr, sympy.Pow) and expr.exp.is_number and t not in expr.exp.free_symbols:
        base = expr.base
        if expr.exp.is_positive and _nonneg(base):
            if _monotone_part(base, t, sign) is True:
                return True
        elif expr.exp.is_negative and bool(base.is_positive or sympy.expand(base).is_positive):
            if _monotone_part(base, t, -sign) is True:
                return True
    derivative = sympy.simplify(sympy.diff(expr, t))
    candidate = sympy.factor(sympy.together(sign * derivative))
    if candidate.is_nonnegative:
        return True
    return None


def _grid(minimum: int, n: int) -> list[int]:
    base = [0, 1, 2, 3, 5, 8, 13, 30, 100, 1000]
    return [minimum + v for v in base[:n]]


def _search_counterexample(
    evaluate: Callable[[Mapping[str, int]], Fraction | None],
    directions: Mapping[str, Direction],
    minimums: Mapping[str, int],
) -> tuple[tuple[str, int], ...] | None:
    names = sorted(directions)
    per_axis = max(3, min(10, int(3000 ** (1 / max(len(names), 1)))))
    grids = [_grid(minimums.get(n, 0), per_axis) for n in names]
    for point in itertools.product(*grids):
        env = dict(zip(names, point))
        base = evaluate(env)
        if base is None:
            continue
        for name in names:
            moved = dict(env)
            moved[name] += 1
            after = evaluate(moved)
            if after is None:
                continue
            wrong = after < base if directions[name] == "upper" else after > base
            if wrong:
                return tuple(sorted(env.items()))
    return None


def _sympy_evaluator(expr: sympy.Expr) -> Callable[[Mapping[str, int]], Fraction | None]:
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)

    def evaluate(env: Mapping[str, int]) -> Fraction | None:
        value = expr.subs({s: sympy.Integer(env[s.name]) for s in symbols})
        if not value.is_Rational:
            return None
        return Fraction(int(value.p), int(value.q))

    return evaluate


def _function_evaluator(fn: BoundFunction) -> Callable[[Mapping[str, int]], Fraction | None]:
    def evaluate(env: Mapping[str, int]) -> Fraction | None:
        try:
            return to_fraction(fn(env), owner="ls_bound", field="value")
        except (ArithmeticError, InvalidArgument):
            return None

    return evaluate


def check_monotone(
    bound: sympy.Expr | BoundFunction,
    directions: Mapping[str, Direction],
    minimums: Mapping[str, int] | None = None,
) -> MonotoneResult:
    """Check that ``bound`` is non-decreasing in upper-bound and non-increasing in lower-bound inputs.

    Sympy part: every symbol ``s`` is replaced by ``minimum + t`` with ``t``
    non-negative; ``Max``/``Min`` are monotone when all arguments are; otherwise
    the partial derivative (times −1 for lower bounds) must simplify to something
    sympy proves non-negative. Grid part: the bound is evaluated exactly on a
    grid of integers ``>= minimum`` and at each point moved by +1 in one input;
    a step in the wrong direction refutes (fail closed). A Python function can
    only be refuted or left unproven.

    Args:
        bound: a sympy expression or a function of a ``{symbol: int}`` mapping.
        directions: each input symbol's direction, ``"upper"`` or ``"lower"``.
        minimums: the smallest value each symbol takes where the bound is used.

    Returns:
        A :class:`MonotoneResult`.

    Examples:
        >>> a, b = sympy.symbols("a_hi b_lo")
        >>> check_monotone(a / (b**2 - b), {"a_hi": "upper", "b_lo": "lower"}, {"b_lo": 2}).status
        'proven'
        >>> check_monotone(a / (b**2 - b), {"a_hi": "lower", "b_lo": "lower"}, {"b_lo": 2}).status
        'refuted'
    """
    mins = dict(minimums or {})
    if not isinstance(bound, sympy.Expr):
        found = _search_counterexample(_function_evaluator(bound), directions, mins)
        if found is not None:
            return MonotoneResult("refuted", f"wrong direction at {dict(found)}", found)
        return MonotoneResult("unproven", "a Python function: no counterexample on the grid, no proof")
    evaluator = _sympy_evaluator(bound)
    found = _search_counterexample(evaluator, directions, mins)
    if found is not None:
        return MonotoneResult("refuted", f"wrong direction at {dict(found)}", found)
    shifted: dict[sympy.Symbol, sympy.Expr] = {}
    offsets: dict[str, sympy.Symbol] = {}
    for s in bound.free_symbols:
        assert isinstance(s, sympy.Symbol)
        t = sympy.Symbol(f"_t_{s.name}", nonnegative=True)
        offsets[s.name] = t
        shifted[s] = sympy.Integer(mins.get(s.name, 0)) + t
    expr = bound.xreplace(shifted)
    unproven = []
    for name, direction in directions.items():
        t = offsets.get(name)
        if t is None:
            continue
        if _monotone_part(expr, t, 1 if direction == "upper" else -1) is not True:
            unproven.append(name)
    if unproven:
        return MonotoneResult("unproven", f"sympy could not sign the derivative in {sorted(unproven)}")
    return MonotoneResult("proven", "partial derivatives signed by sympy")


# --- the node -----------------------------------------------------------------------


def _name(owner: str, field: str, value: object) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise InvalidArgument(owner, field, value, "must be a Python identifier")
    return value


def _count_name(value: str) -> str:
    return _name("PrivateCount", "name", value)


def _where(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgument("PrivateCount", "where", value, "must be None (all rows) or a column name")
    return value


@final
@attrs.frozen
class PrivateCount:
    """A named count whose private bounds feed ĝ: rows, or rows whose ``where`` column is non-zero.

    Rows with NaN in ``where`` are not counted. Sensitivity 1 under add/remove
    and substitution.

    Args:
        name: the symbol name; bounds are ``<name>_hi`` and ``<name>_lo``.
        where: ``None`` to count all rows, or a 0/1 column.
    """

    name: str = attrs.field(converter=_count_name)
    where: str | None = attrs.field(default=None, converter=_where)

    def value(self, data: Dataset) -> int:
        """The exact count."""
        if self.where is None:
            return data.n_rows
        col = data.numeric(self.where)
        return int(np.count_nonzero(col[~np.isnan(col)]))


BoundSpec = Union[str, sympy.Expr, BoundFunction]


def _counts(value: tuple[PrivateCount, ...]) -> tuple[PrivateCount, ...]:
    owner = "BoundedLocalSensitivity"
    if not isinstance(value, tuple) or not value or not all(isinstance(c, PrivateCount) for c in value):
        raise InvalidArgument(owner, "counts", value, "must be a non-empty tuple of PrivateCount")
    names = [c.name for c in value]
    if len(set(names)) != len(names):
        raise InvalidArgument(owner, "counts", names, "names must be distinct")
    return value


def _sympify(owner: str, field: str, value: object) -> sympy.Expr:
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, str) and value.strip():
        try:
            parsed = sympy.sympify(value, locals={"Max": sympy.Max, "Min": sympy.Min})
        except (sympy.SympifyError, SyntaxError, TypeError):
            raise InvalidArgument(owner, field, value, "is not a valid sympy expression") from None
        if isinstance(parsed, sympy.Expr):
            return parsed
    raise InvalidArgument(owner, field, value, "must be a sympy expression or a non-empty string")


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> sympy.Expr:
    return _sympify("BoundedLocalSensitivity", "expression", text)


def _value_expr(value: str | sympy.Expr) -> str:
    return str(sympy.sstr(_sympify("BoundedLocalSensitivity", "value", value)))


def _ls_bound(value: BoundSpec) -> str | BoundFunction:
    """Expressions are stored as strings (certificates record them), parsed on use."""
    if isinstance(value, (str, sympy.Expr)):
        return str(sympy.sstr(_sympify("BoundedLocalSensitivity", "ls_bound", value)))
    if callable(value):
        return value
    raise InvalidArgument("BoundedLocalSensitivity", "ls_bound", value, "must be a sympy expression, a string or a function")


def _eps1(value: ExactLike) -> Fraction:
    return positive_param("BoundedLocalSensitivity", "epsilon_bound", value)


def _eps2(value: ExactLike) -> Fraction:
    return positive_param("BoundedLocalSensitivity", "epsilon_release", value)


def _delta(value: ExactLike) -> Fraction:
    d = to_fraction(value, owner="BoundedLocalSensitivity", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("BoundedLocalSensitivity", "delta", value, "must be in (0, 1)")
    return d


def _minimums(value: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, tuple) or not all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], int) and not isinstance(p[1], bool)
        for p in value
    ):
        raise InvalidArgument("BoundedLocalSensitivity", "minimums", value, "must be a tuple of (symbol, int) pairs")
    return value


def _gs(value: ExactLike | None) -> Fraction | None:
    if value is None:
        return None
    return positive_param("BoundedLocalSensitivity", "global_sensitivity", value)


def _relation(value: str) -> Relation:
    return relation_param("BoundedLocalSensitivity", value)


def _strict(value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("BoundedLocalSensitivity", "strict", value, "must be a bool")
    return value


@final
@attrs.frozen
class BoundedLocalSensitivity(AbstractPrimitive[ApproxDP]):
    """Release f(x) with noise scaled to a privately computed bound on its local sensitivity.

    Steps: each count is released with discrete Laplace noise of scale
    ``n_counts / ε₁``; the bound symbols are ``<name>_hi = noisy + w`` and
    ``<name>_lo = max(0, noisy - w)`` with ``w`` from :func:`tail_margin` at
    δ divided by the number of bound symbols ĝ uses; ĝ is ``ls_bound`` at those
    values (capped by ``global_sensitivity`` when given). When a bound symbol is
    below its declared minimum, ĝ is ``global_sensitivity`` or, without one, the
    output is ``BOTTOM``. Finally f (``value``, evaluated exactly at the true
    counts; 0 where undefined) is released on a lattice with discrete Laplace
    noise for sensitivity ĝ and ε₂ (:func:`lattice_terms`).

    Args:
        counts: the :class:`PrivateCount` inputs.
        value: f as a sympy expression (or string) in the count names.
        ls_bound: ĝ in the bound symbols, as sympy/string (checked with
            :func:`check_monotone`) or a Python function (only refutable).
        epsilon_bound: ε₁ > 0 for the counts.
        epsilon_release: ε₂ > 0 for the release.
        delta: δ in (0, 1): the probability that ĝ < LS(f, x) is at most δ.
        minimums: ``(symbol, m)`` pairs: ĝ is only used where ``symbol >= m``.
        global_sensitivity: optional cap and fallback for ĝ.
        relation: ``"add_remove"`` (default) or ``"substitution"``.
        strict: refuse an unproven ``ls_bound`` instead of noting it.

    Raises:
        InvalidArgument: invalid parameters, unknown symbols, or an ``ls_bound``
            refuted by a counterexample (always) or unproven (``strict``).

    Privacy guarantee:
        (ε₁ + ε₂, δ)-DP under the stated relation for one row (seed 000,
        Theorem 1; Nissim–Raskhodnikova–Smith 2007 for the idea): the counts have
        sensitivity 1 and together cost ε₁ (discrete Laplace, CKS 2020). If the
        user's claim "ls_bound at the true counts >= LS(f, x)" holds, monotonicity
        makes ĝ >= LS(f, x) whenever every bound covers its count, which fails
        with probability at most δ (exact discrete Laplace tails, union bound).
        On that event the lattice release is ε₂-DP (rounding accounted in the
        sensitivity); the fallback branches are ε₂-DP or constant.

    Examples:
        >>> node = BoundedLocalSensitivity(
        ...     (PrivateCount("a", where="in_a"), PrivateCount("b")),
        ...     value="a/b", ls_bound="Max(a_hi, b_hi - a_lo)/(b_lo**2 - b_lo)",
        ...     epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6",
        ...     minimums=(("b_lo", 2),), global_sensitivity=1)
        >>> node.cost()
        ApproxDP(1, '1/1000000')
        >>> node.privacy().notes
        ('ls_bound monotonicity: proven (partial derivatives signed by sympy)',)
    """

    counts: tuple[PrivateCount, ...] = attrs.field(converter=_counts)
    value: str = attrs.field(converter=_value_expr)
    ls_bound: str | BoundFunction = attrs.field(converter=_ls_bound)
    epsilon_bound: Fraction = attrs.field(converter=_eps1)
    epsilon_release: Fraction = attrs.field(converter=_eps2)
    delta: Fraction = attrs.field(converter=_delta)
    minimums: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=_minimums)
    global_sensitivity: Fraction | None = attrs.field(default=None, converter=_gs)
    relation: Relation = attrs.field(default="add_remove", converter=_relation)
    strict: bool = attrs.field(default=False, converter=_strict)
    monotonicity: MonotoneResult = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        owner = "BoundedLocalSensitivity"
        names = {c.name for c in self.counts}
        unknown = {s.name for s in _parse(self.value).free_symbols if isinstance(s, sympy.Symbol)} - names
        if unknown:
            raise InvalidArgument(owner, "value", self.value, f"uses unknown names {sorted(unknown)}; counts: {sorted(names)}")
        directions = self.directions()
        if isinstance(self.ls_bound, str):
            used = {s.name for s in _parse(self.ls_bound).free_symbols if isinstance(s, sympy.Symbol)}
            if used - set(directions):
                raise InvalidArgument(owner, "ls_bound", self.ls_bound, f"uses unknown symbols {sorted(used - set(directions))}")
        for sym, _ in self.minimums:
            if sym not in directions:
                raise InvalidArgument(owner, "minimums", self.minimums, f"names unknown symbol {sym!r}")
        spec = _parse(self.ls_bound) if isinstance(self.ls_bound, str) else self.ls_bound
        result = check_monotone(spec, directions, dict(self.minimums))
        if result.status == "refuted":
            raise InvalidArgument(owner, "ls_bound", self.ls_bound, f"is not monotone in its bound inputs: {result.detail}")
        if result.status == "unproven" and self.strict:
            raise InvalidArgument(owner, "ls_bound", self.ls_bound, f"monotonicity unproven ({result.detail}); strict=True")
        object.__setattr__(self, "monotonicity", result)

    def directions(self) -> dict[str, Direction]:
        """The bound symbols and their directions."""
        out: dict[str, Direction] = {}
        for c in self.counts:
            out[f"{c.name}_hi"] = "upper"
            out[f"{c.name}_lo"] = "lower"
        return out

    def used_symbols(self) -> tuple[str, ...]:
        """The bound symbols ĝ depends on (all of them for a Python function)."""
        if isinstance(self.ls_bound, str):
            return tuple(sorted(s.name for s in _parse(self.ls_bound).free_symbols if isinstance(s, sympy.Symbol)))
        return tuple(sorted(self.directions()))

    def count_scale(self) -> Fraction:
        """The discrete Laplace scale of each count: ``len(counts) / ε₁``."""
        return len(self.counts) / self.epsilon_bound

    def margin(self) -> int:
        """The one-sided margin w of every bound (δ split evenly over the used symbols)."""
        share = self.delta / max(len(self.used_symbols()), 1)
        return _cached_margin(self.count_scale(), share)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return ROW if self.relation == "add_remove" else Neighbouring(relation="substitution")

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε₁ + ε₂, δ), from the parameters only."""
        notes = (f"ls_bound monotonicity: {self.monotonicity.status} ({self.monotonicity.detail})",)
        return PrivacyClaim(
            ApproxDP(self.epsilon_bound + self.epsilon_release, self.delta),
            "privately bounded local sensitivity (seed 000 Thm 1): eps1-DP bound, P[bound < LS] <= delta, "
            "discrete Laplace at bound/eps2 on a lattice",
            (("epsilon_bound", str(self.epsilon_bound)), ("epsilon_release", str(self.epsilon_release)),
             ("delta", str(self.delta)), ("relation", self.relation)),
            notes,
        )  # fmt: skip

    def bound_from_noisy(self, noisy: Mapping[str, int]) -> Fraction | None:
        """ĝ from the noisy counts (post-processing); ``None`` when it may not be used."""
        w = self.margin()
        env: dict[str, int] = {}
        for c in self.counts:
            env[f"{c.name}_hi"] = noisy[c.name] + w
            env[f"{c.name}_lo"] = max(0, noisy[c.name] - w)
        if any(env[s] < m for s, m in self.minimums):
            return self.global_sensitivity
        if isinstance(self.ls_bound, str):
            raw = _sympy_evaluator(_parse(self.ls_bound))(env)
        else:
            raw = _function_evaluator(self.ls_bound)(env)
        if raw is None or raw < 0:
            return self.global_sensitivity
        if self.global_sensitivity is not None:
            raw = min(raw, self.global_sensitivity)
        return raw

    def true_value(self, counts: Mapping[str, int]) -> Fraction:
        """f at the given counts, exactly (0 where undefined)."""
        out = _sympy_evaluator(_parse(self.value))(counts)
        return Fraction(0) if out is None else out

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy f (float), or ``BOTTOM`` when no bound may be used."""
        from dpalg._bottom import BOTTOM

        true = {c.name: c.value(data) for c in self.counts}
        draws = discrete_laplace(self.count_scale(), size=len(self.counts), rng=rng)
        noisy = {c.name: true[c.name] + int(z) for c, z in zip(self.counts, draws.tolist())}
        bound = self.bound_from_noisy(noisy)
        if bound is None:
            return BOTTOM
        return float(release_on_lattice(self.true_value(true), bound, self.epsilon_release, rng))
