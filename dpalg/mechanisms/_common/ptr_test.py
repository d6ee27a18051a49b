"""The propose-test-release test: its threshold, its cap and its ⊥ probability (Dwork–Lei 2009).

:class:`~dpalg.mechanisms.ProposeTest`, :class:`~dpalg.mechanisms.PTRMode`,
:class:`~dpalg.mechanisms.SampleAggregateMedian`'s fallback and
:class:`~dpalg.mechanisms.SampleAggregateMode` compute an integer distance to
instability ``γ`` (sensitivity 1), cap it at :func:`ptr_cap`, and release only
when :func:`ptr_test_passes`: ``γ + Z > ln(1/δ)/ε``, ``Z`` discrete Laplace of
scale ``1/ε``. :class:`~dpalg.mechanisms.StableHistogram` compares its noisy
counts with a threshold of the same form.

**Integer thresholds** (:func:`ceil_log_inv_delta_over_eps`). The tests compare
an *integer* noisy statistic with ``T = ln(1/δ)/ε``. For an integer m, "m ≤ T"
is "m ≤ floor(T)"; we need ceil(T) exactly, which we get from a 200-bit
evaluation of T with an explicit error margin: when T is farther than the
margin from an integer, ceil is decided; otherwise we take the larger
candidate, which only makes the tests more conservative (more ⊥, fewer keys).
The tests check these integers against sympy's exact evaluation.

**P(⊥)** (:func:`ptr_bottom_probability`, :func:`ptr_bottom_enclosure`). The
test releases ⊥ when ``γ + Z <= M`` with ``M = ceil(ln(1/δ)/ε) − 1`` and ``Z``
discrete Laplace of scale ``1/ε`` (``q = e^{−ε}``, ``P[Z = z] = (1 − q)/(1 +
q)·q^|z|``). Hence exactly::

    P(⊥ | γ) = P[Z <= M − γ] = 1 − q^{t+1}/(1 + q)   (t = M − γ >= 0),   q^{−t}/(1 + q)   (t < 0)

decreasing in ``γ``, so a distance *at least* ``d`` gives ``P(⊥) <=
P(⊥ | min(d, cap))``.

**PTR for the mode** (:func:`mode_accuracy`; :class:`~dpalg.mechanisms.PTRMode`,
seed 003 "PTR for the mode", Dwork–Lei 2009, proposed bound 0, and
:class:`~dpalg.mechanisms.SampleAggregateMode`). The release computes ``γ =
min(mode_gap_distance(x), ptr_cap)`` and runs :func:`ptr_test_passes`; so ``P(⊥ |
γ)`` is exactly :func:`ptr_bottom_probability`, decreasing in ``γ``: a public
lower bound ``d`` on the distance gives ``P(⊥) <= P(⊥ | d)``. Otherwise the
output is the exact mode (the smallest value among ties): the error given a
release is 0 with probability 1; no noise is added.

*Gap form.* Let ``c₁`` be the mode's count and ``c₂`` the largest count of any
other value (0 if there is none), ``g = c₁ − c₂ >= 0``.
:func:`~dpalg.sensitivity._catalog.mode_gap_distance` returns ``max(0, D − 1)``
with ``D = min_w g_w`` (add/remove) or ``min_w ceil(g_w/2)`` (substitution),
``g_w = c₁ − c_w + [w > mode]`` over the other values ``w`` and a fresh one
(``c_w = 0``). Each ``g_w >= c₁ − c₂ = g``, so::

    γ >= g − 1            (add/remove)
    γ >= ceil(g/2) − 1    (substitution)

and a public lower bound on the gap gives one on ``γ`` (equality when the
runner-up is below the mode).

*Votes of m blocks* (:class:`~dpalg.mechanisms.SampleAggregateMode`). The same
test on the ``m`` block votes under substitution. Statements are about the mode
*of the votes* of the realised random partition (not the mode of a statistic of
the full data): given a release, the output is that mode exactly. Since ``c₁ <=
m``, the fresh value gives ``g_w <= m`` so ``γ <= ceil(m/2) − 1``, with equality
when all blocks agree: ``P(⊥) >= P(⊥ | ceil(m/2) − 1)`` for every dataset, a
public floor set by ``m``, ``ε`` and ``δ`` alone.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Relation
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import (
    DPS,
    down_text,
    int_param,
    laplace_at_least,
    mpf_fraction,
    percent_text,
    smallest,
    up_text,
)
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.noise._tails import _iv_dps

__all__ = [
    "ceil_log_inv_delta_over_eps",
    "distance_from_gap",
    "mode_accuracy",
    "ptr_bottom_enclosure",
    "ptr_bottom_probability",
    "ptr_cap",
    "ptr_distance_for",
    "ptr_test_passes",
]


def ceil_log_inv_delta_over_eps(epsilon: Fraction, delta: Fraction) -> int:
    """An integer C with C >= ln(1/δ)/ε, equal to ceil(ln(1/δ)/ε) except within 2^-150 of an integer.

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).

    Returns:
        ceil(T) for T = ln(1/δ)/ε, never smaller than T.

    Examples:
        >>> ceil_log_inv_delta_over_eps(Fraction(1), Fraction(1, 10**6))
        14
    """
    import mpmath

    with mpmath.workprec(200):
        t = mpmath.log(mpmath.mpf(delta.denominator) / delta.numerator) * epsilon.denominator / epsilon.numerator
        margin = (abs(t) + 1) * mpmath.ldexp(1, -150)
        return int(mpmath.ceil(t + margin))


def ptr_cap(epsilon: Fraction, delta: Fraction) -> int:
    """The largest distance PTR ever computes: ceil(ln(1/δ)/ε) + ceil(40/ε).

    Capping γ at a constant keeps its sensitivity 1 (min of a 1-Lipschitz
    function and a constant) and changes the pass probability of a dataset at
    distance > cap by at most e^-40.
    """
    return ceil_log_inv_delta_over_eps(epsilon, delta) + math.ceil(40 / epsilon)


def ptr_test_passes(gamma: int, epsilon: Fraction, delta: Fraction, rng: AbstractRandomness) -> bool:
    """The private test: γ + Z > ln(1/δ)/ε with Z discrete Laplace of scale 1/ε.

    With M = ceil(ln(1/δ)/ε) − 1, the integer γ + Z exceeds T exactly when it
    exceeds M (it is an integer and M + 1 ≥ T); when γ = 0 the pass probability
    is P[Z ≥ M + 1] = e^{-ε(M+1)}/(1 + e^{-ε}) < δ. The test has sensitivity-1
    input and discrete Laplace noise of scale 1/ε, so it is ε-DP.
    """
    threshold = ceil_log_inv_delta_over_eps(epsilon, delta) - 1
    z = int(discrete_laplace(1 / epsilon, size=1, rng=rng)[0])
    return gamma + z > threshold


# --- P(⊥) ------------------------------------------------------------------------------


def ptr_bottom_probability(epsilon: Fraction, delta: Fraction, distance: int) -> Fraction:
    """An upper bound (within ``10**-50`` relative) on ``P(⊥)`` of the PTR test at distance ``γ = distance``.

    The test of :func:`ptr_test_passes`: ⊥ iff ``γ + Z <= M``, ``M =
    ceil(ln(1/δ)/ε) − 1``, ``Z`` discrete Laplace of scale ``1/ε``. ``distance``
    is capped at :func:`ptr_cap` as the node caps it.

    Examples:
        >>> round(float(ptr_bottom_probability(Fraction(1), Fraction(1, 1000), 0)), 6)  # 1 - e^-7/(1 + e^-1)
        0.999333
    """
    from mpmath import iv

    if isinstance(distance, bool) or not isinstance(distance, int) or distance < 0:
        raise InvalidArgument("ptr_bottom_probability", "distance", distance, "must be an int >= 0")
    gamma = min(distance, ptr_cap(epsilon, delta))
    t = ceil_log_inv_delta_over_eps(epsilon, delta) - 1 - gamma
    with _iv_dps(DPS):
        q = iv.exp(-iv.mpf(epsilon.numerator) / epsilon.denominator)
        p = 1 - q ** (t + 1) / (1 + q) if t >= 0 else q ** (-t) / (1 + q)
        return min(Fraction(1), mpf_fraction(iv.mpf(p).b))


def ptr_distance_for(epsilon: Fraction, delta: Fraction, bottom: Fraction) -> int | None:
    """The smallest distance ``d`` with ``P(⊥ | d) <= bottom`` (:func:`ptr_bottom_probability`), or None beyond the cap."""
    cap = ptr_cap(epsilon, delta)
    if ptr_bottom_probability(epsilon, delta, cap) > bottom:
        return None
    return smallest(lambda d: ptr_bottom_probability(epsilon, delta, d) <= bottom)


def ptr_bottom_enclosure(epsilon: Fraction, delta: Fraction, distance: int) -> tuple[Fraction, Fraction]:
    """A proven enclosure of ``P(⊥ | γ = min(distance, ptr_cap)) = P[Z >= γ − M]``, ``t = 1/ε`` (by symmetry).

    The same quantity as :func:`ptr_bottom_probability`, with both ends exact
    (the upper end bounds ``P(⊥)``, the lower end a floor on it).

    Examples:
        >>> lo, hi = ptr_bottom_enclosure(Fraction(1), Fraction(1, 1000), 0)  # 1 - e^-7/(1 + e^-1)
        >>> round(float(lo), 6), hi - lo < Fraction(1, 10**50)
        (0.999333, True)
    """
    gamma = min(distance, ptr_cap(epsilon, delta))
    return laplace_at_least(1 / epsilon, gamma - (ceil_log_inv_delta_over_eps(epsilon, delta) - 1))


def _distance_for(epsilon: Fraction, delta: Fraction, bottom: Fraction) -> int | None:
    """The smallest distance with ``P(⊥)`` proven ``<= bottom``, or None if even the cap does not reach it."""
    if ptr_bottom_enclosure(epsilon, delta, ptr_cap(epsilon, delta))[1] > bottom:
        return None
    return smallest(lambda d: ptr_bottom_enclosure(epsilon, delta, d)[1] <= bottom)


# --- PTR for the mode (PTRMode, SampleAggregateMode) --------------------------------------


def distance_from_gap(gap: int, relation: Relation) -> int:
    """A lower bound on ``mode_gap_distance`` from a lower bound on ``c₁ − c₂`` (module docstring).

    Examples:
        >>> distance_from_gap(3, "add_remove"), distance_from_gap(3, "substitution"), distance_from_gap(0, "add_remove")
        (2, 1, 0)
    """
    return max(0, gap - 1) if relation == "add_remove" else max(0, -(-gap // 2) - 1)


def _gap_needed(distance: int, relation: Relation) -> int:
    """The smallest gap whose :func:`distance_from_gap` is ``>= distance``."""
    return distance + 1 if relation == "add_remove" else 2 * distance + 1


def mode_accuracy(
    owner: str, epsilon: Fraction, delta: Fraction, relation: Relation, alpha: ExactLike,
    distance: int | None, gap: int | None, *, of: str, blocks: int | None = None,
) -> Accuracy:  # fmt: skip
    """The accuracy of a PTR mode release: error 0 when it releases; ``P(⊥)`` at a stated distance or gap (module docstring)."""
    a = alpha_param(owner, alpha)
    if distance is not None and gap is not None:
        raise InvalidArgument(owner, "gap", gap, "must be None when distance= is given (state one of them)")
    counted = "block votes" if blocks is not None else "rows"
    if gap is not None:
        int_param(owner, "gap", gap, 0, f"a public lower bound on the mode's count minus the runner-up's, in {counted}")
        if blocks is not None and gap > blocks:
            raise InvalidArgument(owner, "gap", gap, f"must be <= blocks={blocks} (the mode has at most {blocks} votes)")
        d: int | None = distance_from_gap(gap, relation)
    elif distance is not None:
        d = int_param(owner, "distance", distance, 0, "a public lower bound on the mode's distance to instability")
        if blocks is not None and d > -(-blocks // 2) - 1:
            raise InvalidArgument(owner, "distance", d, f"must be <= {-(-blocks // 2) - 1} (the largest possible with {blocks} blocks)")
    else:
        d = None
    noise = f"none on the {of}; the test's: discrete Laplace, scale {up_text(1 / epsilon)}"
    notes: list[str] = [f"given a release: the exact {of} (smallest among ties), error 0 always"]
    if blocks is not None:
        best = ptr_bottom_enclosure(epsilon, delta, -(-blocks // 2) - 1)[0]
        notes.append(f"P(⊥) >= {down_text(best)} whatever the data (at best all {blocks} blocks agree: distance {-(-blocks // 2) - 1})")
        notes.append("about the votes of the random partition, not a statistic of the full data")
    if d is None:
        need = _distance_for(epsilon, delta, a)
        if need is not None and (blocks is None or need <= -(-blocks // 2) - 1):
            reach = f"; P(⊥) <= {percent_text(a)} once it is >= {need} (a gap of >= {_gap_needed(need, relation)} {counted})"
        else:
            reach = f"; P(⊥) > {percent_text(a)} at every distance"
        notes.append(f"P(⊥) depends on the mode's distance to instability{reach}; pass distance= or gap= for a number")
    else:
        p = ptr_bottom_enclosure(epsilon, delta, d)[1]
        given = f"the gap between the top two counts is at least {gap} {counted}, so " if gap is not None else ""
        notes.append(f"P(⊥) <= {up_text(p)} if {given}the distance to instability is at least {d} (Dwork-Lei 2009)")
    return Accuracy(a, Fraction(0), "absolute", noise, True, "it releases (no ⊥)", tuple(notes))
