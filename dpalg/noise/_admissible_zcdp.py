"""The zCDP admissible noises of Bun and Steinke (2019): Laplace-log-normal, uniform-log-normal, arsinh-normal.

For a noise ``Z`` with ``D_a(Z ‖ e^{t'} Z + s') ≤ a·ε²/2`` for all ``a > 1``,
``|s'| ≤ s`` and ``|t'| ≤ t`` (both orders), ``f(x) + (S(x)/s)·Z`` with a
``t``-smooth upper bound ``S`` on the local sensitivity is ``ρ = ε²/2``-zCDP
(Bun–Steinke 2019, "Average-case averages", §3). Each class gives its density
and its ``ε(s, t)``:

=====================  ===========================================
noise                  ε of the guarantee
=====================  ===========================================
LaplaceLogNormal(σ)    ``t/σ + e^{3σ²/2}·s``
UniformLogNormal(σ)    ``t/σ + e^{3σ²/2}·√(2/π)/σ·s`` (``σ ≥ √2``)
ArsinhNormal(σ)        ``(2/(3σ) + σ/2)·s + √(t(t/σ² + 1/σ + 2))``
=====================  ===========================================

The constants are checked numerically (:func:`dpalg.noise._admissible_checks.check_zcdp`),
but no exact sampler exists for these noises (it would need an exact lazy
continuous Gaussian): :meth:`~dpalg.noise._admissible.AbstractAdmissibleNoise.sample_lattice`
raises :class:`~dpalg.Unsupported`, and no mechanism node uses them. The shared
part and the samplable noises are in :mod:`dpalg.noise._admissible`.

References:
    M. Bun, T. Steinke. Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation. NeurIPS 2019 (§3, LLN, ULN, arsinh-normal).
"""

from __future__ import annotations

import abc
import math
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import positive
from dpalg.noise._admissible import AbstractAdmissibleNoise, Admissibility, FloatArray, _floor_dyadic

__all__ = ["ArsinhNormal", "LaplaceLogNormal", "UniformLogNormal", "lln_optimal_sigma"]


def _pos(value: object, owner: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, field, value, "must be a positive real number")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidArgument(owner, field, value, "must be finite and > 0")
    return v


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
        r = positive(rho, owner=owner, field="rho")
        tt = positive(t, owner=owner, field="t")
        eps = math.sqrt(2 * float(r))
        s = self._shift_for(eps, float(tt))
        if not s > 0:
            raise InvalidArgument(owner, "t", t, f"is too large for rho={rho} (no shift budget left)")
        # float formulas: shrink s by 2^-30 relative (covers their rounding); eps is recorded
        # as the float sqrt(2 rho) -- these constants feed checks only, no release path
        return Admissibility(_floor_dyadic(Fraction(s) * (1 - Fraction(1, 2**30))), tt, "zcdp", Fraction(eps), Fraction(0),
                             f"Bun-Steinke 2019 §3 ({owner}); numerically checked, no exact sampler")

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

    Not samplable exactly here (:meth:`sample_lattice` raises ``Unsupported``).

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
