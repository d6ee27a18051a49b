"""The public schema is checked before the charge; a checked plan runs once.

Issue 14, §3 ("Check the public schema before the charge ... a column typo must
cost nothing"; "A complex column silently loses its imaginary part") and §6 ("A
checked plan allows one run outside a Session").
"""

from __future__ import annotations

import threading
from typing import cast

import numpy as np
import pytest

from dpalg import (
    BudgetExceeded,
    Clip,
    Compose,
    InvalidArgument,
    Parallel,
    PureDP,
    Query,
    Session,
    UncheckedPlan,
)
from dpalg.mechanisms import Laplace, StableHistogram

SUM = Query.sum("x") | Clip(0, 10)


# --- schema before the charge -----------------------------------------------------------------------


def test_a_column_typo_in_a_session_costs_nothing() -> None:
    session = Session(PureDP(1))
    plan = Compose(Laplace(Query.count("agee"), epsilon="0.5"), Laplace(SUM, epsilon="0.5"))
    with pytest.raises(InvalidArgument, match="'agee' is not a column") as info:
        session.run(plan, {"x": [1.0, 2.0], "age": [30, 40]}, rng=0)
    assert "Compose/0/Laplace" in str(info.value)
    assert session.spent == PureDP(0) and session.charges == 0
    session.run(Compose(Laplace(SUM, epsilon=1)), {"x": [1.0]}, rng=0)  # the whole budget is still there
    assert session.spent == PureDP(1)


def test_a_complex_column_is_refused_before_the_charge() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match="complex") as info:
        session.run(Compose(Laplace(SUM, epsilon=1)), {"x": np.array([1 + 5j, 2 + 0j])}, rng=0)
    assert "5j" not in str(info.value) and "(1+5j)" not in str(info.value)  # names the dtype, never a value
    assert session.spent == PureDP(0)


def test_a_string_column_read_as_numbers_is_refused_before_the_charge() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match="string dtype"):
        session.run(Compose(Laplace(SUM, epsilon=1)), {"x": np.array(["secret-1", "secret-2"])}, rng=0)
    assert session.spent == PureDP(0)


def test_mismatched_lengths_cost_nothing() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match="same length"):
        session.run(Compose(Laplace(SUM, epsilon=1)), {"x": [1.0], "y": [1.0, 2.0]}, rng=0)
    assert session.spent == PureDP(0)


def test_a_parallel_partition_column_is_checked_as_keys() -> None:
    plan = Parallel(by="region", parts={"n": Laplace(Query.count(), epsilon=1), "s": Laplace(Query.count(), epsilon=1)})
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match="key column='region'"):
        session.run(plan, {"regoin": ["n", "s"]}, rng=0)
    with pytest.raises(InvalidArgument, match="keys and ids"):
        session.run(plan, {"region": np.array(["2020-01-01"], dtype="datetime64[D]")}, rng=0)
    assert session.spent == PureDP(0)
    # missing and mixed-type partition keys and ids never raise (the data policy)
    mixed = np.array(["n", None, float("nan"), 1, "s", True], dtype=object)
    release = session.run(plan, {"region": mixed}, rng=0)
    assert isinstance(release.value, dict) and set(release.value) == {"n", "s"}


def test_a_user_level_parallel_split_drops_missing_ids() -> None:
    parts = {"n": Laplace(Query.user_count(user="uid"), epsilon=10**6), 1: Laplace(Query.user_count(user="uid"), epsilon=10**6)}
    by_user = Parallel(by="region", parts=cast("dict[str, Laplace]", parts))  # mixed str and int keys
    data = {
        "region": np.array(["n", "n", 1, 1, "n", None], dtype=object),
        "uid": np.array([1, "1", 1, None, float("nan"), 7], dtype=object),
    }
    release = Session(PureDP(10**6)).run(by_user, data, rng=0)
    # user 1 has keys "n" and 1: the smallest in key order (numbers before str) is 1; user "1" is in "n";
    # the rows with a missing id are nobody's; user 7 has only a missing key
    assert release.value == {"n": 1, 1: 1}


def test_plan_run_checks_the_schema_before_using_its_run() -> None:
    plan = Compose(Laplace(SUM, epsilon=1))
    plan.check(PureDP(1))
    with pytest.raises(InvalidArgument, match="'x' is not a column"):
        plan.run({"y": [1.0]}, rng=0)
    with pytest.raises(InvalidArgument, match="complex"):
        plan.run({"x": np.array([1j])}, rng=0)
    plan.run({"x": [1.0]}, rng=0)  # the typo did not use the run


def test_every_mechanism_states_its_columns() -> None:
    from dpalg.data import ColumnUse
    from dpalg.mechanisms import (
        CalibratedLaplaceSum,
        ExponentialQuantile,
        NoisyMax,
        PrivateRatio,
        ProposeTest,
        ShiftedInverse,
        SmoothBound,
    )

    assert Laplace(Query.user_count(user="u"), epsilon=1).columns() == (ColumnUse("u", "id"),)
    assert Laplace(Query.histogram("k", keys=("a",)), epsilon=1).columns() == (ColumnUse("k", "key", keys=("a",)),)
    assert StableHistogram(Query.histogram("k"), epsilon=1, delta="0.1").columns() == (ColumnUse("k", "key"),)
    assert NoisyMax(Query.histogram("k", keys=("a",)), epsilon=1).columns() == (ColumnUse("k", "key", keys=("a",)),)
    assert ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1).columns() == (ColumnUse("x", "numeric"),)
    assert ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 9), epsilon=1).columns() == (
        ColumnUse("v", "numeric"), ColumnUse("u", "id"),
    )  # fmt: skip
    assert PrivateRatio("c").ksw(1).columns() == (ColumnUse("c", "numeric"),)
    assert PrivateRatio("c").bounded_ls(1, 1, "0.1").columns() == (ColumnUse("c", "numeric"),)
    two = CalibratedLaplaceSum((Query.sum("a") | Clip(0, 1), Query.sum("b") | Clip(0, 1)), epsilon=1)
    assert two.columns() == (ColumnUse("a", "numeric"), ColumnUse("b", "numeric"))
    assert SmoothBound(Query.median("x") | Clip(0, 1), epsilon=1, delta="0.1").columns() == (ColumnUse("x", "numeric"),)
    assert ProposeTest(Query.median("x") | Clip(0, 1), bound=1, epsilon=1, delta="0.1").columns() == (ColumnUse("x", "numeric"),)


# --- one run per check (§6) -------------------------------------------------------------------------


def test_a_checked_plan_runs_once() -> None:
    plan = Compose(Laplace(SUM, epsilon=1))
    with pytest.raises(UncheckedPlan):
        plan.run({"x": [1.0]}, rng=0)
    plan.check(PureDP(1))
    plan.run({"x": [1.0]}, rng=0)
    with pytest.raises(BudgetExceeded, match="Session") as info:
        plan.run({"x": [1.0]}, rng=0)
    assert info.value.required == PureDP(1)
    # checking again does not grant another run: two checks would spend the budget twice
    plan.check(PureDP(1))
    with pytest.raises(BudgetExceeded, match="once"):
        plan.run({"x": [1.0]}, rng=0)


def test_two_checks_before_running_still_grant_one_run() -> None:
    plan = Compose(Laplace(SUM, epsilon=1))
    plan.check(PureDP(1))
    plan.check(PureDP(2))
    plan.run({"x": [1.0]}, rng=0)
    with pytest.raises(BudgetExceeded):
        plan.run({"x": [1.0]}, rng=0)


def test_concurrent_runs_of_a_checked_plan_run_once() -> None:
    plan = Compose(Laplace(SUM, epsilon=1))
    plan.check(PureDP(1))
    barrier = threading.Barrier(8)
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        try:
            plan.run({"x": [1.0, 2.0]}, rng=0)
            result = "ran"
        except BudgetExceeded:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ran"] + ["refused"] * 7


def test_a_session_runs_a_plan_many_times_and_charges_each() -> None:
    plan = Compose(Laplace(SUM, epsilon="0.25"))
    session = Session(PureDP(1))
    for _ in range(4):
        session.run(plan, {"x": [1.0]}, rng=0)
    with pytest.raises(BudgetExceeded):
        session.run(plan, {"x": [1.0]}, rng=0)
    assert session.spent == PureDP(1)
