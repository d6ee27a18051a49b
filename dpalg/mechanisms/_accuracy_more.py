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
ptr_cap)`` and runs the test of :func:`~dpalg.mechanisms._ptr.ptr_test_passes`
(⊥ iff ``γ + Z <= M``, ``M = ceil(ln(1/δ)/ε) − 1``, ``t = 1/ε``), the test of
:class:`ProposeTest`; so ``P(⊥ | γ)`` is exactly
:func:`~dpalg.mechanisms._ddp_accuracy.ptr_bottom_probability`, decreasing in
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
:func:`~dpalg.mechanisms._smooth_bound.smooth_release`, the release of
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
from dpalg.mechanisms._ddp_accuracy import _smallest, _up, rounded_noise_quantile
from dpalg.noise._tails import _iv_dps as _iv, laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.data import Relation
    from dpalg.mechanisms._ptr import PTRMode
    from dpalg.mechanisms._sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
    from dpalg.mechanisms._stable_histogram import StableHistogram

__all__ = [
    "distance_from_gap",
    "laplace_at_least",
    "ptr_bottom_enclosure",
    "ptr_mode_accuracy",
    "sample_aggregate_mean_accuracy",
    "sample_aggregate_median_accuracy",
    "sample_aggregate_mode_accuracy",
    "stable_histogram_accuracy",
    "stable_release_count",
]

_DPS = 60
_EXACT_BITS = 1024  # more than the interval context's precision (60 digits, about 203 bits): conversions are exact


def _percent(x: Fraction) -> str:
    return f"{float(x * 100):.10g}%"


def _down(x: Fraction) -> str:
    """A probability lower bound for people: 6 significant digits, rounded down."""
    from dpalg.measures._display import decimal_text

    return decimal_text(x, "down").removeprefix(">=")


def _nonneg_int(owner: str, field: str, value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(owner, field, value, f"must be an int >= 0 ({what})")
    return value


# --- the discrete Laplace law ------------------------------------------------------------


def _exact(x: object) -> Fraction:
    """An interval endpoint (a binary float of the interval precision) as the exact Fraction it is."""
    from mpmath import mp

    with mp.workprec(_EXACT_BITS):  # mp.mpf would otherwise round it to 53 bits
        man, exp = mp.mpf(x).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def laplace_at_least(scale: Fraction, j: int) -> tuple[Fraction, Fraction]:
    """A proven enclosure ``(lo, hi)`` of ``P[Z >= j]`` for ``Z`` discrete Laplace of scale ``t`` (formula (L)).

    Examples:
        >>> lo, hi = laplace_at_least(Fraction(1), 1)  # e^-1/(1 + e^-1)
        >>> round(float(lo), 6), hi - lo < Fraction(1, 10**50)
        (0.268941, True)
        >>> laplace_at_least(Fraction(2), 0)[1] > Fraction(1, 2) > laplace_at_least(Fraction(2), 1)[1]
        True
    """
    from mpmath import iv

    if scale <= 0:
        raise InvalidArgument("laplace_at_least", "scale", scale, "must be > 0")
    with _iv(_DPS):
        q = iv.exp(-iv.mpf(scale.denominator) / scale.numerator)
        p = q**j / (1 + q) if j >= 1 else 1 - q ** (1 - j) / (1 + q)
        box = iv.mpf(p)
        return max(Fraction(0), _exact(box.a)), min(Fraction(1), _exact(box.b))


# --- PTR for the mode (PTRMode, SampleAggregateMode) --------------------------------------


def distance_from_gap(gap: int, relation: Relation) -> int:
    """A lower bound on ``mode_gap_distance`` from a lower bound on ``c₁ − c₂`` (module docstring).

    Examples:
        >>> distance_from_gap(3, "add_remove"), distance_from_gap(3, "substitution"), distance_from_gap(0, "add_remove")
        (2, 1, 0)
    """
    return max(0, gap - 1) if relation == "add_remove" else max(0, -(-gap // 2) - 1)


def _gap_needed(distance: int, relation: Relation) -> int:
    """The smallest gap whose :func:`distance_from_gap` is ``>= distance``."""
    return distance + 1 if relation == "add_remove" else 2 * distance + 1


def ptr_bottom_enclosure(epsilon: Fraction, delta: Fraction, distance: int) -> tuple[Fraction, Fraction]:
    """A proven enclosure of ``P(⊥ | γ = min(distance, ptr_cap)) = P[Z >= γ − M]``, ``t = 1/ε`` (by symmetry).

    The same quantity as :func:`~dpalg.mechanisms._ddp_accuracy.ptr_bottom_probability`,
    with both ends exact (the upper end bounds ``P(⊥)``, the lower end a floor on it).

    Examples:
        >>> lo, hi = ptr_bottom_enclosure(Fraction(1), Fraction(1, 1000), 0)  # 1 - e^-7/(1 + e^-1)
        >>> round(float(lo), 6), hi - lo < Fraction(1, 10**50)
        (0.999333, True)
    """
    from dpalg.mechanisms._ptr import ptr_cap
    from dpalg.mechanisms._thresholds import ceil_log_inv_delta_over_eps

    gamma = min(distance, ptr_cap(epsilon, delta))
    return laplace_at_least(1 / epsilon, gamma - (ceil_log_inv_delta_over_eps(epsilon, delta) - 1))


def _distance_for(epsilon: Fraction, delta: Fraction, bottom: Fraction) -> int | None:
    """The smallest distance with ``P(⊥)`` proven ``<= bottom``, or None if even the cap does not reach it."""
    from dpalg.mechanisms._ptr import ptr_cap

    if ptr_bottom_enclosure(epsilon, delta, ptr_cap(epsilon, delta))[1] > bottom:
        return None
    return _smallest(lambda d: ptr_bottom_enclosure(epsilon, delta, d)[1] <= bottom)


def _mode_accuracy(
    owner: str, epsilon: Fraction, delta: Fraction, relation: Relation, alpha: ExactLike,
    distance: int | None, gap: int | None, *, of: str, blocks: int | None = None,
) -> Accuracy:  # fmt: skip
    a = alpha_param(owner, alpha)
    if distance is not None and gap is not None:
        raise InvalidArgument(owner, "gap", gap, "must be None when distance= is given (state one of them)")
    counted = "block votes" if blocks is not None else "rows"
    if gap is not None:
        _nonneg_int(owner, "gap", gap, f"a public lower bound on the mode's count minus the runner-up's, in {counted}")
        if blocks is not None and gap > blocks:
            raise InvalidArgument(owner, "gap", gap, f"must be <= blocks={blocks} (the mode has at most {blocks} votes)")
        d: int | None = distance_from_gap(gap, relation)
    elif distance is not None:
        d = _nonneg_int(owner, "distance", distance, "a public lower bound on the mode's distance to instability")
        if blocks is not None and d > -(-blocks // 2) - 1:
            raise InvalidArgument(owner, "distance", d, f"must be <= {-(-blocks // 2) - 1} (the largest possible with {blocks} blocks)")
    else:
        d = None
    noise = f"none on the {of}; the test's: discrete Laplace, scale {_up(1 / epsilon)}"
    notes: list[str] = [f"given a release: the exact {of} (smallest among ties), error 0 always"]
    if blocks is not None:
        best = ptr_bottom_enclosure(epsilon, delta, -(-blocks // 2) - 1)[0]
        notes.append(f"P(⊥) >= {_down(best)} whatever the data (at best all {blocks} blocks agree: distance {-(-blocks // 2) - 1})")
        notes.append("about the votes of the random partition, not a statistic of the full data")
    if d is None:
        need = _distance_for(epsilon, delta, a)
        if need is not None and (blocks is None or need <= -(-blocks // 2) - 1):
            reach = f"; P(⊥) <= {_percent(a)} once it is >= {need} (a gap of >= {_gap_needed(need, relation)} {counted})"
        else:
            reach = f"; P(⊥) > {_percent(a)} at every distance"
        notes.append(f"P(⊥) depends on the mode's distance to instability{reach}; pass distance= or gap= for a number")
    else:
        p = ptr_bottom_enclosure(epsilon, delta, d)[1]
        given = f"the gap between the top two counts is at least {gap} {counted}, so " if gap is not None else ""
        notes.append(f"P(⊥) <= {_up(p)} if {given}the distance to instability is at least {d} (Dwork-Lei 2009)")
    return Accuracy(a, Fraction(0), "absolute", noise, True, "it releases (no ⊥)", tuple(notes))


def ptr_mode_accuracy(node: PTRMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`PTRMode`: error 0 when it releases; ``P(⊥)`` at a stated distance or gap (module docstring)."""
    return _mode_accuracy("PTRMode.accuracy", node.epsilon, node.delta, node.relation, alpha, distance, gap, of="mode of the data")


def sample_aggregate_mode_accuracy(node: SampleAggregateMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`SampleAggregateMode`: the exact vote mode when it releases; ``P(⊥)`` and its floor (module docstring)."""
    return _mode_accuracy(
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
    return _smallest(lambda c: laplace_at_least(scale, threshold - c)[0] >= 1 - alpha, start=1)


def stable_histogram_accuracy(node: StableHistogram, alpha: ExactLike, count: int | None, keys: int | None) -> Accuracy:
    """:class:`StableHistogram`: per-key count error and the release threshold (module docstring)."""
    from dpalg.mechanisms._stable_histogram import _caps

    owner = "StableHistogram.accuracy"
    a = alpha_param(owner, alpha)
    l1 = _caps(node.query)[0]
    t = Fraction(l1) / node.epsilon
    threshold = node.threshold()
    m, tight = laplace_tail_quantile(t, a)
    noise = f"discrete Laplace, scale {_up(t)}, per key; kept when the noisy count is >= {threshold}"
    counted = "after the per-user caps" if node.query.user is not None else "rows"
    c_alpha = stable_release_count(t, threshold, a)
    notes = [
        "each key present: not released, or released within this of its true count",
        f"released with probability >= {_percent(1 - a)} once its true count ({counted}) is >= {c_alpha}; "
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
        c = _nonneg_int(owner, "count", count, "a true count")
        lo, hi = laplace_at_least(t, threshold - c)
        notes.append(f"a key with true count >= {c} is released with probability >= {_down(lo)}; one with count <= {c} with <= {_up(hi)}")
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
    noise = f"discrete Laplace, scale {_up(scale)} (lattice step 2**{k})"
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
    noise = (f"Laplace, scale (S + 2**{k})/{_up(c.alpha)}, S the beta-smooth bound (beta={_up(c.beta)}) of the median "
             f"of the {node.blocks} block outputs under substitution, lattice step 2**{k}")  # fmt: skip
    notes: tuple[str, ...] = (
        f"error to the median of the {node.blocks} clipped block outputs of the random partition, not to the statistic on the full data",
        f"clamped to [{_up(node.lower)}, {_up(node.upper)}]: always within {_up(width)}",
    )
    if smooth_sensitivity is None:
        return Accuracy(a, None, "absolute", noise, False, "the smooth bound S of the block outputs' median is at most s",
                        (f"error <= (s + 2**{k})/{_up(c.alpha)} * ln(1/alpha) (rounded to the lattice)",
                         "pass smooth_sensitivity=s (a public upper bound on S) for a number", *notes))  # fmt: skip
    s = to_fraction(smooth_sensitivity, owner=owner, field="smooth_sensitivity")
    if s < 0:
        raise InvalidArgument(owner, "smooth_sensitivity", s, "must be >= 0")
    b = (s + step) / (c.alpha * step)
    m = rounded_noise_quantile(b, a, None)
    return Accuracy(a, min(m * step, width), "absolute", noise, False,
                    f"the smooth bound S of the block outputs' median is at most {_up(s)}", notes)  # fmt: skip
