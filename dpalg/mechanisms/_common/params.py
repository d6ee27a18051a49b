"""Shared validation and lattice helpers for mechanism nodes."""

from __future__ import annotations

import math
from fractions import Fraction

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Relation
from dpalg.queries import Query

__all__ = ["positive_param", "unit_interval_param", "relation_param", "require_fixed_n", "granularity_param", "floor_log2"]


def positive_param(owner: str, field: str, value: ExactLike) -> Fraction:
    """An exact parameter that must be > 0."""
    result = to_fraction(value, owner=owner, field=field)
    if result <= 0:
        raise InvalidArgument(owner, field, value, "must be > 0")
    return result


def unit_interval_param(owner: str, field: str, value: ExactLike) -> Fraction:
    """An exact parameter that must lie in the open interval (0, 1) (δ, β, …)."""
    result = to_fraction(value, owner=owner, field=field)
    if not 0 < result < 1:
        raise InvalidArgument(owner, field, value, "must be in (0, 1)")
    return result


def relation_param(owner: str, value: str) -> Relation:
    """Validate a neighbouring relation name."""
    if value == "add_remove":
        return "add_remove"
    if value == "substitution":
        return "substitution"
    raise InvalidArgument(owner, "relation", value, "must be 'add_remove' or 'substitution'")


def granularity_param(owner: str, value: int | None) -> int | None:
    """A lattice exponent k (release multiples of 2**k), or None for automatic."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -1074 <= value <= 1023:
        raise InvalidArgument(owner, "granularity", value, "must be None or an int k in [-1074, 1023] (multiples of 2**k)")
    return value


def float_floor(x: Fraction) -> float:
    """The largest float ``≤ x`` (a smoothness parameter is never rounded up)."""
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def floor_log2(x: Fraction) -> int:
    """Exact floor(log2(x)) for x > 0."""
    k = x.numerator.bit_length() - x.denominator.bit_length()
    # 2**k <= x < 2**(k+1) after at most one correction step
    if Fraction(2) ** k > x:
        k -= 1
    elif Fraction(2) ** (k + 1) <= x:
        k += 1
    return k


def require_fixed_n(owner: str, query: Query, relation: Relation) -> None:
    """Refuse row substitution for a query over a column.

    dpalg's LS_k under ``"substitution"`` is the value-level relation with n
    fixed. A row substitution can replace a value by a missing one (or the
    reverse), which is a value-level *removal* (addition): the substitution
    distance and LS_k would not cover that neighbour, and PTR's distance would
    not be 1-Lipschitz. Under row add/remove every neighbour is a value-level
    add/remove (or identical), which the add/remove LS_k covers.
    """
    if relation == "substitution" and query.column is not None:
        raise InvalidArgument(
            owner, "relation", relation,
            "must be 'add_remove' for a query over a column (a row substitution can turn a value into a missing one, "
            "changing n, which the substitution LS_k does not cover)",
        )
