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

This module holds the shared part (:class:`Admissibility`, :class:`AbstractAdmissibleNoise`)
and the two noises with exact samplers (Laplace, generalised Cauchy); the zCDP noises are in
:mod:`dpalg.noise._admissible_zcdp`, the numerical checks of every constant in
:mod:`dpalg.noise._admissible_checks`.

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
    "CauchyNoise",
    "LaplaceNoise",
    "lattice_release_note",
    "log_upper",
]

FloatArray = npt.NDArray[np.float64]
IntOrObjArray = npt.NDArray[np.int64] | npt.NDArray[np.object_]
_MAX_GAMMA_NUM: Final = 256  # γ = p/q with p ≤ 256 keeps the integer powers small
_WORD: Final = 64


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
