"""R2T ("race to the top"; Dong, Fang, Yi, Tao, Machanavajjhala, SIGMOD 2022): a user-level sum without a clip.

Neighbouring relation: add or remove one user with all their rows (the id column
named by the query's ``user=``). Each user's total ``T_u`` (the sum of their
rows, or their number of rows) is computed exactly on a public lattice and
clamped to ``[0, upper_limit]`` (a negative total counts 0: the query is
monotone, as R2T requires; ``upper_limit`` is the paper's ``GS_Q``, a public
bound on one user's contribution).

**The mechanism** (the paper's Algorithm 1, for queries where every result row
belongs to one user -- a sum over one table, or over foreign-key joins to the
user, where R2T's truncated query is ``Q(I, τ) = Σ_u min(T_u, τ)``). For the L
public thresholds ``τ_j = upper_limit·2^-j`` (j = 0 … L − 1)::

    Q̃(I) = max( 0, max_j  Q(I, τ_j) + Z_j − s_j ),
    Z_j ~ discrete Laplace of scale b_j = L·τ_j/ε,   s_j = ⌈b_j·ln(L/β)⌉.

**Privacy** (the paper's Lemma 5.1, its proof): adding or removing one user
changes ``Q(I, τ_j)`` by ``min(T_u, τ_j) <= τ_j``, so each noisy truncated answer
is (ε/L)-DP (the discrete Laplace mechanism, Canonne–Kamath–Steinke 2020); the L
answers compose to ε-DP (basic composition, Dwork–Roth Thm 3.16) and the shifts,
the max and the 0 are post-processing. To keep the noise in exact 64-bit
integers, ``Q(I, τ_j)`` is re-rounded (half to even) to a coarser lattice ``2^d_j``
where ``b_j`` is about 2^20 steps; one user then changes it by at most
``⌈τ_j/2^d_j⌉ + 1`` steps, and that is the sensitivity the noise is scaled to.

**Accuracy** (the paper's Theorem 5.1, one side exactly): a discrete Laplace of
scale b exceeds ``s >= b·ln(L/β)`` with probability ``q^{⌊s⌋+1}/(1 + q) < e^{−s/b}
<= β/L`` (``q = e^{−1/b}``), so with probability at least ``1 − β`` no shifted answer
exceeds its truncated value and ``Q̃(I) <= Q(I, upper_limit)`` (the release
underestimates); the paper bounds the other side by ``O(L·ln(L/β)·τ*(I)/ε)``, τ*
the best threshold in hindsight. The error is one-sided by design, as the shifted
inverse's is.

Every run draws the L noises, whatever the data: the time does not depend on it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, Neighbouring, as_reductions, exact_int_total
from dpalg.data._unit_totals import UnitTotalSpec
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import PureDP
from dpalg.mechanisms._common.params import floor_log2, positive_param, unit_interval_param
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.queries import Query

__all__ = ["DEFAULT_UPPER_LIMIT", "R2T"]

#: the default bound on one user's total (public, about 1.07e9)
DEFAULT_UPPER_LIMIT: Final = Fraction(2**30)
_LATTICE_BITS: Final = 60  # the largest threshold spans 2^60 lattice steps (a sum's totals)
_NOISE_BITS: Final = 20  # a threshold's noise scale spans about 2^20 steps of its noise lattice
_MAX_THRESHOLDS: Final = 40
_MAX_TOP: Final = 2**62  # UnitTotalSpec's bound on a clamp, in lattice units


def _query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind not in ("sum", "count") or value.user is None:
        raise InvalidArgument("R2T", "query", value, "must be Query.sum(column, user=<id column>) or Query.count(user=<id column>)")
    if value.user_bounded:
        raise InvalidArgument("R2T", "query", value, "truncates the users' totals itself: drop ClipPerUser/MaxRowsPerUser")
    if value.kind == "sum" and value.lower is not None and value.lower < 0:
        raise InvalidArgument("R2T", "query", value, "needs non-negative rows: a row Clip(l, u) must have l >= 0")
    return value


def _eps(value: ExactLike) -> Fraction:
    return positive_param("R2T", "epsilon", value)


def _upper(value: ExactLike) -> Fraction:
    return positive_param("R2T", "upper_limit", value)


def _beta(value: ExactLike) -> Fraction:
    return unit_interval_param("R2T", "beta", value)


def _thresholds(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_THRESHOLDS:
        raise InvalidArgument("R2T", "thresholds", value, f"must be an int in [1, {_MAX_THRESHOLDS}]")
    return value


def _log_up(x: Fraction) -> Fraction:
    """A rational upper bound on ln(x), x >= 1 (64 significant bits; public, for the shifts)."""
    import mpmath

    with mpmath.workprec(96):
        value = mpmath.log(mpmath.mpf(x.numerator) / x.denominator)
        return Fraction(int(mpmath.ceil(mpmath.ldexp(value, 64))), 1 << 64)


@final
@attrs.frozen
class R2T(AbstractPrimitive[PureDP]):
    """A user-level sum (or count) with no clip to choose: the best of L truncations, privately (module docstring).

    Args:
        query: ``Query.sum(column, user=uid)`` (rows may be clipped with a
            non-negative ``Clip``) or ``Query.count(user=uid)``.
        epsilon: ε > 0.
        upper_limit: ``GS_Q``, the largest user total considered (public; a total
            above it is cut at it). Default 2**30.
        thresholds: L, the thresholds ``upper_limit·2^-j``, j = 0 … L − 1 (default 30;
            for a count, thresholds below one row are dropped).
        beta: the shift's failure probability (default 1/10).

    Privacy guarantee:
        ε-DP for adding or removing one user with all their rows (Dong et al.
        2022, Lemma 5.1): L noisy truncated sums of sensitivity ``τ_j`` (at most
        ``⌈τ_j/2^d_j⌉ + 1`` steps on the noise lattice), each with discrete Laplace
        noise of scale ``L·Δ_j/ε``, basic composition; the max is post-processing.

    Examples:
        >>> R2T(Query.sum("spend", user="uid"), epsilon=1).cost()
        PureDP(1)
        >>> R2T(Query.count(user="uid"), epsilon=1, upper_limit=1000).taus()[:3]
        (1000, 500, 250)
    """

    query: Query = attrs.field(converter=_query)
    epsilon: Fraction = attrs.field(converter=_eps)
    upper_limit: Fraction = attrs.field(default=DEFAULT_UPPER_LIMIT, converter=_upper)
    thresholds: int = attrs.field(default=30, converter=_thresholds)
    beta: Fraction = attrs.field(default=Fraction(1, 10), converter=_beta)

    def __attrs_post_init__(self) -> None:
        if not self.taus():  # a count below one row has no threshold: no release could be drawn after the charge
            raise InvalidArgument("R2T", "upper_limit", self.upper_limit, "must be >= 1 for a count (a user's total is a whole number of rows)")
        if self.top() > _MAX_TOP:  # the per-user totals seam takes bounds up to 2**62 lattice units
            raise InvalidArgument("R2T", "upper_limit", self.upper_limit, "must be at most 2**62 for a count (a user's rows, counted in 64-bit integers)")

    @property
    def neighbouring(self) -> Neighbouring:
        """One user with all their rows, added or removed."""
        return Neighbouring(self.query.user, "add_remove")

    def lattice_k(self) -> int:
        """The lattice of users' totals: rows counted as 1 for a count; for a sum, the top threshold spans 2^60 steps."""
        return 0 if self.query.kind == "count" else floor_log2(self.upper_limit) - _LATTICE_BITS

    def top(self) -> int:
        """``upper_limit`` in lattice units, rounded down (the clamp of every total)."""
        return int(self.upper_limit / Fraction(2) ** self.lattice_k())

    def taus(self) -> tuple[int, ...]:
        """The thresholds in lattice units, largest first: ``⌊top/2^j⌋``, those >= 1 (public)."""
        top = self.top()
        return tuple(t for t in (top >> j for j in range(self.thresholds)) if t >= 1)

    def levels(self) -> list[tuple[int, int, Fraction, int]]:
        """For each threshold: ``(d, sensitivity, scale, shift)`` on its noise lattice ``2^(k + d)`` (public)."""
        taus = self.taus()
        count = len(taus)
        log = _log_up(Fraction(count) / self.beta)
        out: list[tuple[int, int, Fraction, int]] = []
        for tau in taus:
            d = max(0, floor_log2(Fraction(count * tau) / self.epsilon) - _NOISE_BITS)
            sensitivity = tau if d == 0 else -(-tau // (1 << d)) + 1
            scale = Fraction(count * sensitivity) / self.epsilon
            shift = -(-(scale * log).numerator // (scale * log).denominator)  # ⌈b·ln(L/β)⌉ (log rounded up)
            out.append((d, sensitivity, scale, shift))
        return out

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε, from the parameters."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "R2T: L truncated user-level sums with discrete Laplace noise of scale L*sensitivity/eps each, basic composition, "
            "the max of the shifted answers is post-processing (Dong-Fang-Yi-Tao-Machanavajjhala 2022 Lemma 5.1; "
            "Canonne-Kamath-Steinke 2020)",
            (("thresholds", str(len(self.taus()))), ("upper_limit", str(self.upper_limit)), ("beta", str(self.beta))),
        )

    def totals(self, data: Dataset) -> npt.NDArray[np.int64]:
        """Each user's total in lattice units, clamped to ``[0, top]`` (not private; read through the reductions seam)."""
        assert self.query.user is not None
        clipped = self.query.lower is not None and self.query.upper is not None
        if self.query.kind == "count":
            spec = UnitTotalSpec(self.query.user, self.query.column, "count", 0, 0, self.top())
        else:
            assert self.query.column is not None
            spec = UnitTotalSpec(
                self.query.user, self.query.column, "sum", self.lattice_k(), 0, self.top(),
                self.query.lower if clipped else None, self.query.upper if clipped else None,
            )  # fmt: skip
        return as_reductions(data).unit_totals(spec, bytes(32))

    def truncated(self, totals: npt.NDArray[np.int64]) -> list[int]:
        """``Q(I, τ_j)`` on each threshold's noise lattice: ``Σ_u min(T_u, τ_j)`` re-rounded half to even (not private)."""
        out: list[int] = []
        for tau, (d, _, _, _) in zip(self.taus(), self.levels()):
            exact = exact_int_total(np.minimum(totals, tau), tau)
            if d:
                unit = 1 << d
                quotient, rest = divmod(exact, unit)
                exact = quotient + (1 if 2 * rest > unit or (2 * rest == unit and quotient % 2) else 0)
            out.append(exact)
        return out

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """``max(0, max_j Q(I, τ_j) + Z_j − s_j)``, as a float in the query's units."""
        return self.sample(self.truncated(self.totals(data)), rng)

    def sample(self, truncated: list[int], rng: AbstractRandomness) -> float:
        """The release given the truncated sums (:meth:`truncated`): one noise per threshold, whatever the values."""
        best = Fraction(0)
        k = self.lattice_k()
        for value, (d, _, scale, shift) in zip(truncated, self.levels()):
            noisy = value + int(discrete_laplace(scale, size=1, rng=rng)[0]) - shift
            best = max(best, Fraction(noisy) * Fraction(2) ** (k + d))
        return float(best)
