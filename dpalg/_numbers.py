"""Exact numbers: every privacy parameter and noise scale is a ``Fraction``.

Accepted inputs (the type alias :data:`ExactLike`):

* ``int`` and ``fractions.Fraction`` -- taken as they are;
* ``str`` -- parsed as a decimal or a fraction, exactly: ``"0.1"`` is ``1/10``,
  ``"1e-6"`` is ``1/1000000``, ``"3/7"`` is ``3/7``;
* ``float`` -- converted *exactly* (binary value): ``0.1`` becomes
  ``3602879701896397/36028797018963968``, a hair above 1/10. Pass a string when
  you mean the decimal;
* ``decimal.Decimal`` -- exactly.

NaN, infinities, booleans and other types are rejected with
:class:`dpalg.InvalidArgument`.

Sizes are bounded, so a hostile number is refused at once instead of making
``Fraction`` compute ``10**999999999`` (which never finishes):

* a string has at most :data:`MAX_TEXT` characters, at most :data:`MAX_DIGITS`
  (4,000) digits in its mantissa (or in each of ``p`` and ``q`` of ``"p/q"``) and an
  exponent of absolute value at most :data:`MAX_EXPONENT` (4,000): ``"1e-4000"``
  is accepted, ``"1e999999999"`` and ``"1e-999999999"`` are refused before any
  arithmetic;
* a ``Decimal`` obeys the same digit and exponent bounds (checked on
  ``as_tuple()`` before the conversion);
* the result of a string, ``Decimal`` or ``int`` has a numerator and a denominator
  of at most :data:`MAX_BITS` (13,300) bits, i.e. about ``10**4000``.

A ``Fraction`` is taken as it is (it exists already, and dpalg's own arithmetic
produces them).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Final, Union

from dpalg._errors import InvalidArgument

__all__ = ["ExactLike", "to_fraction", "nonneg", "positive", "fraction_ceil", "fraction_floor"]

ExactLike = Union[int, Fraction, str, float, Decimal]

#: digits of a mantissa, or of each of p and q in "p/q"
MAX_DIGITS: Final = 4000
#: absolute value of a decimal exponent ("1e-4000")
MAX_EXPONENT: Final = 4000
#: bits of the numerator and of the denominator of a converted number (~10**4000)
MAX_BITS: Final = 13_300
#: characters of a number string ("p/q" with two 4,000-digit parts, a sign, spaces)
MAX_TEXT: Final = 2 * MAX_DIGITS + 100

_DECIMAL_TEXT = re.compile(r"[+-]?(?P<int>[0-9_]*)(?:\.(?P<frac>[0-9_]*))?(?:[eE](?P<exp>[+-]?[0-9_]+))?")
_FRACTION_TEXT = re.compile(r"[+-]?(?P<p>[0-9_]+)\s*/\s*(?P<q>[0-9_]+)")
_STRING_HINT = "must be a decimal or fraction string such as '0.1' or '1/3'"


def _bounded(result: Fraction, value: object, owner: str, field: str) -> Fraction:
    if result.numerator.bit_length() > MAX_BITS or result.denominator.bit_length() > MAX_BITS:
        raise InvalidArgument(owner, field, value, f"is too large: more than {MAX_BITS} bits (about 10**4000)")
    return result


def _from_text(value: str, owner: str, field: str) -> Fraction:
    text = value.strip()
    if len(text) > MAX_TEXT:
        raise InvalidArgument(owner, field, value, f"is longer than {MAX_TEXT} characters")
    fraction = _FRACTION_TEXT.fullmatch(text)
    if fraction is not None:
        if max(len(fraction["p"].replace("_", "")), len(fraction["q"].replace("_", ""))) > MAX_DIGITS:
            raise InvalidArgument(owner, field, value, f"has more than {MAX_DIGITS} digits in p or q")
    else:
        decimal = _DECIMAL_TEXT.fullmatch(text)
        if decimal is None or not (decimal["int"] or decimal["frac"]):
            raise InvalidArgument(owner, field, value, _STRING_HINT)
        digits = len(decimal["int"].replace("_", "").lstrip("0")) + len((decimal["frac"] or "").replace("_", ""))
        exp_text = (decimal["exp"] or "0").replace("_", "").lstrip("+-").lstrip("0")
        if len(exp_text) > 5 or int(exp_text or "0") > MAX_EXPONENT:
            raise InvalidArgument(owner, field, value, f"has an exponent beyond {MAX_EXPONENT} in absolute value")
        if digits > MAX_DIGITS:
            raise InvalidArgument(owner, field, value, f"has more than {MAX_DIGITS} digits")
    try:
        result = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise InvalidArgument(owner, field, value, _STRING_HINT) from None
    return _bounded(result, value, owner, field)


def to_fraction(value: object, *, owner: str, field: str) -> Fraction:
    """Convert ``value`` to an exact ``Fraction`` or raise ``InvalidArgument``."""
    if type(value) is Fraction:  # the hot path: already exact
        return value
    if isinstance(value, bool):
        raise InvalidArgument(owner, field, value, "must be a number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_BITS:
            raise InvalidArgument(owner, field, f"<int of {value.bit_length()} bits>", f"is too large: more than {MAX_BITS} bits (about 10**4000)")
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(owner, field, value, "must be finite")
        return Fraction(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidArgument(owner, field, value, "must be finite")
        parts = value.as_tuple()
        exponent = parts.exponent
        assert isinstance(exponent, int)  # finite
        digits = len(parts.digits)
        if digits > MAX_DIGITS or exponent > MAX_EXPONENT or exponent < -(MAX_EXPONENT + MAX_DIGITS):
            raise InvalidArgument(owner, field, value, f"is out of range: at most {MAX_DIGITS} digits and an exponent within ±{MAX_EXPONENT}")
        return _bounded(Fraction(value), value, owner, field)
    if isinstance(value, str):
        return _from_text(value, owner, field)
    # numpy scalars: integers exactly, floats exactly like float
    try:
        import numpy as np

        if isinstance(value, np.integer):
            return Fraction(int(value))
        if isinstance(value, np.floating):
            return to_fraction(float(value), owner=owner, field=field)
    except ImportError:  # pragma: no cover
        pass
    raise InvalidArgument(
        owner, field, value, "must be an int, Fraction, decimal string, float or Decimal"
    )


def nonneg(value: object, *, owner: str, field: str) -> Fraction:
    """``to_fraction`` that also requires ``value >= 0``."""
    result = to_fraction(value, owner=owner, field=field)
    if result.numerator < 0:
        raise InvalidArgument(owner, field, value, "must be >= 0")
    return result


def positive(value: object, *, owner: str, field: str) -> Fraction:
    """``to_fraction`` that also requires ``value > 0``."""
    result = to_fraction(value, owner=owner, field=field)
    if result <= 0:
        raise InvalidArgument(owner, field, value, "must be > 0")
    return result


def fraction_ceil(x: Fraction) -> int:
    """Exact ceiling of a fraction."""
    return -((-x.numerator) // x.denominator)


def fraction_floor(x: Fraction) -> int:
    """Exact floor of a fraction."""
    return x.numerator // x.denominator
