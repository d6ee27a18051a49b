"""Sample-and-aggregate over a user-defined statistic (issue 18 item 2): ``Query.function | Clip`` as the block function.

The aggregators' privacy does not depend on the block function (tests/mechanisms/test_sample_aggregate.py);
here: each block's output is f̃ of the block's clipped, sorted values (the statistic the other nodes
release), failures give the query's fallback, the column comes from the query, refusals, audit.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from dpalg import BOTTOM, Clip, InvalidArgument, PureDP, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms.sample_aggregate._blocks import QueryStatistic, block_labels, block_values
from dpalg.mechanisms._common.user_function import statistic_value
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate
from dpalg.release._serialize import decode, encode


def log1p_mean(x: npt.NDArray[np.float64]) -> float:
    return float(np.mean(np.log1p(x)))


QUERY = Query.function(log1p_mean, column="v", fallback="0.5") | Clip(0, 100)


def _data() -> dict[str, npt.NDArray[np.float64]]:
    v = np.random.default_rng(0).lognormal(2, 1.5, 3000)
    v[::97] = np.nan  # missing values belong to no block's values
    return {"v": v}


def test_each_block_output_is_the_statistic_of_its_clipped_sorted_values() -> None:
    data = as_dataset(_data())
    labels = block_labels(data, 8, None, SeededRandomness(1))
    outs = block_values(QueryStatistic(QUERY), data, labels, 8, -1.0, column="v")
    v = _data()["v"]
    for b in range(8):
        block = v[(labels == b) & ~np.isnan(v)]
        assert outs[b] == statistic_value(log1p_mean, np.clip(block, 0, 100), 0.5)


def test_a_failing_function_gives_the_fallback_not_the_midpoint() -> None:
    def fails_on_big_blocks(x: npt.NDArray[np.float64]) -> float:
        return 1 / 0 if x.size > 20 else float(np.mean(x))

    q = Query.function(fails_on_big_blocks, column="v", fallback=3) | Clip(0, 10)
    data = as_dataset(_data())
    outs = block_values(QueryStatistic(q), data, block_labels(data, 4, None, SeededRandomness(2)), 4, -1.0, column="v")
    assert outs.tolist() == [3.0] * 4


@pytest.mark.parametrize("node", [
    lambda: SampleAggregateMean(QUERY, blocks=10, lower=0, upper=5, epsilon=1),
    lambda: SampleAggregateMedian(QUERY, blocks=10, lower=0, upper=5, epsilon=1, delta="1e-6"),
    lambda: SampleAggregateMode(Query.function(lambda x: float(round(np.median(x))), column="v", name="rounded_median") | Clip(0, 5),
                                blocks=10, epsilon=1, delta="1e-6"),
])  # fmt: skip
def test_the_aggregators_take_it_and_the_certificate_audits(node: object) -> None:
    built = node()  # type: ignore[operator]
    assert built.column == "v"
    assert repr(decode(encode(built))) == repr(built)
    release = Session(built.cost()).run(built, _data(), rng=3)
    assert isinstance(release.value, float) or release.value is BOTTOM  # the mode may decline
    assert audit_certificate(release.certificate).status == "cost_confirmed"


def test_the_release_is_near_the_statistic() -> None:
    truth = log1p_mean(np.clip(_data()["v"][~np.isnan(_data()["v"])], 0, 100))
    node = SampleAggregateMean(QUERY, blocks=30, lower=0, upper=6, epsilon=2)
    outs = [node.release(as_dataset(_data()), SeededRandomness(i)) for i in range(30)]
    assert abs(float(np.median(np.array(outs, dtype=float))) - truth) < 0.3


@pytest.mark.parametrize(("build", "match"), [
    (lambda: SampleAggregateMean(QUERY, blocks=4, lower=0, upper=5, epsilon=1, column="w"), "column='w'.*must be None or 'v'"),
    (lambda: SampleAggregateMean(Query.mean("v") | Clip(0, 1), blocks=4, lower=0, upper=5, epsilon=1), "Query.function"),
    (lambda: SampleAggregateMean(Query.function(log1p_mean, column="v"), blocks=4, lower=0, upper=5, epsilon=1), "clip"),
])  # fmt: skip
def test_refusals(build: object, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        build()  # type: ignore[operator]


def test_plain_privacy_cost_is_the_aggregators() -> None:
    assert SampleAggregateMean(QUERY, blocks=10, lower=0, upper=5, epsilon=1).cost() == PureDP(1)
