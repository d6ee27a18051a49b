"""The numpy users' totals (:mod:`dpalg.data._unit_totals`): the row-capped count's shortcut.

A count under ``MaxRowsPerUser(r)`` is ``min(n_u, r)`` per user without choosing
rows: each user keeps ``min(n_u, r)`` of their ``n_u`` present rows whichever rows
the keyed choice keeps. Checked against the keyed choice itself
(:func:`~dpalg.data._unit_totals.kept_unit_rows` with the cap, then the exact
per-user sum of ones) on hypothesis columns with missing ids and values. A
shortcut that forgot the cap (``n_u``), or counted missing values, fails it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data._lattice_sums import per_unit_lattice_sums
from dpalg.data._unit_totals import UnitTotalSpec, kept_unit_rows, numpy_unit_totals


@settings(max_examples=150, deadline=None)
@given(
    ids=st.lists(st.one_of(st.none(), st.integers(0, 6)), max_size=50),
    missing=st.lists(st.booleans(), min_size=50, max_size=50),
    column=st.booleans(),
    r=st.integers(1, 4),
    lower=st.integers(-2, 1),
    upper=st.integers(2, 6),
)
def test_the_capped_count_is_the_keyed_choice_count(ids: list[int | None], missing: list[bool], column: bool, r: int, lower: int, upper: int) -> None:
    n = len(ids)
    id_array = np.array([np.nan if i is None else float(i) for i in ids], dtype=np.float64)
    values = np.where(np.array(missing[:n], dtype=bool), np.nan, np.arange(n, dtype=np.float64)) if column else None
    spec = UnitTotalSpec("u", "x" if column else None, "count", 0, lower, upper, max_rows=r)
    secret = bytes(range(32))
    got = numpy_unit_totals(id_array, values, values, spec, secret)
    present = np.ones(n, dtype=np.bool_) if values is None else ~np.isnan(values)
    n_units, codes, keep = kept_unit_rows(id_array, present, values, secret, max_rows=r)
    want = per_unit_lattice_sums(codes[keep], n_units, np.ones(int(keep.sum()), dtype=np.int64), lower, upper)
    assert got.tolist() == want.tolist()
