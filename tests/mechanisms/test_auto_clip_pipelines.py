"""AutoClipSum over the pipeline steps: several tables, ``Where``, derived columns, ``JoinPublic``, counts.

* A seeded release over ``lineitem ⋈ orders ⋈ customer`` with a public lookup, a filter and a
  derived revenue column equals the same release over the relation joined, filtered and derived by
  hand in numpy (one table, a plain column), on numpy and on polars tables; the users' totals agree
  too. A join or a filter the node skipped would change the totals.
* A user-level count: each user's total is their number of rows on the lattice
  (``min(c_u·2^-k, top)``), exactly the totals of the sum of a literal 1 (whose privacy is the sum's),
  and the seeded releases agree; a non-integer ``upper_limit`` checks the clamp. Removing one user's
  rows removes exactly one total (the neighbouring relation the proof uses).
* The certificate of a release over the join audits through ``dpalg audit`` (exit 0, cost confirmed),
  and a certificate whose claimed cost is edited does not.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpalg import From, InvalidArgument, Join, JoinPublic, PureDP, Query, Session, Where, col, lit
from dpalg.cli import main
from dpalg.data import as_dataset
from dpalg.data._tables import tables_dataset
from dpalg.graph._schema import steps_data
from dpalg.mechanisms import AutoClipSum
from dpalg.release import audit_certificate

RELATION = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey"))
SUPPLIERS = {"l_suppkey": [0, 1, 2, 3], "s_nation": [0, 1, 0, 2]}
REVENUE = col("l_price") * (1 - col("l_disc"))
KEPT = Where(col("c_nation").eq(col("s_nation")) & (col("l_price") > 5))


def _tables(seed: int = 0) -> dict[str, dict[str, np.ndarray[Any, Any]]]:
    """400 customers (some without orders), orders whose keys may dangle, line items (synthetic data only)."""
    gen = np.random.default_rng(seed)
    return {
        "customer": {"c_custkey": np.arange(400), "c_nation": gen.integers(0, 3, 400)},
        "orders": {"o_orderkey": np.arange(1500), "o_custkey": gen.integers(0, 420, 1500)},  # 400..419 dangle
        "lineitem": {
            "l_orderkey": gen.integers(0, 1550, 6000), "l_suppkey": gen.integers(0, 4, 6000),
            "l_price": np.floor(gen.pareto(1.5, 6000) * 40) + 1, "l_disc": gen.integers(0, 11, 6000) / 100,
        },
    }  # fmt: skip


def _by_hand(tables: dict[str, dict[str, np.ndarray[Any, Any]]]) -> dict[str, np.ndarray[Any, Any]]:
    """The relation, the lookup, the filter and the revenue column written directly in numpy (one table)."""
    li, o, c = tables["lineitem"], tables["orders"], tables["customer"]
    owner = dict(zip(o["o_orderkey"].tolist(), o["o_custkey"].tolist()))
    nation = dict(zip(c["c_custkey"].tolist(), c["c_nation"].tolist()))
    s_nation = dict(zip(SUPPLIERS["l_suppkey"], SUPPLIERS["s_nation"]))
    users, revenue = [], []
    for key, supp, price, disc in zip(li["l_orderkey"].tolist(), li["l_suppkey"].tolist(), li["l_price"].tolist(), li["l_disc"].tolist()):
        user = owner.get(key)
        if user is None or user not in nation or nation[user] != s_nation[supp] or not price > 5:
            continue
        users.append(user)
        revenue.append(price * (1 - disc))
    return {"o_custkey": np.array(users, dtype=np.int64), "revenue": np.array(revenue, dtype=np.float64)}


def _release(plan: AutoClipSum, data: object, seed: int = 11) -> tuple[object, dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded randomness warns
        release = Session(PureDP(1)).run(plan, data, rng=seed)
    return release.value, json.loads(json.dumps(release.certificate))


def _totals(plan: AutoClipSum, data: dict[str, Any]) -> list[int]:
    return sorted(plan.totals(steps_data(plan, tables_dataset(data))).tolist())


PIPELINE = AutoClipSum(Query.sum(REVENUE, user="o_custkey") | RELATION | JoinPublic(SUPPLIERS, on="l_suppkey") | KEPT, epsilon=1, upper_limit=2**16, grid_steps=12)
SINGLE = AutoClipSum(Query.sum("revenue", user="o_custkey"), epsilon=1, upper_limit=2**16, grid_steps=12)


@pytest.mark.parametrize("backend", ["numpy", "polars"])
def test_a_release_over_the_join_equals_the_release_over_the_table_joined_by_hand(backend: str) -> None:
    tables = _tables()
    flat = _by_hand(tables)
    data = tables if backend == "numpy" else {t: pl.DataFrame(v) for t, v in tables.items()}
    expected = sorted(SINGLE.totals(as_dataset(flat)).tolist())
    assert _totals(PIPELINE, data) == expected and len(expected) > 200 and expected[-1] > 0
    for seed in (3, 11):
        got, _ = _release(PIPELINE, data, seed)
        want, _ = _release(SINGLE, flat, seed)
        assert got == want
        assert isinstance(got, dict) and 2**4 < got["clip"] < 2**16  # a clip inside the grid: the totals decided it


COUNT_RELATION = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"))


@pytest.mark.parametrize("upper_limit", [Fraction(7, 2), Fraction(20), Fraction(101, 3)])
def test_a_count_is_the_sum_of_ones_on_the_lattice(upper_limit: Fraction) -> None:
    tables = _tables(1)
    tables["lineitem"]["l_orderkey"] = tables["lineitem"]["l_orderkey"] % 1200  # more rows per order
    count = AutoClipSum(Query.count(user="o_custkey") | COUNT_RELATION | Where(col("l_price") > 3), epsilon=1, upper_limit=upper_limit)
    ones = AutoClipSum(Query.sum(lit(1), user="o_custkey") | COUNT_RELATION | Where(col("l_price") > 3), epsilon=1, upper_limit=upper_limit)
    owner = dict(zip(tables["orders"]["o_orderkey"].tolist(), tables["orders"]["o_custkey"].tolist()))
    li = tables["lineitem"]
    rows = Counter(owner[k] for k, p in zip(li["l_orderkey"].tolist(), li["l_price"].tolist()) if k in owner and p > 3)
    k = count.lattice_k()
    top = int(upper_limit / Fraction(2) ** k)
    expected = sorted(min(c * 2**-k, top) for c in rows.values())
    assert max(rows.values()) > upper_limit  # the clamp is exercised
    for data in (tables, {t: pl.DataFrame(v) for t, v in tables.items()}):
        assert _totals(count, data) == expected
        assert _totals(ones, data) == expected
        assert _release(count, data)[0] == _release(ones, data)[0]


def test_removing_a_user_removes_one_count_total() -> None:
    tables = _tables(2)
    node = AutoClipSum(Query.count(user="o_custkey") | COUNT_RELATION, epsilon=1, upper_limit=2**10)
    before = Counter(_totals(node, tables))
    o = tables["orders"]
    for gone in (0, 7, 419):  # 419 is a dangling customer key: still that user's orders
        mine = o["o_custkey"] == gone
        neighbour = dict(tables, orders={c: v[~mine] for c, v in o.items()})
        after = Counter(_totals(node, neighbour))
        assert sum((before - after).values()) <= 1 and not after - before


@pytest.mark.parametrize("upper_limit", [Fraction(1, 2), Fraction(2**61)])
def test_a_count_needs_an_upper_limit_on_the_lattice(upper_limit: Fraction) -> None:
    with pytest.raises(InvalidArgument, match="upper_limit"):
        AutoClipSum(Query.count(user="u"), epsilon=1, upper_limit=upper_limit)
    AutoClipSum(Query.sum("x", user="u"), epsilon=1, upper_limit=upper_limit)  # a sum takes any positive limit


@pytest.mark.parametrize("query", [PIPELINE.query, Query.count(user="o_custkey") | RELATION | JoinPublic(SUPPLIERS, on="l_suppkey") | KEPT])
def test_the_certificate_over_the_join_audits_through_the_cli(query: Query, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = AutoClipSum(query, epsilon="1/2", upper_limit=2**16)
    _, certificate = _release(plan, {t: pl.DataFrame(v) for t, v in _tables().items()})
    assert audit_certificate(certificate).status == "cost_confirmed"
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(certificate))
    capsys.readouterr()
    assert main(["audit", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("CONFIRMED")
    forged = copy.deepcopy(certificate)
    forged["claimed_cost"] = {"measure": "PureDP", "epsilon": "1/4"}
    assert audit_certificate(forged).status != "cost_confirmed"
    path.write_text(json.dumps(forged))
    assert main(["audit", str(path)]) != 0
