"""The shifted loss ``ℓ*`` of the shifted inverse mechanism, as maximal runs over a huge integer domain.

For an integer output domain ``Y = [y_lo, y_hi]`` (up to ``2**64`` candidates and
beyond: Python ints) and a shift ``τ``, the exponential-mechanism form of the
shifted inverse mechanism (Fang, Dong and Yi; seed 004, footnote 4, Eq. B)
scores each candidate by::

    ℓ*(x, y) = max{ ℓ(x, y) − τ,  τ − ℓ̄(x, y) }

with ``ℓ`` and ``ℓ̄`` from :class:`~dpalg.sensitivity._down.MonotoneLoss`; where
``ℓ̄ = +∞`` (``y <= f(∅)``, a public condition) ``ℓ* = ℓ − τ``. Both losses have
global sensitivity 1 under "add or remove one user with all their rows" (seed
Proposition 3), so ``ℓ*``, a maximum of 1-Lipschitz functions, has sensitivity 1.

``ℓ`` only changes between ``t − 1`` and ``t`` for a ceiling threshold ``t``, and
``ℓ̄`` only between ``s`` and ``s + 1`` for a floor threshold ``s`` (and where it
turns finite, at ``⌊f(∅)⌋ + 1``). :func:`shifted_loss_runs` therefore takes the
run starts from ``{y_lo} ∪ {t} ∪ {s + 1}``, evaluates ``ℓ*`` once per start with
a vectorised ``np.searchsorted`` and merges equal neighbours: at most
``2n + 2`` maximal runs, ``O(n log n)`` time, ``Y`` is never enumerated.
The mechanism then samples a run with weight ``length · exp(−(ε/2)·ℓ*)`` with an
exact sampler (``dpalg.noise``; scores there must be ``>= 0``, so pass
``ℓ* + τ``, which is ``>= 0`` and leaves the distribution unchanged) and a
uniform point inside it.

:func:`shift_tau` computes ``τ = ⌈(2/ε)·ln(|Y|/β)⌉`` (seed Theorem 4) exactly.

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. ACM CCS 2022.
    T. Steinke. Beyond Local Sensitivity via Down Sensitivity.
    DifferentialPrivacy.org, 2023 (seed 004: Proposition 3, Theorem 4, footnote 4).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import mpmath
import numpy as np
import numpy.typing as npt
from mpmath.libmp import to_rational

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil, positive, to_fraction
from dpalg.sensitivity._down import MonotoneLoss

__all__ = ["loss_at", "shift_tau", "shifted_loss_at", "shifted_loss_runs"]

_CLAMP: Final = (1 << 62) + 1  # int64 thresholds (and t + 1) lie within ±_CLAMP
_MAX_PREC: Final = 1 << 14


def _int(value: object, owner: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(owner, field, value, "must be an int")
    return int(value)


def _tau(value: object, owner: str) -> int:
    t = _int(value, owner, "tau")
    if t < 0:
        raise InvalidArgument(owner, "tau", t, "must be >= 0")
    return t


def shift_tau(epsilon: ExactLike, beta: ExactLike, domain_size: int) -> int:
    """``τ = ⌈(2/ε)·ln(|Y|/β)⌉`` of seed Theorem 4, rounded up rigorously.

    The real number is enclosed with outward-rounded interval arithmetic (a
    private mpmath interval context, no global state) whose precision doubles
    until both ends have the same ceiling. ``ln`` of a rational ``> 1`` is
    irrational, so the value is never an integer and this terminates; at the
    precision cap the ceiling of the *upper* end is returned. Privacy never
    depends on ``τ`` (only utility does), and rounding up only strengthens the
    utility statement.

    Args:
        epsilon: ``ε > 0``, exact (int, Fraction, decimal string).
        beta: the failure probability, ``0 < β < 1``.
        domain_size: ``|Y| >= 1`` (a Python int of any size).

    Returns:
        ``τ >= 1`` as a Python int.

    Raises:
        InvalidArgument: on a parameter outside its range.

    Examples:
        >>> shift_tau(1, "0.1", 2**20)
        33
        >>> shift_tau("1/2", "1e-6", 2**64)
        233

    References:
        Fang, Dong, Yi, CCS 2022; seed 004, Theorem 4 and footnote 4.
    """
    owner = "shift_tau"
    eps = positive(epsilon, owner=owner, field="epsilon")
    b = to_fraction(beta, owner=owner, field="beta")
    if not 0 < b < 1:
        raise InvalidArgument(owner, "beta", beta, "must be in (0, 1)")
    size = _int(domain_size, owner, "domain_size")
    if size < 1:
        raise InvalidArgument(owner, "domain_size", size, "must be >= 1")
    arg = Fraction(size) / b  # > 1, so the logarithm is > 0 and irrational
    coef = 2 / eps
    ctx = type(mpmath.iv)()
    prec = 64
    while True:
        ctx.prec = prec
        x = ctx.mpf(arg.numerator) / ctx.mpf(arg.denominator)
        v = (ctx.mpf(coef.numerator) / ctx.mpf(coef.denominator)) * ctx.log(x)
        lo = fraction_ceil(Fraction(*to_rational(v._mpi_[0])))
        hi = fraction_ceil(Fraction(*to_rational(v._mpi_[1])))
        if lo == hi or prec >= _MAX_PREC:
            return int(hi)
        prec *= 2


def loss_at(loss: MonotoneLoss, y: int, *, strict: bool = False) -> int | None:
    """``ℓ(x, y)`` (or ``ℓ̄(x, y)``, ``None`` meaning ``+∞``) in ``O(log n)``.

    The per-query helper of the noisy-binary-search forms (seed Theorems 5
    and 6): the thresholds are sorted once when ``loss`` is built.

    Examples:
        >>> loss = MonotoneLoss.user_sum([5.0, 1.0, 3.0])
        >>> loss_at(loss, 3), loss_at(loss, 9, strict=True), loss_at(loss, 0, strict=True)
        (2, 1, None)
    """
    return loss.strict_loss_at(y) if strict else loss.loss_at(y)


def shifted_loss_at(loss: MonotoneLoss, y: int, tau: int) -> int:
    """``ℓ*(x, y) = max(ℓ − τ, τ − ℓ̄)`` at one candidate, in ``O(log n)``.

    Examples:
        >>> shifted_loss_at(MonotoneLoss.user_sum([5.0, 1.0, 3.0]), 2, 1)
        1
    """
    return loss.shifted_loss_at(y, _tau(tau, "shifted_loss_at"))


def shifted_loss_runs(loss: MonotoneLoss, y_lo: int, y_hi: int, tau: int) -> tuple[list[int], list[int], list[int]]:
    """Partition ``Y = [y_lo, y_hi]`` into the maximal runs on which ``ℓ*`` is constant.

    Args:
        loss: the query's :class:`MonotoneLoss` on the private dataset.
        y_lo: the smallest candidate (an int ``>= ⌈f(∅)⌉``: below ``f(∅)`` the
            loss is infinite on every dataset).
        y_hi: the largest candidate, ``>= y_lo`` (any size).
        tau: the shift ``τ >= 0`` (see :func:`shift_tau`).

    Returns:
        ``(starts, ends, losses)``: run ``j`` is the integer interval
        ``[starts[j], ends[j]]`` (both inclusive) with ``ℓ* = losses[j]``. Runs are
        consecutive (``starts[j + 1] == ends[j] + 1``), cover ``Y`` exactly
        (``starts[0] == y_lo``, ``ends[-1] == y_hi``), adjacent runs have
        different losses, and there are at most ``2·n_units + 2`` of them.
        Cost ``O(n log n)``, independent of ``|Y|``.

    Raises:
        InvalidArgument: if ``y_lo > y_hi``, ``y_lo < ⌈f(∅)⌉`` or ``tau < 0``.

    Examples:
        >>> shifted_loss_runs(MonotoneLoss.user_sum([5.0, 1.0, 3.0]), 0, 2**64 - 1, 1)
        ([0, 1, 4, 10], [0, 3, 9, 18446744073709551615], [2, 1, 0, 1])

    Privacy guarantee:
        Not a mechanism. Each run's loss is ``ℓ*(x, y)`` for every ``y`` in it,
        and ``ℓ*(·, y)`` has global sensitivity 1 for each ``y`` under the
        relation "add or remove one user with all their rows" (seed 004,
        Proposition 3 and footnote 4), so the exponential mechanism over the
        runs with weights ``length · exp(−(ε/2)·ℓ*)`` is ε-DP (seed Theorem 4).
        The run boundaries themselves are private; only the sampled point may
        be released.
    """
    owner = "shifted_loss_runs"
    lo = _int(y_lo, owner, "y_lo")
    hi = _int(y_hi, owner, "y_hi")
    t = _tau(tau, owner)
    if lo > hi:
        raise InvalidArgument(owner, "y_lo", lo, f"must be <= y_hi={hi}")
    if lo < loss.min_y:
        raise InvalidArgument(owner, "y_lo", lo, f"must be >= {loss.min_y} (f of the empty dataset)")
    # ℓ̄ turns finite at ⌊f(∅)⌋ + 1 <= y_lo + 1; only y_lo + 1 can be that point inside (y_lo, y_hi]
    head = [lo]
    if loss.min_strict_y == lo + 1 and lo + 1 <= hi:
        head.append(lo + 1)
    head_losses = [loss.shifted_loss_at(y, t) for y in head]
    after = head[-1]
    ceil_t, floor_t = loss.threshold_arrays()
    inner: npt.NDArray[np.int64] | npt.NDArray[np.object_]
    if ceil_t.dtype == object or floor_t.dtype == object:
        merged = sorted({int(v) for v in ceil_t.tolist()} | {int(v) + 1 for v in floor_t.tolist()})
        inner = np.array([v for v in merged if after < v <= hi], dtype=object)
    else:
        # two ascending inputs: a stable sort (timsort) merges them in linear time; then dedupe
        cand = np.sort(np.concatenate([ceil_t, floor_t + 1]), kind="stable")
        if cand.size:
            cand = cand[np.concatenate([[True], cand[1:] != cand[:-1]])]
        a, b = min(max(after, -_CLAMP), _CLAMP), min(max(hi, -_CLAMP), _CLAMP)
        inner = cand[(cand > a) & (cand <= b)]
    if inner.size:
        inner_losses = np.maximum(loss.losses(inner) - t, t - loss.losses(inner, strict=True))
    else:
        inner_losses = np.zeros(0, dtype=np.int64)
    all_losses = np.concatenate([np.array(head_losses, dtype=np.int64), inner_losses.astype(np.int64)])
    keep = np.ones(all_losses.size, dtype=np.bool_)
    keep[1:] = all_losses[1:] != all_losses[:-1]
    n_head = len(head)
    starts: list[int] = [y for y, k in zip(head, keep[:n_head].tolist()) if k]
    starts += inner[keep[n_head:]].tolist()  # Python ints (int64.tolist and object arrays alike)
    ends = [s - 1 for s in starts[1:]] + [hi]
    losses: list[int] = all_losses[keep].tolist()
    return starts, ends, losses
