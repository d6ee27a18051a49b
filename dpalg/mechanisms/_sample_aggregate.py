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
from dpalg.measures import PureDP
from dpalg.mechanisms._common import floor_log2, positive_param
from dpalg.noise import AbstractRandomness, lattice_noise

__all__ = ["BlockFunction", "SampleAggregateMean", "block_labels"]

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


def block_outputs(fn: BlockFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, lower: float, upper: float) -> npt.NDArray[np.float64]:
    """Run the user function on each block; outputs are clipped to [lower, upper].

    A block function that raises or returns a non-finite number yields ``lower``
    (documented policy; the aggregator's guarantee does not depend on it).
    """
    out = np.empty(m, dtype=np.float64)
    for b in range(m):
        try:
            value = float(fn(data.take(labels == b)))
        except Exception:  # noqa: BLE001 - arbitrary user code; never leak its message
            value = float("nan")
        out[b] = value if np.isfinite(value) else lower
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


