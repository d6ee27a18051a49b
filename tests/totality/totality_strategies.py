"""Hypothesis strategies for the totality suite: datasets of one fixed schema whose values are hostile.

Every dataset has the same columns and dtypes (the public schema), so a release
may depend on it only through the mechanism's proven output:

* ``x``, ``y``, ``v``: numeric ``object`` columns mixing numbers, ``None``, NaN,
  ``±inf``, ``±1e308``, ``10**400`` (an int beyond the float range), bools and
  strings (``"3"``, ``"abc"``);
* ``c``: a 0/1-ish ``object`` column (counted where non-zero) with the same hostile values;
* ``k``: keys and ``u``: user ids mixing int, str, bytes, bool, float, ``None`` and NaN;

with 0 to 12 rows (the empty dataset and a single row included).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from dpalg.data import Dataset, as_dataset

__all__ = ["COLUMNS", "HOSTILE_NUMBERS", "HOSTILE_KEYS", "datasets"]

COLUMNS = ("x", "y", "v", "c", "k", "u")

HOSTILE_NUMBERS: tuple[object, ...] = (
    None, math.nan, math.inf, -math.inf, 1e308, -1e308, 10**400, -(10**400), "3", "abc", True, False,
    0, 1, 2, 3, 0.5, -7, 1e-300, 5e-324,
)  # fmt: skip
HOSTILE_KEYS: tuple[object, ...] = (None, math.nan, 1, 1.0, "1", "a", "b", True, False, b"a", 2, -3, "", 1e308)

_numbers = st.sampled_from(HOSTILE_NUMBERS) | st.integers(-(10**6), 10**6) | st.floats(allow_nan=True, allow_infinity=True)
_keys = st.sampled_from(HOSTILE_KEYS) | st.integers(-5, 5) | st.text(max_size=3)


@st.composite
def datasets(draw: st.DrawFn, max_rows: int = 12) -> Dataset:
    """A dataset of the fixed schema with 0..``max_rows`` hostile rows."""
    n = draw(st.integers(0, max_rows))
    columns: dict[str, np.ndarray] = {}
    for name in ("x", "y", "v", "c"):
        columns[name] = np.array(draw(st.lists(_numbers, min_size=n, max_size=n)) + [0], dtype=object)[:n]
    for name in ("k", "u"):
        columns[name] = np.array(draw(st.lists(_keys, min_size=n, max_size=n)) + [0], dtype=object)[:n]
    return as_dataset(columns)
