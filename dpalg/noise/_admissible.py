"""Admissible noise for smooth sensitivity: constants, exact lattice samplers, numerical checks.

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
noise                  privacy                      constants (exact ``Fraction``, rounded down)
=====================  ===========================  ===========================================
LaplaceNoise           (ε, δ)-DP, NRS07 L. 2.9      α = ε/2, β = ε/(2 ln(2/δ))
CauchyNoise(γ)         ε-DP, NRS07 (gen. Cauchy)    ``nrs07``: α = β = ε/(2(γ+1)) (γ = 2: ε/6);
                                                    ``tight``: α = ε/(2(γ−1)^{(γ−1)/γ}),
                                                    β = ε/(2 max(1, γ−1))
LaplaceLogNormal(σ)    ε²/2-zCDP, BS19              ε = t/σ + e^{3σ²/2}·s
UniformLogNormal(σ)    ε²/2-zCDP, BS19 (σ ≥ √2)     ε = t/σ + e^{3σ²/2}·√(2/π)/σ·s
ArsinhNormal(σ)        ε²/2-zCDP, BS19              ε = (2/(3σ) + σ/2)·s + √(t(t/σ² + 1/σ + 2))
=====================  ===========================  ===========================================

Every constant is proved in ``docs/mechanisms/smooth_sensitivity.md`` §3 from the
pointwise bounds ``|d/dz ln h| ≤ L`` (sliding) and the range of the dilation
log-ratio; the Cauchy "tight" constants make each property cost exactly ε/2 at its
extreme (doubling either is caught by the tests), NRS07's are smaller and hence
also valid. The zCDP constants are Bun–Steinke's; they are checked numerically
(:func:`check_zcdp`) but **no sampler exists for them** (see below), so no
mechanism node uses them.

**Exact lattice samplers** (:meth:`AbstractAdmissibleNoise.sample_lattice`). For a
rational ``scale`` and a lattice ``2^k ℤ`` they return integers ``N`` distributed
*exactly* as ``round(scale·Z / 2^k)`` (round to nearest; ties have probability 0).
No floating-point number decides any output (Mironov 2012):

* Laplace, ``b = scale/2^k``: ``P[N = 0] = 1 − e^{−1/(2b)}`` and, given ``N ≠ 0``,
  ``|N| − 1`` is geometric with ``P[|N| − 1 ≥ g] = e^{−g/b}`` and the sign uniform
  (``P[|N| ≥ j] = P[|Z| ≥ (j − ½)/b] = e^{−(j−½)/b}``). The first is an exact
  Bernoulli(exp(−1/(2b))) (Canonne–Kamath–Steinke 2020, Alg. 1), the geometric is
  the one inside :func:`~dpalg.noise.discrete_laplace`.
* Generalised Cauchy, rational ``γ = p/q``: ``|Z|`` has density ∝ ``g(t) = 1/(1+t^γ)``
  on ``t ≥ 0``. Rejection from the envelope ``e(t) = 1`` (``t < 1``) / ``t^{−γ}``
  (``t ≥ 1``), masses ``1`` and ``1/(γ−1)``: with probability ``(γ−1)/γ`` propose
  ``t = V``, else the Pareto ``t = V^{−q/(p−q)}``, ``V`` uniform; accept when a
  uniform ``U`` is below ``g(t)/e(t)``. Both the acceptance test and the rounding
  ``round(b t)`` are monotone in ``(U, V)`` and reduce to comparisons of *integer*
  polynomials in the binary digits of ``U`` and ``V``
  (``V^p U^q < (1 − U)^q`` resp. ``V^p U^{p−q} < (1 − U)^{p−q}``; the Pareto rounding
  by an integer ``(p−q)``-th root). The digits are drawn lazily, 64 at a time, until
  every point of the current box gives the same answer -- an exact sampler that
  terminates with probability one (acceptance ≥ 1/2 per round).

Consequently a mechanism that is private with the continuous noise is private with
the *same* parameters after sampling (the output is a post-processing, see
:func:`lattice_release_note`): pure ε-DP stays pure. The zCDP noises (products with
``e^{σY}``, ``Y`` Gaussian, or ``sinh(σY)``) would need an exact lazy continuous
Gaussian; :meth:`sample_lattice` raises :class:`~dpalg.Unsupported` for them.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.5, Lemma 2.6, Laplace Lemma 2.9 and the
    generalised Cauchy admissibility lemma).
    M. Bun, T. Steinke. Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation. NeurIPS 2019 (§3, LLN, ULN, arsinh-normal).
    C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential
    Privacy. NeurIPS 2020 (Algorithms 1-2).
    I. Mironov. On Significance of the Least Significant Bits for Differential
    Privacy. CCS 2012.
"""

from __future__ import annotations

import abc
import math
from fractions import Fraction
from typing import Final, Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported
from dpalg._numbers import positive, to_fraction
from dpalg.noise._bernoulli import bernoulli_exp, check_size
from dpalg.noise._exact import LazyUniform, exp_neg_bounds, rational_bounds
from dpalg.noise._laplace import MAX_LAPLACE_SCALE, _geometric_h, _low_part, _plan, _sign_bits
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng

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
    "laplace_dilation_delta",
    "lattice_release_note",
    "lln_optimal_sigma",
    "log_upper",
]

FloatArray = npt.NDArray[np.float64]
IntOrObjArray = npt.NDArray[np.int64] | npt.NDArray[np.object_]
_MAX_GAMMA_NUM: Final = 256  # γ = p/q with p ≤ 256 keeps the integer powers small
_WORD: Final = 64


def _pos(value: object, owner: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, field, value, "must be a positive real number")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidArgument(owner, field, value, "must be finite and > 0")
    return v


def _floor_dyadic(x: Fraction, bits: int = 60) -> Fraction:
    """The largest multiple of ``2^(e − bits)`` that is ``≤ x`` (``x > 0``, ``2^e ≤ x``)."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    shift = bits - e
    scaled = (x.numerator << shift) // x.denominator if shift >= 0 else x.numerator // (x.denominator << -shift)
    return Fraction(scaled) / Fraction(2) ** shift if shift >= 0 else Fraction(scaled << -shift)


def log_upper(x: Fraction) -> Fraction:
    """A rational ``L ≥ ln x`` for rational ``x ≥ 1``, within about ``2⁻⁴⁰`` relative.

    The candidate comes from floating point; it is *verified* with rigorous integer
    bounds of ``e^{−L}`` (:func:`dpalg.noise._exact.exp_neg_bounds`): ``L ≥ ln x`` iff
    ``e^{−L} ≤ 1/x``, checked as ``hi·x.num ≤ 2^prec·x.den`` for the upper bound ``hi``
    of ``2^prec e^{−L}``. The margin doubles until the check passes.

    Examples:
        >>> L = log_upper(Fraction(2_000_000))
        >>> float(L) - math.log(2e6) < 1e-9 and L > 0
        True
    """
    if x < 1:
        raise InvalidArgument("log_upper", "x", x, "must be >= 1")
    if x == 1:
        return Fraction(0)
    guess = math.log(x.numerator) - math.log(x.denominator)
    margin = 2.0**-40 * max(1.0, guess) + 2.0**-60
    while True:
        cand = Fraction(guess + margin)
        if cand > 0:
            prec = 64 + 2 * (x.numerator.bit_length() + x.denominator.bit_length())
            _, hi = exp_neg_bounds(cand, prec)
            if hi * x.numerator <= (x.denominator << prec):
                return cand
        margin *= 2  # pragma: no cover - the float guess is far better than 2^-40


def _iroot(n: int, e: int) -> int:
    """``⌊n^{1/e}⌋`` for integers ``n ≥ 0``, ``e ≥ 1`` (Newton from above)."""
    if n < 2 or e == 1:
        return n
    x = 1 << -(-n.bit_length() // e)  # ≥ the root
    while True:
        y = ((e - 1) * x + n // x ** (e - 1)) // e
        if y >= x:
            return x
        x = y


@final
@attrs.frozen
class Admissibility:
    """Constants of one noise for one privacy target (exact; rounded in the safe direction).

    Attributes:
        alpha: the shift budget (noise scale is ``S(x)/alpha``); ``s`` for zCDP.
        beta: the smoothness the bound ``S`` must have; ``t`` for zCDP.
        measure: ``"pure"``, ``"approx"`` or ``"zcdp"``.
        eps: ε of the guarantee (for zCDP, ``ρ = eps²/2``).
        delta: δ of the guarantee (0 for pure and zCDP).
        theorem: the result relied on.
    """

    alpha: Fraction
    beta: Fraction
    measure: Literal["pure", "approx", "zcdp"]
    eps: Fraction
    delta: Fraction
    theorem: str

    @property
    def rho(self) -> Fraction:
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


def lattice_release_note() -> str:
    """Why lattice sampling keeps the guarantee (recorded in certificates).

    With ``g(x) = round(f(x)/2^k)·2^k`` and ``S'(x) = S(x) + 2^k``: ``|g(x) − g(y)| ≤
    |f(x) − f(y)| + 2^k ≤ S'(x)`` and ``S'`` is β-smooth (``S(x) + c ≤ e^β (S(y) + c)``),
    so ``g(x) + (S'(x)/α)·Z`` is private; the release ``2^k (g(x)/2^k + N)`` with
    ``N = round(S'(x)·Z/(α 2^k))`` (exact) equals its rounding to ``2^k ℤ``: post-processing.
    """
    return "lattice: f rounded to 2^k Z, S + 2^k (still beta-smooth), exact round(scale*Z/2^k) (post-processing)"


class AbstractAdmissibleNoise(abc.ABC):
    """A unit-scale symmetric noise distribution for smooth-sensitivity releases."""

    @abc.abstractmethod
    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        """``ln h(z)`` (numpy float64; for tests and checks, never for sampling)."""

    @abc.abstractmethod
    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        """``P[Z ≤ z]`` in float64 (for statistical tests)."""

    def _sample_units(self, b: Fraction, size: int, rng: AbstractRandomness) -> IntOrObjArray:
        raise Unsupported(f"{type(self).__name__} has no exact lattice sampler (it would need an exact continuous Gaussian)")

    def sample_lattice(self, size: int, k: int, rng: RngLike = None, *, scale: object = 1) -> IntOrObjArray:
        """``size`` exact draws of ``round(scale·Z / 2^k)`` (module docstring).

        Args:
            size: number of samples (``≥ 0``).
            k: lattice exponent in ``[-1100, 1100]`` (the output ``N`` stands for ``N·2^k``).
            rng: randomness (default: the secure source).
            scale: the noise scale, an exact positive number (int, Fraction, decimal
                string, or float taken exactly).

        Returns:
            The integers ``N`` (int64, or Python ints in an object array when some
            ``|N| ≥ 2^62`` -- heavy Cauchy tails).

        Raises:
            Unsupported: the noise has no exact sampler (the zCDP noises).
            InvalidArgument: bad ``size``, ``k`` or ``scale``.

        Examples:
            >>> from dpalg.noise import SeededRandomness
            >>> LaplaceNoise().sample_lattice(3, -10, SeededRandomness(1), scale=2).dtype
            dtype('int64')
        """
        owner = f"{type(self).__name__}.sample_lattice"
        n = check_size(size, owner)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -1100 <= int(k) <= 1100:
            raise InvalidArgument(owner, "k", k, "must be an int in [-1100, 1100]")
        sc = positive(scale, owner=owner, field="scale")
        b = sc / Fraction(2) ** int(k)
        return self._sample_units(b, n, resolve_rng(rng))


# --- (ε, δ)-DP: Laplace -----------------------------------------------------------------


@final
@attrs.frozen
class LaplaceNoise(AbstractAdmissibleNoise):
    """Standard Laplace ``h(z) = e^{−|z|}/2``: (ε/2, ε/(2 ln(2/δ)))-admissible (NRS07 Lemma 2.9).

    Privacy guarantee: with a β-smooth upper bound ``S`` (``β ≤ ε/(2 ln(2/δ))``),
    ``f(x) + (2 S(x)/ε)·Z`` is (ε, δ)-DP under the relation ``S`` was computed for
    (sliding is δ-free for the Laplace, so only the dilation spends δ/2; see the docs).

    Examples:
        >>> c = LaplaceNoise().constants(1, "1e-6")
        >>> c.alpha, round(float(c.beta), 6)
        (Fraction(1, 2), 0.034462)
    """

    def constants(self, eps: object, delta: object) -> Admissibility:
        """``α = ε/2`` exactly; ``β = ε/(2L)`` rounded down, ``L ≥ ln(2/δ)`` (:func:`log_upper`)."""
        e = positive(eps, owner="LaplaceNoise", field="eps")
        d = positive(delta, owner="LaplaceNoise", field="delta")
        if d >= 1:
            raise InvalidArgument("LaplaceNoise", "delta", delta, "must be < 1")
        beta = _floor_dyadic(e / (2 * log_upper(2 / d)))
        return Admissibility(e / 2, beta, "approx", e, d, "NRS07 Lemma 2.9 (Laplace) with Lemma 2.6")

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        return -np.abs(np.asarray(z, dtype=np.float64)) - math.log(2)

    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.asarray(z, dtype=np.float64)
        return np.where(zz < 0, 0.5 * np.exp(np.minimum(zz, 0)), 1 - 0.5 * np.exp(-np.maximum(zz, 0)))

    def _sample_units(self, b: Fraction, size: int, rng: AbstractRandomness) -> IntOrObjArray:
        if b > MAX_LAPLACE_SCALE:
            raise InvalidArgument("LaplaceNoise.sample_lattice", "scale", b, "/ 2**k must be <= 2**52 (choose a larger k)")
        out = np.zeros(size, dtype=np.int64)
        nonzero = np.flatnonzero(bernoulli_exp(1 / (2 * b), size=size, rng=rng))
        m = int(nonzero.size)
        if m:
            plan = _plan(b)
            h = _geometric_h(plan, m, rng)
            if bool(np.any(h >= (np.int64(1) << np.int64(61 - plan.j)))):  # probability < exp(-2**8)
                raise OverflowError("LaplaceNoise.sample_lattice: sample exceeds the int64 range")
            g = _low_part(plan, m, rng) + (h << np.int64(plan.j)) + 1
            out[nonzero] = np.where(_sign_bits(m, rng), -g, g)
        return out


# --- pure ε-DP: generalised Cauchy ------------------------------------------------------


def _gamma(value: object) -> Fraction:
    g = to_fraction(value, owner="CauchyNoise", field="gamma")
    if g <= 1 or g.numerator > _MAX_GAMMA_NUM:
        raise InvalidArgument("CauchyNoise", "gamma", value, f"must be a rational p/q > 1 with p <= {_MAX_GAMMA_NUM}")
    return g


def _pow_upper(base: Fraction, num: int, den: int) -> Fraction:
    """A rational ``≥ base^{num/den}`` (``base > 0``, ``den ≥ 1``), within ``2⁻⁴⁰`` relative, verified exactly."""
    if base == 1 or num == 0:
        return Fraction(1)
    guess = math.exp(num / den * (math.log(base.numerator) - math.log(base.denominator)))
    margin = 2.0**-40
    while True:
        cand = Fraction(guess * (1 + margin))
        if cand**den >= base**num:
            return cand
        margin *= 2  # pragma: no cover


@final
@attrs.frozen
class CauchyNoise(AbstractAdmissibleNoise):
    """Generalised Cauchy ``h(z) ∝ 1/(1 + |z|^γ)``, rational ``γ > 1``: pure ε-DP noise.

    Privacy guarantee: with a β-smooth upper bound ``S``, ``f(x) + (S(x)/α)·Z`` is
    ε-DP (δ = 0) for the constants of :meth:`constants`. Default (``"nrs07"``):
    ``α = β = ε/(2(γ+1))`` -- for ``γ = 2`` (Cauchy) noise scale ``6S/ε``, ``β = ε/6``.
    ``"tight"``: for ``γ = 2`` ``α = β = ε/2`` (scale ``2S/ε``).

    Examples:
        >>> CauchyNoise(2).constants(1).alpha
        Fraction(1, 6)
        >>> CauchyNoise(2).constants(1, variant="tight").alpha
        Fraction(1, 2)
    """

    gamma: Fraction = attrs.field(default=Fraction(2), converter=_gamma)

    @property
    def _log_norm(self) -> float:
        # ∫ 1/(1+|z|^γ) dz = 2·(π/γ)/sin(π/γ)
        g = float(self.gamma)
        return math.log(2 * (math.pi / g) / math.sin(math.pi / g))

    def constants(self, eps: object, *, variant: Literal["nrs07", "tight"] = "nrs07") -> Admissibility:
        """Pure ε-DP constants (δ = 0), exact rationals.

        ``nrs07``: ``α = β = ε/(2(γ+1))``. ``tight``: ``α = ε/(2c)`` with a rational
        ``c ≥ (γ−1)^{(γ−1)/γ}`` (the sup of ``|d/dz ln h|``), ``β = ε/(2 max(1, γ−1))``
        -- sliding and dilation each cost (at most, and at the extreme exactly) ε/2.
        """
        e = positive(eps, owner="CauchyNoise", field="eps")
        g = self.gamma
        if variant == "nrs07":
            c = e / (2 * (g + 1))
            return Admissibility(c, c, "pure", e, Fraction(0), "NRS07 Lemma 2.6 with the generalised-Cauchy admissibility lemma")
        if variant != "tight":
            raise InvalidArgument("CauchyNoise", "variant", variant, "must be 'nrs07' or 'tight'")
        p, q = g.numerator, g.denominator
        slope = _pow_upper(Fraction(p - q, q), p - q, p)  # (γ−1)^{(γ−1)/γ}
        return Admissibility(
            e / (2 * slope), e / (2 * max(Fraction(1), g - 1)), "pure", e, Fraction(0),
            "NRS07 Lemma 2.6; tight constants derived in docs/mechanisms/smooth_sensitivity.md §3",
        )  # fmt: skip

    def log_density(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.abs(np.asarray(z, dtype=np.float64))
        with np.errstate(over="ignore"):
            return np.asarray(-np.log1p(zz ** float(self.gamma)) - self._log_norm, dtype=np.float64)

    def cdf(self, z: npt.ArrayLike) -> FloatArray:
        zz = np.asarray(z, dtype=np.float64)
        if self.gamma == 2:
            return np.asarray(0.5 + np.arctan(zz) / math.pi, dtype=np.float64)
        from scipy import special

        # |Z|^γ/(1 + |Z|^γ) ~ Beta(1/γ, 1 − 1/γ) (|Z|^γ is beta-prime)
        g = float(self.gamma)
        with np.errstate(over="ignore"):
            t = np.abs(zz) ** g
            w = np.where(np.isinf(t), 1.0, t / (1 + t))
        half = 0.5 * special.betainc(1 / g, 1 - 1 / g, w)
        return np.asarray(np.where(zz >= 0, 0.5 + half, 0.5 - half), dtype=np.float64)

    def _sample_units(self, b: Fraction, size: int, rng: AbstractRandomness) -> IntOrObjArray:
        p, q = self.gamma.numerator, self.gamma.denominator
        vals = [_cauchy_rounded_abs(p, q, b, rng) for _ in range(size)]
        signs = _sign_bits(size, rng).tolist() if size else []
        out = [-v if s else v for v, s in zip(vals, signs)]
        if all(abs(v) < 2**62 for v in out):
            return np.array(out, dtype=np.int64)
        arr = np.empty(size, dtype=object)
        arr[:] = out
        return arr


def _cauchy_rounded_abs(p: int, q: int, b: Fraction, rng: AbstractRandomness) -> int:
    """One exact draw of ``round(b·T)``, ``T`` with density ∝ ``1/(1 + t^{p/q})`` on ``t ≥ 0``.

    Rejection sampling (module docstring). ``U = (u + θ)/2^m``, ``V = (v + θ')/2^m`` with
    ``θ, θ'`` the undrawn digits; a decision is taken only when it holds on the
    whole box ``[u, u+1] × [v, v+1] / 2^m`` (ties have probability 0).
    """
    e = p - q  # > 0
    p_small = Fraction(e, p)  # P[propose from the t < 1 part] = (γ−1)/γ
    bn, bd = b.numerator, b.denominator
    while True:
        w = rng.uint64(3).tolist()
        small = LazyUniform(int(w[0]), _WORD, rng).less_than(rational_bounds(p_small))
        u, v, m = int(w[1]), int(w[2]), _WORD
        c = q if small else e  # accept iff V^p U^c < (1 − U)^c
        while True:
            one = 1 << m
            # LHS increasing in U and V, RHS decreasing in U (scaled by 2^{m(p+c)})
            if (v + 1) ** p * (u + 1) ** c <= (one - u - 1) ** c << (m * p):
                accepted = True
                break
            if v**p * u**c >= (one - u) ** c << (m * p):
                accepted = False
                break
            u, v, m = _refine(u, m, rng), _refine(v, m, rng), m + _WORD
        if not accepted:
            continue
        while True:  # rounding: refine V until the box rounds to one integer
            if small:  # t = V: j = ⌊bV + ½⌋ at both ends
                lo = (2 * bn * v + (bd << m)) // (bd << (m + 1))
                hi = (2 * bn * (v + 1) + (bd << m)) // (bd << (m + 1))
            elif v == 0:
                lo, hi = 0, -1  # t unbounded on this box: refine
            else:  # t = V^{−q/e}: Y = 2bt has Y^e = (2b)^e/V^q; j = ⌊(⌊Y⌋ + 1)/2⌋
                lo = (_iroot(((2 * bn) ** e << (m * q)) // (bd**e * (v + 1) ** q), e) + 1) // 2
                hi = (_iroot(((2 * bn) ** e << (m * q)) // (bd**e * v**q), e) + 1) // 2
            if lo == hi:
                return lo
            v, m = _refine(v, m, rng), m + _WORD


def _refine(x: int, m: int, rng: AbstractRandomness) -> int:
    """Append 64 fresh digits to an ``m``-digit prefix."""
    return (x << _WORD) | int(rng.uint64(1)[0])


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


# --- numerical privacy checks -------------------------------------------------------------


def laplace_dilation_delta(lam: float, eps: float) -> float:
    """``sup_E P[Z ∈ E] − e^{ε/2} P[Z ∈ e^λ E]`` for standard Laplace ``Z`` (closed form).

    ``P[Z ∈ e^λ E] = ∫_E e^λ h(e^λ w) dw``; the excess set is where
    ``h(w) > e^{ε/2 + λ} h(e^λ w)``, i.e. ``|w|(e^λ − 1) > ε/2 + λ``: empty for
    ``−ε/2 ≤ λ ≤ 0``; for ``λ > 0`` it is ``|w| > w₀ = (ε/2 + λ)/(e^λ − 1)`` with
    excess ``e^{−w₀} − e^{ε/2} e^{−w₀ e^λ}``; for ``λ < −ε/2`` the set contains a
    neighbourhood of 0 (not admissible: 1 is returned). (Ported from the second
    implementation; tested against the quadrature of :func:`check_admissible`.)

    Examples:
        >>> laplace_dilation_delta(-0.1, 1.0)
        0.0
    """
    if lam <= 0:
        return 0.0 if -lam <= eps / 2 else 1.0
    w0 = (eps / 2 + lam) / math.expm1(lam)
    return max(0.0, math.exp(-w0) - math.exp(eps / 2) * math.exp(-w0 * math.exp(lam)))


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

    alpha, beta, half = float(c.alpha), float(c.beta), float(c.eps) / 2
    z = np.linspace(-zmax, zmax, grid)
    extra = np.array([0.0, 1.0, -1.0])
    if isinstance(noise, CauchyNoise):
        g = float(noise.gamma)
        t = (g - 1) ** (1 / g)
        extra = np.concatenate([extra, [t, -t, t - alpha / 2, -t + alpha / 2]])
    z = np.concatenate([z, extra])
    slide = 0.0
    for d in (alpha, -alpha):
        slide = max(slide, float(np.max(np.abs(noise.log_density(z) - noise.log_density(z + d)))))
    sliding = PrivacyCheck("sliding", slide, half, f"|Delta| <= {alpha}")
    lambdas = np.linspace(-beta, beta, 9)
    if c.measure == "pure":
        zz = np.concatenate([z, np.geomspace(1, 1e12, 400), -np.geomspace(1, 1e12, 400)])
        worst = 0.0
        for lam in lambdas:
            worst = max(worst, float(np.max(np.abs(noise.log_density(zz) - lam - noise.log_density(np.exp(lam) * zz)))))
        return sliding, PrivacyCheck("dilation", worst, half, f"|lambda| <= {beta}")
    worst = 0.0
    for lam in lambdas:
        def gap(v: float, lam: float = float(lam)) -> float:
            a = math.exp(float(noise.log_density(np.array([v]))[0]))
            b = math.exp(half + lam + float(noise.log_density(np.array([math.exp(lam) * v]))[0]))
            return max(0.0, a - b)

        total = 2 * float(integrate.quad(gap, 0, np.inf, limit=400, epsabs=1e-14, epsrel=1e-10)[0])
        worst = max(worst, total)
    return sliding, PrivacyCheck("dilation (hockey-stick)", worst, float(c.delta) / 2, f"|lambda| <= {beta}")


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
    sa, tb, eps = float(c.alpha), float(c.beta), float(c.eps)
    for a in alphas:
        for s in (sa, -sa, 0.0):
            for t in (tb, -tb, 0.0):
                if s == 0 and t == 0:
                    continue
                for rev in (False, True):
                    ratio = _renyi(noise, a, s, t, rev) / (a * eps**2 / 2)
                    if ratio > worst:
                        worst, where = ratio, f"a={a}, s={s:.4g}, t={t:.4g}, reverse={rev}"
    return PrivacyCheck("renyi", worst, 1.0, where)
