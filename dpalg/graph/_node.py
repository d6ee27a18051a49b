"""Nodes of a plan: the typed measurement graph.

A plan is a tree of frozen, final attrs nodes. Every node is generic over its
privacy-loss type ``M`` (``PureDP``, ``ApproxDP`` or ``ZCDP``), so that
``mypy --strict`` rejects composing different measures, or checking a plan
against a budget of another measure, unless an explicit conversion node is
written.

Three things are kept apart (STYLE.md, convention 3): a node *describes* a
mechanism by its parameters; the accountant derives its *cost* from those
parameters alone; *running* it is a third step that is refused until the cost
was checked against a budget.

Adding a mechanism is a one-module change: subclass :class:`AbstractPrimitive`,
implement :meth:`~AbstractPrimitive.privacy` (the static cost with its theorem)
and :meth:`~AbstractPrimitive.release`.
"""

from __future__ import annotations

import abc
import threading
import weakref
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from dpalg.data import Dataset, Neighbouring
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise._random import AbstractRandomness, RngLike

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.graph._derivation import Derivation
    from dpalg.release._release import Release

__all__ = ["AbstractMeasurement", "AbstractPrimitive", "M", "PrivacyClaim"]

M = TypeVar("M", PureDP, ApproxDP, ZCDP)

# Plans that passed check(), by identity (hashing a large plan would cost more than
# checking it); entries disappear with their plan.
_CHECKED: dict[int, tuple[weakref.ref[object], Measure]] = {}
_CHECKED_LOCK = threading.Lock()


def _forget(key: int) -> None:
    with _CHECKED_LOCK:
        _CHECKED.pop(key, None)


class AbstractMeasurement(abc.ABC, Generic[M]):
    """A node of a plan whose privacy loss has type ``M``.

    Public methods: :meth:`cost`, :meth:`derive`, :meth:`check`, :meth:`run`.
    """

    @property
    @abc.abstractmethod
    def neighbouring(self) -> Neighbouring:
        """The privacy unit and relation under which the cost holds."""

    def derive(self) -> Derivation:
        """The derivation tree of this node's cost (no data touched)."""
        from dpalg.graph._accountant import derive

        return derive(self)

    def cost(self) -> M:
        """The static privacy cost: a function of the parameters only."""
        from dpalg.graph._accountant import total_cost

        return total_cost(self)

    def check(self, budget: M) -> Derivation:
        """Prove the cost fits ``budget``; afterwards :meth:`run` is allowed.

        Raises:
            BudgetExceeded: naming the first node (in order) that breaks the
                budget, its path and both amounts.
            Unsupported: when the plan contains a node the accountant does not know.
        """
        from dpalg.graph._accountant import check

        derivation = check(self, budget)
        key = id(self)
        with _CHECKED_LOCK:
            entry = _CHECKED.get(key)
            if entry is None or entry[0]() is not self:
                weakref.finalize(self, _forget, key)
            _CHECKED[key] = (weakref.ref(self), budget)
        return derivation

    def checked_budget(self) -> M | None:
        """The budget this plan was last checked against, if any."""
        with _CHECKED_LOCK:
            entry = _CHECKED.get(id(self))
        if entry is None or entry[0]() is not self:
            return None
        return entry[1]  # type: ignore[return-value]  # stored by check(budget: M)

    def run(self, data: object, *, rng: RngLike = None) -> Release:
        """Release the plan's values with a certificate.

        Args:
            data: a mapping of column name to 1-D array, or a DataFrame.
            rng: ``None`` (the secure OS generator), an int seed or an
                :class:`~dpalg.noise.AbstractRandomness`. Seeded runs are recorded
                as NOT SECURE in the certificate.

        Raises:
            UncheckedPlan: when :meth:`check` has not passed for this plan.
        """
        from dpalg.release._release import run_checked

        return run_checked(self, data, rng=rng)


@attrs.frozen
class PrivacyClaim(Generic[M]):
    """What a primitive states about itself: its cost and the theorem behind it."""

    cost: M
    rule: str
    inputs: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


class AbstractPrimitive(AbstractMeasurement[M]):
    """A leaf mechanism: it draws noise (only through :mod:`dpalg.noise`).

    Subclasses are frozen, final attrs classes. Their docstring has a
    **Privacy guarantee** section naming the theorem, the neighbouring relation
    and the exact cost.
    """

    @abc.abstractmethod
    def privacy(self) -> PrivacyClaim[M]:
        """The static cost, the rule (theorem) and its inputs. Never reads data."""

    @abc.abstractmethod
    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """Compute the noisy value. Called only by the runner, after the charge."""
