"""Exact one-sided Clopper–Pearson bounds on a binomial proportion, for the empirical auditor.

From ``k`` successes in ``n`` independent trials, :func:`clopper_pearson_lower` is a
``(1 − α)`` lower confidence bound on ``p``: the α-quantile of ``Beta(k, n − k + 1)``
(Clopper and Pearson 1934), and :func:`clopper_pearson_upper` the upper one, the
``(1 − α)``-quantile of ``Beta(k + 1, n − k)``. Both are exact (they never undercover);
the quantiles are found by bisection on :func:`regularized_beta` and the bracket end
away from the estimate is returned, widened by a relative ``1e-9``, so a lower bound is
never rounded up nor an upper bound down.

:func:`regularized_beta` evaluates ``I_x(a, b)`` with the prefactor in mpmath (mpmath
ships with sympy; scipy is not a runtime dependency) and the continued fraction of
Numerical Recipes §6.4.

References:
    C. J. Clopper, E. S. Pearson. The Use of Confidence or Fiducial Limits Illustrated
    in the Case of the Binomial. Biometrika 26(4), 1934.
    W. H. Press et al. Numerical Recipes, 3rd ed., §6.4 (incomplete beta function).
"""

from __future__ import annotations

from typing import Literal

from dpalg._errors import InvalidArgument

__all__ = ["clopper_pearson_lower", "clopper_pearson_upper", "regularized_beta"]


def regularized_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (relative error about 1e-13).

    I_x(a, b) = x^a (1 − x)^b / (a·B(a, b)) · CF, with the prefactor computed in
    mpmath (40 digits, ``loggamma``) and CF the continued fraction of Numerical
    Recipes §6.4 (modified Lentz), which converges in O(√max(a, b)) steps below
    the mean; above it, I_x(a, b) = 1 − I_{1−x}(b, a). mpmath's own ``betainc``
    is the reference in the tests, but it cannot converge for the large
    parameters of an audit (its series alternates). Clopper–Pearson bounds are
    widened by a relative 1e-9, far above this error.

    Examples:
        >>> round(regularized_beta(2, 3, 0.5), 12)
        0.6875
    """
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - regularized_beta(b, a, 1.0 - x)
    import mpmath

    with mpmath.workdps(40):
        ma, mb, mx = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(x)
        log_pre = ma * mpmath.log(mx) + mb * mpmath.log1p(-mx) - mpmath.log(ma) - (
            mpmath.loggamma(ma) + mpmath.loggamma(mb) - mpmath.loggamma(ma + mb)
        )
        pre = float(mpmath.exp(log_pre))
    if pre == 0.0:
        return 0.0
    cf = _beta_continued_fraction(a, b, x)
    if cf is None:  # pragma: no cover - not reached below the mean; mpmath as the fallback
        import mpmath

        with mpmath.workdps(40):
            return float(mpmath.betainc(a, b, 0, x, regularized=True))
    return min(1.0, pre * cf)


def _beta_continued_fraction(a: float, b: float, x: float) -> float | None:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            return h
    return None


def _beta_quantile(a: float, b: float, target: float, side: Literal["low", "high"]) -> float:
    """x with I_x(a, b) = target by bisection; returns the bracket end on ``side``."""
    lo, hi = 0.0, 1.0
    for _ in range(400):
        mid = (lo + hi) / 2
        if regularized_beta(a, b, mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    # the bracket end away from the estimate: a lower bound is never rounded up, nor an upper one down
    return lo * (1 - 1e-9) if side == "low" else min(1.0, hi * (1 + 1e-9))


def clopper_pearson_lower(k: int, n: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson lower bound on p from k successes in n trials.

    The α-quantile of Beta(k, n − k + 1) (0 when k = 0), rounded down.

    Examples:
        >>> clopper_pearson_lower(0, 100, 0.05)
        0.0
        >>> round(clopper_pearson_lower(50, 100, 0.05), 4)
        0.4136
    """
    _check_counts("clopper_pearson_lower", k, n, alpha)
    if k == 0:
        return 0.0
    if k == n:
        return float(alpha ** (1 / n))  # closed form; rounding is far below the bisection tolerance
    return _beta_quantile(k, n - k + 1, alpha, "low")


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson upper bound on p from k successes in n trials.

    The (1 − α)-quantile of Beta(k + 1, n − k) (1 when k = n), rounded up.

    Examples:
        >>> round(clopper_pearson_upper(0, 100, 0.05), 4)
        0.0295
    """
    _check_counts("clopper_pearson_upper", k, n, alpha)
    if k == n:
        return 1.0
    if k == 0:
        return min(1.0, float(1 - alpha ** (1 / n)) * (1 + 1e-12))
    return _beta_quantile(k + 1, n - k, 1 - alpha, "high")


def _check_counts(owner: str, k: int, n: int, alpha: float) -> None:
    if not (isinstance(n, int) and n >= 1 and isinstance(k, int) and 0 <= k <= n):
        raise InvalidArgument(owner, "k/n", (k, n), "must be integers with 0 <= k <= n and n >= 1")
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise InvalidArgument(owner, "alpha", alpha, "must be in (0, 1)")
