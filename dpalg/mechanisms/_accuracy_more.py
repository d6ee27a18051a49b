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
from dpalg.mechanisms._common.accuracy import rounded_noise_quantile, up_text
from dpalg.mechanisms._common.ptr_test import mode_accuracy
from dpalg.noise._tails import laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode

__all__ = [
    "sample_aggregate_mean_accuracy",
    "sample_aggregate_median_accuracy",
    "sample_aggregate_mode_accuracy",
]

# --- PTR for the mode (PTRMode, SampleAggregateMode) --------------------------------------


def sample_aggregate_mode_accuracy(node: SampleAggregateMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`SampleAggregateMode`: the exact vote mode when it releases; ``P(⊥)`` and its floor (module docstring)."""
    return mode_accuracy(
        "SampleAggregateMode.accuracy", node.epsilon, node.delta, "substitution", alpha, distance, gap,
        of="mode of the m block votes", blocks=node.blocks,
    )  # fmt: skip


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
