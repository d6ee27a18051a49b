"""Which rows a user keeps, and exact per-user totals: unit-local and order independent.

Properties checked on random columns of mixed-type ids (str of varied lengths,
ints, floats, bools, bytes, None/NaN):

* at most ``max_rows`` rows (``max_keys`` keys, ``rows_per_key`` rows per key) per unit;
* rows of no unit are never kept;
* permuting the rows, or re-partitioning them, never changes a unit's kept multiset;
* adding a unit (with a longer id than every other, new values) never changes
  another unit's kept rows;
* per-user totals are exact integers, equal to a Python-int reference.

Broken variants (a priority from the row position; a string hash padded to the
column's widest string) are shown to fail the same checks, so the checks can fail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import (
    exact_int_total,
    keyed_hashes,
    per_unit_lattice_sums,
    per_unit_sums,
    select_keys,
    select_rows,
    unit_index,
)

SECRET = bytes(range(32))
_ids = st.one_of(
    st.text(alphabet="abcxyz", min_size=0, max_size=7), st.integers(-3, 3), st.sampled_from([1.0, 2.5, True, False, None, b"b", float("nan")])
)
_rows = st.lists(st.tuples(_ids, st.integers(0, 5)), max_size=40)

Selector = Callable[[npt.NDArray[np.generic], npt.NDArray[np.float64], int, bytes], npt.NDArray[np.bool_]]


def _honest(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], cap: int, secret: bytes) -> npt.NDArray[np.bool_]:
    n, codes = unit_index(ids)
    return select_rows(codes, n, keyed_hashes(ids, secret), keyed_hashes(values, secret), cap, secret)


def _by_position(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], cap: int, secret: bytes) -> npt.NDArray[np.bool_]:
    """Broken: keeps each unit's first rows in row order."""
    n, codes = unit_index(ids)
    keep = np.zeros(codes.size, dtype=np.bool_)
    seen: Counter[int] = Counter()
    for i, c in enumerate(codes.tolist()):
        if c >= 0 and seen[c] < cap:
            keep[i] = True
            seen[c] += 1
    return keep


def _padded_hash(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], cap: int, secret: bytes) -> npt.NDArray[np.bool_]:
    """Broken: the id hash depends on the widest id in the column (the bug fixed in _row_choice)."""
    n, codes = unit_index(ids)
    width = max((len(str(v)) for v in ids.tolist()), default=0)
    unit_hash = np.array([hash((str(v).ljust(width), secret)) & 0xFFFFFFFF for v in ids.tolist()], dtype=np.uint64)
    return select_rows(codes, n, unit_hash, keyed_hashes(values, secret), cap, secret)


def _kept(select: Selector, rows: list[tuple[object, int]], cap: int) -> dict[tuple[str, object], Counter[int]]:
    ids = np.array([r[0] for r in rows] + ["pad"], dtype=object)[:-1] if rows else np.array([], dtype=object)
    values = np.array([float(r[1]) for r in rows], dtype=np.float64)
    keep = select(ids, values, cap, SECRET)
    out: dict[tuple[str, object], Counter[int]] = {}
    from dpalg.data import normalise_key

    for (uid, v), k in zip(rows, keep.tolist()):
        key = normalise_key(uid)
        if key is None:
            assert not k  # rows of no unit are never kept
            continue
        bucket = out.setdefault((type(key).__name__, key), Counter())
        if k:
            bucket[v] += 1
    return out


def _violations(select: Selector, rows: list[tuple[object, int]], perm: list[int], extra: list[tuple[object, int]]) -> list[str]:
    cap = 2
    found: list[str] = []
    base = _kept(select, rows, cap)
    if any(sum(c.values()) > cap for c in base.values()):
        found.append("cap")
    if _kept(select, [rows[i] for i in perm], cap) != base:
        found.append("order")
    bigger = _kept(select, rows + extra, cap)
    if any(bigger.get(u) != kept for u, kept in base.items()):
        found.append("locality")
    return found


@settings(max_examples=150, deadline=None)
@given(rows=_rows, seed=st.integers(0, 2**32 - 1), n_extra=st.integers(1, 9))
def test_select_rows_is_capped_unit_local_and_order_independent(rows: list[tuple[object, int]], seed: int, n_extra: int) -> None:
    perm = np.random.default_rng(seed).permutation(len(rows)).tolist()
    extra: list[tuple[object, int]] = [("a-much-longer-new-user-id", v % 6) for v in range(n_extra)]
    assert _violations(_honest, rows, perm, extra) == []


@pytest.mark.parametrize("broken", [_by_position, _padded_hash], ids=lambda f: f.__name__)
def test_the_checks_catch_broken_selections(broken: Selector) -> None:
    gen = np.random.default_rng(0)
    caught: set[str] = set()
    for _ in range(200):
        rows: list[tuple[object, int]] = [(str(gen.choice(["a", "bb", "c"])), int(gen.integers(0, 6))) for _ in range(12)]
        perm = gen.permutation(len(rows)).tolist()
        caught |= set(_violations(broken, rows, perm, [("a-much-longer-new-user-id", 1)] * 3))
    assert caught & {"order", "locality"}


def test_keyed_hashes_follow_the_key_policy() -> None:
    h = keyed_hashes(np.array([1, 1.0, "1", True, -0.0, 0, None, float("nan"), b"1"], dtype=object), SECRET)
    assert h[0] == h[1] and h[4] == h[5] and h[6] == h[7]
    assert len({int(h[0]), int(h[2]), int(h[3]), int(h[8])}) == 4
    numeric = keyed_hashes(np.array([1.0, -0.0, np.nan]), SECRET)  # the vectorised numeric path agrees
    assert numeric.tolist() == [h[0], h[5], h[6]]
    assert keyed_hashes(np.array([1, 2]), SECRET).tolist() != keyed_hashes(np.array([1, 2]), bytes(32)).tolist()


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), max_size=40), m=st.integers(1, 3), c=st.integers(1, 3))
def test_select_keys_caps_keys_and_rows_per_key(rows: list[tuple[int, int]], m: int, c: int) -> None:
    units = np.array([r[0] for r in rows], dtype=np.intp)
    keys = np.array([r[1] for r in rows], dtype=np.intp)
    uh = keyed_hashes(units, SECRET)
    kh = keyed_hashes(keys, SECRET)
    keep = select_keys(units, 5, uh, keys, kh, m, c, SECRET)
    pairs = Counter(zip(units[keep].tolist(), keys[keep].tolist()))
    assert all(v <= c for v in pairs.values())
    per_unit = Counter(u for u, _ in pairs)
    assert all(v <= m for v in per_unit.values())
    # a unit keeps min(m, its number of keys) keys, each with min(c, its rows) rows
    for u in set(units.tolist()):
        own = Counter(k for uu, k in rows if uu == u)
        assert per_unit[u] == min(m, len(own))
    # order independence
    perm = np.random.default_rng(len(rows)).permutation(len(rows))
    keep_p = select_keys(units[perm], 5, uh[perm], keys[perm], kh[perm], m, c, SECRET)
    assert Counter(zip(units[perm][keep_p].tolist(), keys[perm][keep_p].tolist())) == pairs


_term = st.one_of(st.integers(-(2**62), 2**62), st.sampled_from([2**62, -(2**62), 0, 1, -1]))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-1, 4), _term), max_size=60), lo=_term, width=st.integers(0, 2**63))
def test_per_unit_lattice_sums_equal_the_python_reference(rows: list[tuple[int, int]], lo: int, width: int) -> None:
    hi = min(lo + width, 2**62)
    codes = np.array([r[0] for r in rows], dtype=np.intp)
    terms = np.array([r[1] for r in rows], dtype=np.int64)
    got = per_unit_lattice_sums(codes, 5, terms, lo, hi).tolist()
    want = [min(max(sum(t for c, t in rows if c == u), lo), hi) for u in range(5)]
    assert got == want
    assert exact_int_total(terms, 2**62) == sum(r[1] for r in rows)


def test_per_unit_sums_do_not_depend_on_row_order() -> None:
    ids, vals = [1, 1, 1, 2], [1e16, 1.0, -1e16, 5.0]
    order = [2, 0, 3, 1]
    new = per_unit_sums(ids, vals, k=0).tolist()
    assert new == per_unit_sums([ids[i] for i in order], [vals[i] for i in order], k=0).tolist() == [1.0, 5.0]
    # the old float bincount in row order gives 0 in one order and 1 in the other
    a = np.bincount([0, 0, 0], weights=[1e16, 1.0, -1e16])[0]
    b = np.bincount([0, 0, 0], weights=[-1e16, 1e16, 1.0])[0]
    assert a != b


def test_keyed_hashes_never_fail_on_a_value() -> None:
    hostile = np.array([10**400, -(10**400), 1, float("inf"), "x" * 1000, b"\x00", (1, 2), object()], dtype=object)
    h = keyed_hashes(hostile, SECRET)
    assert h.shape == (8,) and h[0] != h[1]


def test_a_long_id_neither_changes_other_hashes_nor_widens_the_work() -> None:
    """One 200,000-character id among 20,000: with a full-width array this would allocate 16 GB."""
    ids = np.array([f"u{i}" for i in range(20_000)], dtype=object)
    base = keyed_hashes(ids, SECRET)
    with_long = keyed_hashes(np.concatenate([ids, np.array(["x" * 200_000], dtype=object)]), SECRET)
    assert np.array_equal(with_long[:-1], base)
    assert with_long[-1] != keyed_hashes(np.array(["x" * 200_001], dtype=object), SECRET)[0]
