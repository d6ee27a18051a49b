"""PTRMode from the two keys with the largest counts (``mode_histogram``'s shortcut on a backend that sorts groups).

The mode (the smallest key of the largest count) and the distance to instability
(:func:`~dpalg.sensitivity.mode_gap_distance_counts`, both relations) computed from the
two keys with the largest counts -- ties broken by the smaller key -- equal those of the
whole histogram, on hypothesis histograms with many ties. The broken variant that breaks
count ties by the *larger* key is caught (it loses the runner-up before the mode).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import Relation

from dpalg.sensitivity._catalog import mode_gap_distance_counts


RELATIONS: tuple[Relation, ...] = ("add_remove", "substitution")


def _top(counts: list[int], k: int, *, smaller_first: bool = True) -> list[int]:
    """Indexes of the ``k`` largest counts, ties by the smaller (or, broken, the larger) index, then in index order."""
    order = sorted(range(len(counts)), key=lambda j: (-counts[j], j if smaller_first else -j))
    return sorted(order[:k])


def _same(counts: list[int], *, smaller_first: bool) -> bool:
    uniq = np.arange(len(counts), dtype=np.float64) * 0.5 - 3.0  # ascending distinct keys
    full = np.array(counts, dtype=np.int64)
    idx = _top(counts, 2, smaller_first=smaller_first)
    u2, c2 = uniq[idx], full[idx]
    if full.size and uniq[int(np.argmax(full))] != u2[int(np.argmax(c2))]:
        return False
    return all(
        mode_gap_distance_counts(uniq, full, rel) == mode_gap_distance_counts(u2, c2, rel) for rel in RELATIONS
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=12))
def test_the_two_largest_counts_give_the_mode_and_its_distance(counts: list[int]) -> None:
    assert _same(counts, smaller_first=True)


def test_breaking_ties_by_the_larger_key_is_caught() -> None:
    assert not _same([3, 5, 3, 3], smaller_first=False)  # the runner-up 3 before the mode is lost: gap 2, not 3
    with pytest.raises(AssertionError):
        for counts in ([3, 5, 3, 3], [5, 3, 5]):
            assert _same(counts, smaller_first=False)
