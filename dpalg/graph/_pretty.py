"""Plans for people: ``str(plan)`` is an indented tree, one node per line.

``repr(plan)`` stays the exact, reproducible one-liner that certificates
record; the tree shows the same parameters with exact numbers as short
decimals (rounded up, so a privacy parameter is never understated) and each
node's static cost.

Examples:
    >>> from dpalg import Compose, Query, Clip
    >>> from dpalg.mechanisms import Laplace
    >>> print(Compose(Laplace(Query.count(), epsilon="0.5"), Laplace(Query.sum("x") | Clip(0, 10), epsilon="1/3")))
    Compose  [cost PureDP(ε<=0.833334)]
      0: Laplace(query=Query.count(), epsilon=0.5, relation='add_remove')  [cost PureDP(ε=0.5)]
      1: Laplace(query=Query.sum('x') | Clip(0, 10), epsilon<=0.333334, relation='add_remove')  [cost PureDP(ε<=0.333334)]
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpalg._errors import DPAlgError
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.measures._display import decimal_measure, decimal_text
from dpalg.graph._node import PLAN_TREE, QUIET_DEFAULT, AbstractMeasurement

__all__ = ["plan_tree"]

_VALUE = 120  # characters of one parameter's text
_LINE = 400  # characters of one node's line (its children have their own lines)


def _value(v: object) -> str:
    if isinstance(v, Fraction):
        return decimal_text(v, "up")
    if isinstance(v, (PureDP, ApproxDP, ZCDP)):
        return decimal_measure(v, "up")
    text = repr(v)
    return text if len(text) <= _VALUE else text[: _VALUE - 3] + "..."


def _param(name: str, v: object) -> str:
    text = _value(v)
    return f"{name}{text}" if text.startswith(("<=", ">=")) else f"{name}={text}"


def _parts(node: object) -> tuple[list[str], list[tuple[str, object]]]:
    """(parameter texts, labelled children) of a node."""
    params: list[str] = []
    children: list[tuple[str, object]] = []
    if not attrs.has(type(node)):
        return params, children
    for field in attrs.fields(type(node)):  # type: ignore[arg-type]  # attrs.has() checked above
        v = getattr(node, field.name)
        if isinstance(v, AbstractMeasurement):
            children.append((field.name, v))
        elif isinstance(v, tuple) and v and all(isinstance(c, AbstractMeasurement) for c in v):
            names = getattr(node, "names", ())  # a named Compose: its names replace the indices
            labels = names if isinstance(names, tuple) and len(names) == len(v) else tuple(str(i) for i in range(len(v)))
            children.extend((str(label), c) for label, c in zip(labels, v))
        elif field.name == "names" and isinstance(v, tuple):  # shown as the children's labels
            continue
        elif (
            isinstance(v, tuple) and v
            and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], AbstractMeasurement) for p in v)
        ):
            children.extend((repr(p[0]), p[1]) for p in v)
        elif v is None:  # an unset option (granularity, unit, epsilon of a split PTR): not shown; repr keeps it
            continue
        elif field.metadata.get(QUIET_DEFAULT) and v == field.default:  # an option at its default, hidden as in repr
            continue
        else:
            params.append(_param(field.name, v))
    return params, children


def _cost(node: object) -> str:
    if not isinstance(node, AbstractMeasurement):
        return ""
    try:
        return f"  [cost {decimal_measure(node.cost(), 'up')}]"
    except DPAlgError as exc:  # an unknown node: say so, never guess a cost
        return f"  [cost unknown: {type(exc).__name__}]"


def _lines(node: object, label: str | None, depth: int, out: list[str]) -> None:
    params, children = _parts(node)
    name = type(node).__name__
    head = f"{name}({', '.join(params)})" if params or not children else name
    if not attrs.has(type(node)):
        head = repr(node)
    if len(head) > _LINE:
        head = head[: _LINE - 3] + "..."
    prefix = "  " * depth + (f"{label}: " if label is not None else "")
    out.append(f"{prefix}{head}{_cost(node)}")
    for child_label, child in children:
        _lines(child, child_label, depth + 1, out)


def plan_tree(node: object) -> str:
    """``node`` as an indented tree: one line per node, its parameters and cost."""
    out: list[str] = []
    _lines(node, None, 0, out)
    return "\n".join(out)


PLAN_TREE.provide(plan_tree)  # str(plan)
