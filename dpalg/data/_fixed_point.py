"""Float-safe clipped sums: exact integer sums on a lattice (Casacuberta et al. 2022).

Deterministic arithmetic, no randomness: the reductions (this floor) compute these
sums and :mod:`dpalg.noise` releases them; ``dpalg.noise`` re-exports every name.

A float sum of clipped values can change between neighbouring datasets by more
than the declared sensitivity, because each addition rounds and the rounding
depends on every other term and on the order. Here every clipped value is
rounded to the lattice ``2**k Z`` and the integer multipliers are summed
*exactly* (int64 with an overflow-proof bound, else Python integers), so the
sum is a function of the multiset of rounded terms and its sensitivity is exact.

NaN policy: NaN entries are dropped, i.e. treated as absent rows (adding or
removing a NaN row changes nothing); ``+inf``/``-inf`` are clipped to the bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, fraction_floor, to_fraction

__all__ = ["clipped_sum_sensitivity", "exact_clipped_sum", "lattice_bounds", "round_to_lattice"]

_INT64_MAX = (1 << 63) - 1
_INT64_SAFE = 1 << 62


def _check_k(k: object, owner: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -1000 <= int(k) <= 1000:
        raise InvalidArgument(owner, "k", k, "must be an int in [-1000, 1000]")
    return int(k)


def round_to_lattice(values: npt.ArrayLike, k: int) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """Round every value to the nearest multiple of ``2**k``; return the multipliers.

    ``x / 2**k`` is computed with ``ldexp``, which is exact for binary floats (it
    only changes the exponent; a result in the subnormal range has magnitude
    far below 1/2 and rounds to 0 either way), and ``rint`` rounds to the nearest
    integer, ties to even. The result is int64 when every multiplier is below
    ``2**62`` in magnitude, else an object array of exact Python ints.

    Args:
        values: finite floats (NaN and infinities are rejected).
        k: lattice exponent in ``[-1000, 1000]``.

    Returns:
        The integers ``m`` with ``m * 2**k`` nearest to each value.

    A value so large that ``x / 2**k`` overflows float64 is rounded exactly in
    integer arithmetic instead (a release must never fail because of a value).

    Raises:
        InvalidArgument: a non-finite value, or ``k`` out of range.

    Examples:
        >>> from dpalg.noise import round_to_lattice
        >>> round_to_lattice([0.3, -1.75, 2.5], -1).tolist()
        [1, -4, 5]
        >>> round_to_lattice([1e300], 0).dtype
        dtype('O')
    """
    kk = _check_k(k, "round_to_lattice")
    arr = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(arr)):
        raise InvalidArgument("round_to_lattice", "values", "<non-finite entries>", "must all be finite")
    with np.errstate(over="ignore"):
        scaled = np.rint(np.ldexp(arr, -kk))
    if scaled.size == 0 or float(np.max(np.abs(scaled))) < _INT64_SAFE:
        return scaled.astype(np.int64)
    out = np.empty(scaled.size, dtype=object)
    step = Fraction(2) ** kk
    # float -> int is exact; where x / 2**k overflowed float64, round the exact quotient (ties to even, as rint)
    out[:] = [int(v) if math.isfinite(v) else round(Fraction(x) / step) for v, x in zip(scaled.tolist(), arr.tolist())]
    return out


def lattice_bounds(lower: object, upper: object, k: int, owner: str) -> tuple[int, int]:
    """Clipping bounds rounded *outward* to the lattice, in units of ``2**k``."""
    lo = to_fraction(lower, owner=owner, field="lower")
    hi = to_fraction(upper, owner=owner, field="upper")
    if lo > hi:
        raise InvalidArgument(owner, "lower", lower, f"must be <= upper={upper!r}")
    kk = _check_k(k, owner)
    step = Fraction(2) ** kk
    return fraction_floor(lo / step), fraction_ceil(hi / step)


def exact_clipped_sum(values: npt.ArrayLike, lower: object, upper: object, k: int) -> int:
    """The exact sum of ``round_to_lattice(clip(values, lower, upper), k)``, in units of ``2**k``.

    Multiply the result by ``2**k`` for the sum in real units. Values are clipped
    to ``[lower, upper]`` (at their nearest floats) and rounded. Each term is an
    integer in ``[floor(lower / 2**k), ceil(upper / 2**k)]`` (clamped again after
    rounding, so even a float clip one ulp outside the bounds cannot escape),
    and the integers are added exactly: in int64 when ``n * max|term| < 2**63``
    (no overflow possible), otherwise in int64 chunks whose partial sums are
    combined as Python integers.

    Args:
        values: floats; NaN entries are dropped (absent rows), ``±inf`` clipped.
        lower: lower clipping bound (exact number).
        upper: upper clipping bound, ``>= lower``.
        k: lattice exponent.

    Returns:
        The exact integer sum of the rounded, clipped terms.

    Raises:
        InvalidArgument: ``lower > upper``, bad ``k``.

    Examples:
        >>> from dpalg.noise import exact_clipped_sum
        >>> exact_clipped_sum([0.5, 7.0, float("nan"), -3.0], 0, 2, -1)
        5
        >>> exact_clipped_sum([1e16, 1.0, -1e16], -1e16, 1e16, 0)
        1

    References:
        S. Casacuberta, M. Shoemate, S. Vadhan, C. Wagaman. Widespread
        underestimation of sensitivity in differentially private libraries and
        how to fix it. CCS 2022 (fixed-point / integer summation as the fix).
    """
    owner = "exact_clipped_sum"
    lo_u, hi_u = lattice_bounds(lower, upper, k, owner)
    arr = np.asarray(values, dtype=np.float64).ravel()
    arr = arr[~np.isnan(arr)]
    # clip at the nearest floats of the bounds; the integer clamp below makes the
    # terms provably lie in [L, U] even if a float bound is one ulp outside
    lo_f = to_fraction(lower, owner=owner, field="lower")
    hi_f = to_fraction(upper, owner=owner, field="upper")
    f_lo = float(lo_f) if abs(lo_f) < Fraction(10) ** 308 else (-1.7e308 if lo_f < 0 else 1.7e308)
    f_hi = float(hi_f) if abs(hi_f) < Fraction(10) ** 308 else (-1.7e308 if hi_f < 0 else 1.7e308)
    clipped = np.clip(arr, f_lo, f_hi)
    terms = round_to_lattice(clipped, int(k))
    bound = max(abs(lo_u), abs(hi_u))
    if terms.dtype == np.int64 and bound <= _INT64_MAX:
        t64 = np.clip(terms.astype(np.int64), lo_u, hi_u)
        if bound == 0 or t64.size * bound <= _INT64_MAX:
            return int(np.sum(t64, dtype=np.int64))
        chunk = max(1, _INT64_MAX // bound)
        return sum(int(np.sum(t64[i : i + chunk], dtype=np.int64)) for i in range(0, t64.size, chunk))
    return sum(min(max(int(v), lo_u), hi_u) for v in terms.tolist())


def clipped_sum_sensitivity(
    lower: object,
    upper: object,
    k: int,
    relation: Literal["add_remove", "substitution"] = "add_remove",
) -> Fraction:
    """Exact sensitivity (real units) of ``2**k * exact_clipped_sum(values, lower, upper, k)``.

    Proof: each row contributes an integer term in ``[L, U]`` with
    ``L = floor(lower / 2**k)`` and ``U = ceil(upper / 2**k)`` (the bounds rounded
    outward), and the sum is exact. Adding or removing one row (NaN rows count
    as absent) changes the sum by one term, at most ``max(|L|, |U|)`` units;
    substituting one row changes one term within ``[L, U]`` or turns it into
    an absent (missing) one, i.e. into 0: at most ``max(U, 0) - min(L, 0)`` units. No float rounding is involved, so these bounds hold for every dataset.

    Args:
        lower: lower clipping bound.
        upper: upper clipping bound, ``>= lower``.
        k: lattice exponent.
        relation: ``"add_remove"`` or ``"substitution"``.

    Returns:
        The L1 sensitivity in real units (a multiple of ``2**k``).

    Raises:
        InvalidArgument: ``lower > upper``, bad ``k`` or ``relation``.

    Examples:
        >>> from dpalg.noise import clipped_sum_sensitivity
        >>> clipped_sum_sensitivity("0.3", 10, -1)
        Fraction(10, 1)
        >>> clipped_sum_sensitivity("-0.3", 10, -1, "substitution")
        Fraction(21, 2)

    References:
        Casacuberta, Shoemate, Vadhan, Wagaman. CCS 2022, Section 5 (the fix).
    """
    owner = "clipped_sum_sensitivity"
    lo_u, hi_u = lattice_bounds(lower, upper, k, owner)
    step = Fraction(2) ** int(k)
    if relation == "add_remove":
        return max(abs(lo_u), abs(hi_u)) * step
    if relation == "substitution":
        return (max(hi_u, 0) - min(lo_u, 0)) * step
    raise InvalidArgument(owner, "relation", relation, "must be 'add_remove' or 'substitution'")
