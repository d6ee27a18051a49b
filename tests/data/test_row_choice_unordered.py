"""The row caps keep the same rows whether the users' codes are in id order or not.

:func:`dpalg.data._unit_totals.kept_unit_rows` with ``ordered=False`` groups the rows into users
without sorting the distinct ids (an object column of str or bytes: pandas' ``factorize`` codes, in
order of first occurrence). The kept mask must not change: every step reads a code only to group one
user's rows, the id hash comes from the user's id (never from its code), and ties are broken within a
user by content, occurrence and row index. The comparison runs on adversarial str ids (lone
surrogates, ``''``, long ids, ids equal as text to numbers) with and without ``None``, under the row
cap alone and after a key cap; it rejects a choice whose per-user hash is taken from the code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd  # with pandas imported, an object column of str takes the factorize (or arrow) path
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg.data import keyed_hashes
from dpalg.data._keys import _arrow_factorise, key_index
from dpalg.data._row_choice import select_many_rows, secret_words
from dpalg.data._unit_totals import kept_unit_rows
from dpalg.data._user_units import unit_key_index

SECRET = bytes(range(3, 35))

_STR_POOL = ["", "a", "b", "\ud800", "\udfff", "a\ud800b", "\U0001f600", "é", "e\u0301", "1", "x" * 40, "x" * 33 + "\ud800", "\x00"]

Chooser = Callable[[npt.NDArray[np.generic], npt.NDArray[np.float64], int], npt.NDArray[np.bool_]]


def _ordered(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    return kept_unit_rows(ids, ~np.isnan(values), values, SECRET, max_rows=k)[2]


def _unordered(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    return kept_unit_rows(ids, ~np.isnan(values), values, SECRET, max_rows=k, ordered=False)[2]


def _hash_of_the_code(ids: npt.NDArray[np.generic], values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.bool_]:
    """Broken: the unordered grouping with each user's hash taken from its code, not its id."""
    _, codes = unit_key_index(ids, ordered=False)
    keep = ~np.isnan(values) & (codes >= 0)
    rows = np.flatnonzero(keep)
    out = np.zeros(ids.shape[0], dtype=np.bool_)
    if rows.size:
        table = keyed_hashes(np.arange(int(codes.max()) + 1), SECRET)
        out[rows[select_many_rows(codes[rows], table, keyed_hashes(values[rows], SECRET), k, secret_words(SECRET))]] = True
    return out


_str_ids = st.lists(st.sampled_from(_STR_POOL) | st.text(max_size=3), min_size=1, max_size=60)
_values = st.lists(st.sampled_from([0.0, 1.0, 2.0, -0.0, 7.5, float("nan")]), min_size=60, max_size=60)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.float64], int]:
    raw: list[object] = list(draw(_str_ids))
    if draw(st.booleans()):  # None (and NaN) among the ids: the object path that sorts
        raw = [None if draw(st.integers(0, 5)) == 0 else v for v in raw]
    n_users = draw(st.integers(1, 6))  # few distinct ids, so users hold several rows
    raw = [raw[i % min(len(raw), n_users)] for i in range(len(raw))]
    values = np.array(draw(_values)[: len(raw)], dtype=np.float64)
    ids = np.array(raw + [None], dtype=object)[:-1]
    return ids, values, draw(st.integers(1, 4))


@settings(max_examples=300, deadline=None)
@given(case=_cases())
def test_the_row_cap_keeps_the_same_rows_without_ordered_codes(case: tuple[npt.NDArray[np.generic], npt.NDArray[np.float64], int]) -> None:
    ids, values, k = case
    assert _unordered(ids, values, k).tolist() == _ordered(ids, values, k).tolist()
    # every row alike (a count's cap): the content hash is 0
    present = ~np.isnan(values)
    a = kept_unit_rows(ids, present, None, SECRET, max_rows=k)
    b = kept_unit_rows(ids, present, None, SECRET, max_rows=k, ordered=False)
    assert a[0] == b[0] and a[2].tolist() == b[2].tolist()
    # the same grouping: rows share an unordered code iff they share an ordered one
    pairs = set(zip(a[1].tolist(), b[1].tolist()))
    assert len({x for x, _ in pairs}) == len(pairs) == len({y for _, y in pairs})


@settings(max_examples=200, deadline=None)
@given(case=_cases(), keys=st.lists(st.sampled_from(["p", "q", "", "\ud800", None]), min_size=60, max_size=60), caps=st.tuples(st.integers(1, 3), st.integers(1, 3)))
def test_the_key_cap_keeps_the_same_rows_without_ordered_codes(
    case: tuple[npt.NDArray[np.generic], npt.NDArray[np.float64], int], keys: list[str | None], caps: tuple[int, int]
) -> None:
    ids, _, k = case
    content = np.array(keys[: ids.shape[0]] + [None], dtype=object)[:-1]
    key_codes = key_index(content)[1]
    for max_rows in (None, k):
        args = (ids, key_codes >= 0, content, SECRET)
        a = kept_unit_rows(*args, max_rows=max_rows, key_cap=(key_codes, *caps))[2]
        b = kept_unit_rows(*args, max_rows=max_rows, key_cap=(key_codes, *caps), ordered=False)[2]
        assert a.tolist() == b.tolist()


def test_the_unordered_codes_are_not_in_id_order() -> None:
    """The variant is exercised: str ids take codes in order of first occurrence."""
    ids = np.array(["b", "\ud800", "", "a", "b"], dtype=object)
    assert unit_key_index(ids)[1].tolist() == [2, 3, 0, 1, 2]
    keys, codes = unit_key_index(ids, ordered=False)
    assert codes.tolist() == [0, 1, 2, 3, 0] and keys == ("b", "\ud800", "", "a")


@pytest.mark.parametrize("broken", [_hash_of_the_code], ids=lambda f: f.__name__)
def test_the_comparison_rejects_a_broken_choice(broken: Chooser) -> None:
    gen = np.random.default_rng(11)
    differs = 0
    for _ in range(50):
        ids = np.array([_STR_POOL[i] for i in gen.integers(0, 6, size=14).tolist()], dtype=object)
        values = gen.integers(0, 3, size=14).astype(np.float64)
        for k in (1, 2, 3):
            differs += broken(ids, values, k).tolist() != _ordered(ids, values, k).tolist()
    assert differs > 0


_one_kind = st.lists(st.sampled_from(_STR_POOL) | st.text(max_size=4), min_size=1, max_size=40) | st.lists(
    st.sampled_from([b"", b"a", b"\xff", b"\x00", b"ab", b"b" * 40]) | st.binary(max_size=3), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(raw=_one_kind)
def test_str_and_bytes_ids_factorise_as_python_orders_them(raw: list[str] | list[bytes]) -> None:
    """key_index of an object column of one kind: Python's sorted distinct values and ranks (arrow, factorize or dict)."""
    ids = np.array([*raw, None], dtype=object)[:-1]
    distinct: list[object] = list(sorted(set(cast("list[str]", raw))))  # one kind: str or bytes, totally ordered
    keys, codes = key_index(ids)
    assert list(keys) == distinct and codes.tolist() == [distinct.index(v) for v in raw]
    keys, codes = key_index(ids, ordered=False)
    assert sorted(keys) == distinct and [keys[c] for c in codes.tolist()] == raw
    arrow = _arrow_factorise(ids, text=isinstance(raw[0], str))
    first_codes, first_keys = pd.factorize(ids, sort=False)
    if arrow is None:  # only a str without a UTF-8 encoding (a lone surrogate) is refused
        assert any(isinstance(v, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in v) for v in raw)
    else:
        found, arrow_codes, perm = arrow
        assert found == first_keys.tolist() and arrow_codes.tolist() == first_codes.tolist()
        assert perm is not None and [found[i] for i in perm.tolist()] == distinct
