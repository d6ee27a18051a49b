"""Admissible noise for smooth sensitivity, its privacy constants and numerical checks.

A smooth-sensitivity release is ``f(x) + (S(x)/α)·Z`` where ``S`` is a β-smooth
upper bound on the local sensitivity (:mod:`dpalg.sensitivity._smooth`) and ``Z``
a fixed noise distribution. Which ``(α, β)`` are allowed depends on ``Z``:

* **(ε, δ)-DP** (NRS07 Def. 2.5, Lemma 2.6): ``Z`` is (α, β)-admissible if for all
  ``|Δ| ≤ α``, ``|λ| ≤ β`` and sets ``E``: *sliding*
  ``P[Z ∈ E] ≤ e^{ε/2} P[Z ∈ E + Δ] + δ/2`` and *dilation*
  ``P[Z ∈ E] ≤ e^{ε/2} P[Z ∈ e^λ E] + δ/2``. Then the release is (ε, δ)-DP.
* **zCDP** (Bun–Steinke 2019, "Average-case averages", §3): if
  ``D_a(Z ‖ e^{t'} Z + s') ≤ a·ε²/2`` for all ``a > 1``, ``|s'| ≤ s``, ``|t'| ≤ t``
  (both orders), then ``f(x) + (S(x)/s)·Z`` with a ``t``-smooth ``S`` is
  ``ρ = ε²/2``-zCDP.

Noises (unit scale; each class gives its density, its constants as functions of
the privacy parameters, and the result it relies on):

=====================  ===========================  ===========================================
noise                  privacy                      constants
=====================  ===========================  ===========================================
LaplaceNoise           (ε, δ)-DP, NRS07 L. 2.9      α = ε/2, β = ε/(2 ln(2/δ))
CauchyNoise(γ)         ε-DP, NRS07 L. 2.7 / here    tight: α = ε/(2(γ−1)^{(γ−1)/γ}),
                                                    β = ε/(2 max(1, γ−1)); NRS07:
                                                    α = β = ε/(2(γ+1)) (γ = 2: ε/6)
LaplaceLogNormal(σ)    ε²/2-zCDP, BS19              ε = t/σ + e^{3σ²/2}·s
UniformLogNormal(σ)    ε²/2-zCDP, BS19 (σ ≥ √2)     ε = t/σ + e^{3σ²/2}·√(2/π)/σ·s
ArsinhNormal(σ)        ε²/2-zCDP, BS19              ε = (2/(3σ) + σ/2)·s + √(t(t/σ² + 1/σ + 2))
=====================  ===========================  ===========================================

The Cauchy "tight" constants are derived here (docs/mechanisms/smooth_sensitivity.md):
``|d/dz ln h| ≤ (γ−1)^{(γ−1)/γ}`` (attained at ``|z|^γ = γ − 1``) and the dilation
log-ratio lies in ``[−λ, (γ−1)λ]``; each property then costs exactly ε/2 at its
extreme, so doubling either constant breaks it (the tests check this). NRS07's
constants are smaller (hence also valid) and are available as ``variant="nrs07"``.

Sampling without floating-point noise (:meth:`AbstractAdmissibleNoise.sample_lattice`,
Laplace and Cauchy(γ = 2), whose quantile functions are closed form): draw ``m = 128``
uniform bits ``U`` (two ``uint64`` words of the :class:`AbstractRandomness`), take the
cell midpoint ``u = (2U + 1)/2^{m+1}``, evaluate ``scale·F⁻¹(u)/2^k`` in **mpmath interval
arithmetic** (raising the precision until the enclosure decides the rounding) and
round to the nearest integer (ties cannot occur: the values are transcendental
except at ``u = 1/2``, which is not a midpoint). The output is a deterministic
function of ``U`` and is exactly ``round(scale·F⁻¹(u)/2^k)``. Guarantee: couple
``u`` with a continuous ``V`` uniform in the same cell; the two outputs differ only
if the cell contains a rounding boundary, so the total variation distance to the
ideal lattice-rounded distribution ``round(scale·Z/2^k)`` is at most
``τ = P[|Z| > z₀] + (2 z₀·scale/2^k + 3)·2^{−m}`` for any ``z₀`` (:meth:`tv_bound`).
With ``scale/2^k = 2^{20}``: ``τ < 2^{−90}`` (Laplace), ``τ < 2^{−50}`` (Cauchy).
Consequently a release that is (ε, δ)-DP with ideal noise is
``(ε, δ + (1 + e^ε)·τ)``-DP with this sampler; **pure ε-DP is not claimed**
exactly. The zCDP noises have no closed-form quantile and no lattice sampler here
(:meth:`sample_lattice` raises :class:`~dpalg.Unsupported`).

How a mechanism uses it: release ``round_to_lattice(f(x), k) + sample_lattice(…)``
(both on ``2^k ℤ``) with ``scale = (S(x) + 2^k)/α``: rounding ``f`` first changes its
local sensitivity by at most ``2^k`` and ``S + 2^k`` is still β-smooth, so the sum
equals the lattice rounding of ``round(f) + scale·Z`` -- post-processing of the
ideal mechanism.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.5, Lemmas 2.6, 2.7, 2.9).
    M. Bun, T. Steinke. Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation. NeurIPS 2019 (§3, LLN, ULN, arsinh-normal).
    I. Mironov. On Significance of the Least Significant Bits for Differential
    Privacy. CCS 2012.
"""

from __future__ import annotations

import abc
import math
from fractions import Fraction
from typing import Final, Literal, final

import attrs
import mpmath
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.noise._random import RngLike, resolve_rng

__all__ = [
    "AbstractAdmissibleNoise",
    "Admissibility",
    "ArsinhNormal",
    "CauchyNoise",
    "LaplaceLogNormal",
    "LaplaceNoise",
    "PrivacyCheck",
    "UniformLogNormal",
    "check_admissible",
    "check_zcdp",
    "lln_optimal_sigma",
]

FloatArray = npt.NDArray[np.float64]
_M_BITS: Final = 128


def _pos(value: object, owner: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, field, value, "must be a positive real number")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidArgument(owner, field, value, "must be finite and > 0")
    return v


@final
@attrs.frozen
class Admissibility:
    """Constants of one noise for one privacy target.

    Attributes:
        alpha: the shift budget (noise scale is ``S(x)/alpha``); ``s`` for zCDP.
        beta: the smoothness the bound ``S`` must have; ``t`` for zCDP.
        measure: ``"pure"``, ``"approx"`` or ``"zcdp"``.
        eps: ε of the guarantee (for zCDP, ``ρ = eps²/2``).
        delta: δ of the guarantee (0 for pure and zCDP).
        theorem: the result relied on.
    """

    alpha: float
    beta: float
    measure: Literal["pure", "approx", "zcdp"]
    eps: float
    delta: float
    theorem: str

    @property
    def rho(self) -> float:
        """``eps²/2`` (the zCDP parameter when ``measure == "zcdp"``)."""
        return self.eps**2 / 2


@final
@attrs.frozen
class PrivacyCheck:
    """Result of a numerical privacy check: the worst value found vs. what is allowed."""

    name: str
    worst: float
    allowed: float
    where: str

    @property
    def ok(self) -> bool:
        """Whether ``worst ≤ allowed`` (with a 1e-9 relative numerical tolerance)."""
        return self.worst <= self.allowed * (1 + 1e-9) + 1e-15


class AbstractAdmissibleNoise(abc.ABC):
    """A unit-scale noise distribution for smooth-sensitivity releases."""

    @abc.abstractmethod
    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln h(z)`` (numpy float64; for tests and checks, never for sampling)."""

    @abc.abstractmethod
    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        """``P[Z ≤ z]`` in float64 (for statistical tests)."""

    def tv_bound(self, scale: object, k: int, m: int = _M_BITS) -> float:
        """Upper bound on the total variation of :meth:`sample_lattice` to the ideal law."""
        raise Unsupported(f"{type(self).__name__} has no lattice sampler")

    def _quantile_iv(self, u: mpmath.mpf, ctx: object) -> object:
        raise Unsupported(f"{type(self).__name__} has no lattice sampler")

    def sample_lattice(self, size: int, k: int, rng: RngLike = None, *, scale: object = 1) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
        """``size`` draws of ``round(scale·Z / 2^k)`` by exact-integer inversion (module docstring).

        Args:
            size: number of samples (>= 0).
            k: lattice exponent (the output ``N`` stands for ``N·2^k``).
            rng: randomness (default: the secure source).
            scale: the noise scale ``S(x)/α`` (exact: int, Fraction or float).

        Returns:
            The integers ``N`` (int64, or Python ints when huge -- Cauchy tails).

        Raises:
            Unsupported: the noise has no closed-form quantile (zCDP noises).
            InvalidArgument: bad ``size``, ``k`` or ``scale``.
        """
        owner = f"{type(self).__name__}.sample_lattice"
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidArgument(owner, "size", size, "must be an int >= 0")
        if isinstance(k, bool) or not isinstance(k, int) or not -1000 <= k <= 1000:
            raise InvalidArgument(owner, "k", k, "must be an int in [-1000, 1000]")
        sc = Fraction(scale) if isinstance(scale, (int, Fraction)) and not isinstance(scale, bool) else Fraction(_pos(scale, owner, "scale"))
        if sc <= 0:
            raise InvalidArgument(owner, "scale", scale, "must be > 0")
        self._quantile_iv(mpmath.mpf("0.25"), mpmath.iv)  # raises Unsupported early
        src = resolve_rng(rng)
        words = src.uint64(2 * size).reshape(size, 2) if size else np.zeros((0, 2), dtype=np.uint64)
        out: list[int] = []
        for hi_w, lo_w in words.tolist():
            big_u = (int(hi_w) << 64) | int(lo_w)
            out.append(self._round_one(big_u, sc, k))
        if all(abs(v) < 2**62 for v in out):
            return np.array(out, dtype=np.int64)
        arr = np.empty(len(out), dtype=object)
        arr[:] = out
        return arr

    def _round_one(self, big_u: int, scale: Fraction, k: int) -> int:
        iv = mpmath.iv
        for prec in (120, 240, 480, 960):
            iv.prec = prec
            num = iv.mpf(2 * big_u + 1)
            u = num / iv.mpf(2 ** (_M_BITS + 1))
            z = self._quantile_iv(u, iv)
            val = z * iv.mpf(scale.numerator) / iv.mpf(scale.denominator) * iv.ldexp(iv.mpf(1), -k)
            lo = int(mpmath.floor(val.a + mpmath.mpf(0.5)))
            hi = int(mpmath.floor(val.b + mpmath.mpf(0.5)))
            if lo == hi:
                return lo
        raise ArithmeticError("lattice rounding undecided at 960 bits")  # pragma: no cover


# --- (ε, δ)-DP noises ---------------------------------------------------------------------


@final
@attrs.frozen
class LaplaceNoise(AbstractAdmissibleNoise):
    """Standard Laplace ``h(z) = e^{−|z|}/2``: (ε/2, ε/(2 ln(2/δ)))-admissible (NRS07 Lemma 2.9).

    Privacy guarantee: with a β-smooth upper bound ``S`` (``β = ε/(2 ln(2/δ))``),
    ``f(x) + (2 S(x)/ε)·Z`` is (ε, δ)-DP under the relation ``S`` was computed for.

    Examples:
        >>> c = LaplaceNoise().constants(1, 1e-6)
        >>> c.alpha, round(c.beta, 6)
        (0.5, 0.034462)
    """

    def constants(self, eps: float, delta: float) -> Admissibility:
        """``α = ε/2`` (sliding: ``|ln h(z) − ln h(z+Δ)| ≤ |Δ|``), ``β = ε/(2 ln(2/δ))``."""
        e = _pos(eps, "LaplaceNoise", "eps")
        d = _pos(delta, "LaplaceNoise", "delta")
        if d >= 1:
            raise InvalidArgument("LaplaceNoise", "delta", delta, "must be < 1")
        return Admissibility(e / 2, e / (2 * math.log(2 / d)), "approx", e, d, "NRS07 Lemma 2.9 with Lemma 2.6")

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        return -np.abs(np.asarray(z, dtype=np.float64)) - math.log(2)

    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.asarray(z, dtype=np.float64)
        return np.where(zz < 0, 0.5 * np.exp(np.minimum(zz, 0)), 1 - 0.5 * np.exp(-np.maximum(zz, 0)))

    def _quantile_iv(self, u: mpmath.mpf, ctx: object) -> object:
        iv = mpmath.iv
        half = iv.mpf(0.5)
        if isinstance(u, mpmath.mpf):
            return None  # probe from sample_lattice: supported
        if u.b < half.a:
            return iv.log(2 * u)
        if u.a > half.b:
            return -iv.log(2 * (1 - u))
        raise ArithmeticError("u = 1/2 is never a cell midpoint")  # pragma: no cover

    def tv_bound(self, scale: object, k: int, m: int = _M_BITS) -> float:
        """``P[|Z| > z₀] + (2 z₀ scale/2^k + 3)/2^m`` with ``z₀ = m ln 2`` (``P = 2^{−m}``), rounded up."""
        sc = _pos(scale, "LaplaceNoise.tv_bound", "scale")
        z0 = m * math.log(2) * (1 + 1e-12)
        return math.exp(-z0) + (2 * z0 * sc * 2.0**-k + 3) * 2.0**-m * (1 + 1e-12)


@final
@attrs.frozen
class CauchyNoise(AbstractAdmissibleNoise):
    """Generalised Cauchy ``h(z) ∝ 1/(1 + |z|^γ)``, ``γ > 1``: pure ε-DP noise (NRS07 Lemma 2.7).

    Privacy guarantee: with a β-smooth upper bound ``S``, ``f(x) + (S(x)/α)·Z`` is
    ε-DP (δ = 0) for the constants of :meth:`constants`. For ``γ = 2`` (Cauchy):
    tight ``α = β = ε/2`` (noise scale ``2S/ε``); NRS07's ``α = β = ε/6`` (``6S/ε``).

    Examples:
        >>> CauchyNoise(2).constants(1)
        Admissibility(alpha=0.5, beta=0.5, measure='pure', eps=1.0, delta=0.0, theorem='NRS07 Lemmas 2.6-2.7; tight constants derived in docs/mechanisms/smooth_sensitivity.md')
        >>> round(CauchyNoise(2).constants(1, variant="nrs07").alpha, 6)
        0.166667
    """

    gamma: float = attrs.field(default=2.0, converter=float)

    def __attrs_post_init__(self) -> None:
        if not math.isfinite(self.gamma) or self.gamma <= 1:
            raise InvalidArgument("CauchyNoise", "gamma", self.gamma, "must be finite and > 1")

    @property
    def _log_norm(self) -> float:
        # ∫ 1/(1+|z|^γ) dz = 2·(π/γ)/sin(π/γ)
        g = self.gamma
        return math.log(2 * (math.pi / g) / math.sin(math.pi / g))

    def constants(self, eps: float, *, variant: Literal["tight", "nrs07"] = "tight") -> Admissibility:
        """Pure ε-DP constants (δ = 0).

        ``tight``: ``α = ε/(2(γ−1)^{(γ−1)/γ})``, ``β = ε/(2 max(1, γ−1))`` -- sliding and
        dilation each cost exactly ε/2 at their worst point. ``nrs07``:
        ``α = β = ε/(2(γ+1))``.
        """
        e = _pos(eps, "CauchyNoise", "eps")
        g = self.gamma
        if variant == "nrs07":
            c = e / (2 * (g + 1))
            return Admissibility(c, c, "pure", e, 0.0, "NRS07 Lemmas 2.6-2.7")
        if variant != "tight":
            raise InvalidArgument("CauchyNoise", "variant", variant, "must be 'tight' or 'nrs07'")
        slope = (g - 1) ** ((g - 1) / g)
        return Admissibility(
            e / (2 * slope), e / (2 * max(1.0, g - 1)), "pure", e, 0.0,
            "NRS07 Lemmas 2.6-2.7; tight constants derived in docs/mechanisms/smooth_sensitivity.md",
        )  # fmt: skip

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.abs(np.asarray(z, dtype=np.float64))
        return -np.log1p(zz**self.gamma) - self._log_norm

    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.asarray(z, dtype=np.float64)
        if self.gamma == 2.0:
            return 0.5 + np.arctan(zz) / math.pi
        from scipy import integrate

        def one(v: float) -> float:
            half = float(integrate.quad(lambda t: 1 / (1 + t**self.gamma), 0, abs(v))[0]) / math.exp(self._log_norm)
            return 0.5 + half if v >= 0 else 0.5 - half

        return np.asarray(np.vectorize(one, otypes=[np.float64])(zz), dtype=np.float64)

    def _quantile_iv(self, u: mpmath.mpf, ctx: object) -> object:
        if self.gamma != 2.0:
            raise Unsupported("CauchyNoise.sample_lattice: only gamma = 2 has a closed-form quantile")
        if isinstance(u, mpmath.mpf):
            return None
        iv = mpmath.iv
        return iv.tan(iv.pi * (u - iv.mpf(0.5)))

    def tv_bound(self, scale: object, k: int, m: int = _M_BITS) -> float:
        """``P[|Z| > z₀] + (2 z₀ scale/2^k + 3)/2^m``, ``P[|Z| > z] ≤ 2/(πz)``, ``z₀`` optimised."""
        if self.gamma != 2.0:
            raise Unsupported("CauchyNoise.tv_bound: only gamma = 2 has a lattice sampler")
        sc = _pos(scale, "CauchyNoise.tv_bound", "scale")
        steps = sc * 2.0**-k
        z0 = math.sqrt(2.0**m / (math.pi * steps))  # minimises 2/(πz) + 2 z steps/2^m
        return (2 / (math.pi * z0) + (2 * z0 * steps + 3) * 2.0**-m) * (1 + 1e-12)


# --- zCDP noises (Bun–Steinke 2019) -----------------------------------------------------


def _log_phi(y: FloatArray) -> FloatArray:
    return -0.5 * y * y - 0.5 * math.log(2 * math.pi)


class _ZCDPNoise(AbstractAdmissibleNoise):
    sigma: float

    @abc.abstractmethod
    def epsilon(self, s: float, t: float) -> float:
        """ε such that ``D_a(Z ‖ e^{t'}Z + s') ≤ a ε²/2`` for ``|s'| ≤ s``, ``|t'| ≤ t``."""

    @abc.abstractmethod
    def _shift_for(self, eps: float, t: float) -> float:
        """The largest ``s`` with ``epsilon(s, t) ≤ eps``."""

    def constants(self, rho: float, t: float) -> Admissibility:
        """Shift budget ``s`` for target ``ρ``-zCDP and smoothness ``t`` (noise scale ``S/s``)."""
        owner = type(self).__name__
        r = _pos(rho, owner, "rho")
        tt = _pos(t, owner, "t")
        eps = math.sqrt(2 * r)
        s = self._shift_for(eps, tt)
        if not s > 0:
            raise InvalidArgument(owner, "t", t, f"is too large for rho={rho} (no shift budget left)")
        return Admissibility(s, tt, "zcdp", eps, 0.0, f"Bun-Steinke 2019 §3 ({owner})")

    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        from scipy import integrate

        zz = np.asarray(z, dtype=np.float64)

        def one(v: float) -> float:
            half = float(integrate.quad(lambda w: math.exp(float(self.log_density(np.array([w]))[0])), 0, abs(v), limit=200)[0])
            return 0.5 + half if v >= 0 else 0.5 - half

        return np.asarray(np.vectorize(one, otypes=[np.float64])(zz), dtype=np.float64)


def _sigma_lln(value: object) -> float:
    return _pos(value, "LaplaceLogNormal", "sigma")


def _sigma_uln(value: object) -> float:
    return _pos(value, "UniformLogNormal", "sigma")


def _sigma_asn(value: object) -> float:
    return _pos(value, "ArsinhNormal", "sigma")


@final
@attrs.frozen
class LaplaceLogNormal(_ZCDPNoise):
    """``Z = X·e^{σY}``, X standard Laplace, Y standard normal (Bun–Steinke 2019).

    Privacy guarantee: ``D_a(Z ‖ e^t Z + s) ≤ a ε²/2`` with ``ε = |t|/σ + e^{3σ²/2}|s|``;
    with a t-smooth ``S``, ``f(x) + (S(x)/s)·Z`` is ``ε²/2``-zCDP.

    Examples:
        >>> round(LaplaceLogNormal(1).epsilon(0.1, 0.1), 6)
        0.548169
    """

    sigma: float = attrs.field(converter=_sigma_lln)

    @classmethod
    def optimal(cls, eps: float, t: float) -> LaplaceLogNormal:
        """σ minimising the noise standard deviation: the root of ``5(ε/t)σ³ − 5σ² − 1 = 0``."""
        return cls(lln_optimal_sigma(eps, t))

    def epsilon(self, s: float, t: float) -> float:
        return abs(t) / self.sigma + math.exp(1.5 * self.sigma**2) * abs(s)

    def _shift_for(self, eps: float, t: float) -> float:
        return math.exp(-1.5 * self.sigma**2) * (eps - t / self.sigma)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        # p(z) = ∫ φ(y)·½e^{−σy}·exp(−|z|e^{−σy}) dy, trapezoid on a fine y grid per z that
        # spans the Gaussian bulk and the point y = ln|z|/σ where the Laplace factor cuts off
        zz = np.abs(np.atleast_1d(np.asarray(z, dtype=np.float64)))
        with np.errstate(divide="ignore"):
            top = np.maximum(14.0, np.log(np.maximum(zz, 1e-300)) / self.sigma + 14.0)
        unit = np.linspace(0.0, 1.0, 8001)
        y = -14.0 + (top + 14.0)[:, None] * unit[None, :]
        dy = (top + 14.0) / (unit.size - 1)
        sy = self.sigma * y
        logs = _log_phi(y) - math.log(2) - sy - zz[:, None] * np.exp(-sy)
        mx = np.max(logs, axis=1, keepdims=True)
        w = np.exp(logs - mx)
        integral = (np.sum(w, axis=1) - 0.5 * (w[:, 0] + w[:, -1])) * dy
        out = mx[:, 0] + np.log(integral)
        return np.asarray(out.reshape(np.shape(z)), dtype=np.float64)


def lln_optimal_sigma(eps: float, t: float) -> float:
    """The positive root of ``5(ε/t)σ³ − 5σ² − 1 = 0`` (Bun–Steinke 2019, LLN).

    The cubic ``c σ³ − σ² − 1/5`` (``c = ε/t > 0``) is −1/5 at 0, decreasing up to
    ``σ = 2/(3c)`` and increasing after, so it has exactly one positive root; it
    is bracketed in ``[2/(3c), 1/c + 1]`` and found by bisection down to adjacent
    floats, each sign decided exactly in rational arithmetic, and the sign change
    is verified before returning (the result is the root rounded up to a float).

    Examples:
        >>> s = lln_optimal_sigma(1.0, 0.1)
        >>> abs(5 * 10 * s**3 - 5 * s**2 - 1) < 1e-9
        True
    """
    e = _pos(eps, "lln_optimal_sigma", "eps")
    tt = _pos(t, "lln_optimal_sigma", "t")
    c = Fraction(e) / Fraction(tt)

    def f(s: Fraction) -> Fraction:
        return 5 * c * s**3 - 5 * s**2 - 1

    # bracket [2/(3c), 1/c + 1]: f(2/(3c)) < 0 (f is decreasing on (0, 2/(3c)] from
    # −1) and f(1/c + 1) = 5c(1/c+1)³ − 5(1/c+1)² − 1 = 5(1/c+1)² − 1 > 0
    lo, hi = float(Fraction(2, 3) / c), float(1 / c + 1)
    for _ in range(200):  # float bisection; every sign test is exact (Fractions)
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if f(Fraction(mid)) <= 0:
            lo = mid
        else:
            hi = mid
    if not (f(Fraction(lo)) <= 0 < f(Fraction(hi))):  # pragma: no cover
        raise ArithmeticError("lln_optimal_sigma: root not bracketed")
    return float(hi)


@final
@attrs.frozen
class UniformLogNormal(_ZCDPNoise):
    """``Z = U·e^{σY}``, U uniform on [−1, 1], Y standard normal, ``σ ≥ √2`` (Bun–Steinke 2019).

    Privacy guarantee: ``ε = |t|/σ + e^{3σ²/2}·√(2/π)/σ·|s|``; ``ε²/2``-zCDP as above.
    Density (closed form): ``p(z) = ½ e^{σ²/2} Φ̄(ln|z|/σ + σ)``.
    """

    sigma: float = attrs.field(converter=_sigma_uln)

    def __attrs_post_init__(self) -> None:
        if self.sigma < math.sqrt(2) * (1 - 1e-15):
            raise InvalidArgument("UniformLogNormal", "sigma", self.sigma, "must be >= sqrt(2)")

    def epsilon(self, s: float, t: float) -> float:
        return abs(t) / self.sigma + math.exp(1.5 * self.sigma**2) * math.sqrt(2 / math.pi) / self.sigma * abs(s)

    def _shift_for(self, eps: float, t: float) -> float:
        return math.exp(-1.5 * self.sigma**2) * math.sqrt(math.pi / 2) * self.sigma * (eps - t / self.sigma)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        from scipy import special

        zz = np.abs(np.asarray(z, dtype=np.float64))
        with np.errstate(divide="ignore"):
            arg = np.log(zz) / self.sigma + self.sigma
        return np.asarray(-math.log(2) + self.sigma**2 / 2 + special.log_ndtr(-arg), dtype=np.float64)


@final
@attrs.frozen
class ArsinhNormal(_ZCDPNoise):
    """``Z = sinh(σY)/σ``, Y standard normal (Bun–Steinke 2019).

    Privacy guarantee: ``ε = (2/(3σ) + σ/2)|s| + √(|t|(|t|/σ² + 1/σ + 2))``; ``ε²/2``-zCDP.
    Density: ``p(z) = φ(arsinh(σz)/σ)/√(1 + σ²z²)``.
    """

    sigma: float = attrs.field(default=2 / math.sqrt(3), converter=_sigma_asn)

    def epsilon(self, s: float, t: float) -> float:
        sg = self.sigma
        return (2 / (3 * sg) + sg / 2) * abs(s) + math.sqrt(abs(t) * (abs(t) / sg**2 + 1 / sg + 2))

    def _shift_for(self, eps: float, t: float) -> float:
        sg = self.sigma
        return (eps - math.sqrt(t * (t / sg**2 + 1 / sg + 2))) / (2 / (3 * sg) + sg / 2)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.asarray(z, dtype=np.float64)
        y = np.arcsinh(self.sigma * zz) / self.sigma
        return np.asarray(_log_phi(y) - 0.5 * np.log1p((self.sigma * zz) ** 2), dtype=np.float64)


# --- numerical privacy checks -------------------------------------------------------------


def check_admissible(noise: LaplaceNoise | CauchyNoise, c: Admissibility, *, grid: int = 20001, zmax: float = 60.0) -> tuple[PrivacyCheck, PrivacyCheck]:
    """Numerically check NRS07's sliding and dilation properties for constants ``c``.

    * sliding: ``sup_z |ln h(z) − ln h(z + Δ)|`` over a fine grid (plus the analytic
      worst points) for ``Δ = ±α``; allowed ``ε/2`` (the log-ratio bound implies the
      set inequality with δ = 0). For the Laplace the sup is ``|Δ|`` exactly.
    * dilation, pure (Cauchy): ``sup_z |ln h(z) − λ − ln h(e^λ z)|`` for ``λ = ±β`` and
      intermediate values; allowed ``ε/2``.
    * dilation, approximate (Laplace): the hockey-stick divergence
      ``∫ max(0, h(z) − e^{ε/2} e^λ h(e^λ z)) dz`` by :func:`scipy.integrate.quad`,
      which must be ``≤ δ/2``.

    Returns:
        ``(sliding, dilation)`` checks; ``.ok`` says whether each holds.
    """
    from scipy import integrate

    half = c.eps / 2
    z = np.linspace(-zmax, zmax, grid)
    extra = np.array([0.0, 1.0, -1.0])
    if isinstance(noise, CauchyNoise):
        t = (noise.gamma - 1) ** (1 / noise.gamma)
        extra = np.concatenate([extra, [t, -t, t - c.alpha / 2, -t + c.alpha / 2]])
    z = np.concatenate([z, extra])
    slide = 0.0
    for d in (c.alpha, -c.alpha):
        slide = max(slide, float(np.max(np.abs(noise.log_density(z) - noise.log_density(z + d)))))
    sliding = PrivacyCheck("sliding", slide, half, f"|Delta| <= {c.alpha}")
    lambdas = np.concatenate([np.linspace(-c.beta, c.beta, 9)])
    if c.measure == "pure":
        zz = np.concatenate([z, np.geomspace(1, 1e12, 400), -np.geomspace(1, 1e12, 400)])
        worst = 0.0
        for lam in lambdas:
            worst = max(worst, float(np.max(np.abs(noise.log_density(zz) - lam - noise.log_density(np.exp(lam) * zz)))))
        return sliding, PrivacyCheck("dilation", worst, half, f"|lambda| <= {c.beta}")
    worst = 0.0
    for lam in lambdas:
        def gap(v: float, lam: float = float(lam)) -> float:
            a = math.exp(float(noise.log_density(np.array([v]))[0]))
            b = math.exp(half + lam + float(noise.log_density(np.array([math.exp(lam) * v]))[0]))
            return max(0.0, a - b)

        total = 2 * float(integrate.quad(gap, 0, np.inf, limit=400, epsabs=1e-14, epsrel=1e-10)[0])
        worst = max(worst, total)
    return sliding, PrivacyCheck("dilation (hockey-stick)", worst, c.delta / 2, f"|lambda| <= {c.beta}")


def _renyi(noise: _ZCDPNoise, a: float, s: float, t: float, reverse: bool) -> float:
    """``D_a(P ‖ Q)`` (or ``D_a(Q ‖ P)``) for ``P = Z``, ``Q = e^t Z + s``, by quad."""
    from scipy import integrate

    def logp(v: float) -> float:
        return float(noise.log_density(np.array([v]))[0])

    def logq(v: float) -> float:
        return -t + logp((v - s) * math.exp(-t))

    def integrand(v: float) -> float:
        lp, lq = logp(v), logq(v)
        if reverse:
            lp, lq = lq, lp
        if lp == -math.inf:
            return 0.0
        return math.exp(min(700.0, a * lp + (1 - a) * lq))

    pts = sorted({-1.0, 0.0, float(s), 1.0})
    total = 0.0
    edges = [-math.inf, *pts, math.inf]
    for lo, hi in zip(edges[:-1], edges[1:]):
        total += float(integrate.quad(integrand, lo, hi, limit=400, epsabs=1e-13, epsrel=1e-10)[0])
    return math.log(total) / (a - 1)


def check_zcdp(noise: _ZCDPNoise, c: Admissibility, *, alphas: tuple[float, ...] = (1.5, 2.0, 4.0)) -> PrivacyCheck:
    """Numerically check ``D_a(Z ‖ e^{t'}Z + s') ≤ a ε²/2`` (both orders) on a grid.

    The Rényi divergence is integrated with :func:`scipy.integrate.quad` for each
    ``a`` in ``alphas`` and ``(s', t')`` in ``{±s, 0} × {±t, 0}`` (the corners carry
    the worst case for these monotone families). The worst ratio
    ``D_a / (a ε²/2)`` must be ``≤ 1``.
    """
    worst, where = 0.0, ""
    for a in alphas:
        for s in (c.alpha, -c.alpha, 0.0):
            for t in (c.beta, -c.beta, 0.0):
                if s == 0 and t == 0:
                    continue
                for rev in (False, True):
                    ratio = _renyi(noise, a, s, t, rev) / (a * c.eps**2 / 2)
                    if ratio > worst:
                        worst, where = ratio, f"a={a}, s={s:.4g}, t={t:.4g}, reverse={rev}"
    return PrivacyCheck("renyi", worst, 1.0, where)
