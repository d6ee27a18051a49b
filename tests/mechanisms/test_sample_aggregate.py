"""Sample-and-aggregate: the partition is unit-local, the mean aggregator is private and accurate."""

from __future__ import annotations

import numpy as np
import pytest

from dpalg import InvalidArgument, PureDP
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms._sample_aggregate import SampleAggregateMean, block_labels
from dpalg.noise import SeededRandomness
from dpalg.release import empirical_epsilon_lower_bound


def _mean_age(block: Dataset) -> float:
    ages = block.numeric("age")
    return float(np.mean(ages)) if ages.size else 50.0


def test_adding_a_user_changes_one_block() -> None:
    gen = np.random.default_rng(0)
    ids = gen.integers(0, 500, size=3000)
    base = as_dataset({"uid": ids, "age": gen.uniform(20, 80, 3000)})
    extra = as_dataset({"uid": np.append(ids, [10_000, 10_000]), "age": np.append(base.numeric("age"), [30.0, 31.0])})
    la = block_labels(base, 16, "uid", SeededRandomness(5))
    lb = block_labels(extra, 16, "uid", SeededRandomness(5))
    assert np.array_equal(la, lb[:-2])  # every existing user keeps its block
    assert lb[-1] == lb[-2]  # the new user's rows share one block


def test_contiguous_chunks_would_shift_blocks() -> None:
    """The seed's n-dependent contiguous slicing moves many rows when one row is added (why we don't use it)."""
    n, m = 1099, 10
    before = np.arange(n) // (n // m)
    after = np.arange(n + 1) // ((n + 1) // m)
    assert int(np.sum(before != after[:n])) > 1


def test_accuracy_on_ages() -> None:
    gen = np.random.default_rng(1)
    data = as_dataset({"age": gen.uniform(20, 80, 100_000)})
    node = SampleAggregateMean(_mean_age, blocks=100, lower=20, upper=80, epsilon=1)
    outs = np.array([node.release(data, SeededRandomness(s)) for s in range(40)], dtype=np.float64)
    # noise scale (80 - 20)/(100 * 1) = 0.6: median |error| ~ 0.42
    assert float(np.median(np.abs(outs - 50))) < 1.0
    assert node.cost() == PureDP(1)


def test_empirical_audit_does_not_refute() -> None:
    node = SampleAggregateMean(_mean_age, blocks=4, lower=20, upper=80, epsilon=1)
    x = {"age": np.full(40, 20.0)}
    y = {"age": np.append(np.full(40, 20.0), 80.0)}
    audit = empirical_epsilon_lower_bound(node, x, y, trials=6000, rng=SeededRandomness(2))
    assert audit.epsilon_lower <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"blocks": 0}, "blocks"),
        ({"lower": 5, "upper": 5}, "lower"),
        ({"epsilon": 0}, "epsilon"),
        ({"block_fn": 3}, "block_fn"),
    ],
)
def test_invalid(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"block_fn": _mean_age, "blocks": 10, "lower": 0, "upper": 1, "epsilon": 1} | kwargs
    with pytest.raises(InvalidArgument) as info:
        SampleAggregateMean(**args)  # type: ignore[arg-type]
    assert info.value.field == field
