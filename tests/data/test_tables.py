"""Several tables and a query's relation built by inner equi-joins (``| From(table, Join(...))``).

* the numpy join equals a nested-loop join (brute force) on random tables with repeated and missing keys;
* numpy, polars (DataFrame and LazyFrame) build the same relation: the same (user, value) pairs -- a
  join read one column at a time in two row orders would pair one user's id with another's value, and
  the per-user totals would differ (a bug this test caught while it was being written);
* locality (the privacy argument of dpalg/data/_tables.py): removing one customer -- their row, their
  orders, and the line items that join only with those orders -- removes exactly their result rows and
  leaves every other customer's result rows unchanged, even with repeated order keys; the broken
  variant "the order owns its line items" (user = the order key) is caught;
* the plan checks: every query names its relation, the tables can build it (tables, keys, key types,
  the user column), a row-level query over a join and a structural node over tables are refused, all
  before the charge (``Parallel``, ``GroupBy`` and ``Subsample`` read their queries' relation:
  tests/data/test_grouped_steps.py); a seeded R2T over the join certifies and audits.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import ClipPerUser, GroupPrivacy, InvalidArgument, Parallel, PureDP, Query, Session, Unsupported, Where, col
from dpalg.data import as_dataset
from dpalg.data._tables import From, Join, numpy_join
from dpalg.graph._schema import steps_data
from dpalg.mechanisms import Laplace, R2T
from dpalg.release import audit_certificate

RELATION = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey"))


@st.composite
def databases(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    """Tiny customer/orders/lineitem tables; order keys may repeat (across customers too), keys may dangle."""
    n_c = draw(st.integers(1, 5))
    n_o = draw(st.integers(0, 8))
    n_l = draw(st.integers(0, 12))
    return {
        "customer": {"c_custkey": np.arange(n_c), "c_nation": np.array(draw(st.lists(st.integers(0, 2), min_size=n_c, max_size=n_c)))},
        "orders": {
            "o_orderkey": np.array(draw(st.lists(st.integers(0, 5), min_size=n_o, max_size=n_o)), dtype=np.int64),
            "o_custkey": np.array(draw(st.lists(st.integers(0, n_c), min_size=n_o, max_size=n_o)), dtype=np.int64),  # n_c dangles
        },
        "lineitem": {
            "l_orderkey": np.array(draw(st.lists(st.integers(0, 6), min_size=n_l, max_size=n_l)), dtype=np.int64),
            "l_price": np.array(draw(st.lists(st.integers(1, 9), min_size=n_l, max_size=n_l)), dtype=np.float64),
        },
    }  # fmt: skip


def _brute(db: dict[str, dict[str, Any]]) -> Counter[tuple[int, float]]:
    """(customer, price) of every result row, by nested loops."""
    out: Counter[tuple[int, float]] = Counter()
    c, o, li = db["customer"], db["orders"], db["lineitem"]
    for lk, price in zip(li["l_orderkey"], li["l_price"]):
        for ok, oc in zip(o["o_orderkey"], o["o_custkey"]):
            if lk != ok:
                continue
            for ck in c["c_custkey"]:
                if oc == ck:
                    out[(int(ck), float(price))] += 1
    return out


def _pairs(data: object, user: str = "o_custkey") -> Counter[tuple[int, float]]:
    node = Laplace(Query.sum("l_price", user=user) | RELATION | ClipPerUser(0, 100), epsilon=1)
    joined = steps_data(node, as_dataset(data))
    ids = np.asarray(joined.column(user)).tolist()
    return Counter((int(i), float(p)) for i, p in zip(ids, joined.numeric("l_price").tolist()))


@settings(max_examples=60, deadline=None)
@given(db=databases())
def test_the_join_is_the_nested_loop_join_on_every_backend(db: dict[str, dict[str, Any]]) -> None:
    expected = _brute(db)
    assert _pairs(db) == expected
    assert _pairs({k: pl.DataFrame(v) for k, v in db.items()}) == expected
    assert _pairs({k: pl.LazyFrame(v) for k, v in db.items()}) == expected


def _remove_customer(db: dict[str, dict[str, Any]], gone: int) -> dict[str, dict[str, Any]]:
    """The neighbour: the customer's row, their orders, and the line items that join only with those orders."""
    o = db["orders"]
    mine = o["o_custkey"] == gone
    kept_keys = set(o["o_orderkey"][~mine].tolist())
    my_keys = set(o["o_orderkey"][mine].tolist())
    li = db["lineitem"]
    only_mine = np.array([k in my_keys and k not in kept_keys for k in li["l_orderkey"].tolist()], dtype=bool)
    c = db["customer"]
    return {
        "customer": {k: v[c["c_custkey"] != gone] for k, v in c.items()},
        "orders": {k: v[~mine] for k, v in o.items()},
        "lineitem": {k: v[~only_mine] for k, v in li.items()},
    }


def _changed_units(before: Counter[tuple[int, float]], after: Counter[tuple[int, float]]) -> set[int]:
    return {u for (u, _) in (before - after) + (after - before)}


@settings(max_examples=60, deadline=None)
@given(db=databases(), gone=st.integers(0, 4))
def test_removing_a_customer_changes_only_their_result_rows(db: dict[str, dict[str, Any]], gone: int) -> None:
    before, after = _pairs(db), _pairs(_remove_customer(db, gone))
    assert _changed_units(before, after) <= {gone}


def test_ownership_by_the_order_is_caught() -> None:
    """With the order key as the unit, removing one customer changes several units: not user-level privacy."""
    db = {
        "customer": {"c_custkey": np.array([0, 1])},
        "orders": {"o_orderkey": np.array([10, 11, 12]), "o_custkey": np.array([0, 0, 1])},
        "lineitem": {"l_orderkey": np.array([10, 11, 11, 12]), "l_price": np.array([1.0, 2.0, 3.0, 4.0])},
    }
    before, after = _pairs(db, user="o_orderkey"), _pairs(_remove_customer(db, 0), user="o_orderkey")
    assert len(_changed_units(before, after)) == 2


def test_numpy_join_is_exact_on_large_and_str_keys() -> None:
    a = as_dataset({"k": np.array([2**53, 2**53 + 1, -1]), "x": np.array([1.0, 2.0, 3.0])})
    b = as_dataset({"kk": np.array([2**53 + 1, 2**53 + 1]), "y": np.array([5.0, 6.0])})
    assert numpy_join(a, b, "k", "kk").numeric("x").tolist() == [2.0, 2.0]
    s = as_dataset({"k": np.array(["a", None, "b"], dtype=object), "x": np.arange(3.0)})
    t = as_dataset({"kk": np.array(["b", None], dtype=object), "y": np.arange(2.0)})
    assert numpy_join(s, t, "k", "kk").numeric("x").tolist() == [2.0]  # a missing key matches nothing


def _db() -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(0)  # synthetic data only
    return {
        "customer": {"c_custkey": np.arange(50), "c_nation": rng.integers(0, 5, 50)},
        "orders": {"o_orderkey": np.arange(300), "o_custkey": rng.integers(0, 50, 300)},
        "lineitem": {"l_orderkey": rng.integers(0, 300, 2000), "l_price": rng.uniform(0, 100, 2000)},
    }


def test_plans_over_tables_are_checked_before_the_charge() -> None:
    session = Session(PureDP(5))
    db = _db()
    bad: list[tuple[object, type[Exception], str]] = [
        (Laplace(Query.count(user="o_custkey") | ClipPerUser(0, 9), epsilon=1), Unsupported, "names its relation"),
        (R2T(Query.count(user="o_custkey") | From("lineitem", Join("nope", "l_orderkey", "o_orderkey")), epsilon=1), InvalidArgument, "names the table"),
        (R2T(Query.count(user="o_custkey") | From("lineitem", Join("orders", "l_price", "o_orderkey")), epsilon=1), InvalidArgument, "both be int"),
        (R2T(Query.count(user="c_nation") | From("lineitem", Join("orders", "l_orderkey", "o_orderkey")), epsilon=1), InvalidArgument, "user id"),
        (Laplace(Query.count() | From("lineitem", Join("orders", "l_orderkey", "o_orderkey")), epsilon=1), InvalidArgument, "row-level"),
        (Parallel(by="c_nation", parts={0: Laplace(Query.count(), epsilon=1)}), Unsupported, "name their relation"),
        (Parallel(by="c_nation", parts={0: Laplace(Query.count() | RELATION, epsilon=1)}), InvalidArgument, "row-level"),
        (Parallel(by="l_price", parts={0: Laplace(Query.count(user="o_custkey") | From("orders", Join("customer", "o_custkey", "c_custkey")) | ClipPerUser(0, 9), epsilon=1)}),
         InvalidArgument, "not a column of the tables"),
        (GroupPrivacy(Laplace(Query.count() | RELATION, epsilon=1), unit="c_custkey", max_rows=3), Unsupported, "GroupPrivacy on several tables"),
    ]
    for plan, error, needle in bad:
        with pytest.raises(error, match=needle):
            session.run(plan, db, rng=0)  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="one table"):
        session.run(R2T(Query.count(user="u") | From("t"), epsilon=1), {"u": np.array([1, 2])}, rng=0)
    assert session.spent == PureDP(0)
    with pytest.raises(InvalidArgument, match="unique across the tables"):
        as_dataset({"a": {"x": np.array([1])}, "b": {"x": np.array([2])}})


def test_a_seeded_release_over_a_join_is_the_same_on_numpy_and_polars_and_audits() -> None:
    db = _db()
    q = Query.sum("l_price", user="o_custkey") | RELATION | Where(col("c_nation") < 3)
    truth = q.evaluate(db)
    values = []
    for data in (db, {k: pl.DataFrame(v) for k, v in db.items()}, {k: pl.LazyFrame(v) for k, v in db.items()}):
        plan = R2T(q, epsilon=1, upper_limit=10**5)
        plan.check(PureDP(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            release = plan.run(data, rng=3)
        assert audit_certificate(json.loads(json.dumps(release.certificate))).status == "cost_confirmed"
        values.append(release.value)
    assert values[0] == values[1] == values[2]
    assert isinstance(truth, float) and truth > 0


def test_a_lazily_joined_relation_is_evaluated_once_whatever_path_its_steps_take() -> None:
    """On polars tables a relation with row steps is joined lazily and evaluated once, with the filter (pushed below the
    joins). A step reading a column value by value (a Decimal column: the numpy path, column by column) gets the
    relation evaluated first. Both give the numpy tables' release."""
    from decimal import Decimal

    db = _db()
    prices = [Decimal(str(round(float(p), 2))) for p in db["lineitem"]["l_price"]]
    for where in (Where(col("c_nation") < 3), Where(col("l_money") > 20)):
        q = Query.sum("l_price", user="o_custkey") | RELATION | where
        numpy_db = {**db, "lineitem": {**db["lineitem"], "l_money": np.array(prices, dtype=object)}}
        polars_db = {t: pl.DataFrame(v) for t, v in db.items()}
        polars_db["lineitem"] = polars_db["lineitem"].with_columns(pl.Series("l_money", prices, dtype=pl.Decimal(10, 2)))
        values = []
        for data in (numpy_db, polars_db, {t: f.lazy() for t, f in polars_db.items()}):
            plan = R2T(q, epsilon=1, upper_limit=10**5)
            plan.check(PureDP(1))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values.append(plan.run(data, rng=3).value)
        assert values[0] == values[1] == values[2], where
