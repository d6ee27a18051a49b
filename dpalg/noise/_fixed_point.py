"""Fixed-point clipped sums, as the noise floor's users name them.

The arithmetic is deterministic and the reductions compute it too, so it is
defined one floor down, in :mod:`dpalg.data._fixed_point` (Casacuberta et al.
2022); this module keeps the names where mechanisms import them.
"""

from dpalg.data._fixed_point import clipped_sum_sensitivity, exact_clipped_sum, lattice_bounds, square_term_bound

__all__ = ["clipped_sum_sensitivity", "exact_clipped_sum", "lattice_bounds", "square_term_bound"]
