"""Propose-test-release (Dwork–Lei 2009), PTR for the mode, and user LS_k formulas.

Neighbouring relation: one row, add/remove (row substitution is refused for
queries over a column: it can turn a value into a missing one, changing n).

Fail closed: a user LS_k formula must satisfy the PTR neighbour
condition F(k, n) ≤ F(k+1, n′) (:mod:`dpalg.sensitivity._ptr_condition`); the
distance is min(γ_F, γ_exact), so a formula below the true LS_k neither raises nor
leaks; the work done does not depend on γ; clips up to the float range never
overflow into an exception (``docs/mechanisms/ptr.md``).

Careful with seed 002's listing (do not copy it): it claims (ε, δ) overall although
the test and the release each spend ε, and its threshold log(2/δ)/(2ε) is too low —
a dataset whose own local sensitivity exceeds the bound passes with probability
about ½·sqrt(δ/2) ≫ δ. We use the threshold ln(1/δ)/ε proved in seed 003 and
state the cost (2ε, δ). ``tests/mechanisms/test_ptr.py`` catches the seed variant.

**Accuracy** (:meth:`ProposeTest.accuracy`). ``P(⊥)`` at a stated distance is
:func:`~dpalg.mechanisms._common.ptr_test.ptr_bottom_probability`, exactly (proof
there). When it releases, the value is ``2^k (round(f/2^k) + Z')`` with ``Z'``
discrete Laplace of the public scale ``release_scale()/2^k``, drawn independently
of the test: the error given a release is the exact (1 − α) quantile of ``|Z'|``
(tight).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, Neighbouring, Relation, as_reductions
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import percent_text, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common.params import (
    floor_log2,
    granularity_param,
    positive_param,
    relation_param,
    require_fixed_n,
    unit_interval_param,
)
from dpalg.mechanisms.ptr._summary import mean_distance_and_value, order_distance_and_value
from dpalg.mechanisms._common.ptr_test import mode_accuracy, ptr_bottom_probability, ptr_cap, ptr_distance_for, ptr_test_passes
from dpalg.mechanisms._common.user_level import row_view, unit_values
from dpalg.noise import AbstractRandomness, round_to_lattice
from dpalg.noise._laplace import laplace_int
from dpalg.noise._tails import laplace_tail_quantile
from dpalg.queries import Query, clip_inside
from dpalg._bottom import BOTTOM
from dpalg.sensitivity._catalog import distance_to_instability, mode_gap_distance_counts, overflow_safe_mean
from dpalg.mechanisms._common.user_function import statistic_value
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance, float_at_most

__all__ = ["LocalSensAtDistance", "ProposeTest", "PTRMode", "ptr_test_passes", "ptr_cap"]

PTR_KINDS = ("mean", "trimmed_mean", "median", "quantile", "max", "min", "count")


def _delta(owner: str, value: ExactLike) -> Fraction:
    return unit_interval_param(owner, "delta", value)


#: the row-level kinds whose PTR profile and value come from a summary of the data (reductions seam)
_SUMMARIES = {
    "mean": mean_distance_and_value,
    "median": order_distance_and_value,
    "quantile": order_distance_and_value,
    "max": order_distance_and_value,
    "min": order_distance_and_value,
}


# --- ProposeTest -------------------------------------------------------------------


def _target(value: Query | LocalSensAtDistance) -> Query | LocalSensAtDistance:
    query = value.query if isinstance(value, LocalSensAtDistance) else value
    if not isinstance(query, Query):
        raise InvalidArgument("ProposeTest", "target", type(value).__name__, "must be a Query or a LocalSensAtDistance")
    if query.kind == "function":
        if not isinstance(value, LocalSensAtDistance):
            raise InvalidArgument("ProposeTest", "target", query,
                                  "is a user-defined statistic: wrap it as LocalSensAtDistance(query, formula) with "
                                  "your bound F(k, n) >= LS_k (dpalg has no LS_k of a user function)")
        query.require_bounds("ProposeTest")
        return value
    if query.kind not in PTR_KINDS:
        raise InvalidArgument("ProposeTest", "target", query, f"kind must be one of {PTR_KINDS} (or Query.function "
                              "inside a LocalSensAtDistance)")
    if query.user is not None:
        if isinstance(value, LocalSensAtDistance):
            raise InvalidArgument("ProposeTest", "target", query, "a LocalSensAtDistance formula must be row-level")
        row_view("ProposeTest", query)  # users' clipped totals: one value per user
    elif query.kind != "count":
        query.require_bounds("ProposeTest")
    return value


def _pt_bound(value: ExactLike) -> Fraction:
    return positive_param("ProposeTest", "bound", value)


def _pt_eps(value: ExactLike | None) -> Fraction | None:
    return None if value is None else positive_param("ProposeTest", "epsilon", value)


def _pt_eps_test(value: ExactLike | None) -> Fraction | None:
    return None if value is None else positive_param("ProposeTest", "epsilon_test", value)


def _pt_eps_release(value: ExactLike | None) -> Fraction | None:
    return None if value is None else positive_param("ProposeTest", "epsilon_release", value)


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
    """The statistic, means by an overflow-safe ``math.fsum`` (error ≤ 2^-51·max|bound|).

    Means are summed after an exact scaling by a power of two
    (:func:`~dpalg.sensitivity._catalog.overflow_safe_mean`), so a clip as wide as
    ``Clip(-1e308, 1e308)`` never raises ``OverflowError``.
    """
    from dpalg.queries import evaluate_values

    n = values.size
    if query.kind == "function":  # f̃: the user's function called totally (a public fallback on any failure)
        assert query.fn is not None
        return statistic_value(query.fn, values, float(query.fallback or 0))
    if query.kind == "mean" and n:
        return overflow_safe_mean(values)
    if query.kind == "trimmed_mean" and n:
        assert query.trim is not None
        drop = (query.trim.numerator * n) // query.trim.denominator
        kept = np.sort(values)[drop : n - drop]
        if kept.size:
            return overflow_safe_mean(kept)
    return evaluate_values(query, values)


def _laplace_on_lattice(value: float, k: int, scale: Fraction, rng: AbstractRandomness) -> float:
    """:func:`~dpalg.noise.lattice_noise` for one value (same draws), saturating an overflowing output to ±inf.

    ``lattice_k`` guarantees that the rounding and the noise scale are valid for
    every clipped value; converting the exact lattice integer back to a float is
    post-processing, and near the float range it may overflow: the output is then
    ``±inf`` instead of an ``OverflowError``.
    """
    m = int(round_to_lattice(np.array([value], dtype=np.float64), k)[0])
    total = m + int(laplace_int(scale / Fraction(2) ** k, 1, rng)[0])
    try:
        return math.ldexp(float(total), k)
    except OverflowError:
        return math.copysign(math.inf, total)


@final
@attrs.frozen(init=False, repr=False)
class ProposeTest(AbstractPrimitive[ApproxDP]):
    """Propose-test-release: release f(x) + noise scaled to a proposed LS bound, or ⊥.

    1. γ = the distance from x to the nearest dataset whose local sensitivity
       exceeds ``bound`` — the smallest k with LS_k(x) > bound from dpalg's exact
       LS_k profile, computed to :func:`ptr_cap` on every run (no early exit),
       and, with a :class:`LocalSensAtDistance` target, the smaller of that and
       the formula's distance γ_F (evaluated at every k up to the cap);
    2. if γ + Z ≤ ln(1/δ)/ε with Z discrete Laplace of scale 1/ε, release ⊥;
    3. else release f(x) + Lap((bound + 2^k + e)/ε) on the lattice of multiples
       of 2^k (exact discrete Laplace; 2^k accounts for lattice rounding and e
       for the float evaluation of means).

    Args:
        target: the query (``Query.mean("age") | Clip(0, 100)`` …) or a
            :class:`LocalSensAtDistance` carrying a user formula for LS_k.
        bound: the proposed bound b > 0 on the local sensitivity.
        epsilon: ε > 0, spent twice (test and release): the cost is 2ε. Give
            either ``epsilon`` or both ``epsilon_test`` and ``epsilon_release``.
        delta: δ in (0, 1).
        epsilon_test: ε_t > 0 for the test (keyword only; with ``epsilon_release``).
        epsilon_release: ε_r > 0 for the release; the cost is (ε_t + ε_r, δ).
        relation: ``"add_remove"`` (default); ``"substitution"`` only for
            ``Query.count()`` (see :func:`dpalg.mechanisms._common.params.require_fixed_n`).

    A user-level query with ``| ClipPerUser(L, U)`` (``Query.median(col,
    user=uid) | ClipPerUser(L, U)`` …) is taken over the users' clipped totals:
    adding or removing one user adds or removes one value in [L, U], so γ and
    the exact LS_k profile of the row-level query with ``Clip(L, U)`` over the
    totals are exact for it (:func:`dpalg.mechanisms._common.user_level.row_view`).

    Privacy guarantee:
        (ε_t + ε_r, δ)-DP under the stated relation for one row, or one user
        with all their rows for a user-level query (Dwork–Lei 2009; seed 003,
        Theorem "PTR is (2ε, δ)-DP", whose proof composes the two stages and
        holds stage by stage): the test, γ + Lap(1/ε_t) against
        ln(1/δ)/ε_t, is ε_t-DP because γ has sensitivity 1; when LS(x) > b,
        γ = 0 and the release happens with probability < δ; otherwise both x and
        its neighbour have local sensitivity ≤ b and the release, Lap(b/ε_r),
        is ε_r-DP. With ``epsilon`` alone, ε_t = ε_r = ε (cost 2ε). The
        returned value is :data:`dpalg.BOTTOM` when the test fails.

    Examples:
        >>> from dpalg import Query, Clip
        >>> ProposeTest(Query.median("x") | Clip(0, 10), bound=1, epsilon="0.5", delta="1e-6").cost()
        ApproxDP(1, '1/1000000')
        >>> ProposeTest(Query.median("x") | Clip(0, 10), bound=1, delta="1e-6",
        ...             epsilon_test="0.2", epsilon_release="0.8").cost()
        ApproxDP(1, '1/1000000')
    """

    target: Query | LocalSensAtDistance = attrs.field(converter=_target)
    bound: Fraction = attrs.field(converter=_pt_bound)
    epsilon: Fraction | None = attrs.field(converter=_pt_eps)
    delta: Fraction = attrs.field(converter=_pt_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_pt_relation)
    granularity: int | None = attrs.field(default=None, converter=_pt_k)
    epsilon_test: Fraction | None = attrs.field(default=None, converter=_pt_eps_test)
    epsilon_release: Fraction | None = attrs.field(default=None, converter=_pt_eps_release)

    def __init__(
        self,
        target: Query | LocalSensAtDistance,
        bound: ExactLike,
        epsilon: ExactLike | None = None,
        delta: ExactLike | None = None,
        relation: str = "add_remove",
        granularity: int | None = None,
        *,
        epsilon_test: ExactLike | None = None,
        epsilon_release: ExactLike | None = None,
    ) -> None:
        split = (epsilon_test is not None, epsilon_release is not None)
        if epsilon is None and split != (True, True):
            raise InvalidArgument("ProposeTest", "epsilon", epsilon,
                                  "is required (spent twice) unless both epsilon_test and epsilon_release are given")
        if epsilon is not None and any(split):
            raise InvalidArgument("ProposeTest", "epsilon_test" if split[0] else "epsilon_release",
                                  epsilon_test if split[0] else epsilon_release,
                                  "cannot be combined with epsilon (give epsilon, or both epsilon_test and epsilon_release)")
        if delta is None:
            raise InvalidArgument("ProposeTest", "delta", delta, "is required: a number in (0, 1)")
        self.__attrs_init__(target, bound, epsilon, delta, relation, granularity, epsilon_test, epsilon_release)

    def __repr__(self) -> str:
        """As attrs would print it, without the split fields when unused (a certificate's
        ``plan_repr`` of a one-epsilon node reads as before they existed)."""
        parts = [f"target={self.target!r}", f"bound={self.bound!r}"]
        if self.epsilon is not None:
            parts.append(f"epsilon={self.epsilon!r}")
        parts += [f"delta={self.delta!r}", f"relation={self.relation!r}", f"granularity={self.granularity!r}"]
        if self.epsilon is None:
            parts += [f"epsilon_test={self.epsilon_test!r}", f"epsilon_release={self.epsilon_release!r}"]
        return f"ProposeTest({', '.join(parts)})"

    @property
    def eps_test(self) -> Fraction:
        """ε of the test (``epsilon_test``, or ``epsilon``)."""
        eps = self.epsilon_test if self.epsilon is None else self.epsilon
        assert eps is not None  # __init__ requires one of the two forms
        return eps

    @property
    def eps_release(self) -> Fraction:
        """ε of the release (``epsilon_release``, or ``epsilon``)."""
        eps = self.epsilon_release if self.epsilon is None else self.epsilon
        assert eps is not None
        return eps

    def __attrs_post_init__(self) -> None:
        require_fixed_n("ProposeTest", self.stat_query, self.relation)
        if self.query.user is not None and self.relation != "add_remove":
            raise InvalidArgument("ProposeTest", "relation", self.relation, "must be 'add_remove' for a user-level query")
        if self.granularity is not None and self.granularity < self._min_lattice_k():
            raise InvalidArgument("ProposeTest", "granularity", self.granularity,
                                  f"must be >= {self._min_lattice_k()} for these bounds, bound and epsilon "
                                  "(the lattice must hold every clipped value and the noise scale / 2**k <= 2**52)")

    @property
    def query(self) -> Query:
        """The query being released."""
        return self.target.query if isinstance(self.target, LocalSensAtDistance) else self.target

    @property
    def stat_query(self) -> Query:
        """The row-level query the LS profiles are taken of (users' clipped totals at user level)."""
        return row_view("ProposeTest", self.query)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row (one user, for a user-level query) under ``relation``."""
        return self.query.neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε_t + ε_r, δ): test ε_t + release ε_r (2ε with ``epsilon``), failure probability δ."""
        notes = self.target.notes() if isinstance(self.target, LocalSensAtDistance) else ()
        if self.epsilon is not None:
            return PrivacyClaim(
                ApproxDP(2 * self.epsilon, self.delta),
                "propose-test-release, threshold ln(1/delta)/eps (Dwork-Lei 2009; seed 003 Thm: (2eps, delta)-DP)",
                (("bound", str(self.bound)), ("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("relation", self.relation)),
                notes,
            )
        return PrivacyClaim(
            ApproxDP(self.eps_test + self.eps_release, self.delta),
            "propose-test-release, test eps_test with threshold ln(1/delta)/eps_test, release eps_release "
            "(Dwork-Lei 2009; seed 003 Thm, stage by stage: (eps_test + eps_release, delta)-DP)",
            (("bound", str(self.bound)), ("epsilon_test", str(self.eps_test)), ("epsilon_release", str(self.eps_release)),
             ("delta", str(self.delta)), ("relation", self.relation)),
            notes,
        )  # fmt: skip

    def lattice_k(self) -> int:
        """The lattice exponent k (default: about 2^-20 of the release noise scale).

        Never below :meth:`_min_lattice_k`, so rounding any clipped value to the
        lattice and drawing the noise cannot fail, whatever the data.
        """
        if self.granularity is not None:
            return self.granularity
        return max(floor_log2(self.bound / self.eps_release) - 20, self._min_lattice_k())

    def _min_lattice_k(self) -> int:
        """The smallest k with value / 2^k finite for every clipped value and scale / 2^k <= 2^52."""
        base = (self.bound + 2 * _float_error(self.stat_query)) / self.eps_release
        k_noise = floor_log2(base) + 1 - 51  # (base + 2^k/ε)/2^k <= 2^51 + 1/ε
        q = self.stat_query
        top = max(abs(q.lower or Fraction(0)), abs(q.upper or Fraction(0)), Fraction(1))
        k_round = floor_log2(top) + 1 - 1000  # |value| / 2^k < 2^1000
        return max(k_noise, k_round)

    def release_scale(self) -> Fraction:
        """The Laplace scale of the release in real units: (b + 2^k + 2e)/ε."""
        return (self.bound + Fraction(2) ** self.lattice_k() + 2 * _float_error(self.stat_query)) / self.eps_release

    def distance(self, values: npt.NDArray[np.float64]) -> int:
        """γ, the (capped) distance to instability. Not private on its own."""
        cap = ptr_cap(self.eps_test, self.delta)
        if isinstance(self.target, LocalSensAtDistance):
            return self.target.distance(values, self.bound, self.relation, cap)
        return distance_to_instability(self.stat_query, values, float_at_most(self.bound), self.relation, cap=cap)

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, distance: int | None = None) -> Accuracy:
        """The (1 − ``alpha``) error when it releases, and P(⊥) at a stated distance (no data touched).

        Given a release, the error is the exact (1 − α) quantile of the discrete
        Laplace release noise (tight). ``distance``: a public lower bound on the
        data's distance to instability at ``bound``; the note then gives
        ``P(⊥) = P[Z <= ceil(ln(1/δ)/ε) − 1 − d]``, Z discrete Laplace of scale
        1/ε, exactly (rounded up; Dwork–Lei 2009). Proof in the module docstring
        and :mod:`dpalg.mechanisms._common.ptr_test`; choose ``bound`` with
        :func:`~dpalg.mechanisms.ptr._guidance.suggest_ptr_bound`.
        """
        return ptr_accuracy(self, alpha, distance)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the noisy value (a multiple of 2^k)."""
        summary = _SUMMARIES.get(self.query.kind) if self.query.user is None else None
        if summary is not None and not isinstance(self.target, LocalSensAtDistance):
            # row level: the profile and the value from a data summary (exact total and extremes, or an order window)
            cap = ptr_cap(self.eps_test, self.delta)
            gamma, value = summary(self.query, self.relation, data, float_at_most(self.bound), cap)
            if not ptr_test_passes(gamma, self.eps_test, self.delta, rng):
                return BOTTOM
            return _laplace_on_lattice(value, self.lattice_k(), self.release_scale(), rng)
        values = unit_values(self.query, data, rng)
        if self.query.kind == "function":
            # f̃ is computed before the test (the same work whatever γ is), and clamped to ±2^(k+999):
            # a public 1-Lipschitz map (LS never grows) that keeps value / 2^k finite on the lattice
            top = math.ldexp(1.0, min(self.lattice_k() + 999, 1023))
            value = min(max(exact_value(self.stat_query, values), -top), top)
        if not ptr_test_passes(self.distance(values), self.eps_test, self.delta, rng):
            return BOTTOM
        if self.query.kind != "function":
            value = exact_value(self.stat_query, values)
        return _laplace_on_lattice(value, self.lattice_k(), self.release_scale(), rng)


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

    def accuracy(
        self, alpha: ExactLike = Fraction(1, 20), *, distance: int | None = None, gap: int | None = None
    ) -> Accuracy:
        """Error 0 when it releases (the exact mode), and P(⊥) at a stated distance or gap (no data touched).

        ``distance``: a public lower bound on the mode's distance to instability
        (:func:`~dpalg.sensitivity.mode_gap_distance`); or ``gap``: one on the
        mode's count minus the runner-up's (``γ >= gap − 1``, or ``ceil(gap/2) − 1``
        under substitution). ``P(⊥) = P[Z <= ceil(ln(1/δ)/ε) − 1 − γ]`` exactly, Z
        discrete Laplace of scale 1/ε (seed 003 "PTR for the mode"; Dwork–Lei
        2009). Proof in :mod:`dpalg.mechanisms._common.ptr_test`.
        """
        return ptr_mode_accuracy(self, alpha, distance, gap)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the mode (smallest value among ties), from the histogram of the query's values (:func:`mode_histogram`)."""
        uniq, counts = mode_histogram(self.query, data)
        gamma = min(mode_gap_distance_counts(uniq, counts, self.relation), ptr_cap(self.epsilon, self.delta))
        if not ptr_test_passes(gamma, self.epsilon, self.delta, rng):
            return BOTTOM
        return float(uniq[int(np.argmax(counts))]) if uniq.size else float("nan")


def mode_histogram(query: Query, data: Dataset) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """The distinct values of ``query.values(data)`` (ascending) and their counts: all the mode and its gap depend on.

    A column of bools, ints or floats is read through the reductions seam's
    ``key_histogram`` (on Spark and polars, grouped on the backend: one row per
    distinct value reaches the driver, in jobs under the result cap): a present
    value is a key (``-0.0`` is ``0.0``; missing values are no key, as they are
    no number), read back as its float; with a clip, the keys are clipped as the
    values are (``np.clip``, then :func:`~dpalg.queries.clip_inside`) and merged.
    The multiset is that of ``query.values(data)``, so the histogram is
    ``np.unique(values, return_counts=True)``. Other columns read the values.

    Without a clip, a backend that can sort its groups (Spark: ``top_key_counts``)
    gives only the two keys with the largest counts (ties: the smaller key first).
    The mode and :func:`~dpalg.sensitivity._catalog.mode_gap_distance_counts` are the same on
    those two as on the whole histogram: the mode is the smallest key of the largest
    count ``c1``; the runner-up term ``min_j (c1 − c_j + [j after the mode])`` is
    reached by another key of count ``c1`` (after the mode: 1) or else by the
    smallest key of the second count ``c2`` (``c1 − c2``, plus 1 when that key, and so
    every key of count ``c2``, comes after the mode); any key of a smaller count gives
    at least ``c1 − c2 + 1`` (``tests/mechanisms/test_ptr_mode_top.py``).
    """
    column = query.column
    if column is None or data.column_dtype(column).kind not in "biuf":
        values = query.values(data)
        uniq, counts = np.unique(values, return_counts=True)
        return uniq, counts.astype(np.int64)
    reductions = as_reductions(data)
    top = getattr(reductions, "top_key_counts", None) if query.lower is None and query.upper is None else None
    got = top(column, 2) if callable(top) else None  # a backend that sorts groups where the data is (Spark)
    keys, key_counts = got if got is not None else reductions.key_histogram(column)
    floats = np.array([float(k) for k in keys], dtype=np.float64)
    if query.lower is not None and query.upper is not None:
        floats = clip_inside(np.clip(floats, float(query.lower), float(query.upper)), query.lower, query.upper)
    uniq, inverse = np.unique(floats, return_inverse=True)
    counts = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(counts, inverse, key_counts)
    return uniq, counts


def ptr_accuracy(node: ProposeTest, alpha: ExactLike, distance: int | None) -> Accuracy:
    """The (1 − α) error of :class:`ProposeTest` when it releases, and ``P(⊥)`` at a stated distance."""
    owner = "ProposeTest.accuracy"
    a = alpha_param(owner, alpha)
    k = node.lattice_k()
    step = Fraction(2) ** k
    units = node.release_scale() / step
    m, tight = laplace_tail_quantile(units, a)
    noise = f"discrete Laplace, scale {up_text(node.release_scale())}" + (f" (lattice step 2**{k})" if k != 0 else "")
    bound = up_text(node.bound)
    if distance is None:
        need = ptr_distance_for(node.eps_test, node.delta, a)
        reach = f"; P(⊥) <= {percent_text(a)} once it is >= {need}" if need is not None else ""
        notes: tuple[str, ...] = (
            f"P(⊥) depends on the data's distance to instability at bound {bound}{reach}; pass distance= for a number",
        )
    else:
        if isinstance(distance, bool) or not isinstance(distance, int) or distance < 0:
            raise InvalidArgument(owner, "distance", distance, "must be an int >= 0 (a public lower bound on the distance)")
        p = ptr_bottom_probability(node.eps_test, node.delta, distance)
        notes = (f"P(⊥) <= {up_text(p)} if the distance to instability at bound {bound} (capped at n + 2) is at least {distance}",)
    return Accuracy(a, m * step, "absolute", noise, tight, "it releases (no ⊥)", notes, lattice_k=k)


def ptr_mode_accuracy(node: PTRMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`PTRMode`: error 0 when it releases; ``P(⊥)`` at a stated distance or gap (proof: :mod:`dpalg.mechanisms._common.ptr_test`)."""
    return mode_accuracy("PTRMode.accuracy", node.epsilon, node.delta, node.relation, alpha, distance, gap, of="mode of the data")
