"""The static accountant: one traversal, two modes (dry run and derive).

In the style of dp-accounting's ``_maybe_compose``: :func:`_walk` visits the
plan once; with ``dry=True`` it only establishes that every node is supported
(``supports``), with ``dry=False`` it also builds the :class:`Derivation`.
Dispatch is a ``match`` over the closed set of node kinds, ended by
``assert_never`` so mypy proves it exhaustive; a node outside that set (a user
subclass of :class:`AbstractMeasurement` that is neither structural nor a
primitive) is :class:`~dpalg.Unsupported`, never free.

Speed without rounding: a node's kind is looked up by its exact type
(the ABC ``isinstance`` runs once per type, not per node); the children of a
composition are visited in one loop in which leaves take their claim from the
node's cache (:func:`~dpalg.graph._node.claim_of`) and are not given a
:class:`Derivation` until someone reads it (:class:`PendingChildren`); costs
are added as integers over a common denominator (:func:`exact_sum`), exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from math import gcd
from typing import Final, TypeVar, Union, assert_never, cast

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox, conversion_advice
from dpalg.graph._derivation import BudgetExceeded, Derivation, LeafClaim, PendingChildren
from dpalg.graph._group import GroupPrivacy, group_cost
from dpalg.graph._groupby import GaussianPartitionSelection, GroupBy, KeySet, groupby_cost, groups_per_user
from dpalg.graph._subsample import Subsample, subsample_cost
from dpalg.graph._tight import describe, epsilon_at, epsilon_candidates, parts_of, tighten
from dpalg.graph._node import _CLAIM_KEY, CHECK, DERIVE, EPSILON_AT, AbstractMeasurement, AbstractPrimitive, M, claim_of
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import short_measure, short_number
from dpalg.measures._measures import exact_sum

__all__ = ["check", "derive", "supports", "total_cost", "add_measures", "max_measures", "subtract_measures"]

KnownNode = Union[
    Compose[PureDP], Compose[ApproxDP], Compose[ZCDP],
    Parallel[PureDP], Parallel[ApproxDP], Parallel[ZCDP],
    PureToApprox, PureToZCDP, ZCDPToApprox,
    GroupPrivacy[PureDP], GroupPrivacy[ApproxDP], GroupPrivacy[ZCDP],
    GroupBy[PureDP], GroupBy[ApproxDP], GroupBy[ZCDP],
    Subsample[PureDP], Subsample[ApproxDP],
    AbstractPrimitive[PureDP], AbstractPrimitive[ApproxDP], AbstractPrimitive[ZCDP],
]  # fmt: skip

# The node kinds, in the order of the ``match`` in _walk (a subclass is classified as
# the first base it has, exactly as the match would).
_KNOWN = (Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox, GroupPrivacy, GroupBy, Subsample, AbstractPrimitive)
_LEAF: Final = len(_KNOWN) - 1
_UNKNOWN: Final = -1

# exact type -> index in _KNOWN, or _UNKNOWN; the final node types are known up front
_KIND: dict[type, int] = {kind: i for i, kind in enumerate(_KNOWN[:-1])}

_MEASURES: Final = (PureDP, ApproxDP, ZCDP)
_MEASURE_SET: Final = frozenset(_MEASURES)

_SUM_RULE: Final = "sequential composition: exact sum (Dwork-Roth Thm 3.16; Bun-Steinke Lemma 2.3)"
_MAX_RULE: Final = "parallel composition over disjoint parts: maximum (McSherry 2009 Thm 4)"
_SUBSAMPLE_RULE: Final = (
    "amplification by Poisson subsampling (add/remove): eps -> ln(1 + q(e^eps - 1)) rounded up, delta -> q*delta "
    "(Balle-Barthe-Gaboardi 2018 Thm 8; Steinke 2025 Thm 1)"
)


def _learn(node: object) -> int:
    """The kind of a type seen for the first time (one ABC ``isinstance`` per kind, then cached)."""
    kind = next((i for i, k in enumerate(_KNOWN) if isinstance(node, k)), _UNKNOWN)
    return _KIND.setdefault(type(node), kind)


def _unsupported(node: object, path: str) -> Unsupported:
    return Unsupported(f"{path or '<root>'}: the accountant does not support node type {type(node).__name__!r}; unknown nodes are never free")


def _classify(node: object, path: str) -> KnownNode:
    kind = _KIND.get(type(node))
    if kind is None:
        kind = _learn(node)
    if kind == _UNKNOWN:
        raise _unsupported(node, path)
    return cast(KnownNode, node)


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


def _componentwise(owner: str, costs: list[Measure], fold: Callable[[list[Fraction]], Fraction]) -> Measure:
    """``fold`` applied to each component of a non-empty list of losses of one type (one object built, not n)."""
    first = costs[0]
    kind = type(first)
    for c in costs:
        if type(c) is not kind:
            _same(owner, first, c)
    match first:
        case PureDP():
            return PureDP(fold([cast(PureDP, c).epsilon for c in costs]))
        case ApproxDP():
            eps = fold([cast(ApproxDP, c).epsilon for c in costs])
            return ApproxDP(eps, fold([cast(ApproxDP, c).delta for c in costs]))
        case ZCDP():
            return ZCDP(fold([cast(ZCDP, c).rho for c in costs]))
        case _:
            assert_never(first)


def sum_measures(costs: list[Measure]) -> Measure:
    """Exact sum of a non-empty list of losses of one type (one object built, not n).

    Each component is added over a common denominator (:func:`exact_sum`):
    equal to adding the ``Fraction`` s one by one.
    """
    return _componentwise("sum_measures", costs, exact_sum)


def _composed(here: str, costs: list[Measure]) -> Measure:
    """:func:`sum_measures` of a :class:`Compose` node's children; a sum of deltas reaching 1 names the node that reached it.

    Basic composition (Dwork and Roth 2014, Theorem 3.16) adds the deltas, and an
    (ε, δ) guarantee with δ >= 1 says nothing, so :class:`ApproxDP` refuses it; the
    refusal is raised here with the node's path, so the user sees which composition
    broke the budget rather than a bare measure.
    """
    try:
        return sum_measures(costs)
    except InvalidArgument as exc:
        if exc.owner != "ApproxDP" or exc.field != "delta":
            raise
        raise InvalidArgument(
            here, "delta", exc.value, f"(the sum of its {len(costs)} children's deltas) must be below 1: the composed guarantee would be vacuous"
        ) from None


def _max_all(costs: list[Measure]) -> Measure:
    """Component-wise maximum of a non-empty list of losses of one type (as folding :func:`max_measures`)."""
    return _componentwise("max_measures", costs, max)


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


_Primitive = Union[AbstractPrimitive[PureDP], AbstractPrimitive[ApproxDP], AbstractPrimitive[ZCDP]]


def _leaf_claim(node: _Primitive, here: str) -> LeafClaim:
    claim = claim_of(node)
    cost = claim.cost
    if type(cost) not in _MEASURE_SET and not isinstance(cost, _MEASURES):
        raise Unsupported(f"{here}: privacy() returned {type(cost).__name__}, not a privacy measure")
    return claim


def _children(nodes: tuple[object, ...], here: str, labels: list[str] | None, dry: bool) -> list[Derivation | LeafClaim]:
    """Walk a composition's children in order: leaves give their cached claim, others their derivation.

    Child ``i`` sits at ``{here}/{label}`` (``label`` is ``i`` when ``labels`` is None);
    an unknown node is refused there, exactly as :func:`_walk` would refuse it.
    """
    items: list[Derivation | LeafClaim] = []
    kinds = _KIND
    measures = _MEASURE_SET
    for i, child in enumerate(nodes):
        kind = kinds.get(type(child))
        if kind is None:
            kind = _learn(child)
        if kind == _LEAF:
            if not dry:
                try:  # the claim cached on the node (claim_of), without a call
                    claim = child.__dict__.get(_CLAIM_KEY)
                except AttributeError:  # pragma: no cover - a registered virtual subclass without __dict__
                    claim = None
                if claim is None:
                    claim = claim_of(cast(_Primitive, child))  # kind _LEAF: an AbstractPrimitive
                cost = claim.cost
                if type(cost) not in measures and not isinstance(cost, _MEASURES):
                    label = str(i) if labels is None else labels[i]
                    raise Unsupported(f"{here}/{label}/{type(child).__name__}: privacy() returned {type(cost).__name__}, not a privacy measure")
                items.append(claim)
            continue
        label = str(i) if labels is None else labels[i]
        if kind == _UNKNOWN:
            raise _unsupported(child, f"{here}/{label}")
        sub = _walk(child, f"{here}/{label}", dry)
        if sub is not None:
            items.append(sub)
    return items


_Source = TypeVar("_Source", PureDP, ZCDP)


def _conversion(
    node: PureToApprox | PureToZCDP | ZCDPToApprox, path: str, dry: bool, source: type[_Source],
    convert: Callable[[_Source], Measure], rule: str, inputs: tuple[tuple[str, str], ...],
) -> Derivation | None:
    """The derivation of a conversion node: its child's, converted by the theorem ``rule`` (the child must cost a ``source``)."""
    name = type(node).__name__
    here = _child_path(path, name)
    sub = _walk(node.child, here, dry)
    if sub is None:
        return None
    _convertible(here, name, sub.cost, source)
    cost = sub.cost
    assert isinstance(cost, source)  # for mypy; _convertible raised otherwise
    return Derivation(here, node, rule, inputs, convert(cost), (sub,), combine="convert")


_WHOLE_ZCDP_RULE: Final = "eps-DP implies eps^2/2-zCDP (Bun-Steinke 2016 Prop 1.4)"
_PER_PART_ZCDP_RULE: Final = (
    "each pure part converted, then zCDP composition: an eps-DP part is eps^2/2-zCDP (Bun-Steinke 2016 Prop 1.4), "
    "an eta-bounded-range leaf eta^2/8-zCDP (Cesar-Rogers 2021 Lemmas 3.2, 3.4), the smaller is charged; "
    "sum over sequential parts (Bun-Steinke 2016 Lemma 2.3), maximum over disjoint parallel parts (one unit changes one part)"
)


def _part_rho(epsilon: Fraction, eta: Fraction | None) -> tuple[Fraction, str]:
    """The zCDP cost of one ε-DP part (η-bounded-range when ``eta`` is given) and what it contributed, as text."""
    pure = epsilon * epsilon / 2
    if eta is not None:
        br = eta * eta / 8
        if br <= pure:
            return br, f"eta={eta} bounded range: eta^2/8={br}"
    return pure, f"eps={epsilon}: eps^2/2={pure}"


def _per_part_rho(node: object, d: Derivation, inputs: list[tuple[str, str]]) -> Fraction:
    """The zCDP cost of a pure sub-plan converted part by part (:class:`PureToZCDP`, ``per_part=True``).

    ``d`` is the sub-plan's derivation (already made by :func:`_walk`). Sums over a
    ``Compose``, maximises over a ``Parallel``; a leaf is charged from its cached claim
    (with its ``bounded_range``), any other node from its derivation's ε. Appends
    ``(path, contribution)`` for every part to ``inputs``.
    """
    if isinstance(node, Compose) and d.combine == "sum":
        labels, children = node.labels, node.children
    elif isinstance(node, Parallel) and d.combine == "max":
        labels, children = tuple(repr(k) for k, _ in node.parts), tuple(c for _, c in node.parts)
    else:
        cost = d.cost
        _convertible(d.path, "PureToZCDP", cost, PureDP)  # the parts of an eps-DP plan are eps-DP; refused otherwise
        assert isinstance(cost, PureDP)  # for mypy
        eta = claim_of(cast(_Primitive, node)).bounded_range if isinstance(node, AbstractPrimitive) else None
        rho, text = _part_rho(cost.epsilon, eta)
        inputs.append((d.path, text))
        return rho
    rhos: list[Fraction] = []
    for i, (label, child) in enumerate(zip(labels, children)):
        kind = _KIND.get(type(child))
        if kind is None:
            kind = _learn(child)
        if kind == _LEAF:
            claim = claim_of(cast(_Primitive, child))  # cached on the node: no leaf derivation is built
            here = f"{d.path}/{label}/{type(child).__name__}"
            leaf_cost = claim.cost
            _convertible(here, "PureToZCDP", leaf_cost, PureDP)
            assert isinstance(leaf_cost, PureDP)  # for mypy
            rho, text = _part_rho(leaf_cost.epsilon, claim.bounded_range)
            inputs.append((here, text))
            rhos.append(rho)
        else:
            rhos.append(_per_part_rho(child, d.child(i), inputs))
    return exact_sum(rhos) if d.combine == "sum" else max(rhos)


def _pure_to_zcdp_per_part(node: PureToZCDP, path: str, dry: bool) -> Derivation | None:
    """:class:`PureToZCDP` with ``per_part=True``: the child's parts converted one by one, then composed."""
    here = _child_path(path, "PureToZCDP")
    sub = _walk(node.child, here, dry)
    if sub is None:
        return None
    _convertible(here, "PureToZCDP", sub.cost, PureDP)
    inputs: list[tuple[str, str]] = []
    rho = _per_part_rho(node.child, sub, inputs)
    return Derivation(here, node, _PER_PART_ZCDP_RULE, (("parts", str(len(inputs))), *inputs), ZCDP(rho), (sub,), combine="convert")


def _walk(node: object, path: str, dry: bool) -> Derivation | None:
    known = _classify(node, path)
    match known:
        case Compose():
            here = _child_path(path, "Compose")
            names = list(known.names) if known.names else None  # a named child sits at {here}/{name}
            items = _children(known.children, here, names, dry)
            if dry:
                return None
            total = _composed(here, [it.cost for it in items])
            pending = PendingChildren(here, names, known.children, items)
            return Derivation(here, known, _SUM_RULE, (("children", str(len(items))),), total, pending, combine="sum")
        case Parallel():
            here = _child_path(path, f"Parallel(by={known.by!r})")
            labels = [repr(k) for k, _ in known.parts]
            nodes = tuple(c for _, c in known.parts)
            items = _children(nodes, here, labels, dry)
            if dry:
                return None
            total = _max_all([it.cost for it in items])
            pending = PendingChildren(here, labels, nodes, items)
            return Derivation(here, known, _MAX_RULE, (("parts", str(len(items))),), total, pending, combine="max")
        case PureToApprox():
            return _conversion(known, path, dry, PureDP, PureDP.to_approx, "eps-DP is (eps, 0)-DP", ())
        case PureToZCDP():
            if not known.per_part:  # the whole-plan rule (certificates written before per_part existed)
                return _conversion(known, path, dry, PureDP, PureDP.to_zcdp, _WHOLE_ZCDP_RULE, ())
            return _pure_to_zcdp_per_part(known, path, dry)
        case ZCDPToApprox():
            return _conversion(
                known, path, dry, ZCDP, functools.partial(ZCDP.to_approx, delta=known.delta),
                "tight zCDP -> (eps, delta) conversion, rounded up (Canonne-Kamath-Steinke 2020 Cor 13)", (("delta", str(known.delta)),),
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
        case GroupBy():
            here = _child_path(path, f"GroupBy(by={known.by!r})")
            sub = _walk(known.plan, here, dry)
            if sub is None:
                return None
            m = groups_per_user(known)
            return Derivation(
                here, known, _groupby_rule(known), _groupby_inputs(known, m), groupby_cost(known, sub.cost), (sub,), combine="convert",
            )
        case Subsample():
            here = _child_path(path, f"Subsample(rate={known.rate})")
            sub = _walk(known.plan, here, dry)
            if sub is None:
                return None
            return Derivation(
                here, known, _SUBSAMPLE_RULE, (("rate", str(known.rate)), ("unit", str(known.neighbouring.unit))),
                subsample_cost(sub.cost, known.rate), (sub,), combine="convert",
            )
        case AbstractPrimitive():
            here = _child_path(path, type(known).__name__)
            if dry:
                return None
            claim = _leaf_claim(known, here)
            return Derivation(here, known, claim.rule, claim.inputs, claim.cost, (), claim.notes)
        case _:
            assert_never(known)


def _groupby_rule(node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP]) -> str:
    if node.neighbouring.unit is None:
        rule = "group by: each row is in one group: parallel composition, the aggregates' cost once (McSherry 2009 Thm 4)"
    else:
        rule = (
            "group by, user level: a user changes at most m groups: basic composition, m times the aggregates' cost "
            "(Dwork-Roth Thm 3.16; Bun-Steinke Lemma 2.3)"
        )
    if isinstance(node.keys, KeySet):
        return rule + "; public keys"
    if isinstance(node.keys, GaussianPartitionSelection):
        return rule + (
            "; plus Gaussian key selection rho: delta-approximately zCDP (Bun-Steinke 2016 Def 8.1), converted to "
            "(eps, delta_z + e^eps * delta) with the tight zCDP conversion (Canonne-Kamath-Steinke 2020 Cor 13), rounded up"
        )
    return rule + "; plus private key selection (eps, delta) by basic composition (Desfontaines et al. PoPETs 2022 Thm 1; KOV 2015 Thm 3.3)"


def _groupby_inputs(node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP], m: int) -> tuple[tuple[str, str], ...]:
    keys = node.keys
    if isinstance(keys, KeySet):
        return (("groups", str(len(keys.labels))), ("m", str(m)))
    if isinstance(keys, GaussianPartitionSelection):
        return (("m", str(m)), ("selection_rho", str(keys.rho)), ("selection_delta", str(keys.delta)), ("conversion_delta", str(keys.conversion_delta)))
    return (("m", str(m)), ("selection_epsilon", str(keys.epsilon)), ("selection_delta", str(keys.delta)))


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


def _parts(m: Measure) -> tuple[Fraction, ...]:
    match m:
        case PureDP():
            return (m.epsilon,)
        case ApproxDP():
            return (m.epsilon, m.delta)
        case ZCDP():
            return (m.rho,)
        case _:
            assert_never(m)


def _first_over(d: Derivation, budget: Measure) -> tuple[int, Measure] | None:
    """In a sum, the first child that does not fit what the earlier ones left, and what they left.

    The same answer as subtracting cost after cost from ``budget`` and
    comparing: child ``i`` fails when some component of the sum of children
    ``0..i`` exceeds the budget's. Computed per component on integers over one
    common denominator (running sums, no ``Fraction`` per child).
    """
    rows = [_parts(c) for c in d.child_costs()]
    limits = _parts(budget)
    first = len(rows)  # no child fails
    for j, limit in enumerate(limits):
        column = [r[j] for r in rows[:first]]
        denominators = {v.denominator for v in column} | {limit.denominator}
        den = 1
        for q in denominators:
            den = den // gcd(den, q) * q
        factor = {q: den // q for q in denominators}
        bound = limit.numerator * factor[limit.denominator]
        total = 0
        for i, v in enumerate(column):
            total += v.numerator * factor[v.denominator]
            if total > bound:
                first = i
                break
    if first == len(rows):
        return None
    left = [limit - exact_sum([r[j] for r in rows[:first]]) for j, limit in enumerate(limits)]
    return first, _measure_like(budget, left)


def _measure_like(like: Measure, parts: list[Fraction]) -> Measure:
    match like:
        case PureDP():
            return PureDP(parts[0])
        case ApproxDP():
            return ApproxDP(parts[0], parts[1])
        case ZCDP():
            return ZCDP(parts[0])
        case _:
            assert_never(like)


def _failure(d: Derivation, budget: Measure) -> tuple[Derivation, Measure]:
    """The first node, in order, at which the running total leaves the budget, and the budget that remained for it.

    Descends through sums (the budget left by the earlier children) and maxima
    (the whole budget) to the first child that does not fit; stops at a leaf,
    a conversion, or a composition none of whose children fails alone.
    """
    while True:
        if d.combine == "sum":
            found = _first_over(d, budget)
            if found is None:
                return d, budget
            i, budget = found
            d = d.child(i)
        elif d.combine == "max":
            index = next((i for i, c in enumerate(d.child_costs()) if not fits(c, budget)), None)
            if index is None:
                return d, budget
            d = d.child(index)
        else:
            return d, budget


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
            "check", "budget", budget, f"must be a {type(d.cost).__name__} like the plan's cost; {conversion_advice(type(d.cost), type(budget))}"
        )
    if fits(d.cost, budget):
        return d
    tight = tighten(d, budget)  # an (eps, delta) plan: optimal composition or the zCDP route may prove what the sum does not
    if tight is not None:
        return tight
    bad, available = _failure(d, budget)
    tighter = ""
    if isinstance(budget, ApproxDP) and isinstance(d.cost, ApproxDP) and budget.delta > 0:
        tighter = f"; at delta {short_number(budget.delta, 'down')} the composition rules give eps: {describe(epsilon_candidates(parts_of(d), budget.delta))}"
    raise BudgetExceeded(
        f"plan cost {short_measure(d.cost, 'up')} exceeds budget {short_measure(budget, 'down')}; first failing node {bad.path}: "
        f"needs {short_measure(bad.cost, 'up')}, only {short_measure(available, 'down')} remained{tighter}",
        path=bad.path, node_repr=bad.node, required=bad.cost, available=available, derivation=d,
    )


DERIVE.provide(derive)  # plan.derive(), plan.cost()
CHECK.provide(check)  # plan.check(budget)
EPSILON_AT.provide(lambda node, delta: epsilon_at(derive(node), delta))  # plan.epsilon_at(delta), plan.privacy_curve()
