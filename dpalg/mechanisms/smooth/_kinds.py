"""SmoothBound's other sources of LS_k: constant profiles (count, sum) and a user formula.

Split out of :mod:`dpalg.mechanisms.smooth._smooth_bound` by concept; every function here
returns ``(a, scale)``: the private lattice centre ``round(f(x)/2^k)`` and the noise
scale ``S'(x)/α`` with ``S' = S + 2^k`` (the smooth bound plus the lattice rounding),
as :func:`~dpalg.mechanisms._common.smooth_quantile.center_and_scale` does.

* **count, sum (row add/remove, row level).** Their ``LS_k`` equals the global
  sensitivity at every x and k: one added row moves a count by 1 and a clipped sum
  by up to ``max(|l|, |u|)`` (on the lattice of the exact sum, the outward-rounded
  bounds ``max(|L|, |U|)·2^{k_m}``). The constant ``S = GS`` is 0-smooth, so
  ``S* = GS`` exactly (NRS07 Def. 2.1). The values are exact: the count, and the
  exact lattice sum of :func:`~dpalg.noise.exact_clipped_sum`. These kinds are
  covered so a plan can swap nodes; the Laplace node is better for them (noise
  scale GS/ε instead of 2·GS/ε, and no δ). Under row substitution, the count of
  rows has ``LS_k = 0``; a count or sum over a column is refused (a substitution
  can make a value missing: see :func:`~dpalg.mechanisms._common.params.require_fixed_n`).
* **a user function** ``LocalSensAtDistance(Query.function(...) | Clip, F)``:
  :mod:`dpalg.mechanisms.smooth._formula`.
"""

from __future__ import annotations

from fractions import Fraction

from dpalg.data import Dataset, Relation, SumSpec, as_reductions
from dpalg.mechanisms.smooth._formula import FormulaEnvelope, formula_smooth_bound
from dpalg.mechanisms.smooth._profile import mean_lattice_exponent
from dpalg.mechanisms._common.user_function import statistic_value
from dpalg.noise._admissible import Admissibility
from dpalg.noise._fixed_point import lattice_bounds
from dpalg.queries import Query

__all__ = ["CONSTANT_KINDS", "constant_center_and_scale", "constant_sensitivity", "function_center_and_scale"]

#: kinds whose LS_k is the global sensitivity at every x (row level)
CONSTANT_KINDS = ("count", "sum")


def constant_sensitivity(query: Query, relation: Relation) -> Fraction:
    """The exact constant ``LS_k = GS`` of a count or clipped sum (public; module docstring)."""
    if query.kind == "count":
        return Fraction(1) if relation == "add_remove" else Fraction(0)
    lower, upper = query.require_bounds("SmoothBound")
    km = mean_lattice_exponent(lower, upper)
    lo_u, hi_u = lattice_bounds(lower, upper, km, "SmoothBound")
    return max(abs(lo_u), abs(hi_u)) * Fraction(2) ** km


def _lattice_centre(value: Fraction, k: int) -> int:
    """``round(value / 2^k)``, ties to even, exactly."""
    return round(value / Fraction(2) ** k)


def constant_center_and_scale(
    query: Query, relation: Relation, data: Dataset, constants: Admissibility, k: int
) -> tuple[int, Fraction]:
    """``(a, scale)`` of a row-level count or clipped sum: exact value, ``S = GS``."""
    reductions = as_reductions(data)
    if query.kind == "count":
        value = Fraction(reductions.count(query.column) if query.column is not None else reductions.n_rows)
    else:
        assert query.column is not None
        lower, upper = query.require_bounds("SmoothBound")
        km = mean_lattice_exponent(lower, upper)
        total = reductions.clipped_sums([SumSpec(query.column, lower, upper, km)])[0]
        value = Fraction(int(total.total)) * Fraction(2) ** km
    s_prime = constant_sensitivity(query, relation) + Fraction(2) ** k
    return _lattice_centre(value, k), s_prime / constants.alpha


def function_center_and_scale(
    query: Query, env: FormulaEnvelope, data: Dataset, constants: Admissibility, k: int, beta: float, levels: int
) -> tuple[int, Fraction]:
    """``(a, scale)`` of a user-defined statistic: f̃ on the sorted clipped values, S from the formula."""
    values = query.values(data)  # clipped, missing dropped (the data policy)
    assert query.fn is not None
    value = statistic_value(query.fn, values, float(query.fallback or 0))  # sorted copy; the fallback on any failure
    s_prime = formula_smooth_bound(env, int(values.size), beta, levels) + Fraction(2) ** k
    return _lattice_centre(Fraction(value), k), s_prime / constants.alpha
