"""Shared array helpers of the local-sensitivity catalog (padding convention of ``_catalog``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _pad(xs: FloatArray, a: float, b: float) -> FloatArray:
    return np.concatenate(([a], xs, [b]))


def _val(pad: FloatArray, idx: npt.NDArray[np.int64], n: int) -> FloatArray:
    """x_idx with the padding convention (pad = [a, x_0..x_{n-1}, b])."""
    return pad[np.clip(idx, -1, n) + 1]
