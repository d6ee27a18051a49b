"""Sessions: charge before noise, never refund, thread-safe."""

from __future__ import annotations

import re
import threading
from fractions import Fraction

import attrs
import numpy as np
import pytest

from dpalg import ApproxDP, BudgetExceeded, Compose, InvalidArgument, PureDP, Query, Session, ZCDP
from dpalg.measures import Measure
from dpalg.mechanisms import Laplace
from dpalg.data import Dataset
from dpalg.graph._testing import Fixed
from dpalg.noise._random import AbstractRandomness


def test_concurrent_charges_never_overspend() -> None:
    # 8 threads x 10,000 charges of 1/10000 each against a budget of 5: exactly
    # 50,000 charges fit; the other 30,000 must be refused, none lost.
    session = Session(PureDP(5))
    tiny = PureDP(Fraction(1, 10_000))
    refused = [0] * 8

    def worker(i: int) -> None:
        for _ in range(10_000):
            try:
                session.charge(tiny)
            except BudgetExceeded:
                refused[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert session.spent == PureDP(5)
    assert session.charges == 50_000
    assert sum(refused) == 30_000
    assert session.remaining == PureDP(0)


def test_concurrent_charges_with_a_budget_that_does_not_divide() -> None:
    session = Session(ApproxDP("0.99995", "1e-6"))
    tiny = ApproxDP(Fraction(1, 10_000), Fraction(1, 10**11))

    def worker() -> None:
        for _ in range(2_000):
            try:
                session.charge(tiny)
            except BudgetExceeded:
                pass

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert session.spent.fits_within(session.budget)
    assert session.charges == 9_999  # floor(0.99995 / 0.0001)


@attrs.frozen
class _Boom(Fixed[PureDP]):  # type: ignore[misc]
    """A mechanism that fails after the charge."""

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        raise RuntimeError("mechanism failed")


def test_charge_happens_first_and_is_never_refunded() -> None:
    session = Session(PureDP(1))
    plan = Compose(_Boom(PureDP("0.4")))
    with pytest.raises(RuntimeError):
        session.run(plan, {"x": [1.0]}, rng=0)
    assert session.spent == PureDP("0.4")
    with pytest.raises(RuntimeError):
        session.run(plan, {"x": [1.0]}, rng=0)
    with pytest.raises(BudgetExceeded):
        session.run(plan, {"x": [1.0]}, rng=0)
    assert session.spent == PureDP("0.8")


def test_session_run_releases() -> None:
    session = Session(ZCDP(1))
    release = session.run(Compose(Fixed(ZCDP("0.5"), value=3)), {"x": [1.0]}, rng=0)
    assert release.value == (3,)
    assert session.remaining == ZCDP("0.5")


def test_session_rejects_other_measures() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument):
        session.charge(ZCDP(1))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        Session(1.0)  # type: ignore[type-var]


def test_over_budget_message_shows_short_decimals_not_long_fractions() -> None:
    session = Session(PureDP("1/3"))
    cost = PureDP("923456789123456789/1000000000000000001")
    with pytest.raises(BudgetExceeded) as info:
        session.charge(cost)
    assert "923456789123456789" not in str(info.value)
    assert info.value.required == cost  # the exact amount stays on the error


@pytest.mark.parametrize(
    ("budget", "fix"),
    [
        (ApproxDP(1, "1e-6"), "PureToApprox(plan)"),
        (ZCDP(1), "PureToZCDP(plan)"),
    ],
)
def test_a_budget_of_another_measure_names_the_conversion(budget: Measure, fix: str) -> None:
    """A pure-DP plan run in a session of another measure is refused, before any charge, with the node to write.

    mypy rejects both calls (hence the ignores); the runtime check is for untyped callers.
    """
    session = Session(budget)  # type: ignore[type-var]
    with pytest.raises(InvalidArgument, match=re.escape(fix)):
        session.run(Laplace(Query.count(), epsilon="1/2"), {"x": np.arange(3.0)})  # type: ignore[arg-type]
    assert session.charges == 0
    with pytest.raises(InvalidArgument, match=re.escape(fix)):
        Laplace(Query.count(), epsilon="1/2").check(budget)  # type: ignore[arg-type]
