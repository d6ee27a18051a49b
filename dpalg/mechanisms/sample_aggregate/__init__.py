"""Sample-and-aggregate (Nissim–Raskhodnikova–Smith 2007): a user function on m blocks, aggregated privately.

* :mod:`~dpalg.mechanisms.sample_aggregate._aggregate` -- :class:`SampleAggregateMean`,
  :class:`SampleAggregateMedian` and :class:`SampleAggregateMode`, with their accuracy statements;
* :mod:`~dpalg.mechanisms.sample_aggregate._blocks` -- the unit-local partition, the canonical
  blocks and the guarded calls of the block function (numpy);
* :mod:`~dpalg.mechanisms.sample_aggregate._spark` -- the same blocks and outputs on Spark executors;
* :mod:`~dpalg.mechanisms.sample_aggregate._backends` -- which of the two computes a release's outputs.
"""

from dpalg.mechanisms.sample_aggregate._aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode

__all__ = ["SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode"]
