"""The query catalog: what each statistic is."""

from dpalg.queries._query import BOUNDED_KINDS, Clip, Query, QueryKind, evaluate_values, quantile_index

__all__ = ["BOUNDED_KINDS", "Clip", "Query", "QueryKind", "evaluate_values", "quantile_index"]
