"""Structural nodes: sequential and parallel composition, and measure conversions."""

from __future__ import annotations

from fractions import Fraction
from collections.abc import Callable, Mapping
from typing import cast, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Neighbouring
from dpalg.graph._group import GroupPrivacy
from dpalg.graph._node import _CLAIM_KEY, _NEIGHBOURING_KEY, ABSENT_IN_CERTIFICATE, QUIET_DEFAULT, AbstractMeasurement, AbstractPrimitive, M, claim_of, neighbouring_of
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = ["Compose", "Parallel", "PureToApprox", "PureToZCDP", "ZCDPToApprox", "compose", "conversion_advice"]


_NO_CACHE: dict[str, object] = {}

# Types known to be dpalg nodes, so that the ABC ``isinstance`` runs once per type
# and not once per child of a 10^5-child Compose.
_NODE_TYPES: set[type] = set()


def _is_node(value: object) -> bool:
    if type(value) in _NODE_TYPES:
        return True
    if isinstance(value, AbstractMeasurement):
        _NODE_TYPES.add(type(value))
        return True
    return False


def _common_neighbouring(owner: str, children: tuple[AbstractMeasurement[M], ...]) -> Neighbouring:
    if not children:
        raise InvalidArgument(owner, "children", (), "must contain at least one node")
    node_types = _NODE_TYPES
    for i, child in enumerate(children):
        if type(child) not in node_types and not _is_node(child):
            raise InvalidArgument(owner, f"children[{i}]", type(child).__name__, "must be a dpalg node")
    first = neighbouring_of(children[0])
    for i, child in enumerate(children[1:], start=1):
        nb = getattr(child, "__dict__", _NO_CACHE).get(_NEIGHBOURING_KEY)  # cached by neighbouring_of, interned
        if nb is None:
            nb = neighbouring_of(child)
        if nb is not first and nb != first:
            raise InvalidArgument(
                owner,
                f"children[{i}].neighbouring",
                nb,
                f"must equal children[0].neighbouring={first!r}: a guarantee for one privacy unit or relation does not compose with another",
            )
    return first


# exact type -> what decides its loss type (see measure_type); learned once per type
_MEASURE_KIND: dict[type, str] = {}


_OWN_MEASURE: dict[type, Callable[[object], type | None]] = {}


def register_wrapper(kind: type, own: Callable[[object], type | None] | None = None) -> None:
    """Register a structural node type whose measure is that of its ``plan`` attribute (as ``GroupPrivacy``'s).

    ``own(node)``, when given, names a node's measure when it is not its plan's
    (a GroupBy whose Gaussian key selection makes zCDP aggregates an (ε, δ) plan),
    else ``None``. A node defined above this module (it imports ``Compose``)
    registers itself here, instead of this module importing it
    (docs/architecture.md, "Registration").
    """
    _MEASURE_KIND[kind] = "group"
    if own is not None:
        _OWN_MEASURE[kind] = own


def _measure_kind(node: object) -> str:
    kind = _MEASURE_KIND.get(type(node))
    if kind is None:
        kinds = (
            (Compose, "compose"), (Parallel, "parallel"), (PureToApprox | ZCDPToApprox, "approx"), (PureToZCDP, "zcdp"),
            (GroupPrivacy, "group"), (AbstractPrimitive, "primitive"),
        )  # fmt: skip
        kind = next((name for cls, name in kinds if isinstance(node, cls)), "unknown")
        _MEASURE_KIND[type(node)] = kind
    return kind


def measure_type(node: object) -> type | None:
    """The loss type of a node without running the accountant (``None``: unknown node)."""
    kind = _measure_kind(node)
    if kind == "primitive":
        return type(claim_of(cast("AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP]", node)).cost)
    if kind == "compose":
        return measure_type(cast("Compose[PureDP] | Compose[ApproxDP] | Compose[ZCDP]", node).children[0])
    if kind == "parallel":
        return measure_type(cast("Parallel[PureDP] | Parallel[ApproxDP] | Parallel[ZCDP]", node).parts[0][1])
    if kind == "group":
        own = _OWN_MEASURE.get(type(node))
        decided = own(node) if own is not None else None
        if decided is not None:
            return decided
        return measure_type(cast("GroupPrivacy[PureDP] | GroupPrivacy[ApproxDP] | GroupPrivacy[ZCDP]", node).plan)
    return {"approx": ApproxDP, "zcdp": ZCDP}.get(kind)


def _convertible_child(owner: str, child: object, expected: type) -> None:
    """A conversion node's child must have the loss type its theorem starts from.

    mypy rejects ``PureToZCDP(SmoothBound(...))`` statically (the child is an
    ``AbstractMeasurement[ApproxDP]``); this makes the runtime agree, at
    construction, with a message naming the child and why.
    """
    if not isinstance(child, AbstractMeasurement):
        raise InvalidArgument(owner, "child", type(child).__name__, "must be a dpalg node")
    kind = measure_type(child)
    if kind is not None and kind is not expected:
        raise InvalidArgument(
            owner, "child", type(child).__name__,
            f"costs {kind.__name__}, but {owner} converts a {expected.__name__} plan only (no theorem converts {kind.__name__} this way)",
        )


def _single_measure(owner: str, children: tuple[object, ...]) -> None:
    kinds: set[type] = set()
    for child in children:
        claim = getattr(child, "__dict__", _NO_CACHE).get(_CLAIM_KEY)  # a primitive's cached claim (claim_of)
        kind = type(claim.cost) if claim is not None else measure_type(child)
        if kind is not None:
            kinds.add(kind)
    if len(kinds) > 1:
        raise InvalidArgument(
            owner, "children", sorted(k.__name__ for k in kinds), "must all have the same privacy measure; add an explicit conversion node"
        )


def _names(names: object, count: int) -> tuple[str, ...]:
    """Validate a Compose's child names: none, or one distinct identifier per child."""
    if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
        raise InvalidArgument("Compose", "names", type(names).__name__, "must be a tuple of str")
    if names and len(names) != count:
        raise InvalidArgument("Compose", "names", len(names), f"must name every one of the {count} children, or none")
    for name in names:
        if not name.isidentifier() or len(name) > 100:
            raise InvalidArgument("Compose", "names", name[:100], "must be Python identifiers of at most 100 characters")
    if len(set(names)) != len(names):
        raise InvalidArgument("Compose", "names", sorted({n for n in names if names.count(n) > 1}), "must be distinct")
    return names


@final
@attrs.frozen(init=False, repr=False)
class Compose(AbstractMeasurement[M]):
    """Sequential composition: run every child on the same data.

    Privacy guarantee:
        Basic composition (Dwork–Roth 2014, Theorem 3.16 for (ε, δ); Bun–Steinke
        2016, Lemma 2.3 for zCDP): the cost is the exact sum of the children's
        costs, under the children's common neighbouring relation (all children
        must state the same one). Names do not change the cost.

    The release value is the tuple of the children's values, or, for keyword
    children (``Compose(mean=..., median=...)``), the dict name -> value in the
    given order; a child's name then replaces its index in every path
    (``Compose/mean/Laplace``). Positional and keyword children do not mix.

    Examples:
        >>> from dpalg.graph._testing import Fixed
        >>> Compose(Fixed(PureDP(1)), Fixed(PureDP("0.5"))).cost()
        PureDP('3/2')
        >>> Compose(a=Fixed(PureDP(1)), b=Fixed(PureDP("0.5"))).labels
        ('a', 'b')
    """

    children: tuple[AbstractMeasurement[M], ...]
    names: tuple[str, ...] = ()

    def __init__(self, *children: AbstractMeasurement[M], **named: AbstractMeasurement[M]) -> None:
        if children and named:
            raise InvalidArgument(
                "Compose", "children", f"{len(children)} positional and {len(named)} named",
                "must be all positional or all named (a release value is a tuple or a dict, not both)",
            )
        if named:
            self.__attrs_init__(tuple(named.values()), tuple(named))
        else:
            self.__attrs_init__(tuple(children))

    def __attrs_post_init__(self) -> None:
        _names(self.names, len(self.children))
        _common_neighbouring("Compose", self.children)
        _single_measure("Compose", self.children)

    @property
    def labels(self) -> tuple[str, ...]:
        """Each child's label in paths: its name, or its index."""
        return self.names if self.names else tuple(str(i) for i in range(len(self.children)))

    @property
    def neighbouring(self) -> Neighbouring:
        """The children's common neighbouring relation."""
        return self.children[0].neighbouring

    def __repr__(self) -> str:
        if self.names:
            return f"Compose({', '.join(f'{n}={c!r}' for n, c in zip(self.names, self.children))})"
        return f"Compose({', '.join(repr(c) for c in self.children)})"


def compose(*children: AbstractMeasurement[M]) -> Compose[M]:
    """Builder: flatten nested positional :class:`Compose` nodes into one.

    Flattening never changes the cost (composition is associative and exact).
    A named Compose is kept as one child: flattening it would lose its names.
    """
    flat: list[AbstractMeasurement[M]] = []
    for child in children:
        if isinstance(child, Compose) and not child.names:
            flat.extend(compose(*child.children).children)
        else:
            flat.append(child)
    return Compose(*flat)


def _partition_key(value: object) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidArgument("Parallel", "parts key", value, "must be a str or an int")
    return value


@final
@attrs.frozen(init=False, repr=False)
class Parallel(AbstractMeasurement[M]):
    """Parallel composition over the disjoint parts of a public partition.

    ``Parallel(by="region", parts={"north": plan_a, "south": plan_b})`` runs
    ``plan_a`` on the rows whose ``region`` is ``"north"`` and so on. Rows whose
    key is not listed are ignored. Under user-level privacy each user is put in
    the part of the smallest listed key among their rows (a rule local to the
    user), so one user still touches one part only.

    Privacy guarantee:
        Parallel composition (McSherry 2009, Theorem 4): adding or removing one
        unit changes exactly one part, so the cost is the maximum of the
        children's costs (ε and δ maximised separately for (ε, δ)). Holds for
        the add/remove relation only; children must use it.
    """

    by: str
    parts: tuple[tuple[str | int, AbstractMeasurement[M]], ...]

    def __init__(self, by: str, parts: Mapping[str, AbstractMeasurement[M]] | Mapping[int, AbstractMeasurement[M]]) -> None:
        if not isinstance(by, str) or not by:
            raise InvalidArgument("Parallel", "by", by, "must be a non-empty column name")
        if not isinstance(parts, Mapping):
            raise InvalidArgument("Parallel", "parts", type(parts).__name__, "must be a dict key -> node")
        items: tuple[tuple[str | int, AbstractMeasurement[M]], ...] = tuple(
            (_partition_key(k), v) for k, v in parts.items()
        )
        self.__attrs_init__(by, items)

    def __attrs_post_init__(self) -> None:
        nb = _common_neighbouring("Parallel", tuple(c for _, c in self.parts))
        if nb.relation != "add_remove":
            raise InvalidArgument("Parallel", "neighbouring.relation", nb.relation, "must be 'add_remove' (parallel composition needs it)")
        _single_measure("Parallel", tuple(c for _, c in self.parts))

    @property
    def neighbouring(self) -> Neighbouring:
        """The parts' common neighbouring relation."""
        return self.parts[0][1].neighbouring

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {c!r}" for k, c in self.parts)
        return f"Parallel(by={self.by!r}, parts={{{inner}}})"


@final
@attrs.frozen(repr=False)
class PureToApprox(AbstractMeasurement[ApproxDP]):
    """Explicit conversion: an ε-DP plan is (ε, 0)-DP (by definition)."""

    child: AbstractMeasurement[PureDP]

    def __attrs_post_init__(self) -> None:
        _convertible_child("PureToApprox", self.child, PureDP)

    @property
    def neighbouring(self) -> Neighbouring:
        """The child's neighbouring relation."""
        return self.child.neighbouring

    def __repr__(self) -> str:
        return f"PureToApprox({self.child!r})"


def _per_part(value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("PureToZCDP", "per_part", value, "must be True or False")
    return value


@final
@attrs.frozen(repr=False)
class PureToZCDP(AbstractMeasurement[ZCDP]):
    """Explicit conversion of an ε-DP plan to zCDP.

    Privacy guarantee:
        ``per_part=True`` (the default): each part of the child is converted on
        its own and the zCDP costs compose. A part is a leaf of the child's
        sequential (``Compose``) and parallel (``Parallel``) structure; any other
        node (``GroupPrivacy``, ``GroupBy``) is one part. An ε-DP part is
        ε²/2-zCDP (Bun–Steinke 2016, Prop. 1.4); a leaf whose claim states it is
        also η-bounded-range (``PrivacyClaim.bounded_range``, the exponential
        mechanism: η = ε) is η²/8-zCDP (Cesar–Rogers 2021, arXiv:2004.07223,
        Lemmas 3.2 and 3.4); each part is charged the smaller. zCDP composes by
        the sum (Bun–Steinke 2016, Lemma 2.3) and over the disjoint parts of a
        ``Parallel`` by the maximum (one unit changes one part). Never more than
        the whole-plan rule: ``Σ ε_i²/2 ≤ (Σ ε_i)²/2`` and ``max ε_j²/2 ≤ (max ε_j)²/2``.

        ``per_part=False``: the child's total ε as ε²/2-zCDP (Bun–Steinke 2016,
        Prop. 1.4), the rule of certificates written before ``per_part`` existed
        (a certificate without the field decodes to it).

    The repr leaves ``per_part`` out, so that a certificate written before the
    field existed (``PureToZCDP(child)``, the whole-plan rule) reads as it did;
    the plan tree (``str(plan)``) shows ``per_part=False``.
    """

    child: AbstractMeasurement[PureDP]
    per_part: bool = attrs.field(
        default=True, converter=_per_part, kw_only=True, metadata={ABSENT_IN_CERTIFICATE: False, QUIET_DEFAULT: True}
    )

    def __attrs_post_init__(self) -> None:
        _convertible_child("PureToZCDP", self.child, PureDP)

    @property
    def neighbouring(self) -> Neighbouring:
        """The child's neighbouring relation."""
        return self.child.neighbouring

    def __repr__(self) -> str:
        return f"PureToZCDP({self.child!r})"


def _delta(value: ExactLike) -> Fraction:
    d = to_fraction(value, owner="ZCDPToApprox", field="delta")
    if not 0 < d < 1:
        raise InvalidArgument("ZCDPToApprox", "delta", value, "must be in (0, 1)")
    return d


@final
@attrs.frozen(repr=False)
class ZCDPToApprox(AbstractMeasurement[ApproxDP]):
    """Explicit conversion: ρ-zCDP implies (ε, δ)-DP with the tight ε of
    Canonne–Kamath–Steinke 2020 (Corollary 13), rounded up to a rational."""

    child: AbstractMeasurement[ZCDP]
    delta: Fraction = attrs.field(converter=_delta)

    def __attrs_post_init__(self) -> None:
        _convertible_child("ZCDPToApprox", self.child, ZCDP)

    @property
    def neighbouring(self) -> Neighbouring:
        """The child's neighbouring relation."""
        return self.child.neighbouring

    def __repr__(self) -> str:
        return f"ZCDPToApprox({self.child!r}, delta='{self.delta}')"


_CONVERSIONS: dict[tuple[str, str], str] = {
    ("PureDP", "ApproxDP"): "wrap the plan in the conversion node PureToApprox(plan)",
    ("PureDP", "ZCDP"): "wrap the plan in the conversion node PureToZCDP(plan) (eps-DP is eps**2/2-zCDP)",
    ("ZCDP", "ApproxDP"): "wrap the plan in the conversion node ZCDPToApprox(plan, delta=...) (it spends that delta)",
}


def conversion_advice(cost: type[Measure], budget: type[Measure]) -> str:
    """What to write when a plan costing a ``cost`` measure meets a ``budget`` of another measure.

    Examples:
        >>> conversion_advice(PureDP, ApproxDP)
        'the plan costs PureDP and the budget is ApproxDP: wrap the plan in the conversion node PureToApprox(plan)'
        >>> conversion_advice(ApproxDP, PureDP)
        'the plan costs ApproxDP and the budget is PureDP: no conversion to PureDP exists; use a budget of ApproxDP'
    """
    what = f"the plan costs {cost.__name__} and the budget is {budget.__name__}"
    fix = _CONVERSIONS.get((cost.__name__, budget.__name__))
    if fix is None:
        return f"{what}: no conversion to {budget.__name__} exists; use a budget of {cost.__name__}"
    return f"{what}: {fix}"
