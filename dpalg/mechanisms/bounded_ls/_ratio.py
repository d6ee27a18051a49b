"""The private ratio a/b three ways: naive, privately bounded local sensitivity, KSW.

Setting (seed 000): every unit (row) counts in b, and some also count in a, so
a unit contributes either (0, 1) or (1, 1) to (a, b). The statistic is described
by :class:`PrivateRatio` (which column marks membership in a), and released by
one of three nodes built from it:

* :class:`NaiveRatio` -- a and b separately, discrete Laplace, ε-DP;
* :class:`BoundedLSRatio` -- seed 000 Theorem 2: noisy bounds on a and b give a
  bound on LS(a/b) that holds with probability ≥ 1 − δ, and a/b is released
  with noise scaled to it, (ε₁ + ε₂, δ)-DP;
* :class:`KSWRatio` -- Kulesza, Suresh and Wang 2024 (Algorithm 3, adapted):
  the pair (a, b − a) has L1 sensitivity 1 under add/remove, ε-DP.

All noise is exact discrete Laplace (:mod:`dpalg.noise`); the seed's float
``scipy.stats.laplace`` is not used (Mironov 2012). Outputs are clamped to
[0, 1] (post-processing). Proofs: ``docs/mechanisms/ratio.md``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, name_param
from dpalg._numbers import ExactLike
from dpalg.data import ColumnUse, Dataset, Neighbouring, Relation, as_reductions
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import int_param, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms.bounded_ls._accuracy import lattice_release_error
from dpalg.mechanisms.bounded_ls._bounded_ls import lattice_release, tail_margin
from dpalg.mechanisms.bounded_ls._ratio_sensitivity import ratio_ls_bound
from dpalg.mechanisms._common.params import positive_param, relation_param, unit_interval_param
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.noise._tails import laplace_tail_quantile

__all__ = [
    "BoundedLSRatio",
    "KSWRatio",
    "NaiveRatio",
    "PrivateRatio",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_HALF = Fraction(1, 2)


# --- the statistic ------------------------------------------------------------------


def _column(value: str) -> str:
    return name_param("PrivateRatio", "numerator", value, "must be a non-empty column name")


@final
@attrs.frozen
class PrivateRatio:
    """The ratio a/b of the rows marked in a 0/1 column to all rows.

    Args:
        numerator: the column marking membership in a: a row counts in a when
            its value is non-zero (``1``/``True``), in b always. Rows whose value
            is missing (NaN/None) are dropped from both (the data policy).

    One row contributes (0, 1) or (1, 1) to (a, b). The value is ``a/b``, and
    ``1/2`` on an empty dataset. Build a release with :meth:`naive`,
    :meth:`bounded_ls` or :meth:`ksw`.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> ratio = PrivateRatio("clicked")
        >>> ratio.counts(as_dataset({"clicked": [1, 0, 0, 1, float("nan")]}))
        (2, 4)
        >>> ratio.ksw(epsilon=1)
        KSWRatio(ratio=PrivateRatio(numerator='clicked'), epsilon=Fraction(1, 1), relation='add_remove')
    """

    numerator: str = attrs.field(converter=_column)

    def columns(self) -> tuple[ColumnUse, ...]:
        """The numerator column, read as numbers (checked before the charge)."""
        return (ColumnUse(self.numerator, "numeric"),)

    def counts(self, data: Dataset) -> tuple[int, int]:
        """The exact (a, b) (private; used inside releases and for utility tests).

        A column of bools, ints or floats is read through the reductions seam (on
        Spark and polars, on the backend: nothing collected): b is the count of
        present values and a = b minus the rows whose key is ``0`` (``0``,
        ``0.0``, ``-0.0``) or ``False``; missing values are no key, as they are no
        number. Other columns (decimals, objects) are read as numbers.
        """
        if data.column_dtype(self.numerator).kind in "biuf":
            reductions = as_reductions(data)
            b = reductions.count(self.numerator)
            zeros = int(np.sum(reductions.key_counts(self.numerator, [0, False])))  # one of the two keys can match a column
            return b - zeros, b
        column = data.numeric(self.numerator)
        present = ~np.isnan(column)
        return int(np.count_nonzero(present & (column != 0))), int(np.count_nonzero(present))

    def value(self, data: Dataset) -> Fraction:
        """The exact ratio a/b (1/2 when b = 0)."""
        a, b = self.counts(data)
        return Fraction(a, b) if b else _HALF

    def naive(self, epsilon: ExactLike, *, relation: str = "add_remove") -> NaiveRatio:
        """The naive mechanism (see :class:`NaiveRatio`)."""
        return NaiveRatio(self, epsilon, relation)

    def bounded_ls(
        self, epsilon_bound: ExactLike, epsilon_release: ExactLike, delta: ExactLike, *, relation: str = "add_remove"
    ) -> BoundedLSRatio:
        """The bounded-local-sensitivity mechanism (see :class:`BoundedLSRatio`)."""
        return BoundedLSRatio(self, epsilon_bound, epsilon_release, delta, relation)

    def ksw(self, epsilon: ExactLike, *, relation: str = "add_remove") -> KSWRatio:
        """The Kulesza–Suresh–Wang mechanism (see :class:`KSWRatio`)."""
        return KSWRatio(self, epsilon, relation)


# --- shared helpers -----------------------------------------------------------------


def _clamp01(x: FloatArray) -> FloatArray:
    return np.clip(x, 0.0, 1.0)


def _naive_estimate(a_noisy: IntArray, b_noisy: IntArray) -> FloatArray:
    out = np.full(a_noisy.shape, 0.5)
    ok = b_noisy > 0
    out[ok] = a_noisy[ok] / b_noisy[ok]  # post-processing of exact integers
    return _clamp01(out)


def _check_counts(owner: str, a: int, b: int, trials: int) -> None:
    if not (0 <= a <= b):
        raise InvalidArgument(owner, "(a, b)", (a, b), "must satisfy 0 <= a <= b")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise InvalidArgument(owner, "trials", trials, "must be an int >= 1")


def _ratio_param(owner: str, value: PrivateRatio) -> PrivateRatio:
    if not isinstance(value, PrivateRatio):
        raise InvalidArgument(owner, "ratio", type(value).__name__, "must be a PrivateRatio")
    return value


# --- (a) naive ----------------------------------------------------------------------


def _nv_ratio(value: PrivateRatio) -> PrivateRatio:
    return _ratio_param("NaiveRatio", value)


def _nv_eps(value: ExactLike) -> Fraction:
    return positive_param("NaiveRatio", "epsilon", value)


def _nv_rel(value: str) -> Relation:
    return relation_param("NaiveRatio", value)


@final
@attrs.frozen
class NaiveRatio(AbstractPrimitive[PureDP]):
    """Release a and b separately with discrete Laplace noise; output â/b̂.

    Args:
        ratio: the statistic.
        epsilon: ε > 0, split equally between a and b.
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ε-DP under ``relation`` for one row. a and b each change by at most 1
        (both relations), so discrete Laplace of scale 2/ε on each is
        (ε/2)-DP (Canonne–Kamath–Steinke 2020); basic composition (Dwork–Roth
        Thm 3.16) gives ε. The output â/b̂ (1/2 when b̂ ≤ 0, clamped to [0, 1]) is
        post-processing. Exact cost: ``PureDP(ε)``.

    Examples:
        >>> PrivateRatio("in_a").naive("0.5").cost()
        PureDP('1/2')
    """

    ratio: PrivateRatio = attrs.field(converter=_nv_ratio)
    epsilon: Fraction = attrs.field(converter=_nv_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_nv_rel)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def noise_scales(self) -> tuple[Fraction, Fraction]:
        """Discrete Laplace scales of (a, b)."""
        return 2 / self.epsilon, 2 / self.epsilon

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε, from the parameters only."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "two sensitivity-1 counts, discrete Laplace scale 2/eps each (CKS 2020), basic composition",
            (("epsilon", str(self.epsilon)), ("relation", self.relation)),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, denominator: int | None = None) -> Accuracy:
        """The (1 − ``alpha``) error given a public lower bound n on b, from the parameters only.

        With |Z_a|, |Z_b| ≤ e = the exact (1 − α/2) quantile of the discrete
        Laplace noise (a union bound), |â/b̂ − a/b| = |b Z_a − a Z_b|/(b(b + Z_b))
        ≤ 2e/(n − e) for b ≥ n > e (proof in :mod:`dpalg.mechanisms.bounded_ls._accuracy`).
        Without ``denominator`` the statement is conditional (``error`` None).
        """
        return ratio_accuracy(self, alpha, denominator)

    def simulate(self, a: int, b: int, trials: int, rng: AbstractRandomness) -> FloatArray:
        """``trials`` independent outputs of the mechanism on counts (a, b) (vectorised)."""
        _check_counts("NaiveRatio", a, b, trials)
        ta, tb = self.noise_scales()
        a_noisy = a + discrete_laplace(ta, size=trials, rng=rng)
        b_noisy = b + discrete_laplace(tb, size=trials, rng=rng)
        return _naive_estimate(a_noisy, b_noisy)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio, a float in [0, 1]."""
        a, b = self.ratio.counts(data)
        return float(self.simulate(a, b, 1, rng)[0])


# --- (c) Kulesza–Suresh–Wang ----------------------------------------------------------


def _ksw_ratio(value: PrivateRatio) -> PrivateRatio:
    return _ratio_param("KSWRatio", value)


def _ksw_eps(value: ExactLike) -> Fraction:
    return positive_param("KSWRatio", "epsilon", value)


def _ksw_rel(value: str) -> Relation:
    return relation_param("KSWRatio", value)


@final
@attrs.frozen
class KSWRatio(AbstractPrimitive[PureDP]):
    """Kulesza–Suresh–Wang 2024: noise the pair (a, b − a) and output â/(â + ĉ).

    Args:
        ratio: the statistic.
        epsilon: ε > 0.
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ε-DP under ``relation`` for one row. Adding or removing a row changes
        exactly one of a and c = b − a by 1: L1 sensitivity Δ = 1. Substituting
        a row can move it from a to c, L1 sensitivity Δ = 2. Discrete Laplace of
        scale Δ/ε on each coordinate is ε-DP for an integer vector of L1
        sensitivity Δ (the pmf ratio is at most e^{(|d₁| + |d₂|)ε/Δ};
        Canonne–Kamath–Steinke 2020). Negative coordinates are set to 0 and
        â/(â + ĉ) (1/2 if both are 0) is post-processing. Exact cost: ``PureDP(ε)``.

    Examples:
        >>> KSWRatio(PrivateRatio("in_a"), 1, "substitution").noise_scales()
        (Fraction(2, 1), Fraction(2, 1))

    References:
        A. Kulesza, A. T. Suresh, Y. Wang. Mean estimation in the add-remove
        model of differential privacy. ICML 2024 (Algorithm 3).
    """

    ratio: PrivateRatio = attrs.field(converter=_ksw_ratio)
    epsilon: Fraction = attrs.field(converter=_ksw_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_ksw_rel)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def sensitivity(self) -> int:
        """L1 sensitivity of (a, b − a): 1 (add/remove) or 2 (substitution)."""
        return 1 if self.relation == "add_remove" else 2

    def noise_scales(self) -> tuple[Fraction, Fraction]:
        """Discrete Laplace scales of (a, b − a)."""
        t = self.sensitivity() / self.epsilon
        return t, t

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε, from the parameters only."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "Kulesza-Suresh-Wang 2024: (a, b-a) has L1 sensitivity 1 (add/remove) or 2 (substitution); "
            "discrete Laplace scale sensitivity/eps per coordinate (CKS 2020)",
            (("epsilon", str(self.epsilon)), ("relation", self.relation), ("sensitivity", str(self.sensitivity()))),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, denominator: int | None = None) -> Accuracy:
        """The (1 − ``alpha``) error given a public lower bound n on b, from the parameters only.

        With both noises at most e = the exact (1 − α/2) quantile in magnitude,
        â/(â + ĉ) − a/b = (u c − a v)/(T b), |u|, |v| ≤ e, T ≥ b − 2e, so the error
        is at most e/(n − 2e) for b ≥ n > 2e (Kulesza–Suresh–Wang 2024; proof in
        :mod:`dpalg.mechanisms.bounded_ls._accuracy`). Without ``denominator``
        the statement is conditional (``error`` None).
        """
        return ratio_accuracy(self, alpha, denominator)

    def simulate(self, a: int, b: int, trials: int, rng: AbstractRandomness) -> FloatArray:
        """``trials`` independent outputs on counts (a, b) (vectorised)."""
        _check_counts("KSWRatio", a, b, trials)
        t, _ = self.noise_scales()
        ones = np.maximum(a + discrete_laplace(t, size=trials, rng=rng), 0)
        zeros = np.maximum((b - a) + discrete_laplace(t, size=trials, rng=rng), 0)
        total = ones + zeros
        out = np.full(trials, 0.5)
        ok = total > 0
        out[ok] = ones[ok] / total[ok]
        return out

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio, a float in [0, 1]."""
        a, b = self.ratio.counts(data)
        return float(self.simulate(a, b, 1, rng)[0])


# --- (b) privately bounded local sensitivity ----------------------------------------------


def _bl_ratio(value: PrivateRatio) -> PrivateRatio:
    return _ratio_param("BoundedLSRatio", value)


def _bl_eps1(value: ExactLike) -> Fraction:
    return positive_param("BoundedLSRatio", "epsilon_bound", value)


def _bl_eps2(value: ExactLike) -> Fraction:
    return positive_param("BoundedLSRatio", "epsilon_release", value)


def _bl_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("BoundedLSRatio", "delta", value)


def _bl_rel(value: str) -> Relation:
    return relation_param("BoundedLSRatio", value)


def _bl_adaptive(value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("BoundedLSRatio", "adaptive", value, "must be a bool")
    return value


@final
@attrs.frozen
class BoundedLSRatio(AbstractPrimitive[ApproxDP]):
    """Seed 000 Theorem 2: release a/b with noise scaled to a private bound on LS(a/b).

    1. â, b̂: discrete Laplace of scale 2/ε₁ each (ε₁ = ``epsilon_bound``).
    2. Intervals ``[â − w, â + w]`` and ``[b̂ − w, b̂ + w]`` with
       ``w = tail_margin(2/ε₁, δ/4)``: each of the four ends misses with
       probability ≤ δ/4 (exact discrete Laplace tail). They are tightened with
       0 ≤ a ≤ b (a_lo ≥ 0, a_hi ≤ b_hi, b_lo ≥ a_lo), valid whenever all cover.
    3. If b_lo ≤ 1, bail out: the naive mechanism with ε₂ (fresh noise). With
       ``adaptive=True`` (default) also bail out when ĝ·b_lo ≥ 2, i.e. when the
       LS-scaled noise ĝ/ε₂ would exceed the naive mechanism's noise on the
       ratio, about (2/ε₂)/b (a decision on ε₁ outputs only: post-processing).
       Otherwise ĝ = :func:`ratio_ls_bound` and a/b is released on a lattice with
       discrete Laplace noise for sensitivity ĝ and ε₂ (:func:`lattice_release`),
       clamped to [0, 1].

    Args:
        ratio: the statistic.
        epsilon_bound: ε₁ > 0 for the bounds.
        epsilon_release: ε₂ > 0 for the release.
        delta: δ in (0, 1).
        relation: ``"add_remove"`` (default) or ``"substitution"`` (ĝ then also
            covers the membership switch, 1/b_lo).
        adaptive: also bail out when ĝ·b_lo ≥ 2 (``False``: the seed's rule only).

    Privacy guarantee:
        (ε₁ + ε₂, δ)-DP under ``relation`` for one row (seed 000 Theorems 1 and
        2, with the exact tail and the seed's a_lower/a_upper swap corrected).
        â and b̂ are ε₁-DP together. With probability ≥ 1 − δ all four interval
        ends cover, and then ĝ ≥ LS(a/b, x); given ĝ, the lattice release is
        ε₂-DP for every neighbour, so Theorem 1 applies. The bail-out branch is
        ε₂-DP (naive). Exact cost: ``ApproxDP(ε₁ + ε₂, δ)``.

    Examples:
        >>> node = PrivateRatio("in_a").bounded_ls("0.1", "0.9", "1e-6")
        >>> node.cost(), node.margin()
        (ApproxDP(1, '1/1000000'), 290)
    """

    ratio: PrivateRatio = attrs.field(converter=_bl_ratio)
    epsilon_bound: Fraction = attrs.field(converter=_bl_eps1)
    epsilon_release: Fraction = attrs.field(converter=_bl_eps2)
    delta: Fraction = attrs.field(converter=_bl_delta)
    relation: Relation = attrs.field(default="add_remove", converter=_bl_rel)
    adaptive: bool = attrs.field(default=True, converter=_bl_adaptive)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def noise_scale(self) -> Fraction:
        """The discrete Laplace scale of â and b̂, 2/ε₁."""
        return 2 / self.epsilon_bound

    def margin(self) -> int:
        """The half-width w of the intervals (δ/4 per end, exact tail)."""
        return _margin(self.noise_scale(), self.delta / 4)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε₁ + ε₂, δ), from the parameters only."""
        return PrivacyClaim(
            ApproxDP(self.epsilon_bound + self.epsilon_release, self.delta),
            "privately bounded local sensitivity of a/b (seed 000 Thm 1 and 2, corrected): eps1 on noisy a, b; "
            "exact discrete Laplace tail intervals, delta/4 per end; lattice discrete Laplace scaled to the bound / eps2",
            (
                ("epsilon_bound", str(self.epsilon_bound)),
                ("epsilon_release", str(self.epsilon_release)),
                ("delta", str(self.delta)),
                ("margin", str(self.margin())),
                ("relation", self.relation),
            ),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, denominator: int | None = None) -> Accuracy:
        """The (1 − ``alpha``) error given a public lower bound n on b, from the parameters only.

        α/2 bounds b̂'s noise, so ĝ ≤ (n + e₁ + w)/((n − e₁ − w)(n − e₁ − w − 1));
        α/2 bounds the release noise scaled to it (and the naive bail-out's
        when it can run). Proof in :mod:`dpalg.mechanisms.bounded_ls._accuracy`
        (seed 000 Thm 1 and 2). Without ``denominator`` the statement is
        conditional (``error`` None).
        """
        return bounded_ls_ratio_accuracy(self, alpha, denominator)

    def bounds(self, a_noisy: int, b_noisy: int) -> tuple[int, int, int, int]:
        """The tightened intervals (a_lo, a_hi, b_lo, b_hi) from the noisy counts."""
        w = self.margin()
        a_lo, a_hi = max(a_noisy - w, 0), a_noisy + w
        b_lo, b_hi = b_noisy - w, b_noisy + w
        return a_lo, min(a_hi, b_hi), max(b_lo, a_lo), b_hi

    def ls_bound(self, a_noisy: int, b_noisy: int) -> Fraction | None:
        """ĝ from the noisy counts (ignores ``adaptive``), or None when b_lo ≤ 1."""
        a_lo, a_hi, b_lo, b_hi = self.bounds(a_noisy, b_noisy)
        if b_lo <= 1 or a_lo > a_hi:
            return None
        return ratio_ls_bound(a_lo, a_hi, b_lo, b_hi, self.relation)

    def use_bound(self, a_noisy: int, b_noisy: int) -> Fraction | None:
        """ĝ if the LS release is used, None on bail-out (post-processing of â, b̂)."""
        g = self.ls_bound(a_noisy, b_noisy)
        if g is None or (self.adaptive and g * self.bounds(a_noisy, b_noisy)[2] >= 2):
            return None
        return g

    def simulate(self, a: int, b: int, trials: int, rng: AbstractRandomness) -> FloatArray:
        """``trials`` independent outputs on counts (a, b)."""
        _check_counts("BoundedLSRatio", a, b, trials)
        t = self.noise_scale()
        a_noisy = (a + discrete_laplace(t, size=trials, rng=rng)).tolist()
        b_noisy = (b + discrete_laplace(t, size=trials, rng=rng)).tolist()
        out = np.empty(trials)
        go: list[int] = []
        bounds: list[Fraction] = []
        for i, (an, bn) in enumerate(zip(a_noisy, b_noisy)):
            g = self.use_bound(int(an), int(bn))
            if g is not None:
                go.append(i)
                bounds.append(g)
        value = Fraction(a, b) if b else _HALF
        released = lattice_release([value] * len(go), bounds, self.epsilon_release, rng)
        out[go] = [float(v) for v in released]
        bail = np.ones(trials, dtype=bool)
        bail[go] = False
        n_bail = int(bail.sum())
        if n_bail:
            fallback = NaiveRatio(self.ratio, self.epsilon_release, self.relation)
            out[bail] = fallback.simulate(a, b, n_bail, rng)
        return _clamp01(out)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy ratio, a float in [0, 1]."""
        a, b = self.ratio.counts(data)
        return float(self.simulate(a, b, 1, rng)[0])


_MARGINS: dict[tuple[Fraction, Fraction], int] = {}


def _margin(scale: Fraction, delta: Fraction) -> int:
    key = (scale, delta)
    if key not in _MARGINS:
        _MARGINS[key] = tail_margin(scale, delta)
    return _MARGINS[key]


def _denominator(owner: str, value: object, above: int) -> int:
    return int_param(owner, "denominator", value, above + 1, f"a public lower bound on the denominator b, above {above}")


def ratio_accuracy(node: NaiveRatio | KSWRatio, alpha: ExactLike, denominator: int | None) -> Accuracy:
    """The (1 − α) error of :class:`NaiveRatio` / :class:`KSWRatio` given ``b >= denominator`` (proof: :mod:`dpalg.mechanisms.bounded_ls._accuracy`)."""
    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    scale, _ = node.noise_scales()
    e = laplace_tail_quantile(scale, a / 2)[0]
    naive = isinstance(node, NaiveRatio)
    need = e if naive else 2 * e  # b must exceed this for the noisy denominator to stay positive
    pair = "a and b" if naive else "a and b - a"
    noise = f"discrete Laplace, scale {up_text(scale)}, on {pair} each"
    formula = f"error <= 2*{e}/(n - {e})" if naive else f"error <= {e}/(n - {2 * e})"
    if denominator is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true denominator b > {need}",
                        (formula, "pass denominator=n (a public lower bound on b) for a number"))
    n = _denominator(owner, denominator, need)
    error = Fraction(2 * e, n - e) if naive else Fraction(e, n - 2 * e)
    return Accuracy(a, min(error, Fraction(1)), "absolute", noise, False, f"the true denominator b is at least {n}", (formula,))


def bounded_ls_ratio_accuracy(node: BoundedLSRatio, alpha: ExactLike, denominator: int | None) -> Accuracy:
    """The (1 − α) error of :class:`BoundedLSRatio` given ``b >= denominator`` (proof: :mod:`dpalg.mechanisms.bounded_ls._accuracy`)."""
    owner = "BoundedLSRatio.accuracy"
    a = alpha_param(owner, alpha)
    w = node.margin()
    e1 = laplace_tail_quantile(node.noise_scale(), a / 2)[0]
    e2 = laplace_tail_quantile(2 / node.epsilon_release, a / 4)[0]
    reach = e1 + w
    noise = (f"bounds: discrete Laplace, scale {up_text(node.noise_scale())}, margin {w}; release: discrete Laplace scaled to "
             f"the bound / {up_text(node.epsilon_release)} (lattice 2**-20 of it), or naive with scale {up_text(2 / node.epsilon_release)}")
    formula = f"g^ <= (n + {reach})/((n - {reach})(n - {reach + 1})); error <= (g^/eps2)*ln(2/alpha) (+2**-20 relative)"
    if denominator is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true denominator b >= {reach + 2}",
                        (formula, "pass denominator=n (a public lower bound on b) for a number"))
    n = int_param(owner, "denominator", denominator, reach + 2, f"a public lower bound on b, at least {reach + 2}")
    low = n - reach
    bound = Fraction(n + reach, low * (low - 1))
    error = lattice_release_error(bound, node.epsilon_release, a / 2)
    notes = [formula]
    if node.adaptive and low <= 2 * w + 2:  # the naive branch may run (proof: bounded_ls/_accuracy.py)
        naive = Fraction(2 * e2, n - e2) if n > e2 else Fraction(1)
        error = max(error, naive)
        notes.append(f"the naive bail-out may run (b - {reach} <= {2 * w + 2}): its bound 2*{e2}/(n - {e2}) is included")
    return Accuracy(a, min(error, Fraction(1)), "absolute", noise, False, f"the true denominator b is at least {n}", tuple(notes))
