"""Privacy losses as exact, typed values: PureDP, ApproxDP and ZCDP.

Contract (in the spirit of dp-accounting's events): a measure's meaning never
changes; every parameter is an exact :class:`fractions.Fraction`; composition is
only defined within one measure type, and crossing types always goes through an
explicit conversion whose theorem is cited on the method.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from math import gcd, lcm
from operator import mul
from typing import Union, final

import attrs

from dpalg._errors import InvalidArgument, register_short_form
from dpalg._numbers import ExactLike, nonneg, to_fraction
from dpalg.measures._decimal import Rounding, decimal_text, short_number
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon

__all__ = ["ApproxDP", "Measure", "PureDP", "ZCDP", "decimal_measure", "exact_sum", "short_measure", "zero_like"]


def _delta_converter(value: ExactLike) -> Fraction:
    result = to_fraction(value, owner="ApproxDP", field="delta")
    if not 0 <= result < 1:
        raise InvalidArgument("ApproxDP", "delta", value, "must be in [0, 1)")
    return result


def _eps_pure(value: ExactLike) -> Fraction:
    if type(value) is Fraction and value.numerator >= 0:  # the hot path (every claim, every sum): already exact
        return value
    return nonneg(value, owner="PureDP", field="epsilon")


def _eps_approx(value: ExactLike) -> Fraction:
    if type(value) is Fraction and value.numerator >= 0:  # the hot path: already exact
        return value
    return nonneg(value, owner="ApproxDP", field="epsilon")


def _rho_zcdp(value: ExactLike) -> Fraction:
    if type(value) is Fraction and value.numerator >= 0:  # the hot path: already exact
        return value
    return nonneg(value, owner="ZCDP", field="rho")


def _fmt(x: Fraction) -> str:
    return f"'{x}'" if x.denominator != 1 else str(x.numerator)


@final
@attrs.frozen(repr=False, order=False)
class PureDP:
    """Pure ε-differential privacy (Dwork, McSherry, Nissim, Smith 2006).

    Args:
        epsilon: ε >= 0, any exact number type (see :mod:`dpalg._numbers`;
            floats are converted exactly, so pass ``"0.1"`` for one tenth).

    Examples:
        >>> PureDP("0.5") + PureDP(1)
        PureDP('3/2')
        >>> PureDP(1).to_zcdp()
        ZCDP('1/2')
    """

    epsilon: Fraction = attrs.field(converter=_eps_pure)

    def __add__(self, other: PureDP) -> PureDP:
        """Basic sequential composition: ε adds exactly (Dwork–Roth Thm 3.16)."""
        if not isinstance(other, PureDP):
            return NotImplemented
        return PureDP(self.epsilon + other.epsilon)

    def scale(self, times: int) -> PureDP:
        """The loss of ``times``-fold composition."""
        return PureDP(self.epsilon * _count(times))

    def fits_within(self, budget: PureDP) -> bool:
        """Whether this loss is at most ``budget`` (same measure type only)."""
        _same_type(self, budget)
        return self.epsilon <= budget.epsilon

    def to_approx(self) -> ApproxDP:
        """ε-DP is (ε, 0)-DP (definition)."""
        return ApproxDP(self.epsilon, 0)

    def to_zcdp(self) -> ZCDP:
        """ε-DP implies (ε²/2)-zCDP (Bun–Steinke 2016, Proposition 1.4)."""
        return ZCDP(self.epsilon * self.epsilon / 2)

    def __repr__(self) -> str:
        return f"PureDP({_fmt(self.epsilon)})"

    def __str__(self) -> str:
        return _people(self)


@final
@attrs.frozen(repr=False, order=False)
class ApproxDP:
    """Approximate (ε, δ)-differential privacy (Dwork et al. 2006).

    Args:
        epsilon: ε >= 0.
        delta: δ in [0, 1).
    """

    epsilon: Fraction = attrs.field(converter=_eps_approx)
    delta: Fraction = attrs.field(converter=_delta_converter)

    def __add__(self, other: ApproxDP) -> ApproxDP:
        """Basic composition: ε and δ add exactly (Dwork–Roth Thm 3.16)."""
        if not isinstance(other, ApproxDP):
            return NotImplemented
        return ApproxDP(self.epsilon + other.epsilon, _clamp_delta(self.delta + other.delta))

    def scale(self, times: int) -> ApproxDP:
        """The loss of ``times``-fold basic composition."""
        n = _count(times)
        return ApproxDP(self.epsilon * n, _clamp_delta(self.delta * n))

    def fits_within(self, budget: ApproxDP) -> bool:
        """Whether ε <= budget.ε and δ <= budget.δ (same measure type only)."""
        _same_type(self, budget)
        return self.epsilon <= budget.epsilon and self.delta <= budget.delta

    def __repr__(self) -> str:
        return f"ApproxDP({_fmt(self.epsilon)}, {_fmt(self.delta)})"

    def __str__(self) -> str:
        return _people(self)


@final
@attrs.frozen(repr=False, order=False)
class ZCDP:
    """ρ-zero-concentrated differential privacy (Bun–Steinke 2016, Definition 1.1).

    Args:
        rho: ρ >= 0.
    """

    rho: Fraction = attrs.field(converter=_rho_zcdp)

    def __add__(self, other: ZCDP) -> ZCDP:
        """Composition: ρ adds exactly (Bun–Steinke 2016, Lemma 2.3)."""
        if not isinstance(other, ZCDP):
            return NotImplemented
        return ZCDP(self.rho + other.rho)

    def scale(self, times: int) -> ZCDP:
        """The loss of ``times``-fold composition."""
        return ZCDP(self.rho * _count(times))

    def fits_within(self, budget: ZCDP) -> bool:
        """Whether ρ <= budget.ρ (same measure type only)."""
        _same_type(self, budget)
        return self.rho <= budget.rho

    def to_approx(self, delta: ExactLike) -> ApproxDP:
        """The tight conversion to (ε, δ)-DP (Canonne–Kamath–Steinke 2020, Cor. 13).

        ε is the infimum over Rényi orders α > 1 of
        ``α·ρ + (ln(1/δ) + (α−1)·ln(1−1/α) − ln α)/(α−1)``, evaluated at a
        numerically optimal rational α in 200-bit arithmetic and rounded *up* to a
        rational: the result is a valid ε (never below the infimum) and within a
        relative 1e-12 of it. See :func:`dpalg.measures.zcdp_to_approx_epsilon`.

        Raises:
            InvalidArgument: when δ is not in (0, 1) and ρ > 0.
        """
        d = to_fraction(delta, owner="ZCDP.to_approx", field="delta")
        if not (0 < d < 1 or (d == 0 and self.rho == 0)):
            raise InvalidArgument("ZCDP.to_approx", "delta", delta, "must be in (0, 1)")
        return ApproxDP(zcdp_to_approx_epsilon(self.rho, d), d)

    @classmethod
    def for_approx(cls, epsilon: ExactLike, delta: ExactLike) -> ZCDP:
        """The largest ρ (to 2⁻⁴⁰ of ε) whose tight conversion :meth:`to_approx` fits (ε, δ).

        Use it to choose a zCDP budget for a target (ε, δ): every plan checked
        against the result converts, by the same rounded-up conversion, to an
        (ε', δ) with ε' ≤ ε. Bisection over ρ = ε·j/2⁴⁰: ``to_approx`` is
        monotone in ρ, the returned ρ is verified to fit, and ρ + ε/2⁴⁰ does not
        (or ρ = ε). About 40 conversions (0.5 s).

        Args:
            epsilon: the target ε > 0.
            delta: the target δ in (0, 1).

        Returns:
            ``ZCDP(ρ)`` with ``ZCDP(ρ).to_approx(delta).epsilon <= epsilon``.

        Raises:
            InvalidArgument: ε not positive, δ not in (0, 1).

        Examples:
            >>> budget = ZCDP.for_approx(1, "1e-6")
            >>> budget.to_approx("1e-6").epsilon <= 1
            True
            >>> round(float(budget.rho), 5)  # the simple bound ρ + 2√(ρ ln(1/δ)) ≤ ε allows only 0.01747
            0.02436

        References:
            C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for
            Differential Privacy, 2020, Corollary 13 (the conversion inverted here).
        """
        eps = to_fraction(epsilon, owner="ZCDP.for_approx", field="epsilon")
        if eps <= 0:
            raise InvalidArgument("ZCDP.for_approx", "epsilon", epsilon, "must be > 0")
        d = to_fraction(delta, owner="ZCDP.for_approx", field="delta")
        if not 0 < d < 1:
            raise InvalidArgument("ZCDP.for_approx", "delta", delta, "must be in (0, 1)")
        steps = 1 << _FOR_APPROX_BITS

        def fits(j: int) -> bool:
            return zcdp_to_approx_epsilon(eps * j / steps, d) <= eps

        if fits(steps):
            return cls(eps)
        lo, hi = 0, steps  # fits(lo) (rho = 0 converts to epsilon 0), not fits(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return cls(eps * lo / steps)

    def __repr__(self) -> str:
        return f"ZCDP({_fmt(self.rho)})"

    def __str__(self) -> str:
        return _people(self)


Measure = Union[PureDP, ApproxDP, ZCDP]


def _people(m: PureDP | ApproxDP | ZCDP) -> str:
    """``str(measure)``: short decimals rounded up (``repr`` stays exact).

    Examples:
        >>> print(ApproxDP(Fraction(211207375699866670503, 92233720368547758080), 1e-6))
        ApproxDP(ε<=2.28992, δ<=1e-06)
        >>> ApproxDP(1, "1e-6")
        ApproxDP(1, '1/1000000')
    """
    return decimal_measure(m, "up")


def decimal_measure(m: Measure, rounding: Rounding = "up") -> str:
    """A measure for people: ``PureDP(ε=0.25)``, ``ApproxDP(ε<=2.28993, δ=1e-06)``, ``ZCDP(ρ=0.5)``.

    Costs use ``rounding="up"`` and budgets ``"down"``; the exact values are
    the measure's ``repr`` (and the certificate's).

    Examples:
        >>> decimal_measure(ApproxDP(1, 1e-6))
        'ApproxDP(ε=1, δ<=1e-06)'
        >>> decimal_measure(ZCDP("1/3"), "down")
        'ZCDP(ρ>=0.333333)'
    """

    def show(name: str, x: Fraction) -> str:
        text = decimal_text(x, rounding)
        return f"{name}{text}" if text.startswith(("<=", ">=")) else f"{name}={text}"

    match m:
        case PureDP():
            return f"PureDP({show('ε', m.epsilon)})"
        case ApproxDP():
            return f"ApproxDP({show('ε', m.epsilon)}, {show('δ', m.delta)})"
        case ZCDP():
            return f"ZCDP({show('ρ', m.rho)})"
    return repr(m)  # pragma: no cover - Measure is a closed union


def short_measure(m: Measure, rounding: Rounding = "up") -> str:
    """A measure as in its ``repr``, with long numbers shortened by :func:`short_number`.

    Costs are shown with ``rounding="up"`` (never understated); budgets and
    what remains of them with ``rounding="down"`` (never overstated).

    Examples:
        >>> short_measure(PureDP("3/4"))
        "PureDP('3/4')"
        >>> short_measure(ApproxDP(Fraction(2 * 10**30 + 7, 10**30), "1e-7"))
        "ApproxDP(<=2.00001, '1/10000000')"
    """

    def show(x: Fraction) -> str:
        text = short_number(x, rounding)
        if text.startswith(("<=", ">=")):
            return text
        return f"'{text}'" if x.denominator != 1 else text

    match m:
        case PureDP():
            return f"PureDP({show(m.epsilon)})"
        case ApproxDP():
            return f"ApproxDP({show(m.epsilon)}, {show(m.delta)})"
        case ZCDP():
            return f"ZCDP({show(m.rho)})"
    return repr(m)  # pragma: no cover - Measure is a closed union


def _short_cost(m: Measure) -> str:
    return short_measure(m, "up")


# Error messages show a measure as a cost (rounded up); dpalg._errors sits below this
# floor, so the measures hand it their short form.
register_short_form(PureDP, _short_cost)
register_short_form(ApproxDP, _short_cost)
register_short_form(ZCDP, _short_cost)


def zero_like(budget: Measure) -> Measure:
    """The zero loss of ``budget``'s type.

    Examples:
        >>> zero_like(ApproxDP(1, "1e-6"))
        ApproxDP(0, 0)
    """
    if isinstance(budget, PureDP):
        return PureDP(0)
    if isinstance(budget, ApproxDP):
        return ApproxDP(0, 0)
    return ZCDP(0)


def exact_sum(values: Iterable[Fraction]) -> Fraction:
    """The exact sum of rationals, with one ``Fraction`` made at the end.

    With few distinct denominators whose least common multiple L is small, every
    numerator is scaled to L and the integers are added in one pass. Otherwise
    numerators are added as Python ints per denominator and the groups are
    combined pairwise over their lcm (a balanced tree, so many distinct
    denominators do not make one operand grow at every step). The single
    result is reduced once. Equal to ``sum(values, Fraction(0))``, only faster:
    no ``Fraction`` and no gcd per addition.

    Examples:
        >>> exact_sum([Fraction(1, 3), Fraction(1, 6), Fraction(1, 3), Fraction(1, 6)])
        Fraction(1, 1)
        >>> exact_sum([])
        Fraction(0, 1)
    """
    if not isinstance(values, (list, tuple)):
        values = list(values)
    numerators = [v.numerator for v in values]
    denominators = [v.denominator for v in values]
    distinct = set(denominators)
    if len(distinct) <= _FEW_DENOMINATORS:
        common = lcm(*distinct)
        if common.bit_length() <= _SMALL_LCM_BITS:  # one pass of small integer products
            if len(distinct) == 1:
                return Fraction(sum(numerators), common)
            factor = {q: common // q for q in distinct}
            return Fraction(sum(map(mul, numerators, map(factor.__getitem__, denominators))), common)
    groups: dict[int, int] = dict.fromkeys(distinct, 0)
    for n, q in zip(numerators, denominators):
        groups[q] += n
    pairs = list(groups.items())
    while len(pairs) > 1:  # a balanced tree over the lcm: no operand grows at every step
        merged = []
        for i in range(0, len(pairs) - 1, 2):
            (d1, n1), (d2, n2) = pairs[i], pairs[i + 1]
            g = gcd(d1, d2)
            merged.append((d1 // g * d2, n1 * (d2 // g) + n2 * (d1 // g)))
        if len(pairs) % 2:
            merged.append(pairs[-1])
        pairs = merged
    d, n = pairs[0]
    return Fraction(n, d)


_FEW_DENOMINATORS = 64
_SMALL_LCM_BITS = 256


_FOR_APPROX_BITS = 40


def _count(times: int) -> int:
    if isinstance(times, bool) or not isinstance(times, int) or times < 0:
        raise InvalidArgument("scale", "times", times, "must be an int >= 0")
    return times


def _clamp_delta(delta: Fraction) -> Fraction:
    # δ >= 1 is vacuous; reject instead of silently capping, so a plan never
    # claims a meaningless guarantee.
    if delta >= 1:
        raise InvalidArgument("ApproxDP", "delta", delta, "composed delta reached 1: the guarantee is vacuous")
    return delta


def _same_type(loss: object, budget: object) -> None:
    if type(loss) is not type(budget):
        raise InvalidArgument(
            type(loss).__name__ + ".fits_within",
            "budget",
            budget,
            f"must be a {type(loss).__name__}; convert explicitly (e.g. .to_approx()) before comparing",
        )
