"""Mechanism nodes. Each cites its theorem and states its neighbouring relation."""

from dpalg.mechanisms._auto_clip import AutoClipSum
from dpalg.mechanisms._bounded_ls import BoundedLS, NoisyCount
from dpalg.mechanisms._exponential import ExponentialQuantile, NoisyMax
from dpalg.mechanisms._global import Gaussian, Laplace
from dpalg.mechanisms._per_coordinate import CalibratedGaussianSum, CalibratedLaplaceSum
from dpalg.mechanisms._ratio import BoundedLSRatio, KSWRatio, NaiveRatio, PrivateRatio
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms._ptr import ProposeTest, PTRMode
from dpalg.mechanisms._ptr_guidance import PTRBoundSuggestion, suggest_ptr_bound
from dpalg.mechanisms._sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms._smooth_bound import SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.mechanisms._stable_histogram import StableHistogram

__all__ = [
    "LocalSensAtDistance", "ProposeTest", "PTRMode", "PTRBoundSuggestion", "StableHistogram",
    "ptr_bottom_probability", "suggest_ptr_bound",
    "AutoClipSum", "BoundedLS", "BoundedLSRatio", "CalibratedGaussianSum", "CalibratedLaplaceSum",
    "ExponentialQuantile", "Gaussian", "KSWRatio", "Laplace", "NaiveRatio", "NoisyCount", "NoisyMax",
    "PrivateRatio", "ShiftedInverse",
    "ShiftedInverseSearch", "ShiftedInverseSearchZCDP",
    "SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode", "SmoothBound", "SmoothBoundCauchy",
]  # fmt: skip
