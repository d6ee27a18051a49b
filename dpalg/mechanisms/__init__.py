"""Mechanism nodes. Each cites its theorem and states its neighbouring relation.

One sub-package per framework; each imports only the lower layers and
:mod:`dpalg.mechanisms._common`, never another framework:

* :mod:`~dpalg.mechanisms.global_noise` -- Laplace, Gaussian, per-coordinate calibrated sums;
* :mod:`~dpalg.mechanisms.selection` -- the exponential mechanism and permute-and-flip
  (ExponentialQuantile, NoisyMax);
* :mod:`~dpalg.mechanisms.ptr` -- propose-test-release (ProposeTest, PTRMode, StableHistogram,
  bound guidance);
* :mod:`~dpalg.mechanisms.smooth` -- smooth sensitivity (SmoothBound, SmoothBoundCauchy);
* :mod:`~dpalg.mechanisms.sample_aggregate` -- sample-and-aggregate (mean, median, mode; Spark);
* :mod:`~dpalg.mechanisms.shifted_inverse` -- the shifted inverse of Fang–Dong–Yi 2022;
* :mod:`~dpalg.mechanisms.bounded_ls` -- privately bounded local sensitivity and the ratios;
* :mod:`~dpalg.mechanisms.auto_clip` -- AutoClipSum;
* :mod:`~dpalg.mechanisms.r2t` -- R2T, the race to the top (Dong et al. 2022).

Certificates name a node class by ``module:Class``: for the classes defined before
the frameworks had packages, the old flat module (``dpalg.mechanisms._ptr:ProposeTest``),
kept as a stable name in :data:`CERTIFICATE_NAMES`, so certificates are the same
as before the split and every earlier one still decodes and audits.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from dpalg.mechanisms.auto_clip import AutoClipSum
from dpalg.mechanisms.bounded_ls import BoundedLS, BoundedLSRatio, KSWRatio, NaiveRatio, NoisyCount, PrivateRatio
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability
from dpalg.mechanisms.r2t import R2T
from dpalg.mechanisms.ptr import ProposeTest, PTRBoundSuggestion, PTRMode, StableHistogram, suggest_ptr_bound
from dpalg.mechanisms.shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.mechanisms.smooth import SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms.sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms.selection import ExponentialQuantile, NoisyMax
from dpalg.mechanisms.global_noise import CalibratedGaussianSum, CalibratedLaplaceSum, Gaussian, Laplace
from dpalg.mechanisms.sample_aggregate._blocks import QueryStatistic
from dpalg.mechanisms.smooth._formula import FormulaEnvelope

__all__ = [
    "LocalSensAtDistance", "ProposeTest", "PTRMode", "PTRBoundSuggestion", "StableHistogram",
    "ptr_bottom_probability", "suggest_ptr_bound",
    "AutoClipSum", "BoundedLS", "BoundedLSRatio", "CalibratedGaussianSum", "CalibratedLaplaceSum",
    "ExponentialQuantile", "Gaussian", "KSWRatio", "Laplace", "NaiveRatio", "NoisyCount", "NoisyMax",
    "PrivateRatio", "R2T", "ShiftedInverse",
    "ShiftedInverseSearch", "ShiftedInverseSearchZCDP",
    "SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode", "SmoothBound", "SmoothBoundCauchy",
]  # fmt: skip

#: the name a certificate gives each mechanism class (``"module:Class"``). A name is a stable
#: identifier, not an import path: it is the module that defined the class when certificates first
#: recorded it, so moving a class (as the split into one package per framework did) changes no
#: certificate, and every certificate written before still decodes. A class added later is named by
#: its own module (the serializer's default) and needs no entry.
CERTIFICATE_NAMES: Final[Mapping[type, str]] = MappingProxyType({
    AutoClipSum: "dpalg.mechanisms._auto_clip:AutoClipSum",
    BoundedLS: "dpalg.mechanisms._bounded_ls:BoundedLS",
    NoisyCount: "dpalg.mechanisms._bounded_ls:NoisyCount",
    BoundedLSRatio: "dpalg.mechanisms._ratio:BoundedLSRatio",
    KSWRatio: "dpalg.mechanisms._ratio:KSWRatio",
    NaiveRatio: "dpalg.mechanisms._ratio:NaiveRatio",
    PrivateRatio: "dpalg.mechanisms._ratio:PrivateRatio",
    CalibratedGaussianSum: "dpalg.mechanisms._per_coordinate:CalibratedGaussianSum",
    CalibratedLaplaceSum: "dpalg.mechanisms._per_coordinate:CalibratedLaplaceSum",
    Gaussian: "dpalg.mechanisms._global:Gaussian",
    Laplace: "dpalg.mechanisms._global:Laplace",
    ExponentialQuantile: "dpalg.mechanisms._exponential:ExponentialQuantile",
    NoisyMax: "dpalg.mechanisms._exponential:NoisyMax",
    LocalSensAtDistance: "dpalg.mechanisms._ls_at_distance:LocalSensAtDistance",
    ProposeTest: "dpalg.mechanisms._ptr:ProposeTest",
    PTRMode: "dpalg.mechanisms._ptr:PTRMode",
    StableHistogram: "dpalg.mechanisms._stable_histogram:StableHistogram",
    SmoothBound: "dpalg.mechanisms._smooth_bound:SmoothBound",
    SmoothBoundCauchy: "dpalg.mechanisms._smooth_bound:SmoothBoundCauchy",
    FormulaEnvelope: "dpalg.mechanisms._smooth_formula:FormulaEnvelope",
    SampleAggregateMean: "dpalg.mechanisms._sample_aggregate:SampleAggregateMean",
    SampleAggregateMedian: "dpalg.mechanisms._sample_aggregate:SampleAggregateMedian",
    SampleAggregateMode: "dpalg.mechanisms._sample_aggregate:SampleAggregateMode",
    QueryStatistic: "dpalg.mechanisms._sample_aggregate_blocks:QueryStatistic",
    ShiftedInverse: "dpalg.mechanisms._shifted_inverse:ShiftedInverse",
    ShiftedInverseSearch: "dpalg.mechanisms._shifted_inverse:ShiftedInverseSearch",
    ShiftedInverseSearchZCDP: "dpalg.mechanisms._shifted_inverse:ShiftedInverseSearchZCDP",
})  # fmt: skip
