"""PTR on a mean from a summary of the data: the exact lattice total and the extreme values.

The add/remove local-sensitivity profile of a clipped mean up to the public cap
reads only the number of values, their sum, and the ``cap + 1`` smallest and
largest values (:func:`~dpalg.sensitivity._ls_mean.mean_ls_profile_from_extremes`);
under substitution only n and the two extremes. So a row-level
:class:`~dpalg.mechanisms.ProposeTest` on a mean asks the reductions seam for one
exact fixed-point sum and one extremes pass, O(n + cap²) and memory O(block),
instead of sorting the column.

The released statistic is the mean of the clipped values computed from the exact
lattice total ``T`` on the lattice ``2**k_s`` with ``k_s = e − 52`` (``2**e`` bounds
the clip): each value moves by at most ``2**(k_s − 1) ≤ top·2**-52`` when rounded
to the lattice and the final division rounds once (``≤ top·2**-53``), so the
error is below ``top·2**-49``, the float error the release scale already covers
(``_float_error``: the noise scale adds twice that bound, as for the old
``fsum``-based mean). Nothing about the privacy argument changes.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpalg.data import Dataset, Relation, SumSpec, as_reductions
from dpalg.queries import Query, evaluate_values, quantile_index
from dpalg.sensitivity._catalog import _bounds, _constant_profile, _sanitize, _scale_exponent, order_profile_at, order_window_ranks
from dpalg.sensitivity._ls_mean import mean_ls_profile_from_extremes

__all__ = ["mean_distance_and_value", "order_distance_and_value", "summary_lattice_k"]


def summary_lattice_k(lower: Fraction, upper: Fraction) -> int:
    """The public lattice exponent ``e − 52`` of the mean's exact total (``2**e`` > every |bound|)."""
    top = max(abs(lower), abs(upper))
    e = math.frexp(float(top))[1] if top > 0 else 0
    return e - 52


def mean_distance_and_value(query: Query, relation: Relation, data: Dataset, beta: float, cap: int) -> tuple[int, float]:
    """``(min(γ, n + 2, cap), mean)`` of a row-level clipped mean, from a data summary.

    γ is ``min{k : LS_k > beta}`` over the profile to the public ``cap`` (computed to
    the cap on every call, as :func:`~dpalg.sensitivity.distance_to_instability`
    does with a cap); the mean is the midpoint on empty data, as
    :func:`~dpalg.queries.evaluate_values` returns.
    """
    assert query.column is not None and query.kind == "mean" and query.user is None
    lower, upper = query.require_bounds("ProposeTest")
    reductions = as_reductions(data)
    k = summary_lattice_k(lower, upper)
    total = reductions.clipped_sums([SumSpec(query.column, lower, upper, k)])[0]
    n, smallest, largest = reductions.extremes(query.column, lower, upper, cap + 2)
    exact_total = Fraction(total.total) * Fraction(2) ** k
    a, b = _bounds("ProposeTest", query)
    if relation == "add_remove":
        profile = mean_ls_profile_from_extremes(n, exact_total, smallest, largest, a, b, cap)
    elif not (math.isfinite(a) and math.isfinite(b)):
        profile = np.full(cap + 1, np.inf)
    else:  # LS_k reads n and the two extremes; on data scaled by 2**-e, as ls_profile does
        e = _scale_exponent(a, b)
        ends = np.ldexp(np.array([smallest[0], largest[-1]]), -e) if n else np.zeros(0)
        with np.errstate(all="ignore"):
            profile = np.ldexp(_constant_profile("mean", n, cap, relation, math.ldexp(a, -e), math.ldexp(b, -e), ends), e)
        profile = _sanitize(profile)
    above = np.flatnonzero(~(profile[: cap + 1] <= beta))
    gamma = min(int(above[0]) if above.size else cap, n + 2)
    if n == 0:
        return gamma, float((lower + upper) / 2)
    mean = exact_total / n
    return gamma, float(min(max(mean, lower), upper))


def order_distance_and_value(query: Query, relation: Relation, data: Dataset, beta: float, cap: int) -> tuple[int, float]:
    """``(min(γ, n + 2, cap), value)`` of a row-level median, quantile, max or min, from an order window.

    ``LS_0..LS_cap`` of an order statistic read only the sorted values at the ranks
    :func:`~dpalg.sensitivity._catalog.order_window_ranks` gives (n, q and the public
    cap decide them), so the reductions seam is asked for the count and that window.
    The profile is computed by the catalog's own code
    (:func:`~dpalg.sensitivity._catalog.order_profile_at`) reading the window: the
    same profile, the same γ, the same value as on the whole sorted column.
    """
    assert query.column is not None and query.user is None
    lower, upper = query.require_bounds("ProposeTest")
    q = Fraction(1) if query.kind in ("max", "min") else (query.q if query.q is not None else Fraction(1, 2))
    reductions = as_reductions(data)
    n = reductions.count(query.column)
    lo_i, hi_i = order_window_ranks(n, q, cap)
    first, last = (n - 1 - hi_i, n - 1 - lo_i) if query.kind == "min" else (lo_i, hi_i)
    window = reductions.order_window(query.column, lower, upper, first, last)
    a, b = _bounds("ProposeTest", query)
    profile = _window_profile(query.kind, q, n, window.first, window.values, a, b, cap, relation)
    above = np.flatnonzero(~(profile[: cap + 1] <= beta))
    gamma = min(int(above[0]) if above.size else cap, n + 2)
    if n == 0:
        return gamma, evaluate_values(query, np.zeros(0, dtype=np.float64))
    rank = {"max": n - 1, "min": 0}.get(query.kind, quantile_index(q, n))
    return gamma, window.at(rank)


def _window_profile(
    kind: str, q: Fraction, n: int, first: int, values: npt.NDArray[np.float64], a: float, b: float, cap: int, relation: Relation
) -> npt.NDArray[np.float64]:
    """The catalog's order-statistic profile (scaling, ``min`` by reflection, sanitising) from a window."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return np.full(cap + 1, np.inf)
    e = _scale_exponent(a, b)  # exact scaling by 2**-e, as the catalog does: no overflow in any gap
    sa, sb = math.ldexp(a, -e), math.ldexp(b, -e)
    window = np.ldexp(values, -e)
    if kind == "min":  # min(x) = (a + b) − max((a + b) − x): reflect the window and its ranks
        window = (sa + sb) - window[::-1]
        first = n - first - window.size
    pad = np.concatenate(([sa], window, [sb]))
    # index i of the sorted data is pad[i - first + 1]; the padding a (i < 0) and b (i >= n) is
    # reachable only when the window touches that end (order_window_ranks covers every rank read)
    lowest = 0 if first == 0 else 1
    highest = window.size + 1 if first + window.size == n else window.size

    def val(idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = pad[np.minimum(np.maximum(idx - (first - 1), lowest), highest)]
        return out

    with np.errstate(all="ignore"):
        profile = np.ldexp(order_profile_at(n, val, q, cap, relation), e)
    return _sanitize(profile)
