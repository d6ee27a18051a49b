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

**Centred squares** (the second moment of a variance). With a public integer
centre ``c`` and shift ``s >= 0``, a value's *square term* is
``q(t) = round_half_even((t - c)**2 / 2**s)``, where ``t`` is its lattice term
above (an integer in ``[L, U]``): a deterministic function of ``t`` computed in
integer arithmetic, in units of ``2**(2k + s)``. Squaring the clipped *float*
instead would round (``fl(x*x)`` has a relative error up to ``2**-53`` and
depends on the value's bits), and a sum of such squares would again inherit the
float errors this module removes; squaring the integer ``t - c`` is exact. The
rounding ``round_half_even(v / 2**s)`` is monotone in ``v``, so every square term
lies in ``[0, Q]`` with ``Q = q`` at ``|t - c| = H = max(c - L, U - c)``
(:func:`square_term_bound`), whatever the value.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, fraction_floor, to_fraction

__all__ = [
    "clipped_lattice_terms", "clipped_sum_sensitivity", "exact_clipped_sum", "exact_square_sum", "lattice_bounds",
    "round_to_lattice", "square_term", "square_term_bound", "square_terms", "inside_bounds",
]  # fmt: skip

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
    terms = clipped_lattice_terms(values, lower, upper, k, owner=owner)
    bound = max(abs(lo_u), abs(hi_u))
    if terms.dtype == np.int64:
        if bound == 0 or terms.size * bound <= _INT64_MAX:
            return int(np.sum(terms, dtype=np.int64))
        chunk = max(1, _INT64_MAX // bound)
        return sum(int(np.sum(terms[i : i + chunk], dtype=np.int64)) for i in range(0, terms.size, chunk))
    return sum(int(v) for v in terms.tolist())


def clipped_lattice_terms(
    values: npt.ArrayLike, lower: object, upper: object, k: int, *, owner: str = "clipped_lattice_terms"
) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """The lattice terms :func:`exact_clipped_sum` adds: each an integer in ``[floor(lower/2**k), ceil(upper/2**k)]``.

    NaN entries are dropped; int64 when the bounds allow, else exact Python ints.

    Examples:
        >>> clipped_lattice_terms([0.5, 7.0, float("nan"), -3.0], 0, 2, -1).tolist()
        [1, 4, 0]
    """
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
    if terms.dtype == np.int64 and max(abs(lo_u), abs(hi_u)) <= _INT64_MAX:
        return np.clip(terms.astype(np.int64), lo_u, hi_u)
    out = np.empty(terms.size, dtype=object)
    out[:] = [min(max(int(v), lo_u), hi_u) for v in terms.tolist()]
    return out


def square_term(t: int, centre: int, shift: int) -> int:
    """``round_half_even((t - centre)**2 / 2**shift)``, exactly (module docstring).

    Examples:
        >>> [square_term(t, 0, 2) for t in (1, 2, 3, 5)]  # 1/4, 4/4, 9/4, 25/4
        [0, 1, 2, 6]
        >>> square_term(3, 1, 3)  # 4/8: a tie, to the even 0
        0
    """
    v = (t - centre) * (t - centre)
    if shift == 0:
        return v
    q = v >> shift
    r = v - (q << shift)
    half = 1 << (shift - 1)
    return q + 1 if r > half or (r == half and q & 1) else q


#: the largest |t - centre| whose square terms are computed in int64 (the square is below 2**62)
_SQUARE_INT64: Final = 1 << 31


def square_terms(terms: npt.NDArray[np.int64] | npt.NDArray[np.object_], centre: int, shift: int, half_width: int) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """:func:`square_term` of every lattice term, given ``half_width >= |t - centre|`` for all of them (public).

    int64 arithmetic when ``half_width <= 2**31`` and the terms are int64 (the
    square is below ``2**62``); exact Python ints otherwise. Both give the same
    integers: the amount of work depends on the public sizes only.

    Examples:
        >>> square_terms(np.array([0, 1, 2, 3, 5]), 1, 1, 4).tolist()  # 1/2, 0, 1/2, 4/2, 16/2
        [0, 0, 0, 2, 8]
    """
    if terms.dtype == np.int64 and half_width <= _SQUARE_INT64:
        d: npt.NDArray[np.int64] = terms.astype(np.int64) - np.int64(centre)
        v: npt.NDArray[np.int64] = d * d
        if shift == 0:
            return v
        q: npt.NDArray[np.int64] = v >> np.int64(shift)
        r = v - (q << np.int64(shift))
        half = np.int64(1 << (shift - 1))
        up = (r > half) | ((r == half) & ((q & 1) == 1))
        out64: npt.NDArray[np.int64] = q + up.astype(np.int64)
        return out64
    out = np.empty(terms.size, dtype=object)
    out[:] = [square_term(int(t), centre, shift) for t in terms.tolist()]
    return out


def square_term_bound(lo_u: int, hi_u: int, centre: int, shift: int) -> int:
    """The largest square term of a lattice term in ``[lo_u, hi_u]``: ``q`` at the farther end from ``centre``.

    Every square term lies in ``[0, square_term_bound(...)]`` (the rounding is monotone).

    Examples:
        >>> square_term_bound(0, 20, 10, 0), square_term_bound(-3, 20, 10, 2)  # 10**2; 13**2/4 = 42.25
        (100, 42)
    """
    far = max(abs(lo_u - centre), abs(hi_u - centre))
    return square_term(far, 0, shift)


def exact_square_sum(values: npt.ArrayLike, lower: object, upper: object, k: int, centre: int, shift: int) -> int:
    """The exact sum of the square terms of ``values`` (NaN dropped), in units of ``2**(2k + shift)``.

    Examples:
        >>> exact_square_sum([0.0, 1.0, 2.0, float("nan")], 0, 2, 0, 1, 0)  # (0-1)**2 + 0 + (2-1)**2
        2
    """
    lo_u, hi_u = lattice_bounds(lower, upper, k, "exact_square_sum")
    half_width = max(abs(lo_u - centre), abs(hi_u - centre))
    squares = square_terms(clipped_lattice_terms(values, lower, upper, k, owner="exact_square_sum"), centre, shift, half_width)
    bound = square_term_bound(lo_u, hi_u, centre, shift)
    if squares.dtype == np.int64:
        chunk = max(1, _INT64_MAX // max(bound, 1))
        return sum(int(np.sum(squares[i : i + chunk], dtype=np.int64)) for i in range(0, squares.size, chunk))
    return sum(int(v) for v in squares.tolist())


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


def _float_or_huge(x: Fraction) -> float:
    """``float(x)``, or the largest float of x's sign beyond the float range (a clip that wide clips nothing finite)."""
    try:
        return float(x)
    except OverflowError:
        return -sys.float_info.max if x < 0 else sys.float_info.max


def inside_bounds(lower: Fraction, upper: Fraction) -> tuple[float, float]:
    """The floats nearest ``[lower, upper]`` from inside (what :func:`dpalg.queries.clip_inside` clips to).

    Examples:
        >>> inside_bounds(Fraction(1, 10), Fraction(1, 2))
        (0.1, 0.5)
        >>> inside_bounds(Fraction(0), Fraction(1, 10))[1] < 0.1  # float(0.1) lies above 1/10
        True
    """
    lo = _float_or_huge(lower)
    if Fraction(lo) < lower:
        lo = float(np.nextafter(lo, np.inf))
    hi = _float_or_huge(upper)
    if Fraction(hi) > upper:
        hi = float(np.nextafter(hi, -np.inf))
    return lo, hi
