"""Per-coordinate noise calibration for vector sums (Lebeda–Pagh, seed 001).

A vector sum ``f(x) = sum_k x_k`` whose coordinate i changes by at most Δ_i
between neighbours (box sensitivity) can take noise of a different scale on
each coordinate. For a fixed privacy level the expected error
``E ||M(x) - f(x)||_p^p`` is minimised by

* Gaussian: ``σ_i ∝ Δ_i^{2/(p+2)}``, privacy ``ρ = sum_i Δ_i² / (2 σ_i²)`` (zCDP);
* Laplace: ``b_i ∝ Δ_i^{1/(p+1)}``, privacy ``ε = sum_i Δ_i / b_i``.

The constants are chosen so that the privacy is *exactly* the target: the
exponents give positive rational weights ``w_i`` (rounded to 24 significant
bits -- any positive weights are private, the rounding only moves the error a
hair from the optimum) and the common factor is then the exact rational that
makes the cost equal the target. Noise is exact discrete noise on a lattice of
multiples of ``2**k_i`` per coordinate, and Δ_i is the sensitivity of the
fixed-point sum on that lattice (bounds rounded outward), so it holds exactly.

Derivations and the comparison with the isotropic (L2-/L1-ball) mechanism are
in ``docs/mechanisms/per_coordinate.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar, Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring, Relation, SumSpec, as_reductions
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ZCDP, PureDP
from dpalg.mechanisms._common.accuracy import up_text
from dpalg.mechanisms._common.params import floor_log2, positive_param, relation_param
from dpalg.mechanisms.global_noise._accuracy import noise_quantile
from dpalg.noise import AbstractRandomness, clipped_sum_sensitivity, discrete_gaussian, discrete_laplace
from dpalg.queries import Query

__all__ = [
    "Calibration",
    "box_sensitivities",
    "CalibratedGaussianSum",
    "CalibratedLaplaceSum",
    "calibrate_gaussian",
    "calibrate_laplace",
    "derived_error_ratio",
    "error_moment",
]

Calibration = Literal["per_coordinate", "isotropic"]
Kind = Literal["gaussian", "laplace"]
FloatArray = npt.NDArray[np.float64]
_WEIGHT_BITS = 24
_GRANULARITY_BITS = 20


def _dyadic(x: float) -> Fraction:
    """A positive rational within a relative 2**-24 of ``x > 0``."""
    mantissa, exponent = math.frexp(x)
    return Fraction(round(mantissa * 2**_WEIGHT_BITS)) * Fraction(2) ** (exponent - _WEIGHT_BITS)


def _sensitivities(owner: str, values: Sequence[ExactLike]) -> tuple[Fraction, ...]:
    out = tuple(to_fraction(v, owner=owner, field="sensitivities") for v in values)
    if not out:
        raise InvalidArgument(owner, "sensitivities", (), "must contain at least one coordinate")
    for v in out:
        if v <= 0:
            raise InvalidArgument(owner, "sensitivities", v, "must all be > 0 (drop constant coordinates)")
    return out


def _exponent(owner: str, p: ExactLike) -> Fraction:
    return positive_param(owner, "p", p)


def calibrate_gaussian(
    sensitivities: Sequence[ExactLike], rho: ExactLike, p: ExactLike = 2, *, calibration: Calibration = "per_coordinate"
) -> tuple[Fraction, ...]:
    """Per-coordinate variances ``σ_i²`` (rational) with ``sum Δ_i²/(2σ_i²) = ρ`` exactly.

    ``σ_i² = w_i C`` with ``w_i ≈ Δ_i^{4/(p+2)}`` (``w_i = 1`` for the isotropic
    calibration) and ``C = (sum_j Δ_j²/w_j) / (2ρ)``, so that
    ``sum_i Δ_i²/(2 w_i C) = ρ``.

    Examples:
        >>> s2 = calibrate_gaussian([1, Fraction(1, 2)], Fraction(1, 2))
        >>> sum(Fraction(d) ** 2 / (2 * v) for d, v in zip([1, Fraction(1, 2)], s2))
        Fraction(1, 2)
        >>> calibrate_gaussian([1, 1], 1, calibration="isotropic")
        (Fraction(1, 1), Fraction(1, 1))
    """
    owner = "calibrate_gaussian"
    deltas = _sensitivities(owner, sensitivities)
    target = positive_param(owner, "rho", rho)
    exponent = _exponent(owner, p)
    weights = _weights(deltas, 4 / (float(exponent) + 2), calibration, owner)
    scale = sum((d * d / w for d, w in zip(deltas, weights)), Fraction(0)) / (2 * target)
    return tuple(w * scale for w in weights)


def calibrate_laplace(
    sensitivities: Sequence[ExactLike], epsilon: ExactLike, p: ExactLike = 2, *, calibration: Calibration = "per_coordinate"
) -> tuple[Fraction, ...]:
    """Per-coordinate Laplace scales ``b_i`` (rational) with ``sum Δ_i/b_i = ε`` exactly.

    ``b_i = w_i C`` with ``w_i ≈ Δ_i^{1/(p+1)}`` (1 for isotropic) and
    ``C = (sum_j Δ_j/w_j) / ε``.

    Examples:
        >>> b = calibrate_laplace([1, Fraction(1, 8)], 1, p=2)
        >>> sum(Fraction(d) / s for d, s in zip([1, Fraction(1, 8)], b))
        Fraction(1, 1)
        >>> calibrate_laplace([1, 1], 2, calibration="isotropic")
        (Fraction(1, 1), Fraction(1, 1))
    """
    owner = "calibrate_laplace"
    deltas = _sensitivities(owner, sensitivities)
    target = positive_param(owner, "epsilon", epsilon)
    exponent = _exponent(owner, p)
    weights = _weights(deltas, 1 / (float(exponent) + 1), calibration, owner)
    scale = sum((d / w for d, w in zip(deltas, weights)), Fraction(0)) / target
    return tuple(w * scale for w in weights)


def _weights(deltas: tuple[Fraction, ...], power: float, calibration: str, owner: str) -> tuple[Fraction, ...]:
    if calibration == "isotropic":
        return tuple(Fraction(1) for _ in deltas)
    if calibration != "per_coordinate":
        raise InvalidArgument(owner, "calibration", calibration, "must be 'per_coordinate' or 'isotropic'")
    # Δ^power = 2^(power log2 Δ), computed from the exact log2 so that tiny Δ do not underflow
    out = []
    for d in deltas:
        log2 = math.log2(d.numerator) - math.log2(d.denominator)
        e = math.floor(power * log2)
        out.append(_dyadic(2.0 ** (power * log2 - e)) * Fraction(2) ** e)
    return tuple(out)


def error_moment(kind: Kind, scale: float, p: float) -> float:
    """``E|X|^p`` of the continuous noise: Gaussian (``scale`` = σ²) or Laplace (``scale`` = b).

    Gaussian: ``σ^p 2^{p/2} Γ((p+1)/2)/sqrt(π)``; Laplace: ``Γ(p+1) b^p``. The exact
    discrete noise at lattice scales of ``2**20`` steps matches these to about
    ``1e-12`` relative.
    """
    if kind == "gaussian":
        return float(math.pow(scale, p / 2) * math.pow(2, p / 2) * math.gamma((p + 1) / 2) / math.sqrt(math.pi))
    return float(math.gamma(p + 1) * math.pow(scale, p))


def derived_error_ratio(sensitivities: Sequence[ExactLike], p: ExactLike, kind: Kind) -> float:
    """The derived ratio of E||error||_p^p, per-coordinate over isotropic, at equal privacy.

    Gaussian: ``||Δ||_{2p/(p+2)}^p / (d ||Δ||_2^p)``; Laplace:
    ``||Δ||_{p/(p+1)}^p / (d ||Δ||_1^p)`` (see the docs for the derivation).

    Examples:
        >>> deltas = [Fraction(1, 2**i) for i in range(1, 11)]
        >>> round(derived_error_ratio(deltas, 2, "gaussian"), 4), round(derived_error_ratio(deltas, 2, "laplace"), 4)
        (0.2994, 0.4799)
    """
    deltas = [float(d) for d in _sensitivities("derived_error_ratio", sensitivities)]
    q = float(_exponent("derived_error_ratio", p))
    d = len(deltas)
    if kind == "gaussian":
        s = sum(x ** (2 * q / (q + 2)) for x in deltas)
        return float(s ** ((q + 2) / 2) / (d * math.sqrt(sum(x * x for x in deltas)) ** q))
    t = sum(x ** (q / (q + 1)) for x in deltas)
    return float(t ** (q + 1) / (d * sum(deltas) ** q))


# --- nodes ----------------------------------------------------------------------------


def _queries(owner: str, value: Sequence[Query]) -> tuple[Query, ...]:
    queries = tuple(value)
    if not queries:
        raise InvalidArgument(owner, "queries", (), "must contain at least one Query.sum(column) | Clip(l, u)")
    for i, q in enumerate(queries):
        if not isinstance(q, Query) or q.kind != "sum" or q.user is not None:
            raise InvalidArgument(owner, f"queries[{i}]", q, "must be a row-level Query.sum(column) | Clip(l, u)")
        lower, upper = q.require_bounds(owner)
        if lower == 0 == upper:
            raise InvalidArgument(owner, f"queries[{i}]", q, "has sensitivity 0 (clip [0, 0]); drop the coordinate")
    return queries


def _calibration(owner: str, value: str) -> Calibration:
    if value == "per_coordinate":
        return "per_coordinate"
    if value == "isotropic":
        return "isotropic"
    raise InvalidArgument(owner, "calibration", value, "must be 'per_coordinate' or 'isotropic'")


def box_sensitivities(queries: Sequence[Query], relation: Relation, ks: Sequence[int] | None = None) -> tuple[Fraction, ...]:
    """Per-coordinate sensitivities of the clipped sums (box sensitivity).

    Without ``ks``: the real-valued ones, ``max(|l|, |u|)`` (add/remove) or
    ``max(u, 0) − min(l, 0)`` (substitution; a missing value counts as absent, so
    replacing a row can also add or remove a value; this is ``u − l`` when
    ``l ≤ 0 ≤ u``). With lattice exponents ``ks``: the exact sensitivities of the
    fixed-point sums (:func:`dpalg.noise.clipped_sum_sensitivity`).

    Examples:
        >>> from dpalg import Clip
        >>> qs = [Query.sum("x") | Clip(-1, 3), Query.sum("y") | Clip(2, 5)]
        >>> box_sensitivities(qs, "add_remove"), box_sensitivities(qs, "substitution")
        ((Fraction(3, 1), Fraction(5, 1)), (Fraction(4, 1), Fraction(5, 1)))
    """
    out: list[Fraction] = []
    for i, q in enumerate(queries):
        lower, upper = q.require_bounds("box_sensitivities")
        if ks is not None:
            out.append(clipped_sum_sensitivity(lower, upper, ks[i], relation))
        elif relation == "add_remove":
            out.append(max(abs(lower), abs(upper)))
        else:
            out.append(max(upper, Fraction(0)) - min(lower, Fraction(0)))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _plan(queries: tuple[Query, ...], relation: Relation, target: Fraction, p: Fraction, calibration: Calibration, kind: Kind) -> tuple[tuple[int, ...], tuple[Fraction, ...], tuple[Fraction, ...]]:
    """(k_i, Δ'_i, noise parameter_i): the lattice, the exact sensitivity on it, σ_i² or b_i."""
    real = box_sensitivities(queries, relation)
    calibrate = calibrate_gaussian if kind == "gaussian" else calibrate_laplace
    first = calibrate(real, target, p, calibration=calibration)
    # the lattice step is about 2**-20 of the coordinate's noise scale (σ_i or b_i)
    ks = tuple((floor_log2(v) // 2 if kind == "gaussian" else floor_log2(v)) - _GRANULARITY_BITS for v in first)
    lattice = box_sensitivities(queries, relation, ks)
    return ks, lattice, calibrate(lattice, target, p, calibration=calibration)


class _VectorSum:
    """Shared behaviour of the two nodes (not a node itself)."""

    queries: tuple[Query, ...]
    p: Fraction
    calibration: Calibration
    relation: Relation
    _kind: ClassVar[Kind]

    def _target(self) -> Fraction:
        raise NotImplementedError  # pragma: no cover

    def lattice(self) -> tuple[tuple[int, ...], tuple[Fraction, ...], tuple[Fraction, ...]]:
        """``(k_i, Δ_i, param_i)``: lattice exponents, exact lattice sensitivities (real
        units) and noise parameters (σ_i² for Gaussian, b_i for Laplace, real units)."""
        return _plan(self.queries, self.relation, self._target(), self.p, self.calibration, self._kind)

    def expected_error(self) -> float:
        """E||noise||_p^p from the continuous moments of the chosen parameters."""
        _, _, params = self.lattice()
        return sum(error_moment(self._kind, float(v), float(self.p)) for v in params)

    def _noise(self, trials: int, rng: AbstractRandomness) -> list[npt.NDArray[np.int64]]:
        ks, _, params = self.lattice()
        out = []
        for k, v in zip(ks, params):
            if self._kind == "gaussian":
                out.append(discrete_gaussian(v / Fraction(4) ** k, size=trials, rng=rng))
            else:
                out.append(discrete_laplace(v / Fraction(2) ** k, size=trials, rng=rng))
        return out

    def accuracy(self, alpha: ExactLike = Fraction(1, 20)) -> Accuracy:
        """The (1 − ``alpha``) error of each coordinate, from the parameters only (no data touched).

        ``error`` is the largest coordinate's exact noise quantile; the notes
        list every coordinate's, and the bounds that hold for all at once.
        """
        return per_coordinate_accuracy(self, alpha)  # type: ignore[arg-type]  # only the two nodes mix this in

    def simulate_noise(self, trials: int, rng: AbstractRandomness) -> FloatArray:
        """``trials × d`` noise vectors in real units (exact integers times ``2**k_i``)."""
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            raise InvalidArgument(type(self).__name__, "trials", trials, "must be an int >= 1")
        ks, _, _ = self.lattice()
        cols = [np.ldexp(z.astype(np.float64), k) for z, k in zip(self._noise(trials, rng), ks)]
        return np.stack(cols, axis=1)

    def _release(self, data: Dataset, rng: AbstractRandomness) -> tuple[float, ...]:
        ks, _, _ = self.lattice()
        noise = self._noise(1, rng)
        specs = []
        for q, k in zip(self.queries, ks):
            lower, upper = q.require_bounds(type(self).__name__)
            assert q.column is not None
            specs.append(SumSpec(q.column, lower, upper, k))
        sums = as_reductions(data).clipped_sums(specs)  # exact fixed-point sums through the reductions seam
        return tuple(float((s.total + int(z[0])) * Fraction(2) ** s.k) for s, z in zip(sums, noise))


def _g_queries(value: Sequence[Query]) -> tuple[Query, ...]:
    return _queries("CalibratedGaussianSum", value)


def _g_rho(value: ExactLike) -> Fraction:
    return positive_param("CalibratedGaussianSum", "rho", value)


def _g_p(value: ExactLike) -> Fraction:
    return positive_param("CalibratedGaussianSum", "p", value)


def _g_cal(value: str) -> Calibration:
    return _calibration("CalibratedGaussianSum", value)


def _g_rel(value: str) -> Relation:
    return relation_param("CalibratedGaussianSum", value)


@final
@attrs.frozen
class CalibratedGaussianSum(_VectorSum, AbstractPrimitive[ZCDP]):
    """A vector of clipped column sums with per-coordinate discrete Gaussian noise, ρ-zCDP.

    Args:
        queries: one ``Query.sum(column) | Clip(l_i, u_i)`` per coordinate; the
            clipping gives the box sensitivity Δ_i (see :func:`box_sensitivities`).
        rho: ρ > 0. For (ε, δ) wrap the node: ``ZCDPToApprox(node, delta=...)``.
        p: the error moment to minimise, E||error||_p^p (p > 0, default 2).
        calibration: ``"per_coordinate"`` (σ_i ∝ Δ_i^{2/(p+2)}, Lebeda–Pagh) or
            ``"isotropic"`` (one σ for all coordinates, for comparison).
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ρ-zCDP under ``relation`` for one row, exactly. Each coordinate is an
        exact fixed-point sum on the lattice ``2**k_i Z`` with sensitivity Δ_i
        (bounds rounded outward); discrete Gaussian noise of variance σ_i² on it
        is (Δ_i²/(2σ_i²))-zCDP (Canonne–Kamath–Steinke 2020, Theorem 14), and
        the coordinates compose (Bun–Steinke 2016, Lemma 2.3) to
        ``sum_i Δ_i²/(2σ_i²)``, which :func:`calibrate_gaussian` makes equal to
        ρ exactly. Exact cost: ``ZCDP(ρ)``.

    Examples:
        >>> from dpalg import Clip
        >>> node = CalibratedGaussianSum([Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(0, "0.01")], rho="0.5")
        >>> node.cost()
        ZCDP('1/2')
        >>> ks, deltas, variances = node.lattice()
        >>> sum(d * d / (2 * v) for d, v in zip(deltas, variances))
        Fraction(1, 2)

    References:
        C. J. Lebeda, R. Pagh. Calibrating noise when coordinates have different
        sensitivity (seed 001).
    """

    queries: tuple[Query, ...] = attrs.field(converter=_g_queries)
    rho: Fraction = attrs.field(converter=_g_rho)
    p: Fraction = attrs.field(default=Fraction(2), converter=_g_p)
    calibration: Calibration = attrs.field(default="per_coordinate", converter=_g_cal)
    relation: Relation = attrs.field(default="add_remove", converter=_g_rel)
    _kind: ClassVar[Kind] = "gaussian"

    def __attrs_post_init__(self) -> None:
        self.lattice()  # fail at construction if a lattice or scale is out of range

    def _target(self) -> Fraction:
        return self.rho

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def privacy(self) -> PrivacyClaim[ZCDP]:
        """ρ, from the parameters only."""
        ks, deltas, params = self.lattice()
        return PrivacyClaim(
            ZCDP(self.rho),
            "per-coordinate discrete Gaussian (Lebeda-Pagh calibration; CKS 2020 Thm 14 per coordinate, "
            "zCDP composition): rho = sum_i Delta_i^2/(2 sigma_i^2), exact",
            (
                ("rho", str(self.rho)),
                ("calibration", self.calibration),
                ("p", str(self.p)),
                ("sensitivities", ", ".join(str(d) for d in deltas)),
                ("sigma2", ", ".join(str(v) for v in params)),
                ("relation", self.relation),
            ),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy vector sum, a tuple of floats (lattice points)."""
        return self._release(data, rng)


def _l_queries(value: Sequence[Query]) -> tuple[Query, ...]:
    return _queries("CalibratedLaplaceSum", value)


def _l_eps(value: ExactLike) -> Fraction:
    return positive_param("CalibratedLaplaceSum", "epsilon", value)


def _l_p(value: ExactLike) -> Fraction:
    return positive_param("CalibratedLaplaceSum", "p", value)


def _l_cal(value: str) -> Calibration:
    return _calibration("CalibratedLaplaceSum", value)


def _l_rel(value: str) -> Relation:
    return relation_param("CalibratedLaplaceSum", value)


@final
@attrs.frozen
class CalibratedLaplaceSum(_VectorSum, AbstractPrimitive[PureDP]):
    """A vector of clipped column sums with per-coordinate discrete Laplace noise, ε-DP.

    Args:
        queries: one ``Query.sum(column) | Clip(l_i, u_i)`` per coordinate.
        epsilon: ε > 0.
        p: the error moment to minimise (p > 0, default 2).
        calibration: ``"per_coordinate"`` (b_i ∝ Δ_i^{1/(p+1)}) or ``"isotropic"``
            (one scale ||Δ||_1/ε for all coordinates).
        relation: ``"add_remove"`` (default) or ``"substitution"``.

    Privacy guarantee:
        ε-DP under ``relation`` for one row, exactly: discrete Laplace of scale
        b_i on a coordinate of sensitivity Δ_i is (Δ_i/b_i)-DP (CKS 2020), and
        basic composition over the coordinates gives ``sum_i Δ_i/b_i``, which
        :func:`calibrate_laplace` makes equal to ε exactly. Exact cost: ``PureDP(ε)``.

    Examples:
        >>> from dpalg import Clip
        >>> node = CalibratedLaplaceSum([Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(0, "0.01")], epsilon=1)
        >>> ks, deltas, scales = node.lattice()
        >>> sum(d / b for d, b in zip(deltas, scales))
        Fraction(1, 1)
    """

    queries: tuple[Query, ...] = attrs.field(converter=_l_queries)
    epsilon: Fraction = attrs.field(converter=_l_eps)
    p: Fraction = attrs.field(default=Fraction(2), converter=_l_p)
    calibration: Calibration = attrs.field(default="per_coordinate", converter=_l_cal)
    relation: Relation = attrs.field(default="add_remove", converter=_l_rel)
    _kind: ClassVar[Kind] = "laplace"

    def __attrs_post_init__(self) -> None:
        self.lattice()

    def _target(self) -> Fraction:
        return self.epsilon

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε, from the parameters only."""
        ks, deltas, params = self.lattice()
        return PrivacyClaim(
            PureDP(self.epsilon),
            "per-coordinate discrete Laplace (Lebeda-Pagh calibration; CKS 2020, basic composition): "
            "eps = sum_i Delta_i/b_i, exact",
            (
                ("epsilon", str(self.epsilon)),
                ("calibration", self.calibration),
                ("p", str(self.p)),
                ("sensitivities", ", ".join(str(d) for d in deltas)),
                ("scales", ", ".join(str(v) for v in params)),
                ("relation", self.relation),
            ),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy vector sum, a tuple of floats (lattice points)."""
        return self._release(data, rng)


def per_coordinate_accuracy(node: CalibratedGaussianSum | CalibratedLaplaceSum, alpha: ExactLike) -> Accuracy:
    """Per-coordinate (1 − α) errors of a calibrated vector sum: coordinate ``i`` gets its own exact
    noise on its own lattice, so its bound is that noise's exact quantile times ``2**k_i``; ``error`` is
    the largest, and a note gives every coordinate's and the simultaneous bound (α/d each, a union bound)."""
    owner = type(node).__name__
    a = alpha_param(f"{owner}.accuracy", alpha)
    laplace = isinstance(node, CalibratedLaplaceSum)
    ks, _, params = node.lattice()
    units = [v / Fraction(2) ** k if laplace else v / Fraction(4) ** k for k, v in zip(ks, params)]
    each = [noise_quantile(laplace, u, a)[0] * Fraction(2) ** k for u, k in zip(units, ks)]
    together = [noise_quantile(laplace, u, a / len(units))[0] * Fraction(2) ** k for u, k in zip(units, ks)]
    name = "discrete Laplace" if laplace else "discrete Gaussian"
    notes = (
        "per coordinate: " + ", ".join(f"±{up_text(e)}" for e in each),
        "all coordinates at once (union bound): " + ", ".join(f"±{up_text(e)}" for e in together),
    )
    tight = len(units) == 1  # one coordinate: its exact quantile; several: the largest of exact per-coordinate quantiles
    return Accuracy(a, max(each), "absolute, largest coordinate", f"{name} per coordinate, calibrated ({node.calibration})", tight, None, notes)
