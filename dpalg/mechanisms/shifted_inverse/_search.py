"""The shifted loss of a monotone user-level query, and the noisy binary search over it.

:func:`user_loss` reads ``⌊f⌋``'s loss ``ℓ`` (seed 004 = Fang, Dong, Yi, CCS 2022,
Prop. 3: sensitivity 1) through the per-unit reductions; :func:`binary_search` is
the noisy search of :class:`~dpalg.mechanisms.ShiftedInverseSearch` and
:class:`~dpalg.mechanisms.ShiftedInverseSearchZCDP` (``docs/mechanisms/shifted_inverse.md``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpalg.data import Dataset, as_reductions
from dpalg.noise import AbstractRandomness, discrete_gaussian, discrete_laplace
from dpalg.queries import Query
from dpalg.sensitivity import UserLoss

__all__ = ["SearchNoise", "binary_search", "search_steps", "sum_lattice_k", "user_loss"]


def sum_lattice_k(top: int | None) -> int:
    """The public lattice ``2**k`` of user totals: ``k = max(−40, bits(top) − 60)``.

    Rows are clamped to ±2**62 lattice steps before the exact per-user sum
    (:func:`dpalg.data.per_unit_sums`); with this k that clamp is
    ``2**(bits(top) + 2) ≥ 4·top``, so it never moves ⌊f⌋ inside the domain, and
    the step is as fine as that allows (2**-20 for a domain of 2**40).
    """
    return -20 if top is None else max(-40, top.bit_length() - 60)


def _nearest_float(x: Fraction) -> float:
    """The float nearest ``x``; beyond the float range ``±inf`` (where IEEE rounding to nearest overflows)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _row_clip(query: Query) -> tuple[float | None, float | None]:
    """The query's row clip as the floats nearest its bounds (``np.clip``'s, as always), or no clip.

    A bound beyond the float range is ``±inf`` (it clips no float; rows are then
    clamped at ``±2**62`` lattice steps), where ``float()`` used to raise after the charge.
    """
    if query.lower is not None and query.upper is not None:
        return _nearest_float(query.lower), _nearest_float(query.upper)
    return None, None


def user_loss(query: Query, data: Dataset, floor: int, top: int | None = None) -> UserLoss:
    """The loss of ``⌊f⌋`` that every shifted-inverse form uses, read through the per-unit reductions.

    The data is read only through :func:`~dpalg.data.as_reductions` (numpy, polars
    or Spark): one number per user reaches the driver, in ascending order, which
    is all :class:`UserLoss` needs (it depends only on the multiset of the users'
    numbers), so every backend gives the same loss bit for bit.

    Args:
        query: a validated user-level query (see :data:`SHIFTED_KINDS`).
        data: the dataset.
        top: ``y_hi`` of the output domain (sets the lattice of user totals; ``None``: 2**-20).
        floor: ``y_lo`` of the output domain; for ``user_max`` it is ``f(∅)``
            (``f = max(y_lo, largest value)``), for the other kinds ``f(∅) = 0``.

    Returns:
        The :meth:`UserLoss.floored` loss (integer-valued ``⌊f⌋``). A ``Clip``
        on the query clips every row first (a row-local, monotone-preserving
        transformation); user sums then clamp each user's total at 0.

    Privacy: not a mechanism; ``ℓ`` and ``ℓ̄`` of the result have global
    sensitivity 1 under add/remove of one user (seed 004, Prop. 3).
    """
    assert query.user is not None
    reductions = as_reductions(data)  # numpy, polars or Spark: only per-unit numbers reach the driver
    match query.kind:
        case "user_sum":
            assert query.column is not None
            lower, upper = _row_clip(query)  # lower >= 0 checked at construction
            sums = reductions.per_unit_sums(query.user, query.column, lower, upper, sum_lattice_k(top))
            loss = UserLoss.user_sum(sums)  # exact, order independent
        case "user_count":
            loss = UserLoss.row_count(np.ones(reductions.unit_count(query.user), dtype=np.int64))
        case "count":
            loss = UserLoss.row_count(reductions.per_unit_row_counts(query.user, query.column))  # present values when a column is named
        case "user_max":
            assert query.column is not None
            lower, upper = _row_clip(query)
            loss = UserLoss.user_max(reductions.per_unit_max(query.user, query.column, lower, upper), floor=floor)
        case _:
            raise AssertionError(query.kind)
    return loss.floored()


def search_steps(domain: tuple[int, int]) -> int:
    """Iterations of the binary search: at most I = ⌈log2 |Y|⌉ (|Y| ≥ 2).

    The search keeps ``y_lo − 1 <= i_min < i_max <= y_hi``; the gap
    ``i_max − i_min`` starts at ``|Y|`` and becomes at most ``⌈gap/2⌉`` per
    step, so it stops after at most ``⌈log2 |Y|⌉`` steps
    (``(|Y| − 1).bit_length()``).
    """
    size = domain[1] - domain[0] + 1
    return max(1, (size - 1).bit_length())


def binary_search(loss: UserLoss, domain: tuple[int, int], tau: int, noise: "SearchNoise") -> int:
    """Seed 004's noisy binary search, started one below ``y_lo``.

    ``i_min = y_lo − 1`` is a virtual candidate that is never queried: the
    seed's invariant ``ℓ(x, i_min) > 0`` then holds at the start also when
    ``f(x) <= y_lo``, and ``y_lo`` itself can be released. Queried points lie
    in ``[y_lo, y_hi − 1]``, where the loss is finite.
    """
    i_min, i_max = domain[0] - 1, domain[1]
    while i_min + 1 < i_max:
        mid = (i_min + i_max) // 2
        if loss.loss(mid) + noise() <= tau:
            i_max = mid
        else:
            i_min = mid
    return i_max


class SearchNoise:
    def __init__(self, kind: str, param: Fraction, rng: AbstractRandomness, steps: int) -> None:
        draw = discrete_laplace if kind == "laplace" else discrete_gaussian
        self._pool = draw(param, size=steps, rng=rng).tolist()
        self._i = 0

    def __call__(self) -> int:
        z = int(self._pool[self._i])
        self._i += 1
        return z
