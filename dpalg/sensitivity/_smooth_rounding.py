"""The arguments and the outward rounding shared by the smooth-sensitivity algorithms.

Every function here serves the rounding argument of :mod:`dpalg.sensitivity._smooth`
(module docstring, "Rounding"), which makes a floating-point smooth bound a rigorous
upper bound that is still β-smooth (NRS07 Def. 2.1, Prop. 3.1, with weights
``w_k ≤ e^β w_{k+1}``):

* :func:`_beta0` lowers ``β`` by a slack and rounds it down to 21 significant bits, so
  that ``β₀·k`` is exact for ``k < 2³²`` (:func:`_weights`);
* :func:`_gap_up` rounds every gap up, monotonically;
* :func:`_finish` inflates a result by a factor that dominates the error of ``exp`` and
  the products, and never returns less than ``FLOOR``;
* the argument checks (``β``, ``q``, the bounds, the sorted data) raise
  :class:`~dpalg.InvalidArgument` without printing data values.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import to_fraction
from dpalg.data import Relation

__all__ = ["FLOOR", "FloatArray", "IntArray", "Relation"]

#: smallest value ever returned when the true smooth sensitivity is positive
FLOOR: Final = 2.0**-900
_MIN_BETA: Final = 2.0**-20
_BETA_BITS: Final = 21
_EXP_REL: Final = 2.0**-48  # covers exp (4 ulp) + product (1/2 ulp) with room
_BASE_SLACK: Final = 2.0**-44
_MAX_N: Final = 2**31

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


# --- parameters ------------------------------------------------------------------


def _beta(beta: object, owner: str) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, "beta", beta, "must be a positive real number")
    b = float(beta)
    if not math.isfinite(b) or b <= 0:
        raise InvalidArgument(owner, "beta", beta, "must be finite and > 0")
    return b


def _beta0(beta: float, slack: float) -> float:
    """β minus ``slack``, rounded down to 21 significant bits (0.0 if not positive)."""
    b = beta - slack
    if b <= 0:
        return 0.0
    mant, exp = math.frexp(b)
    scaled = math.floor(mant * 2.0**_BETA_BITS)
    if scaled * 2.0 ** (exp - _BETA_BITS) >= beta:  # pragma: no cover - floor cannot round up
        scaled -= 1
    return math.ldexp(scaled, exp - _BETA_BITS)


def _q(q: object, owner: str) -> Fraction:
    qq = to_fraction(q, owner=owner, field="q")
    if not 0 <= qq <= 1:
        raise InvalidArgument(owner, "q", q, "must be in [0, 1]")
    if qq.denominator > 2**31:
        qq = qq.limit_denominator(2**31)  # pragma: no cover - exotic floats
        raise InvalidArgument(owner, "q", q, "must have a denominator <= 2**31 (pass a Fraction)")
    return qq


def _bounds(lower: object, upper: object, owner: str) -> tuple[float, float]:
    """Bounds as floats, rounded outward (a wider range only enlarges every gap)."""
    lo = to_fraction(lower, owner=owner, field="lower")
    hi = to_fraction(upper, owner=owner, field="upper")
    if lo > hi:
        raise InvalidArgument(owner, "lower", lower, f"must be <= upper={upper}")
    lf, hf = float(lo), float(hi)
    if Fraction(lf) > lo:
        lf = float(np.nextafter(lf, -np.inf))
    if Fraction(hf) < hi:
        hf = float(np.nextafter(hf, np.inf))
    if not (math.isfinite(lf) and math.isfinite(hf)):
        raise InvalidArgument(owner, "lower/upper", (lower, upper), "must be finite as float64")
    return lf, hf


def _sorted(values: npt.ArrayLike, lower: float, upper: float, owner: str) -> FloatArray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise InvalidArgument(owner, "sorted_values", f"ndim={x.ndim}", "must be 1-D")
    if x.size > _MAX_N:
        raise InvalidArgument(owner, "sorted_values", f"size={x.size}", f"must have at most {_MAX_N} entries")
    if x.size:
        # messages never print data values
        if not bool(np.all(np.isfinite(x))):
            raise InvalidArgument(owner, "sorted_values", "<data>", "must be finite (drop NaN first)")
        if x[0] < lower or x[-1] > upper:
            raise InvalidArgument(owner, "sorted_values", "<data>", "must lie in [lower, upper] (clip first)")
        if x.size > 1 and not bool(np.all(x[1:] >= x[:-1])):
            raise InvalidArgument(owner, "sorted_values", "<data>", "must be sorted ascending")
    return x


def _padded(x: FloatArray, lower: float, upper: float) -> FloatArray:
    """``[l, x_1, …, x_n, u]``: 1-based order statistics with NRS07's padding."""
    out = np.empty(x.size + 2, dtype=np.float64)
    out[0] = lower
    out[1:-1] = x
    out[-1] = upper
    return out


def _gap_up(hi: FloatArray | float, lo: FloatArray | float) -> FloatArray:
    """Rounded-up ``hi − lo`` for ``hi ≥ lo``: 0 exactly when the gap is 0 (monotone)."""
    d = np.subtract(hi, lo, dtype=np.float64)
    return np.where(d > 0, np.nextafter(d, np.inf), 0.0)


def _finish(value: float, inflate_log: float) -> float:
    """Apply the documented upward inflation and the floor."""
    if not value > 0:
        return FLOOR
    out = math.exp(math.log(value) + inflate_log) if inflate_log else value
    out = float(np.nextafter(out * (1.0 + _EXP_REL), np.inf))
    return max(out, FLOOR)


def _weights(k: IntArray | FloatArray, beta0: float) -> FloatArray:
    # beta0 has 21 significant bits, k < 2**32: the product is exact
    return np.exp(-beta0 * np.asarray(k, dtype=np.float64))
