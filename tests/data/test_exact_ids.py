"""Ids and keys are compared exactly, as the values they are, on every backend (the key policy of
:mod:`dpalg.data._dataset`, "Keys and unit ids").

Before, a ``Decimal`` or ``Fraction`` id went through ``float``: distinct ids at or above 2**53 that
round to one double became one user, so an added user whose id collided *changed* an existing unit
instead of adding one (twice the declared sensitivity of a ``ClipPerUser`` total). Here:

* property tests over every id type (Python int, ``Decimal`` with and without an exponent,
  ``Fraction``, float, numpy int64/uint64/longdouble) and every backend that reads ids (numpy object
  arrays, pandas object and Arrow-decimal columns, polars ``Decimal(38, s)``, ``Int64``, ``UInt64``,
  ``Float64`` and ``Object``): distinct values stay distinct, equal values merge; ``unit_count`` and
  the ``per_unit_*`` reductions equal a brute force over ``fractions.Fraction`` of the values;
* the exact sensitivity of the colliding pair (``ClipPerUser(-10, 10)``; ``MaxRowsPerUser(k)`` with a
  histogram): the change is within the declared sensitivity;
* the empirical audit of that pair (slow): ε̂ <= ε, and > ε when the float reading is put back.

The Spark variants are in ``test_exact_ids_spark.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from exact_ids_support import BIG, EXACT_VALUES, brute_sums, brute_units, decimal, exact, id_rows, objects
from hypothesis import given, settings
from hypothesis import strategies as st

import dpalg.data._keys as keys_module
from dpalg import ClipPerUser, MaxRowsPerUser, Query
from dpalg.data import (
    as_dataset, as_reductions, key_codes, key_index, key_order, keyed_hashes, normalise_key, per_unit_row_counts,
    per_unit_sums, unit_count,
)  # fmt: skip
from dpalg.data._keys import Key

# -- exact values and their representations -------------------------------------------------

# -- the key normalisation itself --------------------------------------------------------------


def test_distinct_values_near_two_to_53_stay_distinct() -> None:
    """The audited collision: five Decimal ids, five users (three before, through float)."""
    ids = [Decimal(BIG + k) for k in range(5)]
    assert unit_count(objects(list(ids))) == 5
    assert len({normalise_key(v) for v in ids}) == 5
    assert [normalise_key(v) for v in ids] == [BIG + k for k in range(5)]


@pytest.mark.parametrize(
    ("same", "key"),
    [
        ((1, 1.0, Decimal("1.0"), Decimal("1E+0"), Decimal("0.001E+3"), Fraction(1), np.int64(1), np.uint64(1), np.float32(1)), 1),
        ((0, -0.0, Decimal("-0"), Decimal("0E+7"), Fraction(0)), 0),
        ((BIG + 1, Decimal(BIG + 1), Decimal(f"{BIG + 1}.00"), Fraction(BIG + 1), np.uint64(BIG + 1)), BIG + 1),
        ((10**30 + 7, Decimal(10**30 + 7), Decimal("1000000000000000000000000000007.0")), 10**30 + 7),
        ((0.5, Decimal("0.5"), Decimal("0.50"), Fraction(1, 2), np.float16(0.5)), 0.5),
        ((Decimal("0.1"), Fraction(1, 10), Decimal("0.10")), Fraction(1, 10)),
        ((Decimal("Infinity"), math.inf, np.float64(np.inf)), math.inf),
    ],
)
def test_equal_values_merge_into_one_canonical_key(same: tuple[object, ...], key: Key) -> None:
    got = [normalise_key(v) for v in same]
    assert all(g == key and type(g) is type(key) for g in got), got
    assert unit_count(objects(list(same))) == 1


def test_a_decimal_tenth_is_not_the_float_tenth() -> None:
    """0.1 the float is 3602879701896397/2**55, not 1/10: two users, never rounded into one."""
    assert unit_count(objects([Decimal("0.1"), 0.1, Fraction(1, 10)])) == 2
    keys, codes = key_index(objects([0.1, Decimal("0.1")]))
    assert keys == (Fraction(1, 10), 0.1) and codes.tolist() == [1, 0]


def test_a_longdouble_beyond_float_precision_stays_exact() -> None:
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is float64 here")
    a, b = np.longdouble(2) ** 63, np.longdouble(2) ** 63 + 1
    assert normalise_key(b) == 2**63 + 1
    assert unit_count(np.array([a, b])) == 2
    assert unit_count(objects([a, b])) == 2


def test_a_decimal_too_long_to_read_exactly_is_missing_never_rounded() -> None:
    """``Decimal('1e999999999')`` would take gigabytes to read exactly: missing (one row dropped), at once."""
    huge = Decimal("1e999999999")
    assert normalise_key(huge) is None
    assert normalise_key(Decimal(10**400)) == 10**400  # long, but within the bound
    assert unit_count(objects([huge, Decimal("2e999999999"), math.inf])) == 1


def test_the_order_of_exact_numbers_is_total_and_exact() -> None:
    mixed: list[Key] = [Fraction(1, 3), 0.1, Fraction(1, 10), BIG + 1, float(BIG), -math.inf, math.inf, 10**400, "a", True]
    ordered = sorted(mixed, key=key_order)
    assert ordered == [True, -math.inf, Fraction(1, 10), 0.1, Fraction(1, 3), float(BIG), BIG + 1, 10**400, math.inf, "a"]


def test_public_keys_match_exact_values_only() -> None:
    column = objects([Decimal(BIG + 1), Decimal(BIG), Decimal("2.50"), Fraction(BIG + 1), None])
    assert key_codes(column, [BIG + 1, BIG, 2.5]).tolist() == [0, 1, 2, 0, -1]


def test_keyed_hashes_of_distinct_big_ids_differ_and_agree_across_dtypes() -> None:
    """Exact hashes: 2**53 and 2**53 + 1 differ (they shared a float); an int64 column hashes as its object twin."""
    ints = np.array([BIG, BIG + 1, BIG + 2, 2**63 - 1, 5, -BIG - 1], dtype=np.int64)
    h = keyed_hashes(ints, bytes(range(32)))
    assert len(set(h.tolist())) == 6
    as_objects = keyed_hashes(objects([Decimal(int(v)) for v in ints.tolist()]), bytes(range(32)))
    assert h.tolist() == as_objects.tolist()
    u = np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64)
    assert len(set(keyed_hashes(u, bytes(32)).tolist())) == 2
    assert keyed_hashes(objects([Fraction(1, 3)]), bytes(32))[0] != keyed_hashes(objects([1 / 3]), bytes(32))[0]


# -- every backend: unit_count and the per-unit reductions against the brute force ----------------


def _numpy_object(ids: list[object]) -> object:
    return objects(ids)


def _pandas_object(ids: list[object]) -> object:
    pd = pytest.importorskip("pandas")
    return pd.Series(objects(ids), dtype=object)


def _polars_object(ids: list[object]) -> object:
    pl = pytest.importorskip("polars")
    return pl.Series(values=list(ids), dtype=pl.Object)


BACKENDS: dict[str, Callable[[list[object]], object]] = {
    "numpy-object": _numpy_object, "pandas-object": _pandas_object, "polars-object": _polars_object,
}  # fmt: skip


def _frame(backend: str, ids_column: object, x: list[float]) -> object:
    """A dataset input with the id column ``u`` and the value column ``x`` on ``backend``'s side."""
    if backend.startswith("pandas"):
        import pandas as pd

        return pd.DataFrame({"u": ids_column, "x": np.array(x, dtype=np.float64)})
    if backend.startswith("polars"):
        import polars as pl

        return pl.DataFrame({"u": ids_column, "x": pl.Series(x, dtype=pl.Float64)})
    return {"u": ids_column, "x": np.array(x, dtype=np.float64)}


def assert_exact_units(data: object, ids: list[object], x: list[float]) -> None:
    """unit_count, per_unit_row_counts and per_unit_sums through the dataset's reductions equal the brute force."""
    ds = as_dataset(data)
    reductions = as_reductions(ds)
    brute = brute_units(ids)
    assert reductions.unit_count("u") == len(brute)
    assert reductions.per_unit_row_counts("u", None).tolist() == sorted(brute.values())
    assert reductions.per_unit_sums("u", "x", None, None, 0).tolist() == brute_sums(ids, x)
    column = ds.column("u")  # the numpy path every other user-level mechanism takes
    assert unit_count(column) == len(brute)
    assert sorted(per_unit_row_counts(column).tolist()) == sorted(brute.values())
    assert sorted(per_unit_sums(column, np.array(x), k=0).tolist()) == brute_sums(ids, x)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@settings(max_examples=60, deadline=None, database=None)
@given(ids=id_rows(), data=st.data())
def test_object_id_columns_count_exact_users(backend: str, ids: list[object], data: st.DataObject) -> None:
    x = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(ids), max_size=len(ids)))
    assert_exact_units(_frame(backend, BACKENDS[backend](ids), x), ids, x)


_INTEGRAL = [v for v in EXACT_VALUES if v.denominator == 1 and abs(v) < 10**38]
_SCALED = [v for v in EXACT_VALUES if (v * 10**5).denominator == 1 and abs(v * 10**5) < 10**38]


@pytest.mark.parametrize("scale", [0, 5])
@settings(max_examples=40, deadline=None, database=None)
@given(data=st.data())
def test_decimal_columns_of_pandas_arrow_and_polars_count_exact_users(scale: int, data: st.DataObject) -> None:
    """``decimal128(38, s)[pyarrow]`` in pandas and ``Decimal(38, s)`` in polars, with nulls."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    ids = data.draw(id_rows(pool=_INTEGRAL if scale == 0 else _SCALED))
    as_decimals = [None if (e := exact(v)) is None else decimal(e, scale) for v in ids]
    x = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(ids), max_size=len(ids)))
    arrow = pd.Series(as_decimals, dtype=pd.ArrowDtype(pa.decimal128(38, scale)))
    assert_exact_units(_frame("pandas", arrow, x), ids, x)
    polars = pl.Series(as_decimals, dtype=pl.Decimal(38, scale))
    assert_exact_units(_frame("polars", polars, x), ids, x)
    assert_exact_units(_frame("polars", polars, x).lazy(), ids, x)  # type: ignore[attr-defined]


_INT64 = [v for v in _INTEGRAL if -(2**63) <= v < 2**63]
_UINT64 = [v for v in _INTEGRAL if 0 <= v < 2**64]
_FLOATS = [v for v in EXACT_VALUES if Fraction(v.numerator / v.denominator) == v]


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64"])
@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data())
def test_native_id_columns_count_exact_users(dtype: str, data: st.DataObject) -> None:
    """int64/uint64/float64 ids near 2**53 and 2**64 in numpy, pandas (nullable too) and polars (grouped natively)."""
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    pool = {"int64": _INT64, "uint64": _UINT64, "float64": _FLOATS}[dtype]
    values = data.draw(id_rows(pool=pool, allow_missing=False))
    ids: list[object] = [int(exact(v)) if dtype != "float64" else float(exact(v)) for v in values]  # type: ignore[arg-type]
    x = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=len(ids), max_size=len(ids)))
    assert_exact_units(_frame("numpy", np.array(ids, dtype=dtype), x), ids, x)
    assert_exact_units(_frame("polars", pl.Series(ids, dtype={"int64": pl.Int64, "uint64": pl.UInt64, "float64": pl.Float64}[dtype]), x), ids, x)
    with_missing = [*ids, None]
    nullable = pd.Series(with_missing, dtype={"int64": "Int64", "uint64": "UInt64", "float64": "Float64"}[dtype])
    assert_exact_units(_frame("pandas", nullable, [*x, 1.0]), with_missing, [*x, 1.0])


def test_huge_python_ints_and_numpy_uint64_count_exact_users() -> None:
    ids: list[object] = [10**30, 10**30 + 1, 2**64 - 1, np.uint64(2**64 - 1), 2**64 - 2, 10**400, 10**400 + 1, Decimal(10**400)]
    assert unit_count(objects(ids)) == 6
    assert unit_count(np.array([2**64 - 1, 2**64 - 2, 2**63], dtype=np.uint64)) == 3


# -- the colliding pair: exact sensitivity ----------------------------------------------------------

# x: four users, the first one's total at the lower clip; x': x plus a new user whose Decimal id is the
# first one's plus 1 (one double with it) and whose total is +20
X = {"u": objects([Decimal(BIG), Decimal(BIG + 2), Decimal(BIG + 4), Decimal(BIG + 6)]), "x": np.array([-10.0, 1.0, 2.0, 3.0])}
X_PLUS = {"u": objects([*X["u"].tolist(), Decimal(BIG + 1)]), "x": np.array([*X["x"].tolist(), 20.0])}
CLIPPED_SUM = Query.sum("x", user="u") | ClipPerUser(-10, 10)


def test_the_colliding_pair_changes_the_clamped_total_within_the_sensitivity() -> None:
    """Brute force: |f(x') − f(x)| <= 10 (the user's clamped total); the float reading gave 20."""
    before, after = CLIPPED_SUM.evaluate(as_dataset(X)), CLIPPED_SUM.evaluate(as_dataset(X_PLUS))
    assert isinstance(before, float) and isinstance(after, float)
    assert abs(after - before) <= 10
    assert after - before == 10  # the new user adds their own clamped total, +10


def test_the_colliding_pair_under_a_row_cap_changes_at_most_k_rows() -> None:
    """MaxRowsPerUser(k) with a histogram: the new user adds at most k rows and swaps none of another user's.

    Over 64 secrets of the row choice, the L1 distance of the histograms is at most k; merged with the
    colliding user, the choice among 2k rows could drop k of the first user's rows and keep k new ones.
    """
    from dpalg.mechanisms._common.user_level import kept_rows

    k = 3
    first = {"u": objects([Decimal(BIG)] * k), "x": np.ones(k), "g": objects(["p"] * k)}
    second = {"u": objects([Decimal(BIG)] * k + [Decimal(BIG + 1)] * k), "x": np.ones(2 * k), "g": objects(["p"] * k + ["q"] * k)}
    query = Query.histogram("g", keys=("p", "q"), user="u") | MaxRowsPerUser(k)
    worst = 0
    for seed in range(64):
        secret = bytes([seed]) * 32
        counts = []
        for data in (first, second):
            ds = as_dataset(data)
            _, _, keep = kept_rows(query, ds, secret)
            codes = ds.key_codes("g", ("p", "q"))[keep]
            counts.append(np.bincount(codes[codes >= 0], minlength=2))
        worst = max(worst, int(np.abs(counts[1] - counts[0]).sum()))
    assert worst <= k


@contextmanager
def float_decimal_ids() -> Iterator[None]:
    """The broken variant: a Decimal key read through ``float`` (what the code did before)."""
    original = keys_module._decimal_key

    def through_float(value: Decimal) -> Key | None:
        return None if value.is_nan() else keys_module._float_key(float(value))

    keys_module._decimal_key = through_float
    try:
        yield
    finally:
        keys_module._decimal_key = original


def test_the_broken_float_reading_is_caught_by_the_exact_checks() -> None:
    """The checks above can fail: with the float reading, 2**53 and 2**53 + 1 are one user and the total moves by 20."""
    with float_decimal_ids():
        assert unit_count(objects([Decimal(BIG + k) for k in range(5)])) == 3
        before, after = CLIPPED_SUM.evaluate(as_dataset(X)), CLIPPED_SUM.evaluate(as_dataset(X_PLUS))
        assert isinstance(before, float) and isinstance(after, float)
        assert after - before == 20


# -- the colliding pair: the empirical audit ---------------------------------------------------------


@pytest.mark.slow
def test_the_empirical_audit_of_the_colliding_pair() -> None:
    """ε̂ <= 1 on the exact reading (20 000 runs per dataset); > 1 when Decimal ids are read through float."""
    from dpalg.mechanisms import Laplace
    from dpalg.noise import SeededRandomness
    from dpalg.release import empirical_epsilon_lower_bound

    node = Laplace(CLIPPED_SUM, epsilon=1, granularity=0)
    fixed = [empirical_epsilon_lower_bound(node, a, b, trials=20_000, epsilon=1.0, rng=SeededRandomness(7))
             for a, b in ((X, X_PLUS), (X_PLUS, X))]  # fmt: skip
    with float_decimal_ids():
        broken = empirical_epsilon_lower_bound(node, X, X_PLUS, trials=20_000, epsilon=1.0, rng=SeededRandomness(7))
    print(f"eps_hat exact: {[round(a.epsilon_lower, 3) for a in fixed]}, through float: {broken.epsilon_lower:.3f}")
    assert all(a.epsilon_lower <= 1.0 for a in fixed), fixed
    assert broken.epsilon_lower > 1.0, broken
