"""Privacy measures: exact, typed privacy losses and their conversions."""

from dpalg.measures._measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon

__all__ = ["ZCDP", "ApproxDP", "Measure", "PureDP", "zcdp_to_approx_epsilon"]
