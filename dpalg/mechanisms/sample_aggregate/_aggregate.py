"""Sample-and-aggregate (Nissim–Raskhodnikova–Smith 2007, seed 002).

The data is split into m disjoint blocks, an arbitrary user function runs on
each block, and a private aggregator combines the m outputs. dpalg's guarantee
rests on the aggregator only: the block function may be any Python callable.

The partition must not depend on the other units (seed 002's contiguous chunks
of n-dependent size shift every later chunk when one row is added). Each unit's
block is a keyed PRF of that unit alone, with a fresh key per release (the
release's first draw, :func:`dpalg.noise.prf_secret`): users get
``PRF(key, id) mod m`` (ids by the key policy of :mod:`dpalg.data`; a missing
id is in no block); rows get ``PRF(key, content, occurrence) mod m``, the content
being the row's canonical value in ``column`` or over ``reads``, the occurrence
its rank among the identical rows (computed exactly, never by hash).

**Privacy of the partition** (all NRS 2007 §4 and seed 002 need). A unit's
label, and what the block function sees of it, is a function of the key and
that unit's own rows only (a row: its content and occurrence). Identical rows
are interchangeable, and adding a row with c copies present adds exactly the
pair (content, c); so adding or removing one unit changes exactly one block as a
multiset, for every key. The function sees its block in a canonical form and
order (:mod:`._blocks`), a function of that multiset, so the m
block outputs change in at most one coordinate: a *substitution* neighbour (m
public). Privacy never depends on the hash's quality (a collision only
unbalances blocks). Nothing depends on row order or partitioning, so numpy and
Spark (:mod:`._spark`) give the same seeded release bit for bit
(brute force: ``tests/mechanisms/test_sample_aggregate_backends.py``).

The block function ("Releases are total", docs/architecture.md; :mod:`._user_function`):

* **two forms.** With ``column="age"`` it receives a 1-D float64 array of the
  block's values in that column, missing values dropped (the data policy), so
  ``np.median`` works as it is. Without ``column`` it receives the block as a
  :class:`~dpalg.data.Dataset` (for functions of several columns); the columns
  it reads are declared with ``reads=`` or discovered on the trial block;
* **tried at construction** on a public synthetic block (eight rows of small
  numbers in the declared columns); a raise, or a result that is not a finite
  number, refuses the node with :class:`~dpalg.InvalidArgument` naming the
  function and the exception type;
* **at release** it is called only on non-empty blocks (the Dataset form sees
  the ``reads`` columns only). An empty block, a raise
  (any :class:`Exception`), a non-numeric result or NaN gives the block the
  aggregator's public **fallback**: the midpoint ``(lower + upper)/2`` for the
  mean and the median, :data:`FAILURE_VOTE` (+inf) for the mode; ``±inf`` is
  clipped to the range like any output. Warnings are silenced. The fallback
  keeps each block output a deterministic function of that block's data alone,
  which is all the aggregators' proofs use, so no failure is observable except
  through the noisy aggregate.

**Accuracy** (each node's ``accuracy``). The mode: the PTR test on the votes
(:mod:`dpalg.mechanisms._common.ptr_test`, *votes of m blocks*).

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
(proof in :mod:`dpalg.mechanisms._common.accuracy`): a public upper bound ``s >=
Ŝ`` gives the bound ``2^k m`` with :func:`~dpalg.mechanisms._common.accuracy.rounded_noise_quantile` at ``b = (s +
2^k)/(α_c 2^k)``. Clamping moves the output towards ``med ∈ [l, u]``, so the
error is also at most ``u − l`` always. ``Ŝ`` reads the realised block
outputs: the statement is conditional on it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import final

import attrs
import numpy as np

from dpalg._bottom import BOTTOM
from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ColumnUse, Dataset, Neighbouring
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import rounded_noise_quantile, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms._common.params import floor_log2, granularity_param
from dpalg.mechanisms._common.ptr_test import mode_accuracy, ptr_cap, ptr_test_passes
from dpalg.mechanisms.sample_aggregate._blocks import BlockFunction, ColumnFunction, QueryStatistic, discover_block_reads
from dpalg.mechanisms.sample_aggregate._blocks import block_labels, block_outputs, block_values, blocks_of
from dpalg.mechanisms.sample_aggregate._backends import release_block_values
from dpalg.mechanisms.sample_aggregate._fields import (
    mean_blocks,
    mean_column,
    mean_eps,
    mean_fn,
    mean_lower,
    mean_reads,
    mean_unit,
    mean_upper,
    median_blocks,
    median_column,
    median_delta,
    median_eps,
    median_fn,
    median_lower,
    median_reads,
    median_unit,
    median_upper,
    mode_blocks,
    mode_column,
    mode_delta,
    mode_eps,
    mode_fn,
    mode_reads,
    mode_unit,
)
from dpalg.mechanisms._common.smooth_quantile import auto_granularity, check_range, smooth_release
from dpalg.mechanisms._common.user_function import describe, is_recorded_stub, quiet, refuse_result, trial_array
from dpalg.noise import AbstractRandomness, lattice_noise
from dpalg.noise._admissible import Admissibility, LaplaceNoise
from dpalg.noise._tails import laplace_tail_quantile
from dpalg.sensitivity._catalog import mode_gap_distance

__all__ = [
    "FAILURE_VOTE", "BlockFunction", "ColumnFunction", "SampleAggregateMean", "SampleAggregateMedian",
    "SampleAggregateMode", "block_labels", "block_outputs", "block_values", "blocks_of",
]  # fmt: skip

#: the vote of a block whose function fails (or that is empty) in :class:`SampleAggregateMode`
FAILURE_VOTE = math.inf


def _try_block_fn(node: SampleAggregateMean | SampleAggregateMedian | SampleAggregateMode, owner: str) -> None:
    """Refuse a block function that fails on the public trial block; record the columns it reads."""
    if node.column is not None and node.reads:
        raise InvalidArgument(owner, "reads", node.reads, "must be empty with column= (the function receives that column only)")
    fn = node.block_fn
    if isinstance(fn, QueryStatistic):  # the query names the column the function reads
        if node.column not in (None, fn.query.column):
            raise InvalidArgument(owner, "column", node.column, f"must be None or {fn.query.column!r}, the column of the query")
        object.__setattr__(node, "column", fn.query.column)
        if is_recorded_stub(fn.query.fn):
            return
    if is_recorded_stub(fn):  # rebuilt from a certificate for an audit: it cannot run
        return
    if node.column is not None:
        try:
            with quiet():
                result = fn(trial_array())  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - user code; only its type is shown
            raise InvalidArgument(
                owner, "block_fn", describe(fn),
                f"raised {type(exc).__name__} on the public trial block (a 1-D float array of 8 small numbers, "
                f"column={node.column!r}): it must return a finite number there",
            ) from None  # fmt: skip
    else:
        hint = "; to receive one column as a 1-D array, pass column=" if not node.reads else ""
        read, result = discover_block_reads(fn, node.reads, owner, hint)  # type: ignore[arg-type]
        object.__setattr__(node, "reads", read)  # the columns it reads: checked before the charge
    refuse_result(owner, "block_fn", fn, result)


def _block_columns(node: SampleAggregateMean | SampleAggregateMedian | SampleAggregateMode) -> tuple[ColumnUse, ...]:
    uses = [ColumnUse(node.column, "numeric")] if node.column is not None else [ColumnUse(c, "key") for c in node.reads]
    if node.unit is not None:
        uses.append(ColumnUse(node.unit, "id"))
    return tuple(dict.fromkeys(uses))


# --- the clipped mean of the block outputs ---------------------------------------------------

_MEAN = "SampleAggregateMean"


@final
@attrs.frozen
class SampleAggregateMean(AbstractPrimitive[PureDP]):
    """Sample-and-aggregate with the clipped mean of the block outputs (seed 002).

    Args:
        block_fn: a function of one block: of a :class:`~dpalg.data.Dataset`, or of
            a 1-D float64 array with ``column=``; it must return a number.
        blocks: the public number of blocks m.
        lower, upper: the declared range of the block outputs (outputs are clipped).
        epsilon: ε > 0.
        unit: ``None`` (one row) or the id column of users.
        column: ``None`` (the Dataset form) or the column whose values, missing
            ones dropped, the function receives as a 1-D array.
        reads: the columns a Dataset-form function reads, the only ones its blocks
            hold (checked before the charge); default: those it asks for on trial.

    Raises:
        InvalidArgument: a parameter is invalid, or ``block_fn`` raises or does not
            return a finite number on the public trial block.

    An empty block, or one whose function raises or returns a non-number or NaN,
    outputs the public midpoint ``(lower + upper)/2`` (see the module docstring).

    Privacy guarantee:
        ε-DP for adding or removing one unit: the unit falls in one block (its
        own keyed label), so one of the m clipped outputs changes, by at most
        u − l; their mean changes by at most (u − l)/m and is released with
        discrete Laplace noise of scale (u − l)/(mε) + lattice rounding
        (seed 002's sample-and-aggregate mean; Dwork et al. 2006). The fallback
        keeps each output a function of its own block in [l, u].

    Examples:
        >>> import numpy as np
        >>> from dpalg.noise import SeededRandomness
        >>> node = SampleAggregateMean(np.median, blocks=4, lower=0, upper=10, epsilon=1, column="x")
        >>> isinstance(node.release(Dataset({"x": np.arange(40.0) % 10}), SeededRandomness(0)), float)
        True
        >>> SampleAggregateMean(np.median, blocks=4, lower=0, upper=10, epsilon=1)
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: SampleAggregateMean: block_fn='median' raised TypeError on the public trial block (columns [], 8 rows of small numbers): it must return a finite number there; to receive one column as a 1-D array, pass column=
    """

    block_fn: BlockFunction | ColumnFunction = attrs.field(converter=mean_fn, eq=False)
    blocks: int = attrs.field(converter=mean_blocks)
    lower: Fraction = attrs.field(converter=mean_lower)
    upper: Fraction = attrs.field(converter=mean_upper)
    epsilon: Fraction = attrs.field(converter=mean_eps)
    unit: str | None = attrs.field(default=None, converter=mean_unit)
    column: str | None = attrs.field(default=None, converter=mean_column)
    reads: tuple[str, ...] = attrs.field(default=(), converter=mean_reads)

    def __attrs_post_init__(self) -> None:
        if self.lower >= self.upper:
            raise InvalidArgument(_MEAN, "lower", self.lower, f"must be < upper={self.upper}")
        if not -1000 <= self.lattice_k() <= 1000:  # the noise layer's lattice range: refuse now, not after the charge
            raise InvalidArgument(_MEAN, "lower", self.lower, f"gives a noise scale (upper - lower)/(blocks*epsilon) outside [2^-980, 2^1020] with upper={self.upper}")
        _try_block_fn(self, _MEAN)

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

    def columns(self) -> tuple[ColumnUse, ...]:
        """The public schema: ``column`` (numeric) or the columns in ``reads``, and ``unit``."""
        return _block_columns(self)

    def lattice_k(self) -> int:
        """Lattice exponent: about 2^-20 of the noise scale."""
        return floor_log2((self.upper - self.lower) / (self.blocks * self.epsilon)) - 20

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "sample-and-aggregate, clipped mean of m block outputs + discrete Laplace((u-l)/(m eps)) (NRS 2007; seed 002)",
            (("blocks", str(self.blocks)), ("range", f"[{self.lower}, {self.upper}]"), ("epsilon", str(self.epsilon))),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20)) -> Accuracy:
        """The (1 − ``alpha``) error to the mean of the clipped block outputs (no data touched).

        The exact (1 − α) quantile of the discrete Laplace noise of scale
        ``((u − l)/m + 2^k + e)/ε`` (tight; NRS 2007, Dwork et al. 2006). It is the
        error to the aggregate of the block outputs, not to the statistic on the
        full data. Proof in the module docstring.
        """
        return sample_aggregate_mean_accuracy(self, alpha)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy mean of the block outputs."""
        lo, hi = float(self.lower), float(self.upper)
        outs = release_block_values(self.block_fn, data, self.blocks, self.unit, rng, lo / 2 + hi / 2,
                                    column=self.column, reads=self.reads, owner=_MEAN)
        outs = np.clip(outs, lo, hi)
        k = self.lattice_k()
        # the exact mean of the clipped floats (no overflow for any range), rounded once to a float:
        # with the clipping to float(l), float(u) each side errs by at most 2^-51 max(|l|, |u|)
        err = max(abs(self.lower), abs(self.upper)) / 2**50
        sens = (self.upper - self.lower) / self.blocks + Fraction(2) ** k + err
        value = float(sum((Fraction(x) for x in outs.tolist()), Fraction(0)) / self.blocks)
        noisy = lattice_noise(np.array([value]), k=k, kind="laplace", scale=sens / self.epsilon, rng=rng)
        return float(noisy[0])


# --- the smooth-sensitivity median of the block outputs ---------------------------------

_MEDIAN = "SampleAggregateMedian"


def _median_k(value: int | None) -> int | None:
    return granularity_param(_MEDIAN, value)


@final
@attrs.frozen
class SampleAggregateMedian(AbstractPrimitive[ApproxDP]):
    """Sample-and-aggregate with the smooth-sensitivity median of the block outputs (NRS07 §4).

    The m block outputs, clipped to the declared ``[lower, upper]``, are aggregated
    by their (lower) median with Laplace noise scaled to its smooth sensitivity
    *under substitution* of one block output (m is public), exactly as
    :class:`~dpalg.mechanisms.SmoothBound` does for a column.

    Args:
        block_fn: a function of one block (a Dataset, or a 1-D array with ``column=``).
        blocks: the public number of blocks m.
        lower, upper: the declared range of the block outputs (outputs are clipped).
        epsilon: ε > 0.
        delta: δ in (0, 1).
        unit: ``None`` (one row) or the id column of users.
        granularity: lattice exponent (default from the range, as SmoothBound).
        column: as in :class:`SampleAggregateMean`.
        reads: as in :class:`SampleAggregateMean`.

    An empty or failing block outputs the public midpoint ``(lower + upper)/2``.

    Privacy guarantee:
        (ε, δ)-DP for adding or removing one unit. The unit's block is its own
        label, so the vector of m clipped outputs of neighbouring datasets differs
        in at most one coordinate (a substitution neighbour, m fixed); the median of
        that vector released with Laplace noise ``2S'/ε`` and ``β ≤ ε/(2 ln(2/δ))`` is
        (ε, δ)-DP under substitution (NRS07 Lemmas 2.6, 2.9; exact lattice sampling),
        for every key; averaging over the key keeps the inequality.
    """

    block_fn: BlockFunction | ColumnFunction = attrs.field(converter=median_fn, eq=False)
    blocks: int = attrs.field(converter=median_blocks)
    lower: Fraction = attrs.field(converter=median_lower)
    upper: Fraction = attrs.field(converter=median_upper)
    epsilon: Fraction = attrs.field(converter=median_eps)
    delta: Fraction = attrs.field(converter=median_delta)
    unit: str | None = attrs.field(default=None, converter=median_unit)
    granularity: int | None = attrs.field(default=None, converter=_median_k)
    column: str | None = attrs.field(default=None, converter=median_column)
    reads: tuple[str, ...] = attrs.field(default=(), converter=median_reads)

    def __attrs_post_init__(self) -> None:
        if self.lower >= self.upper:
            raise InvalidArgument(_MEDIAN, "lower", self.lower, f"must be < upper={self.upper}")
        check_range(_MEDIAN, self.lower, self.upper, self.constants().alpha)
        k_min = auto_granularity(self.lower, self.upper, self.constants().alpha)
        if self.granularity is not None and self.granularity < k_min:
            raise InvalidArgument(_MEDIAN, "granularity", self.granularity, f"must be >= {k_min}")
        _try_block_fn(self, _MEDIAN)

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

    def columns(self) -> tuple[ColumnUse, ...]:
        """The public schema: ``column`` (numeric) or the columns in ``reads``, and ``unit``."""
        return _block_columns(self)

    def constants(self) -> Admissibility:
        """Laplace constants: ``α = ε/2``, ``β`` = ε/(2 ln(2/δ)) rounded down."""
        return LaplaceNoise().constants(self.epsilon, self.delta)

    def lattice_k(self) -> int:
        """The public lattice exponent."""
        if self.granularity is not None:
            return self.granularity
        return auto_granularity(self.lower, self.upper, self.constants().alpha)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        c = self.constants()
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "sample-and-aggregate, smooth-sensitivity median of m block outputs under substitution "
            "+ Laplace (NRS07 Lemmas 2.6, 2.9; exact lattice sampling)",
            (("blocks", str(self.blocks)), ("range", f"[{self.lower}, {self.upper}]"), ("epsilon", str(self.epsilon)),
             ("delta", str(self.delta)), ("beta", str(c.beta))),
        )  # fmt: skip

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, smooth_sensitivity: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) error to the median of the clipped block outputs, given a bound on its smooth bound.

        ``smooth_sensitivity``: a public upper bound s on the β-smooth bound Ŝ of
        the block outputs' median (under substitution); the error is then the
        exact quantile of the lattice Laplace noise of scale ``(s + 2^k)/α``
        (NRS07 Lemmas 2.6, 2.9), and never above ``upper − lower`` (clamped). It is
        the error to the aggregate of the block outputs, not to the statistic on
        the full data. Proof in the module docstring.
        """
        return sample_aggregate_median_accuracy(self, alpha, smooth_sensitivity)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy median of the block outputs (clamped to the range)."""
        lo, hi = float(self.lower), float(self.upper)
        outs = release_block_values(self.block_fn, data, self.blocks, self.unit, rng, lo / 2 + hi / 2,
                                    column=self.column, reads=self.reads, owner=_MEDIAN)
        outs = np.clip(outs, lo, hi)
        # float(lower/upper) may round outward by an ulp; keep the outputs inside the exact range
        outs = np.sort(np.clip(outs, _inside_float(self.lower, up=True), _inside_float(self.upper, up=False)))
        value = smooth_release(
            outs, Fraction(1, 2), self.lower, self.upper, "substitution", self.constants(), LaplaceNoise(), self.lattice_k(), rng
        )
        return float(value)


def _inside_float(x: Fraction, *, up: bool) -> float:
    """The float nearest to ``x`` on the inside of the range (up: ``≥ x``; else ``≤ x``)."""
    f = float(x)
    if up and Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    if not up and Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


# --- the stability-based mode of the block outputs ---------------------------------------

_MODE = "SampleAggregateMode"


@final
@attrs.frozen
class SampleAggregateMode(AbstractPrimitive[ApproxDP]):
    """Sample-and-aggregate with the stability-based mode of the block outputs (PTR, β = 0).

    Each block votes with its output (a number, e.g. a class label or a rounded
    estimate; an empty block, or one whose function raises or returns a
    non-number or NaN, votes :data:`FAILURE_VOTE` = +inf).
    γ = the number of block outputs that must change before the mode (smallest
    among ties) changes, minus one (:func:`~dpalg.sensitivity.mode_gap_distance`
    under substitution), capped by :func:`~dpalg.mechanisms._common.ptr_test.ptr_cap`; if
    ``γ + Z ≤ ln(1/δ)/ε`` (Z discrete Laplace of scale 1/ε) release ⊥, else the exact
    mode.

    Args:
        block_fn: a function of one block (a Dataset, or a 1-D array with ``column=``).
        blocks: the public number of blocks m.
        epsilon: ε > 0.
        delta: δ in (0, 1).
        unit: ``None`` (one row) or the id column of users.
        column: as in :class:`SampleAggregateMean`.
        reads: as in :class:`SampleAggregateMean`.

    Privacy guarantee:
        (ε, δ)-DP for adding or removing one unit: the block vector changes in at
        most one coordinate (substitution, m public), and PTR for the mode with
        proposed bound 0 is (ε, δ)-DP under substitution (seed 003, "PTR for the
        mode"; the same test as :class:`~dpalg.mechanisms.PTRMode`). Returns
        :data:`dpalg.BOTTOM` when the test fails.
    """

    block_fn: BlockFunction | ColumnFunction = attrs.field(converter=mode_fn, eq=False)
    blocks: int = attrs.field(converter=mode_blocks)
    epsilon: Fraction = attrs.field(converter=mode_eps)
    delta: Fraction = attrs.field(converter=mode_delta)
    unit: str | None = attrs.field(default=None, converter=mode_unit)
    column: str | None = attrs.field(default=None, converter=mode_column)
    reads: tuple[str, ...] = attrs.field(default=(), converter=mode_reads)

    def __attrs_post_init__(self) -> None:
        _try_block_fn(self, _MODE)

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

    def columns(self) -> tuple[ColumnUse, ...]:
        """The public schema: ``column`` (numeric) or the columns in ``reads``, and ``unit``."""
        return _block_columns(self)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "sample-and-aggregate, PTR for the mode of m block outputs, bound 0, threshold ln(1/delta)/eps (seed 003)",
            (("blocks", str(self.blocks)), ("epsilon", str(self.epsilon)), ("delta", str(self.delta))),
        )

    def accuracy(
        self, alpha: ExactLike = Fraction(1, 20), *, distance: int | None = None, gap: int | None = None
    ) -> Accuracy:
        """Error 0 when it releases (the exact mode of the block votes), and P(⊥) (no data touched).

        ``distance``: a public lower bound on the votes' distance to instability
        under substitution; or ``gap``: one on the top vote count minus the
        runner-up's (``γ >= ceil(gap/2) − 1``). ``P(⊥) = P[Z <= ceil(ln(1/δ)/ε) − 1 − γ]``
        exactly (seed 003 "PTR for the mode"); whatever the data it is at least its
        value at ``γ = ceil(m/2) − 1`` (all blocks agree). About the mode of the
        votes, not a statistic of the full data. Proof in
        :mod:`dpalg.mechanisms._common.ptr_test`.
        """
        return sample_aggregate_mode_accuracy(self, alpha, distance, gap)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the mode of the block outputs (a float)."""
        votes = release_block_values(self.block_fn, data, self.blocks, self.unit, rng, FAILURE_VOTE,
                                     column=self.column, reads=self.reads, owner=_MODE)
        gamma = min(mode_gap_distance(votes, "substitution"), ptr_cap(self.epsilon, self.delta))
        if not ptr_test_passes(gamma, self.epsilon, self.delta, rng):
            return BOTTOM
        uniq, counts = np.unique(votes, return_counts=True)
        return float(uniq[int(np.argmax(counts))])


def sample_aggregate_mode_accuracy(node: SampleAggregateMode, alpha: ExactLike, distance: int | None, gap: int | None) -> Accuracy:
    """:class:`SampleAggregateMode`: the exact vote mode when it releases; ``P(⊥)`` and its floor (proof: :mod:`dpalg.mechanisms._common.ptr_test`)."""
    return mode_accuracy(
        "SampleAggregateMode.accuracy", node.epsilon, node.delta, "substitution", alpha, distance, gap,
        of="mode of the m block votes", blocks=node.blocks,
    )  # fmt: skip


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
    return Accuracy(a, m * step, "absolute", noise, tight, None, notes, lattice_k=k)


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
                         "pass smooth_sensitivity=s (a public upper bound on S) for a number", *notes), lattice_k=k)  # fmt: skip
    s = to_fraction(smooth_sensitivity, owner=owner, field="smooth_sensitivity")
    if s < 0:
        raise InvalidArgument(owner, "smooth_sensitivity", s, "must be >= 0")
    b = (s + step) / (c.alpha * step)
    m = rounded_noise_quantile(b, a, None)
    return Accuracy(a, min(m * step, width), "absolute", noise, False,
                    f"the smooth bound S of the block outputs' median is at most {up_text(s)}", notes, lattice_k=k)  # fmt: skip
