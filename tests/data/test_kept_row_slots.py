"""The kept rows' counts per candidate slot give the exponential quantile's candidate scores exactly.

``candidate_slots`` + ``slot_scores`` (what the seam's ``kept_row_cells`` returns for
explicit candidates, summed per slot on the executors) against ``candidate_scores``
(the sort and the exact comparisons of the values themselves), on values at, next to
and between candidates that are dyadic, non-dyadic (``1/10``, ``1/3``) or beyond
2**53. Checked by hand: with ``side="left"`` for ``theta`` in ``candidate_slots`` (a
value equal to a candidate counted below it) this test fails.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data._unit_totals import candidate_slots
from dpalg.mechanisms.selection._exponential import candidate_scores, slot_scores

_CANDIDATES = [Fraction(1, 10), Fraction(1, 3), Fraction(0), Fraction(-5, 2), Fraction(7), Fraction(2**53 + 1), Fraction(3, 10**20), Fraction(-1, 10)]


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[Fraction, ...], list[float], Fraction]:
    cands = tuple(sorted(set(draw(st.lists(st.sampled_from(_CANDIDATES), min_size=1, max_size=6)))))
    near = [g for c in cands for f in [float(c)] for g in (f, float(np.nextafter(f, np.inf)), float(np.nextafter(f, -np.inf)))]
    xs = draw(st.lists(st.one_of(st.sampled_from(near), st.floats(-10, 10)), max_size=30))
    q = draw(st.sampled_from([Fraction(1, 2), Fraction(1, 4), Fraction(9, 10)]))
    return cands, xs, q


@settings(max_examples=300, deadline=None)
@given(case=_case())
def test_slot_counts_give_the_candidate_scores(case: tuple[tuple[Fraction, ...], list[float], Fraction]) -> None:
    cands, xs, q = case
    x = np.array(xs, dtype=np.float64)
    slots, counts = np.unique(candidate_slots(x, cands), return_counts=True)
    assert slot_scores(slots.astype(np.int64), counts.astype(np.int64), len(cands), q).tolist() == candidate_scores(x, cands, q).tolist()
