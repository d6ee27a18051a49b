"""The noise layer: the only place dpalg draws randomness.

Exact samplers (no floating point decides any sample; Mironov 2012):

* :func:`bernoulli`, :func:`bernoulli_exp` -- Bernoulli(p) for rational ``p`` and
  Bernoulli(exp(-gamma)) (Canonne--Kamath--Steinke 2020, Algorithm 1);
* :func:`discrete_laplace`, :func:`discrete_gaussian` -- vectorised, exact
  (CKS 2020, Algorithms 2 and 3);
* :func:`sample_exp_weights`, :func:`exponential_mechanism` -- the exact
  exponential mechanism over weighted runs of candidates;
* lattice release of real values (:func:`choose_granularity`,
  :func:`round_to_lattice`, :func:`lattice_noise`, :func:`lattice_sensitivity`);
* partition selection (:func:`sample_keep`, the optimal keep probabilities of
  Desfontaines et al. 2022, exact and in count-independent work;
  :func:`sample_keep_gaussian` for zCDP plans);
* float-safe clipped sums (:func:`exact_clipped_sum`,
  :func:`clipped_sum_sensitivity`; Casacuberta et al. 2022).

Randomness sources are re-exported from :mod:`dpalg.noise._random`.
"""

from dpalg.noise._bernoulli import bernoulli, bernoulli_exp
from dpalg.noise._admissible import AbstractAdmissibleNoise, Admissibility, CauchyNoise, LaplaceNoise
from dpalg.noise._admissible_zcdp import ArsinhNormal, LaplaceLogNormal, UniformLogNormal
from dpalg.noise._exponential import exponential_mechanism, sample_exp_runs, sample_exp_weights
from dpalg.noise._fixed_point import clipped_sum_sensitivity, exact_clipped_sum
from dpalg.noise._gaussian import discrete_gaussian
from dpalg.noise._laplace import discrete_laplace
from dpalg.noise._partition import (
    certain_keep_count,
    gaussian_selection_threshold,
    keep_probability_bounds,
    per_partition_budget,
    sample_keep,
    sample_keep_gaussian,
)
from dpalg.noise._lattice import choose_granularity, lattice_noise, lattice_sensitivity, round_to_lattice
from dpalg.noise._random import AbstractRandomness, GeneratorRandomness, RngLike, SecureRandomness, SeededRandomness, prf_secret, resolve_rng

__all__ = [
    "AbstractAdmissibleNoise",
    "Admissibility",
    "ArsinhNormal",
    "CauchyNoise",
    "LaplaceLogNormal",
    "LaplaceNoise",
    "UniformLogNormal",
    "AbstractRandomness",
    "GeneratorRandomness",
    "RngLike",
    "SecureRandomness",
    "SeededRandomness",
    "bernoulli",
    "prf_secret",
    "bernoulli_exp",
    "certain_keep_count",
    "gaussian_selection_threshold",
    "keep_probability_bounds",
    "per_partition_budget",
    "sample_keep",
    "sample_keep_gaussian",
    "choose_granularity",
    "clipped_sum_sensitivity",
    "discrete_gaussian",
    "discrete_laplace",
    "exact_clipped_sum",
    "exponential_mechanism",
    "lattice_noise",
    "lattice_sensitivity",
    "resolve_rng",
    "round_to_lattice",
    "sample_exp_runs",
    "sample_exp_weights",
]
