"""Sample-and-aggregate (Nissim–Raskhodnikova–Smith 2007, seed 002).

The data is split into m disjoint blocks, an arbitrary user function runs on
each block, and a private aggregator combines the m outputs. dpalg's guarantee
rests on the aggregator only: the block function may be any Python callable.

The partition must not depend on the other units (seed 002 slices rows into
contiguous chunks whose size depends on n, which breaks under add/remove: one
added row shifts every later chunk). Here each unit gets its block from its own
random label: rows get independent uniform labels (drawn by the noise layer);
users get ``keyed_hash(key, id) mod m`` with a fresh random 128-bit key per
release. Adding or removing one unit therefore changes exactly one block
(`tests/mechanisms/test_sample_aggregate.py` checks it), so the vector of m
block outputs changes in at most one coordinate: a *substitution* neighbour.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg._bottom import BOTTOM
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms._common import floor_log2, granularity_param, positive_param
from dpalg.mechanisms._ptr import ptr_cap, ptr_test_passes
from dpalg.mechanisms._smooth_bound import auto_granularity, check_range, smooth_release
from dpalg.noise import AbstractRandomness, lattice_noise
from dpalg.noise._admissible import Admissibility, LaplaceNoise
from dpalg.sensitivity._catalog import mode_gap_distance

__all__ = ["BlockFunction", "SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode", "block_labels", "blocks_of"]

BlockFunction = Callable[[Dataset], float]


def block_labels(data: Dataset, m: int, unit: str | None, rng: AbstractRandomness) -> npt.NDArray[np.int64]:
    """Each row's block in [0, m): independent per unit, never depending on other units."""
    if unit is None:
        row_labels: npt.NDArray[np.int64] = rng.below(m, data.n_rows)
        return row_labels
    key = rng.big_below(1 << 128).to_bytes(16, "little")
    ids = data.column(unit)
    uniq, inverse = np.unique(ids, return_inverse=True)
    labels = np.empty(uniq.size, dtype=np.int64)
    for i, ident in enumerate(uniq.tolist()):
        digest = hashlib.blake2b(repr(ident).encode(), key=key, digest_size=8).digest()
        labels[i] = int.from_bytes(digest, "little") % m
    out: npt.NDArray[np.int64] = labels[inverse.reshape(-1)]
    return out


def blocks_of(data: Dataset, labels: npt.NDArray[np.int64], m: int) -> list[Dataset]:
    """The m blocks (rows keep their order), in O(n log n) by one stable sort of the labels."""
    order = np.argsort(labels, kind="stable")
    cuts = np.searchsorted(labels[order], np.arange(m + 1))
    return [data.take(order[cuts[b] : cuts[b + 1]]) for b in range(m)]


def block_values(fn: BlockFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, failure: float) -> npt.NDArray[np.float64]:
    """Run the user function on each block; a raise or a NaN yields ``failure``.

    Each output is a deterministic function of its block alone (never of the
    others), which is all the aggregators' proofs use.
    """
    out = np.empty(m, dtype=np.float64)
    for b, block in enumerate(blocks_of(data, labels, m)):
        try:
            value = float(fn(block))
        except Exception:  # noqa: BLE001 - arbitrary user code; never leak its message
            value = float("nan")
        out[b] = failure if math.isnan(value) else value
    return out


def block_outputs(fn: BlockFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, lower: float, upper: float) -> npt.NDArray[np.float64]:
    """Run the user function on each block; outputs are clipped to [lower, upper].

    A block function that raises or returns a non-finite number yields ``lower``
    (documented policy; the aggregator's guarantee does not depend on it).
    """
    out = block_values(fn, data, labels, m, lower)
    out[~np.isfinite(out)] = lower
    return np.clip(out, lower, upper)


def _fn(value: object) -> BlockFunction:
    if not callable(value):
        raise InvalidArgument("SampleAggregateMean", "block_fn", type(value).__name__, "must be callable Dataset -> float")
    return value


def _blocks(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("SampleAggregateMean", "blocks", value, "must be an int >= 1")
    return value


def _sa_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMean", "epsilon", value)


def _sa_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMean", field="lower")


def _sa_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMean", field="upper")


@final
@attrs.frozen
class SampleAggregateMean(AbstractPrimitive[PureDP]):
    """Sample-and-aggregate with the clipped mean of the block outputs (seed 002).

    Args:
        block_fn: any callable from a :class:`~dpalg.data.Dataset` block to a number.
        blocks: the public number of blocks m.
        lower, upper: the declared range of the block outputs (outputs are clipped).
        epsilon: ε > 0.
        unit: ``None`` (one row) or the id column of users.

    Privacy guarantee:
        ε-DP for adding or removing one unit: the unit falls in one block (its
        own random label), so one of the m clipped outputs changes, by at most
        u − l; their mean changes by at most (u − l)/m and is released with
        discrete Laplace noise of scale (u − l)/(mε) + lattice rounding
        (seed 002's sample-and-aggregate mean; Dwork et al. 2006).
    """

    block_fn: BlockFunction = attrs.field(converter=_fn, eq=False)
    blocks: int = attrs.field(converter=_blocks)
    lower: Fraction = attrs.field(converter=_sa_lower)
    upper: Fraction = attrs.field(converter=_sa_upper)
    epsilon: Fraction = attrs.field(converter=_sa_eps)
    unit: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.lower >= self.upper:
            raise InvalidArgument("SampleAggregateMean", "lower", self.lower, f"must be < upper={self.upper}")

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

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

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy mean of the block outputs."""
        labels = block_labels(data, self.blocks, self.unit, rng)
        outs = block_outputs(self.block_fn, data, labels, self.blocks, float(self.lower), float(self.upper))
        k = self.lattice_k()
        # fsum is correctly rounded and one division follows: each side errs by at most
        # 2^-51 max(|l|, |u|), so the two neighbouring values move by 2^-50 max(|l|, |u|) more
        err = max(abs(self.lower), abs(self.upper)) / 2**50
        sens = (self.upper - self.lower) / self.blocks + Fraction(2) ** k + err
        value = math.fsum(outs.tolist()) / self.blocks
        noisy = lattice_noise(np.array([value]), k=k, kind="laplace", scale=sens / self.epsilon, rng=rng)
        return float(noisy[0])




# --- the smooth-sensitivity median of the block outputs ---------------------------------


def _median_fn(value: object) -> BlockFunction:
    if not callable(value):
        raise InvalidArgument("SampleAggregateMedian", "block_fn", type(value).__name__, "must be callable Dataset -> float")
    return value


def _median_blocks(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("SampleAggregateMedian", "blocks", value, "must be an int >= 1")
    return value


def _median_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMedian", "epsilon", value)


def _median_delta(value: ExactLike) -> Fraction:
    d = to_fraction(value, owner="SampleAggregateMedian", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("SampleAggregateMedian", "delta", value, "must be in (0, 1)")
    return d


def _median_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMedian", field="lower")


def _median_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMedian", field="upper")


def _median_k(value: int | None) -> int | None:
    return granularity_param("SampleAggregateMedian", value)


@final
@attrs.frozen
class SampleAggregateMedian(AbstractPrimitive[ApproxDP]):
    """Sample-and-aggregate with the smooth-sensitivity median of the block outputs (NRS07 §4).

    The m block outputs, clipped to the declared ``[lower, upper]``, are aggregated
    by their (lower) median with Laplace noise scaled to its smooth sensitivity
    *under substitution* of one block output (m is public), exactly as
    :class:`~dpalg.mechanisms.SmoothBound` does for a column.

    Args:
        block_fn: any callable from a :class:`~dpalg.data.Dataset` block to a number.
        blocks: the public number of blocks m.
        lower, upper: the declared range of the block outputs (outputs are clipped).
        epsilon: ε > 0.
        delta: δ in (0, 1).
        unit: ``None`` (one row) or the id column of users.
        granularity: lattice exponent (default from the range, as SmoothBound).

    Privacy guarantee:
        (ε, δ)-DP for adding or removing one unit. The unit's block is its own
        label, so the vector of m clipped outputs of neighbouring datasets differs
        in at most one coordinate (a substitution neighbour, m fixed); the median of
        that vector released with Laplace noise ``2S'/ε`` and ``β ≤ ε/(2 ln(2/δ))`` is
        (ε, δ)-DP under substitution (NRS07 Lemmas 2.6, 2.9; exact lattice sampling).
        Averaging over the labels of the other units (which the unit does not
        affect) keeps the inequality.
    """

    block_fn: BlockFunction = attrs.field(converter=_median_fn, eq=False)
    blocks: int = attrs.field(converter=_median_blocks)
    lower: Fraction = attrs.field(converter=_median_lower)
    upper: Fraction = attrs.field(converter=_median_upper)
    epsilon: Fraction = attrs.field(converter=_median_eps)
    delta: Fraction = attrs.field(converter=_median_delta)
    unit: str | None = None
    granularity: int | None = attrs.field(default=None, converter=_median_k)

    def __attrs_post_init__(self) -> None:
        if self.lower >= self.upper:
            raise InvalidArgument("SampleAggregateMedian", "lower", self.lower, f"must be < upper={self.upper}")
        check_range("SampleAggregateMedian", self.lower, self.upper, self.constants().alpha)
        k_min = auto_granularity(self.lower, self.upper, self.constants().alpha)
        if self.granularity is not None and self.granularity < k_min:
            raise InvalidArgument("SampleAggregateMedian", "granularity", self.granularity, f"must be >= {k_min}")

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

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

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy median of the block outputs (clamped to the range)."""
        labels = block_labels(data, self.blocks, self.unit, rng)
        outs = np.sort(block_outputs(self.block_fn, data, labels, self.blocks, float(self.lower), float(self.upper)))
        # float(lower/upper) may round outward by an ulp; keep the outputs inside the exact range
        outs = np.clip(outs, _inside_float(self.lower, up=True), _inside_float(self.upper, up=False))
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

#: the vote of a block whose function raises or returns NaN
FAILURE_VOTE = math.inf


def _mode_fn(value: object) -> BlockFunction:
    if not callable(value):
        raise InvalidArgument("SampleAggregateMode", "block_fn", type(value).__name__, "must be callable Dataset -> float")
    return value


def _mode_blocks(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("SampleAggregateMode", "blocks", value, "must be an int >= 1")
    return value


def _mode_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMode", "epsilon", value)


def _mode_delta(value: ExactLike) -> Fraction:
    d = to_fraction(value, owner="SampleAggregateMode", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("SampleAggregateMode", "delta", value, "must be in (0, 1)")
    return d


@final
@attrs.frozen
class SampleAggregateMode(AbstractPrimitive[ApproxDP]):
    """Sample-and-aggregate with the stability-based mode of the block outputs (PTR, β = 0).

    Each block votes with its output (a number, e.g. a class label or a rounded
    estimate; a block that raises or returns NaN votes :data:`FAILURE_VOTE` = +inf).
    γ = the number of block outputs that must change before the mode (smallest
    among ties) changes, minus one (:func:`~dpalg.sensitivity.mode_gap_distance`
    under substitution), capped by :func:`~dpalg.mechanisms._ptr.ptr_cap`; if
    ``γ + Z ≤ ln(1/δ)/ε`` (Z discrete Laplace of scale 1/ε) release ⊥, else the exact
    mode.

    Privacy guarantee:
        (ε, δ)-DP for adding or removing one unit: the block vector changes in at
        most one coordinate (substitution, m public), and PTR for the mode with
        proposed bound 0 is (ε, δ)-DP under substitution (seed 003, "PTR for the
        mode"; the same test as :class:`~dpalg.mechanisms.PTRMode`). Returns
        :data:`dpalg.BOTTOM` when the test fails.
    """

    block_fn: BlockFunction = attrs.field(converter=_mode_fn, eq=False)
    blocks: int = attrs.field(converter=_mode_blocks)
    epsilon: Fraction = attrs.field(converter=_mode_eps)
    delta: Fraction = attrs.field(converter=_mode_delta)
    unit: str | None = None

    @property
    def neighbouring(self) -> Neighbouring:
        """One unit (row or user), add/remove."""
        return Neighbouring(self.unit, "add_remove")

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "sample-and-aggregate, PTR for the mode of m block outputs, bound 0, threshold ln(1/delta)/eps (seed 003)",
            (("blocks", str(self.blocks)), ("epsilon", str(self.epsilon)), ("delta", str(self.delta))),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """⊥ or the mode of the block outputs."""
        labels = block_labels(data, self.blocks, self.unit, rng)
        votes = block_values(self.block_fn, data, labels, self.blocks, FAILURE_VOTE)
        gamma = min(mode_gap_distance(votes, "substitution"), ptr_cap(self.epsilon, self.delta))
        if not ptr_test_passes(gamma, self.epsilon, self.delta, rng):
            return BOTTOM
        uniq, counts = np.unique(votes, return_counts=True)
        return float(uniq[int(np.argmax(counts))])
