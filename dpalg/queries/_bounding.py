"""Contribution bounds for user-level queries: what one user may add to a statistic.

A user-level query (``user=`` names the id column) protects one user with all
their rows: neighbouring datasets differ by adding or removing one user
(``Neighbouring(user, "add_remove")``). A statistic over such data has a finite
sensitivity only once each user's contribution is bounded. Three modifiers
bound it; they are combined with ``|`` like :class:`~dpalg.Clip`:

* :class:`ClipPerUser` clips each user's *total* (their sum, their row count,
  the per-user value of a mean or quantile) to ``[lower, upper]``: one user then
  adds one value in that range (Tumult's per-ID clamp; OpenDP's clamp after a
  group-by sum);
* :class:`MaxRowsPerUser` keeps at most ``k`` rows per user (OpenDP
  ``make_truncate_per_group``, Tumult ``MaxRowsPerID``, PipelineDP
  ``max_contributions``): one user then adds at most ``k`` rows;
* :class:`MaxKeysPerUser` keeps at most ``m`` keys per user in a histogram and at
  most ``rows_per_key`` rows in each (PipelineDP ``max_partitions_contributed``
  and ``max_contributions_per_partition``).

Which rows are kept is decided by a keyed hash of the user, the row's content
and its occurrence number (:func:`dpalg.data.select_rows`), keyed by a fresh
secret from :mod:`dpalg.noise` on each run. That choice depends only on the
user's own rows, so it is the same whatever the row order or partitioning and
adding one user changes no other user's kept rows. The bound holds for *any*
key: the privacy argument never relies on the hash.

The static consequences (how many values one user adds and in which range, the
L1/L2/L∞ sensitivities of a histogram) are computed by
:func:`user_contribution` from the query alone, never from data.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction

__all__ = ["ClipPerUser", "MAX_ROWS_PER_USER", "MaxKeysPerUser", "MaxRowsPerUser", "cap_param"]

#: the largest row or key cap a modifier accepts (public; keeps every bound an exact small integer)
MAX_ROWS_PER_USER: Final = 10**6


def _cpu_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="ClipPerUser", field="lower")


def _cpu_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="ClipPerUser", field="upper")


def cap_param(owner: str, field: str, value: int) -> int:
    """A public per-user cap: an int in ``[1, MAX_ROWS_PER_USER]`` (bool refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ROWS_PER_USER:
        raise InvalidArgument(owner, field, value, f"must be an int in [1, {MAX_ROWS_PER_USER}]")
    return value


def _rows_k(value: int) -> int:
    return cap_param("MaxRowsPerUser", "k", value)


def _keys_m(value: int) -> int:
    return cap_param("MaxKeysPerUser", "m", value)


def _keys_rows(value: int) -> int:
    return cap_param("MaxKeysPerUser", "rows_per_key", value)


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"'{x}'"


@final
@attrs.frozen(repr=False)
class ClipPerUser:
    """Clip each user's total to ``[lower, upper]`` (user-level queries only).

    For ``Query.sum(col, user=...)`` the total is the user's sum of the column
    (rows clipped first when the query also has ``| Clip(l, u)``); for
    ``Query.count(user=...)`` it is the user's number of rows (non-missing values
    when a column is named); for ``Query.mean``/``median``/``quantile`` with
    ``user=`` the statistic is taken over the users' totals, one value per user.

    Sensitivity under add/remove of one user: ``max(|lower|, |upper|)`` for a
    sum (one user adds one clipped total), 1 value for a mean or a quantile.

    Examples:
        >>> from dpalg import Query
        >>> Query.sum("spend", user="uid") | ClipPerUser(0, 500)
        Query.sum('spend', user='uid') | ClipPerUser(0, 500)
    """

    lower: Fraction = attrs.field(converter=_cpu_lower)
    upper: Fraction = attrs.field(converter=_cpu_upper)

    def __attrs_post_init__(self) -> None:
        if self.lower > self.upper:
            raise InvalidArgument("ClipPerUser", "lower", self.lower, f"must be <= upper={self.upper}")

    def __repr__(self) -> str:
        return f"ClipPerUser({_num(self.lower)}, {_num(self.upper)})"


@final
@attrs.frozen(repr=False)
class MaxRowsPerUser:
    """Keep at most ``k`` rows per user (user-level queries only).

    Rows whose value is missing are dropped first, so they never use up a user's
    quota. With ``| Clip(l, u)`` a sum then has sensitivity ``k·max(|l|, |u|)``, a
    row count ``k``, a histogram L1 ``k``.

    Examples:
        >>> from dpalg import Query, Clip
        >>> Query.sum("spend", user="uid") | Clip(0, 50) | MaxRowsPerUser(5)
        Query.sum('spend', user='uid') | Clip(0, 50) | MaxRowsPerUser(5)
    """

    k: int = attrs.field(converter=_rows_k)

    def __repr__(self) -> str:
        return f"MaxRowsPerUser({self.k})"


@final
@attrs.frozen(repr=False)
class MaxKeysPerUser:
    """Histograms: keep at most ``m`` keys per user and ``rows_per_key`` rows in each.

    One user then changes at most ``m`` counts (L0), each by at most
    ``rows_per_key`` (L∞): L1 ``m·rows_per_key``, L2 ``√m·rows_per_key``.

    Examples:
        >>> from dpalg import Query
        >>> Query.histogram("city", keys=["a", "b"], user="uid") | MaxKeysPerUser(1)
        Query.histogram('city', ('a', 'b'), user='uid') | MaxKeysPerUser(1)
    """

    m: int = attrs.field(converter=_keys_m)
    rows_per_key: int = attrs.field(default=1, converter=_keys_rows)

    def __repr__(self) -> str:
        return f"MaxKeysPerUser({self.m})" if self.rows_per_key == 1 else f"MaxKeysPerUser({self.m}, rows_per_key={self.rows_per_key})"
