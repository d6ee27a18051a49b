"""The checks of the sample-and-aggregate nodes' fields: one set shared by the three aggregators.

Each field is checked at construction (an object that exists is valid) and a
failure names the node, the field, the value and the constraint. attrs' mypy
plugin needs a named converter per node and field; each is one line over the
shared checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpalg._errors import InvalidArgument, optional_name_param
from dpalg._numbers import ExactLike, to_fraction
from dpalg.mechanisms._common.params import positive_param, unit_interval_param
from dpalg.mechanisms.sample_aggregate._blocks import BlockFunction, ColumnFunction, QueryStatistic
from dpalg.queries import Query

__all__ = ["mean_blocks", "mean_column", "mean_eps", "mean_fn", "mean_lower", "mean_reads", "mean_unit", "mean_upper", "median_blocks", "median_column", "median_delta", "median_eps", "median_fn", "median_lower", "median_reads", "median_unit", "median_upper", "mode_blocks", "mode_column", "mode_delta", "mode_eps", "mode_fn", "mode_reads", "mode_unit"]



def _check_fn(owner: str, value: object) -> BlockFunction | ColumnFunction:
    if isinstance(value, Query):  # a user-defined statistic: f̃ of the block's clipped, sorted values
        if value.kind != "function":
            raise InvalidArgument(owner, "block_fn", value, "a Query here must be a Query.function(fn, column=...) | Clip(l, u)")
        value.require_bounds(owner)
        return QueryStatistic(value)
    if not callable(value):
        raise InvalidArgument(owner, "block_fn", type(value).__name__, "must be callable: Dataset -> number, or 1-D array -> number with column=")
    return value


def _check_blocks(owner: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(owner, "blocks", value, "must be an int >= 1")
    return value


def _check_reads(owner: str, value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not all(isinstance(c, str) and c for c in value):
        raise InvalidArgument(owner, "reads", value, "must be a tuple of column names (the columns the block function reads)")
    return tuple(dict.fromkeys(value))


# named converters (attrs' mypy plugin needs named functions); one line each over the checks above
_COLUMN = "must be None (the function gets the block as a Dataset) or a column name"
_UNIT = "must be None (one row) or the id column of users"


def mean_fn(value: object) -> BlockFunction | ColumnFunction:
    return _check_fn("SampleAggregateMean", value)


def mean_blocks(value: int) -> int:
    return _check_blocks("SampleAggregateMean", value)


def mean_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMean", "epsilon", value)


def mean_unit(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMean", "unit", value, _UNIT)


def mean_column(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMean", "column", value, _COLUMN)


def mean_reads(value: Sequence[str]) -> tuple[str, ...]:
    return _check_reads("SampleAggregateMean", value)


def mean_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMean", field="lower")


def mean_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMean", field="upper")


def median_fn(value: object) -> BlockFunction | ColumnFunction:
    return _check_fn("SampleAggregateMedian", value)


def median_blocks(value: int) -> int:
    return _check_blocks("SampleAggregateMedian", value)


def median_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMedian", "epsilon", value)


def median_unit(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMedian", "unit", value, _UNIT)


def median_column(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMedian", "column", value, _COLUMN)


def median_reads(value: Sequence[str]) -> tuple[str, ...]:
    return _check_reads("SampleAggregateMedian", value)


def median_lower(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMedian", field="lower")


def median_upper(value: ExactLike) -> Fraction:
    return to_fraction(value, owner="SampleAggregateMedian", field="upper")


def median_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("SampleAggregateMedian", "delta", value)


def mode_fn(value: object) -> BlockFunction | ColumnFunction:
    return _check_fn("SampleAggregateMode", value)


def mode_blocks(value: int) -> int:
    return _check_blocks("SampleAggregateMode", value)


def mode_eps(value: ExactLike) -> Fraction:
    return positive_param("SampleAggregateMode", "epsilon", value)


def mode_unit(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMode", "unit", value, _UNIT)


def mode_column(value: str | None) -> str | None:
    return optional_name_param("SampleAggregateMode", "column", value, _COLUMN)


def mode_reads(value: Sequence[str]) -> tuple[str, ...]:
    return _check_reads("SampleAggregateMode", value)


def mode_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("SampleAggregateMode", "delta", value)
