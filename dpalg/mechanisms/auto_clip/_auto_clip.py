"""AutoClipSum: a user-level sum with no contribution bound known in advance.

A clipped user-level sum ``Σ_u min(T_u, C) + Lap(C/ε)`` needs a clip C. Too low and
the largest users are cut (bias ``Σ_u (T_u − C)₊``); too high and the noise (mean
absolute value ``C/ε``) drowns the total. The two terms balance where the slope of
the bias, ``−#{u : T_u > C}``, meets the slope of the noise, ``1/ε``: the best clip
leaves about ``r = 1/ε₂`` users above it (the bias–variance trade-off of
Amin, Kulesza, Muñoz Medina, Vassilvitskii 2019, "Bounding user contributions",
for the absolute error). ``AutoClipSum`` spends a share ε₁ of the budget to pick C
on a public grid with the exponential mechanism and the rest, ε₂, on the clipped
sum.

**The rule** (:meth:`AutoClipSum.clip_scores`). The candidates are
``upper_limit·2^(−j/s)`` rounded down to the totals' lattice (``s`` =
``steps_per_doubling``, j = 0 … J·s). The score of a candidate (lower is better) is
``max(#{u : T_u > C} − r, 0) + (2/ε₁)·(doublings of C above the smallest
candidate)``: the first term is the excess of users the clip leaves above it over
the target r, the second a public prior that costs a factor e² in the sampling
weight per doubling of C. The first term is **monotone** in the data: adding a
user never lowers a count, so every score moves by a value in [0, 1] in the same
direction, and sampling ∝ ``exp(−ε₁·score)`` is ε₁-DP (McSherry–Talwar 2007, the
monotone case: the normaliser moves in the same direction as every weight, so
the two factors of ``e^{ε₁}`` of the general case never stack; Dwork–Roth 2014,
remark after Thm 3.10). That is twice the rate of the two-sided utility
``−|#{T_u > C} − r|`` at the same ε₁.

Why these numbers (expected errors computed in closed form, ``E|b + Lap(s)| =
|b| + s·e^{−|b|/s}``, over the exact selection probabilities, ε = 1,
``benchmarks/bench_auto_clip.py`` measures the exact mechanism): on the baseball
home runs per player (1,228 players) the earlier rule (two-sided utility at rate
ε₁/2, factor e per doubling, grid ratio 2) gave 4.2× the error of the best clip in
hindsight, this rule 1.8×; on Pareto(2.5), lognormal, uniform and constant totals
it went from 2.1×, 3.5×, 3.9×, 3.9× to 1.6×, 2.9×, 2.0×, 2.0×; on Pareto(1.2) it
stayed at 2.2–2.4×. A prior of e³ per doubling did better on the light tails and
worse on the heavy ones; e per doubling lets the clips above the largest total
carry too much mass (a mean overshoot of 2.4× the top clip at grid ratio 2).

**Accuracy** (:meth:`AutoClipSum.accuracy`). Given the released clip ``C`` (drawn before the
sum's noise, which is independent of it), the sum is ``(S + Z)·2^{k₂}`` with
``S`` the clipped lattice sum ``Σ_u min(T_u, ⌊C/2^k⌋)`` re-rounded half-even to
``2^{k₂}`` (at most ``2^{k₂−1}`` off when ``k₂ > k``) and ``Z`` discrete
Laplace of scale ``max(Δ, 1)/ε₂`` fixed by ``C``
(:meth:`~dpalg.mechanisms.AutoClipSum.clipped_sum`): the error to the clipped
sum is ``Q_{Δ/ε₂}(α)·2^{k₂}`` (+ the rounding), exact given ``C``. The
largest over the public candidates holds whichever clip is drawn.
The clipping bias ``Σ_u (T_u − C)₊`` comes on top (the clip aims to leave
``r`` users above it).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring, as_reductions, exact_int_total
from dpalg.data._unit_totals import UnitTotalSpec
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import up_text
from dpalg.graph._node import ABSENT_IN_CERTIFICATE, AbstractPrimitive, PrivacyClaim
from dpalg.measures import PureDP
from dpalg.mechanisms._common.params import floor_log2, positive_param, unit_interval_param
from dpalg.noise import AbstractRandomness, discrete_laplace, sample_exp_weights
from dpalg.noise._tails import laplace_tail_quantile
from dpalg.queries import Query

__all__ = ["AutoClipSum", "DEFAULT_UPPER_LIMIT", "MAX_GRID_STEPS"]

#: the finest public grid: upper_limit·2^-40 (keeps every candidate at >= 2^20 lattice steps)
MAX_GRID_STEPS: Final = 40
#: the default largest clip, a public constant (about 1.07e9): a user's total above it is cut at it
DEFAULT_UPPER_LIMIT: Final = Fraction(2**30)
#: the prior: each doubling of the clip costs 2/ε₁ in the score, a factor e² in the sampling weight
_PRIOR_PER_DOUBLING: Final = 2
_STEPS_PER_DOUBLING: Final = (1, 2, 4, 8)  # integer roots of 2 by repeated isqrt
_CLIP_BITS: Final = 32  # significant bits of a candidate's lattice level (exact as a float)
_LATTICE_BITS: Final = 60  # the largest candidate spans 2^60 lattice steps (per-user totals stay below 2^62)
_NOISE_BITS: Final = 20  # the sum's lattice step is about 2^-20 of its noise scale


def _query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind not in ("sum", "count") or value.user is None:
        raise InvalidArgument("AutoClipSum", "query", value, "must be Query.sum(column, user=<id column>) or Query.count(user=<id column>)")
    if value.user_bounded:
        raise InvalidArgument("AutoClipSum", "query", value, "chooses the per-user clip itself: drop ClipPerUser/MaxRowsPerUser")
    if value.kind == "sum" and value.lower is not None and value.lower < 0:
        raise InvalidArgument("AutoClipSum", "query", value, "needs non-negative rows: a row Clip(l, u) must have l >= 0")
    return value


def _eps(value: ExactLike) -> Fraction:
    return positive_param("AutoClipSum", "epsilon", value)


def _upper(value: ExactLike) -> Fraction:
    return positive_param("AutoClipSum", "upper_limit", value)


def _share(value: ExactLike) -> Fraction:
    return unit_interval_param("AutoClipSum", "clip_share", value)


def _steps(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_GRID_STEPS:
        raise InvalidArgument("AutoClipSum", "grid_steps", value, f"must be an int in [1, {MAX_GRID_STEPS}]")
    return value


def _per_doubling(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in _STEPS_PER_DOUBLING:
        raise InvalidArgument("AutoClipSum", "steps_per_doubling", value, f"must be one of {_STEPS_PER_DOUBLING}")
    return value


def _root(n: int, s: int) -> int:
    """``⌊n^(1/s)⌋`` for ``s`` in 1, 2, 4, 8 (``⌊√⌊√n⌋⌋ = ⌊n^(1/4)⌋``)."""
    while s > 1:
        n, s = math.isqrt(n), s // 2
    return n


def _short(level: int) -> int:
    """``level`` rounded down to :data:`_CLIP_BITS` significant bits (a released clip reads back exactly from its float)."""
    drop = max(0, level.bit_length() - _CLIP_BITS)
    return (level >> drop) << drop


def _target(value: ExactLike | None) -> Fraction | None:
    if value is None:
        return None
    target = to_fraction(value, owner="AutoClipSum", field="users_above")
    if target < 0:
        raise InvalidArgument("AutoClipSum", "users_above", value, "must be >= 0")
    return target


@final
@attrs.frozen
class AutoClipSum(AbstractPrimitive[PureDP]):
    """A user-level sum that chooses its own per-user clip, privately.

    1. Each user's total ``T_u`` (rows clipped to the query's ``Clip`` when given,
       missing values dropped, a negative total taken as 0) is computed exactly on
       a public lattice (:func:`dpalg.data.per_unit_lattice_sums`). For
       ``Query.count(user=...)`` ``T_u`` is the user's number of rows (a sum of ones,
       the rows with a present value when the count names a column).
    2. **Choose C** (ε₁ = ``clip_share``·ε): over the public candidates
       ``C_j = upper_limit·2^(−j/s)`` rounded down (:meth:`levels`; j = 0 … J·s,
       J = ``grid_steps``, s = ``steps_per_doubling``), the exponential mechanism
       sampling ∝ ``exp(−ε₁·score)`` with the monotone score
       ``max(#{u : T_u > C_j} − r, 0) + (2/ε₁)·(J·s − j)/s``, where
       ``r = users_above`` (default ``1/ε₂``, the balance point of bias and
       noise) and the public second term makes each doubling of C cost a factor
       e² in the weights (a prior towards small clips; see :meth:`clip_scores`).
    3. **Sum** (ε₂ = ε − ε₁): ``Σ_u min(T_u, C)`` plus exact discrete Laplace noise
       of scale ``C/ε₂`` on a lattice of about 2^-20 of that scale.

    Returns ``{"sum": float, "clip": float}``: the clip is a DP output too (free,
    post-processing of step 2's input), useful to judge the bias.

    Args:
        query: ``Query.sum(col, user=uid)``, optionally ``| Clip(l, u)`` with ``l >= 0``
            on rows, or ``Query.count(user=uid)`` (then ``1 <= upper_limit < 2**61``);
            no ``ClipPerUser``/``MaxRowsPerUser``. Its ``From``/``Join``/``JoinPublic``/
            ``Where`` steps and derived columns are applied before the totals.
        epsilon: ε > 0, the whole cost.
        upper_limit: the largest clip considered (public; a user's total above it is
            cut at it). Default :data:`DEFAULT_UPPER_LIMIT` = 2**30, a documented
            constant: it never depends on the data. A smaller public bound helps
            little (the prior makes the candidates far above the totals unlikely).
        clip_share: the share of ε spent choosing the clip (default 1/4).
        grid_steps: J, the candidates span ``upper_limit·2^-J … upper_limit`` (≤ 40;
            default 40: 2**30 … 2**-10 with the default ``upper_limit``).
        users_above: r, the number of users the clip should leave above it
            (default 1/ε₂).
        steps_per_doubling: s, candidates per doubling of the clip (1, 2, 4 or 8;
            default 4, a grid ratio of 2^(1/4) ≈ 1.19).

    Privacy guarantee:
        ε-DP for adding or removing one user with all their rows. Each T_u depends
        only on that user's rows (exact fixed-point sums; a count is the sum of one
        lattice term ``2^-k`` per row, clamped like a sum), so a neighbour adds or
        removes one total. Step 2: adding a user raises every ``#{u : T_u > C_j}``
        by 0 or 1, so every score rises by some ``d_j ∈ [0, 1]`` (``max(· − r, 0)``
        is non-decreasing and 1-Lipschitz; the prior is public). Sampling exactly
        ∝ ``exp(−ε₁·score)`` (:func:`dpalg.noise.sample_exp_weights`):
        ``p'_j/p_j = e^{−ε₁·d_j}·Z/Z'`` with ``Z'/Z ∈ [e^{−ε₁}, 1]``, so the ratio
        lies in ``[e^{−ε₁}, e^{ε₁}]``: ε₁-DP (McSherry–Talwar 2007, the monotone
        case of Thm 6; Dwork–Roth 2014, remark after Thm 3.10). Step 3, for the chosen (public) C: one user changes the clamped
        lattice sum S by at most ``L = ⌊C/2^k⌋`` steps; the sum is re-rounded to
        the coarser noise lattice (``⌊S/2^d⌉``, a change of at most ``⌈L/2^d⌉ + 1``
        steps) and receives discrete Laplace noise of scale ``(⌈L/2^d⌉ + 1)/ε₂``:
        ε₂-DP (Canonne–Kamath–Steinke 2020). Adaptive composition: ε₁ + ε₂ = ε.

    Examples:
        >>> from dpalg import Query
        >>> AutoClipSum(Query.sum("spend", user="uid"), epsilon=1, upper_limit=10**6).cost()
        PureDP(1)
        >>> AutoClipSum(Query.sum("spend", user="uid"), epsilon=1).upper_limit  # the public default
        Fraction(1073741824, 1)
    """

    query: Query = attrs.field(converter=_query)
    epsilon: Fraction = attrs.field(converter=_eps)
    upper_limit: Fraction = attrs.field(default=DEFAULT_UPPER_LIMIT, converter=_upper)
    clip_share: Fraction = attrs.field(default=Fraction(1, 4), converter=_share)
    grid_steps: int = attrs.field(default=MAX_GRID_STEPS, converter=_steps)
    users_above: Fraction | None = attrs.field(default=None, converter=_target)
    # a certificate written before this field existed ran one candidate per doubling
    steps_per_doubling: int = attrs.field(default=4, converter=_per_doubling, metadata={ABSENT_IN_CERTIFICATE: 1})

    def __attrs_post_init__(self) -> None:
        if self.query.kind == "count" and not 1 <= self.upper_limit < 2 ** (_LATTICE_BITS + 1):
            raise InvalidArgument(
                "AutoClipSum", "upper_limit", self.upper_limit,
                f"must be in [1, 2**{_LATTICE_BITS + 1}) for a count (a row's 1 lies on the lattice, at most 2**{_LATTICE_BITS} steps)",
            )  # fmt: skip

    @property
    def neighbouring(self) -> Neighbouring:
        """One user, add/remove."""
        assert self.query.user is not None
        return Neighbouring(self.query.user, "add_remove")

    @property
    def epsilon_clip(self) -> Fraction:
        """ε₁, spent choosing the clip."""
        return self.epsilon * self.clip_share

    @property
    def epsilon_sum(self) -> Fraction:
        """ε₂, spent on the clipped sum."""
        return self.epsilon - self.epsilon_clip

    def target(self) -> Fraction:
        """r, the number of users the clip aims to leave above it."""
        return self.users_above if self.users_above is not None else 1 / self.epsilon_sum

    def clip_rate(self) -> Fraction:
        """The rate γ of the clip's exponential mechanism, sampling ∝ exp(−γ·score): ε₁ (monotone score)."""
        return self.epsilon_clip

    def levels(self) -> tuple[int, ...]:
        """The candidates in lattice units of ``2**lattice_k()``: ``⌊upper_limit·2^(−j/s)/2^k⌋``, j = 0 … J·s, largest first,
        rounded down to 32 significant bits (so ``float(clip)`` is exact and :meth:`accuracy` takes it back).

        Exact: ``⌊y^(1/s)⌋`` is the integer root of ``⌊y⌋`` with ``y = (upper_limit/2^k)^s·2^(−j)``.
        """
        x = self.upper_limit / Fraction(2) ** self.lattice_k()
        s = self.steps_per_doubling
        num, den = x.numerator**s, x.denominator**s
        return tuple(_short(_root(num // (den << j), s)) for j in range(self.grid_steps * s + 1))

    def candidates(self) -> tuple[Fraction, ...]:
        """The public clips ``upper_limit·2^(−j/s)`` rounded down to the lattice (:meth:`levels`), largest first."""
        step = Fraction(2) ** self.lattice_k()
        return tuple(level * step for level in self.levels())

    def lattice_k(self) -> int:
        """The lattice of users' totals: the largest candidate spans about 2^60 steps."""
        return floor_log2(self.upper_limit) - _LATTICE_BITS

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε = ε₁ + ε₂, from the parameters."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "exponential mechanism on the clip at rate eps_clip, monotone score max(#{T_u > C} - r, 0) + public prior (McSherry-Talwar 2007 "
            "Thm 6, monotone case), then a clipped "
            "user-level sum with discrete Laplace noise (Canonne-Kamath-Steinke 2020); basic composition",
            (
                ("epsilon_clip", str(self.epsilon_clip)), ("epsilon_sum", str(self.epsilon_sum)),
                ("upper_limit", str(self.upper_limit)), ("grid_steps", str(self.grid_steps)), ("users_above", str(self.target())),
                ("steps_per_doubling", str(self.steps_per_doubling)),
            ),
        )  # fmt: skip

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, clip: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) error of the sum to the clipped sum at the released clip (no data touched).

        Given the clip C (released; the sum's noise is drawn after it and is
        independent of it) the noise is discrete Laplace of scale Δ/ε₂ on the
        lattice 2^k₂ fixed by C: the error is its exact quantile times 2^k₂
        (plus half a step when the sum is re-rounded). ``clip``: one of the
        candidates (e.g. the released one); without it, the largest over all
        candidates. The clipping bias comes on top. Proof in
        the module docstring.
        """
        return auto_clip_accuracy(self, alpha, clip)

    def totals(self, data: Dataset) -> npt.NDArray[np.int64]:
        """Each user's total in lattice units of ``2**lattice_k()``, clamped to ``[0, upper_limit]``, ascending (not private).

        Read through the reductions seam (:meth:`~dpalg.data.Reductions.unit_totals`):
        on a Spark frame the totals are computed on the executors and only one
        integer per user reaches the driver.
        """
        assert self.query.user is not None
        k = self.lattice_k()
        top = int(self.upper_limit / Fraction(2) ** k)  # floor: the clamp stays within upper_limit
        if self.query.kind == "count":
            # c rows are c·2^-k lattice steps (-60 <= k <= 0 for 1 <= upper_limit < 2^61, checked at construction): the
            # count clamped at ⌈top·2^k⌉ then shifted stays below 2^62, and min(·, top) is what a sum of ones gives
            cap = -(-top >> -k)
            counts = as_reductions(data).unit_totals(UnitTotalSpec(self.query.user, self.query.column, "count", 0, 0, cap), bytes(32))
            out: npt.NDArray[np.int64] = np.minimum(counts << -k, top)
            return out
        assert self.query.column is not None
        clipped = self.query.lower is not None and self.query.upper is not None
        spec = UnitTotalSpec(
            self.query.user, self.query.column, "sum", k, 0, top,
            self.query.lower if clipped else None, self.query.upper if clipped else None,
        )  # fmt: skip
        return as_reductions(data).unit_totals(spec, bytes(32))  # no row cap: the key is never read

    def clip_scores(self, totals: npt.NDArray[np.int64]) -> list[Fraction]:
        """The score of every candidate (lower is better): ``max(#{u : T_u > C_j} − r, 0) + (2/ε₁)·(J·s − j)/s``.

        The first term is monotone in the data (adding a user raises it by 0 or 1
        for every candidate), which is what lets the mechanism sample at rate ε₁
        (:meth:`clip_rate`). The second term is public (it depends on j only): it
        makes each doubling of C cost a factor e² in the sampling weight. Without
        it every clip above the largest total scores alike and the mechanism picks
        among them almost uniformly (errors 10³× the best clip on Pareto totals).
        """
        ordered = np.sort(totals)
        levels = np.array(self.levels(), dtype=np.int64)
        above = ordered.size - np.searchsorted(ordered, levels, side="right")
        r = self.target()
        s = self.steps_per_doubling
        per_step = Fraction(_PRIOR_PER_DOUBLING, s) / self.epsilon_clip
        top = self.grid_steps * s
        return [max(Fraction(int(a)) - r, Fraction(0)) + per_step * (top - j) for j, a in enumerate(above.tolist())]

    def clipped_sum(self, totals: npt.NDArray[np.int64], clip: Fraction) -> tuple[int, int, int]:
        """``(S, Δ, k2)``: the clamped sum on the noise lattice ``2**k2`` and its sensitivity there (not private).

        ``S = ⌊Σ_u min(T_u, L)/2^d⌉`` (half-even) with ``L = ⌊C/2^k⌋`` and ``k2 = k + d``;
        one user moves the inner sum by at most L, hence S by at most
        ``Δ = ⌈L/2^d⌉ + 1`` (``Δ = L`` when ``d = 0``).
        """
        k = self.lattice_k()
        level = int(clip / Fraction(2) ** k)
        clamped = exact_int_total(np.minimum(totals, level), max(level, 1))
        d = max(0, floor_log2(clip / self.epsilon_sum) - _NOISE_BITS - k)
        if d == 0:
            return clamped, level, k
        unit = 1 << d
        quotient, rest = divmod(clamped, unit)
        rounded = quotient + (1 if 2 * rest > unit or (2 * rest == unit and quotient % 2) else 0)  # half-even
        return rounded, -(-level // unit) + 1, k + d

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """``{"sum": noisy sum, "clip": the chosen clip}``."""
        return self.sample(self.totals(data), rng)

    def sample(self, totals: npt.NDArray[np.int64], rng: AbstractRandomness) -> dict[str, float]:
        """Steps 2 and 3 on the users' totals (:meth:`totals`): what :meth:`release` returns, drawn from ``rng``.

        A release is this function of the totals, so a benchmark reads the data once and samples many releases.
        """
        choice = sample_exp_weights(self.clip_scores(totals), self.clip_rate(), rng=rng)
        clip = self.candidates()[choice]
        value, sensitivity, k2 = self.clipped_sum(totals, clip)
        scale = Fraction(max(sensitivity, 1)) / self.epsilon_sum
        noisy = value + int(discrete_laplace(scale, size=1, rng=rng)[0])
        return {"sum": float(Fraction(noisy) * Fraction(2) ** k2), "clip": float(clip)}


def _clip_error(node: AutoClipSum, clip: Fraction, alpha: Fraction) -> tuple[Fraction, bool]:
    """The exact (1 − α) error of the sum given ``clip`` and whether it is tight (no re-rounding)."""

    _, sensitivity, k2 = node.clipped_sum(np.zeros(0, dtype=np.int64), clip)  # Δ and k₂ depend on the clip only
    scale = Fraction(max(sensitivity, 1)) / node.epsilon_sum
    m, tight = laplace_tail_quantile(scale, alpha)
    step = Fraction(2) ** k2
    rounded = k2 != node.lattice_k()
    return m * step + (step / 2 if rounded else 0), tight and not rounded


def auto_clip_accuracy(node: AutoClipSum, alpha: ExactLike, clip: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`AutoClipSum`'s sum to the clipped sum at the released clip (module docstring)."""
    owner = "AutoClipSum.accuracy"
    a = alpha_param(owner, alpha)
    candidates = node.candidates()
    noise = f"discrete Laplace, scale clip/{up_text(node.epsilon_sum)} (lattice about 2**-20 of it), after an exponential-mechanism clip"
    bias = "clipping bias sum_u (T_u - C)+ comes on top (the clip aims to leave r users above it)"
    if clip is None:
        errors = [_clip_error(node, c, a)[0] for c in candidates]
        worst = max(errors)
        return Accuracy(a, worst, "absolute, to the clipped sum", noise, False, None, (
            f"whichever clip C is drawn; given C: ±{up_text(errors[-1])} at C={up_text(candidates[-1])} ... ±{up_text(errors[0])} "
            f"at C={up_text(candidates[0])} (pass clip=C for its figure)", bias,
        ))  # fmt: skip
    c = to_fraction(clip, owner=owner, field="clip")
    if c not in candidates:
        raise InvalidArgument(owner, "clip", c, f"must be one of the node's candidates (upper_limit*2**(-j/{node.steps_per_doubling}) on the lattice, j = 0..{node.grid_steps * node.steps_per_doubling})")
    error, tight = _clip_error(node, c, a)
    return Accuracy(a, error, "absolute, to the clipped sum", noise, tight, f"the released clip is {up_text(c)}", (bias,))
