"""A polars LazyFrame is evaluated before the charge (``dpalg.data._evaluation``; DESIGN §3, "Releases are total").

A LazyFrame whose plan fails on one value (a strict cast, ``str.to_integer``, a
``map_elements`` that raises) used to raise in a reduction *after* the charge on
x and release on x' (x without that row): a membership signal, paid for; and the
error quoted the value. Now the columns the plan reads are collected once after
the schema check: a failure is refused there, nothing spent, and no message,
warning or log line shows the value; the same frame without the row releases.
After the charge a backend failure is a ``BackendError`` naming its type only.
The Spark half is ``test_lazy_inputs_spark.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from backend_support import LAZY_BUDGET, LAZY_IDS, LAZY_RAW, SECRET, lazy_plans, no_secret_shown, parse_or_quote

pl = pytest.importorskip("polars")

from dpalg import ApproxDP, BackendError, Clip, InvalidArgument, PureDP, PureToApprox, Query, Session  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.mechanisms import Laplace  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")

FAILING: dict[str, Callable[[Any], Any]] = {
    "strict-cast": lambda c: c.cast(pl.Int64, strict=True),
    "str-to-integer": lambda c: c.str.to_integer(),
    "map-elements": lambda c: c.map_elements(parse_or_quote, return_dtype=pl.Int64),
}
PLANS = lazy_plans()


def _lazy(failing: str, *, without_secret: bool = False) -> Any:
    """``x`` computed from strings by the user's failing expression; ``u`` the ids; ``y`` numbers that never fail."""
    frame = pl.LazyFrame({"s": list(LAZY_RAW), "u": list(LAZY_IDS), "y": [1.0] * len(LAZY_RAW)})
    if without_secret:
        frame = frame.filter(pl.col("s") != SECRET)
    return frame.with_columns(x=FAILING[failing](pl.col("s")))


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("failing", sorted(FAILING))
def test_a_failing_lazy_frame_is_refused_before_the_charge(failing: str, plan: str, caplog: pytest.LogCaptureFixture) -> None:
    session = Session(LAZY_BUDGET)
    with no_secret_shown(caplog) as raised:
        with pytest.raises(InvalidArgument, match=r"could not be computed by the polars backend .*nothing was charged") as info:
            session.run(PLANS[plan](), _lazy(failing), rng=1)
        raised.append(info.value)
    assert session.spent == ApproxDP(0, 0) and session.charges == 0
    with no_secret_shown(caplog):
        session.run(PLANS[plan](), _lazy(failing, without_secret=True), rng=1)  # x' releases
    assert session.charges == 1


@pytest.mark.parametrize("failing", sorted(FAILING))
def test_plan_run_refuses_before_using_its_one_run(failing: str, caplog: pytest.LogCaptureFixture) -> None:
    plan = PLANS["compose"]()
    plan.check(LAZY_BUDGET)
    with no_secret_shown(caplog) as raised:
        with pytest.raises(InvalidArgument) as info:
            plan.run(_lazy(failing), rng=1)
        raised.append(info.value)
    plan.run(_lazy(failing, without_secret=True), rng=1)  # the checked run was not used by the refusal


def test_a_failing_row_filter_is_refused_even_when_no_column_is_read(caplog: pytest.LogCaptureFixture) -> None:
    """The rows themselves come from the user's plan: a count reads no column but still runs it."""
    frame = pl.LazyFrame({"s": list(LAZY_RAW)}).filter(pl.col("s").cast(pl.Int64, strict=True) > 0)
    session = Session(LAZY_BUDGET)
    with no_secret_shown(caplog) as raised:
        with pytest.raises(InvalidArgument) as info:
            session.run(PureToApprox(Laplace(Query.count(), epsilon=1)), frame, rng=1)
        raised.append(info.value)
    assert session.charges == 0


def test_a_failing_column_the_plan_does_not_read_is_not_evaluated() -> None:
    session = Session(LAZY_BUDGET)
    session.run(PureToApprox(Laplace(Query.sum("y") | Clip(0, 1), epsilon=1)), _lazy("strict-cast"), rng=1)
    assert session.charges == 1


def test_the_users_plan_runs_once_per_run() -> None:
    """Every reduction of the run reads the collected columns: a three-node plan runs the user's function once per row."""
    calls: list[str] = []

    def counted(value: str) -> int:
        calls.append(value)
        return int(value)

    frame = pl.LazyFrame({"s": ["1", "2", "3", "4"]}).with_columns(x=pl.col("s").map_elements(counted, return_dtype=pl.Int64))
    plan = PLANS["compose"]()
    Session(LAZY_BUDGET).run(plan, frame, rng=1)
    Session(LAZY_BUDGET).run(PLANS["median"](), frame, rng=1)  # an order window and extremes: several passes
    assert len(calls) == 8


def test_a_dataset_the_caller_built_answers_other_columns_later() -> None:
    """The collected columns serve the run; a column collected by no run is read from the LazyFrame as before."""
    ds = as_dataset(pl.LazyFrame({"x": [1.0, 2.0], "y": [3.0, 4.0]}))
    Session(PureDP(10)).run(Laplace(Query.sum("x") | Clip(0, 10), epsilon=1), ds, rng=1)
    Session(PureDP(10)).run(Laplace(Query.sum("y") | Clip(0, 10), epsilon=1), ds, rng=1)
    assert list(ds.numeric("y")) == [3.0, 4.0]


def test_a_backend_failure_after_the_charge_is_withheld(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """What evaluation cannot rule out (memory, a lost worker) still names no value: BackendError, the charge stands."""
    from dpalg.data._polars_reductions import PolarsReductions

    def fail(self: Any, specs: Any) -> Any:
        raise pl.exceptions.ComputeError(f"conversion failed for {SECRET!r}")

    monkeypatch.setattr(PolarsReductions, "clipped_sums", fail)
    session = Session(LAZY_BUDGET)
    with no_secret_shown(caplog) as raised:
        with pytest.raises(BackendError, match=r"ComputeError; its message is withheld") as info:
            session.run(PLANS["sum"](), _lazy("strict-cast", without_secret=True), rng=1)
        raised.append(info.value)
    assert session.spent == ApproxDP(1, 0)  # charged before the failure, never refunded (DESIGN §3)
