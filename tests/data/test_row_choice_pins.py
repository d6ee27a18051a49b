"""Seeded releases and the keyed row choice are pinned bit for bit across id types.

The values below were recorded on the code before the numpy fast paths of the row choice
(:func:`dpalg.data.unit_index`, :func:`dpalg.data.keyed_hashes`, :func:`dpalg.data.select_rows`)
were rewritten for speed. A faster implementation must keep the hash definitions and which rows
each user keeps, so the unit codes, the hashes, the kept-row masks and every seeded release stay
identical: ints, unicode and object strings, floats with NaN and ``-0.0``, ``Decimal``, ints beyond
2**53, strings longer than the vectorised width, a mixed object column and missing ids.
"""

from __future__ import annotations

import hashlib
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from dpalg import Clip, ClipPerUser, MaxRowsPerUser, Query
from dpalg.data import as_dataset, keyed_hashes, row_hashes, select_rows, unit_index
from dpalg.mechanisms import Laplace
from dpalg.noise import SeededRandomness

N_ROWS = 600
SECRET = bytes(range(32))


def _id_columns(n: int) -> dict[str, npt.NDArray[np.generic]]:
    g = np.random.default_rng(7)
    u = g.integers(0, n // 4, size=n)
    ints = u.astype(np.int64)
    strs_obj = np.array([f"u{x}" for x in u.tolist()], dtype=object)
    strs_u = np.array([f"user-{x}" for x in u.tolist()])
    floats = (u / 4.0).astype(np.float64)
    floats[::13] = np.nan
    floats[::17] = -0.0
    dec = np.array([Decimal(int(x)) / Decimal(3) if x % 3 else Decimal(x) for x in u.tolist()], dtype=object)
    big = np.array([2**53 + int(x) for x in u.tolist()], dtype=object)
    longs = np.array(["x" * 40 + str(x) for x in u.tolist()], dtype=object)
    pool: list[object] = [1, "1", 1.0, True, b"1", None, float("nan"), 2.5, Fraction(1, 3), Decimal("0.1"), "a", 2**60 + 1, np.int32(4), "\u00e9"]
    mixed = np.array([pool[x % len(pool)] if x % 5 else int(x) for x in u.tolist()], dtype=object)
    missing = ints.astype(object)
    missing[::7] = None
    return {
        "int": ints,
        "str_object": strs_obj,
        "str_unicode": strs_u,
        "float_nan": floats,
        "decimal": dec,
        "bigint": big,
        "long_str": longs,
        "mixed": mixed,
        "missing": missing,
    }


def _digest(a: npt.NDArray[np.generic]) -> str:
    arr = np.ascontiguousarray(np.asarray(a))
    return hashlib.sha256(arr.astype(arr.dtype.newbyteorder("<")).tobytes()).hexdigest()[:16]


_QUERIES = {
    "count_cap": Laplace(Query.count(user="uid") | MaxRowsPerUser(2), epsilon=1),
    "sum_cap": Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(2), epsilon=1),
    "sum_cap_clipuser": Laplace(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(3) | ClipPerUser(0, 15), epsilon=1),
    "sum_clipuser": Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 15), epsilon=1),
    "count_col_cap": Laplace(Query.count("x", user="uid") | MaxRowsPerUser(1), epsilon=1),
}

#: recorded on the code before the rewrite (benchmarks/bench_user_level.py, "row cap")
PINS: dict[str, object] = {
    'bigint/count_cap': '290',
    'bigint/count_col_cap': '150',
    'bigint/keyed_hashes': '0ee645f48a652e49',
    'bigint/row_hashes': '94dd38fbbe356597',
    'bigint/select_rows_1': 'aa2259e65b9671cb',
    'bigint/select_rows_2': '0b0d4ba7e5e1e59d',
    'bigint/select_rows_5': '8e565b298321790b',
    'bigint/sum_cap': '924.349365234375',
    'bigint/sum_cap_clipuser': '1152.7252883911133',
    'bigint/sum_clipuser': '1376.3671951293945',
    'bigint/unit_index': [149, 'c14177d32f32f730'],
    'decimal/count_cap': '290',
    'decimal/count_col_cap': '150',
    'decimal/keyed_hashes': '5c1b61df6b217b61',
    'decimal/row_hashes': '94dd38fbbe356597',
    'decimal/select_rows_1': '0a687b28a9b493cc',
    'decimal/select_rows_2': 'e7515f39f7d50894',
    'decimal/select_rows_5': 'bebe941b93c8ab9f',
    'decimal/sum_cap': '878.8634643554688',
    'decimal/sum_cap_clipuser': '1089.0473327636719',
    'decimal/sum_clipuser': '1376.3671951293945',
    'decimal/unit_index': [149, 'd6d7a58b263b5775'],
    'float_nan/count_cap': '287',
    'float_nan/count_col_cap': '148',
    'float_nan/keyed_hashes': 'f10cc749464d333d',
    'float_nan/row_hashes': '94dd38fbbe356597',
    'float_nan/select_rows_1': 'aa6a08b5371463f8',
    'float_nan/select_rows_2': '7b6b8024ade251f4',
    'float_nan/select_rows_5': '3d85aa9276fe91f6',
    'float_nan/sum_cap': '824.7015075683594',
    'float_nan/sum_cap_clipuser': '1022.2612915039062',
    'float_nan/sum_clipuser': '1259.3442077636719',
    'float_nan/unit_index': [148, '5a00dcd433aea2c9'],
    'int/count_cap': '290',
    'int/count_col_cap': '150',
    'int/keyed_hashes': 'ce83a70b741f1321',
    'int/row_hashes': '94dd38fbbe356597',
    'int/select_rows_1': '893e431a480adc57',
    'int/select_rows_2': '497e0270acca6dc5',
    'int/select_rows_5': '50fd6529c0f5d1af',
    'int/sum_cap': '825.9054412841797',
    'int/sum_cap_clipuser': '1098.8273086547852',
    'int/sum_clipuser': '1376.3671951293945',
    'int/unit_index': [149, 'c14177d32f32f730'],
    'long_str/count_cap': '290',
    'long_str/count_col_cap': '150',
    'long_str/keyed_hashes': '1bce2c2761af3da5',
    'long_str/row_hashes': '94dd38fbbe356597',
    'long_str/select_rows_1': '6d7b3b420995e21a',
    'long_str/select_rows_2': '8c332402516d1ec2',
    'long_str/select_rows_5': 'a6b91dcaeb47ae65',
    'long_str/sum_cap': '871.2684936523438',
    'long_str/sum_cap_clipuser': '1093.8222885131836',
    'long_str/sum_clipuser': '1376.3671951293945',
    'long_str/unit_index': [149, '464b6a4a77a796f5'],
    'missing/count_cap': '285',
    'missing/count_col_cap': '148',
    'missing/keyed_hashes': '9757671474e9d94b',
    'missing/row_hashes': '94dd38fbbe356597',
    'missing/select_rows_1': '958b446a1a1f2058',
    'missing/select_rows_2': '5f38c96d9029d601',
    'missing/select_rows_5': '3b951132401eb3df',
    'missing/sum_cap': '795.5294342041016',
    'missing/sum_cap_clipuser': '1068.1163177490234',
    'missing/sum_clipuser': '1267.8801956176758',
    'missing/unit_index': [148, '3a68cc3725a0bf82'],
    'mixed/count_cap': '83',
    'mixed/count_col_cap': '43',
    'mixed/keyed_hashes': '1e5368926829434b',
    'mixed/row_hashes': '94dd38fbbe356597',
    'mixed/select_rows_1': '33bae1d2a4863e08',
    'mixed/select_rows_2': '9d33d3e2e1b27d47',
    'mixed/select_rows_5': '14694369d8d8dc2f',
    'mixed/sum_cap': '253.47352600097656',
    'mixed/sum_cap_clipuser': '326.75028228759766',
    'mixed/sum_clipuser': '450.84117889404297',
    'mixed/unit_index': [41, '689a8b6ce25bb8d4'],
    'str_object/count_cap': '290',
    'str_object/count_col_cap': '150',
    'str_object/keyed_hashes': 'ea9be59467b4af21',
    'str_object/row_hashes': '94dd38fbbe356597',
    'str_object/select_rows_1': '3dc8fd26ac10d816',
    'str_object/select_rows_2': '11ad8864057d5c85',
    'str_object/select_rows_5': 'f3d4e3ed9453a84d',
    'str_object/sum_cap': '825.8604888916016',
    'str_object/sum_cap_clipuser': '1112.4112930297852',
    'str_object/sum_clipuser': '1376.3671951293945',
    'str_object/unit_index': [149, '464b6a4a77a796f5'],
    'str_unicode/count_cap': '290',
    'str_unicode/count_col_cap': '150',
    'str_unicode/keyed_hashes': 'fef2f92e79e00aa6',
    'str_unicode/row_hashes': '94dd38fbbe356597',
    'str_unicode/select_rows_1': '9f02e0b08242bbe5',
    'str_unicode/select_rows_2': '4a2f955afd0c30fa',
    'str_unicode/select_rows_5': '715f4ff928ecaf2d',
    'str_unicode/sum_cap': '879.9474945068359',
    'str_unicode/sum_cap_clipuser': '1100.5572891235352',
    'str_unicode/sum_clipuser': '1376.3671951293945',
    'str_unicode/unit_index': [149, '464b6a4a77a796f5'],
}


def _computed(name: str) -> dict[str, object]:
    g = np.random.default_rng(11)
    x = np.round(g.exponential(3.0, size=N_ROWS), 3)
    x[::11] = np.nan
    city = np.array([["a", "b", "c", "d"][i] for i in g.integers(0, 4, size=N_ROWS).tolist()], dtype=object)
    ids = _id_columns(N_ROWS)[name]
    d = as_dataset({"uid": ids, "x": x, "city": city})
    n_u, codes = unit_index(ids)
    uh = keyed_hashes(ids, SECRET)
    rh = row_hashes(d, ["city", "x"], SECRET)
    out: dict[str, object] = {
        f"{name}/unit_index": [n_u, _digest(codes)],
        f"{name}/keyed_hashes": _digest(uh),
        f"{name}/row_hashes": _digest(rh),
    }
    for k in (1, 2, 5):
        out[f"{name}/select_rows_{k}"] = _digest(select_rows(codes, n_u, uh, rh, k, SECRET))
    for q, node in _QUERIES.items():
        out[f"{name}/{q}"] = repr(node.release(d, SeededRandomness(3)))
    return out


@pytest.mark.parametrize("pandas_loaded", [True, False])
@pytest.mark.parametrize("name", sorted(_id_columns(8)))
def test_seeded_releases_and_row_choice_are_pinned(name: str, pandas_loaded: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # str ids are factorised by pandas when it is loaded, by a dict otherwise: both must give the pins
    if pandas_loaded:
        pytest.importorskip("pandas")
    else:
        monkeypatch.setitem(sys.modules, "pandas", None)
    got = _computed(name)
    want = {k: v for k, v in PINS.items() if k.startswith(name + "/")}
    assert got == want
