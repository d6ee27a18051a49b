"""Accuracy before running of the modes, stable histograms and sample-and-aggregate (issue 20 item 2).

Like :mod:`dpalg.mechanisms._ddp_accuracy`, every statement is a function of
the node's parameters and, where it depends on the data, of a public
assumption the caller states (then given under that ``condition``). Numbers
are proven with mpmath interval arithmetic and rounded so that an error or a
failure probability is never understated.

Throughout, ``Z`` is discrete Laplace of scale ``t``: ``P[Z = z] = (1 − q)/(1 +
q)·q^|z|`` with ``q = e^{−1/t}``, so for integers ``j``::

    P[Z >= j] = q^j/(1 + q)             (j >= 1)
              = 1 − q^{1−j}/(1 + q)     (j <= 0)                                (L)

and ``P[Z <= j] = P[Z >= −j]`` by symmetry.

**PTR for the mode** (:class:`PTRMode`; seed 003 "PTR for the mode", Dwork–Lei
2009, proposed bound 0). The release computes ``γ = min(mode_gap_distance(x),
ptr_cap)`` and runs the test of :func:`~dpalg.mechanisms._common.ptr_test.ptr_test_passes`
(⊥ iff ``γ + Z <= M``, ``M = ceil(ln(1/δ)/ε) − 1``, ``t = 1/ε``), the test of
:class:`ProposeTest`; so ``P(⊥ | γ)`` is exactly
:func:`~dpalg.mechanisms._common.ptr_test.ptr_bottom_probability`, decreasing in
``γ``: a public lower bound ``d`` on the distance gives ``P(⊥) <= P(⊥ | d)``.
Otherwise the output is ``evaluate_values(mode)``, the exact mode of the data
(the smallest value among ties): the error given a release is 0 with
probability 1; no noise is added.

*Gap form.* Let ``c₁`` be the mode's count and ``c₂`` the largest count of any
other value (0 if there is none), ``g = c₁ − c₂ >= 0``.
:func:`~dpalg.sensitivity._catalog.mode_gap_distance` returns ``max(0, D − 1)``
with ``D = min_w g_w`` (add/remove) or ``min_w ceil(g_w/2)`` (substitution),
``g_w = c₁ − c_w + [w > mode]`` over the other values ``w`` and a fresh one
(``c_w = 0``). Each ``g_w >= c₁ − c₂ = g``, so::

    γ >= g − 1            (add/remove)
    γ >= ceil(g/2) − 1    (substitution)

and a public lower bound on the gap gives one on ``γ`` (equality when the
runner-up is below the mode).

**Sample-and-aggregate mode** (:class:`SampleAggregateMode`). The same test on
the ``m`` block votes under substitution. Statements are about the mode *of the
votes* of the realised random partition (not the mode of a statistic of the
full data): given a release, the output is that mode exactly. Since ``c₁ <=
m``, the fresh value gives ``g_w <= m`` so ``γ <= ceil(m/2) − 1``, with
equality when all blocks agree: ``P(⊥) >= P(⊥ | ceil(m/2) − 1)`` for every
dataset, a public floor set by ``m``, ``ε`` and ``δ`` alone.

**Stable histogram** (:class:`StableHistogram`; seed 003, Bun–Nissim–Stemmer
2016). Each key with true count ``c > 0`` (after the per-user caps at user
level) gets ``a = c + Z`` with ``t = L1/ε`` (``Z`` independent per key), and
``a`` is released iff ``a >= T`` (``T`` = :meth:`StableHistogram.threshold`).

* *Count error, per key.* ``{released, |a − c| > m} ⊆ {|Z| > m}`` so with
  ``m`` the exact (1 − α) quantile of ``|Z|`` (:func:`~dpalg.noise._tails.laplace_tail_quantile`),
  each key is, with probability ``>= 1 − α``, either not released or released
  within ``±m``. It is tight over datasets: for large ``c`` the key is released
  whenever ``Z >= T − c`` and the excess probability tends to ``P[|Z| > m]``.
  For ``K`` keys at once use ``α/K`` (union bound; ``K`` = the listed keys, or
  a public bound on the keys present).
* *Threshold.* A key of true count ``c`` is released with probability exactly
  ``P[Z >= T − c]`` (L), increasing in ``c``; so a key with count ``>= c`` is
  released with at least, and one with count ``<= c`` with at most, that
  probability. The smallest ``c_α`` with ``P[Z >= T − c_α] >= 1 − α`` is the
  count released with probability ``>= 1 − α``; a key new to a neighbour
  (count ``<= L∞``) is released with probability ``< δ/L0`` (the privacy proof).

**Sample-and-aggregate mean** (:class:`SampleAggregateMean`; NRS 2007). The
output is ``(round(μ/2^k) + Z)·2^k`` with ``μ`` the mean of the ``m`` clipped
block outputs (rounded once to a float) and ``Z`` discrete Laplace of scale
``Δ'/(ε 2^k)``, ``Δ' = (u − l)/m + 2^k + max(|l|, |u|)/2^50``, drawn
independently of the partition: the error to ``μ`` (lattice-rounded) is the
exact (1 − α) quantile of ``|Z|`` times ``2^k``, tight, for every partition.
It is not the error to the statistic on the full data: how well ``μ``
estimates that depends on the block function and the data.

**Sample-and-aggregate median** (:class:`SampleAggregateMedian`; NRS07 §4,
Lemmas 2.6, 2.9). The output is ``clamp(2^k (a + N), l, u)`` with ``a =
round(med/2^k)``, ``med`` the lower median of the ``m`` clipped block outputs,
and ``N`` the exact law of ``round(b·Z)``, ``Z`` standard Laplace, ``b = (Ŝ +
2^k)/(α_c 2^k)``, ``Ŝ`` the β-smooth bound of that median under substitution
of one output and ``α_c = ε/2`` (:meth:`SampleAggregateMedian.constants`) —
:func:`~dpalg.mechanisms._common.smooth_quantile.smooth_release`, the release of
:class:`SmoothBound`. So ``P[|N| > m] = exp(−(m + ½)/b)``, increasing in ``b``
(proof in :mod:`dpalg.mechanisms._ddp_accuracy`): a public upper bound ``s >=
Ŝ`` gives the bound ``2^k m`` with :func:`rounded_noise_quantile` at ``b = (s +
2^k)/(α_c 2^k)``. Clamping moves the output towards ``med ∈ [l, u]``, so the
error is also at most ``u − l`` always. ``Ŝ`` reads the realised block
outputs: the statement is conditional on it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import down_text, int_param, laplace_at_least, percent_text, rounded_noise_quantile, smallest, up_text
from dpalg.mechanisms._common.ptr_test import mode_accuracy
from dpalg.noise._tails import laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._ptr import PTRMode
    from dpalg.mechanisms._sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
    from dpalg.mechanisms._stable_histogram import StableHistogram

__all__ = [
    "ptr_mode_accuracy",
    "sample_aggregate_mean_accuracy",
    "sample_aggregate_median_accuracy",
    "sample_aggregate_mode_accuracy",
    "stable_histogram_accuracy",
    "stable_release_count",
]

# --- PTR for the mode (PTRMode, SampleAggregateMode) --------------------------------------


def ptr_mode_accuracy(node: PTRMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`PTRMode`: error 0 when it releases; ``P(⊥)`` at a stated distance or gap (module docstring)."""
    return mode_accuracy("PTRMode.accuracy", node.epsilon, node.delta, node.relation, alpha, distance, gap, of="mode of the data")


def sample_aggregate_mode_accuracy(node: SampleAggregateMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`SampleAggregateMode`: the exact vote mode when it releases; ``P(⊥)`` and its floor (module docstring)."""
    return mode_accuracy(
        "SampleAggregateMode.accuracy", node.epsilon, node.delta, "substitution", alpha, distance, gap,
        of="mode of the m block votes", blocks=node.blocks,
    )  # fmt: skip


# --- stable histogram ------------------------------------------------------------------


def stable_release_count(scale: Fraction, threshold: int, alpha: Fraction) -> int:
    """The smallest count ``c >= 1`` released with probability proven ``>= 1 − α``: ``P[Z >= T − c] >= 1 − α``.

    Examples:
        >>> stable_release_count(Fraction(1), 4, Fraction(1, 20))  # P[Z >= -2] = 1 - e^-3/(1 + e^-1) = 0.964
        6
    """
    return smallest(lambda c: laplace_at_least(scale, threshold - c)[0] >= 1 - alpha, start=1)


def stable_histogram_accuracy(node: StableHistogram, alpha: ExactLike, count: int | None, keys: int | None) -> Accuracy:
    """:class:`StableHistogram`: per-key count error and the release threshold (module docstring)."""
    from dpalg.mechanisms._stable_histogram import _caps

    owner = "StableHistogram.accuracy"
    a = alpha_param(owner, alpha)
    l1 = _caps(node.query)[0]
    t = Fraction(l1) / node.epsilon
    threshold = node.threshold()
    m, tight = laplace_tail_quantile(t, a)
    noise = f"discrete Laplace, scale {up_text(t)}, per key; kept when the noisy count is >= {threshold}"
    counted = "after the per-user caps" if node.query.user is not None else "rows"
    c_alpha = stable_release_count(t, threshold, a)
    notes = [
        "each key present: not released, or released within this of its true count",
        f"released with probability >= {percent_text(1 - a)} once its true count ({counted}) is >= {c_alpha}; "
        f"at count c with probability exactly P[Z >= {threshold} - c]",
    ]
    if keys is not None:
        if isinstance(keys, bool) or not isinstance(keys, int) or keys < 1:
            raise InvalidArgument(owner, "keys", keys, "must be an int >= 1 (a public bound on the number of keys present)")
    elif node.query.keys is not None:
        keys = len(node.query.keys)  # only listed keys can be present
    if keys is not None:
        m_all, _ = laplace_tail_quantile(t, a / keys)
        c_all = stable_release_count(t, threshold, a / keys)
        notes.append(f"all {keys} keys at once (union bound, alpha/{keys}): ±{m_all}; every key with count >= {c_all} released")
    else:
        notes.append("for all K keys present at once use alpha/K (union bound); pass keys=K for a number")
    if count is not None:
        c = int_param(owner, "count", count, 0, "a true count")
        lo, hi = laplace_at_least(t, threshold - c)
        notes.append(f"a key with true count >= {c} is released with probability >= {down_text(lo)}; one with count <= {c} with <= {up_text(hi)}")
    return Accuracy(a, Fraction(m), "absolute, per key", noise, tight, None, tuple(notes))


# --- sample-and-aggregate mean and median ------------------------------------------------


def sample_aggregate_mean_accuracy(node: SampleAggregateMean, alpha: ExactLike) -> Accuracy:
    """:class:`SampleAggregateMean`: the exact quantile of its lattice Laplace noise (module docstring)."""
    a = alpha_param("SampleAggregateMean.accuracy", alpha)
    k = node.lattice_k()
    step = Fraction(2) ** k
    sens = (node.upper - node.lower) / node.blocks + step + max(abs(node.lower), abs(node.upper)) / 2**50
    scale = sens / node.epsilon
    m, tight = laplace_tail_quantile(scale / step, a)
    noise = f"discrete Laplace, scale {up_text(scale)} (lattice step 2**{k})"
    notes = (
        f"error to the mean of the {node.blocks} clipped block outputs of the random partition, "
        "not to the statistic on the full data",
    )
    return Accuracy(a, m * step, "absolute", noise, tight, None, notes)


def sample_aggregate_median_accuracy(node: SampleAggregateMedian, alpha: ExactLike, smooth_sensitivity: ExactLike | None) -> Accuracy:
    """:class:`SampleAggregateMedian`: smooth-sensitivity Laplace noise given a bound on Ŝ (module docstring)."""
    owner = "SampleAggregateMedian.accuracy"
    a = alpha_param(owner, alpha)
    c = node.constants()
    k = node.lattice_k()
    step = Fraction(2) ** k
    width = node.upper - node.lower
    noise = (f"Laplace, scale (S + 2**{k})/{up_text(c.alpha)}, S the beta-smooth bound (beta={up_text(c.beta)}) of the median "
             f"of the {node.blocks} block outputs under substitution, lattice step 2**{k}")  # fmt: skip
    notes: tuple[str, ...] = (
        f"error to the median of the {node.blocks} clipped block outputs of the random partition, not to the statistic on the full data",
        f"clamped to [{up_text(node.lower)}, {up_text(node.upper)}]: always within {up_text(width)}",
    )
    if smooth_sensitivity is None:
        return Accuracy(a, None, "absolute", noise, False, "the smooth bound S of the block outputs' median is at most s",
                        (f"error <= (s + 2**{k})/{up_text(c.alpha)} * ln(1/alpha) (rounded to the lattice)",
                         "pass smooth_sensitivity=s (a public upper bound on S) for a number", *notes))  # fmt: skip
    s = to_fraction(smooth_sensitivity, owner=owner, field="smooth_sensitivity")
    if s < 0:
        raise InvalidArgument(owner, "smooth_sensitivity", s, "must be >= 0")
    b = (s + step) / (c.alpha * step)
    m = rounded_noise_quantile(b, a, None)
    return Accuracy(a, min(m * step, width), "absolute", noise, False,
                    f"the smooth bound S of the block outputs' median is at most {up_text(s)}", notes)  # fmt: skip
