"""SmoothBound: release an order statistic with noise scaled to its smooth sensitivity.

``f(x) + (S(x)/α)·Z`` with ``S`` a β-smooth upper bound on the local sensitivity
(NRS07) and ``Z`` an admissible noise; dpalg chooses ``(α, β)`` from the privacy
target (:mod:`dpalg.noise._admissible`):

* :class:`SmoothBound` -- Laplace noise, (ε, δ)-DP: ``α = ε/2`` and a rational
  ``β ≤ ε/(2 ln(2/δ))`` (rounded *down*: a bound that is smooth for a smaller β is
  smooth for the theorem's β), noise scale ``2S'/ε``;
* :class:`SmoothBoundCauchy` -- generalised Cauchy noise ``∝ 1/(1 + |z|^γ)``, pure
  ε-DP: NRS07's ``α = β = ε/(2(γ+1))`` (γ = 2: ``ε/6``, scale ``6S'/ε``) or the
  ``"tight"`` constants derived in the docs (γ = 2: ``α = β = ε/2``).

Release path (no floating-point noise, Mironov 2012): ``S`` is computed by
:func:`~dpalg.sensitivity.smooth_sensitivity_quantile` as a float that is a rigorous
upper bound and itself β-smooth, taken exactly as a rational (every float is one);
``S' = S + 2^k`` pays for rounding ``f(x)`` to the lattice ``2^k ℤ``; the noise is the
*exact* law of ``round(S'(x) Z/(α 2^k))`` (:meth:`AbstractAdmissibleNoise.sample_lattice`).
The output ``2^k (round(f(x)/2^k) + N)`` is the lattice rounding of the ideal
continuous release for ``g = round(f)``, whose local sensitivity is at most
``LS_f + 2^k ≤ S'``: post-processing, so the node costs exactly what the theorem
states, with no sampling slack. Clamping the result to ``[lower, upper]`` (default)
is post-processing too.

The zCDP noises of Bun–Steinke 2019 (LLN, ULN, arsinh-normal) are **not** offered
here: they have no exact sampler in dpalg (they need an exact lazy continuous
Gaussian), and a fixed-precision inversion would only give approximate zCDP.

Queries: ``median``, ``quantile``, ``max`` and ``min`` of a clipped column (their
value and smooth sensitivity are exact order statistics), and the clipped ``mean``:
its value is the exact mean of the lattice terms of
:func:`~dpalg.noise.exact_clipped_sum`, and ``S`` the truncated bound
``max(max_{k≤K} e^{−kβ₀}(LS_k + E), e^{−(K+1)β₀}(GS + E))`` over its exact add/remove
``LS_k`` profile, K public, rounded up (:mod:`dpalg.mechanisms.smooth._profile`).
The clipped ``trimmed_mean``: the exact truncated smooth bound of a padded function
``g ≥ LS`` in O(K²) (:mod:`dpalg.mechanisms.smooth._trimmed`). ``count`` and ``sum``:
``S = GS`` (their ``LS_k`` is the global sensitivity at every x, so the Laplace node
is better; :mod:`dpalg.mechanisms.smooth._kinds`). A user-defined statistic inside
:class:`~dpalg.mechanisms.LocalSensAtDistance`: ``F(0, ·)`` smoothed over n
(:mod:`dpalg.mechanisms.smooth._formula`). Other kinds are refused.
Proof sketch and the lemma composition: ``docs/mechanisms/smooth_sensitivity.md``.

**Accuracy** (:meth:`SmoothBound.accuracy`). The output is ``2^k (round(f/2^k) + N)``
with ``N`` the exact law of ``round(b·Z)``, ``b = (Ŝ(x) + 2^k)/(α_c 2^k)``: its tail
is :func:`~dpalg.mechanisms._common.accuracy.rounded_noise_quantile` (proof there),
increasing in ``b``, so a public upper bound ``s >= Ŝ(x)`` gives the bound ``2^k m``
at ``b = (s + 2^k)/(α_c 2^k)``. Clamping to ``[l, u]`` moves the output towards
``f(x) ∈ [l, u]`` and never increases the error; with it the error is always at
most ``u − l``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal, Union, final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring, Relation, SumSpec, as_reductions
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import rounded_noise_quantile, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms._common.params import float_floor, granularity_param, positive_param, relation_param, require_fixed_n, unit_interval_param
from dpalg.mechanisms._common.user_level import row_view, unit_values
from dpalg.noise import AbstractRandomness, round_to_lattice
from dpalg.noise._fixed_point import lattice_bounds
from dpalg.noise._admissible import AbstractAdmissibleNoise, Admissibility, CauchyNoise, LaplaceNoise
from dpalg.queries import Query, quantile_index
from dpalg.sensitivity._smooth import ORDER_KINDS, order_statistic
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms._common.smooth_quantile import auto_granularity, check_range, smooth_release
from dpalg.mechanisms.smooth._formula import envelope_of
from dpalg.mechanisms.smooth._kinds import CONSTANT_KINDS, constant_center_and_scale, constant_sensitivity, function_center_and_scale
from dpalg.mechanisms.smooth._trimmed import trimmed_center_and_scale, trimmed_center_and_scale_values
from dpalg.mechanisms.smooth._profile import MeanSummary, lattice_terms, mean_lattice_exponent, mean_smooth_bound, mean_summary_from_values
from dpalg.sensitivity._smooth_window import smooth_from_window, window_levels, window_ranks

__all__ = [
    "PROFILE_KINDS", "SmoothBound", "SmoothBoundCauchy", "SmoothTarget", "mean_center_and_scale",
]

#: kinds with an exact LS_k profile the nodes take through :mod:`dpalg.mechanisms.smooth._profile`
PROFILE_KINDS = ("mean", "trimmed_mean")
_REFUSED: dict[str, str] = {}

#: what a smooth-sensitivity node releases: a catalog query, or a user function with its LS formula
SmoothTarget = Union[Query, LocalSensAtDistance]


def _query(owner: str, value: SmoothTarget) -> SmoothTarget:
    if isinstance(value, LocalSensAtDistance):
        if value.query.kind != "function":
            raise InvalidArgument(owner, "query", value, "takes a LocalSensAtDistance only around a Query.function: for a "
                                  "catalog query pass the query itself (dpalg's exact LS_k profile is at least as tight "
                                  "and needs no promise)")
        envelope_of(value, owner)  # F(0, n) proven non-increasing, F(0, 0) finite: refused otherwise
        return value
    if isinstance(value, Query) and value.kind == "function":
        raise InvalidArgument(owner, "query", value, "is a user-defined statistic: wrap it as LocalSensAtDistance(query, "
                              "formula) with your bound F(k, n) >= LS_k (dpalg has no LS_k of a user function)")
    if isinstance(value, Query) and value.kind in CONSTANT_KINDS:
        if value.user is not None:
            raise InvalidArgument(owner, "query", value, f"a user-level {value.kind} has LS_k = GS at every x: use the "
                                  "Laplace node with its user-level bounds")
        if value.kind == "sum":
            lower, upper = value.require_bounds(owner)
            if lower >= upper:
                raise InvalidArgument(owner, "query", value, "needs a clip range with lower < upper")
        return value
    if isinstance(value, Query) and value.kind in PROFILE_KINDS:
        view = row_view(owner, value)
        lower, upper = view.require_bounds(owner)
        if lower >= upper:
            raise InvalidArgument(owner, "query", value, "needs a clip range with lower < upper")
        return value
    if isinstance(value, Query) and value.kind in _REFUSED:
        raise InvalidArgument(owner, "query", value, f"kind {value.kind!r} {_REFUSED[value.kind]} (relation 'add_remove')")
    kinds = ORDER_KINDS + PROFILE_KINDS + CONSTANT_KINDS
    if not isinstance(value, Query) or value.kind not in ORDER_KINDS:
        raise InvalidArgument(owner, "query", value, f"must be a clipped Query of kind {kinds}, or a "
                              "LocalSensAtDistance around a Query.function")
    view = row_view(owner, value)  # users' clipped totals at user level: one value per user
    order_statistic(view, owner)  # bounds and row level
    lower, upper = view.require_bounds(owner)
    if lower >= upper:
        raise InvalidArgument(owner, "query", value, "needs a clip range with lower < upper")
    return value


def mean_center_and_scale(
    summary: MeanSummary, lower: Fraction, upper: Fraction, constants: Admissibility, k: int
) -> tuple[int, Fraction]:
    """``(a, scale)`` of the clipped mean from its lattice summary (private; never released).

    The statistic is the exact mean of the lattice terms ``t_i ∈ [L, U]`` on ``2^{k_m}``
    (:func:`~dpalg.mechanisms.smooth._profile.mean_lattice_exponent`), the midpoint
    ``(L + U)/2`` on empty data: a clipped mean over ``[L·2^{k_m}, U·2^{k_m}]`` of the
    per-row terms, so its exact profile applies. ``Ŝ`` is the truncated bound at the
    public ``K`` of :func:`window_levels`; ``S' = Ŝ + 2^k`` pays for rounding to ``2^k``.
    """
    km = mean_lattice_exponent(lower, upper)
    lo_u, hi_u = lattice_bounds(lower, upper, km, "SmoothBound")
    beta = float_floor(constants.beta)
    levels = window_levels(beta, lower, upper, k)
    s_units = mean_smooth_bound(summary, lo_u, hi_u, beta, levels)
    unit = Fraction(2) ** km
    s_prime = Fraction(s_units) * unit + Fraction(2) ** k  # exact: every float is a rational
    mean = Fraction(summary.total, summary.n) if summary.n else Fraction(lo_u + hi_u, 2)
    return round(mean * unit / Fraction(2) ** k), s_prime / constants.alpha


def _mean_summary(node: SmoothBound | SmoothBoundCauchy, data: Dataset, rng: AbstractRandomness) -> MeanSummary:
    """The mean's summary: one exact lattice sum and one extremes pass (row level), or the users' totals."""
    lower, upper = node.stat_query.require_bounds(type(node).__name__)
    km = mean_lattice_exponent(lower, upper)
    levels = window_levels(float_floor(node.constants().beta), lower, upper, node.lattice_k())
    if node.base_query.user is not None:
        return mean_summary_from_values(unit_values(node.base_query, data, rng), lower, upper, km, levels + 2)
    assert node.base_query.column is not None
    reductions = as_reductions(data)
    total = reductions.clipped_sums([SumSpec(node.base_query.column, lower, upper, km)])[0]
    n, smallest, largest = reductions.extremes(node.base_query.column, lower, upper, levels + 2)
    return MeanSummary(n, int(total.total), lattice_terms(smallest, lower, upper, km), lattice_terms(largest, lower, upper, km))


def _trimmed_center_and_scale(node: SmoothBound | SmoothBoundCauchy, data: Dataset, rng: AbstractRandomness) -> tuple[int, Fraction]:
    """The trimmed mean's ``(a, scale)``: through the reductions seam (row level) or over the users' totals."""
    c, k = node.constants(), node.lattice_k()
    if node.base_query.user is None:
        return trimmed_center_and_scale(node.stat_query, data, c, k)
    lower, upper = node.stat_query.require_bounds(type(node).__name__)
    trim = node.stat_query.trim
    assert trim is not None
    return trimmed_center_and_scale_values(unit_values(node.base_query, data, rng), lower, upper, trim, c, k)


def _windowed_center_and_scale(node: SmoothBound | SmoothBoundCauchy, data: Dataset) -> tuple[int, Fraction]:
    """:func:`center_and_scale` of a row-level query from an order window of public width.

    Asks the reductions seam for the present count and the sorted values within
    ``2K + 3`` ranks of the quantile (``K`` from :func:`window_levels`: public), and
    takes the truncated bound ``Ŝ_K`` (proof in :mod:`dpalg.sensitivity._smooth_window`).
    """
    q, lower, upper, negate = order_statistic(node.stat_query, type(node).__name__)
    col_lower, col_upper = node.stat_query.require_bounds(type(node).__name__)
    assert node.base_query.column is not None
    reductions = as_reductions(data)
    n = reductions.count(node.base_query.column)
    constants, k = node.constants(), node.lattice_k()
    beta = float_floor(constants.beta)
    levels = window_levels(beta, lower, upper, k)
    first, last = window_ranks(n, q, levels)
    if negate:  # min = -max(-x): ranks of -x are the reversed ranks of x
        w = reductions.order_window(node.base_query.column, col_lower, col_upper, n - 1 - last, n - 1 - first)
        values = -w.values[::-1]
        start = n - w.first - values.size
    else:
        w = reductions.order_window(node.base_query.column, col_lower, col_upper, first, last)
        values, start = w.values, w.first
    s_hat = smooth_from_window(n, start, values, q, lower, upper, beta, node.relation, levels)
    s_prime = Fraction(s_hat) + Fraction(2) ** k  # exact: every float is a rational
    value = float(values[quantile_index(q, n) - start]) if n else float(lower)
    return int(round_to_lattice(np.array([value]), k)[0]), s_prime / constants.alpha


def _to_float(value: Fraction) -> float:
    """A lattice output as a float (post-processing); beyond the float range, ±inf instead of a raise."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _release_unclamped(node: SmoothBound | SmoothBoundCauchy, data: Dataset, rng: AbstractRandomness) -> object:
    """Count, sum and user functions: no clip range holds their value, so no clamp."""
    c, k = node.constants(), node.lattice_k()
    if isinstance(node.query, LocalSensAtDistance):
        env = envelope_of(node.query, type(node).__name__)
        beta = float_floor(c.beta)
        levels = window_levels(beta, Fraction(0), Fraction(env.top), k)
        a, scale = function_center_and_scale(node.stat_query, env, data, c, k, beta, levels)
    else:
        a, scale = constant_center_and_scale(node.stat_query, node.relation, data, c, k)
    units = int(node.noise().sample_lattice(1, k, rng, scale=scale)[0])
    return _to_float(Fraction(a + units) * Fraction(2) ** k)


def _release_query(node: SmoothBound | SmoothBoundCauchy, data: Dataset, rng: AbstractRandomness) -> object:
    if isinstance(node.query, LocalSensAtDistance) or node.stat_query.kind in CONSTANT_KINDS:
        return _release_unclamped(node, data, rng)
    if node.stat_query.kind in PROFILE_KINDS:
        lower, upper = node.stat_query.require_bounds(type(node).__name__)
        if node.stat_query.kind == "trimmed_mean":
            a, scale = _trimmed_center_and_scale(node, data, rng)
        else:
            a, scale = mean_center_and_scale(_mean_summary(node, data, rng), lower, upper, node.constants(), node.lattice_k())
        units = int(node.noise().sample_lattice(1, node.lattice_k(), rng, scale=scale)[0])
        value = Fraction(a + units) * Fraction(2) ** node.lattice_k()
        return float(min(max(value, lower), upper) if node.clamp else value)
    q, lower, upper, negate = order_statistic(node.stat_query, type(node).__name__)
    if node.base_query.user is None:
        a, scale = _windowed_center_and_scale(node, data)
        noise_units = int(node.noise().sample_lattice(1, node.lattice_k(), rng, scale=scale)[0])
        out = Fraction(a + noise_units) * Fraction(2) ** node.lattice_k()
        if node.clamp:
            out = min(max(out, lower), upper)
        return float(-out if negate else out)
    values = unit_values(node.base_query, data, rng)
    x = np.sort(-values if negate else values)
    out = smooth_release(x, q, lower, upper, node.relation, node.constants(), node.noise(), node.lattice_k(), rng, clamp=node.clamp)
    return float(-out if negate else out)


def _sb_query(value: SmoothTarget) -> SmoothTarget:
    return _query("SmoothBound", value)


def _sb_eps(value: ExactLike) -> Fraction:
    return positive_param("SmoothBound", "epsilon", value)


def _sb_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("SmoothBound", "delta", value)


def _sb_relation(value: str) -> Relation:
    return relation_param("SmoothBound", value)


def _sb_k(value: int | None) -> int | None:
    return granularity_param("SmoothBound", value)


class _SmoothCommon:
    """What :class:`SmoothBound` and :class:`SmoothBoundCauchy` share (a mixin, not a node)."""

    query: SmoothTarget
    relation: Relation
    granularity: int | None
    clamp: bool

    def constants(self) -> Admissibility:  # pragma: no cover - every node overrides it
        raise NotImplementedError

    def __attrs_post_init__(self) -> None:
        """Refuse, at construction, ranges and budgets the lattice release cannot serve exactly, and
        a relation other than add/remove for a user-level query (one user's rows are added or removed)."""
        owner = type(self).__name__
        lower, upper = self.scale_range()
        alpha = self.constants().alpha
        check_range(owner, lower, upper, alpha)
        if isinstance(self, SmoothBound) and self.granularity is not None:
            k_min = auto_granularity(lower, upper, alpha)
            if self.granularity < k_min:
                raise InvalidArgument(owner, "granularity", self.granularity, f"must be >= {k_min} (range of the exact Laplace sampler)")
        require_fixed_n(owner, self.stat_query, self.relation)
        if self.base_query.user is not None and self.relation != "add_remove":
            raise InvalidArgument(owner, "relation", self.relation, "must be 'add_remove' for a user-level query")

    @property
    def base_query(self) -> Query:
        """The query released (inside the LocalSensAtDistance, for a user function)."""
        return self.query.query if isinstance(self.query, LocalSensAtDistance) else self.query

    @property
    def stat_query(self) -> Query:
        """The row-level query the smooth bound is taken of (users' clipped totals at user level)."""
        return row_view(type(self).__name__, self.base_query)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row (one user, for a user-level query) under ``relation``."""
        return self.base_query.neighbouring(self.relation)

    def clamp_range(self) -> tuple[Fraction, Fraction] | None:
        """The clip range the output is clamped to, or None (clamp off; count, sum, user function)."""
        q = self.stat_query
        if not self.clamp or isinstance(self.query, LocalSensAtDistance) or q.kind in CONSTANT_KINDS:
            return None
        return q.require_bounds(type(self).__name__)

    def scale_range(self) -> tuple[Fraction, Fraction]:
        """The public range ``[a, b]`` the smooth bound lives in (``S <= 2(b − a)``): lattice and truncation."""
        owner = type(self).__name__
        if isinstance(self.query, LocalSensAtDistance):
            return Fraction(0), Fraction(envelope_of(self.query, owner).top)
        if self.stat_query.kind == "count":
            return Fraction(0), Fraction(1)
        if self.stat_query.kind == "sum":
            return Fraction(0), constant_sensitivity(self.stat_query, "add_remove")
        return self.stat_query.require_bounds(owner)

    def public_smooth_sensitivity(self) -> Fraction | None:
        """S when it does not depend on the data (count, sum: the global sensitivity), else None."""
        if isinstance(self.query, Query) and self.query.kind in CONSTANT_KINDS:
            return constant_sensitivity(self.stat_query, self.relation)
        return None

    def lattice_k(self) -> int:
        """The public lattice exponent."""
        if self.granularity is not None:
            return self.granularity
        lower, upper = self.scale_range()
        return auto_granularity(lower, upper, self.constants().alpha)

    def _notes(self) -> tuple[str, ...]:
        if isinstance(self.query, LocalSensAtDistance):
            return (*self.query.notes(), envelope_of(self.query, type(self).__name__).note())
        if self.stat_query.kind in CONSTANT_KINDS:
            return (f"{self.stat_query.kind}: LS_k = GS at every x, so S = GS (the Laplace node adds half this noise, "
                    "with delta = 0)",)
        return ()

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, smooth_sensitivity: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) error, given a public bound on the data's smooth bound (no data touched).

        The noise scale ``(S(x) + 2^k)/α_c`` depends on the data through S(x),
        the node's β-smooth bound: the statement is conditional; pass
        ``smooth_sensitivity=s`` (s >= S(x)) for the exact (1 − α) quantile of
        the lattice noise at that scale, rounded up (NRS07 Lemma 2.6). For a
        count or a sum S is public (the global sensitivity) and used by default.
        Proof in the module docstring.
        """
        if smooth_sensitivity is None:
            smooth_sensitivity = self.public_smooth_sensitivity()
        return smooth_accuracy(self, alpha, smooth_sensitivity)  # type: ignore[arg-type]  # mixed into the two nodes only


@final
@attrs.frozen
class SmoothBound(_SmoothCommon, AbstractPrimitive[ApproxDP]):
    """A quantile, median, max, min, clipped (trimmed) mean, count, sum or user statistic with Laplace noise scaled to its smooth sensitivity.

    Releases ``f(x) + Lap(2S'(x)/ε)`` on the lattice ``2^k ℤ`` (exact noise), where
    ``S' = S + 2^k`` and ``S`` is a β-smooth upper bound on the local sensitivity with
    a rational ``β ≤ ε/(2 ln(2/δ))``; the result is clamped to ``[lower, upper]``.

    Args:
        query: ``Query.median(col) | Clip(l, u)`` (or quantile, max, min, mean,
            trimmed_mean, sum), ``l < u``; ``Query.count(...)``; or
            ``LocalSensAtDistance(Query.function(fn, column=...) | Clip(l, u), formula)``.
        epsilon: ε > 0.
        delta: δ in (0, 1).
        relation: ``"add_remove"`` (default) or ``"substitution"`` of one row.
        granularity: the lattice exponent k (default :func:`auto_granularity`).
        clamp: clamp the output to the clip range (post-processing; default True).

    At user level, ``Query.median(col, user=uid) | ClipPerUser(L, U)`` (or
    quantile, max, min) is taken over the users' clipped totals, one value in
    [L, U] per user, so the row-level smooth bound over the totals applies.

    Privacy guarantee:
        (ε, δ)-DP under the stated relation for one row (or one user with all their
        rows, for a user-level query): NRS07 Lemma 2.6 with the
        Laplace admissibility Lemma 2.9 (``α = ε/2``, ``β = ε/(2 ln(2/δ))``, here rounded
        down). The sliding step of the Laplace is δ-free, so the proof even gives
        δ/2 (docs §3). The lattice release is post-processing of the ideal mechanism
        for ``round(f)`` with the smooth bound ``S + 2^k``, and the noise is sampled
        exactly: the cost is exactly ``ApproxDP(ε, δ)``.

    Examples:
        >>> from dpalg import ApproxDP, Clip, Query
        >>> node = SmoothBound(Query.median("x") | Clip(0, 100), epsilon=1, delta="1e-6")
        >>> node.cost()
        ApproxDP(1, '1/1000000')
        >>> SmoothBound(Query.mean("x") | Clip(0, 100), epsilon=1, delta="1e-6").cost()
        ApproxDP(1, '1/1000000')

    For the mean, ``S`` is the truncated bound over the exact add/remove ``LS_k``
    profile of the mean of the data's lattice terms (NRS07 Def. 2.1, Prop. 3.1 and
    Lemma 2.3 with a public K; proof and rounding in
    :mod:`dpalg.mechanisms.smooth._profile`); the trimmed mean, counts, sums and
    user statistics: see the module docstring. Counts, sums and user statistics
    are not clamped (no clip range holds their value).
    """

    query: SmoothTarget = attrs.field(converter=_sb_query)
    epsilon: Fraction = attrs.field(converter=_sb_eps)
    delta: Fraction = attrs.field(converter=_sb_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_sb_relation)
    granularity: int | None = attrs.field(default=None, converter=_sb_k)
    clamp: bool = True

    def noise(self) -> AbstractAdmissibleNoise:
        """The standard Laplace."""
        return LaplaceNoise()

    def constants(self) -> Admissibility:
        """``α = ε/2``, ``β`` = ε/(2 ln(2/δ)) rounded down to a rational."""
        return LaplaceNoise().constants(self.epsilon, self.delta)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ) from the parameters."""
        c = self.constants()
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "smooth sensitivity + Laplace noise, alpha = eps/2, beta <= eps/(2 ln(2/delta)) (NRS07 Lemmas 2.6, 2.9); "
            "exact lattice sampling, S + 2^k",
            (("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("alpha", str(c.alpha)), ("beta", str(c.beta)),
             ("relation", self.relation), ("lattice", f"2**{self.lattice_k()}")),
            self._notes(),
        )  # fmt: skip

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy statistic (a float, a multiple of 2^k)."""
        return _release_query(self, data, rng)


def _sc_query(value: SmoothTarget) -> SmoothTarget:
    return _query("SmoothBoundCauchy", value)


def _sc_eps(value: ExactLike) -> Fraction:
    return positive_param("SmoothBoundCauchy", "epsilon", value)


def _sc_gamma(value: ExactLike) -> Fraction:
    return CauchyNoise(value).gamma


def _sc_variant(value: str) -> Literal["nrs07", "tight"]:
    if value == "nrs07":
        return "nrs07"
    if value == "tight":
        return "tight"
    raise InvalidArgument("SmoothBoundCauchy", "variant", value, "must be 'nrs07' or 'tight'")


def _sc_relation(value: str) -> Relation:
    return relation_param("SmoothBoundCauchy", value)


def _sc_k(value: int | None) -> int | None:
    return granularity_param("SmoothBoundCauchy", value)


@final
@attrs.frozen
class SmoothBoundCauchy(_SmoothCommon, AbstractPrimitive[PureDP]):
    """:class:`SmoothBound`'s statistics with generalised Cauchy noise: pure ε-DP.

    Releases ``f(x) + (S'(x)/α)·Z``, ``Z ∝ 1/(1 + |z|^γ)``, on the lattice ``2^k ℤ``
    (exact sampler), ``S' = S + 2^k`` with ``S`` β-smooth, clamped to ``[lower, upper]``.

    Args:
        query: as for :class:`SmoothBound`.
        epsilon: ε > 0.
        gamma: rational γ > 1 (default 2, the Cauchy distribution).
        variant: ``"nrs07"`` (default): ``α = β = ε/(2(γ+1))``, γ = 2: ``ε/6``;
            ``"tight"``: ``α = ε/(2(γ−1)^{(γ−1)/γ})`` (rounded down), ``β = ε/(2 max(1, γ−1))``.
        relation: ``"add_remove"`` (default) or ``"substitution"``.
        granularity: the lattice exponent k (default :func:`auto_granularity`).
        clamp: clamp the output to the clip range (post-processing; default True).

    Privacy guarantee:
        ε-DP (δ = 0) under the stated relation for one row (or one user, over the
        users' clipped totals of a ``| ClipPerUser`` query): NRS07 Lemma 2.6 with the
        generalised-Cauchy admissibility (sliding and dilation log-ratios bounded
        pointwise by ε/2 each; proofs in docs §3). Exact sampling and the lattice
        argument of :class:`SmoothBound` keep it pure: cost exactly ``PureDP(ε)``.
    """

    query: SmoothTarget = attrs.field(converter=_sc_query)
    epsilon: Fraction = attrs.field(converter=_sc_eps)
    gamma: Fraction = attrs.field(default=Fraction(2), converter=_sc_gamma)
    variant: Literal["nrs07", "tight"] = attrs.field(default="nrs07", converter=_sc_variant)
    relation: Relation = attrs.field(default="add_remove", converter=_sc_relation)
    granularity: int | None = attrs.field(default=None, converter=_sc_k)
    clamp: bool = True

    def noise(self) -> AbstractAdmissibleNoise:
        """The generalised Cauchy with this γ."""
        return CauchyNoise(self.gamma)

    def constants(self) -> Admissibility:
        """``(α, β)`` of the chosen variant (exact rationals)."""
        return CauchyNoise(self.gamma).constants(self.epsilon, variant=self.variant)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε from the parameters."""
        c = self.constants()
        return PrivacyClaim(
            PureDP(self.epsilon),
            f"smooth sensitivity + generalised Cauchy noise (gamma={self.gamma}, {self.variant} constants; NRS07 Lemma 2.6); "
            "exact lattice sampling, S + 2^k",
            (("epsilon", str(self.epsilon)), ("gamma", str(self.gamma)), ("alpha", str(c.alpha)), ("beta", str(c.beta)),
             ("relation", self.relation), ("lattice", f"2**{self.lattice_k()}")),
            self._notes(),
        )  # fmt: skip

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy statistic (a float, a multiple of 2^k)."""
        return _release_query(self, data, rng)


def smooth_accuracy(node: SmoothBound | SmoothBoundCauchy, alpha: ExactLike, smooth_sensitivity: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`SmoothBound` / :class:`SmoothBoundCauchy` given a bound on Ŝ(x)."""
    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    c = node.constants()
    k = node.lattice_k()
    step = Fraction(2) ** k
    laplace = isinstance(node, SmoothBound)
    gamma = None if isinstance(node, SmoothBound) else node.gamma
    kind = "Laplace" if laplace else f"generalised Cauchy (gamma={gamma})"
    noise = f"{kind}, scale (S + 2**{k})/{up_text(c.alpha)}, S the beta-smooth bound (beta={up_text(c.beta)}), lattice step 2**{k}"
    clamp = node.clamp_range()
    notes: tuple[str, ...] = ()
    if clamp is not None:
        notes = (f"clamped to [{up_text(clamp[0])}, {up_text(clamp[1])}]: always within {up_text(clamp[1] - clamp[0])}",)
    if smooth_sensitivity is None:
        unit_rate = "ln(1/alpha)" if laplace else "(the Cauchy tail quantile)"
        return Accuracy(a, None, "absolute", noise, False, "the node's smooth bound S(x) is at most s",
                        (f"error <= (s + 2**{k})/{up_text(c.alpha)} * {unit_rate} (rounded to the lattice)",
                         "pass smooth_sensitivity=s (a public upper bound on S(x)) for a number", *notes), lattice_k=k)
    s = to_fraction(smooth_sensitivity, owner=owner, field="smooth_sensitivity")
    if s < 0:
        raise InvalidArgument(owner, "smooth_sensitivity", s, "must be >= 0")
    b = (s + step) / (c.alpha * step)
    m = rounded_noise_quantile(b, a, gamma)
    error = m * step
    if clamp is not None:
        error = min(error, clamp[1] - clamp[0])
    return Accuracy(a, error, "absolute", noise, False, f"the node's smooth bound S(x) is at most {up_text(s)}", notes, lattice_k=k)
