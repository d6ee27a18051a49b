"""Shared by the expression tests (numpy/polars and Spark): hypothesis expressions and frames, and the comparison.

Test modules cannot import one another under ``--import-mode=importlib``; this support module can.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from dpalg.data import Dataset
from dpalg.data._expr import Arith, Bin, Cast, Col, Compare, DatePart, Expr, IsIn, IsNull, Lit, Logic, Lookup, MinMax, Not, Unary, days
from dpalg.data._transform import RowSteps, apply_steps

#: adversarial doubles: missing, infinities, signed zeros, the largest, 2**53 + 1 (not a double), ties at .5
FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 0.5, 1.5, -2.5, 3.0, 7.0, 1e-300, 9007199254740993.0, 0.1, 2.0]
STRINGS = ["", "a", "b", "ab", "1994-01-01", "1993-12-31", "é", "z", "A"]
#: date literals: the epoch and the day before, the first and last days of years 1 and 9999, the Gregorian reform, a leap day
DATES = [
    datetime.date(1994, 1, 1), datetime.date(1993, 12, 31), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31),
    datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1582, 10, 15), datetime.date(2000, 2, 29),
]  # fmt: skip
#: a date column's day numbers (days since 1970-01-01): the literals' days, and days outside years 1 to 9999
#: (year 0, year 10000, int32's ends) that numpy, polars and Spark hold and all read as missing
DAYS = [days(d) for d in DATES] + [days(DATES[0]) + 1, days(DATES[5]) + 1, days(DATES[4]) - 1, -(2**31) + 1, 2**31 - 1]

_num_leaf = st.one_of(
    st.sampled_from([Col("x"), Col("y")]),
    st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.0, 1e308, 3.0]).map(Lit),
    st.builds(DatePart, st.just(Col("d")), st.sampled_from(["year", "month", "day"])),
)
#: a side of a date comparison: the column, a date literal, or an ISO str literal (read as a date against a date)
_date_side = st.one_of(st.just(Col("d")), st.sampled_from(DATES).map(Lit), st.sampled_from([d.isoformat() for d in DATES]).map(Lit))
_str_leaf = st.one_of(
    st.just(Col("s")),
    st.sampled_from(STRINGS).map(Lit),
    st.just(Lookup(Col("s"), (("a", "x"), ("b", None), ("é", "a"), ("", "")))),  # a public join: str -> str
)
#: public lookups (a join with a public table on a unique key)
NUMBER_TABLE = ((0.0, 10.0), (0.5, None), (3.0, -1.0), (1e308, 0.0))


def _num(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Arith, st.sampled_from(["+", "-", "*", "/"]), children, children),
        st.builds(Unary, st.sampled_from(["neg", "abs", "floor", "ceil"]), children),
        st.builds(MinMax, st.sampled_from(["min", "max"]), children, children),
        st.builds(Bin, children, st.sampled_from([(0.0, 1.0, 2.0, 5.0), (-1e308, 0.0, 1e308), (-3.0, 3.0)])),
        st.builds(Lookup, children, st.just(NUMBER_TABLE)),
        st.just(Lookup(Col("s"), (("a", 1.0), ("ab", 2.5), ("é", None)))),
    )


numbers: st.SearchStrategy[Expr] = st.recursive(_num_leaf, _num, max_leaves=6)


def _bool_leaf() -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.just(Col("b")),
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), numbers, numbers),
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), _str_leaf, _str_leaf),
        st.builds(IsIn, numbers, st.sampled_from([(0.0, 1.0), (3.0,), (), (1e308, -0.0)])),
        st.builds(IsIn, _str_leaf, st.sampled_from([("a", "ab"), ("",), ("1994-01-01", "z")])),
        st.builds(IsNull, st.one_of(numbers, _str_leaf, st.just(Col("d"))), st.booleans()),
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), _date_side, _date_side),
        st.builds(IsIn, st.just(Col("d")), st.sampled_from([tuple(DATES[:3]), (DATES[4], DATES[5]), ("1970-01-01", "2000-02-29")])),
    )


def _logic(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(st.builds(Logic, st.sampled_from(["&", "|"]), children, children), st.builds(Not, children))


conditions: st.SearchStrategy[Expr] = st.recursive(_bool_leaf(), _logic, max_leaves=4)
values: st.SearchStrategy[Expr] = st.one_of(numbers, st.builds(Cast, conditions))


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 12) -> dict[str, list[Any]]:
    """Columns x, y (doubles; None is a null where a backend has one, NaN in numpy), b (bool), s (str or None),
    d (a date as its day number, or None), id."""
    n = draw(st.integers(0, max_rows))
    cell = st.one_of(st.sampled_from(FLOATS), st.none())
    return {
        "x": draw(st.lists(cell, min_size=n, max_size=n)),
        "y": draw(st.lists(cell, min_size=n, max_size=n)),
        "b": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        "s": draw(st.lists(st.one_of(st.sampled_from(STRINGS), st.none()), min_size=n, max_size=n)),
        "d": draw(st.lists(st.one_of(st.sampled_from(DAYS), st.none()), min_size=n, max_size=n)),
        "id": list(range(n)),
    }


def date_days(table: dict[str, list[Any]]) -> list[int | None]:
    """The table's date column as day numbers (all missing when the table has none)."""
    return list(table.get("d", [None] * len(table["id"])))


def numpy_frame(table: dict[str, list[Any]]) -> dict[str, Any]:
    """The table as numpy columns: doubles with NaN for None, a pandas ``string`` array with ``pd.NA``, ``datetime64[D]`` with NaT.

    A mapping, not a pandas DataFrame: pandas holds no ``datetime64[D]`` column (it makes one ``datetime64[s]``).
    """
    return {
        "x": np.array([math.nan if v is None else v for v in table["x"]], dtype=np.float64),
        "y": np.array([math.nan if v is None else v for v in table["y"]], dtype=np.float64),
        "b": np.array(table["b"], dtype=bool),
        "s": pd.array(table["s"], dtype="string"),
        "d": np.array([np.iinfo(np.int64).min if v is None else v for v in date_days(table)], dtype=np.int64).astype("datetime64[D]"),
        "id": np.array(table["id"], dtype=np.int64),
    }  # fmt: skip


def outcome(data: Dataset, where: Expr, value: Expr) -> tuple[list[int], np.ndarray[Any, np.dtype[np.float64]]]:
    """The ids of the kept rows (in order) and the derived column's values."""
    out = apply_steps(data, RowSteps((("v", value),), where), ["id"])
    ids = [int(i) for i in np.asarray(out.column("id")).tolist()]
    return ids, out.numeric("v")


def same_values(a: np.ndarray[Any, np.dtype[np.float64]], b: np.ndarray[Any, np.dtype[np.float64]]) -> bool:
    """Bit for bit (NaN is missing; the sign of zero counts)."""
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True)) and bool(np.array_equal(np.signbit(a), np.signbit(b)))
