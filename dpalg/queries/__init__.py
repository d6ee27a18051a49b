"""The query catalog: what each statistic is."""

from dpalg.queries._bounding import ClipPerUser, MaxKeysPerUser, MaxRowsPerUser
from dpalg.queries._query import BOUNDED_KINDS, Clip, JoinPublic, Query, QueryKind, Where, clip_inside, evaluate_values, quantile_index

__all__ = [
    "BOUNDED_KINDS", "Clip", "ClipPerUser", "JoinPublic", "MaxKeysPerUser", "MaxRowsPerUser", "Query", "QueryKind", "Where",
    "clip_inside", "evaluate_values", "quantile_index",
]
