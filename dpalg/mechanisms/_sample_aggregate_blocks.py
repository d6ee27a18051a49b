"""Sample-and-aggregate: the unit-local partition into blocks and the block outputs.

The partition and the policy for the user's block function are described in
:mod:`dpalg.mechanisms._sample_aggregate`; this module holds the data path
(labels, blocks, the guarded calls), the aggregators hold the privacy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import final

import attrs

import numpy as np
import numpy.typing as npt

from dpalg.data import Dataset
from dpalg.mechanisms._user_function import as_real, call_quietly, quiet, statistic_value
from dpalg.noise import AbstractRandomness
from dpalg.queries import Query
from dpalg.queries._query import clip_inside

__all__ = ["BlockFunction", "ColumnFunction", "QueryStatistic", "block_labels", "block_outputs", "block_values", "blocks_of"]

#: a function of one block as a Dataset (the default form)
BlockFunction = Callable[[Dataset], object]
#: a function of one block's values in ``column`` (the column form), e.g. ``np.median``
ColumnFunction = Callable[[npt.NDArray[np.float64]], object]

@final
@attrs.frozen
class QueryStatistic:
    """A ``Query.function(fn, column=...) | Clip(l, u)`` as a block function of that column.

    Called on a block's non-missing values, it returns f̃ of the block: ``fn`` of
    the values clipped to ``[l, u]`` and sorted, or the query's public fallback
    when ``fn`` fails (:func:`~dpalg.mechanisms._user_function.statistic_value`), so
    a block's output is the same statistic :class:`~dpalg.mechanisms.ProposeTest`
    and :class:`~dpalg.mechanisms.SmoothBound` release for the whole data.
    """

    query: Query

    def __call__(self, values: npt.NDArray[np.float64]) -> float:
        q = self.query
        assert q.fn is not None and q.lower is not None and q.upper is not None
        return statistic_value(q.fn, clip_inside(np.asarray(values, dtype=np.float64), q.lower, q.upper), float(q.fallback or 0))

    @property
    def __name__(self) -> str:  # the name certificates and messages show
        return str(self.query.name)


def block_labels(data: Dataset, m: int, unit: str | None, rng: AbstractRandomness) -> npt.NDArray[np.int64]:
    """Each row's block in [0, m), independent per unit, never depending on other units; -1: no unit.

    Rows get independent uniform labels. Users get ``blake2b(repr(id), key) mod m``
    with a fresh 128-bit key; ids are read by the key policy of the data layer
    (:meth:`~dpalg.data.Dataset.key_index`, the same reading as
    :func:`~dpalg.data.unit_index`: ``1`` and ``1.0`` are one user, ``1``,
    ``"1"`` and ``True`` three), and a row whose id is missing gets -1 (no block).
    """
    if unit is None:
        row_labels: npt.NDArray[np.int64] = rng.below(m, data.n_rows)
        return row_labels
    key = rng.big_below(1 << 128).to_bytes(16, "little")
    ids, codes = data.key_index(unit)
    labels = np.empty(len(ids) + 1, dtype=np.int64)
    for i, ident in enumerate(ids):
        digest = hashlib.blake2b(repr(ident).encode(), key=key, digest_size=8).digest()
        labels[i] = int.from_bytes(digest, "little") % m
    labels[-1] = -1  # code -1 (missing id) indexes this entry
    out: npt.NDArray[np.int64] = labels[codes]
    return out


def _cuts(labels: npt.NDArray[np.int64], m: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    order = np.argsort(labels, kind="stable")
    cuts = np.searchsorted(labels[order], np.arange(m + 1))  # rows labelled -1 sort before block 0
    return order, cuts


def blocks_of(data: Dataset, labels: npt.NDArray[np.int64], m: int) -> list[Dataset]:
    """The m blocks (rows keep their order; rows labelled -1 are in none), by one stable sort."""
    order, cuts = _cuts(labels, m)
    return [data.take(order[cuts[b] : cuts[b + 1]]) for b in range(m)]


def block_values(
    fn: BlockFunction | ColumnFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, failure: float,
    *, column: str | None = None,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """Run the user function on each non-empty block; an empty or failing block yields ``failure``.

    A block fails when the function raises an :class:`Exception` or returns
    something that is not a real number (a str, None, NaN); ``±inf`` is kept.
    Each output is a deterministic function of its block alone (never of the
    others), which is all the aggregators' proofs use.
    """
    out = np.full(m, failure, dtype=np.float64)
    order, cuts = _cuts(labels, m)
    call: Callable[[object], object] = fn  # type: ignore[assignment]  # the form decides the argument
    with quiet():
        if column is not None:
            values = data.numeric(column)[order]
            for b in range(m):
                block = values[cuts[b] : cuts[b + 1]]
                block = block[~np.isnan(block)]  # missing values are dropped (the data policy)
                if block.size:
                    real = as_real(call_quietly(call, block))
                    out[b] = failure if real is None else real
        else:
            for b in range(m):
                if cuts[b + 1] > cuts[b]:
                    real = as_real(call_quietly(call, data.take(order[cuts[b] : cuts[b + 1]])))
                    out[b] = failure if real is None else real
    return out


def block_outputs(
    fn: BlockFunction | ColumnFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, lower: float, upper: float,
    *, column: str | None = None,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """The block outputs clipped to ``[lower, upper]``; an empty or failing block yields the midpoint.

    The midpoint is public and inside the range, so the clipped output of each
    block stays a function of that block alone with values in ``[lower, upper]``.
    """
    out = block_values(fn, data, labels, m, lower / 2 + upper / 2, column=column)
    return np.clip(out, lower, upper)


