"""GridCells.threshold: the smallest float whose grid cell reaches t (the Spark grid's second pass compares raw values with it).

A value's cell is monotone in the value, so ``cell(x) >= t`` exactly when
``x >= threshold(t)``: checked at the threshold and at the float just below it, on
grids whose bounds are small, negative, fractional and near the float maximum.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpalg.data._numpy_reductions import grid_counts
from dpalg.data._source_reductions import GridCells


@pytest.mark.parametrize(
    ("lower", "upper", "bits"),
    [(Fraction(0), Fraction(1), 20), (Fraction(-7, 3), Fraction(11, 5), 14), (Fraction(-(10**308)), Fraction(10**308), 16), (Fraction(5), Fraction(6), 3)],
)
def test_a_cell_threshold_is_the_first_float_of_the_cell(lower: Fraction, upper: Fraction, bits: int) -> None:
    grid = GridCells(lower, upper, bits)
    size = 1 << bits
    g = np.random.default_rng(bits)
    for t in [1, 2, size // 3, size // 2, size - 1, size, *g.integers(1, size + 1, 20).tolist()]:
        theta = grid.threshold(t)
        assert theta is not None and math.isfinite(theta)
        below = math.nextafter(theta, -math.inf)
        assert grid.cells(np.array([theta]))[0] >= t > grid.cells(np.array([below]))[0], (t, theta)
        cells, _ = grid_counts(np.array([below, theta]), lower, upper, bits)  # the numpy backend's own cells
        assert cells.tolist() == sorted(set(grid.cells(np.array([below, theta])).tolist()))
    assert grid.threshold(0) == -math.inf and grid.threshold(size + 1) is None
