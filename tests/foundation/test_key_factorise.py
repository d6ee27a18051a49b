"""The one-kind fast path of key_index (str or bytes columns) equals the general path, with or without pandas."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpalg.data import key_index
from dpalg.data._keys import _tag, normalise_key


def _general(values: list[object]) -> tuple[tuple[object, ...], list[int]]:
    keys = sorted({(_tag(k), k) for v in values if (k := normalise_key(v)) is not None})
    rank = {tk: i for i, tk in enumerate(keys)}
    codes = [-1 if (k := normalise_key(v)) is None else rank[(_tag(k), k)] for v in values]
    return tuple(k for _, k in keys), codes


@pytest.mark.parametrize("with_pandas", [True, False])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the patch is the same for every input
@given(values=st.one_of(st.lists(st.text(max_size=6), max_size=30), st.lists(st.binary(max_size=4), max_size=30)))
def test_fast_path_matches_the_general_path(with_pandas: bool, values: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    if not with_pandas:
        monkeypatch.delitem(sys.modules, "pandas", raising=False)
    else:
        import pandas  # noqa: F401
    keys, codes = key_index(np.array(values, dtype=object))
    assert (keys, codes.tolist()) == _general(values)


@pytest.mark.parametrize("with_pandas", [True, False])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the patch is the same for every input
@given(values=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30), unsigned=st.booleans())
def test_integer_columns_match_the_general_path(with_pandas: bool, values: list[int], unsigned: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not with_pandas:
        monkeypatch.delitem(sys.modules, "pandas", raising=False)
    else:
        import pandas  # noqa: F401
    arr = np.array([abs(v) for v in values], dtype=np.uint64) if unsigned else np.array(values, dtype=np.int64)
    keys, codes = key_index(arr)
    assert (keys, codes.tolist()) == _general([int(v) for v in arr.tolist()])
