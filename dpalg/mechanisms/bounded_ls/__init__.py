"""Privately bounded local sensitivity (seed 000 Theorem 1) and the private ratios built on it.

* :mod:`~dpalg.mechanisms.bounded_ls._bounded_ls` -- :class:`BoundedLS` and :class:`NoisyCount`:
  noisy counts bound the local sensitivity, then the value is released on a lattice;
* :mod:`~dpalg.mechanisms.bounded_ls._lattice` -- the lattice release scaled to the private bound;
* :mod:`~dpalg.mechanisms.bounded_ls._monotone` -- parsing and proving monotone bound expressions;
* :mod:`~dpalg.mechanisms.bounded_ls._ratio` -- :class:`PrivateRatio`, :class:`NaiveRatio`,
  :class:`KSWRatio` (Kulesza–Suresh–Wang 2024) and :class:`BoundedLSRatio`;
* :mod:`~dpalg.mechanisms.bounded_ls._accuracy` -- the proofs of their accuracy statements.
"""

from dpalg.mechanisms.bounded_ls._bounded_ls import BoundedLS, NoisyCount
from dpalg.mechanisms.bounded_ls._ratio import BoundedLSRatio, KSWRatio, NaiveRatio, PrivateRatio

__all__ = ["BoundedLS", "BoundedLSRatio", "KSWRatio", "NaiveRatio", "NoisyCount", "PrivateRatio"]
