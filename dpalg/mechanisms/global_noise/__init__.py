"""Global-sensitivity noise: Laplace, Gaussian and the per-coordinate calibrated vector sums.

* :mod:`~dpalg.mechanisms.global_noise._laplace_gaussian` -- :class:`Laplace` (ε-DP) and
  :class:`Gaussian` (ρ-zCDP) of counts, sums, means and histograms on a lattice, exact
  discrete noise (Canonne–Kamath–Steinke 2020);
* :mod:`~dpalg.mechanisms.global_noise._user` -- their user-level forms (one user adds at
  most the query's contribution bound);
* :mod:`~dpalg.mechanisms.global_noise._per_coordinate` -- :class:`CalibratedGaussianSum` and
  :class:`CalibratedLaplaceSum`, one noise scale per coordinate;
* :mod:`~dpalg.mechanisms.global_noise._accuracy` -- the proof of their accuracy statements.
"""

from dpalg.mechanisms.global_noise._laplace_gaussian import Gaussian, Laplace
from dpalg.mechanisms.global_noise._per_coordinate import CalibratedGaussianSum, CalibratedLaplaceSum

__all__ = ["CalibratedGaussianSum", "CalibratedLaplaceSum", "Gaussian", "Laplace"]
