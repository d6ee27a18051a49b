"""The smooth sensitivity of a quantile from an order window of public width.

:func:`~dpalg.sensitivity._smooth_quantile.smooth_sensitivity_quantile` reads the whole
sorted column. Truncating the maximum at a **public** level ``K`` gives

    S_K(x) = max( max_{k ≤ K} e^{−kβ₀}·LS_k(x),  e^{−(K+1)β₀}·(u − l) ),

which reads only the order statistics within ``2K + 3`` ranks of the quantile's
rank, and is still a β₀-smooth upper bound on the local sensitivity:

* *Upper bound.* ``LS_k ≤ u − l`` for every k, so every dropped term
  ``e^{−kβ₀}·LS_k`` with ``k > K`` is at most the last one; ``S_K ≥ S*``.
* *Smooth.* For neighbours x, y and ``k < K``, ``e^{−kβ₀}·LS_k(x) ≤ e^{β₀}·e^{−(k+1)β₀}·LS_{k+1}(y)``
  (``LS_k(x) ≤ LS_{k+1}(y)``); for ``k = K`` the right side is at most ``e^{β₀}`` times
  the constant term, and a constant is 0-smooth. So ``S_K(x) ≤ e^{β₀}·S_K(y)``.

``K`` must not depend on the data: with a K chosen from the data (e.g. from
``LS_0``) two neighbours could truncate at different levels and the bound would
not be smooth. Here ``K = ⌈2·ln((u − l)/2^k)/β⌉`` from β, the clip and the lattice
step ``2^k`` only; since ``β₀ ≥ β/2``, the constant term is at most the lattice step
that the release adds to the bound anyway (``S' = S + 2^k``), so truncating costs
at most one lattice step of noise scale.

Which ranks are read: under substitution ``LS_k`` reads ranks ``m ± (k + 1)``
(NRS07 §3.1); under add/remove it reads the windows ``(lo, lo + r + 1)`` with
``lo ≥ m(N) − 1 − a`` and ``lo + r + 1 ≤ m(N) + r + 1`` for ``N = n − r + a``,
``r + a = k``, and ``|m(N) − m(n)| ≤ k + 1``, so ranks ``m ± (2k + 2)``. The
computation runs the existing exact algorithms on a *virtual* sorted array equal
to the data inside the window and to ``l`` below it and ``u`` above it (under
add/remove it is never allocated: the levels only gather entries, which
``_VirtualPadded`` maps into the window): its
``LS_k`` equals the data's for ``k ≤ K`` and is at most ``u − l`` beyond, so the
maximum of its smooth bound and the constant term is exactly ``S_K(x)``. The
rounding argument of :mod:`dpalg.sensitivity._smooth` carries over: the constant
term is computed with the same ``β₀`` and rounded up by less than the slack.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import cast

import numpy as np
import numpy.typing as npt

from dpalg.sensitivity._smooth_quantile import _add_remove_fast, _dc_error, _m, _substitution_fast
from dpalg.sensitivity._smooth_rounding import _BASE_SLACK, _EXP_REL, _MIN_BETA, Relation, _beta0, _bounds, _finish, _gap_up

__all__ = ["smooth_from_window", "window_levels", "window_ranks"]


def window_levels(beta: float, lower: Fraction, upper: Fraction, lattice_k: int) -> int:
    """The public truncation level ``K = ⌈2·ln((u − l)/2^k)/β⌉`` (at least 0)."""
    ratio = (upper - lower) / Fraction(2) ** lattice_k
    if ratio <= 1:
        return 0
    log_ratio = math.log(ratio.numerator) - math.log(ratio.denominator)
    return max(0, math.ceil(2 * log_ratio / beta))


def window_ranks(n: int, q: Fraction, levels: int) -> tuple[int, int]:
    """The 0-based ranks ``[first, last]`` that ``LS_0..LS_K`` read (both relations)."""
    if n == 0:
        return 0, -1
    m = int(_m(q, np.array([n], dtype=np.int64))[0])  # 1-based rank of the quantile
    radius = 2 * levels + 3
    return max(0, m - 1 - radius), min(n - 1, m - 1 + radius)


def _virtual(n: int, first: int, values: npt.NDArray[np.float64], lo_b: float, hi_b: float) -> npt.NDArray[np.float64]:
    """``[l, …, l, window, u, …, u]`` padded with ``l`` and ``u``: n + 2 entries, sorted."""
    xp = np.empty(n + 2, dtype=np.float64)
    xp[: first + 1] = lo_b
    xp[first + 1 : first + 1 + values.size] = values
    xp[first + 1 + values.size :] = hi_b
    return xp


class _VirtualPadded:
    """The array of :func:`_virtual` without allocating it: ``xp[i] = pad[clip(i − first, 0, len + 1)]``.

    ``pad = [l, window, u]``; an index at or below ``first`` reads ``l`` and one past
    the window reads ``u``, exactly the entries of the virtual array. Supports the
    integer-array reads of the add/remove levels (``_ar_levels``), nothing else.
    """

    __slots__ = ("_first", "_pad")

    def __init__(self, first: int, values: npt.NDArray[np.float64], lo_b: float, hi_b: float) -> None:
        self._first = first
        self._pad = np.concatenate(([lo_b], values, [hi_b]))

    def __getitem__(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = self._pad[np.minimum(np.maximum(idx - self._first, 0), self._pad.size - 1)]
        return out


def smooth_from_window(
    n: int, first: int, values: npt.NDArray[np.float64], q: Fraction, lower: Fraction, upper: Fraction,
    beta: float, relation: Relation, levels: int,
) -> float:  # fmt: skip
    """``Ŝ_K``: the rounded-up truncated smooth bound of the q-quantile (module docstring).

    Args:
        n: the number of present values.
        first: the 0-based rank of ``values[0]``.
        values: the sorted clipped values at ranks ``first..first + len − 1``; must
            cover :func:`window_ranks` ``(n, q, levels)``.
        q: the quantile level.
        lower: the clip's lower bound.
        upper: the clip's upper bound.
        beta: β > 0 (the same float the full computation takes).
        relation: ``"add_remove"`` or ``"substitution"``.
        levels: the public K.
    """
    lo_b, hi_b = _bounds(lower, upper, "smooth_from_window")
    want_first, want_last = window_ranks(n, q, levels)
    if n and (first > want_first or first + values.size - 1 < want_last):
        raise ValueError("the order window does not cover the ranks the truncated bound reads")
    cap = float(_gap_up(hi_b, lo_b))
    if (relation == "substitution" and n == 0) or cap == 0:
        return 0.0
    if beta < _MIN_BETA:
        return _finish(cap, 0.0)
    if relation == "substitution":  # the divide and conquer also searches the array: build it
        xp = _virtual(n, first, values, lo_b, hi_b)
        eta, depth = _dc_error(beta, n)
        b0 = _beta0(beta, _BASE_SLACK + 2 * (2 * depth + 1) * eta + 2 * _EXP_REL)
        fast = _substitution_fast(xp, n, int(_m(q, np.array([n]))[0]), beta, cap)
    else:  # the add/remove levels only gather entries: read the window in place of the n + 2 array
        b0 = _beta0(beta, _BASE_SLACK)
        fast = _add_remove_fast(cast(npt.NDArray[np.float64], _VirtualPadded(first, values, lo_b, hi_b)), n, q, beta, cap)
    if b0 <= 0:
        return fast
    constant = _finish(math.exp(-b0 * float(levels + 1)) * cap, 0.0)
    return max(fast, constant)
