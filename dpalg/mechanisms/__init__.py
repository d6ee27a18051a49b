"""Mechanism nodes. Each cites its theorem and states its neighbouring relation."""

from dpalg.mechanisms._bounded_local import BoundedLocalSensitivity, PrivateCount
from dpalg.mechanisms._exponential import ExponentialQuantile, NoisyMax
from dpalg.mechanisms._global import Gaussian, Laplace
from dpalg.mechanisms._per_coord import PerCoordinateGaussian, PerCoordinateLaplace
from dpalg.mechanisms._private_ratio import RatioKSW, RatioLocalSensitivity, RatioNaive
from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP

__all__ = [
    "BoundedLocalSensitivity", "ExponentialQuantile", "Gaussian", "Laplace", "NoisyMax", "PerCoordinateGaussian",
    "PerCoordinateLaplace", "PrivateCount", "RatioKSW", "RatioLocalSensitivity", "RatioNaive", "ShiftedInverse",
    "ShiftedInverseSearch", "ShiftedInverseSearchZCDP",
]  # fmt: skip
