"""Sessions: spend one budget over several releases, safely across threads."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Generic, cast, final

from dpalg._errors import BudgetExceeded, InvalidArgument
from dpalg.graph._accountant import add_measures, derive, fits, subtract_measures
from dpalg.graph._node import AbstractMeasurement, M
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.measures._display import short_measure
from dpalg.noise._random import RngLike

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.release._release import Release

__all__ = ["Session"]


def _zero_like(budget: PureDP | ApproxDP | ZCDP) -> PureDP | ApproxDP | ZCDP:
    if isinstance(budget, PureDP):
        return PureDP(0)
    if isinstance(budget, ApproxDP):
        return ApproxDP(0, 0)
    return ZCDP(0)


@final
class Session(Generic[M]):
    """A privacy budget spent over several releases.

    Every charge happens *before* any noise is drawn, under a lock, and is
    never refunded -- not even when the mechanism then raises. Costs are the
    plans' static costs; nothing depends on the data.

    Args:
        budget: the total budget (PureDP, ApproxDP or ZCDP).

    Examples:
        >>> from dpalg import PureDP
        >>> s = Session(PureDP(1))
        >>> s.charge(PureDP("0.25"))
        >>> s.remaining
        PureDP('3/4')
    """

    def __init__(self, budget: M) -> None:
        if not isinstance(budget, (PureDP, ApproxDP, ZCDP)):
            raise InvalidArgument("Session", "budget", type(budget).__name__, "must be PureDP, ApproxDP or ZCDP")
        self._budget: M = budget
        self._spent: M = cast(M, _zero_like(budget))
        self._lock = threading.Lock()
        self._charges = 0

    @property
    def budget(self) -> M:
        """The total budget."""
        return self._budget

    @property
    def spent(self) -> M:
        """What has been charged so far."""
        with self._lock:
            return self._spent

    @property
    def remaining(self) -> M:
        """What is left."""
        with self._lock:
            return cast(M, subtract_measures(self._budget, self._spent))

    @property
    def charges(self) -> int:
        """How many charges succeeded."""
        with self._lock:
            return self._charges

    def charge(self, cost: M, *, label: str = "charge") -> None:
        """Atomically add ``cost`` to the spent amount, or raise without charging.

        Raises:
            BudgetExceeded: when ``spent + cost`` would exceed the budget.
        """
        self._charge(cost, label)

    def _charge(self, cost: M, label: str) -> tuple[M, M]:
        """:meth:`charge`, returning the spent amount just before and just after it
        (read under the lock, so a certificate records its own charge exactly)."""
        if type(cost) is not type(self._budget):
            raise InvalidArgument("Session.charge", "cost", cost, f"must be a {type(self._budget).__name__}")
        with self._lock:
            before = self._spent
            after = add_measures(self._spent, cost)
            if not fits(after, self._budget):
                remaining = subtract_measures(self._budget, self._spent)
                raise BudgetExceeded(
                    f"session: {label} needs {short_measure(cost, 'up')}, only {short_measure(remaining, 'down')} remains",
                    path=label, node_repr=label, required=cost,
                    available=subtract_measures(self._budget, self._spent),
                )
            self._spent = cast(M, after)
            self._charges += 1
            return before, self._spent

    def run(self, plan: AbstractMeasurement[M], data: object, *, rng: RngLike = None) -> Release:
        """Charge ``plan``'s static cost, then run it; returns its :class:`~dpalg.Release`.

        The data's schema (column names and dtypes) is validated first, so a
        column typo or a complex column costs nothing. The charge is then made
        before any value is read; a later error does not refund it.

        Raises:
            InvalidArgument: a column the plan reads is absent or of the wrong
                dtype (nothing is charged).
            BudgetExceeded: the plan's cost does not fit what remains (nothing is charged).
        """
        from dpalg.data import as_dataset
        from dpalg.graph._schema import validate_schema
        from dpalg.release._release import SessionSpend, execute

        derivation = derive(plan)
        dataset = as_dataset(data)
        validate_schema(plan, dataset)  # the public schema, before the charge: a typo costs nothing
        before, after = self._charge(cast(M, derivation.cost), derivation.path)
        spend = SessionSpend(budget=self._budget, spent_before=before, spent_after=after)
        return execute(plan, dataset, rng=rng, derivation=derivation, budget=self._budget, session=spend)

    def __repr__(self) -> str:
        return f"Session({self._budget!r})"
