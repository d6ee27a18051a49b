"""Smooth sensitivity (NRS07), with floating point that only ever errs upward.

For a query ``f``, ``β > 0`` and the local sensitivity at distance ``k``,
``LS_k(x) = max_{d(x, y) ≤ k} LS(y)``, the β-smooth sensitivity is (NRS07 Def. 2.1,
Prop. 3.1)::

    S*_β(x) = max_{k ≥ 0} e^{−kβ} · LS_k(x).

Entry points:

* :func:`smooth_from_profile` -- any query, from a callable giving (an upper bound
  on) ``LS_k``, with a safe early stop;
* :func:`smooth_sensitivity_quantile` -- the quantile ``x[max(0, ⌈q·n⌉ − 1)]``
  (0-based, the lower median for ``q = 1/2``) of data clipped to ``[lower, upper]``:
  substitution by the NRS07 §3.1 divide and conquer (vectorised level by level,
  O(n log n) worst case, near-linear after pruning); add/remove by an exact
  closed form of ``LS_k`` (O(n));
* :func:`smooth_sensitivity_quantile_quadratic` -- the O(n²) reference.

**Rounding contract.** Every function returns ``Ŝ`` with::

    S*_β(x) ≤ Ŝ(x) ≤ (1 + 2⁻³⁰) · S*_{β₀}(x),    β₀ = β − 2⁻²⁸,

and ``Ŝ`` is itself β-smooth (``Ŝ(x) ≤ e^β Ŝ(y)`` for neighbours). How:

1. All weights use ``β₀ = β − 2⁻²⁸ < β`` (``S*_{β₀} ≥ S*_β``, and ``S*_{β₀}`` is
   β₀-smooth). For ``β ≤ 2⁻²⁰`` the cap (``upper − lower`` or ``ls_cap``) is
   returned instead: a constant ``≥ LS_k`` for every ``k`` is a 0-smooth bound.
2. Each candidate ``e^{−kβ₀}·gap`` is computed in float64 with relative error at
   most ``η = (600 + 8)·2⁻⁵³`` (``fl(kβ₀)``: ``kβ₀·2⁻⁵³`` in the exponent, and
   ``kβ₀ ≤ 600`` for every candidate that can matter, see 4; ``exp``: 4 ulp;
   the gap and the product: 1 ulp each). The divide and conquer compares
   approximate values; a row whose column range was cut by ``D`` ancestors loses
   at most ``2Dη`` (log scale) by the quadrangle inequality, so the computed maximum
   is within ``e^{(2·64+1)η} < 1 + 2⁻³⁵`` of the true one.
3. The maximum is multiplied by ``1 + 2⁻³³`` and rounded up with ``nextafter``.
   Hence ``S*_{β₀} ≤ Ŝ ≤ (1 + 2⁻³⁰) S*_{β₀}``, and
   ``Ŝ(x) ≤ (1+2⁻³⁰) e^{β₀} S*_{β₀}(y) ≤ e^{β₀ + 2⁻³⁰} Ŝ(y) ≤ e^β Ŝ(y)``.
4. A floor ``F = max(cap·e^{−600}, 2⁻⁹⁶⁰)`` is applied (``Ŝ ≥ F``): a constant is
   0-smooth and the max of β-smooth functions is β-smooth. Candidates below ``F``
   are irrelevant, so no relevant candidate underflows or has ``kβ₀ > 600``.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.1, Prop. 3.1 and §3.1, the median).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Final, Literal, cast

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import fraction_ceil, to_fraction

__all__ = [
    "Relation",
    "quantile_index",
    "quantile_ls_k",
    "smooth_from_profile",
    "smooth_sensitivity_quantile",
    "smooth_sensitivity_quantile_quadratic",
]

Relation = Literal["substitution", "add_remove"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: subtracted from β before any weight is computed (reserve for rounding)
BETA_SLACK: Final = 2.0**-26
#: below this β the cap is returned (a constant is a valid smooth bound)
BETA_MIN: Final = 2.0**-20
#: relative inflation of a maximum of linear-space candidates (error ≤ 1300 ulp)
INFLATE: Final = 1.0 + 2.0**-33
#: absolute log-space error of one divide-and-conquer candidate
ETA_LOG: Final = 2.0**-38
#: dynamic range kept below the cap: candidates under cap·e^{−LOG_RANGE} are floored
LOG_RANGE: Final = 600.0
ABS_FLOOR: Final = 2.0**-960


# --------------------------------------------------------------------------- validation
def _beta(beta: object, owner: str) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float, Fraction, np.floating, np.integer)):
        raise InvalidArgument(owner, "beta", beta, "must be a real number")
    b = float(beta)
    if not math.isfinite(b) or b <= 0:
        raise InvalidArgument(owner, "beta", beta, "must be finite and > 0")
    return b


def _relation(relation: object, owner: str) -> Relation:
    if relation == "substitution":
        return "substitution"
    if relation == "add_remove":
        return "add_remove"
    raise InvalidArgument(owner, "relation", relation, "must be 'substitution' or 'add_remove'")


def _q(q: object, owner: str) -> Fraction:
    value = to_fraction(q, owner=owner, field="q")
    if not 0 <= value <= 1:
        raise InvalidArgument(owner, "q", q, "must be in [0, 1]")
    return value


def _bounds(lower: object, upper: object, owner: str) -> tuple[float, float]:
    lo = float(to_fraction(lower, owner=owner, field="lower"))
    hi = float(to_fraction(upper, owner=owner, field="upper"))
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise InvalidArgument(owner, "lower", lower, f"must be finite and <= upper={upper!r}")
    return lo, hi


def _data(values: npt.ArrayLike, lo: float, hi: float, owner: str) -> FloatArray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise InvalidArgument(owner, "sorted_values", f"(shape {x.shape})", "must be one-dimensional")
    if x.size and not np.all(np.isfinite(x)):
        raise InvalidArgument(owner, "sorted_values", "(non-finite entries)", "must be finite (drop NaN first)")
    x = np.clip(x, lo, hi)
    if x.size > 1 and bool(np.any(x[1:] < x[:-1])):
        raise InvalidArgument(owner, "sorted_values", "(unsorted)", "must be sorted ascending")
    return x


def quantile_index(q: Fraction, n: int) -> int:
    """The 1-based rank ``m(n) = max(1, ⌈q·n⌉)`` of the ``q``-quantile of ``n`` values.

    Examples:
        >>> quantile_index(Fraction(1, 2), 7), quantile_index(Fraction(1, 2), 8)
        (4, 4)
    """
    return max(1, fraction_ceil(q * n))


def _floor_of(cap: float) -> float:
    return max(cap * math.exp(-LOG_RANGE), ABS_FLOOR)


def _finish(best: float, cap: float) -> float:
    """Inflate a linear-space maximum by ``INFLATE``, floor it, round up."""
    out = max(best, _floor_of(cap)) * INFLATE
    return float(np.nextafter(out, math.inf))


def _finish_log(best_log: float, err_log: float, cap: float) -> float:
    """``exp(best_log + err_log)`` rounded up (exp: 4 ulp ≤ 2⁻⁴⁰ covered), floored."""
    out = math.exp(best_log + err_log + 2.0**-40) if best_log > -math.inf else 0.0
    return float(np.nextafter(max(out, _floor_of(cap)), math.inf))


# --------------------------------------------------------------------------- generic
def smooth_from_profile(ls_at: Callable[[int], float], beta: float, ls_cap: float, k_max: int) -> float:
    """β-smooth sensitivity ``max_k e^{−kβ} LS_k`` from a profile, rounded up.

    Evaluates ``ls_at(0), ls_at(1), …`` and stops at the first ``k`` with
    ``e^{−kβ₀}·ls_cap ≤ best`` (the largest term so far), or after ``k_max``.

    Why stopping is safe: ``ls_cap ≥ LS_j`` for all ``j``, so for every ``j ≥ k``
    ``e^{−jβ₀} LS_j ≤ e^{−kβ₀} ls_cap ≤ best``: no later term can exceed ``best``
    and the maximum is already exact. The test compares computed values; the
    computed ``e^{−kβ₀} ls_cap`` is within a factor ``1 + η`` of the true one and the
    returned value is ``best·(1 + 2⁻³³) ≥ best·(1 + η)``, so the true remainder
    is still below the returned value. If ``k_max`` is reached first, the constant
    ``e^{−(k_max+1)β₀}·ls_cap`` (which bounds every later term) is included: the max of
    a β₀-smooth function and a constant is β₀-smooth, so the result is still a
    valid smooth upper bound (NRS07 Prop. 3.1 applied to the truncated profile).

    Rounding: see the module docstring (β₀ = β − 2⁻²⁸, relative inflation
    ``1 + 2⁻³³``, result rounded up); the result never undershoots the true maximum.

    Args:
        ls_at: ``k ↦`` an upper bound on ``LS_k(x)``; must be nondecreasing in
            ``k`` across neighbours (``ls_at_x(k) ≤ ls_at_y(k + 1)``), as ``LS_k`` is.
        beta: the smoothing parameter ``β > 0``.
        ls_cap: an upper bound on ``LS_k`` for every ``k`` (e.g. the global sensitivity).
        k_max: the largest ``k`` evaluated (``≥ 0``).

    Returns:
        ``Ŝ`` with ``S*_β ≤ Ŝ ≤ (1 + 2⁻³⁰) S*_{β−2⁻²⁸}``; ``Ŝ`` is β-smooth.

    Raises:
        InvalidArgument: ``beta ≤ 0``, ``ls_cap`` negative or non-finite, ``k_max < 0``,
            or ``ls_at`` returns a value that is negative, non-finite or above ``ls_cap``.

    Examples:
        >>> round(smooth_from_profile(lambda k: float(min(k + 1, 10)), 0.5, 10.0, 100), 5)
        1.21306

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, Def. 2.1 and Prop. 3.1.
    """
    owner = "smooth_from_profile"
    b = _beta(beta, owner)
    cap = float(ls_cap)
    if not math.isfinite(cap) or cap < 0:
        raise InvalidArgument(owner, "ls_cap", ls_cap, "must be finite and >= 0")
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 0:
        raise InvalidArgument(owner, "k_max", k_max, "must be an int >= 0")
    if cap == 0:
        return 0.0
    if b <= BETA_MIN:
        return cap
    b0 = b - BETA_SLACK
    floor = _floor_of(cap)
    best = 0.0
    for k in range(int(k_max) + 1):
        weight = math.exp(-k * b0)
        if cap * weight <= max(best, floor):
            return _finish(best, cap)
        ls = float(ls_at(k))
        if not (math.isfinite(ls) and 0 <= ls <= cap):
            raise InvalidArgument(owner, "ls_at", f"ls_at({k})={ls!r}", f"must be in [0, ls_cap={cap!r}]")
        best = max(best, ls * weight)
    tail = cap * math.exp(-(int(k_max) + 1) * b0)
    return _finish(max(best, tail), cap)


# --------------------------------------------------------------------------- quantile LS_k
# Add/remove: the lattice path of the quantile (docs/mechanisms/smooth_sensitivity.md, section "Quantile LS_k under add/remove (_smooth_sens)").
# For a dataset B of M ≥ 2 rows whose gap B_(P+1) − B_(P) is the quantile's local
# sensitivity, P = P(M) = m(M − 1) and U = U(M) = M − P; each step M → M + 1 raises
# exactly one of P, U by one ("low" side at M when U rises, i.e. m(M) = m(M − 1)).
_INF_M: Final = 1 << 60


def _padded(x: FloatArray, lo: float, hi: float) -> FloatArray:
    """``x`` 1-based: ``x_0 = lower``, ``x_1..x_n`` the data, ``x_{n+1} = upper``."""
    return np.concatenate(([lo], x, [hi]))


def _int_dtype(q: Fraction, n: int) -> type:
    """``int64`` unless ``q``'s numerator or denominator times ``n`` could overflow.

    In that case the index arrays hold Python ints (``object`` dtype): the same
    exact floor/ceil arithmetic, slower. They are still annotated ``IntArray``.
    """
    big = (max(q.numerator, q.denominator) + 1) * (n + 4)
    return np.int64 if big < (1 << 61) else object


def _path_p(q: Fraction, m_arr: IntArray) -> IntArray:
    """``P(M) = max(1, ⌈q(M − 1)⌉)``, exact integers."""
    a, b = q.numerator, q.denominator
    return cast(IntArray, np.maximum(-((-a * (m_arr - 1)) // b), 1))


def _first_m_p(q: Fraction, j: IntArray) -> IntArray:
    """``Mp(j)``: the first ``M ≥ 2`` with ``P(M) ≥ j`` (``_INF_M`` if none)."""
    a, b = q.numerator, q.denominator
    if a == 0:
        return cast(IntArray, np.where(j <= 1, 2, _INF_M))
    return cast(IntArray, np.where(j <= 1, 2, (b * (j - 1)) // a + 2))


def _first_m_u(q: Fraction, v: IntArray) -> IntArray:
    """``Mu(V)``: the first ``M ≥ 2`` with ``U(M) ≥ V`` (``_INF_M`` if none)."""
    a, b = q.numerator, q.denominator
    if a == 0:  # P ≡ 1, U = M − 1
        return cast(IntArray, np.maximum(v + 1, 2))
    if a == b:  # P = M − 1, U ≡ 1
        return cast(IntArray, np.where(v <= 1, 2, _INF_M))
    # U(M) = ⌊(1 − q)(M − 1)⌋ + 1 for q > 0
    return cast(IntArray, np.where(v <= 1, 2, 1 - ((-b * (v - 1)) // (b - a))))


def _cost_add_remove(q: Fraction, n: int, j: IntArray, i: IntArray) -> IntArray:
    """``E(j, i)``: the least ``k`` with ``LS_k ≥ x_i − x_j`` through the gap ``(j, i)``.

    ``j < i`` are indices of the padded data (``x_0 = lower``, ``x_{n+1} = upper``).
    Exact integer arithmetic; ``_INF_M`` when the gap can never sit at the quantile.
    """
    v = n + 1 - i
    ms = np.maximum(_first_m_p(q, j), _first_m_u(q, v))
    finite = ms < _INF_M
    ms_f = np.where(finite, ms, 2)
    p = _path_p(q, ms_f)
    u = ms_f - p
    low = _path_p(q, ms_f + 1) == p
    bonus = np.where(low, p > j, u > v).astype(np.int64)
    cost = 2 * (i - j) + ms_f - n - 2 - bonus
    return cast(IntArray, np.where(finite, cost, _INF_M).astype(np.int64))


def _singletons(x: FloatArray, lo: float, hi: float) -> tuple[list[float], list[int]]:
    """Gaps through the empty dataset (``f(∅) = lower``) under add/remove."""
    n = x.size
    gaps, costs = [hi - lo], [n]
    if n:
        gaps.append(float(x[-1]) - lo)
        costs.append(n - 1)
    return gaps, costs


def quantile_ls_k(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    k: int,
    relation: Relation = "substitution",
) -> float:
    """Exact ``LS_k`` of the quantile ``x[max(0, ⌈q·n⌉ − 1)]`` (reference, O(n²) add/remove).

    Substitution (NRS07 §3.1): ``LS_k = max_{0≤t≤k+1} (x_{m+t} − x_{m+t−k−1})``,
    1-based, ``x_i = lower`` for ``i < 1`` and ``upper`` for ``i > n``, ``m = m(n)``.
    Add/remove: ``LS_k = max {x_i − x_j : E(j, i) ≤ k}`` with the cost ``E`` derived
    in ``docs/mechanisms/smooth_sensitivity.md``, section "Quantile LS_k under add/remove (_smooth_sens)" (and the two gaps through the
    empty dataset).

    Args:
        sorted_values: the data, sorted ascending (clipped to ``[lower, upper]`` here).
        q: the quantile level in ``[0, 1]`` (exact: int, Fraction or decimal string).
        lower: lower clipping bound.
        upper: upper clipping bound.
        k: the distance ``k ≥ 0``.
        relation: ``"substitution"`` or ``"add_remove"``.

    Returns:
        ``LS_k(x)`` (exact up to the float subtraction of two data values).

    Raises:
        InvalidArgument: on invalid arguments.

    Examples:
        >>> quantile_ls_k(range(7), "1/2", 0, 10, 0), quantile_ls_k(range(7), "1/2", 0, 10, 3)
        (1.0, 7.0)
        >>> quantile_ls_k(range(7), "1/2", 0, 10, 0, "add_remove")
        1.0

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, §3.1.
    """
    owner = "quantile_ls_k"
    qq = _q(q, owner)
    lo, hi = _bounds(lower, upper, owner)
    rel = _relation(relation, owner)
    x = _data(sorted_values, lo, hi, owner)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InvalidArgument(owner, "k", k, "must be an int >= 0")
    n = x.size
    xp = _padded(x, lo, hi)
    if rel == "substitution":
        if n == 0:
            return 0.0  # no neighbour exists: the dataset stays empty
        m = quantile_index(qq, n)
        t = np.arange(0, int(k) + 2)
        top = np.minimum(m + t, n + 1)
        bot = np.clip(m + t - int(k) - 1, 0, n + 1)
        return float(np.max(xp[top] - xp[bot]))
    best = 0.0
    gaps, costs = _singletons(x, lo, hi)
    for g, c in zip(gaps, costs):
        if c <= k:
            best = max(best, g)
    dt = _int_dtype(qq, n)
    for j in range(n + 1):
        i: IntArray = np.arange(j + 1, n + 2, dtype=dt)
        e = _cost_add_remove(qq, n, np.full(i.size, j, dtype=dt), i)
        ok = e <= k
        if ok.any():
            best = max(best, float(np.max(xp[i[ok].astype(np.int64)] - xp[j])))
    return best


# --------------------------------------------------------------------------- smooth sensitivity
def _prepare(
    owner: str, sorted_values: npt.ArrayLike, q: object, lower: object, upper: object, beta: object, relation: object
) -> tuple[FloatArray, Fraction, float, float, float, Relation]:
    qq = _q(q, owner)
    lo, hi = _bounds(lower, upper, owner)
    b = _beta(beta, owner)
    rel = _relation(relation, owner)
    x = _data(sorted_values, lo, hi, owner)
    return x, qq, lo, hi, b, rel


def _window(cap: float, lower_bound: float, beta0: float) -> int:
    """``K`` such that every candidate at distance ``> K`` is below the result.

    A candidate at distance ``k`` is at most ``cap·e^{−kβ₀}``; the result is at
    least ``max(L, F)`` for any computed candidate ``L`` (taken ``(1 − 2⁻³⁰)·L`` to
    absorb its rounding) and the floor ``F``. Two extra steps absorb the rounding
    of the logarithms.
    """
    ref = max(lower_bound * (1 - 2.0**-30), _floor_of(cap))
    return int(math.ceil((math.log(cap) - math.log(ref)) / beta0)) + 2


def smooth_sensitivity_quantile_quadratic(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    beta: float,
    relation: Relation = "substitution",
) -> float:
    """O(n²) reference for :func:`smooth_sensitivity_quantile` (same rounding contract).

    Substitution: ``max_{0≤k≤n} e^{−kβ₀} LS_k`` with ``LS_k`` from the NRS07 §3.1
    formula (``LS_k = upper − lower`` for ``k ≥ n``). Add/remove: the maximum over
    all gaps ``(j, i)`` of ``e^{−β₀ E(j, i)} (x_i − x_j)``.

    Args:
        sorted_values: the data, sorted ascending.
        q: quantile level in ``[0, 1]``.
        lower: lower clipping bound.
        upper: upper clipping bound.
        beta: smoothing parameter ``β > 0``.
        relation: ``"substitution"`` or ``"add_remove"``.

    Returns:
        ``Ŝ`` with ``S*_β ≤ Ŝ ≤ (1 + 2⁻²⁸) max(S*_{β₀}, F)``, β-smooth.

    Raises:
        InvalidArgument: on invalid arguments.

    Examples:
        >>> round(smooth_sensitivity_quantile_quadratic(range(7), "1/2", 0, 10, 0.5), 5)
        1.56191

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, Def. 2.1, Prop. 3.1, §3.1.
    """
    x, qq, lo, hi, b, rel = _prepare(
        "smooth_sensitivity_quantile_quadratic", sorted_values, q, lower, upper, beta, relation
    )
    cap = hi - lo
    if cap == 0:
        return 0.0
    if b <= BETA_MIN:
        return cap
    b0 = b - BETA_SLACK
    n = x.size
    xp = _padded(x, lo, hi)
    best = 0.0
    if rel == "substitution":
        if n == 0:
            return _finish(0.0, cap)
        m = quantile_index(qq, n)
        for k in range(n + 1):
            t = np.arange(0, k + 2)
            ls = float(np.max(xp[np.minimum(m + t, n + 1)] - xp[np.clip(m + t - k - 1, 0, n + 1)]))
            best = max(best, ls * math.exp(-k * b0))
        return _finish(best, cap)
    gaps, costs = _singletons(x, lo, hi)
    for g, c in zip(gaps, costs):
        best = max(best, g * math.exp(-c * b0))
    dt = _int_dtype(qq, n)
    for j in range(n + 1):
        i: IntArray = np.arange(j + 1, n + 2, dtype=dt)
        e = _cost_add_remove(qq, n, np.full(i.size, j, dtype=dt), i)
        ok = e < _INF_M
        if ok.any():
            vals = (xp[i[ok].astype(np.int64)] - xp[j]) * np.exp(-b0 * e[ok].astype(np.float64))
            best = max(best, float(np.max(vals)))
    return _finish(best, cap)


def smooth_sensitivity_quantile(
    sorted_values: npt.ArrayLike,
    q: object,
    lower: object,
    upper: object,
    beta: float,
    relation: Relation = "substitution",
) -> float:
    """β-smooth sensitivity of the quantile ``x[max(0, ⌈q·n⌉ − 1)]`` of clipped data.

    The data must be sorted; values are clipped to ``[lower, upper]`` (the clip
    preserves the order). ``q = 1/2`` is the (lower) median.

    Substitution (``n`` public): NRS07 §3.1. With 1-based ``x`` padded by
    ``x_0 = lower``, ``x_{n+1} = upper`` and ``m = max(1, ⌈qn⌉)``,
    ``S* = max_{j ≤ m ≤ i, j < i} e^{−β(i−j−1)} (x_i − x_j)``. Only pairs with
    ``i − j − 1 ≤ K`` can matter, where ``e^{−Kβ}(upper − lower)`` falls below a
    cheap lower bound (the one-sided gaps ``x_{m+k+1} − x_m`` and
    ``x_m − x_{m−k−1}``); on that window the row argmax ``i*(j)`` is nondecreasing
    (``log(x_i − x_j)`` is supermodular), so a divide and conquer over rows, run
    level by level with numpy, costs O(W log W) for a window of ``W ≤ n + 2`` rows.

    Add/remove: ``S* = max_{j < i} e^{−β E(j, i)} (x_i − x_j)`` over the exact
    cost ``E`` of ``docs/mechanisms/smooth_sensitivity.md``, section "Quantile LS_k under add/remove (_smooth_sens)" (plus the two gaps
    through the empty dataset), evaluated exactly on the window of pairs with
    ``E ≤ K`` (``i − j ≤ K + 2``; O(n + W·K) time).

    Args:
        sorted_values: the data, sorted ascending (NaN not allowed).
        q: quantile level in ``[0, 1]`` (exact: int, Fraction or decimal string).
        lower: lower clipping bound.
        upper: upper clipping bound.
        beta: smoothing parameter ``β > 0``.
        relation: ``"substitution"`` (default) or ``"add_remove"``.

    Returns:
        ``Ŝ`` with ``S*_β ≤ Ŝ ≤ (1 + 2⁻²⁸) max(S*_{β₀}, F)`` (module docstring);
        ``Ŝ`` is β-smooth, hence usable wherever ``S*_β`` is.

    Raises:
        InvalidArgument: unsorted or non-finite data, ``lower > upper``,
            ``q ∉ [0, 1]``, ``β ≤ 0`` or an unknown relation.

    Examples:
        >>> [round(smooth_sensitivity_quantile(range(7), "1/2", 0, 10, b), 5) for b in (0.1, 0.5, 1)]
        [5.48812, 1.56191, 1.0]

    References:
        Nissim, Raskhodnikova, Smith, STOC 2007, Def. 2.1, Prop. 3.1, §3.1.
    """
    x, qq, lo, hi, b, rel = _prepare("smooth_sensitivity_quantile", sorted_values, q, lower, upper, beta, relation)
    cap = hi - lo
    if cap == 0:
        return 0.0
    if b <= BETA_MIN:
        return cap
    b0 = b - BETA_SLACK
    if rel == "substitution":
        return _substitution_fast(x, qq, lo, hi, b0)
    return _add_remove_fast(x, qq, lo, hi, b0)


def _substitution_fast(x: FloatArray, q: Fraction, lo: float, hi: float, b0: float) -> float:
    n = x.size
    cap = hi - lo
    if n == 0:
        return _finish(0.0, cap)
    m = quantile_index(q, n)
    xp = _padded(x, lo, hi)
    # cheap lower bound: one-sided gaps (t = k + 1 and t = 0 in NRS07 §3.1)
    kk = np.arange(0, min(n, int(LOG_RANGE / b0) + 2) + 1)
    one_sided = np.maximum(xp[np.minimum(m + kk + 1, n + 1)] - xp[m], xp[m] - xp[np.maximum(m - kk - 1, 0)])
    low_bound = float(np.max(one_sided * np.exp(-b0 * kk)))
    big_k = _window(cap, low_bound, b0)
    r0, r1 = max(0, m - big_k - 1), m  # rows j (lower end)
    c0, c1 = m, min(n + 1, m + big_k + 1)  # columns i (upper end)
    best_log, depth = _monotone_dc(xp, r0, r1, c0, c1, b0)
    best_log = max(best_log, math.log(low_bound) if low_bound > 0 else -math.inf)
    return _finish_log(best_log, (2 * depth + 1) * ETA_LOG, cap)


def _monotone_dc(xp: FloatArray, r0: int, r1: int, c0: int, c1: int, b0: float) -> tuple[float, int]:
    """``max_{r0≤j≤r1, c0≤i≤c1} log(x_i − x_j) − β₀(i − j − 1)`` and the recursion depth.

    Rows are processed level by level: each level takes the middle row of every
    pending block, finds its largest argmax over the block's columns with one
    segmented reduction, and splits the block there (rows above use columns up to
    the argmax, rows below from it on). Each level touches at most
    ``(c1 − c0 + 1) + #blocks`` cells; there are ``⌈log₂(r1 − r0 + 2)⌉`` levels.
    """
    lo_r = np.array([r0], dtype=np.int64)
    hi_r = np.array([r1], dtype=np.int64)
    lo_c = np.array([c0], dtype=np.int64)
    hi_c = np.array([c1], dtype=np.int64)
    best = -math.inf
    depth = 0
    with np.errstate(divide="ignore"):
        while lo_r.size:
            depth += 1
            mid = (lo_r + hi_r) // 2
            lens = hi_c - lo_c + 1
            starts = np.zeros(lens.size, dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            total = int(starts[-1] + lens[-1])
            seg = np.repeat(np.arange(lens.size), lens)
            col = lo_c[seg] + (np.arange(total) - starts[seg])
            row = mid[seg]
            g = np.log(xp[col] - xp[row]) - b0 * (col - row - 1).astype(np.float64)
            seg_max = np.maximum.reduceat(g, starts)
            best = max(best, float(seg_max.max()))
            pos = np.where(g == seg_max[seg], np.arange(total), -1)
            arg = col[np.maximum.reduceat(pos, starts)]
            # children: rows above the middle (smaller j) take columns ≤ arg
            up = lo_r <= mid - 1
            down = mid + 1 <= hi_r
            lo_r, hi_r, lo_c, hi_c = (
                np.concatenate((lo_r[up], (mid + 1)[down])),
                np.concatenate(((mid - 1)[up], hi_r[down])),
                np.concatenate((lo_c[up], arg[down])),
                np.concatenate((arg[up], hi_c[down])),
            )
    return best, depth


def _add_remove_fast(x: FloatArray, q: Fraction, lo: float, hi: float, b0: float) -> float:
    n = x.size
    cap = hi - lo
    xp = _padded(x, lo, hi)
    gaps, costs = _singletons(x, lo, hi)
    best = max(g * math.exp(-c * b0) for g, c in zip(gaps, costs))
    dt = _int_dtype(q, n)
    # cheap lower bound: adjacent gaps (j, j + 1)
    j_all: IntArray = np.arange(0, n + 1, dtype=dt)
    e_adj = _cost_add_remove(q, n, j_all, j_all + 1)
    ok = e_adj < _INF_M
    if ok.any():
        best = max(best, float(np.max(np.diff(xp)[ok] * np.exp(-b0 * e_adj[ok].astype(np.float64)))))
    big_k = _window(cap, best, b0)
    # relevant gaps have E ≤ K, hence (E ≥ i − j − 2, E ≥ Mp(j) − n − 1, E ≥ Mu(V) − n − 1):
    # i − j ≤ K + 2, Mp(j) ≤ n + 1 + K and Mu(n + 1 − i) ≤ n + 1 + K
    limit = n + 1 + big_k
    mp = _first_m_p(q, j_all)
    j_hi = int(np.searchsorted(mp.astype(np.float64), limit, side="right")) - 1
    v_min = np.maximum(n - 1 - j_all - big_k, 0)
    mu = _first_m_u(q, v_min)
    j_lo = int(np.argmax(mu <= limit)) if bool(np.any(mu <= limit)) else n + 1
    width = big_k + 2
    rows_per_chunk = max(1, (1 << 22) // max(width, 1))
    for start in range(j_lo, j_hi + 1, rows_per_chunk):
        js = np.arange(start, min(j_hi + 1, start + rows_per_chunk), dtype=np.int64)
        jj = np.repeat(js, width)
        ii = jj + np.tile(np.arange(1, width + 1, dtype=np.int64), js.size)
        keep = ii <= n + 1
        jj, ii = jj[keep], ii[keep]
        e = _cost_add_remove(q, n, jj.astype(dt), ii.astype(dt))
        fin = e < _INF_M
        if fin.any():
            vals = (xp[ii[fin]] - xp[jj[fin]]) * np.exp(-b0 * e[fin].astype(np.float64))
            best = max(best, float(np.max(vals)))
    return _finish(best, cap)
