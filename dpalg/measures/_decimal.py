"""Short, conservative decimal text for exact numbers shown to people.

Exact values can be long: the tight zCDP -> (ε, δ) conversion yields a
rational with hundreds of digits, and sums of such values are longer still.
Messages (budget errors, derivation text, CLI output, audit findings) show
them as short decimals; certificates and ``repr`` keep the exact values (a
``repr`` reproduces construction).

The rule:

* a number whose exact text is at most :data:`SHORT` characters is shown
  exactly, as in a ``repr`` (``'3/4'``, ``'1/1000000'``);
* a longer one is shown with 6 significant digits, rounded in the
  conservative direction and marked with it: ``<=2.15238`` (the exact value is
  at most this; used for costs, so a cost is never understated) or
  ``>=0.847619`` (at least this; used for budgets and what remains of them,
  so an allowance is never overstated).

Numbers only: the measures' own text (:func:`~dpalg.measures._measures.decimal_measure`)
is built on these functions in :mod:`dpalg.measures._measures`.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Literal

__all__ = ["SHORT", "Rounding", "decimal_text", "short_number"]

SHORT = 16
_DIGITS = 6

Rounding = Literal["up", "down"]


def _decimal_exponent(x: Fraction) -> int:
    """floor(log10(x)) for x > 0, exactly."""
    e = int((x.numerator.bit_length() - x.denominator.bit_length()) * 0.30102999566398120)
    while x >= Fraction(10) ** (e + 1):
        e += 1
    while x < Fraction(10) ** e:
        e -= 1
    return e


def short_number(x: Fraction, rounding: Rounding = "up") -> str:
    """``x`` exactly when its text is short, else 6 significant digits rounded ``rounding``.

    Examples:
        >>> short_number(Fraction(3, 4))
        '3/4'
        >>> short_number(Fraction(10**40 + 1, 3 * 10**40))
        '<=0.333334'
        >>> short_number(Fraction(10**40 + 1, 3 * 10**40), "down")
        '>=0.333333'
        >>> short_number(Fraction(3 * 10**40, 10**40 + 1))
        '<=3'
        >>> short_number(Fraction(10**20))
        '1e+20'
    """
    if x == 0 or x.numerator.bit_length() + x.denominator.bit_length() <= 4 * SHORT:
        exact = str(x)  # cheap: at most about 40 digits
        if len(exact) <= SHORT:
            return exact
    sign = -1 if x < 0 else 1
    magnitude = abs(x)
    e = _decimal_exponent(magnitude) - (_DIGITS - 1)
    scaled = magnitude / Fraction(10) ** e
    up = (rounding == "up") == (sign > 0)  # rounding a negative number up shrinks its magnitude
    digits = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    text = f"{Decimal(sign * digits).scaleb(e).normalize():g}"
    if "E" in text:
        text = text.replace("E", "e")
    if digits == scaled:  # exact in 6 digits: nothing was rounded
        return text
    return ("<=" if rounding == "up" else ">=") + text


def decimal_text(x: Fraction, rounding: Rounding = "up", digits: int = _DIGITS) -> str:
    """``x`` as a decimal of at most ``digits`` significant digits, for people.

    Exact when ``x`` fits (``'0.25'``, ``'1e-06'``); otherwise rounded in the
    conservative direction and marked with it (``'<=0.333334'``).

    Examples:
        >>> decimal_text(Fraction(1, 4))
        '0.25'
        >>> decimal_text(Fraction(1, 10**6))
        '1e-06'
        >>> decimal_text(Fraction(1, 3))
        '<=0.333334'
        >>> decimal_text(Fraction(1, 3), "down")
        '>=0.333333'
        >>> decimal_text(Fraction(211207375699866670503, 92233720368547758080))
        '<=2.28992'
        >>> decimal_text(Fraction(0))
        '0'
    """
    if x == 0:
        return "0"
    sign = -1 if x < 0 else 1
    magnitude = abs(x)
    e = _decimal_exponent(magnitude) - (digits - 1)
    scaled = magnitude / Fraction(10) ** e
    up = (rounding == "up") == (sign > 0)
    d = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    exp10 = _decimal_exponent(Fraction(d)) + e  # the rounded value's own exponent (9.99995 -> 10)
    value = Decimal(sign * d).scaleb(e).normalize()
    text = f"{value:f}" if -4 <= exp10 < 7 else f"{value:e}".replace("E", "e")
    if "e" in text:
        mantissa, _, power = text.partition("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        text = f"{mantissa}e{int(power):+03d}"
    if d == scaled:
        return text
    return ("<=" if rounding == "up" else ">=") + text
