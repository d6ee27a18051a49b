"""Admissible noise for smooth sensitivity, and a lattice sampler without float noise.

A release ``f(x) + (S(x)/α)·Z`` with ``S`` a β-smooth upper bound on the local
sensitivity is private when ``Z`` is *admissible*: its law moves little under a
shift by ``|Δ| ≤ α`` and a dilation by ``e^λ``, ``|λ| ≤ β`` (NRS07 Def. 2.5,
Lemma 2.6). With ``A(y) = f(x) + (S(x)/α)(Δ + e^λ Z)``, ``Δ = α(f(y) − f(x))/S(x)``
and ``e^λ = S(y)/S(x)``, the privacy loss splits into a shift part and a dilation
part, each bounded by the admissibility of ``Z``.

Distributions (each a frozen class with its density, cdf and constants):

========================  ==============================  ===============================
class                     guarantee                       constants
========================  ==============================  ===============================
``LaplaceAdmissible``     (ε, δ)-DP (NRS07 Lemma 2.9)     α = ε/2, β = ε/(2 ln(2/δ))
``CauchyAdmissible(γ)``   ε-DP (NRS07 Lemma 2.10)         α = β = ε/(2(γ + 1)); γ = 2: ε/6
``LaplaceLogNormal(σ)``   ρ-zCDP (Bun–Steinke 2019 §3)    ε(s, t) = |t|/σ + e^{3σ²/2}|s|
``UniformLogNormal(σ)``   ρ-zCDP (Bun–Steinke 2019 §3)    ε(s, t) = |t|/σ + e^{3σ²/2}√(2/π)|s|/σ
``ArsinhNormal(σ)``       ρ-zCDP (conservative, see cls)  ε(s, t) = 2|t|/σ + (1 + σ)|s|
========================  ==============================  ===============================

For the zCDP noises, ``D_a(Z ‖ e^t Z + s) ≤ a·ε(s, t)²/2`` for every order ``a > 1``
(and the reverse divergence), so with ``ρ = ε²/2`` and a ``t``-smooth bound the
release ``f(x) + (S(x)/s)·Z`` is ρ-zCDP. Constants are returned as ``Fraction``
rounded *down* (a smaller α or β is always safe: more noise, or a smooth bound
that is smooth for a larger β too).

Numerical privacy checks (used by the tests, usable by an auditor):
:func:`pure_loss_grid` (worst log density ratio under shift and dilation on a
grid), :func:`laplace_dilation_delta` (closed form of the dilation's excess mass)
and :func:`renyi_divergence` (``scipy.integrate.quad`` in log space).

**Sampling without floating-point noise.** ``sample_lattice(size, k, rng)``
returns integers ``N`` with noise ``N·2**k``. Per sample it draws an exact uniform
integer ``U`` in ``[0, 2^{64w})`` (``w`` 64-bit words, default 1) and sets
``u = (U + ½)/2^{64w}``; it returns the ``j`` with ``F(b_{j−½}) ≤ u < F(b_{j+½})``,
``b_{j±½} = (j ± ½)·2**k/scale``, i.e. the lattice point nearest to
``scale·F⁻¹(u)``. The comparisons with ``u`` are decided with mpmath at 128 bits,
and at 2×, 4×, … the precision while ``|F(b) − u|`` is within the evaluation
tolerance (up to 4096 bits; the closed-form cdfs are accurate to the working
precision; the LLN cdf is an mpmath quadrature, not interval-certified). A float64
quantile only provides the starting guess. Guarantee (:meth:`tv_bound`):

* every atom's probability differs from the ideal one
  (``P*[N = j] = F(b_{j+½}) − F(b_{j−½})``, the exact noise rounded to the lattice)
  by at most ``2^{−64w}``: the ``U`` mapping to ``j`` are the integers in an
  interval of length ``2^{64w}·P*[N = j]``;
* the total variation distance to the ideal lattice-rounded law is at most
  ``τ = min_{z*} ½[(2z*·scale/2**k + 5)·2^{−64w} + 2·Pr[|Z| > z*]]``;
* hence if the ideal release is (ε, δ)-DP the sampled one is
  (ε, δ + (1 + e^ε)τ)-DP, and a ρ-zCDP ideal release becomes τ-approximately
  ρ-zCDP. **Pure DP is not claimed** for the sampled Cauchy release (its support is
  finite): charge it as (ε, (1 + e^ε)τ)-DP. Outputs are clamped to
  ``[−2^62, 2^62]``; clamping is post-processing of the ideal release.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.5, Lemmas 2.6–2.10).
    M. Bun, T. Steinke. Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation. NeurIPS 2019 (§3, LLN/ULN/arsinh-normal).
    I. Mironov. On Significance of the Least Significant Bits for Differential
    Privacy. CCS 2012.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Final, final

import attrs
import mpmath
import numpy as np
import numpy.typing as npt
from scipy import integrate, special

from dpalg._errors import InvalidArgument
from dpalg._numbers import positive, to_fraction
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng

__all__ = [
    "AbstractAdmissibleNoise",
    "Admissibility",
    "ArsinhNormal",
    "CauchyAdmissible",
    "LaplaceAdmissible",
    "LaplaceLogNormal",
    "UniformLogNormal",
    "laplace_dilation_delta",
    "lln_sigma",
    "pure_loss_grid",
    "renyi_divergence",
]

FloatArray = npt.NDArray[np.float64]
_CLAMP: Final = 1 << 62
_BASE_PREC: Final = 128
_MAX_PREC: Final = 4096
_DIGITS: Final = 60  # bits kept when rounding an irrational constant down


def _down(x: mpmath.mpf) -> Fraction:
    """A ``Fraction`` ≤ the positive real ``x`` (computed at ≥ 160 bits), within 2⁻⁵⁵ relative."""
    m, e = mpmath.frexp(x)
    scaled = int(mpmath.floor(m * 2**_DIGITS)) - 1
    return Fraction(scaled) * Fraction(2) ** (int(e) - _DIGITS)


def _mpf(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


@final
@attrs.frozen
class Admissibility:
    """Admissibility constants: shift bound ``alpha`` and dilation bound ``beta``.

    Release ``f(x) + (S(x)/alpha)·Z`` with ``S`` a ``beta``-smooth upper bound on LS.
    """

    alpha: Fraction
    beta: Fraction


# --------------------------------------------------------------------------- base
class AbstractAdmissibleNoise(abc.ABC):
    """A symmetric noise density ``h`` with an exact-decision lattice sampler."""

    @abc.abstractmethod
    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln h(z)`` in float64 (for the numerical checks)."""

    @abc.abstractmethod
    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``F(z)`` at the current mpmath precision."""

    @abc.abstractmethod
    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """A float64 approximation of ``F⁻¹(u)`` (only a starting point)."""

    @abc.abstractmethod
    def tail(self, z: float) -> float:
        """An upper bound on ``Pr[|Z| > z]``."""

    def tv_bound(self, k: int, scale: object = 1, words: int = 1) -> float:
        """Upper bound ``τ`` on the TV distance of :meth:`sample_lattice` to the ideal law.

        ``τ = min_{z*} ½[(2z*/w + 5)·2^{−64·words} + 2 Pr[|Z| > z*]]`` with
        ``w = 2**k/scale`` (module docstring); the minimum is taken over a grid of
        ``z*`` and the result rounded up.

        Args:
            k: lattice exponent (the noise is a multiple of ``2**k``).
            scale: the noise scale multiplying ``Z``.
            words: 64-bit words of randomness per sample.

        Returns:
            ``τ`` as a float (an upper bound).
        """
        sc = float(positive(scale, owner=type(self).__name__, field="scale"))
        w = math.ldexp(1.0, k) / sc
        grain = math.ldexp(1.0, -64 * words)
        best = 1.0
        for z in np.logspace(-3, 40, 900):
            tail = self.tail(float(z))
            best = min(best, 0.5 * ((2 * float(z) / w + 5) * grain + 2 * tail))
        return float(np.nextafter(best * (1 + 1e-9), math.inf))

    def sample_lattice(
        self, size: int, k: int, rng: RngLike = None, *, scale: object = 1, words: int = 1
    ) -> npt.NDArray[np.int64]:
        """``size`` integers ``N`` such that ``N·2**k`` is ``scale·Z`` rounded to the lattice.

        See the module docstring for the exact guarantee (per-atom error
        ``≤ 2^{−64·words}``, TV ``≤`` :meth:`tv_bound`). No floating-point value
        decides any output: ``U`` is an exact integer, and every comparison
        ``F(b) ≤ u`` is decided in mpmath with precision escalation.

        Args:
            size: number of samples (``≥ 0``).
            k: lattice exponent in ``[-1000, 1000]``.
            rng: randomness (``None``: the secure default).
            scale: noise scale (exact: int, Fraction, decimal string or float), ``> 0``.
            words: 64-bit words per uniform (``1 ≤ words ≤ 8``).

        Returns:
            ``int64`` array, clamped to ``[−2^62, 2^62]``.

        Raises:
            InvalidArgument: on invalid arguments.
        """
        owner = f"{type(self).__name__}.sample_lattice"
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise InvalidArgument(owner, "size", size, "must be an int >= 0")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -1000 <= k <= 1000:
            raise InvalidArgument(owner, "k", k, "must be an int in [-1000, 1000]")
        if isinstance(words, bool) or not isinstance(words, int) or not 1 <= words <= 8:
            raise InvalidArgument(owner, "words", words, "must be an int in [1, 8]")
        sc = positive(scale, owner=owner, field="scale")
        source: AbstractRandomness = resolve_rng(rng)
        bits = 64 * words
        raw = source.uint64(int(size) * words).reshape(int(size), words)
        big_u = [_join(row) for row in raw.tolist()]
        # lattice spacing in units of Z: w = 2**k / scale (exact rational)
        w = Fraction(2) ** int(k) / sc
        with np.errstate(all="ignore"):
            u_f = np.array([(x + 0.5) * 2.0**-bits for x in big_u], dtype=np.float64)
            guess = self.quantile_guess(np.clip(u_f, 2.0**-1070, 1 - 2.0**-53)) / float(w)
        out = np.empty(int(size), dtype=np.int64)
        for idx, (u_int, g) in enumerate(zip(big_u, guess.tolist())):
            j0 = int(max(-_CLAMP, min(_CLAMP, round(g)))) if math.isfinite(g) else 0
            out[idx] = self._locate(u_int, bits, w, j0)
        return out

    # u = (2U + 1) / 2^{bits+1}; compare with F(b) exactly up to precision escalation
    def _below(self, b: Fraction, u_num: int, bits: int) -> bool:
        """Decide ``F(b) ≤ u`` (``u = u_num/2^{bits+1}``)."""
        prec = _BASE_PREC + bits
        while True:
            with mpmath.workprec(prec):
                diff = self.cdf_mp(_mpf(b)) - mpmath.mpf(u_num) / mpmath.mpf(2) ** (bits + 1)
                tol = mpmath.mpf(2) ** (-(prec - 24))
                if abs(diff) > tol or prec >= _MAX_PREC:
                    return bool(diff <= 0)
            prec *= 2

    def _locate(self, u_int: int, bits: int, w: Fraction, j0: int) -> int:
        """The ``j`` with ``F((j−½)w) ≤ u < F((j+½)w)``, searched from ``j0``."""
        u_num = 2 * u_int + 1
        half = Fraction(1, 2)

        def ok_low(j: int) -> bool:  # F((j − ½)w) ≤ u
            return j <= -_CLAMP or self._below((j - half) * w, u_num, bits)

        def ok_high(j: int) -> bool:  # u < F((j + ½)w)
            return j >= _CLAMP or not self._below((j + half) * w, u_num, bits)

        lo_ok, hi_ok = ok_low(j0), ok_high(j0)
        if lo_ok and hi_ok:
            return j0
        # exponential search for a bracket, then bisection on the monotone predicate
        step = 1
        if not lo_ok:  # answer < j0
            hi = j0 - 1
            lo = max(-_CLAMP, j0 - step)
            while not ok_low(lo):
                step *= 2
                hi = lo - 1
                lo = max(-_CLAMP, j0 - step)
        else:  # answer > j0
            lo = j0 + 1
            hi = min(_CLAMP, j0 + step)
            while not ok_high(hi):
                step *= 2
                lo = hi + 1
                hi = min(_CLAMP, j0 + step)
        # invariant: answer in [lo, hi]; ok_low is true at lo, ok_high true at hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if ok_low(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo


def _join(words: list[int]) -> int:
    value = 0
    for w in words:
        value = (value << 64) | int(w)
    return value


def _eps(value: object, owner: str) -> Fraction:
    return positive(value, owner=owner, field="eps")


# --------------------------------------------------------------------------- Laplace
@final
@attrs.frozen
class LaplaceAdmissible(AbstractAdmissibleNoise):
    """Standard Laplace ``h(z) = ½e^{−|z|}``: (ε, δ)-admissible (NRS07 Lemma 2.9).

    Privacy guarantee: with ``S`` a β-smooth upper bound on LS (either neighbouring
    relation, the one ``S`` was computed for), ``f(x) + (2S(x)/ε)·Z`` is (ε, δ)-DP
    for ``β = ε/(2 ln(2/δ))``. Shift: ``|ln h(z) − ln h(z + Δ)| ≤ |Δ| ≤ ε/2``.
    Dilation: the excess mass ``∫ max(0, h − e^{ε/2} h_λ)`` is
    ``e^{−z₀} − e^{ε/2} e^{−z₀e^{|λ|}}`` with ``z₀ = (ε/2 + |λ|)/(e^{|λ|} − 1)`` for
    ``λ < 0`` and zero for ``0 ≤ λ ≤ ε/2`` (:func:`laplace_dilation_delta`), at most
    ``δ/2`` for ``|λ| ≤ β``.

    Examples:
        >>> LaplaceAdmissible().constants(1, "1e-6").alpha
        Fraction(1, 2)

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, Def. 2.5, Lemmas 2.6 and 2.9.
    """

    def constants(self, eps: object, delta: object) -> Admissibility:
        """``α = ε/2`` (exact) and ``β = ε/(2 ln(2/δ))`` rounded down."""
        e = _eps(eps, "LaplaceAdmissible")
        d = to_fraction(delta, owner="LaplaceAdmissible", field="delta")
        if not 0 < d < 1:
            raise InvalidArgument("LaplaceAdmissible", "delta", delta, "must be in (0, 1)")
        with mpmath.workprec(200):
            beta = _mpf(e) / (2 * mpmath.log(2 / _mpf(d)))
            return Admissibility(alpha=e / 2, beta=_down(beta))

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln h(z) = −ln 2 − |z|``."""
        return np.asarray(-math.log(2.0) - np.abs(np.asarray(z, dtype=np.float64)), dtype=np.float64)

    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``F(z)``: ``½e^{z}`` below zero, ``1 − ½e^{−z}`` above."""
        return mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2

    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """``−sign(u − ½) ln(1 − 2|u − ½|)``."""
        c = u - 0.5
        return np.asarray(-np.sign(c) * np.log1p(-2 * np.abs(c)), dtype=np.float64)

    def tail(self, z: float) -> float:
        """``Pr[|Z| > z] = e^{−z}``."""
        return math.exp(-z) * (1 + 1e-12)


# --------------------------------------------------------------------------- Cauchy-type
def _gamma(value: object) -> Fraction:
    g = to_fraction(value, owner="CauchyAdmissible", field="gamma")
    if g <= 1:
        raise InvalidArgument("CauchyAdmissible", "gamma", value, "must be > 1")
    return g


@final
@attrs.frozen
class CauchyAdmissible(AbstractAdmissibleNoise):
    """``h(z) = c_γ/(1 + |z|^γ)``, ``c_γ = γ sin(π/γ)/(2π)``: ε-admissible (NRS07 Lemma 2.10).

    Privacy guarantee (ideal, continuous): with ``S`` a β-smooth upper bound on LS,
    ``f(x) + (S(x)/α)·Z`` is ε-DP for ``α = β = ε/(2(γ + 1))``; for ``γ = 2``
    (Cauchy) the scale is ``6S/ε`` with ``β = ε/6``. Proof of the constants:
    ``|d/dz ln h| = γ|z|^{γ−1}/(1 + |z|^γ) ≤ (γ − 1)^{1−1/γ} ≤ γ + 1`` bounds the
    shift loss by ``α(γ − 1)^{1−1/γ} ≤ ε/2``; the dilation loss
    ``−λ + ln((1 + e^{λγ}|z|^γ)/(1 + |z|^γ))`` lies in ``[−|λ|, |λ|(γ − 1)]`` hence
    is at most ``β·max(1, γ − 1) ≤ ε/2``. :meth:`tight_constants` uses these
    bounds directly. The lattice sampler does not preserve pure DP (module docstring).

    Examples:
        >>> CauchyAdmissible(2).constants(1)
        Admissibility(alpha=Fraction(1, 6), beta=Fraction(1, 6))

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, Def. 2.5, Lemmas 2.7 and 2.10.
    """

    gamma: Fraction = attrs.field(default=Fraction(2), converter=_gamma)

    def constants(self, eps: object) -> Admissibility:
        """NRS07: ``α = β = ε/(2(γ + 1))`` (exact for rational γ)."""
        e = _eps(eps, "CauchyAdmissible")
        c = e / (2 * (self.gamma + 1))
        return Admissibility(alpha=c, beta=c)

    def tight_constants(self, eps: object) -> Admissibility:
        """``α = ε/(2(γ−1)^{1−1/γ})``, ``β = ε/(2 max(1, γ − 1))``, rounded down."""
        e = _eps(eps, "CauchyAdmissible")
        g = self.gamma
        with mpmath.workprec(200):
            lip = mpmath.power(_mpf(g) - 1, 1 - 1 / _mpf(g))
            alpha = _down(_mpf(e) / (2 * lip))
        return Admissibility(alpha=alpha, beta=e / (2 * max(Fraction(1), g - 1)))

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln c_γ − ln(1 + |z|^γ)``."""
        g = float(self.gamma)
        zz = np.abs(np.asarray(z, dtype=np.float64))
        log_c = math.log(g * math.sin(math.pi / g) / (2 * math.pi))
        return np.asarray(log_c - np.logaddexp(0.0, g * np.log(np.maximum(zz, 1e-300))), dtype=np.float64)

    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``½ + ½ sign(z) I_w(1/γ, 1 − 1/γ)``, ``w = |z|^γ/(1 + |z|^γ)``; γ = 2: ``½ + atan(z)/π``."""
        if self.gamma == 2:
            return mpmath.mpf(1) / 2 + mpmath.atan(z) / mpmath.pi
        g = _mpf(self.gamma)
        a = abs(z)
        if a == 0:
            return mpmath.mpf(1) / 2
        zg = mpmath.power(a, g)
        inc = mpmath.betainc(1 / g, 1 - 1 / g, 0, zg / (1 + zg), regularized=True)
        return (1 + inc) / 2 if z > 0 else (1 - inc) / 2

    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """Inverse regularized incomplete beta in float64."""
        g = float(self.gamma)
        c = u - 0.5
        w = special.betaincinv(1 / g, 1 - 1 / g, np.abs(2 * c))
        with np.errstate(divide="ignore"):
            return np.asarray(np.sign(c) * (w / (1 - w)) ** (1 / g), dtype=np.float64)

    def tail(self, z: float) -> float:
        """``Pr[|Z| > z] ≤ 2c_γ z^{1−γ}/(γ − 1)``."""
        g = float(self.gamma)
        c = g * math.sin(math.pi / g) / (2 * math.pi)
        return min(1.0, 2 * c * z ** (1 - g) / (g - 1) * (1 + 1e-12)) if z > 0 else 1.0


# --------------------------------------------------------------------------- zCDP noises
def _sigma(value: object, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise InvalidArgument(owner, "sigma", value, "must be a real number")
    s = float(value)
    if not math.isfinite(s) or s <= 0:
        raise InvalidArgument(owner, "sigma", value, "must be finite and > 0")
    return s


def lln_sigma(eps: float, t: float) -> float:
    """The positive root of ``5(ε/t)σ³ − 5σ² − 1 = 0`` (Bun–Steinke 2019 §3.1.1).

    It minimises the LLN noise variance ``2e^{2σ²}/s²`` with
    ``s = e^{−3σ²/2}(ε − t/σ)``. The cubic ``p(σ) = 5(ε/t)σ³ − 5σ² − 1`` has
    ``p(0) = −1 < 0`` and ``p′(σ) = 15(ε/t)σ² − 10σ`` is negative then positive,
    so it has exactly one positive root; it exceeds ``t/ε`` (``p(t/ε) = −1``).
    Found by bisection to float precision.

    Examples:
        >>> s = lln_sigma(1.0, 0.1); abs(5 * 10 * s**3 - 5 * s**2 - 1) < 1e-12
        True
    """
    if not (eps > 0 and t > 0):
        raise InvalidArgument("lln_sigma", "eps/t", (eps, t), "must both be > 0")
    r = eps / t

    def p(s: float) -> float:
        return 5 * r * s**3 - 5 * s**2 - 1

    lo, hi = t / eps, max(2 * t / eps, 1.0)
    while p(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if p(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


def _sigma_laplacelognormal(value: object) -> float:
    return _sigma(value, "LaplaceLogNormal")


def _sigma_uniformlognormal(value: object) -> float:
    return _sigma(value, "UniformLogNormal")


def _sigma_arsinhnormal(value: object) -> float:
    return _sigma(value, "ArsinhNormal")


class _ZCDPNoise(AbstractAdmissibleNoise):
    """Common part: ``ε(s, t)`` and the constants for ρ-zCDP."""

    sigma: float

    @abc.abstractmethod
    def _s_coef(self) -> mpmath.mpf:
        """``c`` with ``ε(s, t) = c_t |t| + c |s|``."""

    @abc.abstractmethod
    def _t_coef(self) -> mpmath.mpf:
        """``c_t`` with ``ε(s, t) = c_t |t| + c |s|``."""

    def constants(self, rho: object, t: object) -> Admissibility:
        """The largest ``s`` with ``ε(s, t) ≤ √(2ρ)``, rounded down; ``beta = t``.

        Release ``f(x) + (S(x)/s)·Z`` with ``S`` a ``t``-smooth bound: ρ-zCDP.
        """
        owner = type(self).__name__
        r = positive(rho, owner=owner, field="rho")
        tt = positive(t, owner=owner, field="t")
        with mpmath.workprec(200):
            eps = mpmath.sqrt(2 * _mpf(r))
            room = eps - self._t_coef() * _mpf(tt)
            if room <= 0:
                raise InvalidArgument(owner, "t", t, f"leaves no room: needs t < sqrt(2 rho)/{float(self._t_coef())}")
            return Admissibility(alpha=_down(room / self._s_coef()), beta=tt)

    def epsilon(self, s: float, t: float) -> float:
        """``ε(s, t) = c_t|t| + c|s|`` with ``D_a(Z ‖ e^t Z + s) ≤ a ε²/2`` for all ``a > 1``."""
        return float(self._t_coef()) * abs(t) + float(self._s_coef()) * abs(s)


@final
@attrs.frozen
class LaplaceLogNormal(_ZCDPNoise):
    """LLN(σ): ``Z = X·e^{σY}``, ``X`` standard Laplace, ``Y ~ N(0, 1)`` (Bun–Steinke 2019).

    Privacy guarantee: ``D_a(Z ‖ e^t Z + s) ≤ a ε²/2`` with
    ``ε = |t|/σ + e^{3σ²/2}|s|`` (Bun–Steinke 2019, §3.1.1; the ``t`` part is data
    processing of a Gaussian shift by ``t/σ``), so
    ``f(x) + (S(x)/s)·Z`` with a ``t``-smooth ``S`` is ``(ε²/2)``-zCDP.
    :meth:`for_privacy` picks σ by :func:`lln_sigma`.

    Examples:
        >>> LaplaceLogNormal(1.0).epsilon(0.0, 0.5)
        0.5

    References:
        M. Bun, T. Steinke, Average-Case Averages, NeurIPS 2019, §3.1.1.
    """

    sigma: float = attrs.field(converter=_sigma_laplacelognormal)

    @classmethod
    def for_privacy(cls, rho: float, t: float) -> LaplaceLogNormal:
        """LLN with the variance-optimal σ for ``ε = √(2ρ)`` and smoothing ``t``."""
        return cls(lln_sigma(math.sqrt(2 * float(rho)), float(t)))

    def _s_coef(self) -> mpmath.mpf:
        return mpmath.exp(3 * mpmath.mpf(self.sigma) ** 2 / 2)

    def _t_coef(self) -> mpmath.mpf:
        return 1 / mpmath.mpf(self.sigma)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln ∫ ½e^{−σy − |z|e^{−σy}} φ(y) dy``, trapezoid around the integrand's peak.

        The log integrand is concave in ``y`` with curvature ``≤ −1``; its peak
        ``y*`` solves ``σ|z|e^{−σy} − σ − y = 0`` (bisection); a trapezoid on
        ``y* − 20w … y* + 20`` (``w`` the local width left of the peak) in log space
        gives close to float64 accuracy, tails included.
        """
        zz = np.abs(np.atleast_1d(np.asarray(z, dtype=np.float64)))
        sig = self.sigma
        with np.errstate(divide="ignore"):
            la = np.log(np.maximum(zz, 1e-300))
        lo = np.full(zz.shape, -80.0)
        hi = 80.0 + np.maximum(la, 0.0) / sig
        for _ in range(90):
            mid = (lo + hi) / 2
            pos = sig * np.exp(la - sig * mid) - sig - mid > 0
            lo = np.where(pos, mid, lo)
            hi = np.where(pos, hi, mid)
        ystar = (lo + hi) / 2
        # left of the peak the double exponential falls with curvature σ(σ + y*) + 1;
        # right of it the Gaussian factor (curvature ≥ 1) dominates
        width = 1 / np.sqrt(sig * np.maximum(sig + ystar, 0.0) + 1)
        left = np.linspace(-20.0, 0.0, 201)[None, :] * width[:, None]
        right = np.broadcast_to(np.linspace(0.0, 20.0, 401)[1:][None, :], (zz.size, 400))
        offs = np.concatenate((left, right), axis=1)
        h_l, h_r = (20.0 * width / 200)[:, None], 20.0 / 400
        logw = np.concatenate(
            (np.log(np.broadcast_to(h_l, (zz.size, 200))), np.log((h_l + h_r) / 2), np.full((zz.size, 400), math.log(h_r))),
            axis=1,
        )
        y = ystar[:, None] + offs
        expo = np.where((zz == 0)[:, None], 0.0, np.exp(la[:, None] - sig * y))
        terms = math.log(0.5) - sig * y - expo - 0.5 * y * y - 0.5 * math.log(2 * math.pi) + logw
        return np.asarray(special.logsumexp(terms, axis=1), dtype=np.float64)

    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``1 − ½E[exp(−z e^{−σY})]`` for ``z ≥ 0`` (mpmath quadrature), symmetric."""
        a = abs(z)
        sig = mpmath.mpf(self.sigma)
        inner = mpmath.quad(lambda y: mpmath.exp(-a * mpmath.exp(-sig * y)) * mpmath.npdf(y), [-mpmath.inf, 0, mpmath.inf])
        upper = 1 - inner / 2
        return upper if z >= 0 else 1 - upper

    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """Bisection on the float64 cdf (from the Gauss–Hermite mixture)."""
        return _float_quantile(lambda z: _lln_cdf_f64(z, self.sigma), u)

    def tail(self, z: float) -> float:
        """``Pr[|Z| > z] ≤ E[e^{σY}]/z = e^{σ²/2}/z`` (Markov on ``|X| e^{σY}``, ``E|X| = 1``)."""
        return min(1.0, math.exp(self.sigma**2 / 2) / z * (1 + 1e-12)) if z > 0 else 1.0


@final
@attrs.frozen
class UniformLogNormal(_ZCDPNoise):
    """ULN(σ): ``Z = U·e^{σY}``, ``U ~ Unif[−1, 1]``, ``Y ~ N(0, 1)`` (Bun–Steinke 2019).

    Density ``h(z) = ½e^{σ²/2} Φ̄(ln|z|/σ + σ)``. Privacy guarantee:
    ``D_a(Z ‖ e^t Z + s) ≤ a ε²/2`` with ``ε = |t|/σ + e^{3σ²/2}√(2/π)|s|/σ``
    (Bun–Steinke 2019, §3, as recalled; the ``t`` part alone is a theorem by data
    processing: ``e^t Z = U e^{σ(Y + t/σ)}``; the ``s`` part is checked
    numerically in the tests for σ ∈ {0.5, 1, 1.5, 2}).

    Examples:
        >>> round(UniformLogNormal(1.0).epsilon(0.0, 0.5), 6)
        0.5

    References:
        M. Bun, T. Steinke, Average-Case Averages, NeurIPS 2019, §3.
    """

    sigma: float = attrs.field(converter=_sigma_uniformlognormal)

    def _s_coef(self) -> mpmath.mpf:
        sig = mpmath.mpf(self.sigma)
        return mpmath.exp(3 * sig**2 / 2) * mpmath.sqrt(2 / mpmath.pi) / sig

    def _t_coef(self) -> mpmath.mpf:
        return 1 / mpmath.mpf(self.sigma)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln ½ + σ²/2 + ln Φ̄(ln|z|/σ + σ)``."""
        zz = np.abs(np.asarray(z, dtype=np.float64))
        with np.errstate(divide="ignore"):
            arg = np.log(zz) / self.sigma + self.sigma
        return np.asarray(math.log(0.5) + self.sigma**2 / 2 + special.log_ndtr(-arg), dtype=np.float64)

    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``½ + ½[Φ(ln z/σ) + z e^{σ²/2} Φ̄(ln z/σ + σ)]`` for ``z > 0``, symmetric."""
        a = abs(z)
        if a == 0:
            return mpmath.mpf(1) / 2
        sig = mpmath.mpf(self.sigma)
        c = mpmath.log(a) / sig
        upper = (1 + mpmath.ncdf(c) + a * mpmath.exp(sig**2 / 2) * mpmath.ncdf(-(c + sig))) / 2
        return upper if z > 0 else 1 - upper

    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """Bisection on the float64 cdf."""
        sig = self.sigma

        def cdf(z: FloatArray) -> FloatArray:
            a = np.maximum(np.abs(z), 1e-300)
            c = np.log(a) / sig
            upper = (1 + special.ndtr(c) + a * np.exp(sig**2 / 2) * special.ndtr(-(c + sig))) / 2
            return np.asarray(np.where(z >= 0, upper, 1 - upper), dtype=np.float64)

        return _float_quantile(cdf, u)

    def tail(self, z: float) -> float:
        """``Pr[|Z| > z] ≤ E[e^{σY}]/(2z) = e^{σ²/2}/(2z)`` (Markov, ``E|U| = ½``)."""
        return min(1.0, math.exp(self.sigma**2 / 2) / (2 * z) * (1 + 1e-12)) if z > 0 else 1.0


@final
@attrs.frozen
class ArsinhNormal(_ZCDPNoise):
    """Arsinh-normal: ``Z = sinh(σY)/σ``, ``Y ~ N(0, 1)`` (Bun–Steinke 2019 §3).

    Density ``h(z) = φ(arsinh(σz)/σ)/√(1 + σ²z²)``; closed-form quantile
    ``sinh(σΦ⁻¹(u))/σ``. Privacy: this class uses the *conservative*
    ``ε(s, t) = 2|t|/σ + (1 + σ)|s|``, which the tests check numerically against
    ``D_a(Z ‖ e^t Z + s)`` over a grid of orders, shifts and dilations (the
    paper's exact constant was not re-derived here; see the report).
    Heuristic: for large ``|z|`` the dilation acts on ``Y`` as a shift by
    ``t/σ``; near ``0`` a shift by ``s`` acts on ``Y`` as a shift by ``s``.

    Examples:
        >>> ArsinhNormal(1.0).epsilon(0.5, 0.0)
        1.0

    References:
        M. Bun, T. Steinke, Average-Case Averages, NeurIPS 2019, §3.
    """

    sigma: float = attrs.field(converter=_sigma_arsinhnormal)

    def _s_coef(self) -> mpmath.mpf:
        return 1 + mpmath.mpf(self.sigma)

    def _t_coef(self) -> mpmath.mpf:
        return 2 / mpmath.mpf(self.sigma)

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln φ(arsinh(σz)/σ) − ½ ln(1 + σ²z²)``."""
        zz = np.asarray(z, dtype=np.float64)
        y = np.arcsinh(self.sigma * zz) / self.sigma
        return np.asarray(-0.5 * y * y - 0.5 * math.log(2 * math.pi) - 0.5 * np.log1p((self.sigma * zz) ** 2), dtype=np.float64)

    def cdf_mp(self, z: mpmath.mpf) -> mpmath.mpf:
        """``Φ(arsinh(σz)/σ)``."""
        sig = mpmath.mpf(self.sigma)
        return mpmath.ncdf(mpmath.asinh(sig * z) / sig)

    def quantile_guess(self, u: FloatArray) -> FloatArray:
        """``sinh(σΦ⁻¹(u))/σ``."""
        with np.errstate(over="ignore"):
            return np.asarray(np.sinh(self.sigma * special.ndtri(u)) / self.sigma, dtype=np.float64)

    def tail(self, z: float) -> float:
        """``Pr[|Z| > z] = 2Φ̄(arsinh(σz)/σ)``."""
        return min(1.0, 2 * float(special.ndtr(-math.asinh(self.sigma * z) / self.sigma)) * (1 + 1e-9))


# --------------------------------------------------------------------------- float helpers
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(300)
_GH_LOGW = np.log(_GH_W / math.sqrt(2 * math.pi))


def _lln_cdf_f64(z: FloatArray, sigma: float) -> FloatArray:
    a = np.abs(z)[:, None]
    inner = np.exp(-a * np.exp(-sigma * _GH_X[None, :])) @ np.exp(_GH_LOGW)
    upper = 1 - inner / 2
    return np.asarray(np.where(z >= 0, upper, 1 - upper), dtype=np.float64)


def _float_quantile(cdf: Callable[[FloatArray], FloatArray], u: FloatArray) -> FloatArray:
    """Vectorised bisection of a float64 cdf on ``[−1e12, 1e12]`` (a starting guess only)."""
    lo = np.full(u.shape, -1e12)
    hi = np.full(u.shape, 1e12)
    for _ in range(100):
        mid = (lo + hi) / 2
        below = cdf(mid) <= u
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return np.asarray((lo + hi) / 2, dtype=np.float64)


# --------------------------------------------------------------------------- numerical checks
def pure_loss_grid(noise: AbstractAdmissibleNoise, alpha: float, beta: float, z_max: float = 1e4, n: int = 20001) -> tuple[float, float]:
    """Worst shift and dilation log density ratios on a grid (pure-DP admissibility).

    Shift: ``max |ln h(z) − ln h(z + Δ)|`` over ``Δ ∈ {±α}`` (the worst shift of a
    log-concave-or-quasi-concave ``h`` is at the extreme ``|Δ|``; the grid also
    checks ``±α/2``). Dilation: ``max |ln h(z) − λ − ln h(e^{−λ} z)|`` over
    ``λ ∈ {±β, ±β/2}``. The grid is ``sinh``-spaced on ``[−z_max, z_max]``.

    Returns:
        ``(shift_loss, dilation_loss)``; NRS07 admissibility for ε-DP needs
        both ``≤ ε/2``.
    """
    v = np.linspace(-math.asinh(z_max), math.asinh(z_max), n)
    z = np.sinh(v)
    base = noise.log_density(z)
    shift = 0.0
    for d in (alpha, -alpha, alpha / 2, -alpha / 2):
        shift = max(shift, float(np.max(np.abs(base - noise.log_density(z + d)))))
    dil = 0.0
    for lam in (beta, -beta, beta / 2, -beta / 2):
        dil = max(dil, float(np.max(np.abs(base - (-lam + noise.log_density(np.exp(-lam) * z))))))
    return shift, dil


def laplace_dilation_delta(lam: float, eps: float) -> float:
    """``sup_S Pr[Z ∈ S] − e^{ε/2} Pr[e^λ Z ∈ S]`` for standard Laplace ``Z`` (closed form).

    With ``p(z) = ½e^{−|z|}`` and ``q(z) = ½e^{−λ}e^{−|z|e^{−λ}}``, ``p > e^{ε/2}q``
    iff ``|z|(e^{−λ} − 1) > ε/2 − λ``: empty for ``0 ≤ λ ≤ ε/2``; for ``λ < 0`` it
    is ``|z| > z₀ = (ε/2 + |λ|)/(e^{|λ|} − 1)`` with mass
    ``e^{−z₀} − e^{ε/2 + |λ|} e^{−z₀ e^{|λ|}} / e^{|λ|}``. For ``λ > ε/2`` it
    returns 1 (not admissible).

    Examples:
        >>> laplace_dilation_delta(0.1, 1.0)
        0.0
    """
    if lam >= 0:
        return 0.0 if lam <= eps / 2 else 1.0
    a = -lam
    z0 = (eps / 2 + a) / math.expm1(a)
    return max(0.0, math.exp(-z0) - math.exp(eps / 2) * math.exp(-z0 * math.exp(a)))


def renyi_divergence(
    noise: AbstractAdmissibleNoise, order: float, s: float, t: float, reverse: bool = False, method: str = "trapezoid"
) -> float:
    """``D_order(Z ‖ e^t Z + s)`` (or the reverse, ``D_order(e^t Z + s ‖ Z)``), numerically.

    The integrand ``p^a q^{1−a}`` is integrated on each half-line in ``w`` with
    ``z = ±e^w``, ``w ∈ [−100, 80]`` (a log-scale grid resolves the scale
    mixtures LLN/ULN near zero and in the tails), in log space with its maximum
    subtracted: ``method="trapezoid"`` uses 36001 points per half-line,
    ``method="quad"`` uses ``scipy.integrate.quad`` between break points.
    """
    a = float(order)

    def log_integrand(w: FloatArray, sign: float) -> FloatArray:
        z = sign * np.exp(w)
        lp = noise.log_density(z)
        lq = noise.log_density((z - s) * math.exp(-t)) - t
        if reverse:
            lp, lq = lq, lp
        vals = a * lp + (1 - a) * lq + w
        return np.asarray(np.where(np.isnan(vals), -np.inf, vals), dtype=np.float64)

    grid = np.linspace(-100.0, 80.0, 36001)
    halves = [(sg, log_integrand(grid, sg)) for sg in (1.0, -1.0)]
    m = max(float(np.max(v)) for _, v in halves)
    if not math.isfinite(m):
        return math.inf
    total = 0.0
    for sg, vals in halves:
        if method == "trapezoid":
            total += float(np.sum(np.exp(vals - m))) * float(grid[1] - grid[0])
        else:
            peak = float(grid[int(np.argmax(vals))])
            pts = sorted({-100.0, -30.0, -10.0, -3.0, 0.0, 3.0, 10.0, 30.0, 80.0, peak})
            for lo, hi in zip(pts[:-1], pts[1:]):
                val, _ = integrate.quad(
                    lambda w: float(np.exp(log_integrand(np.array([w]), sg)[0] - m)),
                    lo,
                    hi,
                    limit=400,
                    epsabs=0,
                    epsrel=1e-11,
                )
                total += val
    return (math.log(total) + m) / (a - 1)
