"""The static accountant: one traversal, two modes (dry run and derive).

In the style of dp-accounting's ``_maybe_compose``: :func:`_walk` visits the
plan once; with ``dry=True`` it only establishes that every node is supported
(``supports``), with ``dry=False`` it also builds the :class:`Derivation`.
Dispatch is a ``match`` over the closed set of node kinds, ended by
``assert_never`` so mypy proves it exhaustive; a node outside that set (a user
subclass of :class:`AbstractMeasurement` that is neither structural nor a
primitive) is :class:`~dpalg.Unsupported`, never free.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Union, assert_never, cast

from dpalg._errors import BudgetExceeded, InvalidArgument, Unsupported
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._derivation import Derivation
from dpalg.graph._group import GroupPrivacy, group_cost
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive, M
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import short_measure

__all__ = ["check", "derive", "supports", "total_cost", "add_measures", "max_measures", "subtract_measures"]

KnownNode = Union[
    Compose[PureDP], Compose[ApproxDP], Compose[ZCDP],
    Parallel[PureDP], Parallel[ApproxDP], Parallel[ZCDP],
    PureToApprox, PureToZCDP, ZCDPToApprox,
    GroupPrivacy[PureDP], GroupPrivacy[ApproxDP], GroupPrivacy[ZCDP],
    AbstractPrimitive[PureDP], AbstractPrimitive[ApproxDP], AbstractPrimitive[ZCDP],
]  # fmt: skip

_KNOWN = (Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox, GroupPrivacy, AbstractPrimitive)


_KNOWN_TYPES: dict[type, bool] = {}


def _classify(node: object, path: str) -> KnownNode:
    known = _KNOWN_TYPES.get(type(node))
    if known is None:  # one (slow) ABC isinstance check per node type, then cached
        known = _KNOWN_TYPES.setdefault(type(node), isinstance(node, _KNOWN))
    if known:
        return cast(KnownNode, node)
    raise Unsupported(f"{path or '<root>'}: the accountant does not support node type {type(node).__name__!r}; unknown nodes are never free")


def _child_path(path: str, label: str) -> str:
    return f"{path}/{label}" if path else label


def _same(owner: str, a: Measure, b: object) -> None:
    """Refuse to combine losses of different types (explicit: ``assert`` vanishes under ``python -O``)."""
    if type(a) is not type(b):
        raise InvalidArgument(owner, "b", type(b).__name__, f"must be a {type(a).__name__} like a; convert explicitly first")


def add_measures(a: Measure, b: Measure) -> Measure:
    """Exact sum of two losses of the same type."""
    _same("add_measures", a, b)
    match a:
        case PureDP():
            return a + cast(PureDP, b)
        case ApproxDP():
            return a + cast(ApproxDP, b)
        case ZCDP():
            return a + cast(ZCDP, b)
        case _:
            assert_never(a)


def sum_measures(costs: list[Measure]) -> Measure:
    """Exact sum of a non-empty list of losses of one type (one object built, not n)."""
    first = costs[0]
    for c in costs[1:]:
        _same("sum_measures", first, c)
    match first:
        case PureDP():
            return PureDP(sum((cast(PureDP, c).epsilon for c in costs), Fraction(0)))
        case ApproxDP():
            eps = sum((cast(ApproxDP, c).epsilon for c in costs), Fraction(0))
            return ApproxDP(eps, sum((cast(ApproxDP, c).delta for c in costs), Fraction(0)))
        case ZCDP():
            return ZCDP(sum((cast(ZCDP, c).rho for c in costs), Fraction(0)))
        case _:
            assert_never(first)


def max_measures(a: Measure, b: Measure) -> Measure:
    """Component-wise maximum of two losses of the same type."""
    _same("max_measures", a, b)
    match a:
        case PureDP():
            return PureDP(max(a.epsilon, cast(PureDP, b).epsilon))
        case ApproxDP():
            ab = cast(ApproxDP, b)
            return ApproxDP(max(a.epsilon, ab.epsilon), max(a.delta, ab.delta))
        case ZCDP():
            return ZCDP(max(a.rho, cast(ZCDP, b).rho))
        case _:
            assert_never(a)


def subtract_measures(a: Measure, b: Measure) -> Measure:
    """``a - b`` for ``b.fits_within(a)`` (what remains of a budget)."""
    _same("subtract_measures", a, b)
    match a:
        case PureDP():
            return PureDP(a.epsilon - cast(PureDP, b).epsilon)
        case ApproxDP():
            ab = cast(ApproxDP, b)
            return ApproxDP(a.epsilon - ab.epsilon, a.delta - ab.delta)
        case ZCDP():
            return ZCDP(a.rho - cast(ZCDP, b).rho)
        case _:
            assert_never(a)


def fits(loss: Measure, budget: Measure) -> bool:
    """Type-respecting comparison; a different measure type raises InvalidArgument."""
    match loss:
        case PureDP():
            return loss.fits_within(cast(PureDP, budget))
        case ApproxDP():
            return loss.fits_within(cast(ApproxDP, budget))
        case ZCDP():
            return loss.fits_within(cast(ZCDP, budget))
        case _:
            assert_never(loss)


def _convertible(path: str, owner: str, cost: Measure, expected: type) -> None:
    """A conversion node applies to one measure type only; anything else is unsupported, never free."""
    if type(cost) is not expected:
        raise Unsupported(
            f"{path}: {owner} converts a {expected.__name__} plan, but its child costs {type(cost).__name__}; "
            "no conversion theorem applies"
        )


def _walk(node: object, path: str, dry: bool) -> Derivation | None:
    known = _classify(node, path)
    match known:
        case Compose():
            here = _child_path(path, "Compose")
            kids = [_walk(c, _child_path(here, f"{i}"), dry) for i, c in enumerate(known.children)]
            if dry:
                return None
            subs = tuple(cast(Derivation, k) for k in kids)
            total = sum_measures([s.cost for s in subs])
            return Derivation(
                here, known, "sequential composition: exact sum (Dwork-Roth Thm 3.16; Bun-Steinke Lemma 2.3)",
                (("children", str(len(subs))),), total, subs, combine="sum",
            )
        case Parallel():
            here = _child_path(path, f"Parallel(by={known.by!r})")
            kids = [_walk(c, _child_path(here, repr(k)), dry) for k, c in known.parts]
            if dry:
                return None
            subs = tuple(cast(Derivation, k) for k in kids)
            total = subs[0].cost
            for s in subs[1:]:
                total = max_measures(total, s.cost)
            return Derivation(
                here, known, "parallel composition over disjoint parts: maximum (McSherry 2009 Thm 4)",
                (("parts", str(len(subs))),), total, subs, combine="max",
            )
        case PureToApprox():
            here = _child_path(path, "PureToApprox")
            sub = _walk(known.child, here, dry)
            if sub is None:
                return None
            _convertible(here, "PureToApprox", sub.cost, PureDP)
            assert isinstance(sub.cost, PureDP)  # for mypy; _convertible raised otherwise
            return Derivation(here, known, "eps-DP is (eps, 0)-DP", (), sub.cost.to_approx(), (sub,), combine="convert")
        case PureToZCDP():
            here = _child_path(path, "PureToZCDP")
            sub = _walk(known.child, here, dry)
            if sub is None:
                return None
            _convertible(here, "PureToZCDP", sub.cost, PureDP)
            assert isinstance(sub.cost, PureDP)  # for mypy; _convertible raised otherwise
            return Derivation(here, known, "eps-DP implies eps^2/2-zCDP (Bun-Steinke 2016 Prop 1.4)", (), sub.cost.to_zcdp(), (sub,), combine="convert")
        case ZCDPToApprox():
            here = _child_path(path, "ZCDPToApprox")
            sub = _walk(known.child, here, dry)
            if sub is None:
                return None
            _convertible(here, "ZCDPToApprox", sub.cost, ZCDP)
            assert isinstance(sub.cost, ZCDP)  # for mypy; _convertible raised otherwise
            return Derivation(
                here, known, "tight zCDP -> (eps, delta) conversion, rounded up (Canonne-Kamath-Steinke 2020 Cor 13)",
                (("delta", str(known.delta)),), sub.cost.to_approx(known.delta), (sub,), combine="convert",
            )
        case GroupPrivacy():
            here = _child_path(path, f"GroupPrivacy(unit={known.unit!r}, max_rows={known.max_rows})")
            sub = _walk(known.plan, here, dry)
            if sub is None:
                return None
            return Derivation(
                here, known, "group privacy over k rows per user: k*eps; (k*eps, k*e^((k-1)eps)*delta) rounded up; k^2*rho "
                "(Dwork-Roth Thm 2.2; chained (eps, delta); Bun-Steinke Prop 1.9)",
                (("unit", known.unit), ("max_rows", str(known.max_rows))), group_cost(sub.cost, known.max_rows), (sub,), combine="convert",
            )
        case AbstractPrimitive():
            here = _child_path(path, type(known).__name__)
            if dry:
                return None
            claim = known.privacy()
            if not isinstance(claim.cost, (PureDP, ApproxDP, ZCDP)):
                raise Unsupported(f"{here}: privacy() returned {type(claim.cost).__name__}, not a privacy measure")
            return Derivation(here, known, claim.rule, claim.inputs, claim.cost, (), claim.notes)
        case _:
            assert_never(known)


def supports(node: object) -> bool:
    """Dry run: whether every node of the plan is known to the accountant."""
    try:
        _walk(node, "", dry=True)
    except Unsupported:
        return False
    return True


def derive(node: object) -> Derivation:
    """The derivation tree of a plan's cost. Touches no data.

    Raises:
        Unsupported: for a node type the accountant does not know.
    """
    result = _walk(node, "", dry=False)
    assert result is not None
    return result


def total_cost(node: AbstractMeasurement[M]) -> M:
    """The plan's static total cost."""
    return cast(M, derive(node).cost)  # the measure type is enforced at construction


def _locate(d: Derivation, budget: Measure) -> Derivation:
    """The first node, in order, at which the running total leaves the budget."""
    if d.combine == "sum":
        remaining = budget
        for child in d.children:
            if not fits(child.cost, remaining):
                return _locate(child, remaining)
            remaining = subtract_measures(remaining, child.cost)
    if d.combine == "max":
        for child in d.children:
            if not fits(child.cost, budget):
                return _locate(child, budget)
    return d


def check(node: object, budget: Measure) -> Derivation:
    """Derive the cost and compare it with ``budget`` (same measure type).

    Raises:
        BudgetExceeded: with the failing node, its path, its cost and the
            budget that remained for it, plus the whole derivation. Its
            message shows long numbers as short decimals (costs rounded up,
            budgets down: :func:`dpalg.measures._display.short_measure`); the
            exact values are its ``required`` and ``available`` attributes.
        InvalidArgument: when ``budget`` is not a privacy measure of the plan's type.
    """
    if not isinstance(budget, (PureDP, ApproxDP, ZCDP)):
        raise InvalidArgument("check", "budget", type(budget).__name__, "must be PureDP, ApproxDP or ZCDP")
    d = derive(node)
    if type(d.cost) is not type(budget):
        raise InvalidArgument(
            "check", "budget", budget, f"must be a {type(d.cost).__name__} like the plan's cost; wrap the plan in an explicit conversion node"
        )
    if fits(d.cost, budget):
        return d
    bad = _locate(d, budget)
    # the budget that remained when the failing node was reached
    available = _remaining_at(d, bad.path, budget)
    raise BudgetExceeded(
        f"plan cost {short_measure(d.cost, 'up')} exceeds budget {short_measure(budget, 'down')}; first failing node {bad.path}: "
        f"needs {short_measure(bad.cost, 'up')}, only {short_measure(available, 'down')} remained",
        path=bad.path, node_repr=bad.node, required=bad.cost, available=available, derivation=d,
    )


def _remaining_at(d: Derivation, target: str, budget: Measure) -> Measure:
    if d.path == target:
        return budget
    if d.combine == "sum":
        remaining = budget
        for child in d.children:
            if target == child.path or target.startswith(child.path + "/"):
                return _remaining_at(child, target, remaining)
            remaining = subtract_measures(remaining, child.cost)
    if d.combine == "max":
        for child in d.children:
            if target == child.path or target.startswith(child.path + "/"):
                return _remaining_at(child, target, budget)
    return budget


