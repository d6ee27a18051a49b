"""Integer thresholds of the form ln(1/δ)/ε, computed rigorously.

Tests/mechanisms compare an *integer* noisy statistic with T = ln(1/δ)/ε. For an
integer m, "m ≤ T" is "m ≤ floor(T)"; we need ceil(T) exactly, which we get from
a 200-bit evaluation of T with an explicit error margin: when T is farther than
the margin from an integer, ceil is decided; otherwise we take the larger
candidate, which only makes the tests more conservative (more ⊥, fewer keys).
The tests check these integers against sympy's exact evaluation.
"""

from __future__ import annotations

from fractions import Fraction


__all__ = ["ceil_log_inv_delta_over_eps"]


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
