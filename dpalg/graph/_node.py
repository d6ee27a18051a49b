"""Nodes of a plan: the typed measurement graph.

A plan is a tree of frozen, final attrs nodes. Every node is generic over its
privacy-loss type ``M`` (``PureDP``, ``ApproxDP`` or ``ZCDP``), so that
``mypy --strict`` rejects composing different measures, or checking a plan
against a budget of another measure, unless an explicit conversion node is
written.

Three things are kept apart (docs/architecture.md, "Invariants"): a node *describes* a
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
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Generic, Protocol, TypeVar, cast, final

import attrs

from dpalg._errors import InvalidArgument, UncheckedPlan, Unsupported
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ColumnUse, Dataset, Neighbouring
from dpalg.data._grouping import ReleasedGroups
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._derivation import BudgetExceeded, Derivation
from dpalg.graph._provided import Provided  # re-exported: the slots' class (it lives below the nodes and the Release)
from dpalg.graph._result import Release
from dpalg.graph._summary_table import PlanSummary
from dpalg.measures import ZCDP, ApproxDP, Measure, PLDPart, PureDP
from dpalg.measures._measures import zero_like
from dpalg.noise._random import AbstractRandomness, RngLike

__all__ = [
    "ABSENT_IN_CERTIFICATE", "QUIET_DEFAULT", "AbstractMeasurement", "AbstractPrimitive", "CHECK", "DERIVE", "EPSILON_AT", "M", "PLAN_TREE", "PrivacyClaim", "Provided", "RUN", "SUMMARISE", "SchemaChoice",
    "claim_of", "neighbouring_of", "take_checked",
]  # fmt: skip

M = TypeVar("M", PureDP, ApproxDP, ZCDP)

#: attrs field metadata key: the value a certificate that does not record the field (written
#: before the field existed) meant, when that differs from the field's default for new plans
ABSENT_IN_CERTIFICATE = "dpalg_absent_in_certificate"
#: attrs field metadata key: when true, the plan tree (``str(plan)``) leaves the field out while it
#: holds its default, as the node's repr does (an option added later, so older plans read as before)
QUIET_DEFAULT = "dpalg_quiet_default"


@final
@attrs.frozen
class SchemaChoice:
    """What a primitive's release chooses from the public schema (the declared types of the columns it reads).

    Certificates record ``choice`` under the node's derivation path (format 2,
    ``resolved``), and ``dpalg audit`` re-derives it from the plan and the
    recorded schema (:meth:`AbstractPrimitive.schema_choice`).

    Attributes:
        field: the parameter whose value the schema resolves, e.g. ``"candidates"``.
        choice: what it resolves to, e.g. ``"integers"`` or ``"grid"``.
        reason: why, from the schema alone, e.g. ``"column 'price' is int"``.

    Examples:
        >>> SchemaChoice("candidates", "integers", "column 'price' is int").describe()
        "candidates: integers (column 'price' is int)"
    """

    field: str
    choice: str
    reason: str

    def describe(self) -> str:
        """``"<field>: <choice> (<reason>)"``: how reports show it."""
        return f"{self.field}: {self.choice} ({self.reason})"


class _Run(Protocol):
    def __call__(self, plan: AbstractMeasurement[M], data: object, *, rng: RngLike) -> Release: ...


#: the accountant's derivation of a plan (:func:`dpalg.graph._accountant.derive`)
DERIVE: Provided[Callable[[object], Derivation]] = Provided("the accountant", "dpalg.graph._accountant")
#: the accountant's budget check (:func:`dpalg.graph._accountant.check`)
CHECK: Provided[Callable[[object, Measure], Derivation]] = Provided("the accountant", "dpalg.graph._accountant")
#: the plan table (:func:`dpalg.graph._summary.summarise`)
class _Summarise(Protocol):
    def __call__(self, plan: object, alpha: ExactLike = ..., *, assume: Mapping[str, object] | None = None) -> PlanSummary: ...


SUMMARISE: Provided[_Summarise] = Provided("the plan summary", "dpalg.graph._summary")
#: the smallest certified ε at a δ (:func:`dpalg.graph._tight.epsilon_at` on the plan's derivation)
EPSILON_AT: Provided[Callable[[object, Fraction], Fraction]] = Provided("the accountant", "dpalg.graph._accountant")
#: the plan as an indented tree (:func:`dpalg.graph._pretty.plan_tree`)
PLAN_TREE: Provided[Callable[[object], str]] = Provided("the plan printer", "dpalg.graph._pretty")
#: the runner (:func:`dpalg.release._release.run_checked`): it builds the certificate, one floor up
RUN: Provided[_Run] = Provided("the runner", "dpalg.release")

# Plans that passed check(), by identity (hashing a large plan would cost more than
# checking it); entries disappear with their plan. A check grants ONE run of that plan
# object outside a Session (one check pays for one release; a Session charges each run):
# ``spent`` records that it was used.
# ``derivation`` is the one check() proved against ``budget`` (its root's ``source``
# cleared: a strong reference from this dict would keep the plan alive forever);
# run() certifies with it instead of deriving the plan again. It cannot be stale:
# the entry belongs to this very object (weak reference compared by identity), nodes
# are frozen all the way down, and a node's cost is a function of its parameters
# only (the invariant "cost is static", docs/architecture.md).
@attrs.define
class _Checked:
    ref: weakref.ref[object]
    budget: Measure
    derivation: Derivation
    spent: bool = False


_CHECKED: dict[int, _Checked] = {}
# Re-entrant: a garbage-collection pass can run at any allocation made while the lock is
# held (e.g. building the _Checked entry), and the finalizer of a checked plan it collects
# calls _forget on the same thread; a plain Lock deadlocks there.
_CHECKED_LOCK = threading.RLock()


def _forget(key: int) -> None:
    with _CHECKED_LOCK:
        _CHECKED.pop(key, None)


def take_checked_run(plan: AbstractMeasurement[M]) -> M:
    """Use the one run that ``plan.check(budget)`` granted, atomically; return that budget.

    Called by ``plan.run`` only after the schema check passed (a typo costs nothing).

    Raises:
        UncheckedPlan: when the plan was never checked.
        BudgetExceeded: when its run was already used; a second release needs a
            :class:`~dpalg.Session`, which charges every run.
    """
    return take_checked(plan)[0]


def take_checked(plan: AbstractMeasurement[M]) -> tuple[M, Derivation]:
    """:func:`take_checked_run`, also returning the derivation that check proved against that budget.

    Budget and derivation are read under the same lock that marks the run used,
    so they belong to the same successful check.
    """
    with _CHECKED_LOCK:
        entry = _CHECKED.get(id(plan))
        if entry is None or entry.ref() is not plan:
            raise UncheckedPlan(
                f"{type(plan).__name__}: run() refused: call plan.check(budget) first (or run it in a dpalg.Session)"
            )
        budget = entry.budget
        if not entry.spent:
            entry.spent = True
            return budget, attrs.evolve(entry.derivation, source=plan)  # type: ignore[return-value]  # stored by check(budget: M)
    raise BudgetExceeded(
        f"{type(plan).__name__}: run() refused: this plan's check() already paid for one run and that run was made; "
        "a checked plan runs once outside a Session (checking it again does not grant another run). "
        "To release several times, spend a budget across runs with dpalg.Session(budget).run(plan, data)",
        path=type(plan).__name__, node_repr=repr(plan), required=budget, available=zero_like(budget),
    )


class _Printer(Protocol):
    """IPython's pretty printer (only ``text`` is used)."""

    def text(self, obj: str) -> None: ...


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
        return DERIVE.impl(self)

    def cost(self) -> M:
        """The static privacy cost: a function of the parameters only."""
        return cast(M, DERIVE.impl(self).cost)  # the measure type is enforced at construction

    def epsilon_at(self, delta: ExactLike) -> Fraction:
        """The smallest ε, rounded up, any composition rule certifies for this plan at ``delta`` (no data touched).

        For an ε-DP or (ε, δ) plan: the best of basic composition, the zCDP route and
        optimal composition over its parts (:mod:`dpalg.graph._tight`); for a zCDP plan:
        the tight conversion. ``check(ApproxDP(eps, delta))`` passes exactly when
        ``epsilon_at(delta) <= eps`` (for (ε, δ) plans).

        Raises:
            InvalidArgument: ``delta`` outside [0, 1), or below what the plan's parts need.
        """
        return EPSILON_AT.impl(self, to_fraction(delta, owner=type(self).__name__, field="delta"))

    def privacy_curve(self, deltas: Iterable[ExactLike] | None = None) -> tuple[tuple[Fraction, Fraction], ...]:
        """Points ``(δ, ε)`` of the plan's certified privacy curve, ε rounded up (for plotting).

        ``deltas`` defaults to 10⁻¹ … 10⁻¹² (δ values below what the parts need are skipped).
        """
        points: list[tuple[Fraction, Fraction]] = []
        for raw in (deltas if deltas is not None else (Fraction(1, 10**i) for i in range(1, 13))):
            delta = to_fraction(raw, owner=type(self).__name__, field="deltas")
            try:
                points.append((delta, EPSILON_AT.impl(self, delta)))
            except InvalidArgument:
                continue
        return tuple(points)

    def check(self, budget: M) -> Derivation:
        """Prove the cost fits ``budget``; afterwards :meth:`run` is allowed **once**.

        One check pays for one run of this plan object: a second :meth:`run`
        raises :class:`~dpalg.BudgetExceeded`, and checking again does not grant
        another run (otherwise calling ``check`` twice would spend the budget
        twice). To release a plan several times, use a :class:`~dpalg.Session`,
        which charges each run against one budget. The rule is per plan
        *object*; a Session is what enforces a budget across plans.

        Raises:
            BudgetExceeded: naming the first node (in order) that breaks the
                budget, its path and both amounts.
            Unsupported: when the plan contains a node the accountant does not know.
        """
        derivation = CHECK.impl(self, budget)
        assert derivation.source is self  # the root of a derivation is the plan itself
        # kept without its root's reference to the plan, so the entry never keeps the plan alive
        detached = attrs.evolve(derivation, source=None)
        key = id(self)
        with _CHECKED_LOCK:
            entry = _CHECKED.get(key)
            if entry is None or entry.ref() is not self:
                weakref.finalize(self, _forget, key)
                _CHECKED[key] = _Checked(weakref.ref(self), budget, detached)
            elif not entry.spent:
                entry.budget = budget
                entry.derivation = detached
        return derivation

    def checked_budget(self) -> M | None:
        """The budget this plan was checked against, if any (its run may be used already)."""
        with _CHECKED_LOCK:
            entry = _CHECKED.get(id(self))
        if entry is None or entry.ref() is not self:
            return None
        return entry.budget  # type: ignore[return-value]  # stored by check(budget: M)

    def accuracy(self, alpha: ExactLike = Fraction(1, 20)) -> Accuracy:
        """The (1 − ``alpha``) error this node's noise implies, before running (no data touched).

        See :class:`~dpalg.graph.Accuracy` and ``docs/accuracy.md``. Mechanisms
        whose error has a statement override this; a composition has none of
        its own (``plan.summary()`` shows each part's).

        Raises:
            Unsupported: this node makes no accuracy statement.
            InvalidArgument: ``alpha`` is not in (0, 1).
        """
        alpha_param(type(self).__name__, alpha)
        raise Unsupported(f"{type(self).__name__}: no accuracy statement (see plan.summary() for its parts, docs/accuracy.md)")

    def summary(self, alpha: ExactLike = Fraction(1, 20), *, assume: Mapping[str, object] | None = None) -> PlanSummary:
        """A table over the plan's nodes: cost, noise and (1 − ``alpha``) accuracy. No data touched.

        ``str(plan.summary())`` is the table ``dpalg check`` prints. ``assume``
        gives the public assumptions that conditional statements need, once for
        the whole plan (``{"n": 15000}``) or per node path
        (``{"Compose/1": {"denominator": 500}}``); see
        :func:`dpalg.graph._summary.summarise`.
        """
        return SUMMARISE.impl(self, alpha, assume=assume)

    def __str__(self) -> str:
        """The plan as an indented tree, short decimals for exact numbers (``repr`` stays exact)."""
        return PLAN_TREE.impl(self)

    def _repr_pretty_(self, printer: _Printer, cycle: bool) -> None:
        """IPython shows plans as their tree."""
        printer.text(repr(self) if cycle else str(self))

    def run(self, data: object, *, rng: RngLike = None) -> Release:
        """Release the plan's values with a certificate.

        Args:
            data: a mapping of column name to 1-D array, or a DataFrame.
            rng: ``None`` (the secure OS generator), an int seed or an
                :class:`~dpalg.noise.AbstractRandomness`. Seeded runs are recorded
                as NOT SECURE in the certificate.

        Raises:
            UncheckedPlan: when :meth:`check` has not passed for this plan.
            BudgetExceeded: when this plan already made the one run its check
                granted (use a :class:`~dpalg.Session` to release several times).
            InvalidArgument: when a column the plan reads is absent or has a
                dtype it cannot read; checked before the run is used, so it costs
                nothing.
        """
        return RUN.impl(self, data, rng=rng)


def _bounded_range(claim: PrivacyClaim[M], attribute: attrs.Attribute[Fraction | None], value: Fraction | None) -> None:
    if value is None:
        return
    if not isinstance(claim.cost, PureDP):
        raise InvalidArgument("PrivacyClaim", "bounded_range", value, f"is stated for an eps-DP claim only, not {type(claim.cost).__name__}")
    if not isinstance(value, Fraction) or value <= 0:
        raise InvalidArgument("PrivacyClaim", "bounded_range", value, "must be a Fraction > 0")


def _pld(claim: PrivacyClaim[M], attribute: attrs.Attribute[PLDPart | None], value: PLDPart | None) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or len(value) != 3 or value[0] not in ("laplace", "gaussian"):
        raise InvalidArgument("PrivacyClaim", "pld", value, "must be ('laplace' | 'gaussian', param, sensitivity)")
    _, param, delta = value
    if not isinstance(param, Fraction) or param <= 0 or isinstance(delta, bool) or not isinstance(delta, int) or delta < 1:
        raise InvalidArgument("PrivacyClaim", "pld", value, "needs a Fraction param > 0 and an int sensitivity >= 1")


@attrs.frozen
class PrivacyClaim(Generic[M]):
    """What a primitive states about itself: its cost and the theorem behind it.

    ``bounded_range`` is ``η`` when the mechanism is also proven η-bounded-range
    (Durfee–Rogers 2019): for every pair of neighbours ``x, x'`` there is a ``t``
    with ``ln(P[M(x) = y] / P[M(x') = y]) ∈ [t, t + η]`` for every output ``y``.
    ``PureToZCDP`` then charges it ``η²/8``-zCDP instead of ``ε²/2``
    (Cesar–Rogers 2021, arXiv:2004.07223, Lemmas 3.2 and 3.4). ``None``: no such
    claim (every ε-DP mechanism is 2ε-bounded-range, which gives ``ε²/2`` again).

    ``pld`` is ``(kind, param, Δ)`` when the release is ``f(x) + Z`` for one integer
    query of sensitivity Δ (lattice units) with ``Z`` a discrete Laplace of scale
    ``param`` or a discrete Gaussian of variance parameter ``param``: its privacy loss
    distribution is then known exactly (:mod:`dpalg.measures._pld`) and the
    accountant's "pld" rule composes it. It never changes the claim's cost or rule.
    """

    cost: M
    rule: str
    inputs: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    bounded_range: Fraction | None = attrs.field(default=None, validator=_bounded_range)
    pld: PLDPart | None = attrs.field(default=None, validator=_pld)


# A frozen attrs node's claim and neighbouring relation are functions of its
# parameters only, so each is computed once and kept in the instance's __dict__ (every
# node has one: AbstractMeasurement declares no __slots__). Written into __dict__
# directly, so attrs' frozen __setattr__ is not bypassed for any field; attrs' eq,
# hash, repr and pickling see fields only, so the cache never makes two nodes
# (un)equal and a copy or evolve() starts empty. Nodes that are not frozen attrs
# classes are asked every time, as before.
_CLAIM_KEY = "_dpalg_privacy_claim"
_NEIGHBOURING_KEY = "_dpalg_neighbouring"
_FROZEN_SETATTR = PrivacyClaim.__setattr__  # attrs' frozen __setattr__
_CACHEABLE: dict[type, bool] = {}
_INTERNED: dict[Neighbouring, Neighbouring] = {}  # a few relations per program; capped below
_MAX_INTERNED = 1024


def _cacheable(cls: type) -> bool:
    return attrs.has(cls) and cls.__setattr__ is _FROZEN_SETATTR


def _store(node: object) -> dict[str, object] | None:
    """The node's ``__dict__`` when its parameters cannot change (a frozen attrs class), else None."""
    cls = type(node)
    cacheable = _CACHEABLE.get(cls)
    if cacheable is None:
        cacheable = _CACHEABLE.setdefault(cls, _cacheable(cls))
    return getattr(node, "__dict__", None) if cacheable else None


def claim_of(
    node: AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP],
) -> PrivacyClaim[PureDP] | PrivacyClaim[ApproxDP] | PrivacyClaim[ZCDP]:
    """``node.privacy()``, computed once per frozen node object.

    Examples:
        >>> from dpalg.graph._testing import Fixed
        >>> node = Fixed(PureDP(1))
        >>> claim_of(node) is claim_of(node)
        True
    """
    store = _store(node)
    if store is None:
        return node.privacy()
    claim = store.get(_CLAIM_KEY)
    if claim is None:
        claim = store[_CLAIM_KEY] = node.privacy()
    return claim  # type: ignore[return-value]  # stored just above


def neighbouring_of(
    node: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP],
) -> Neighbouring:
    """``node.neighbouring``, computed once per frozen node object."""
    store = _store(node)
    if store is None:
        return node.neighbouring
    found = store.get(_NEIGHBOURING_KEY)
    if found is None:
        fresh = node.neighbouring
        # interned, so that the children of one Compose usually hold the very same object
        if type(fresh) is Neighbouring and (fresh in _INTERNED or len(_INTERNED) < _MAX_INTERNED):
            fresh = _INTERNED.setdefault(fresh, fresh)
        found = store[_NEIGHBOURING_KEY] = fresh
    return found  # type: ignore[return-value]  # stored just above


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

    def columns(self) -> tuple[ColumnUse, ...]:
        """The columns this node reads and their roles: the public schema checked before the charge.

        The default collects the columns of every field that can state its own
        (a :class:`~dpalg.Query` or any object with a ``columns()`` method, also
        inside tuples and nested attrs objects) and the id column of
        :attr:`neighbouring`. A mechanism that reads a column named any other
        way (a bare ``str`` field) must override it.
        """
        uses = list(_field_columns(self, 0))
        if self.neighbouring.unit is not None:
            uses.append(ColumnUse(self.neighbouring.unit, "id"))
        return tuple(dict.fromkeys(uses))

    def schema_choice(self, kinds: Mapping[str, str]) -> SchemaChoice | None:
        """What :meth:`release` chooses from the public schema, or ``None`` (the default): nothing beyond the schema check.

        ``kinds`` maps each column the node reads to its type as the schema check
        classifies it (:func:`dpalg.data._schema.column_kind`: ``"int"``,
        ``"float"``, ...). A node whose release depends on a column's declared
        type must override this and make :meth:`release` decide through it, so
        that the choice a certificate records is the one that ran and an audit
        can re-derive it from the plan and the recorded schema alone.
        """
        return None

    def release_groups(self, groups: ReleasedGroups, rng: AbstractRandomness) -> list[object] | None:
        """Every released group's value at once, or ``None`` (the default): not supported, run :meth:`release` per group.

        Called by the GROUP BY runner, after the charge, with the rows of all
        released groups (:class:`~dpalg.data._grouping.ReleasedGroups`). A node that
        supports it returns one value per group, in the groups' order, and must
        return ``None`` before drawing any randomness when it does not. Its
        privacy must be the per-group release's: for each group the same
        statistic and the same noise distribution as :meth:`release` on that
        group's rows, with the groups' noises independent. The joint output
        distribution is then that of running :meth:`release` on every group, so
        the GroupBy cost rule holds unchanged (only the order in which the
        random stream is consumed differs).
        """
        return None

    def check_backend(self, data: Dataset) -> None:
        """Refuse a backend this node cannot run on, before the charge (the default accepts every backend).

        Reads the kind of ``data`` (its source: numpy, polars, Spark), never a
        row; the runner calls it with the schema check, so a refusal costs
        nothing. A node overrides it to raise
        :class:`~dpalg.Unsupported` naming what it cannot do there.
        """


def _field_columns(value: object, depth: int) -> Iterator[ColumnUse]:
    if depth > 4:
        return
    if depth > 0 and not isinstance(value, AbstractMeasurement):
        method = getattr(value, "columns", None)
        if callable(method):
            stated = method()
            if isinstance(stated, tuple) and all(isinstance(u, ColumnUse) for u in stated):
                yield from stated
                return
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _field_columns(item, depth + 1)
    elif attrs.has(type(value)):
        for field in attrs.fields(cast("type[attrs.AttrsInstance]", type(value))):
            yield from _field_columns(getattr(value, field.name), depth + 1)
