"""Accuracy of the global-sensitivity nodes before running: the proof, and the noise quantiles it reads.

Stated by :class:`~dpalg.mechanisms.Laplace`, :class:`~dpalg.mechanisms.Gaussian` and the calibrated
vector sums (:mod:`dpalg.mechanisms.global_noise._per_coordinate`).

Each integer statistic ``v`` is released as ``(v + Z) * 2**k`` with ``Z``
discrete Laplace or discrete Gaussian of a parameter fixed by the node
(:func:`~dpalg.mechanisms.global_noise._laplace_gaussian.noise_terms`, evaluated on an empty dataset:
the parameters never depend on data). The (1 − α) error of a count, sum or
histogram cell is therefore ``m * 2**k`` with ``m`` the exact (1 − α)
quantile of ``|Z|`` (:mod:`dpalg.noise._tails`).

A mean is ``c + S̃/ñ`` where ``S`` is the sum of the values centred on the
lattice midpoint ``c`` (each ``|x - c| <= h``) and ``n`` the count, each with
its own noise. With ``|S̃ - S| <= e_s`` and ``|ñ - n| <= e_c`` (each at α/2,
so both with probability >= 1 − α) and ``n > e_c``::

    |S̃/ñ - S/n| = |a n - b S| / (n (n + b)) <= (e_s + e_c h) / (n - e_c)

(``a = S̃ - S``, ``b = ñ - n``, ``|S| <= n h``); clamping to ``[l, u]`` only
shrinks the error. The bound decreases in ``n``, so it holds for every true
count at least the ``n`` given.

**Variance** (and standard deviation). In real units, with ``y`` the clipped values
centred on ``c·2**k``, ``ŷ`` their lattice terms (``|ŷ − y| <= δ = 2**(k−1)``), ``A``
the sum of the square terms (``|A − Σŷ²| <= n·δ₂``, ``δ₂ = 2**(2k+s−1)``), ``B = Σŷ``,
and the noise of the squares, the sum and the count within ``e₂``, ``e₁``, ``e_c``
(each at α/3; all three with probability >= 1 − α), ``n > e_c``:

* ``|Ã/ñ − A/n| <= (e₂ + e_c·h₂)/(n − e_c)`` as for a mean (``0 <= A/n <= h₂``, the
  largest square term);
* ``|B̃/ñ − B/n| <= D = (e₁ + e_c·h₁)/(n − e_c)`` (the mean's bound) and
  ``|B/n| <= h₁``, so ``|(B̃/ñ)² − (B/n)²| <= D·(2h₁ + D)``;
* the lattice: replacing the squares by ``A/n`` moves the variance by at most ``δ₂``;
  rounding each value by at most ``δ`` moves the standard deviation by at most ``δ``
  (it is ``‖Pv‖/√n`` for the projection ``P`` off the mean, 1-Lipschitz), so the
  variance by at most ``δ·(2·(u − l)/2 + δ)`` (both standard deviations are at most
  ``(u − l)/2 + δ``, Popoviciu).

The sum of the three bounds the variance's error; clamping the release to
``[0, ((u − l)/2)²]``, which holds the true variance, only shrinks it. The standard
deviation's error is at most the square root of the variance's
(``|√a − √b| <= √|a − b|``): a valid but loose bound, since the true standard
deviation is unknown (with it, ``|√a − √b| <= |a − b|/√b`` would be far smaller).
All bounds decrease in ``n``, so they hold for every true count at least the ``n`` given.
"""

from __future__ import annotations

from fractions import Fraction

from dpalg.mechanisms._common.accuracy import up_text
from dpalg.noise._tails import gaussian_tail_quantile, laplace_tail_quantile

__all__ = ["noise_quantile", "noise_text", "sqrt_up"]


def noise_text(laplace: bool, param: Fraction, k: int) -> str:
    """The noise of one lattice statistic for people: its scale (Laplace) or sigma (Gaussian), rounded up."""
    step = Fraction(2) ** k
    if laplace:
        text = f"discrete Laplace, scale {up_text(param * step)}"
    else:
        text = f"discrete Gaussian, sigma {up_text(sqrt_up(param) * step)}"
    return text + (f" (lattice step 2**{k})" if k != 0 else "")


def sqrt_up(x: Fraction) -> Fraction:
    """An upper bound on sqrt(x) (``x >= 0``), above it by at most ``2e-18``."""
    from math import isqrt

    scale = 10**18
    root = isqrt(-(-x.numerator * scale * scale // x.denominator))
    return Fraction(root + 1, scale)


def noise_quantile(laplace: bool, param: Fraction, alpha: Fraction) -> tuple[int, bool]:
    """The exact (1 − α) quantile of ``|Z|`` (and whether it is tight), ``Z`` discrete Laplace of scale ``param`` or discrete Gaussian of variance ``param``."""
    if param == 0:
        return 0, True
    return laplace_tail_quantile(param, alpha) if laplace else gaussian_tail_quantile(param, alpha)
