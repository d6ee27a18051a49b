"""Proven tail bounds and bound texts shared by the accuracy statements of several frameworks.

Every accuracy statement is a function of a node's parameters and, where the
error depends on the data, of a *public assumption* the caller states; it is
then given under that ``condition`` (:class:`~dpalg.graph.Accuracy`). Bounds are
rounded so that an error or a failure probability is never understated: each is
proven with mpmath interval arithmetic, or with a high-precision evaluation
widened by a relative slack of ``10**-40`` (as :mod:`dpalg.noise._tails` does
for ``erfc``).

**The exponential mechanism's score gap** (:func:`exp_mech_gap`; used by
:class:`~dpalg.mechanisms.ExponentialQuantile`, :class:`~dpalg.mechanisms.NoisyMax`
and :class:`~dpalg.mechanisms.ShiftedInverse`). Sampling candidate ``c`` with
probability ``∝ exp(−γ·s_c)`` for integer scores ``s_c ≥ 0``
(:func:`~dpalg.noise.sample_exp_runs` weighs a run of ``len`` equal scores by
``len·exp(−γ s)`` and then draws uniformly inside it, so each candidate still has
weight ``exp(−γ s_c)``). With ``s* = min s_c`` attained by ``c*`` and ``B = {c :
s_c ≥ s* + t}`` (``t ≥ 1``, so ``c* ∉ B``)::

    P[s_out − s* ≥ t] = Σ_B e^{−γ s_c} / Σ_c e^{−γ s_c} <= (N − 1) e^{−γ(s* + t)} / e^{−γ s*} = (N − 1) e^{−γ t}

(McSherry–Talwar 2007 Thm 8; Dwork–Roth 2014 Thm 3.11 with ``|R|`` replaced by
``N − 1``). With ``t`` the smallest integer ``≥ 1`` making the right side
``<= α``, the score gap is at most ``t − 1`` with probability ``≥ 1 − α``.

**Rounded smooth-sensitivity noise** (:func:`rounded_noise_quantile`; used by
:class:`~dpalg.mechanisms.SmoothBound`, :class:`~dpalg.mechanisms.SmoothBoundCauchy`
and :class:`~dpalg.mechanisms.SampleAggregateMedian`). The noise in lattice units
is the exact law of ``round(b·Z)``, ``Z`` standard Laplace or generalised Cauchy
(NRS07 Lemma 2.6 / 2.9). So ``|round(b·Z)| > m`` iff ``b|Z| >= m + ½`` (ties have
probability 0) and::

    Laplace:  P[|N| > m] = exp(−(m + ½)/b)
    Cauchy γ: P[|N| > m] = I_{1/(1 + u^γ)}(1 − 1/γ, 1/γ),   u = (m + ½)/b   (|Z|^γ is beta-prime)

both increasing in ``b``.

**The discrete Laplace law** (:func:`laplace_at_least`). ``Z`` discrete Laplace
of scale ``t``: ``P[Z = z] = (1 − q)/(1 + q)·q^|z|`` with ``q = e^{−1/t}``, so
for integers ``j``::

    P[Z >= j] = q^j/(1 + q)             (j >= 1)
              = 1 − q^{1−j}/(1 + q)     (j <= 0)                                (L)

and ``P[Z <= j] = P[Z >= −j]`` by symmetry.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

from dpalg._errors import InvalidArgument
from dpalg.measures._display import decimal_text
from dpalg.noise._tails import _iv_dps, laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from mpmath import mpf

__all__ = [
    "DPS",
    "down_text",
    "exp_mech_gap",
    "int_param",
    "laplace_at_least",
    "laplace_q",
    "mpf_fraction",
    "mpf_fraction_nearest53",
    "percent_text",
    "rounded_noise_quantile",
    "smallest",
    "up_text",
]

#: decimal digits of the interval evaluations
DPS = 60
_SLACK_DIGITS = 40  # relative widening of non-interval mpmath evaluations


def up_text(x: Fraction) -> str:
    """A bound for people: 6 significant digits, rounded up (never understated)."""
    return decimal_text(x, "up").removeprefix("<=")


def down_text(x: Fraction) -> str:
    """A probability lower bound for people: 6 significant digits, rounded down."""
    return decimal_text(x, "down").removeprefix(">=")


def percent_text(x: Fraction) -> str:
    """``x`` as a percentage, 10 significant digits."""
    return f"{float(x * 100):.10g}%"


def int_param(owner: str, field: str, value: object, minimum: int, why: str) -> int:
    """``value`` as an int ``>= minimum``, or :class:`~dpalg.InvalidArgument` naming ``why``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(owner, field, value, f"must be an int >= {minimum} ({why})")
    return value


def mpf_fraction(x: mpf) -> Fraction:
    """An mpf (a binary float, e.g. an interval endpoint) as the exact Fraction it is."""
    from mpmath import mp

    with mp.workprec(4096):  # wide enough to hold any interval endpoint exactly (mp.mpf would round to 53 bits)
        man, exp = mp.mpf(x).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def mpf_fraction_nearest53(x: mpf) -> Fraction:
    """An mpf rounded to the nearest 53-bit binary float first, as a Fraction.

    The shifted-inverse and bounded-LS statements convert their interval ends
    with this (the working precision is mpmath's default); rounding to nearest
    may lower an upper end by a relative ``2**-53``. :func:`mpf_fraction` is exact.
    """
    from mpmath import mp

    man, exp = mp.mpf(x).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def smallest(ok: Callable[[int], bool], start: int = 0) -> int:
    """The smallest integer ``m >= start`` with ``ok(m)``, for ``ok`` monotone (False then True)."""
    if ok(start):
        return start
    lo, step = start, 1
    while not ok(lo + step):  # lo fails throughout
        lo, step = lo + step, step * 2
    hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def laplace_q(scale: Fraction, a: Fraction) -> int:
    """``Q_scale(a)``: the exact smallest ``m`` with ``P[|Z| > m] <= a``, ``Z`` discrete Laplace; ``a >= 1`` allows 0."""
    return 0 if a >= 1 else laplace_tail_quantile(scale, a)[0]


def exp_mech_gap(candidates: int, gamma: Fraction, alpha: Fraction) -> int:
    """The smallest integer ``g >= 0`` with ``(candidates − 1)·exp(−γ(g + 1)) <= α``, proven.

    With probability ``>= 1 − α`` the exponential mechanism sampling ``∝
    exp(−γ s)`` over ``candidates`` integer scores outputs a score at most
    ``g`` above the best (module docstring; McSherry–Talwar 2007 Thm 8).

    Examples:
        >>> exp_mech_gap(2, Fraction(1), Fraction(1, 20))  # e^-3 = 0.0498 <= 0.05 < e^-2
        2
        >>> exp_mech_gap(1, Fraction(1), Fraction(1, 20))
        0
    """
    from mpmath import iv

    if candidates <= 1:
        return 0
    with _iv_dps(DPS):
        g = iv.mpf(gamma.numerator) / gamma.denominator
        a = iv.mpf(alpha.numerator) / alpha.denominator

        def ok(t: int) -> bool:
            return bool(((candidates - 1) * iv.exp(-g * (t + 1))).b <= a.a)

        return smallest(ok)


def rounded_noise_quantile(b: Fraction, alpha: Fraction, gamma: Fraction | None) -> int:
    """The smallest ``m >= 0`` with ``P[|round(b·Z)| > m] <= α`` (proven; module docstring).

    ``Z`` standard Laplace (``gamma=None``) or generalised Cauchy ``∝ 1/(1 + |z|^γ)``.

    Examples:
        >>> rounded_noise_quantile(Fraction(10), Fraction(1, 20), None)  # 10 ln 20 - 1/2 = 29.46
        30
        >>> rounded_noise_quantile(Fraction(1), Fraction(1, 20), Fraction(2))  # 1/tan(pi/40) - 1/2 = 12.2
        13
    """
    from mpmath import iv, mp

    with _iv_dps(DPS):
        a = iv.mpf(alpha.numerator) / alpha.denominator
        bb = iv.mpf(b.numerator) / b.denominator
        if gamma is None:
            def ok(m: int) -> bool:
                return bool(iv.exp(-(iv.mpf(m) + iv.mpf(1) / 2) / bb).b <= a.a)

            return smallest(ok)
        g = mp.mpf(gamma.numerator) / gamma.denominator
        slack = mp.mpf(10) ** -_SLACK_DIGITS
        with mp.workdps(DPS + 20):
            def ok_c(m: int) -> bool:
                u = iv.mpf(2 * m + 1) / (2 * bb)  # (m + 1/2)/b, an interval; the tail decreases in u
                w = 1 / (1 + mp.mpf(u.a) ** g)
                tail = mp.betainc(1 - 1 / g, 1 / g, 0, w, regularized=True) * (1 + slack)
                return bool(tail <= mp.mpf(a.a))

            return smallest(ok_c)


def laplace_at_least(scale: Fraction, j: int) -> tuple[Fraction, Fraction]:
    """A proven enclosure ``(lo, hi)`` of ``P[Z >= j]`` for ``Z`` discrete Laplace of scale ``t`` (formula (L)).

    Examples:
        >>> lo, hi = laplace_at_least(Fraction(1), 1)  # e^-1/(1 + e^-1)
        >>> round(float(lo), 6), hi - lo < Fraction(1, 10**50)
        (0.268941, True)
        >>> laplace_at_least(Fraction(2), 0)[1] > Fraction(1, 2) > laplace_at_least(Fraction(2), 1)[1]
        True
    """
    from mpmath import iv

    if scale <= 0:
        raise InvalidArgument("laplace_at_least", "scale", scale, "must be > 0")
    with _iv_dps(DPS):
        q = iv.exp(-iv.mpf(scale.denominator) / scale.numerator)
        p = q**j / (1 + q) if j >= 1 else 1 - q ** (1 - j) / (1 + q)
        box = iv.mpf(p)
        return max(Fraction(0), mpf_fraction(box.a)), min(Fraction(1), mpf_fraction(box.b))
