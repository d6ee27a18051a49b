"""Smooth sensitivity from a user's LS formula: a user-defined statistic through SmoothBound.

For ``Query.function(fn, column=...) | Clip(l, u)`` dpalg knows no sensitivity; the
user states ``F(k, n) ≥ LS_k(x)`` for every dataset x of n values
(:class:`~dpalg.mechanisms.LocalSensAtDistance`; at ``k = 0`` this is the promise
``LS_0(x) ≤ F(0, n(x))``). :class:`~dpalg.mechanisms.SmoothBound` then uses, over
row add/remove of one row (n moves by at most 1; a row with a missing value
changes nothing),

    S(x) = max_{m ≥ 0} e^{−β|m − n(x)|} · h(m),   h(m) ≥ F(0, m),

the smallest β-smooth function of n above ``F(0, ·)`` (NRS07 Def. 2.1 and Lemma 2.3:
``|m − n|`` is 1-Lipschitz in n, so each term, and their maximum, changes by at
most ``e^β`` between neighbours; ``S(x) ≥ h(n) ≥ LS_0(x)``). It equals the
weights-lemma bound of ``docs/mechanisms/smooth_sensitivity.md`` §1 for the profile
``P_k(x) = max_{|m − n| ≤ k} h(m)`` (``P_0 ≥ LS_0``; ``P_k(x) ≤ P_{k+1}(y)`` for
neighbours, the windows being nested). Iterating the proven neighbour condition
gives ``F(0, m) ≤ F(|m − n|, n)``, so ``S`` is never larger than
``max_k e^{−kβ} F(k, n)``: only the promise at ``k = 0`` is used.

Public truncation (:func:`~dpalg.mechanisms.smooth._profile.truncated_smooth_bound`):
``F(0, n)`` must be **proven** non-negative and non-increasing in n
(:func:`~dpalg.sensitivity._formula_bounds.check_nonincreasing_in_n`), so the public
``T`` = a rigorous float upper bound of ``F(0, 0)`` bounds ``F(0, m)`` for all m, and
``h(m) = min(û(m), T)`` with ``û`` the interval-arithmetic upper bound of
:func:`~dpalg.sensitivity._formula_bounds.upper_values` (a deterministic function of
m, ``≥ F(0, m)``, ``≤ T``). The profile is read at the public ``K`` of
:func:`~dpalg.sensitivity._smooth_window.window_levels` over ``m ∈ [n − K, n + K]``
(2K + 1 evaluations on every run, masked below 0), scaled exactly by ``2^-e``
(``T/2^e ∈ [1, 2)``). It is exact as given (a maximum of floats): the absolute
error passed is ``2^-60`` in those units, and the pad ``2^-40`` it buys also
covers a scaled value that underflows (at most ``2^-1074``).

The released value is f̃ (the function called totally, the public fallback on
failure; :meth:`~dpalg.queries.Query.function`) rounded to the lattice ``2^k`` as an
exact rational, ``k`` from :func:`~dpalg.mechanisms._common.smooth_quantile.auto_granularity`
over the range ``[0, T]`` (``S ≤ T(1 + 2^-39)``). Privacy rests on the user's promise
at ``k = 0``, which the certificate records (the brute-force refutation of
:class:`~dpalg.mechanisms.LocalSensAtDistance` runs at construction).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING, final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms.smooth._profile import truncated_smooth_bound

if TYPE_CHECKING:  # sympy is loaded only where a formula is used (cold start)
    import sympy

__all__ = ["FormulaEnvelope", "envelope_of", "formula_smooth_bound"]

#: the profile's absolute error in units of 2^e (it is exact; module docstring)
_ERR = 2.0**-60
#: the largest T accepted: the lattice and the Laplace sampler stay in range
_MAX_TOP_BITS = 900


@final
@attrs.frozen
class FormulaEnvelope:
    """What construction proved about ``F(0, ·)``: the public top ``T`` and the formula at k = 0."""

    expr0: sympy.Expr
    top: float
    reason: str

    def note(self) -> str:
        """The certificate note: how S is built from F."""
        return (f"smooth bound S(x) = max_m e^(-beta|m - n|) * min(F(0, m), T) over the window |m - n| <= K; "
                f"F(0, n) proven non-increasing in n ({self.reason}), T = {self.top!r} >= F(0, 0) (interval arithmetic)")


@functools.lru_cache(maxsize=64)
def _envelope(expr: sympy.Expr, formula: str, owner: str) -> FormulaEnvelope:
    import sympy

    from dpalg.sensitivity._formula_bounds import check_nonincreasing_in_n, upper_values

    expr0 = expr.xreplace({sympy.Symbol("k"): sympy.Integer(0)})
    verdict = check_nonincreasing_in_n(expr0)
    if verdict.status != "proven":
        raise InvalidArgument(owner, "formula", formula,
                              f"must have F(0, n) PROVEN non-negative and non-increasing in n for a smooth bound "
                              f"(the public top T = F(0, 0) rests on it): {verdict.status}, {verdict.reason}")
    top = float(upper_values(expr0, 0, [0])[0])
    if not (math.isfinite(top) and top > 0):
        raise InvalidArgument(owner, "formula", formula, f"must have a finite F(0, 0) > 0 (got an upper bound {top!r})")
    if top > math.ldexp(1.0, _MAX_TOP_BITS):
        raise InvalidArgument(owner, "formula", formula, f"has F(0, 0) about {top:.6g} > 2**{_MAX_TOP_BITS}")
    return FormulaEnvelope(expr0, top, verdict.reason)


def envelope_of(target: LocalSensAtDistance, owner: str) -> FormulaEnvelope:
    """The proven envelope data of a user formula (cached; refuses what is not proven)."""
    from dpalg.mechanisms._common.ls_formula import checked

    q = target.query
    bounds = (q.lower, q.upper) if q.lower is not None and q.upper is not None else None
    expr = checked(target.formula, target.params, bounds, target.strict).expr
    return _envelope(expr, target.formula, owner)


def formula_smooth_bound(env: FormulaEnvelope, n: int, beta: float, levels: int) -> Fraction:
    """``Ŝ ≥ S`` for a dataset of n values, β-smooth in n (module docstring); 2K + 1 evaluations, always."""
    from dpalg.sensitivity._formula_bounds import upper_values

    exponent = math.frexp(env.top)[1] - 1  # T / 2^e in [1, 2)
    m = np.arange(n - levels, n + levels + 1, dtype=np.int64)
    valid = m >= 0
    h = np.minimum(upper_values(env.expr0, 0, np.maximum(m, 0).astype(np.float64)), env.top)
    h = np.where(valid, np.ldexp(h, -exponent), 0.0)
    right = np.maximum.accumulate(h[levels:])  # max over m in [n, n + k]
    left = np.maximum.accumulate(h[levels::-1])  # max over m in [n − k, n]
    profile = np.maximum(left, right)
    s_units = truncated_smooth_bound(profile, beta, math.ldexp(env.top, -exponent), _ERR)
    return Fraction(s_units) * Fraction(2) ** exponent
