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
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Union

from dpalg._errors import InvalidArgument

__all__ = ["ExactLike", "to_fraction", "nonneg", "positive", "fraction_ceil", "fraction_floor"]

ExactLike = Union[int, Fraction, str, float, Decimal]


def to_fraction(value: object, *, owner: str, field: str) -> Fraction:
    """Convert ``value`` to an exact ``Fraction`` or raise ``InvalidArgument``."""
    if type(value) is Fraction:  # the hot path: already exact
        return value
    if isinstance(value, bool):
        raise InvalidArgument(owner, field, value, "must be a number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(owner, field, value, "must be finite")
        return Fraction(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidArgument(owner, field, value, "must be finite")
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            result = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise InvalidArgument(
                owner, field, value, "must be a decimal or fraction string such as '0.1' or '1/3'"
            ) from None
        return result
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
