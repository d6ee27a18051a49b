"""The argsort-free orders of the row choice and the unit codes are the exact orders they replace.

:func:`dpalg.data._sorting.sort_rows` packs (code, top key bits, row index) into one word and
fixes the runs the truncation merged; it must equal ``np.lexsort`` on every input, including
keys that agree in all packed bits (the fix-up) and codes too wide to pack (the fallback).
:func:`dpalg.data._keys._unique_inverse` must equal ``np.unique(..., return_inverse=True)``.
:func:`dpalg.data.select_rows` must keep the same rows as the argsort implementation it
replaced (kept below as the oracle), and :func:`dpalg.data._row_choice.unit_hashes` must give
every row the hash :func:`dpalg.data.keyed_hashes` gives it.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from dpalg.data import keyed_hashes, select_rows, unit_index
from dpalg.data._keys import _unique_inverse
from dpalg.data._row_choice import _group_rank, _mix, _words, unit_hashes
from dpalg.data._sorting import ordered_bits, run_ranks, sort_repeats, sort_rows

_U64 = np.uint64


def _secondary(g: np.random.Generator, n: int, mode: int) -> npt.NDArray[np.uint64]:
    if mode == 0:
        return g.integers(0, 2**64, size=n, dtype=np.uint64)
    if mode == 1:
        return g.integers(0, 4, size=n).astype(np.uint64)
    if mode == 2:
        return np.full(n, 7, dtype=np.uint64)
    if mode == 3:
        return g.integers(0, 2 ** int(g.integers(1, 64)), size=n, dtype=np.uint64)
    # a wide span whose keys differ only in low bits: the packed top bits tie and the fix-up must sort them
    return (g.integers(0, 2, size=n).astype(np.uint64) << _U64(63)) | g.integers(0, 2 ** int(g.integers(1, 14)), size=n).astype(np.uint64)


@pytest.mark.parametrize("mode", range(5))
@pytest.mark.parametrize("codes", ["none", "few", "wide"])
def test_sort_rows_is_the_lexsort(mode: int, codes: str) -> None:
    g = np.random.default_rng(100 * mode + len(codes))
    for _ in range(150):
        n = int(g.integers(1, 400))
        sec = _secondary(g, n, mode)
        prim = None
        if codes == "few":
            prim = g.integers(0, 6, size=n).astype(np.intp)
        elif codes == "wide":  # too many code bits to pack: the lexsort fallback
            prim = g.integers(0, 2**58, size=n).astype(np.intp)
        want = np.lexsort((sec,) if prim is None else (sec, prim))
        order, sorted_prim, sorted_sec = sort_rows(prim, sec)
        assert order.tolist() == want.tolist()
        assert sorted_sec.tolist() == sec[want].tolist()
        assert (sorted_prim is None) if prim is None else (sorted_prim is not None and sorted_prim.tolist() == prim[want].tolist())


@pytest.mark.parametrize("mode", range(5))
@pytest.mark.parametrize("codes", ["one", "few", "wide"])
def test_sort_repeats_are_the_equal_neighbours(mode: int, codes: str) -> None:
    """sort_repeats: the lexsort, and exactly the sorted positions equal to the row before (the packed
    exact path, the fix-up of tied top bits, the lexsort fallback)."""
    g = np.random.default_rng(7 + 100 * mode + len(codes))
    for _ in range(150):
        n = int(g.integers(1, 400))
        sec = _secondary(g, n, mode)
        if g.integers(0, 2):  # repeated rows: copies of earlier rows' keys
            src = g.integers(0, n, size=n)
            copy = g.random(n) < 0.3
            sec[copy] = sec[src[copy]]
        if codes == "one":
            prim = np.zeros(n, dtype=np.intp)
        elif codes == "few":
            prim = g.integers(0, 6, size=n).astype(np.intp)
        else:
            prim = g.integers(0, 2**58, size=n).astype(np.intp)
        want = np.lexsort((sec, prim))
        ps, ss = prim[want], sec[want]
        expect = [p for p in range(1, n) if ps[p] == ps[p - 1] and ss[p] == ss[p - 1]]
        for full_range in (False, True):  # full_range: the keys' own span is not read (the same result)
            order, sorted_prim, sorted_sec, repeats = sort_repeats(prim, sec, full_range=full_range)
            assert order.tolist() == want.tolist()
            assert sorted_prim.tolist() == ps.tolist() and sorted_sec.tolist() == ss.tolist()
            assert repeats.tolist() == expect


def test_run_ranks_and_ordered_bits() -> None:
    assert run_ranks(np.array([True, False, True, True, False, False])).tolist() == [0, 1, 0, 0, 1, 2]
    vals = np.array([3.0, -0.0, -np.inf, 0.0, 1e-300, -2.5, np.inf])
    bits = ordered_bits(vals)
    assert bits is not None
    assert np.argsort(bits, kind="stable").tolist() == np.argsort(vals, kind="stable").tolist()
    assert ordered_bits(np.array(["a"])) is None


def _columns(g: np.random.Generator, n: int) -> list[npt.NDArray[np.generic]]:
    return [
        g.integers(-5, 5, size=n),
        g.integers(0, 3 * n, size=n),  # dense: the table path
        g.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64),  # sparse: the sort path
        g.integers(2**64 - 70_000, 2**64 - 1, size=n, dtype=np.uint64),
        g.choice(np.array([0.0, -0.0, 1.5, -np.inf, np.inf, 2.0**60, -1e-300, 5e-324]), size=n),
        g.standard_normal(n).astype(np.float32),
        g.standard_normal(n) * 1e-9 + 1.0,
        g.integers(0, 2, size=n).astype(np.bool_),
        g.integers(-100, 100, size=n).astype(np.int8),
    ]


def test_unique_inverse_is_numpys() -> None:
    g = np.random.default_rng(5)
    for n in (1, 2, 17, 1000, 70_000):
        for col in _columns(g, n):
            want_uniq, want_inv = np.unique(col, return_inverse=True)
            uniq, inv = _unique_inverse(col)
            assert uniq.dtype == want_uniq.dtype
            assert uniq.tolist() == want_uniq.tolist()
            assert inv.tolist() == want_inv.reshape(-1).tolist()


def _reference_select_rows(
    unit_codes: npt.NDArray[np.intp], unit_hash: npt.NDArray[np.uint64], content_hash: npt.NDArray[np.uint64], max_rows: int, secret: bytes
) -> npt.NDArray[np.bool_]:
    """The argsort implementation of select_rows before the packed sort (the oracle)."""
    words = _words(secret)
    out = np.zeros(unit_codes.size, dtype=np.bool_)
    rows = np.flatnonzero(unit_codes >= 0)
    if rows.size == 0:
        return out
    units, content = unit_codes[rows], content_hash[rows]
    occ_order, occ_rank = _group_rank([content, units], 2)  # rank among equal (unit, content), row order
    occ = np.empty(rows.size, dtype=np.int64)
    occ[occ_order] = occ_rank
    priority = _mix(_mix(unit_hash[rows], content, words[0]), occ.astype(np.uint64), words[1])
    by_priority = np.argsort(priority)
    order = by_priority[np.argsort(units[by_priority], kind="stable")]
    starts = np.ones(order.size, dtype=np.bool_)
    starts[1:] = units[order][1:] != units[order][:-1]
    rank = np.arange(order.size, dtype=np.intp) - np.flatnonzero(starts)[np.cumsum(starts) - 1]
    tie = (~starts[1:]) & (priority[order][1:] == priority[order][:-1])
    if np.any(tie):
        order, rank = _group_rank([occ, content, priority, units], 1)
    out[rows[order[rank < max_rows]]] = True
    return out


@pytest.mark.parametrize("k", [1, 3, 8])
def test_select_rows_keeps_the_rows_of_the_argsort_implementation(k: int) -> None:
    g = np.random.default_rng(k)
    secret = bytes(range(1, 33))
    for n, users in ((50, 7), (5_000, 600), (60_000, 6_000)):
        ids = g.integers(0, users, size=n).astype(object)
        ids[g.random(n) < 0.05] = None  # missing ids: nobody's rows
        values = g.integers(0, 4, size=n).astype(np.float64)  # many identical rows per user
        n_units, codes = unit_index(ids)
        uh = keyed_hashes(ids, secret)
        ch = keyed_hashes(values, secret)
        got = select_rows(codes, n_units, uh, ch, k, secret)
        assert got.tolist() == _reference_select_rows(codes, uh, ch, k, secret).tolist()
        # sparse wide codes leave few packed bits for the priority: many runs go through the exact fix-up
        wide = np.where(codes >= 0, codes * (1 << 30) + 12345, -1)
        got_wide = select_rows(wide, int(wide.max()) + 1, uh, ch, k, secret)
        assert got_wide.tolist() == got.tolist()


def test_unit_hashes_are_the_rows_keyed_hashes() -> None:
    pool: list[object] = [1, "1", 1.0, True, b"1", None, float("nan"), 2.5, Fraction(1, 3), Decimal("0.1"), Decimal("2.50"), "a", 2**60 + 1, np.int32(4), "x" * 40]
    g = np.random.default_rng(9)
    for ids in (
        np.array([pool[i] for i in g.integers(0, len(pool), size=300).tolist()], dtype=object),
        np.array([f"u{i}" for i in g.integers(0, 50, size=300).tolist()], dtype=object),
        np.array([f"u{i}" for i in g.integers(0, 50, size=300).tolist()]),
        g.integers(0, 50, size=300),
    ):
        n_units, codes = unit_index(ids)
        table = unit_hashes(ids, codes, n_units, bytes(32))
        present = codes >= 0
        assert table[codes[present]].tolist() == keyed_hashes(ids, bytes(32))[present].tolist()
