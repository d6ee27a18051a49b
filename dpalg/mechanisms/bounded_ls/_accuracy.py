"""Accuracy before running of privately bounded sensitivity and the ratios: the proofs, and the lattice release's error.

Every statement is a function of the node's parameters and, where the error
depends on the data, of a *public assumption* the caller passes as a keyword;
it is then given under that ``condition``. Bounds are rounded up (exact
quantiles from :mod:`dpalg.noise._tails`, mpmath interval arithmetic
elsewhere). ``Q_t(a)`` below is the exact smallest integer ``m`` with
``P[|Z| > m] <= a`` for ``Z`` discrete Laplace of scale ``t``
(:func:`~dpalg.noise._tails.laplace_tail_quantile`), ``G_{σ²}(a)`` the same for
the discrete Gaussian.

**Ratios** (``docs/mechanisms/ratio.md``), conditional on a public lower bound
``n <= b`` on the denominator (keyword ``denominator=``). The truth
``a/b ∈ [0, 1]`` and the clamp to ``[0, 1]`` only moves the output towards it.

* :class:`NaiveRatio`: ``â = a + Z_a``, ``b̂ = b + Z_b``, discrete Laplace of
  scale ``2/ε``. With ``|Z_a|, |Z_b| <= e = Q_{2/ε}(α/2)`` (each fails with
  probability ``<= α/2``) and ``b > e``::

      |â/b̂ − a/b| = |b Z_a − a Z_b| / (b (b + Z_b)) <= (e + (a/b) e)/(b − e) <= 2e/(n − e).

* :class:`KSWRatio`: ``A = max(a + U, 0)``, ``C = max(c + V, 0)`` (``c = b − a``),
  scale ``Δ/ε``; ``|A − a| <= |U|``, ``|C − c| <= |V|``. With ``u = A − a``,
  ``v = C − c``, ``T = A + C``: ``A/T − a/b = (u c − a v)/(T b)``, so with
  ``|U|, |V| <= e = Q_{Δ/ε}(α/2)`` and ``b > 2e``: ``|error| <= e(a + c)/(T b) = e/T <= e/(n − 2e)``.
* :class:`BoundedLSRatio`: with ``|Z_b| <= e₁ = Q_{2/ε₁}(α/2)`` the intervals
  give ``b_lo >= b − e₁ − w =: L`` and ``b_hi <= b + e₁ + w`` (``w`` the
  node's margin), and since ``a_lo >= 0``, ``a_hi <= b_hi`` every term of
  :func:`~dpalg.mechanisms.bounded_ls._ratio_sensitivity.ratio_ls_bound` is at most
  ``b_hi/(b_lo(b_lo − 1))`` (``(b' − a_lo)/(b'² − b') <= 1/(b' − 1) <= 1/(b_lo − 1)``;
  also ``>= 1/b_lo``, the substitution term), so ``ĝ <= G = (n + e₁ + w)/(L(L − 1))``,
  ``L = n − e₁ − w >= 2`` (decreasing in ``n``: with ``y = b − e₁ − w`` the
  derivative's sign is ``−y² − 4(e₁ + w)y + 2(e₁ + w) < 0``). The release
  (α/2) is bounded as for :class:`BoundedLS` below at ``G``. ``b_lo >= L >= 2``
  rules out the first bail-out; ``ĝ·b_lo <= b_hi/(b_lo − 1) <= (b_lo + 2w)/(b_lo − 1) < 2``
  once ``L > 2w + 2`` rules out the adaptive one. Otherwise the naive branch
  (fresh noise, ε₂, α/4 per count) may run and the bound is the larger of the
  two.

**Privately bounded sensitivity** (:class:`BoundedLS`; seed 000 Thm 1). Given
the step-1 bound ``ĝ`` (a function of the noisy counts), the release is
``(m + Z)·2^k`` with ``g = round_up_bits(ĝ + slack)``, ``k = ⌊log2(g/ε₂)⌋ − 20``,
``m = round(f/2^k)`` and ``Z`` discrete Laplace of scale ``t = (g/2^k + 1)/ε₂``
(:func:`~dpalg.mechanisms.bounded_ls._lattice.lattice_terms`). So
``2^k <= g/(ε₂ 2^20)``, ``t > 2^20``, and with ``q = e^{−1/t}``::

    P[2^k|Z| > x] = 2 q^{⌊x/2^k⌋+1}/(1 + q) <= (1 + 2^-20)·e^{−x/s},   s = 2^k t <= (g/ε₂)(1 + 2^-20/ε₂)

(``2/(1 + q) <= 1/(1 − 1/(2t)) <= 1 + 1/t``). Both ``s`` and ``2^{k−1}`` grow
with ``g`` and ``round_up_bits`` is monotone, so for every ``ĝ <= G`` (keyword
``ls_bound=``, or the public ``global_sensitivity``, which caps ``ĝ``) with
``Ĝ = round_up_bits(G + slack)``::

    |out − f(x)| <= (Ĝ/ε₂)(1 + 2^-20/ε₂)·ln((1 + 2^-20)/α) + Ĝ/(ε₂ 2^21) (+ 10^-60 for an irrational f).

``ĝ <= G`` can itself be obtained from public bounds on the counts: each
noisy count is within ``Q_{J/ε₁}(α'/J)`` of its count with probability
``>= 1 − α'``, and ``ĝ`` is monotone in the interval ends.
"""

from __future__ import annotations

from fractions import Fraction

from dpalg.mechanisms._common.accuracy import DPS, laplace_q, mpf_fraction_nearest53
from dpalg.mechanisms.bounded_ls._lattice import round_up_bits
from dpalg.noise._tails import _iv_dps

__all__ = ["lattice_release_error"]

_EXCESS = Fraction(1, 2**20)  # 2**-20: the lattice is 2**-20 of the noise scale


# --- the shifted inverse -----------------------------------------------------------------


# --- ratios ------------------------------------------------------------------------------


def lattice_release_error(bound: Fraction, epsilon: Fraction, alpha: Fraction) -> Fraction:
    """An upper bound (1 − α) on ``|out − v|`` of :func:`lattice_release` for every ``ĝ <= bound`` (module docstring).

    Examples:
        >>> round(float(lattice_release_error(Fraction(1, 10), Fraction(1), Fraction(1, 20))), 4)  # about 0.1 * ln 20, the bound rounded up to 8 bits
        0.2999
    """
    from mpmath import iv

    g = round_up_bits(bound)
    if g == 0:  # f is released on 2**-60 with discrete Laplace of scale 1/eps lattice units
        k = Fraction(2) ** -60
        return (laplace_q(1 / epsilon, alpha) + Fraction(1, 2)) * k
    s = g / epsilon * (1 + _EXCESS / epsilon)
    with _iv_dps(DPS):
        log = iv.log((1 + iv.mpf(_EXCESS.numerator) / _EXCESS.denominator) * alpha.denominator / alpha.numerator)
        ln = mpf_fraction_nearest53(iv.mpf(log).b)
    return s * ln + g / (epsilon * 2**21)


# --- privately bounded sensitivity -------------------------------------------------------


# --- AutoClipSum -------------------------------------------------------------------------
