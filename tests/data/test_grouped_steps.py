"""GROUP BY over row steps and over several tables (``dpalg.graph._schema.group_relation``).

A GroupBy groups the rows its aggregates read: their relation (``| From``) joined,
their common ``Where`` applied and their derived columns added, once, before the
rows are grouped (SQL's ``WHERE`` before ``GROUP BY``). The privacy argument is
that the GroupBy then runs, unchanged, on transformed rows (stability 1). So:

* a seeded release equals the same GroupBy run on rows filtered, derived and
  joined *before* the plan (numpy, polars DataFrame and LazyFrame), with private
  keys and a user-level group bound too, where it matters that the filter runs
  before the grouping: the broken variant "group first, filter inside each
  group" releases a key whose rows the filter drops and is caught;
* the plans the rule cannot serve are refused before the charge (aggregates
  with different filters or relations, a by-column outside the relation, a
  row-level GroupBy over a join), and a grouped release over a join audits.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpalg import (
    ApproxDP, Clip, ClipPerUser, GroupBy, InvalidArgument, KeySet, MaxGroupsPerUser, PartitionSelection, PureDP, PureToApprox, Query, Session,
    Unsupported, Where, col,
)  # fmt: skip
import dpalg.release._release as runner
from dpalg.data._tables import From, Join
from dpalg.mechanisms import Laplace
from dpalg.release import audit_certificate

APPROX = ApproxDP(3, "0.01")
RELATION = From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey"))


def _run(plan: Any, data: object, budget: object, seed: int = 5) -> Any:
    plan.check(budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan.run(data, rng=seed)


def _rows(n: int = 600, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    k = rng.choice(np.array(["a", "b", "c"]), n)
    k[x < 2] = "z"  # the key "z" has only rows the filter drops
    return {"k": k, "x": x, "y": rng.uniform(0, 1, n), "uid": rng.integers(0, 80, n)}


def _row_plan() -> Any:
    revenue = Query.sum(col("x") * col("y")) | Where(col("x") >= 2) | Clip(0, 10)
    count = Query.count() | Where(col("x") >= 2)
    return GroupBy("k", keys=KeySet(["a", "b", "c", "z"]), aggregates={"s": Laplace(revenue, epsilon=1), "n": Laplace(count, epsilon=1)})


def _prefiltered(data: dict[str, Any]) -> dict[str, Any]:
    keep = data["x"] >= 2
    out = {name: values[keep] for name, values in data.items()}
    out["col('x') * col('y')"] = out["x"] * out["y"]
    return out


def _prefiltered_plan() -> Any:
    revenue = Query.sum("col('x') * col('y')") | Clip(0, 10)
    return GroupBy("k", keys=KeySet(["a", "b", "c", "z"]), aggregates={"s": Laplace(revenue, epsilon=1), "n": Laplace(Query.count(), epsilon=1)})


def _frames(data: dict[str, Any]) -> list[object]:
    return [data, pl.DataFrame(data), pl.LazyFrame(data)]


def test_a_grouped_filter_and_derived_column_equal_the_rows_transformed_before_the_plan() -> None:
    data = _rows()
    expected = _run(_prefiltered_plan(), _prefiltered(data), PureDP(2)).value
    for frame in _frames(data):
        assert _run(_row_plan(), frame, PureDP(2)).value == expected
    assert expected["z"]["n"] != 0 or expected["z"]["s"] != 0.0  # public keys: "z" is released (noise only)


def _private_plan(where: bool) -> Any:
    count = Query.count(user="uid") | ClipPerUser(0, 3)
    if where:
        count = count | Where(col("x") >= 2)
    return GroupBy("k", keys=PartitionSelection(epsilon=1, delta="0.01"), aggregates={"n": PureToApprox(Laplace(count, epsilon=1))}, bound=MaxGroupsPerUser(2))


def test_private_keys_and_the_group_bound_see_only_the_filtered_rows() -> None:
    data = _rows(3000)
    kept = {name: values[data["x"] >= 2] for name, values in data.items()}
    for seed in range(4):
        expected = _run(_private_plan(False), kept, APPROX, seed).value
        got = [_run(_private_plan(True), frame, APPROX, seed).value for frame in _frames(data)]
        assert all(g == expected for g in got)
        assert "z" not in expected  # no row of "z" passes the filter: it is never a candidate


def test_grouping_before_filtering_is_caught() -> None:
    """The broken variant: group the unfiltered rows, filter inside each group. "z" then becomes a candidate key."""
    data = _rows(3000)

    def broken(node: Any, rows: Any, reads: tuple[str, ...]) -> tuple[Any, bool]:
        return rows, False  # the aggregates apply their own steps to each group's rows

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "group_data", broken)
        released = [set(_run(_private_plan(True), data, APPROX, seed).value) for seed in range(12)]
    assert any("z" in keys for keys in released)  # "z" has ~600 rows of ~80 users: released under the broken rule


def _db(seed: int = 1) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return {
        "customer": {"c_custkey": np.arange(60), "c_nation": rng.choice(np.array(["FR", "DE", "IT"]), 60)},
        "orders": {"o_orderkey": np.arange(300), "o_custkey": rng.integers(0, 60, 300)},
        "lineitem": {"l_orderkey": rng.integers(0, 300, 2000), "l_price": rng.uniform(0, 100, 2000), "l_disc": rng.uniform(0, 0.1, 2000)},
    }


def _tables_plan() -> Any:
    revenue = Query.sum(col("l_price") * (1 - col("l_disc")), user="c_custkey") | RELATION | Where(col("l_price") > 20) | ClipPerUser(0, 2000)
    count = Query.count(user="c_custkey") | RELATION | Where(col("l_price") > 20) | ClipPerUser(0, 40)
    return GroupBy("c_nation", keys=KeySet(["DE", "FR", "IT"]), aggregates={"revenue": Laplace(revenue, epsilon=1), "n": Laplace(count, epsilon=1)}, bound=MaxGroupsPerUser(1))


def _joined(db: dict[str, dict[str, Any]]) -> dict[str, Any]:
    li, orders, cust = db["lineitem"], db["orders"], db["customer"]
    owner = orders["o_custkey"][li["l_orderkey"]]  # o_orderkey = arange: the order of row i is i
    rows = {**li, "o_orderkey": li["l_orderkey"], "o_custkey": owner, "c_custkey": owner, "c_nation": cust["c_nation"][owner]}
    keep = rows["l_price"] > 20
    out = {name: np.asarray(values)[keep] for name, values in rows.items()}
    out["col('l_price') * (1 - col('l_disc'))"] = out["l_price"] * (1 - out["l_disc"])
    return out


def test_a_grouped_release_over_a_join_equals_the_prejoined_table_and_audits() -> None:
    db = _db()
    revenue = Query.sum("col('l_price') * (1 - col('l_disc'))", user="c_custkey") | ClipPerUser(0, 2000)
    count = Query.count(user="c_custkey") | ClipPerUser(0, 40)
    flat = GroupBy("c_nation", keys=KeySet(["DE", "FR", "IT"]), aggregates={"revenue": Laplace(revenue, epsilon=1), "n": Laplace(count, epsilon=1)}, bound=MaxGroupsPerUser(1))
    expected = _run(flat, _joined(db), PureDP(2)).value
    for data in (db, {t: pl.DataFrame(v) for t, v in db.items()}, {t: pl.LazyFrame(v) for t, v in db.items()}):
        release = _run(_tables_plan(), data, PureDP(2))
        assert release.value == expected
        report = audit_certificate(json.loads(json.dumps(release.certificate)))
        assert report.status == "cost_confirmed", report.findings
    assert "Where(col('l_price') > 20)" in release.certificate["plan_repr"]


def test_plans_the_rule_cannot_serve_are_refused_before_the_charge() -> None:
    session = Session(PureDP(10))
    rows = _rows(50)
    a = Laplace(Query.count() | Where(col("x") > 1), epsilon=1)
    b = Laplace(Query.count() | Where(col("x") > 2), epsilon=1)
    c = Laplace(Query.count(), epsilon=1)
    for plan in (GroupBy("k", keys=KeySet(["a"]), aggregates={"a": a, "b": b}), GroupBy("k", keys=KeySet(["a"]), aggregates={"a": a, "c": c})):
        with pytest.raises(Unsupported, match="filter the rows differently"):
            session.run(plan, rows, rng=0)
    db = _db()
    user_count = Query.count(user="c_custkey") | ClipPerUser(0, 4)
    bad: list[tuple[GroupBy[PureDP], type[Exception], str]] = [
        (GroupBy("c_nation", keys=KeySet(["FR"]), aggregates={"n": Laplace(user_count, epsilon=1)}, bound=MaxGroupsPerUser(1)), Unsupported, "name their relation"),
        (GroupBy("c_nation", keys=KeySet(["FR"]), aggregates={
            "n": Laplace(user_count | RELATION, epsilon=1),
            "m": Laplace(user_count | From("lineitem", Join("orders", "l_orderkey", "o_orderkey"), Join("customer", "o_custkey", "c_custkey")) | Where(col("l_price") > 1), epsilon=1),
        }, bound=MaxGroupsPerUser(1)), Unsupported, "differently"),
        (GroupBy("c_nation", keys=KeySet(["FR"]), aggregates={
            "n": Laplace(Query.count(user="o_custkey") | From("orders", Join("lineitem", "o_orderkey", "l_orderkey")) | ClipPerUser(0, 4), epsilon=1),
        }, bound=MaxGroupsPerUser(1)), InvalidArgument, "not a column of the tables"),
        (GroupBy("c_nation", keys=KeySet(["FR"]), aggregates={"n": Laplace(Query.count() | RELATION, epsilon=1)}), InvalidArgument, "row-level"),
    ]  # fmt: skip
    for plan, error, needle in bad:
        with pytest.raises(error, match=needle):
            session.run(plan, db, rng=0)
    assert session.spent == PureDP(0)


def test_parallel_and_subsample_over_a_join_equal_the_prejoined_table() -> None:
    """``Parallel`` splits, and ``Subsample`` samples, the relation its queries read, joined once (user level)."""
    from dpalg import Parallel, Subsample

    db = _db(2)
    flat = _joined(db)
    joined_sum = Query.sum(col("l_price") * (1 - col("l_disc")), user="c_custkey") | RELATION | Where(col("l_price") > 20) | ClipPerUser(0, 2000)
    flat_sum = Query.sum("col('l_price') * (1 - col('l_disc'))", user="c_custkey") | ClipPerUser(0, 2000)

    def parallel(q: Query) -> Any:
        return Parallel(by="c_nation", parts={"DE": Laplace(q, epsilon=1), "FR": Laplace(q, epsilon=1)})

    def subsample(q: Query) -> Any:
        return Subsample(Laplace(q, epsilon=1), rate="0.5")

    for make in (parallel, subsample):
        expected = _run(make(flat_sum), flat, PureDP(1)).value
        for data in (db, {t: pl.DataFrame(v) for t, v in db.items()}):
            release = _run(make(joined_sum), data, PureDP(1))
            assert release.value == expected, make
            assert audit_certificate(json.loads(json.dumps(release.certificate))).status == "cost_confirmed"
