"""The shifted inverse mechanism (Fang, Dong, Yi, CCS 2022) for monotone user-level queries.

Neighbouring relation: add or remove one user with all their rows (the id
column named by the query's ``user=``).

For a monotone f (f(x′) ≤ f(x) when x′ ⊆ x) the loss ℓ(x, y) = min number of
users to delete so that f ≤ y has global sensitivity 1 (seed 004, Prop. 3), and
so does ℓ̄ (strict <). The output domain Y = [y_lo, y_hi] is an integer
interval, so every form works with the integer-valued monotone query ⌊f⌋
(:meth:`UserLoss.floored`; Theorem 4 assumes f maps into Y, and a fractional
float sum does not). Three releases are built on it:

* :class:`ShiftedInverse` — the exponential mechanism on
  ℓ*(x, y) = max{ℓ(x, y) − τ, τ − ℓ̄(x, y)} over Y (seed 004, Theorem 4 and
  footnote 4): ε-DP, and P[⌊f(x)⌋ ≥ M(x) ≥ ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x)] ≥ 1 − β
  with τ = ⌈(2/ε) ln(|Y|/β)⌉. Runs of equal ℓ* are weighted in one exact step.
* :class:`ShiftedInverseSearch` — noisy binary search on y with exact discrete
  Laplace noise on ℓ (seed 004, "binary search"): ε-DP by basic composition of
  at most I = ⌈log2 |Y|⌉ steps of (1/σ)-DP, σ = I/ε.
* :class:`ShiftedInverseSearchZCDP` — the same with discrete Gaussian noise:
  each step is 1/(2σ²)-zCDP, σ² = I/(2ρ), so ρ-zCDP in total (seed 004,
  Theorem 5 and footnote 6; Canonne–Kamath–Steinke 2020, Theorem 4).

The approximate-DP form of the seed's Theorem 6 (generalized interior point,
τ = (log(1/δ)/ε)·2^{O(log* |Y|)}) is not implemented: its constants are not
explicit in the seed. For (ε, δ)-DP convert the zCDP form (``ZCDPToApprox``).

The utility statements assume y_lo ≤ ⌊f(x)⌋ ≤ y_hi (f maps into Y) and, for
:class:`ShiftedInverse` when y_lo > f(∅), that removing any τ − 1 users leaves
f(x) ≥ y_lo (otherwise the shifted loss is clamped at y_lo and the release can
land above f(x): one user holding 100, Y = [100, 200], ε = 1 releases above
f(x) about 98% of the time); privacy holds for every dataset. The proof sketches are in docs/mechanisms/shifted_inverse.md.

**Accuracy** (each node's ``accuracy``; seed 004 = Fang, Dong, Yi, CCS 2022; ``docs/mechanisms/shifted_inverse.md``).
All three forms work with the floored monotone query ``⌊f⌋`` and its losses
``ℓ(y) = min{k : ⌊h(k)⌋ <= y}`` and ``ℓ̄(y) = min{k : ⌊h(k)⌋ < y}``, where
``h(k) = f(x) − DS^k_f(x)`` is ``f`` after removing the ``k`` most influential
users. ``ℓ(M) <= K`` gives ``M >= ⌊h(K)⌋``; ``ℓ̄(M) >= 1`` gives ``M <= ⌊f(x)⌋``.
The statement at ``α`` is::

    ⌊f(x)⌋ >= M >= ⌊h(K)⌋ = ⌊f(x)⌋ − DS^K_{⌊f⌋}(x)        with probability >= 1 − α

for a ``K`` computed below; with a public ``D >= DS^K_f(x)`` (keyword
``down_sensitivity=``), ``h(K) >= f − D`` so ``f(x) − M <= f − ⌊f − D⌋ < D + 1``
(``<= ⌈D⌉`` for the integer-valued counts), and ``M <= f(x)``: the error is
one-sided. The node's ``τ`` is fixed by its ``beta``; only ``K`` depends on ``α``.

* :class:`ShiftedInverse` samples ``y ∈ Y`` with probability ``∝ exp(−(ε/2)·ℓ*(y))``,
  ``ℓ* = max(ℓ − τ, τ − ℓ̄)`` integer. If some ``ŷ ∈ Y`` has ``ℓ*(ŷ) <= 0``,
  the exponential mechanism's bound (McSherry–Talwar 2007 Thm 8; as
  :func:`~dpalg.mechanisms._common.accuracy.exp_mech_gap`) gives
  ``P[ℓ*(M) >= g + 1] <= (|Y| − 1)·e^{−(ε/2)(g+1)}``; with ``g`` the smallest
  integer making this ``<= α`` and ``g < τ``: ``ℓ(M) <= τ + g`` and
  ``ℓ̄(M) >= τ − g >= 1``, so ``K = τ + g`` (at ``α = β``, ``K <= 2τ − 1``:
  seed 004 Thm 4's ``DS^{2τ}``). If ``g >= τ`` nothing bounds ``P[M > f(x)]``
  below ``(|Y| − 1)e^{−ετ/2}`` and there is no statement at that ``α``.
  ``ŷ`` exists iff an integer of ``[⌊h(τ)⌋, ⌊h(τ − 1)⌋]`` lies in ``Y``: always
  when ``⌊f(x)⌋ <= y_hi`` and ``y_lo <= f(∅)`` (``f(∅) = 0`` for sums and
  counts, ``y_lo`` for maxima); for ``y_lo > f(∅)`` it also needs
  ``h(τ − 1) >= y_lo`` (removing any ``τ − 1`` users leaves ``f >= y_lo``).
  Without it the statement fails: one user holding 100 with ``Y = [100, 200]``,
  ``ε = 1`` gives ``ℓ* = 9`` at 100 and ``τ`` above it, and ``M > f(x)`` with
  probability 0.98 (a test shows it).
* :class:`ShiftedInverseSearch` / :class:`ShiftedInverseSearchZCDP` (seed 004,
  "binary search"; Theorem 5 with Gaussian noise) use at most
  ``I = ⌈log2 |Y|⌉`` noises ``Z_i`` (the first ``I`` of the drawn pool). If
  every used ``Z_i <= τ`` then each move ``i_min ← mid`` had ``ℓ(mid) > 0``;
  if every used ``Z_i >= −c`` each move ``i_max ← mid`` had ``ℓ(mid) <= τ + c``.
  With ``y_lo <= ⌊f(x)⌋ <= y_hi`` both invariants hold at the start (the
  virtual ``i_min = y_lo − 1`` has ``ℓ > 0``, ``ℓ(y_hi) = 0``), and at the end
  ``M = i_max = i_min + 1 <= ⌊f(x)⌋`` and ``ℓ(M) <= τ + c``: ``K = τ + c``.
  By the union bound the failure probability is at most ``I·(p + P[Z < −c])``
  with ``p >= P[Z > τ]``: ``p = q^{τ+1}/(1 + q)``, ``q = e^{−1/σ}`` (discrete
  Laplace, exact); ``p = e^{−(τ+1)²/(2σ²)}`` (discrete Gaussian: sub-Gaussian
  with variance proxy σ², Canonne–Kamath–Steinke 2020). ``P[Z < −c] =
  P[|Z| > c]/2`` by symmetry, so ``c = Q_σ(2r/I)`` (``G_{σ²}(2r/I)``) with
  ``r = α − I·p > 0`` (else no statement at ``α``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import DPS, exp_mech_gap, laplace_q, mpf_fraction_nearest53, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ZCDP, PureDP
from dpalg.mechanisms._common.params import positive_param, unit_interval_param
from dpalg.noise import AbstractRandomness, sample_exp_runs
from dpalg.noise._tails import _iv_dps, gaussian_tail_quantile
from dpalg.queries import Query
from dpalg.mechanisms.shifted_inverse._search import SearchNoise, binary_search, search_steps, user_loss
from dpalg.sensitivity import UserLoss, shift_tau, shifted_loss_runs

__all__ = ["ShiftedInverse", "ShiftedInverseSearch", "ShiftedInverseSearchZCDP"]

SHIFTED_KINDS = ("user_sum", "user_count", "user_max", "count")


def _si_query(owner: str, value: Query) -> Query:
    if not isinstance(value, Query) or value.kind not in SHIFTED_KINDS or value.user is None:
        raise InvalidArgument(owner, "query", value, f"must be a user-level monotone query: {SHIFTED_KINDS} with user=...")
    if value.user_bounded:
        raise InvalidArgument(
            owner, "query", value,
            "needs no contribution bound (the shifted inverse handles unbounded contributions): drop ClipPerUser/MaxRowsPerUser, "
            "or release the bounded query with Laplace",
        )
    if value.kind == "user_sum" and value.lower is not None and value.lower < 0:
        raise InvalidArgument(owner, "query", value, "user sums need non-negative contributions (lower bound >= 0)")
    return value


def _domain(owner: str, value: tuple[int, int]) -> tuple[int, int]:
    if not isinstance(value, tuple) or len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InvalidArgument(owner, "domain", value, "must be a pair of ints (y_lo, y_hi)")
    lo, hi = value
    if lo < 0 or hi <= lo or hi - lo + 1 > 2**64:
        raise InvalidArgument(owner, "domain", value, "must satisfy 0 <= y_lo < y_hi and y_hi - y_lo + 1 <= 2**64")
    return lo, hi


def _beta(owner: str, value: ExactLike) -> Fraction:
    return unit_interval_param(owner, "beta", value)


def _neighbouring(query: Query) -> Neighbouring:
    return Neighbouring(query.user, "add_remove")


def _em_query(value: Query) -> Query:
    return _si_query("ShiftedInverse", value)


def _em_domain(value: tuple[int, int]) -> tuple[int, int]:
    return _domain("ShiftedInverse", value)


def _em_eps(value: ExactLike) -> Fraction:
    return positive_param("ShiftedInverse", "epsilon", value)


def _em_beta(value: ExactLike) -> Fraction:
    return _beta("ShiftedInverse", value)


@final
@attrs.frozen
class ShiftedInverse(AbstractPrimitive[PureDP]):
    """Shifted inverse by the exponential mechanism (seed 004, Theorem 4).

    Args:
        query: a monotone user-level query: ``Query.user_sum(col, user=uid)``
            (optionally ``| Clip(0, c)`` per row), ``Query.user_count(user=uid)``,
            ``Query.count(user=uid)`` (rows), ``Query.user_max(col, user=uid)``.
        domain: the integer output range ``(y_lo, y_hi)``, |Y| ≤ 2**64.
        epsilon: ε > 0.
        beta: failure probability of the utility guarantee.

    Privacy guarantee:
        ε-DP for adding or removing one user with all their rows. ℓ and ℓ̄ of
        the monotone ⌊f⌋ have global sensitivity 1 (seed 004, Prop. 3 and
        footnote 4), hence so does ℓ*; sampling y ∝ exp(−ε·ℓ*(x, y)/2) exactly
        over Y is the exponential mechanism (McSherry–Talwar 2007), ε-DP.
        Utility (seed 004, Theorem 4, for ⌊f⌋ which maps into the integers):
        if y_lo ≤ ⌊f(x)⌋ ≤ y_hi (and, when y_lo > f(∅), removing any τ − 1
        users leaves f(x) ≥ y_lo), P[⌊f(x)⌋ ≥ M(x) ≥ ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x)]
        ≥ 1 − β with τ = ⌈(2/ε) ln(|Y|/β)⌉; so f(x) ≥ M(x) > f(x) − DS^{2τ}_f(x) − 1.
    """

    query: Query = attrs.field(converter=_em_query)
    domain: tuple[int, int] = attrs.field(converter=_em_domain)
    epsilon: Fraction = attrs.field(converter=_em_eps)
    beta: Fraction = attrs.field(default=Fraction(1, 20), converter=_em_beta)

    @property
    def neighbouring(self) -> Neighbouring:
        """One user, add/remove."""
        return _neighbouring(self.query)

    def tau(self) -> int:
        """τ = ⌈(2/ε) ln(|Y|/β)⌉ (rounded up rigorously)."""
        return shift_tau(self.epsilon, self.beta, self.domain[1] - self.domain[0] + 1)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "shifted inverse, exponential mechanism on l* (seed 004 Thm 4; Fang-Dong-Yi 2022; McSherry-Talwar 2007)",
            (("epsilon", str(self.epsilon)), ("beta", str(self.beta)), ("domain", f"[{self.domain[0]}, {self.domain[1]}]"), ("tau", str(self.tau()))),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, down_sensitivity: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) one-sided error, from the parameters only (no data touched).

        With probability ≥ 1 − α, ⌊f(x)⌋ ≥ M ≥ ⌊f(x)⌋ − DS^K_{⌊f⌋}(x), with
        K = τ + g, g the exponential mechanism's score gap
        at α (McSherry–Talwar 2007 Thm 8; K ≤ 2τ − 1 at α = β) (seed 004, Theorem 4 and footnote 4; proof in
        the module docstring), if ⌊f(x)⌋ ≤ y_hi;
        when y_lo > f(∅) also removing any τ − 1 users must leave f(x) ≥ y_lo.
        ``down_sensitivity``: a public upper bound D on the drop of f from
        removing any K users; the error is then D + 1 (⌈D⌉ for counts), and
        the release is never above f(x). Without it the statement is
        conditional (``error`` None; the notes give K).
        """
        return shifted_inverse_accuracy(self, alpha, down_sensitivity)

    def distribution(self, data: Dataset) -> tuple[list[int], list[int], list[float]]:
        """Runs and their unnormalised log-weights −ε·ℓ*/2 (for exact tests; not private)."""
        loss = user_loss(self.query, data, self.domain[0], self.domain[1])
        starts, lengths, losses = shifted_loss_runs(loss, self.domain[0], self.domain[1], self.tau())
        return starts, lengths, [-float(self.epsilon) * int(v) / 2 for v in losses.tolist()]

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """An integer in the domain."""
        loss = user_loss(self.query, data, self.domain[0], self.domain[1])
        starts, lengths, losses = shifted_loss_runs(loss, self.domain[0], self.domain[1], self.tau())
        scores = losses - int(losses.min())
        run = sample_exp_runs(scores, self.epsilon / 2, lengths, rng=rng)
        return starts[run] + (rng.big_below(lengths[run]) if lengths[run] > 1 else 0)


def _bs_query(value: Query) -> Query:
    return _si_query("ShiftedInverseSearch", value)


def _bs_domain(value: tuple[int, int]) -> tuple[int, int]:
    return _domain("ShiftedInverseSearch", value)


def _bs_eps(value: ExactLike) -> Fraction:
    return positive_param("ShiftedInverseSearch", "epsilon", value)


def _bs_beta(value: ExactLike) -> Fraction:
    return _beta("ShiftedInverseSearch", value)


class _SearchAccuracy:
    """The accuracy statement shared by the two noisy binary searches (not a node)."""

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, down_sensitivity: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) one-sided error, from the parameters only (no data touched).

        With probability ≥ 1 − α, ⌊f(x)⌋ ≥ M ≥ ⌊f(x)⌋ − DS^K_{⌊f⌋}(x), with
        K = τ + c, c the quantile of the per-step noise left after the union
        bound over the I steps: discrete Laplace for
        :class:`ShiftedInverseSearch` (seed 004, binary search), discrete
        Gaussian with its sub-Gaussian tail for Z > τ for
        :class:`ShiftedInverseSearchZCDP` (seed 004, Theorem 5); proof in
        the module docstring; if ⌊f(x)⌋ ≤ y_hi and f(x) ≥ y_lo.
        ``down_sensitivity``: a public upper bound D on the drop of f from
        removing any K users; the error is then D + 1 (⌈D⌉ for counts), and
        the release is never above f(x). Without it the statement is
        conditional (``error`` None; the notes give K).
        """
        return shifted_inverse_accuracy(self, alpha, down_sensitivity)  # type: ignore[arg-type]  # mixed into the two searches only


@final
@attrs.frozen
class ShiftedInverseSearch(_SearchAccuracy, AbstractPrimitive[PureDP]):
    """Shifted inverse by noisy binary search with discrete Laplace noise (pure DP).

    Privacy guarantee:
        ε-DP for adding or removing one user with all their rows: each of the
        at most I = ⌈log2 |Y|⌉ steps releases (a function of) ℓ(x, y) +
        discrete Laplace(σ) with ℓ of sensitivity 1 (seed 004, Prop. 3), i.e.
        (1/σ)-DP; σ = I/ε, basic (adaptive) composition (seed 004, binary
        search). Utility: with τ = ⌈σ ln(I/β)⌉ all noises are ≤ τ in magnitude
        with probability ≥ 1 − β (P[|Z| > τ] ≤ e^{−τ/σ}, union bound), and then,
        if ⌊f(x)⌋ ≤ y_hi, ⌊f(x)⌋ ≥ M(x) ≥ ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x) (the
        invariants ℓ(i_min) > 0 and ℓ(i_max) ≤ 2τ of the seed's analysis).
    """

    query: Query = attrs.field(converter=_bs_query)
    domain: tuple[int, int] = attrs.field(converter=_bs_domain)
    epsilon: Fraction = attrs.field(converter=_bs_eps)
    beta: Fraction = attrs.field(default=Fraction(1, 20), converter=_bs_beta)

    @property
    def neighbouring(self) -> Neighbouring:
        """One user, add/remove."""
        return _neighbouring(self.query)

    def sigma(self) -> Fraction:
        """The per-step discrete Laplace scale I/ε."""
        return search_steps(self.domain) / self.epsilon

    def tau(self) -> int:
        """Utility threshold ⌈σ ln(I/β)⌉ (only affects accuracy)."""
        steps = search_steps(self.domain)
        return math.ceil(float(self.sigma()) * math.log(steps / float(self.beta)))

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε = I/σ."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "shifted inverse, noisy binary search, discrete Laplace per step, basic composition (seed 004)",
            (("epsilon", str(self.epsilon)), ("steps", str(search_steps(self.domain))), ("sigma", str(self.sigma()))),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """An integer in the domain."""
        loss = user_loss(self.query, data, self.domain[0], self.domain[1])
        noise = SearchNoise("laplace", self.sigma(), rng, search_steps(self.domain) + 1)
        return binary_search(loss, self.domain, self.tau(), noise)


def _bz_query(value: Query) -> Query:
    return _si_query("ShiftedInverseSearchZCDP", value)


def _bz_domain(value: tuple[int, int]) -> tuple[int, int]:
    return _domain("ShiftedInverseSearchZCDP", value)


def _bz_rho(value: ExactLike) -> Fraction:
    return positive_param("ShiftedInverseSearchZCDP", "rho", value)


def _bz_beta(value: ExactLike) -> Fraction:
    return _beta("ShiftedInverseSearchZCDP", value)


@final
@attrs.frozen
class ShiftedInverseSearchZCDP(_SearchAccuracy, AbstractPrimitive[ZCDP]):
    """Shifted inverse by noisy binary search with discrete Gaussian noise (ρ-zCDP).

    Privacy guarantee:
        ρ-zCDP for adding or removing one user with all their rows: each of the
        at most I = ⌈log2 |Y|⌉ steps adds discrete Gaussian noise of variance
        parameter σ² = I/(2ρ) to a sensitivity-1 integer, which is
        1/(2σ²) = ρ/I-zCDP (Canonne–Kamath–Steinke 2020, Theorem 4); zCDP
        composes additively, also adaptively (Bun–Steinke 2016), so ρ-zCDP
        (seed 004, Theorem 5 with Gaussian noise, footnote 6). Utility: with
        τ = ⌈σ·sqrt(2 ln(2I/β))⌉ all noises are ≤ τ in magnitude with
        probability ≥ 1 − β, and then ⌊f(x)⌋ ≥ M(x) ≥ ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x)
        when ⌊f(x)⌋ ≤ y_hi.
    """

    query: Query = attrs.field(converter=_bz_query)
    domain: tuple[int, int] = attrs.field(converter=_bz_domain)
    rho: Fraction = attrs.field(converter=_bz_rho)
    beta: Fraction = attrs.field(default=Fraction(1, 20), converter=_bz_beta)

    @property
    def neighbouring(self) -> Neighbouring:
        """One user, add/remove."""
        return _neighbouring(self.query)

    def sigma2(self) -> Fraction:
        """The per-step discrete Gaussian variance parameter I/(2ρ)."""
        return Fraction(search_steps(self.domain)) / (2 * self.rho)

    def tau(self) -> int:
        """Utility threshold ⌈σ·sqrt(2 ln(2I/β))⌉ (Gaussian tails; accuracy only)."""
        steps = search_steps(self.domain)
        return math.ceil(math.sqrt(float(self.sigma2()) * 2 * math.log(2 * steps / float(self.beta))))

    def privacy(self) -> PrivacyClaim[ZCDP]:
        """ρ = I/(2σ²)."""
        return PrivacyClaim(
            ZCDP(self.rho),
            "shifted inverse, noisy binary search, discrete Gaussian per step (seed 004 Thm 5; CKS 2020 Thm 4)",
            (("rho", str(self.rho)), ("steps", str(search_steps(self.domain))), ("sigma2", str(self.sigma2()))),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """An integer in the domain."""
        loss = user_loss(self.query, data, self.domain[0], self.domain[1])
        noise = SearchNoise("gaussian", self.sigma2(), rng, search_steps(self.domain) + 1)
        return binary_search(loss, self.domain, self.tau(), noise)


_ROUND_BITS = 64  # a failure budget is rounded down to a multiple of 2**-64


def _floor_dyadic(x: Fraction) -> Fraction:
    """``x`` rounded down to a multiple of ``2**-64`` (a smaller failure budget is always valid)."""
    return Fraction(math.floor(x * 2**_ROUND_BITS), 2**_ROUND_BITS)


def _upper_tail(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> Fraction:
    """An upper bound on the probability that the node releases above ⌊f(x)⌋ (module docstring, *Accuracy*)."""
    from mpmath import iv

    tau = node.tau()
    with _iv_dps(DPS):
        if isinstance(node, ShiftedInverse):
            size = node.domain[1] - node.domain[0] + 1
            eps = iv.mpf(node.epsilon.numerator) / node.epsilon.denominator
            p = (size - 1) * iv.exp(-eps * tau / 2)
        else:
            steps = search_steps(node.domain)
            if isinstance(node, ShiftedInverseSearch):
                sigma = node.sigma()
                q = iv.exp(-iv.mpf(sigma.denominator) / sigma.numerator)
                p = steps * q ** (tau + 1) / (1 + q)
            else:
                s2 = node.sigma2()
                p = steps * iv.exp(-iv.mpf((tau + 1) ** 2) * s2.denominator / (2 * s2.numerator))
        return min(Fraction(1), mpf_fraction_nearest53(iv.mpf(p).b))


def shifted_inverse_removals(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP, alpha: ExactLike) -> int | None:
    """``K``: with probability ``>= 1 − α``, ``⌊f(x)⌋ >= M >= ⌊f(x)⌋ − DS^K_{⌊f⌋}(x)``; None: no statement at ``α``.

    Under the condition of :func:`shifted_inverse_accuracy` (module docstring, *Accuracy*).

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import ShiftedInverse, ShiftedInverseSearch
        >>> em = ShiftedInverse(Query.user_count(user="u"), domain=(0, 2**32 - 1), epsilon=1)
        >>> em.tau(), shifted_inverse_removals(em, Fraction(1, 20))  # tau + g, g <= tau - 1
        (51, 101)
        >>> shifted_inverse_removals(em, Fraction(1, 10**6)) is None  # beyond what tau (beta = 1/20) allows
        True
    """
    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    tau = node.tau()
    if isinstance(node, ShiftedInverse):
        size = node.domain[1] - node.domain[0] + 1
        g = exp_mech_gap(size, node.epsilon / 2, a)
        return tau + g if g < tau else None
    steps = search_steps(node.domain)
    rest = _floor_dyadic(a - _upper_tail(node))
    if rest <= 0:
        return None
    share = 2 * rest / steps  # P[|Z| > c] <= 2r/I, so I·P[Z < -c] <= r
    if isinstance(node, ShiftedInverseSearch):
        c = laplace_q(node.sigma(), share)
    else:
        c = 0 if share >= 1 else gaussian_tail_quantile(node.sigma2(), share)[0]
    return tau + c


def _si_floor(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> int:
    """``⌈f(∅)⌉``: ``y_lo`` for maxima (f = max(y_lo, ...)), 0 otherwise."""
    return node.domain[0] if node.query.kind == "user_max" else 0


def shifted_inverse_accuracy(
    node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP, alpha: ExactLike, down_sensitivity: ExactLike | None
) -> Accuracy:
    """The (1 − α) statement of a shifted-inverse node, one-sided (module docstring, *Accuracy*)."""
    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    lo, hi = node.domain
    tau = node.tau()
    if isinstance(node, ShiftedInverse):
        noise = f"exponential mechanism on l* over {hi - lo + 1} candidates, exp(-eps*l*/2), tau={tau}"
    elif isinstance(node, ShiftedInverseSearch):
        noise = f"noisy binary search, {search_steps(node.domain)} steps, discrete Laplace scale {up_text(node.sigma())}, tau={tau}"
    else:
        noise = f"noisy binary search, {search_steps(node.domain)} steps, discrete Gaussian sigma2 {up_text(node.sigma2())}, tau={tau}"
    parts = [f"f(x) < {hi + 1}"]
    if lo > _si_floor(node):
        if isinstance(node, ShiftedInverse):
            parts.append(f"removing any {tau - 1} users leaves f(x) >= {lo}")
        else:
            parts.append(f"f(x) >= {lo}")
    unit = "absolute, below f(x)"
    k = shifted_inverse_removals(node, a)
    if k is None:
        p = _upper_tail(node)
        return Accuracy(a, None, unit, noise, False, " and ".join(parts), (
            f"no statement at alpha={up_text(a)}: the node's tau={tau} (beta={up_text(node.beta)}) bounds P[M > f(x)] only by "
            f"{up_text(p)}; use a larger alpha or construct the node with a smaller beta",
        ))  # fmt: skip
    shape = (
        f"floor(f(x)) >= M >= floor(f(x)) - DS^{k}(x): never above f(x), at most the drop from removing the {k} "
        "most influential users below it (seed 004 Thm 4 / binary search)"
    )
    if down_sensitivity is None:
        return Accuracy(a, None, unit, noise, False, " and ".join(parts), (
            shape, f"pass down_sensitivity=D (a public bound on the drop of f from removing any {k} users) for a number",
        ))  # fmt: skip
    d = to_fraction(down_sensitivity, owner=owner, field="down_sensitivity")
    if d < 0:
        raise InvalidArgument(owner, "down_sensitivity", d, "must be >= 0")
    integral = node.query.kind in ("user_count", "count")
    error = Fraction(math.ceil(d)) if integral else d + 1  # f - floor(f - D) <= ceil(D) (integer f), < D + 1
    error = min(error, Fraction(hi + 1 - lo))  # M >= y_lo and f < y_hi + 1
    parts.append(f"removing any {k} users lowers f(x) by at most {up_text(d)}")
    return Accuracy(a, error, unit, noise, False, " and ".join(parts), (shape,))
