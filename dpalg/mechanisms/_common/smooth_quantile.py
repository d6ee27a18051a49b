"""The lattice release of a quantile with smooth-sensitivity noise (NRS07), shared by
:class:`~dpalg.mechanisms.SmoothBound` and :class:`~dpalg.mechanisms.SampleAggregateMedian`.

``2^k (round(f(x)/2^k) + N)`` with ``f`` the q-quantile of sorted clipped data and
``N`` the exact law of ``round(S'(x) Z/(α 2^k))``: ``S' = Ŝ + 2^k``, ``Ŝ`` the
rigorous β-smooth float bound of :func:`~dpalg.sensitivity.smooth_sensitivity_quantile`
taken exactly, ``Z`` an admissible noise (NRS07 Lemma 2.6 / 2.9). The proof that this
costs exactly what the theorem states is in :mod:`dpalg.mechanisms.smooth._smooth_bound`
and ``docs/mechanisms/smooth_sensitivity.md``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data import Relation
from dpalg.mechanisms._common.params import float_floor, floor_log2
from dpalg.noise import AbstractRandomness, round_to_lattice
from dpalg.noise._admissible import AbstractAdmissibleNoise, Admissibility
from dpalg.sensitivity._smooth import smooth_sensitivity_quantile

__all__ = ["auto_granularity", "center_and_scale", "check_range", "smooth_release"]

#: the lattice step is at most 2^-40 of the clip range (negligible extra sensitivity)
_RANGE_BITS = 40
#: largest noise scale in lattice units accepted by the exact Laplace sampler (2^52)
_MAX_UNITS_BITS = 52


def _ceil_log2(x: Fraction) -> int:
    k = floor_log2(x)
    return k if Fraction(2) ** k == x else k + 1


def check_range(owner: str, lower: Fraction, upper: Fraction, alpha: Fraction) -> None:
    """Refuse ranges and budgets the lattice release cannot serve exactly (at construction)."""
    width = upper - lower
    if not Fraction(1, 2**800) <= width <= Fraction(2**900):
        raise InvalidArgument(owner, "upper - lower", f"about 2**{floor_log2(width)}", "must be in [2**-800, 2**900]")
    if alpha < Fraction(1, 2**40):
        raise InvalidArgument(owner, "epsilon", float(alpha), "is too small (alpha < 2**-40)")
    if not -1000 <= auto_granularity(lower, upper, alpha) <= 1000:  # pragma: no cover - implied by the range checks
        raise InvalidArgument(owner, "upper - lower", float(width), "gives a lattice exponent outside [-1000, 1000]")


def auto_granularity(lower: Fraction, upper: Fraction, alpha: Fraction) -> int:
    """The public lattice exponent k: ``2^k ≤ 2^-40 (u − l)``, and ``S'/(α 2^k) ≤ 2^52``.

    ``S ≤ 2(u − l)`` always (the smooth bound never exceeds the rounded-up range by
    more than a tiny factor), so ``k ≥ ⌈log2(4(u − l)/α)⌉ − 52`` keeps the noise scale
    in lattice units within the exact Laplace sampler's range whatever the data.
    Depends on public parameters only.
    """
    width = upper - lower
    return max(floor_log2(width) - _RANGE_BITS, _ceil_log2(4 * width / alpha) - _MAX_UNITS_BITS)


def center_and_scale(
    sorted_values: npt.NDArray[np.float64],
    q: Fraction,
    lower: Fraction,
    upper: Fraction,
    relation: Relation,
    constants: Admissibility,
    k: int,
) -> tuple[int, Fraction]:
    """``(a, scale)``: the lattice centre ``round(f(x)/2^k)`` and the noise scale ``S'(x)/α``.

    ``S' = Ŝ + 2^k`` with ``Ŝ`` the rigorous β-smooth float bound taken exactly. Both
    are private (functions of the data): used by :func:`smooth_release` and by the
    tests that compute the output distribution exactly; never released.
    """
    beta = float_floor(constants.beta)
    s_hat = smooth_sensitivity_quantile(sorted_values, q, lower, upper, beta, relation)
    s_prime = Fraction(s_hat) + Fraction(2) ** k  # exact: every float is a rational
    n = int(sorted_values.size)
    value = float(sorted_values[max(0, -(-(q.numerator * n) // q.denominator) - 1)]) if n else float(lower)
    return int(round_to_lattice(np.array([value]), k)[0]), s_prime / constants.alpha


def smooth_release(
    sorted_values: npt.NDArray[np.float64],
    q: Fraction,
    lower: Fraction,
    upper: Fraction,
    relation: Relation,
    constants: Admissibility,
    noise: AbstractAdmissibleNoise,
    k: int,
    rng: AbstractRandomness,
    *,
    clamp: bool = True,
) -> Fraction:
    """One smooth-sensitivity release of the q-quantile of sorted clipped data.

    Returns ``2^k (a + N)`` with ``(a, scale)`` from :func:`center_and_scale` and ``N``
    the exact ``round(scale·Z/2^k)``; clamped to ``[lower, upper]`` when ``clamp``.
    """
    a, scale = center_and_scale(sorted_values, q, lower, upper, relation, constants, k)
    noise_units = int(noise.sample_lattice(1, k, rng, scale=scale)[0])
    out = Fraction(a + noise_units) * Fraction(2) ** k
    if clamp:
        out = min(max(out, lower), upper)
    return out
