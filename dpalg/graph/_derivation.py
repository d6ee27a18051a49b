"""The derivation tree: how the accountant reached a plan's cost, node by node.

Also :class:`BudgetExceeded`, the error that carries a plan's derivation when its
cost does not fit (exported as ``dpalg.BudgetExceeded``; it lives on this floor
because it holds a :class:`Derivation`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from collections.abc import Iterator, Sequence
from typing import Literal, Protocol, Union, final

import attrs

from dpalg._errors import DPAlgError, InvalidArgument
from dpalg._numbers import to_fraction
from dpalg.measures import ApproxDP, Measure, PureDP, ZCDP
from dpalg.measures._display import short_number

__all__ = ["BudgetExceeded", "Derivation", "LeafClaim", "PendingChildren", "measure_to_json", "measure_from_json", "strip_addresses"]

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
_NODE_TEXT = 200  # structural nodes: their children have their own entries


def strip_addresses(text: str) -> str:
    """A repr with memory addresses removed (``<function f at 0x7f..>`` -> ``<function f>``).

    Certificates record reprs this way so that a plan rebuilt with stand-ins for
    user functions reads the same; a repr is stripped *before* it is shortened,
    so that the cut falls at the same place in both.

    Examples:
        >>> strip_addresses("Node(fn=<function mean at 0x7f3a2c>)")
        'Node(fn=<function mean>)'
    """
    return _ADDRESS.sub(">", text)


class LeafClaim(Protocol):
    """What a leaf's derivation is built from (a :class:`~dpalg.graph.PrivacyClaim`)."""

    @property
    def rule(self) -> str:
        """The theorem."""

    @property
    def inputs(self) -> tuple[tuple[str, str], ...]:
        """The numbers it consumed."""

    @property
    def cost(self) -> Measure:
        """The leaf's loss."""

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings for the certificate."""


@final
class PendingChildren:
    """The children of a composition's derivation, built when first read.

    A plan of 10^5 leaves is checked without making 10^5 leaf derivations: the
    accountant keeps each leaf's (cached) claim and this object builds the leaf
    :class:`Derivation` -- path ``{here}/{label}/{type}``, the claim's rule,
    inputs, cost and notes, exactly what an eager walk makes -- on demand.
    Structural children are given already derived. Pickling yields the plain tuple.
    """

    __slots__ = ("_here", "_labels", "_nodes", "_items", "_built", "_all")

    def __init__(self, here: str, labels: Sequence[str] | None, nodes: Sequence[object], items: Sequence[Derivation | LeafClaim]) -> None:
        self._here = here
        self._labels = labels  # None: the position, as Compose labels its children
        self._nodes = nodes
        self._items = items
        self._built: dict[int, Derivation] = {}
        self._all: tuple[Derivation, ...] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def child(self, i: int) -> Derivation:
        """The ``i``-th child's derivation (built once)."""
        if self._all is not None:
            return self._all[i]
        item = self._items[i]
        if isinstance(item, Derivation):
            return item
        done = self._built.get(i)
        if done is None:
            claim = item
            node = self._nodes[i]
            label = str(i) if self._labels is None else self._labels[i]
            done = Derivation(
                f"{self._here}/{label}/{type(node).__name__}", node, claim.rule, claim.inputs, claim.cost, (), claim.notes
            )
            self._built[i] = done
        return done

    def costs(self) -> Iterator[Measure]:
        """The children's costs, in order, without building their derivations."""
        for item in self._items:
            yield item.cost

    def all(self) -> tuple[Derivation, ...]:
        """Every child's derivation, in order."""
        if self._all is None:
            self._all = tuple(self.child(i) for i in range(len(self._items)))
            self._built.clear()
        return self._all

    def __reduce__(self) -> tuple[type[tuple[Derivation, ...]], tuple[tuple[Derivation, ...]]]:
        return (tuple, (self.all(),))


def _materialised(children: tuple[Derivation, ...] | PendingChildren) -> tuple[Derivation, ...]:
    return children.all() if isinstance(children, PendingChildren) else children


@attrs.frozen(repr=False)
class Derivation:
    """One node of the derivation: the rule applied, its inputs and the cost.

    Attributes:
        path: where the node sits in the graph, e.g. ``"Compose/1:ProposeTest"``.
        source: the plan node itself; ``node`` is its repr (public parameters only).
        rule: the rule or theorem used, e.g. ``"basic composition (Dwork-Roth Thm 3.16)"``.
        inputs: the numbers the rule consumed, as ``(name, value)`` pairs.
        cost: the resulting privacy loss.
        children: derivations of the sub-plans (a tuple; a composition's leaf
            children are built when first read, see :class:`PendingChildren`).
        notes: warnings recorded for the certificate (e.g. an unproven formula).
    """

    path: str
    source: object = attrs.field(eq=False, repr=False)  # the plan node; its repr is computed on demand
    rule: str
    inputs: tuple[tuple[str, str], ...]
    cost: Measure
    _children: tuple[Derivation, ...] | PendingChildren = attrs.field(default=(), eq=_materialised)
    notes: tuple[str, ...] = ()
    combine: Literal["leaf", "sum", "max", "convert"] = "leaf"

    @property
    def children(self) -> tuple[Derivation, ...]:
        """Derivations of the sub-plans, in the plan's order."""
        c = self._children
        return c.all() if isinstance(c, PendingChildren) else c

    def child(self, i: int) -> Derivation:
        """``children[i]``, without building the other children's derivations."""
        c = self._children
        return c.child(i) if isinstance(c, PendingChildren) else c[i]

    def child_costs(self) -> Iterator[Measure]:
        """The children's costs, in order, without building their derivations."""
        c = self._children
        return c.costs() if isinstance(c, PendingChildren) else (d.cost for d in c)

    def __repr__(self) -> str:
        return (
            f"Derivation(path={self.path!r}, rule={self.rule!r}, inputs={self.inputs!r}, cost={self.cost!r}, "
            f"children={self.children!r}, notes={self.notes!r}, combine={self.combine!r})"
        )

    @property
    def node(self) -> str:
        """The node's repr without memory addresses (see :func:`strip_addresses`).

        Shortened to 200 characters for structural nodes, whose children have
        their own entries. Addresses are stripped first: a plan rebuilt from a
        certificate (whose user functions have no address) is then cut at the
        same place as the original.
        """
        text = strip_addresses(repr(self.source))
        if self.combine != "leaf" and len(text) > _NODE_TEXT:
            return text[: _NODE_TEXT - 3] + "..."
        return text

    def render(self, indent: int = 0) -> str:
        """A human-readable, indented rendering of the tree."""
        pad = "  " * indent
        args = ", ".join(f"{k}={_short_input(v)}" for k, v in self.inputs)
        lines = [f"{pad}{self.path}: {_show(self.cost)}  <- {self.rule}" + (f" [{args}]" if args else "")]
        for note in self.notes:
            lines.append(f"{pad}  ! {note}")
        lines.extend(child.render(indent + 1) for child in self.children)
        return "\n".join(lines)

    def walk(self) -> tuple[Derivation, ...]:
        """All derivation nodes, pre-order."""
        out: list[Derivation] = [self]
        for child in self.children:
            out.extend(child.walk())
        return tuple(out)

    def to_json(self) -> dict[str, JSON]:
        """A JSON-serialisable dict (exact numbers as fraction strings)."""
        return {
            "path": self.path,
            "node": self.node,
            "rule": self.rule,
            "inputs": [[k, v] for k, v in self.inputs],
            "cost": measure_to_json(self.cost),
            "notes": list(self.notes),
            "combine": self.combine,
            "children": [c.to_json() for c in self.children],
        }


_EXACT = re.compile(r"-?[0-9]{1,5000}(/[0-9]{1,5000})?")


def _short_input(value: str) -> str:
    """A long exact number among a rule's inputs, shortened (rounded up) for display."""
    if len(value) > 16 and _EXACT.fullmatch(value):
        try:
            return short_number(to_fraction(value, owner="Derivation", field="inputs"), "up")
        except InvalidArgument:
            return value[:13] + "..."
    return value


def _amount(name: str, x: Fraction, digits: int) -> str:
    """``name=exact (~float)`` for short values, ``name<=decimal`` (rounded up) for long ones."""
    text = short_number(x, "up")
    if text.startswith("<="):
        return f"{name}{text}"
    return f"{name}={text} (~{float(x):.{digits}g})"


def _show(m: Measure) -> str:
    """A cost as shown in :meth:`Derivation.render`: long exact values are shortened, rounded up."""
    match m:
        case PureDP():
            return _amount("eps", m.epsilon, 6)
        case ApproxDP():
            return f"{_amount('eps', m.epsilon, 6)}, {_amount('delta', m.delta, 3)}"
        case ZCDP():
            return _amount("rho", m.rho, 6)


def measure_to_json(m: Measure) -> dict[str, JSON]:
    """Serialise a measure exactly."""
    match m:
        case PureDP():
            return {"measure": "PureDP", "epsilon": str(m.epsilon)}
        case ApproxDP():
            return {"measure": "ApproxDP", "epsilon": str(m.epsilon), "delta": str(m.delta)}
        case ZCDP():
            return {"measure": "ZCDP", "rho": str(m.rho)}


_FIELDS = {"PureDP": ("epsilon",), "ApproxDP": ("epsilon", "delta"), "ZCDP": ("rho",)}
_MAX_DIGITS = 4000


def _exact_text(kind: str, name: str, value: object) -> Fraction:
    """One number of an encoded measure: the exact text ``measure_to_json`` writes, nothing else.

    Only ``"p"`` or ``"p/q"`` in decimal digits (at most 4,000 each) is read, so
    ``"1e999999999"``, ``"nan"`` or a 100,000-digit string is refused at once;
    the text then goes through :func:`dpalg._numbers.to_fraction`.
    """
    if not isinstance(value, str) or not _EXACT.fullmatch(value) or any(len(part) > _MAX_DIGITS + 1 for part in value.split("/")):
        shown = value if isinstance(value, str) and len(value) <= 40 else f"<{type(value).__name__}>"
        raise InvalidArgument(kind, name, shown, f"must be an exact fraction string 'p' or 'p/q' of at most {_MAX_DIGITS} digits each")
    return to_fraction(value, owner=kind, field=name)


def measure_from_json(obj: object) -> Measure:
    """Inverse of :func:`measure_to_json`: exactly the keys and number texts it writes.

    Raises:
        InvalidArgument: for anything else (other keys, numbers not written as
            ``"p"`` or ``"p/q"``, out-of-range values).
    """
    if not isinstance(obj, dict):
        raise InvalidArgument("measure_from_json", "obj", type(obj).__name__, "must be a dict")
    kind = obj.get("measure")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise InvalidArgument("measure_from_json", "measure", kind if isinstance(kind, str) and len(kind) <= 40 else "<?>", "must be PureDP, ApproxDP or ZCDP")
    names = _FIELDS[kind]
    if set(obj) != {"measure", *names}:
        raise InvalidArgument("measure_from_json", kind, sorted(str(k)[:40] for k in obj)[:8], f"must have exactly the keys measure, {', '.join(names)}")
    values = [_exact_text(kind, name, obj[name]) for name in names]
    if kind == "PureDP":
        return PureDP(values[0])
    if kind == "ApproxDP":
        return ApproxDP(values[0], values[1])
    return ZCDP(values[0])


class BudgetExceeded(DPAlgError):
    """A plan or a session charge does not fit within the budget.

    Attributes:
        path: the path of the failing node in the graph (``"Compose[1]/ProposeTest"``).
        node_repr: the failing node's repr (public parameters only).
        required: the cost that did not fit.
        available: the budget (or what remained of it).
        derivation: the derivation tree of the whole plan, when one exists.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str,
        node_repr: str,
        required: object,
        available: object,
        derivation: Derivation | None = None,
    ) -> None:
        self.path = path
        self.node_repr = node_repr
        self.required = required
        self.available = available
        self.derivation = derivation
        super().__init__(message)
