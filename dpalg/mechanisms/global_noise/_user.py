"""The integer statistics of user-level Laplace and Gaussian releases.

Each user-level query is released exactly like its row-level counterpart, with
"one row" replaced by "one user", whose contribution is bounded by the query's
modifiers (:mod:`dpalg.queries._bounding`):

============================  ===========================================  ==================================
query                         integer statistic                            sensitivity (lattice units)
============================  ===========================================  ==================================
count | MaxRowsPerUser(r)     kept rows                                    r
count | ClipPerUser(L, U)     Σ_u clamp(rows_u, L, U)                      max |clamp| (≤ max(|L|, |U|))
sum | Clip | MaxRowsPerUser   Σ kept rows (fixed point)                    r·max(|l|, |u|)
sum | ClipPerUser(L, U)       Σ_u clamp(total_u, L, U) (fixed point)       max |clamp| (≤ max(|L|, |U|))
mean | ClipPerUser(L, U)      centred Σ_u clamp(total_u), number of users  max(c − L, U − c); 1
mean | Clip | MaxRowsPerUser  centred Σ kept rows, kept rows               r·max(c − l, u − c); r
histogram | caps              counts of kept rows                          L1 / L2² of histogram_sensitivity
============================  ===========================================  ==================================

Every statistic is an exact integer, and every bound holds for every dataset:
adding one user adds that user's kept rows (or one clamped total) and nothing
else (:func:`dpalg.mechanisms._common.user_level.kept_rows`).
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np

from dpalg.data import Dataset, as_reductions
from dpalg.mechanisms._common.params import floor_log2
from dpalg.mechanisms._common.user_level import (
    histogram_sensitivity,
    kept_row_spec,
    kept_rows,
    total_bounds,
    total_sensitivity,
    unit_total_spec,
    user_key_counts,
    values_per_user,
)
from dpalg.noise._fixed_point import lattice_bounds
from dpalg.queries import Query

__all__ = ["NoiseTerm", "auto_k", "lattice_centre", "mean_bounds", "user_noise_terms"]

_GRANULARITY_BITS = 20  # the lattice step is about 2**-20 of the noise scale


@attrs.frozen
class NoiseTerm:
    """One integer-valued statistic and the exact noise it receives.

    ``value`` is in lattice units of ``2**k`` (``k = 0`` for counts); the
    released number is ``(value + Z) * 2**k`` with ``Z`` discrete Laplace of
    scale ``param`` or discrete Gaussian of variance parameter ``param``.
    Exposed so that tests can compute the output distribution exactly.
    """

    label: str
    value: int
    param: Fraction
    k: int
    sensitivity: Fraction  # L1 (Laplace) or L2² (Gaussian) share, lattice units


def auto_k(scale: Fraction) -> int:
    """The automatic lattice exponent: a step of about ``2**-20`` noise scales."""
    return floor_log2(scale) - _GRANULARITY_BITS


def lattice_centre(lower: Fraction, upper: Fraction, k: int) -> tuple[int, int, int]:
    """A mean's value bounds in lattice units (rounded outward) and their integer midpoint."""
    lo_u, hi_u = lattice_bounds(lower, upper, k, "mean")
    return lo_u, hi_u, (lo_u + hi_u) // 2


def mean_bounds(query: Query) -> tuple[Fraction, Fraction]:
    """The range of the values a mean averages: the per-user clip, or the row clip."""
    if query.per_user_totals:
        assert query.user_lower is not None and query.user_upper is not None
        return query.user_lower, query.user_upper
    return query.require_bounds("mean")


def _real_sensitivity(query: Query) -> Fraction:
    """A real-unit sensitivity used only to choose the automatic lattice."""
    lower, upper = mean_bounds(query)
    if query.kind == "mean":
        return (upper - lower) / 2 * values_per_user(query)
    return max(abs(lower), abs(upper)) * values_per_user(query)


def user_noise_terms(
    query: Query, laplace: bool, budget: Fraction, granularity: int | None, data: Dataset, secret: bytes
) -> list[NoiseTerm]:
    """The integer statistics of a user-level Laplace (``laplace``) or Gaussian release.

    Args:
        query: a bounded user-level count, sum, mean or histogram.
        laplace: Laplace (budget ε, parameter = scale Δ1/ε) or Gaussian (budget
            ρ, parameter σ² = Δ2²/(2ρ), Canonne–Kamath–Steinke 2020 Thm 14).
        budget: ε or ρ.
        granularity: the lattice exponent, or None for automatic.
        data: the dataset.
        secret: the key of the row choice.
    """

    def term(label: str, value: int, l1: Fraction, l2sq: Fraction, share: Fraction, k: int) -> NoiseTerm:
        param = l1 / (budget * share) if laplace else l2sq / (2 * budget * share)
        return NoiseTerm(label, value, param, k, l1 if laplace else l2sq)

    one = Fraction(1)
    if query.kind == "histogram":
        l1, l2sq, _ = histogram_sensitivity(query)
        assert query.keys is not None
        counts = user_key_counts(query, data, secret)[1].tolist()  # on the executors for a Spark frame
        return [term(str(key), int(c), Fraction(l1), Fraction(l2sq), one, 0) for key, c in zip(query.keys, counts)]
    if query.kind == "count":
        spec = unit_total_spec(query, 0)
        if query.per_user_totals:
            assert spec is not None
            total = as_reductions(data).unit_total_sum(spec, secret).total
            delta = Fraction(total_sensitivity(query, 0))
            return [term("count", total, delta, delta * delta, one, 0)]
        r = Fraction(values_per_user(query))
        if spec is not None:  # each user's kept rows, at most r: their sum is the number of kept rows
            return [term("count", as_reductions(data).unit_total_sum(spec, secret).total, r, r * r, one, 0)]
        _, _, keep = kept_rows(query, data, secret, ordered=False)
        return [term("count", int(np.count_nonzero(keep)), r, r * r, one, 0)]
    share = one if query.kind == "sum" else Fraction(1, 2)
    k = granularity if granularity is not None else auto_k(max(_real_sensitivity(query), Fraction(1, 2**60)) / (budget * share))
    if query.per_user_totals:
        spec = unit_total_spec(query, k)
        assert spec is not None
        totals = as_reductions(data).unit_total_sum(spec, secret)  # on the executors for a Spark frame
        lo, hi = total_bounds(query, k)
        if query.kind == "sum":
            delta = Fraction(total_sensitivity(query, k))
            return [term("sum", totals.total, delta, delta * delta, share, k)]
        # mean over users: each user adds one clamped total in [lo, hi] and 1 to the count
        _, _, centre = lattice_centre(*mean_bounds(query), k)
        n_users = totals.units
        centred = totals.total - n_users * centre
        half = Fraction(max(centre - lo, hi - centre))
        return [term("centred_sum", centred, half, half * half, share, k), term("count", n_users, one, one, share, 0)]
    # k kept rows per user, each clipped to [l, u]: their exact fixed-point sum and number (on the executors for Spark)
    lower, upper = query.require_bounds(query.kind)
    cap = values_per_user(query)
    kept = as_reductions(data).kept_row_sum(kept_row_spec(query, k), secret)
    rr = Fraction(cap)
    total = kept.total
    lo_u, hi_u = lattice_bounds(lower, upper, k, query.kind)
    if query.kind == "sum":
        delta = Fraction(cap * max(abs(lo_u), abs(hi_u)))
        return [term("sum", total, delta, delta * delta, share, k)]
    _, _, centre = lattice_centre(lower, upper, k)
    half = Fraction(cap * max(centre - lo_u, hi_u - centre))
    n = kept.count
    return [term("centred_sum", total - n * centre, half, half * half, share, k), term("count", n, rr, rr * rr, share, 0)]
