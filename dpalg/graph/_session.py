"""Sessions: spend one budget over several releases, safely across threads (and, with
:meth:`Session.open`, across processes and restarts)."""

from __future__ import annotations

import os
import threading
import warnings
from typing import TYPE_CHECKING, Generic, Protocol, cast, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.graph._accountant import add_measures, derive, fits, subtract_measures
from dpalg.graph._compose import conversion_advice
from dpalg.graph._ledger import (
    DEFAULT_TIMEOUT, LedgerEntry, LedgerError, _SQLiteLedger, default_label, failure_text, now, over_budget, plan_digest, run_label,
    zero_like,
)
from dpalg.data._dataset import run_data
from dpalg.graph._node import AbstractMeasurement, M
from dpalg.graph._provided import Provided
from dpalg.graph._result import Release
from dpalg.graph._schema import plan_schema, validate_schema
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import decimal_measure as short_measure
from dpalg.noise._random import RngLike

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.graph._derivation import Derivation

__all__ = ["EXECUTE", "Ledger", "Session", "SessionSpend"]


@final
@attrs.frozen
class SessionSpend:
    """What a session had spent just before and just after one release's charge.

    Attributes:
        budget: the session's total budget.
        spent_before: the amount spent before this release was charged.
        spent_after: the amount spent right after (``spent_before`` + the plan's cost).
    """

    budget: Measure
    spent_before: Measure
    spent_after: Measure


class _Execute(Protocol):
    def __call__(
        self, plan: AbstractMeasurement[M], data: object, *, rng: RngLike, derivation: Derivation, budget: Measure,
        session: SessionSpend | None = None, schema: tuple[tuple[str, str], ...] | None = None,
    ) -> Release: ...


#: the runner that makes a charged plan's release and certificate (:func:`dpalg.release._release.execute`, one floor up)
EXECUTE: Provided[_Execute] = Provided("the runner", "dpalg.release")


class Ledger(Protocol):
    """The storage seam of a :class:`~dpalg.Session`: where its charges are kept."""

    budget: Measure
    path: str | None

    def charge(self, cost: Measure, label: str, plan_digest: str | None) -> tuple[Measure, Measure, int]:
        """Record ``cost`` if ``spent + cost`` fits, atomically; the spent amount before and after, and the charge's id."""

    def record_release(self, charge_id: int, certificate_digest: str) -> None:
        """Note the certificate of the release that charge ``charge_id`` paid for."""

    def record_failure(self, charge_id: int, failure: str) -> None:
        """Note that the run charge ``charge_id`` paid for raised (:attr:`LedgerEntry.failure`); the charge stands."""

    def totals(self) -> tuple[Measure, int]:
        """The spent amount and the number of charges, read together."""

    def history(self) -> tuple[LedgerEntry, ...]:
        """Every charge, oldest first."""


@final
class _MemoryLedger:
    """The in-memory ledger of ``Session(budget)``: one process, guarded by a lock."""

    def __init__(self, budget: Measure) -> None:
        self.budget = budget
        self.path: str | None = None
        self._spent = zero_like(budget)
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()

    def charge(self, cost: Measure, label: str, plan_digest: str | None) -> tuple[Measure, Measure, int]:
        with self._lock:
            before = self._spent
            after = add_measures(before, cost)
            if not fits(after, self.budget):
                raise over_budget(self.budget, before, cost, label)
            self._spent = after
            charge_id = len(self._entries) + 1
            self._entries.append(LedgerEntry(charge_id, now(), os.getpid(), label, cost, plan_digest, None))
            return before, after, charge_id

    def record_release(self, charge_id: int, certificate_digest: str) -> None:
        with self._lock:
            entry = self._entries[charge_id - 1]
            if entry.certificate_digest is None:
                self._entries[charge_id - 1] = attrs.evolve(entry, certificate_digest=certificate_digest)

    def record_failure(self, charge_id: int, failure: str) -> None:
        with self._lock:
            entry = self._entries[charge_id - 1]
            if entry.failure is None and entry.certificate_digest is None:
                self._entries[charge_id - 1] = attrs.evolve(entry, failure=failure)

    def totals(self) -> tuple[Measure, int]:
        with self._lock:
            return self._spent, len(self._entries)

    def history(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._entries)


@final
class Session(Generic[M]):
    """A privacy budget spent over several releases.

    Every charge happens *before* any noise is drawn, atomically, and is never
    refunded -- not even when the mechanism then raises. Costs are the plans'
    static costs; nothing depends on the data.

    ``Session(budget)`` keeps its ledger in memory: threads share it, but a
    forked worker gets a copy and would spend the whole budget again.
    :meth:`Session.open` keeps it in an SQLite file that threads, processes
    and restarts share (``docs/ledger.md``).

    Args:
        budget: the total budget (PureDP, ApproxDP or ZCDP).

    Examples:
        >>> from dpalg import PureDP
        >>> s = Session(PureDP(1))
        >>> s.charge(PureDP("0.25"))
        >>> s.remaining
        PureDP('3/4')
        >>> s
        Session(budget=PureDP(ε=1), spent=PureDP(ε=0.25), remaining=PureDP(ε=0.75), charges=1)
    """

    def __init__(self, budget: M) -> None:
        if not isinstance(budget, (PureDP, ApproxDP, ZCDP)):
            raise InvalidArgument("Session", "budget", type(budget).__name__, "must be PureDP, ApproxDP or ZCDP")
        self._budget: M = budget
        self._ledger: Ledger = _MemoryLedger(budget)

    @classmethod
    def open(cls, path: str | os.PathLike[str], budget: M, *, timeout: float = DEFAULT_TIMEOUT) -> Session[M]:
        """A session whose ledger is the SQLite file at ``path``, created with ``budget`` if absent.

        Every charge is one ``BEGIN IMMEDIATE`` transaction that reads the
        spent total, checks it against the budget and records the charge, so
        threads, processes and later runs that open the same file share one
        budget and never overspend it. Amounts are stored exactly. The object
        holds no connection: it may be used from any thread, in a forked child,
        or pickled to another process.

        Args:
            path: the ledger file. A missing or empty file becomes a new ledger.
            budget: the total budget; must equal the one the ledger was created with.
            timeout: seconds a charge waits for another writer's lock before
                raising :class:`~dpalg.graph._ledger.LedgerError` (nothing charged).

        Raises:
            InvalidArgument: ``budget`` differs from the ledger's (type or
                amount), or ``path`` is not a dpalg ledger (or of a newer format).
            LedgerError: the file cannot be opened or is damaged.

        Examples:
            >>> import os, tempfile
            >>> from dpalg import PureDP
            >>> path = os.path.join(tempfile.mkdtemp(), "budget.db")
            >>> Session.open(path, PureDP(1)).charge(PureDP("0.25"), label="first")
            >>> Session.open(path, PureDP(1)).remaining  # another process, or tomorrow
            PureDP('3/4')
        """
        session = cls(budget)  # validates the budget's type
        session._ledger = _SQLiteLedger.open(path, budget, timeout=timeout)
        return session

    @property
    def budget(self) -> M:
        """The total budget."""
        return self._budget

    @property
    def path(self) -> str | None:
        """The ledger file (absolute), or None for an in-memory session."""
        return self._ledger.path

    @property
    def spent(self) -> M:
        """What has been charged so far (re-read from the ledger file, if any)."""
        return cast(M, self._ledger.totals()[0])

    @property
    def remaining(self) -> M:
        """What is left."""
        return cast(M, subtract_measures(self._budget, self._ledger.totals()[0]))

    @property
    def charges(self) -> int:
        """How many charges succeeded."""
        return self._ledger.totals()[1]

    def history(self) -> tuple[LedgerEntry, ...]:
        """Every charge, oldest first: time, process, label, exact cost, plan and certificate digests."""
        return self._ledger.history()

    def charge(self, cost: M, *, label: str = "charge") -> None:
        """Atomically add ``cost`` to the spent amount, or raise without charging.

        Raises:
            BudgetExceeded: when ``spent + cost`` would exceed the budget.
            LedgerError: the ledger file stayed locked past the timeout, or is
                gone or damaged (nothing charged).
        """
        self._charge(cost, label, None)

    def _charge(self, cost: M, label: str, digest: str | None) -> tuple[M, M, int]:
        """:meth:`charge`, returning the spent amount just before and just after it
        (read atomically with the charge, so a certificate records its own charge
        exactly) and the charge's id in the ledger."""
        if type(cost) is not type(self._budget):
            advice = conversion_advice(type(cost), type(self._budget))
            raise InvalidArgument("Session.charge", "cost", cost, f"must be of type {type(self._budget).__name__} like the session's budget; {advice}")
        if not isinstance(label, str):
            raise InvalidArgument("Session.charge", "label", type(label).__name__, "must be a str")
        before, after, charge_id = self._ledger.charge(cost, label, digest)
        return cast(M, before), cast(M, after), charge_id

    def run(self, plan: AbstractMeasurement[M], data: object, *, rng: RngLike = None, label: str | None = None) -> Release:
        """Charge ``plan``'s static cost, then run it; returns its :class:`~dpalg.Release`.

        The ledger entry is labelled ``label`` (a non-empty line of at most 200
        printable characters, shown by ``dpalg budget``) or, without it, by
        the plan's kind and its children's kinds (``Compose(Laplace, Laplace)``).

        The data's schema (column names and dtypes) is validated first, so a
        column typo or a complex column costs nothing. The charge is then made
        before any value is read; a later error does not refund it. The
        ledger records the plan's digest with the charge and, once the release
        exists, its certificate's digest; a run that raises after its charge is
        recorded as failed (:attr:`~dpalg.graph._ledger.LedgerEntry.failure`:
        ``environment: ...`` for a :class:`~dpalg.BackendError`), and the
        exception propagates.

        Raises:
            InvalidArgument: ``label`` is not a non-empty line of printable
                characters, or a column the plan reads is absent or of the
                wrong dtype (nothing is charged).
            BudgetExceeded: the plan's cost does not fit what remains (nothing is charged).
            LedgerError: the ledger file stayed locked past the timeout, or is
                gone or damaged (nothing is charged).
            BackendError: the data's backend failed after the charge (the charge stands).
        """
        shown = default_label(plan) if label is None else run_label(label)
        derivation = derive(plan)
        with run_data(data) as dataset:  # a frame's cache lives for this run only
            validate_schema(plan, dataset)  # the public schema, before the charge: a typo costs nothing
            schema = plan_schema(plan, dataset)  # recorded in the certificate as it was before the charge
            digest = plan_digest(plan)
            before, after, charge_id = self._charge(cast(M, derivation.cost), shown, digest)
            spend = SessionSpend(budget=self._budget, spent_before=before, spent_after=after)
            try:
                release = EXECUTE.impl(plan, dataset, rng=rng, derivation=derivation, budget=self._budget, session=spend, schema=schema)
            except Exception as exc:
                self._record_failure(charge_id, exc)
                raise
        sealed = release.certificate.get("digest")
        if isinstance(sealed, dict) and isinstance(sealed.get("value"), str):
            # Bookkeeping only: the release is made and paid for; a busy ledger must not swallow it.
            try:
                self._ledger.record_release(charge_id, str(sealed["value"]))
            except LedgerError as exc:
                warnings.warn(f"the release was made, but its certificate digest was not recorded: {exc}", RuntimeWarning, stacklevel=2)
        return release

    def _record_failure(self, charge_id: int, exc: Exception) -> None:
        """Bookkeeping after a charged run raised: the ledger notes why (never data); ``exc`` propagates regardless."""
        try:
            self._ledger.record_failure(charge_id, failure_text(exc))
        except LedgerError as problem:
            warnings.warn(f"the run failed after its charge, and the failure was not recorded: {problem}", RuntimeWarning, stacklevel=3)

    def __repr__(self) -> str:
        try:
            spent, count = self._ledger.totals()
            shown = (
                f"spent={short_measure(spent, 'up')}, "
                f"remaining={short_measure(subtract_measures(self._budget, spent), 'down')}, charges={count}"
            )
        except LedgerError:  # a repr must not raise: the file may be locked or gone
            shown = "spent=?, remaining=?, charges=?"
        ledger = "" if self.path is None else f", ledger={self.path!r}"
        return f"Session(budget={short_measure(self._budget, 'down')}, {shown}{ledger})"
