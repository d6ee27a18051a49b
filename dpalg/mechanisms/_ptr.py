"""Propose-test-release (Dwork–Lei 2009), PTR for the mode, and user LS_k formulas.

Neighbouring relation: one row, add/remove (row substitution is refused for
queries over a column: it can turn a value into a missing one, changing n).

Careful with seed 002's listing (do not copy it): it claims (ε, δ) overall although
the test and the release each spend ε, and its threshold log(2/δ)/(2ε) is too low —
a dataset whose own local sensitivity exceeds the bound passes with probability
about ½·sqrt(δ/2) ≫ δ. We use the threshold ln(1/δ)/ε proved in seed 003 and
state the cost (2ε, δ). ``tests/mechanisms/test_ptr.py`` catches the seed variant.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt
import sympy

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring, Relation
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common import (
    floor_log2,
    granularity_param,
    positive_param,
    relation_param,
    require_fixed_n,
    unit_interval_param,
)
from dpalg.mechanisms._thresholds import ceil_log_inv_delta_over_eps
from dpalg.noise import AbstractRandomness, discrete_laplace, lattice_noise
from dpalg.queries import Query
from dpalg._bottom import BOTTOM
from dpalg.sensitivity._catalog import distance_to_instability, ls_profile, mode_gap_distance
from dpalg.sensitivity._sympy_check import MonotoneCheck, require_monotone, safe_parse

__all__ = ["LocalSensAtDistance", "ProposeTest", "PTRMode", "ptr_test_passes", "ptr_cap"]

PTR_KINDS = ("mean", "trimmed_mean", "median", "quantile", "max", "min", "count")
_FORMULA_SYMBOLS = ("k", "n", "lower", "upper")


def _delta(owner: str, value: ExactLike) -> Fraction:
    return unit_interval_param(owner, "delta", value)


def ptr_cap(epsilon: Fraction, delta: Fraction) -> int:
    """The largest distance PTR ever computes: ceil(ln(1/δ)/ε) + ceil(40/ε).

    Capping γ at a constant keeps its sensitivity 1 (min of a 1-Lipschitz
    function and a constant) and changes the pass probability of a dataset at
    distance > cap by at most e^-40.
    """
    return ceil_log_inv_delta_over_eps(epsilon, delta) + math.ceil(40 / epsilon)


def ptr_test_passes(gamma: int, epsilon: Fraction, delta: Fraction, rng: AbstractRandomness) -> bool:
    """The private test: γ + Z > ln(1/δ)/ε with Z discrete Laplace of scale 1/ε.

    With M = ceil(ln(1/δ)/ε) − 1, the integer γ + Z exceeds T exactly when it
    exceeds M (it is an integer and M + 1 ≥ T); when γ = 0 the pass probability
    is P[Z ≥ M + 1] = e^{-ε(M+1)}/(1 + e^{-ε}) < δ. The test has sensitivity-1
    input and discrete Laplace noise of scale 1/ε, so it is ε-DP.
    """
    threshold = ceil_log_inv_delta_over_eps(epsilon, delta) - 1
    z = int(discrete_laplace(1 / epsilon, size=1, rng=rng)[0])
    return gamma + z > threshold


# --- user formulas for LS_k -------------------------------------------------------


def _formula(value: object) -> str:
    if isinstance(value, sympy.Basic):
        return str(sympy.sstr(value))
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument("LocalSensAtDistance", "formula", value, "must be a sympy expression or a non-empty string")
    return value.strip()


def _params(value: object) -> tuple[tuple[str, Fraction], ...]:
    if isinstance(value, tuple):
        items = list(value)
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        raise InvalidArgument("LocalSensAtDistance", "params", type(value).__name__, "must be a dict name -> number")
    out: list[tuple[str, Fraction]] = []
    for name, number in items:
        if not isinstance(name, str) or not name.isidentifier() or name in _FORMULA_SYMBOLS:
            raise InvalidArgument("LocalSensAtDistance", "params", name, f"must be identifiers other than {_FORMULA_SYMBOLS}")
        out.append((name, to_fraction(number, owner="LocalSensAtDistance", field=f"params[{name!r}]")))
    return tuple(sorted(out))


def _ls_query(value: Query) -> Query:
    if not isinstance(value, Query):
        raise InvalidArgument("LocalSensAtDistance", "query", type(value).__name__, "must be a dpalg Query")
    return value


@functools.lru_cache(maxsize=256)
def _checked(
    formula: str, params: tuple[tuple[str, Fraction], ...], bounds: tuple[Fraction, Fraction] | None, strict: bool
) -> MonotoneCheck:
    expr = _parsed(formula, params)  # safe_parse refuses code-like strings
    if bounds is not None:  # the clip bounds are public constants of the query
        expr = expr.subs({
            sympy.Symbol("lower", real=True): sympy.Rational(bounds[0].numerator, bounds[0].denominator),
            sympy.Symbol("upper", real=True): sympy.Rational(bounds[1].numerator, bounds[1].denominator),
        })
    return require_monotone(expr, var="k", strict=strict, assumptions={"n": {"integer": True, "nonnegative": True}})


@final
@attrs.frozen
class LocalSensAtDistance:
    """A user-supplied bound on LS_k(x), the local sensitivity at distance k.

    ``formula`` is a sympy expression (or string) in ``k`` and the symbols ``n``
    (number of non-missing values), ``lower``/``upper`` (the clip bounds) and any
    public constants in ``params``. At construction sympy decides whether it is
    non-decreasing in k ≥ 0 and non-negative: *refuted* formulas are refused with
    a counterexample; *unproven* ones are refused with ``strict=True`` and
    otherwise accepted with a warning recorded in every certificate.

    At run time, for a catalog query, every F_k that PTR uses is checked against
    dpalg's own exact LS_k of the query on the data; a formula below the true
    LS_k is refused without printing the data.

    The user promises what sympy cannot check: that F_k is an LS-at-distance-k
    bound, i.e. F_k(x) ≥ LS_k(x) and F_k(x) ≤ F_{k+1}(x') for neighbours x, x'
    (this is what makes the PTR distance 1-Lipschitz). Monotonicity in k is the
    necessary condition dpalg proves.
    """

    query: Query = attrs.field(converter=_ls_query)
    formula: str = attrs.field(converter=_formula)
    params: tuple[tuple[str, Fraction], ...] = attrs.field(default=(), converter=_params)
    strict: bool = False

    def __attrs_post_init__(self) -> None:
        self.check()

    def check(self) -> MonotoneCheck:
        """The (cached) sympy verdict; raises for refuted, or unproven in strict mode."""
        q = self.query
        bounds = (q.lower, q.upper) if q.lower is not None and q.upper is not None else None
        return _checked(self.formula, self.params, bounds, self.strict)

    def notes(self) -> tuple[str, ...]:
        """Certificate notes: the verdict, loudly when unproven."""
        verdict = self.check()
        if verdict.status == "proven":
            return (f"LS_k formula {self.formula!r}: proven non-decreasing and non-negative in k (sympy)",)
        return (f"WARNING: LS_k formula {self.formula!r} is UNPROVEN monotone ({verdict.reason}); accepted in non-strict mode",)

    def evaluate(self, k: int, n: int) -> sympy.Expr:
        """F_k for a dataset with n values, exactly (sympy)."""
        subs: dict[sympy.Symbol, sympy.Expr] = {
            sympy.Symbol("k"): sympy.Integer(k),
            sympy.Symbol("n", integer=True, nonnegative=True): sympy.Integer(n),
        }
        if self.query.lower is not None and self.query.upper is not None:
            subs[sympy.Symbol("lower", real=True)] = sympy.Rational(self.query.lower.numerator, self.query.lower.denominator)
            subs[sympy.Symbol("upper", real=True)] = sympy.Rational(self.query.upper.numerator, self.query.upper.denominator)
        expr = _parsed(self.formula, self.params)
        return sympy.sympify(expr.subs(subs))

    def distance(self, values: npt.NDArray[np.float64], bound: Fraction, relation: Relation, cap: int) -> int:
        """min{k ≤ cap : F_k > bound} (cap if none), checking F_k ≥ LS_k on the way.

        For a catalog query every F_k used (k up to the returned distance) is
        compared with dpalg's exact LS_k on this data; a formula below it is
        refused, so the distance never exceeds the true distance to instability.
        """
        n = int(values.size)
        b = sympy.Rational(bound.numerator, bound.denominator)
        profile = self._profile(values, relation, cap)
        for k in range(cap + 1):
            value = self.evaluate(k, n)
            if profile is not None:
                self._refuse_if_below(value, float(profile[k]), k)
            if bool(value > b):
                return k
        return cap

    def _profile(self, values: npt.NDArray[np.float64], relation: Relation, kmax: int) -> npt.NDArray[np.float64] | None:
        if self.query.kind not in PTR_KINDS or (self.query.kind != "count" and not self.query.bounded):
            return None
        return ls_profile(self.query, values, kmax, relation)

    def _refuse_if_below(self, value: sympy.Expr, true_ls: float, k: int) -> None:
        true = Fraction(true_ls)
        if bool(value < sympy.Rational(true.numerator, true.denominator)):
            raise InvalidArgument(
                "LocalSensAtDistance", "formula", self.formula,
                f"is below the query's true local sensitivity at distance k={k} on this data (a privacy bug): refused",
            )

    def spot_check(self, values: npt.NDArray[np.float64], relation: Relation, ks: tuple[int, ...]) -> None:
        """Refuse a formula below dpalg's exact LS_k at the given k (no data in the message)."""
        profile = self._profile(values, relation, max(ks))
        if profile is None:
            return
        for k in ks:
            self._refuse_if_below(self.evaluate(k, int(values.size)), float(profile[k]), k)


@functools.lru_cache(maxsize=256)
def _parsed(formula: str, params: tuple[tuple[str, Fraction], ...]) -> sympy.Expr:
    local = {name: sympy.Rational(v.numerator, v.denominator) for name, v in params} | {
        "k": sympy.Symbol("k"), "n": sympy.Symbol("n", integer=True, nonnegative=True),
        "lower": sympy.Symbol("lower", real=True), "upper": sympy.Symbol("upper", real=True),
    }
    return safe_parse(formula, local, "LocalSensAtDistance", "formula")



# --- ProposeTest -------------------------------------------------------------------


def _target(value: Query | LocalSensAtDistance) -> Query | LocalSensAtDistance:
    query = value.query if isinstance(value, LocalSensAtDistance) else value
    if not isinstance(query, Query):
        raise InvalidArgument("ProposeTest", "target", type(value).__name__, "must be a Query or a LocalSensAtDistance")
    if query.kind not in PTR_KINDS:
        raise InvalidArgument("ProposeTest", "target", query, f"kind must be one of {PTR_KINDS}")
    if query.kind != "count":
        query.require_bounds("ProposeTest")
    if query.user is not None:
        raise InvalidArgument("ProposeTest", "target", query, "must be row-level")
    return value


def _pt_bound(value: ExactLike) -> Fraction:
    return positive_param("ProposeTest", "bound", value)


def _pt_eps(value: ExactLike) -> Fraction:
    return positive_param("ProposeTest", "epsilon", value)


def _pt_delta(value: ExactLike) -> Fraction:
    return _delta("ProposeTest", value)


def _pt_relation(value: str) -> Relation:
    return relation_param("ProposeTest", value)


def _pt_k(value: int | None) -> int | None:
    return granularity_param("ProposeTest", value)


def _float_error(query: Query) -> Fraction:
    """Bound on the float error of evaluating the query (fsum-based means; exact order statistics)."""
    if query.kind in ("mean", "trimmed_mean"):
        lower, upper = query.require_bounds("ProposeTest")
        return max(abs(lower), abs(upper)) / 2**49
    return Fraction(0)


def exact_value(query: Query, values: npt.NDArray[np.float64]) -> float:
    """The statistic with means by ``math.fsum`` (error ≤ 2^-51·max|bound|)."""
    from dpalg.queries import evaluate_values

    n = values.size
    if query.kind == "mean" and n:
        return math.fsum(values.tolist()) / n
    if query.kind == "trimmed_mean" and n:
        assert query.trim is not None
        drop = (query.trim.numerator * n) // query.trim.denominator
        kept = np.sort(values)[drop : n - drop]
        if kept.size:
            return math.fsum(kept.tolist()) / kept.size
    return evaluate_values(query, values)


@final
@attrs.frozen
class ProposeTest(AbstractPrimitive[ApproxDP]):
    """Propose-test-release: release f(x) + noise scaled to a proposed LS bound, or ⊥.

    1. γ = the distance from x to the nearest dataset whose local sensitivity
       exceeds ``bound`` — the smallest k with LS_k(x) > bound (dpalg's exact
       LS_k, or a :class:`LocalSensAtDistance` formula), capped by
       :func:`ptr_cap`;
    2. if γ + Z ≤ ln(1/δ)/ε with Z discrete Laplace of scale 1/ε, release ⊥;
    3. else release f(x) + Lap((bound + 2^k + e)/ε) on the lattice of multiples
       of 2^k (exact discrete Laplace; 2^k accounts for lattice rounding and e
       for the float evaluation of means).

    Args:
        target: the query (``Query.mean("age") | Clip(0, 100)`` …) or a
            :class:`LocalSensAtDistance` carrying a user formula for LS_k.
        bound: the proposed bound b > 0 on the local sensitivity.
        epsilon: ε > 0 (spent twice: test and release).
        delta: δ in (0, 1).
        relation: ``"add_remove"`` (default); ``"substitution"`` only for
            ``Query.count()`` (see :func:`dpalg.mechanisms._common.require_fixed_n`).

    Privacy guarantee:
        (2ε, δ)-DP under the stated relation for one row (Dwork–Lei 2009;
        seed 003, Theorem "PTR is (2ε, δ)-DP"): the test is ε-DP because γ has
        sensitivity 1; when LS(x) > b, γ = 0 and the release happens with
        probability < δ; otherwise both x and its neighbour have local
        sensitivity ≤ b and the release is ε-DP. The returned value is
        :data:`dpalg.BOTTOM` when the test fails.
    """

    target: Query | LocalSensAtDistance = attrs.field(converter=_target)
    bound: Fraction = attrs.field(converter=_pt_bound)
    epsilon: Fraction = attrs.field(converter=_pt_eps)
    delta: Fraction = attrs.field(converter=_pt_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_pt_relation)
    granularity: int | None = attrs.field(default=None, converter=_pt_k)

    def __attrs_post_init__(self) -> None:
        require_fixed_n("ProposeTest", self.query, self.relation)

    @property
    def query(self) -> Query:
        """The query being released."""
        return self.target.query if isinstance(self.target, LocalSensAtDistance) else self.target

    @property
    def neighbouring(self) -> Neighbouring:
        """Row-level under ``relation``."""
        return self.query.neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(2ε, δ): test ε + release ε, failure probability δ."""
        notes = self.target.notes() if isinstance(self.target, LocalSensAtDistance) else ()
        return PrivacyClaim(
            ApproxDP(2 * self.epsilon, self.delta),
            "propose-test-release, threshold ln(1/delta)/eps (Dwork-Lei 2009; seed 003 Thm: (2eps, delta)-DP)",
            (("bound", str(self.bound)), ("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("relation", self.relation)),
            notes,
        )

    def lattice_k(self) -> int:
        """The lattice exponent k (default: about 2^-20 of the release noise scale)."""
        return self.granularity if self.granularity is not None else floor_log2(self.bound / self.epsilon) - 20

    def release_scale(self) -> Fraction:
        """The Laplace scale of the release in real units: (b + 2^k + 2e)/ε."""
        return (self.bound + Fraction(2) ** self.lattice_k() + 2 * _float_error(self.query)) / self.epsilon

    def distance(self, values: npt.NDArray[np.float64]) -> int:
        """γ, the (capped) distance to instability. Not private on its own."""
        cap = ptr_cap(self.epsilon, self.delta)
        if isinstance(self.target, LocalSensAtDistance):
            return self.target.distance(values, self.bound, self.relation, cap)
        return distance_to_instability(self.query, values, float(self.bound), self.relation, cap=cap)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the noisy value (a multiple of 2^k)."""
        values = self.query.values(data)
        if not ptr_test_passes(self.distance(values), self.epsilon, self.delta, rng):
            return BOTTOM
        value = exact_value(self.query, values)
        out = lattice_noise(np.array([value], dtype=np.float64), k=self.lattice_k(), kind="laplace", scale=self.release_scale(), rng=rng)
        return float(out[0])


# --- PTR for the mode -----------------------------------------------------------


def _mode_query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind != "mode" or value.user is not None:
        raise InvalidArgument("PTRMode", "query", value, "must be a row-level Query.mode(column)")
    return value


def _pm_eps(value: ExactLike) -> Fraction:
    return positive_param("PTRMode", "epsilon", value)


def _pm_delta(value: ExactLike) -> Fraction:
    return _delta("PTRMode", value)


def _pm_relation(value: str) -> Relation:
    return relation_param("PTRMode", value)


@final
@attrs.frozen
class PTRMode(AbstractPrimitive[ApproxDP]):
    """The mode by propose-test-release with proposed bound 0 (seed 003).

    γ = the number of row changes before the mode can change; if
    γ + Z ≤ ln(1/δ)/ε (Z discrete Laplace, scale 1/ε) release ⊥, else the exact
    mode (no noise: it is locally constant).

    Privacy guarantee:
        (ε, δ)-DP under the stated relation for one row (seed 003, "PTR for the
        mode", PTR with β = 0: the release step is 0-DP where the mode is stable).
        Utility: returns the mode with probability ≥ 1 − δ when γ ≥ 2 ln(1/δ)/ε.
    """

    query: Query = attrs.field(converter=_mode_query)
    epsilon: Fraction = attrs.field(converter=_pm_eps)
    delta: Fraction = attrs.field(converter=_pm_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_pm_relation)

    def __attrs_post_init__(self) -> None:
        require_fixed_n("PTRMode", self.query, self.relation)

    @property
    def neighbouring(self) -> Neighbouring:
        """Row-level under ``relation``."""
        return self.query.neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "PTR for the mode with bound 0 (seed 003; Dwork-Lei 2009)",
            (("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("relation", self.relation)),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the mode."""
        from dpalg.queries import evaluate_values

        values = self.query.values(data)
        gamma = min(mode_gap_distance(values, self.relation), ptr_cap(self.epsilon, self.delta))
        if not ptr_test_passes(gamma, self.epsilon, self.delta, rng):
            return BOTTOM
        return evaluate_values(self.query, values)


