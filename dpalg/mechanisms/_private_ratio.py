"""The private ratio a/b three ways (seed 000): naive, privately bounded LS, Kulesza–Suresh–Wang.

Data interface: one 0/1 column, one row per user. Every row counts in ``b``; a
row counts in ``a`` when its value is non-zero (so a row contributes 0 to ``b``
only, or 1 to both). NaN/None rows are dropped from both counts (a row-local
map). The ratio is defined as ``a/b`` for ``b >= 1`` and 0 for ``b = 0``.

Neighbouring: add/remove one row (default), or substitution (replace one row's
value). Every node releases a float in [0, 1] (clamping is post-processing).

The seed's code listing swaps the lower and upper bounds on ``a`` relative to
its own derivation; we implement the derivation: ``a/(b² - b)`` needs the UPPER
bound on ``a`` and ``(b - a)/(b² - b)`` the LOWER one.
``tests/mechanisms/test_private_ratio.py`` shows the swapped variant failing
coverage far more often than δ.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ROW, Dataset, Neighbouring, Relation
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms._bounded_local import lattice_terms, tail_margin
from dpalg.mechanisms._common import positive_param, relation_param
from dpalg.noise import AbstractRandomness, discrete_laplace

__all__ = [
    "RatioKSW",
    "RatioLocalSensitivity",
    "RatioNaive",
    "ratio_counts",
    "ratio_local_sensitivity",
    "ratio_ls_upper",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def ratio_counts(data: Dataset, column: str) -> tuple[int, int]:
    """``(a, b)``: rows with a non-zero value, and all rows with a value (NaN rows dropped)."""
    col = data.numeric(column)
    valued = col[~np.isnan(col)]
    return int(np.count_nonzero(valued)), int(valued.size)


def ratio_local_sensitivity(a: int, b: int, relation: Relation = "add_remove") -> Fraction:
    """An upper bound on LS(a/b) at (a, b), exact when 0 < a < b; 1 (the global bound) when b < 2.

    Add/remove: the neighbours are (a±1, b±1) and (a, b±1); the removals dominate,
    giving ``max(b - a, a) / (b² - b)`` (seed 000). Substitution adds (a±1, b):
    ``1/b``. When a ∈ {0, b} a removal is impossible and the true LS is smaller.

    Examples:
        >>> ratio_local_sensitivity(3, 10)
        Fraction(7, 90)
        >>> ratio_local_sensitivity(3, 10, "substitution")
        Fraction(1, 10)
    """
    if b < 2:
        return Fraction(1)
    out = Fraction(max(a, b - a), b * b - b)
    if relation == "substitution":
        out = max(out, Fraction(1, b))
    return out


def ratio_ls_upper(a_lo: int, a_hi: int, b_lo: int, b_hi: int, relation: Relation = "add_remove") -> Fraction:
    """max of :func:`ratio_local_sensitivity` over a ∈ [a_lo, a_hi], b ∈ [b_lo, b_hi] (needs b_lo >= 2).

    ``a/(b² - b)`` is largest at (a_hi, b_lo). ``h(b) = (b - a)/(b² - b)`` is
    decreasing in a, so use a_lo; for a >= 1 it increases on (1, b_x] and
    decreases after, b_x = a + sqrt(a² - a), so its integer maximum on the
    interval is at an endpoint or at floor/ceil(b_x) (exact: a + isqrt(a² - a)).

    Examples:
        >>> ratio_ls_upper(40, 60, 90, 110)
        Fraction(2, 267)
    """
    if b_lo < 2 or a_lo > a_hi or b_lo > b_hi:
        raise InvalidArgument("ratio_ls_upper", "bounds", (a_lo, a_hi, b_lo, b_hi), "need 2 <= b_lo <= b_hi, a_lo <= a_hi")
    a_lo = max(a_lo, 0)
    term1 = Fraction(max(a_hi, 0), b_lo * b_lo - b_lo)
    candidates = {b_lo, b_hi}
    if a_lo >= 1:
        floor_bx = a_lo + math.isqrt(a_lo * a_lo - a_lo)
        candidates.update(c for c in (floor_bx, floor_bx + 1) if b_lo <= c <= b_hi)
    term2 = max(Fraction(c - a_lo, c * c - c) for c in candidates)
    out = max(term1, term2)
    if relation == "substitution":
        out = max(out, Fraction(1, b_lo))
    return out


@functools.lru_cache(maxsize=256)
def _margin(scale: Fraction, delta: Fraction) -> int:
    return tail_margin(scale, delta)


def _finish_ratio(num: IntArray, den: IntArray) -> FloatArray:
    """num/den clamped to [0, 1]; 1/2 where den <= 0 (post-processing)."""
    num_f = num.astype(np.float64)
    den_f = den.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den_f > 0, num_f / np.where(den_f > 0, den_f, 1.0), 0.5)
    return np.clip(out, 0.0, 1.0)


def _naive(a: int, b: int, epsilon: Fraction, size: int, rng: AbstractRandomness) -> FloatArray:
    draws = discrete_laplace(2 / epsilon, size=2 * size, rng=rng)
    return _finish_ratio(a + draws[:size], b + draws[size:])


def _neighbouring(relation: Relation) -> Neighbouring:
    return ROW if relation == "add_remove" else Neighbouring(relation="substitution")


def _column(owner: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgument(owner, "column", value, "must be a non-empty column name")
    return value


def _counts_of(data: Dataset, column: str) -> tuple[int, int]:
    return ratio_counts(data, column)


def _naive_column(value: str) -> str:
    return _column("RatioNaive", value)


def _naive_eps(value: ExactLike) -> Fraction:
    return positive_param("RatioNaive", "epsilon", value)


def _naive_rel(value: str) -> Relation:
    return relation_param("RatioNaive", value)


@final
@attrs.frozen
class RatioNaive(AbstractPrimitive[PureDP]):
    """The ratio from two separately noised counts: (a + Z₁)/(b + Z₂).

    Args:
        column: the 0/1 membership column (see the module docstring).
        epsilon: ε > 0, split in halves.
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ε-DP for one row under either relation: a and b each have sensitivity 1;
        each gets discrete Laplace noise of scale 2/ε (ε/2-DP, CKS 2020), and
        basic composition adds to ε (Dwork–Roth Thm 3.16).

    Examples:
        >>> RatioNaive("in_a", epsilon=1).cost()
        PureDP(1)
    """

    column: str = attrs.field(converter=_naive_column)
    epsilon: Fraction = attrs.field(converter=_naive_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_naive_rel)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return _neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "two sensitivity-1 counts, discrete Laplace scale 2/eps each, basic composition",
            (("epsilon", str(self.epsilon)), ("relation", self.relation)),
        )

    def sample(self, a: int, b: int, size: int, rng: AbstractRandomness) -> FloatArray:
        """``size`` independent releases at counts (a, b) (the same law as :meth:`release`)."""
        return _naive(a, b, self.epsilon, size, rng)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio (float)."""
        return float(self.sample(*_counts_of(data, self.column), 1, rng)[0])


def _ksw_column(value: str) -> str:
    return _column("RatioKSW", value)


def _ksw_eps(value: ExactLike) -> Fraction:
    return positive_param("RatioKSW", "epsilon", value)


def _ksw_rel(value: str) -> Relation:
    return relation_param("RatioKSW", value)


@final
@attrs.frozen
class RatioKSW(AbstractPrimitive[PureDP]):
    """Kulesza–Suresh–Wang 2024 (Algorithm 3, simplified): noise (a, b − a), return â/(â + ĉ).

    Args:
        column: the 0/1 membership column.
        epsilon: ε > 0.
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ε-DP for one row: the 2-D query (a, b − a) has L1 sensitivity 1 under
        add/remove (a row is counted in exactly one coordinate) and 2 under
        substitution (a row moves between coordinates); each coordinate gets
        discrete Laplace noise of scale Δ/ε (CKS 2020). Negative noisy counts
        are clamped to 0 (post-processing).

    Examples:
        >>> RatioKSW("in_a", epsilon="0.5", relation="substitution").scale()
        Fraction(4, 1)
    """

    column: str = attrs.field(converter=_ksw_column)
    epsilon: Fraction = attrs.field(converter=_ksw_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_ksw_rel)

    def sensitivity(self) -> Fraction:
        """L1 sensitivity of (a, b − a): 1 (add/remove) or 2 (substitution)."""
        return Fraction(1 if self.relation == "add_remove" else 2)

    def scale(self) -> Fraction:
        """Discrete Laplace scale of each coordinate."""
        return self.sensitivity() / self.epsilon

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return _neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "Kulesza-Suresh-Wang 2024: (a, b-a) has L1 sensitivity 1 (add/remove) or 2 (substitution); "
            "discrete Laplace scale sensitivity/eps",
            (("epsilon", str(self.epsilon)), ("relation", self.relation)),
        )

    def sample(self, a: int, b: int, size: int, rng: AbstractRandomness) -> FloatArray:
        """``size`` independent releases at counts (a, b)."""
        draws = discrete_laplace(self.scale(), size=2 * size, rng=rng)
        ones = np.maximum(a + draws[:size], 0)
        zeros = np.maximum((b - a) + draws[size:], 0)
        return _finish_ratio(ones, ones + zeros)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio (float)."""
        return float(self.sample(*_counts_of(data, self.column), 1, rng)[0])


def _ls_column(value: str) -> str:
    return _column("RatioLocalSensitivity", value)


def _ls_eps1(value: ExactLike) -> Fraction:
    return positive_param("RatioLocalSensitivity", "epsilon_bound", value)


def _ls_eps2(value: ExactLike) -> Fraction:
    return positive_param("RatioLocalSensitivity", "epsilon_release", value)


def _ls_delta(value: ExactLike) -> Fraction:
    d = to_fraction(value, owner="RatioLocalSensitivity", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("RatioLocalSensitivity", "delta", value, "must be in (0, 1)")
    return d


def _ls_rel(value: str) -> Relation:
    return relation_param("RatioLocalSensitivity", value)


@final
@attrs.frozen
class RatioLocalSensitivity(AbstractPrimitive[ApproxDP]):
    """The ratio with noise scaled to a private upper bound on its local sensitivity (seed 000, Thm 2).

    Steps: â, b̂ with discrete Laplace noise of scale 2/ε₁; intervals
    ``[â - w, â + w] ∩ [0, b̂ + w]`` and ``[b̂ - w, b̂ + w]`` with ``w`` from the
    exact discrete Laplace tail at δ/4 per side (:func:`tail_margin`); when
    ``b_lo <= 1`` (or when ĝ is worse than the naive error proxy, see
    :meth:`ls_bound`) bail out to :class:`RatioNaive` with ε₂; otherwise
    ĝ = :func:`ratio_ls_upper` and a/b is released on a lattice with discrete
    Laplace noise for sensitivity ĝ and ε₂.

    Args:
        column: the 0/1 membership column.
        epsilon_bound: ε₁ > 0 (both counts together).
        epsilon_release: ε₂ > 0.
        delta: δ in (0, 1).
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        (ε₁ + ε₂, δ)-DP for one row under the stated relation (seed 000,
        Theorems 1 and 2, with the bounds on a used as in the derivation): the
        counts cost ε₁; the four one-sided intervals all cover (a, b) except with
        probability ≤ 4 · δ/4 (exact tails); then ĝ ≥ LS(a/b, x) and the lattice
        release is ε₂-DP; the bail-out branch is ε₂-DP.

    Examples:
        >>> node = RatioLocalSensitivity("in_a", epsilon_bound="0.2", epsilon_release="0.8", delta="1e-6")
        >>> node.cost(), node.margin()
        (ApproxDP(1, '1/1000000'), 145)
    """

    column: str = attrs.field(converter=_ls_column)
    epsilon_bound: Fraction = attrs.field(converter=_ls_eps1)
    epsilon_release: Fraction = attrs.field(converter=_ls_eps2)
    delta: Fraction = attrs.field(converter=_ls_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_ls_rel)

    def count_scale(self) -> Fraction:
        """Discrete Laplace scale of â and b̂: 2/ε₁."""
        return 2 / self.epsilon_bound

    def margin(self) -> int:
        """The one-sided interval margin w (failure ≤ δ/4 per side)."""
        return _margin(self.count_scale(), self.delta / 4)

    def intervals(self, a_hat: int, b_hat: int) -> tuple[int, int, int, int]:
        """``(a_lo, a_hi, b_lo, b_hi)`` from the noisy counts (post-processing)."""
        w = self.margin()
        b_lo, b_hi = b_hat - w, b_hat + w
        a_hi = max(min(a_hat + w, b_hi), 0)
        # a <= b <= b_hi on the good event, so a_lo > a_hi only outside it
        return min(max(a_hat - w, 0), a_hi), a_hi, b_lo, b_hi

    def ls_bound(self, a_hat: int, b_hat: int) -> Fraction | None:
        """ĝ, or ``None`` for the bail-out.

        Bail out when b_lo <= 1 (seed 000) and also when ĝ exceeds
        2(b̂ + â)/b̂², a proxy of the naive mechanism's noise at the same ε₂
        (both are functions of the private â, b̂: post-processing).
        """
        a_lo, a_hi, b_lo, b_hi = self.intervals(a_hat, b_hat)
        if b_lo <= 1:
            return None
        bound = ratio_ls_upper(a_lo, a_hi, b_lo, b_hi, self.relation)
        b_est, a_est = max(b_hat, 2), min(max(a_hat, 0), max(b_hat, 2))
        if bound >= Fraction(2 * (b_est + a_est), b_est * b_est):
            return None
        return bound

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return _neighbouring(self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε₁ + ε₂, δ)."""
        return PrivacyClaim(
            ApproxDP(self.epsilon_bound + self.epsilon_release, self.delta),
            "privately bounded local sensitivity of a/b (seed 000 Thms 1-2, bounds on a as in the derivation); "
            "exact discrete Laplace tails at delta/4 per side; lattice discrete Laplace release",
            (("epsilon_bound", str(self.epsilon_bound)), ("epsilon_release", str(self.epsilon_release)),
             ("delta", str(self.delta)), ("relation", self.relation)),
        )  # fmt: skip

    def sample(self, a: int, b: int, size: int, rng: AbstractRandomness) -> FloatArray:
        """``size`` independent releases at counts (a, b); noise grouped by the (private) bound."""
        draws = discrete_laplace(self.count_scale(), size=2 * size, rng=rng)
        a_hat, b_hat = a + draws[:size], b + draws[size:]
        pairs, inverse = np.unique(np.stack([a_hat, b_hat], axis=1), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        out = np.empty(size, dtype=np.float64)
        value = Fraction(a, b) if b > 0 else Fraction(0)
        for j, (ah, bh) in enumerate(pairs.tolist()):
            idx = np.flatnonzero(inverse == j)
            bound = self.ls_bound(int(ah), int(bh))
            if bound is None:
                out[idx] = _naive(a, b, self.epsilon_release, idx.size, rng)
                continue
            m, t, k = lattice_terms(value, bound, self.epsilon_release)
            noise = discrete_laplace(t, size=idx.size, rng=rng)
            out[idx] = np.clip(np.ldexp((m + noise).astype(np.float64), k), 0.0, 1.0)
        return out

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio (float)."""
        return float(self.sample(*_counts_of(data, self.column), 1, rng)[0])
