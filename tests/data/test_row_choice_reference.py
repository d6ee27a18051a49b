"""The fast row choice keeps exactly the rows of a slow reference of its definition.

:func:`dpalg.data.select_rows`, :func:`dpalg.data._row_choice.select_unit_rows` and the row cap of
:func:`dpalg.data._unit_totals.kept_unit_rows` (one sort for the occurrences and most of the order,
users with at most ``k`` rows skipped, the id hashed once per user) must keep the very rows the
definition keeps: a row's priority is ``_mix(_mix(unit_hash, content_hash, w0), occurrence, w1)``,
its occurrence the number of earlier rows (in row order) of its user with its content hash, and
each user keeps the ``k`` rows that come first by (priority, content hash, occurrence, row index).
The reference below computes that one row at a time in Python, on the library's hashes.

Ids are adversarial (str, ints, ints beyond 2**53 and 2**63, negative, floats with NaN and -0.0,
None, mixed object columns) and contents are drawn from a small domain, so users hold many
identical rows. A crafted 64-bit priority tie checks the tie break. The same comparison rejects
broken choices (each user's first k rows by position; a user with exactly k + 1 rows kept whole).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import keyed_hashes, normalise_key, select_rows, unit_index
from dpalg.data._row_choice import _GOLD, _fmix, _mix, _words, select_unit_rows, unit_hashes
from dpalg.data._unit_totals import kept_unit_rows

SECRET = bytes(range(7, 39))
_M64 = (1 << 64) - 1

def _mix1(a: int, b: int, key: np.uint64) -> int:
    return int(_mix(np.array([a], dtype=np.uint64), np.array([b], dtype=np.uint64), key)[0])


def _fmix1(a: int) -> int:
    return int(_fmix(np.array([a], dtype=np.uint64))[0])


Chooser = Callable[[npt.NDArray[np.generic], npt.NDArray[np.float64], int], npt.NDArray[np.bool_]]


def _reference(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    """The definition, one row at a time: each user's k rows first by (priority, content, occurrence, row)."""
    words = _words(SECRET)
    uh = keyed_hashes(ids, SECRET).tolist()
    ch = keyed_hashes(values, SECRET).tolist()
    seen: dict[tuple[object, int], int] = {}
    by_user: dict[object, list[tuple[int, int, int, int]]] = {}
    for i, uid in enumerate(ids.tolist()):
        key = normalise_key(uid)
        if key is None or np.isnan(values[i]):
            continue
        user = (type(key).__name__ if not isinstance(key, (int, float)) or isinstance(key, bool) else "number", key)
        occ = seen.get((user, ch[i]), 0)
        seen[(user, ch[i])] = occ + 1
        priority = _mix1(_mix1(uh[i], ch[i], words[0]), occ, words[1])
        by_user.setdefault(user, []).append((priority, ch[i], occ, i))
    keep = np.zeros(len(ids), dtype=np.bool_)
    for rows in by_user.values():
        for _, _, _, i in sorted(rows)[:k]:
            keep[i] = True
    return keep


def _select_rows(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    n, codes = unit_index(ids)
    codes = np.where(np.isnan(values), -1, codes)
    return select_rows(codes, n, keyed_hashes(ids, SECRET), keyed_hashes(values, SECRET), k, SECRET)


def _select_unit_rows(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    n, codes = unit_index(ids)
    table = unit_hashes(ids, codes, n, SECRET)
    codes = np.where(np.isnan(values), -1, codes)
    return select_unit_rows(codes, n, table, keyed_hashes(values, SECRET), k, SECRET)


def _kept_unit_rows(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    return kept_unit_rows(ids, ~np.isnan(values), values, SECRET, max_rows=k)[2]


def _first_rows(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    """Broken: each user's first k rows by position."""
    _, codes = unit_index(ids)
    keep = np.zeros(len(ids), dtype=np.bool_)
    counts: dict[int, int] = {}
    for i, c in enumerate(codes.tolist()):
        if c >= 0 and not np.isnan(values[i]) and counts.get(c, 0) < k:
            keep[i] = True
            counts[c] = counts.get(c, 0) + 1
    return keep


def _whole_at_k_plus_one(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    """Broken: a user with exactly k + 1 rows keeps them all (an off-by-one in the skip of small users)."""
    keep = _kept_unit_rows(ids, values, k)
    _, codes = unit_index(ids)
    codes = np.where(np.isnan(values), -1, codes)
    sizes = np.bincount(codes[codes >= 0], minlength=int(codes.max(initial=-1)) + 1)
    whole = (codes >= 0) & (sizes[np.maximum(codes, 0)] == k + 1)
    out: npt.NDArray[np.bool_] = keep | whole
    return out


_ID_POOL = ["a", "b", "", "é", "x" * 40, 0, 1, -1, -(2**40), 2**53, 2**53 + 1, 2**63 + 5, -(2**70), 1.0, -0.0, 2.5, float("nan"), None, True, b"a"]
_object_ids = st.lists(st.sampled_from(_ID_POOL), min_size=1, max_size=60)
_int_ids = st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3), min_size=1, max_size=60)
_float_ids = st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, float("nan"), 1e300]), min_size=1, max_size=60)
_values = st.lists(st.sampled_from([0.0, 1.0, 2.0, -0.0, 7.5, float("nan")]), min_size=60, max_size=60)


def _column(kind: str, raw: list[object]) -> npt.NDArray[np.generic]:
    if kind == "object":
        return np.array(raw + [None], dtype=object)[:-1]
    if kind == "int":
        return np.array(raw, dtype=np.int64)
    if kind == "float":
        return np.array(raw, dtype=np.float64)
    return np.array([str(v) for v in raw], dtype=np.str_)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.float64], int]:
    kind = draw(st.sampled_from(["object", "int", "float", "unicode"]))
    raw: list[object]
    if kind in ("object", "unicode"):
        raw = draw(_object_ids)
    elif kind == "int":
        raw = list(draw(_int_ids))
    else:
        raw = list(draw(_float_ids))
    if kind == "int":  # few distinct users, so users hold several rows
        raw = [raw[i % min(len(raw), 4)] for i in range(len(raw))]
    values = np.array(draw(_values)[: len(raw)], dtype=np.float64)
    return _column(kind, raw), values, draw(st.integers(1, 4))


@settings(max_examples=300, deadline=None)
@given(case=_cases())
@pytest.mark.parametrize("choose", [_select_rows, _select_unit_rows, _kept_unit_rows], ids=lambda f: f.__name__)
def test_the_fast_choice_keeps_the_reference_rows(choose: Chooser, case: tuple[npt.NDArray[np.generic], npt.NDArray[np.float64], int]) -> None:
    ids, values, k = case
    assert choose(ids, values, k).tolist() == _reference(ids, values, k).tolist()


@pytest.mark.parametrize("broken", [_first_rows, _whole_at_k_plus_one], ids=lambda f: f.__name__)
def test_the_comparison_rejects_a_broken_choice(broken: Chooser) -> None:
    gen = np.random.default_rng(5)
    differs = 0
    for _ in range(50):
        ids = np.array([["a", "b", 3, None, 2**64][i] for i in gen.integers(0, 5, size=14).tolist()], dtype=object)
        values = gen.integers(0, 3, size=14).astype(np.float64)
        for k in (1, 2, 3):
            differs += broken(ids, values, k).tolist() != _reference(ids, values, k).tolist()
    assert differs > 0


def _fmix_inverse(h: int) -> int:
    """The inverse of MurmurHash3's fmix64 (x ^= x >> 33 is its own inverse on 64 bits)."""
    c1_inv, c2_inv = pow(0xFF51AFD7ED558CCD, -1, 1 << 64), pow(0xC4CEB9FE1A85EC53, -1, 1 << 64)
    h ^= h >> 33
    h = (h * c2_inv) & _M64
    h ^= h >> 33
    h = (h * c1_inv) & _M64
    h ^= h >> 33
    return h


@pytest.mark.parametrize("layout", [(1, 0, 1, 1, 2), (1, 1, 0, 1, 2)])
def test_a_priority_tie_is_broken_by_content_then_occurrence(layout: tuple[int, ...]) -> None:
    # content c2 is made so that its second copy (occurrence 1) has the priority of c1's first copy
    words = _words(SECRET)
    unit_hash = int(keyed_hashes(np.array(["u"], dtype=object), SECRET)[0])
    head = _fmix1(unit_hash ^ int(words[0])) * int(_GOLD) & _M64
    c1 = 12345
    g1 = _fmix1(_mix1(unit_hash, c1, words[0]) ^ int(words[1])) * int(_GOLD) & _M64
    p1_c2 = _fmix_inverse(((g1 ^ 1) * pow(int(_GOLD), -1, 1 << 64)) & _M64) ^ int(words[1])
    c2 = _fmix_inverse(p1_c2) ^ head
    content = np.array([[c1, c2, 99][j] for j in layout], dtype=np.uint64)
    occ = [layout[: i].count(j) for i, j in enumerate(layout)]
    codes = np.zeros(5, dtype=np.intp)
    ranked = sorted((_mix1(_mix1(unit_hash, c, words[0]), o, words[1]), c, o, i) for i, (c, o) in enumerate(zip(content.tolist(), occ)))
    tied = [r for r in range(4) if ranked[r][0] == ranked[r + 1][0]]
    assert len(tied) == 1  # the two tied rows are next to each other; keep just one of them
    want = np.zeros(5, dtype=np.bool_)
    want[[i for _, _, _, i in ranked[: tied[0] + 1]]] = True
    uh = np.full(5, unit_hash, dtype=np.uint64)
    assert select_rows(codes, 1, uh, content, tied[0] + 1, SECRET).tolist() == want.tolist()
    assert select_unit_rows(codes, 1, uh[:1], content, tied[0] + 1, SECRET).tolist() == want.tolist()
