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
* :mod:`~dpalg.mechanisms.auto_clip` -- AutoClipSum.

Certificates name a node class by ``module:Class``. Those written before the
frameworks had packages name the old flat modules (``dpalg.mechanisms._ptr``);
:data:`_CERTIFICATE_MODULES` keeps each old name importable as the package that
now holds its node classes, so every such certificate still decodes and audits.
"""

import importlib
import sys

from dpalg.mechanisms.auto_clip import AutoClipSum
from dpalg.mechanisms.bounded_ls import BoundedLS, BoundedLSRatio, KSWRatio, NaiveRatio, NoisyCount, PrivateRatio
from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability
from dpalg.mechanisms.ptr import ProposeTest, PTRBoundSuggestion, PTRMode, StableHistogram, suggest_ptr_bound
from dpalg.mechanisms.shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.mechanisms.smooth import SmoothBound, SmoothBoundCauchy
from dpalg.mechanisms.sample_aggregate import SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms.selection import ExponentialQuantile, NoisyMax
from dpalg.mechanisms.global_noise import CalibratedGaussianSum, CalibratedLaplaceSum, Gaussian, Laplace

__all__ = [
    "LocalSensAtDistance", "ProposeTest", "PTRMode", "PTRBoundSuggestion", "StableHistogram",
    "ptr_bottom_probability", "suggest_ptr_bound",
    "AutoClipSum", "BoundedLS", "BoundedLSRatio", "CalibratedGaussianSum", "CalibratedLaplaceSum",
    "ExponentialQuantile", "Gaussian", "KSWRatio", "Laplace", "NaiveRatio", "NoisyCount", "NoisyMax",
    "PrivateRatio", "ShiftedInverse",
    "ShiftedInverseSearch", "ShiftedInverseSearchZCDP",
    "SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode", "SmoothBound", "SmoothBoundCauchy",
]  # fmt: skip

#: old flat module (as certificates name it) -> the module that now holds its node classes
_CERTIFICATE_MODULES = {
    "_global": "dpalg.mechanisms.global_noise",
    "_per_coordinate": "dpalg.mechanisms.global_noise",
    "_exponential": "dpalg.mechanisms.selection",
    "_ptr": "dpalg.mechanisms.ptr",
    "_stable_histogram": "dpalg.mechanisms.ptr",
    "_ls_at_distance": "dpalg.mechanisms.ptr",
    "_smooth_bound": "dpalg.mechanisms.smooth",
    "_sample_aggregate": "dpalg.mechanisms.sample_aggregate",
    "_shifted_inverse": "dpalg.mechanisms.shifted_inverse",
    "_bounded_ls": "dpalg.mechanisms.bounded_ls",
    "_ratio": "dpalg.mechanisms.bounded_ls",
    "_auto_clip": "dpalg.mechanisms.auto_clip",
}
for _old, _new in _CERTIFICATE_MODULES.items():
    sys.modules.setdefault(f"{__name__}.{_old}", importlib.import_module(_new))
