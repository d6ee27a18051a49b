"""The derivation tree: how the accountant reached a plan's cost, node by node."""

from __future__ import annotations

from typing import Literal, Union

import attrs

from dpalg.measures import ApproxDP, Measure, PureDP, ZCDP

__all__ = ["Derivation", "measure_to_json", "measure_from_json"]

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]


@attrs.frozen
class Derivation:
    """One node of the derivation: the rule applied, its inputs and the cost.

    Attributes:
        path: where the node sits in the graph, e.g. ``"Compose/1:ProposeTest"``.
        source: the plan node itself; ``node`` is its repr (public parameters only).
        rule: the rule or theorem used, e.g. ``"basic composition (Dwork-Roth Thm 3.16)"``.
        inputs: the numbers the rule consumed, as ``(name, value)`` pairs.
        cost: the resulting privacy loss.
        children: derivations of the sub-plans.
        notes: warnings recorded for the certificate (e.g. an unproven formula).
    """

    path: str
    source: object = attrs.field(eq=False, repr=False)  # the plan node; its repr is computed on demand
    rule: str
    inputs: tuple[tuple[str, str], ...]
    cost: Measure
    children: tuple[Derivation, ...] = ()
    notes: tuple[str, ...] = ()
    combine: Literal["leaf", "sum", "max", "convert"] = "leaf"

    @property
    def node(self) -> str:
        """The node's repr (shortened for structural nodes, whose children have their own entries)."""
        text = repr(self.source)
        if self.combine != "leaf" and len(text) > 200:
            return text[:197] + "..."
        return text

    def render(self, indent: int = 0) -> str:
        """A human-readable, indented rendering of the tree."""
        pad = "  " * indent
        args = ", ".join(f"{k}={v}" for k, v in self.inputs)
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


def _show(m: Measure) -> str:
    match m:
        case PureDP():
            return f"eps={m.epsilon} (~{float(m.epsilon):.6g})"
        case ApproxDP():
            return f"eps={m.epsilon} (~{float(m.epsilon):.6g}), delta={m.delta} (~{float(m.delta):.3g})"
        case ZCDP():
            return f"rho={m.rho} (~{float(m.rho):.6g})"


def measure_to_json(m: Measure) -> dict[str, JSON]:
    """Serialise a measure exactly."""
    match m:
        case PureDP():
            return {"measure": "PureDP", "epsilon": str(m.epsilon)}
        case ApproxDP():
            return {"measure": "ApproxDP", "epsilon": str(m.epsilon), "delta": str(m.delta)}
        case ZCDP():
            return {"measure": "ZCDP", "rho": str(m.rho)}


def measure_from_json(obj: object) -> Measure:
    """Inverse of :func:`measure_to_json`."""
    from dpalg._errors import InvalidArgument

    if not isinstance(obj, dict):
        raise InvalidArgument("measure_from_json", "obj", type(obj).__name__, "must be a dict")
    kind = obj.get("measure")
    if kind == "PureDP":
        return PureDP(str(obj["epsilon"]))
    if kind == "ApproxDP":
        return ApproxDP(str(obj["epsilon"]), str(obj["delta"]))
    if kind == "ZCDP":
        return ZCDP(str(obj["rho"]))
    raise InvalidArgument("measure_from_json", "measure", kind, "must be PureDP, ApproxDP or ZCDP")
