"""Sample-and-aggregate: a release's m block outputs, computed where the data is.

A Spark frame's labels and blocks are computed on the executors
(:mod:`dpalg.mechanisms.sample_aggregate._spark`), everything else in numpy
(:mod:`dpalg.mechanisms.sample_aggregate._blocks`); both give the same outputs
bit for bit, so the choice of backend is invisible in the release.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dpalg.data import Dataset
from dpalg.data._spark import SparkSource
from dpalg.mechanisms.sample_aggregate._blocks import BlockFunction, ColumnFunction, block_values, labels_with_key
from dpalg.mechanisms.sample_aggregate._spark import spark_block_values
from dpalg.noise import AbstractRandomness, prf_secret

__all__ = ["release_block_values"]


def release_block_values(
    fn: BlockFunction | ColumnFunction, data: Dataset, m: int, unit: str | None, rng: AbstractRandomness, failure: float,
    *, column: str | None, reads: Sequence[str], owner: str,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """A release's m block outputs (unclipped; ``failure`` for an empty or failing block), on the data's backend.

    Draws the key first (:func:`~dpalg.noise.prf_secret`), then computes the
    labels and the outputs where the data is: on the executors for a Spark frame
    (:func:`~dpalg.mechanisms.sample_aggregate._spark.spark_block_values`; only the
    m outputs reach the driver), in numpy otherwise (a polars frame's columns are
    converted). Both compute the same labels and blocks, so a seeded release is
    the same bit for bit.
    """
    secret = prf_secret(rng)
    if _is_spark(data):
        got = spark_block_values(fn, data, m, unit, secret, failure, column=column, reads=reads, owner=owner)
        if got is not None:
            return got
    labels = labels_with_key(data, m, unit, secret, column, reads)
    return block_values(fn, data, labels, m, failure, column=column, reads=reads)


def _is_spark(data: Dataset) -> bool:
    """Whether the dataset is a Spark frame itself (not rows of one taken into memory); imports no pyspark."""
    return isinstance(data.source, SparkSource)
