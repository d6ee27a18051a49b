"""Privacy measures: exact, typed privacy losses and their conversions."""

from dpalg.measures._measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._optimal import MAX_COMBINATIONS, optimal_delta, optimal_epsilon
from dpalg.measures._pld import PLDKind, PLDPart, PLDSampled, pld_delta, pld_epsilon
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon

__all__ = ["MAX_COMBINATIONS", "ZCDP", "ApproxDP", "Measure", "PureDP", "PLDKind", "PLDPart", "PLDSampled", "optimal_delta", "optimal_epsilon", "pld_delta", "pld_epsilon", "zcdp_to_approx_epsilon"]
