"""The shifted loss ``ℓ*`` of the shifted inverse mechanism, as runs over a huge integer domain.

For an integer output domain ``Y = [y_lo, y_hi]`` (up to ``2**64`` candidates,
Python ints) and a shift ``τ``, the exponential mechanism of Fang, Dong and Yi
scores each ``y`` by (seed 004, footnote 4, Eq. B)::

    ℓ*(x, y) = max{ ℓ(x, y) − τ,  τ − ℓ̄(x, y) }

where ``ℓ`` and ``ℓ̄`` are the losses of :class:`~dpalg.sensitivity._down_sens.UserLoss`
(``ℓ̄ = +∞`` when ``y <= f(∅)``, and then ``ℓ* = ℓ − τ``). Both have global
sensitivity 1 under add/remove of one user with all their rows (Prop. 3), so
``ℓ*`` has sensitivity 1 too (a max of 1-Lipschitz functions).

``ℓ`` only changes at the thresholds ``t`` (between ``t − 1`` and ``t``) and
``ℓ̄`` only after the thresholds ``s`` (between ``s`` and ``s + 1``), so ``Y``
splits into at most ``2n + 2`` runs on which ``ℓ*`` is constant;
:func:`shifted_loss_runs` builds them from the breakpoints with one
``np.unique`` and two ``np.searchsorted`` -- it never enumerates ``Y``. The
runs, with their lengths as counts, feed ``dpalg.noise.sample_exp_runs``.

:func:`shift_tau` computes ``τ = ⌈(2/ε)·ln(|Y|/β)⌉`` of Theorem 4 exactly.

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. CCS 2022.
    T. Steinke. Beyond Local Sensitivity via Down Sensitivity (seed 004,
    Theorem 4 and footnote 4).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil, fraction_floor, positive, to_fraction
from dpalg.sensitivity._down_sens import IntArray, UserLoss

__all__ = ["shift_tau", "shifted_loss_at", "shifted_loss_runs"]

_CLAMP: Final = 1 << 62
_MAX_TAU: Final = 1 << 60


def _int(value: object, owner: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(owner, field, value, "must be an int")
    return int(value)


def shift_tau(epsilon: ExactLike, beta: ExactLike, domain_size: int) -> int:
    """``τ = ⌈(2/ε)·ln(|Y|/β)⌉`` (seed 004, Theorem 4), computed rigorously.

    The real number is enclosed in an interval with outward-rounded interval
    arithmetic (a private mpmath interval context) whose precision doubles
    until both ends have the same ceiling. It is never an integer (``ln`` of a
    rational other than 1 is irrational), so this terminates; if the precision
    cap were ever reached the *upper* end's ceiling is returned, which only
    strengthens the utility guarantee (privacy does not depend on ``τ``).

    Args:
        epsilon: ``ε > 0`` (exact: int, Fraction or decimal string).
        beta: failure probability, ``0 < β < 1``.
        domain_size: ``|Y| >= 1``.

    Returns:
        ``τ`` as a Python int.

    Raises:
        InvalidArgument: on a parameter outside its range.

    Examples:
        >>> shift_tau(1, "0.1", 2**20)
        33
        >>> shift_tau("1/2", "1e-6", 2**64)
        233

    References:
        Fang, Dong, Yi, CCS 2022; seed 004, Theorem 4.
    """
    eps = positive(epsilon, owner="shift_tau", field="epsilon")
    b = to_fraction(beta, owner="shift_tau", field="beta")
    if not 0 < b < 1:
        raise InvalidArgument("shift_tau", "beta", beta, "must be in (0, 1)")
    size = _int(domain_size, "shift_tau", "domain_size")
    if size < 1:
        raise InvalidArgument("shift_tau", "domain_size", size, "must be >= 1")
    arg = Fraction(size) / b  # > 1
    coef = 2 / eps
    import mpmath  # imported here: keeps mpmath out of the cold start
    from mpmath.libmp import to_rational

    ctx = mpmath.iv.__class__()  # a private context: no global precision state
    prec = 64
    while True:
        ctx.prec = prec
        x = ctx.mpf(arg.numerator) / ctx.mpf(arg.denominator)
        c = ctx.mpf(coef.numerator) / ctx.mpf(coef.denominator)
        v = c * ctx.log(x)
        lo_p, lo_q = to_rational(v._mpi_[0])
        hi_p, hi_q = to_rational(v._mpi_[1])
        lo, hi = fraction_ceil(Fraction(lo_p, lo_q)), fraction_ceil(Fraction(hi_p, hi_q))
        if lo == hi or prec >= 1 << 14:
            return hi
        prec *= 2


def _loss_of(loss: UserLoss | npt.ArrayLike) -> UserLoss:
    if isinstance(loss, UserLoss):
        return loss
    return UserLoss.user_sum(loss)


def _tau(tau: object, owner: str) -> int:
    t = _int(tau, owner, "tau")
    if not 0 <= t <= _MAX_TAU:
        raise InvalidArgument(owner, "tau", t, "must be in [0, 2**60]")
    return t


def shifted_loss_at(loss: UserLoss | npt.ArrayLike, y: int, tau: int) -> int:
    """``ℓ*(x, y) = max(ℓ − τ, τ − ℓ̄)`` at one candidate, in ``O(log n)``.

    Examples:
        >>> loss = UserLoss.user_sum([5.0, 1.0, 3.0])
        >>> [shifted_loss_at(loss, y, 1) for y in range(0, 10)]
        [2, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    """
    ul = _loss_of(loss)
    t = _tau(tau, "shifted_loss_at")
    base = ul.loss(y) - t
    strict = ul.loss_strict(y)
    return base if strict is None else max(base, t - strict)


def shifted_loss_runs(
    loss: UserLoss | npt.ArrayLike, y_lo: int, y_hi: int, tau: int
) -> tuple[list[int], list[int], npt.NDArray[np.int64]]:
    """Partition ``Y = [y_lo, y_hi]`` into maximal runs on which ``ℓ*`` is constant.

    Args:
        loss: a :class:`UserLoss`, or per-user contributions of a user sum.
        y_lo, y_hi: the integer domain (Python ints, any size); ``y_lo`` must be
            at least ``loss.min_y`` (below ``f(∅)`` the loss is infinite).
        tau: the shift ``τ >= 0`` (see :func:`shift_tau`).

    Returns:
        ``(starts, lengths, losses)``: run ``j`` is ``[starts[j], starts[j] +
        lengths[j])`` with ``ℓ* = losses[j]``; runs are consecutive, cover ``Y``
        exactly, adjacent runs differ in loss, and there are at most
        ``2·n_units + 2`` of them. Cost ``O(n log n)``, independent of ``|Y|``.

    Raises:
        InvalidArgument: if ``y_lo > y_hi``, ``y_lo < loss.min_y`` or ``tau`` is
            out of range.

    Examples:
        >>> shifted_loss_runs([5.0, 1.0, 3.0], 0, 2**64 - 1, 1)
        ([0, 1, 4, 10], [1, 3, 6, 18446744073709551606], array([2, 1, 0, 1]))

    Privacy guarantee:
        Not a mechanism. ``ℓ*`` has global sensitivity 1 for every ``y`` under
        add/remove of one user with all their rows (seed 004, Prop. 3 and
        footnote 4), so the exponential mechanism with utility ``−ℓ*`` and
        ``γ = ε/2`` is ε-DP (Theorem 4).
    """
    ul = _loss_of(loss)
    lo = _int(y_lo, "shifted_loss_runs", "y_lo")
    hi = _int(y_hi, "shifted_loss_runs", "y_hi")
    t = _tau(tau, "shifted_loss_runs")
    if lo > hi:
        raise InvalidArgument("shifted_loss_runs", "y_lo", lo, f"must be <= y_hi={hi}")
    if lo < ul.min_y:
        raise InvalidArgument("shifted_loss_runs", "y_lo", lo, f"must be >= {ul.min_y} (f of the empty dataset)")
    ceil_t, floor_s = ul.breakpoints()
    big = ceil_t.dtype == object or floor_s.dtype == object
    # head: y_lo itself, and y_lo + 1 when ℓ̄ turns finite there (y_lo == f(∅))
    head = [lo]
    if fraction_floor(ul.floor) == lo and lo + 1 <= hi:
        head.append(lo + 1)
    head_loss = [shifted_loss_at(ul, y, t) for y in head]
    after = head[-1]
    cand: IntArray
    if big:
        merged = sorted({int(v) for v in ceil_t.tolist()} | {int(v) + 1 for v in floor_s.tolist()})
        cand = np.array([v for v in merged if after < v <= hi], dtype=object)
    else:
        # two sorted inputs: a stable sort (timsort) merges them in linear time
        ci64 = np.sort(np.concatenate([ceil_t, floor_s + 1]), kind="stable")
        if ci64.size:
            ci64 = ci64[np.concatenate([[True], ci64[1:] != ci64[:-1]])]
        a, b = min(max(after, -_CLAMP), _CLAMP), min(max(hi, -_CLAMP), _CLAMP)
        cand = ci64[(ci64 > a) & (ci64 <= b)]
    inner_loss = np.maximum(ul.losses(cand) - t, t - ul.losses(cand, strict=True)) if cand.size else np.zeros(0, np.int64)
    losses = np.concatenate([np.array(head_loss, dtype=np.int64), inner_loss.astype(np.int64)])
    keep = np.ones(losses.size, dtype=np.bool_)
    keep[1:] = losses[1:] != losses[:-1]
    n_head = len(head)
    head_kept = [y for y, k in zip(head, keep[:n_head].tolist()) if k]
    inner_kept = cand[keep[n_head:]]
    starts: list[int] = head_kept + [int(v) for v in inner_kept.tolist()]
    if not big and inner_kept.size:
        # inner starts are int64 within ±2**61 + 1: their gaps fit in int64
        gaps: list[int] = np.diff(inner_kept.astype(np.int64)).tolist()
        lengths = [b2 - a2 for a2, b2 in zip(head_kept, head_kept[1:] + [starts[len(head_kept)]])]
        lengths += gaps + [hi + 1 - starts[-1]]
    else:
        lengths = [b2 - a2 for a2, b2 in zip(starts, starts[1:] + [hi + 1])]
    return starts, lengths, losses[keep]
