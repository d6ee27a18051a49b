"""The value classes of ``plan.summary()``: :class:`SummaryRow`, :class:`PlanSummary` and its text table.

They sit below the node classes (:mod:`dpalg.graph._node` names :class:`PlanSummary`
as the result of ``plan.summary()``); the function that walks a plan and fills
them, :func:`~dpalg.graph._summary.summarise`, sits above the nodes and is
provided to them through the ``SUMMARISE`` slot (docs/architecture.md, "Slots").
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs

from dpalg.graph._accuracy import Accuracy
from dpalg.measures import Measure
from dpalg.measures._display import decimal_measure

__all__ = ["PlanSummary", "SummaryRow", "render_summary"]


@final
@attrs.frozen
class SummaryRow:
    """One node of a :class:`PlanSummary`.

    Attributes:
        path: where the node sits, e.g. ``"Compose/1"``.
        node: the node's type name.
        depth: its depth in the plan (0 for the root).
        cost: its static cost, or ``None`` when the accountant does not know it.
        accuracy: its accuracy statement, when it is a mechanism that makes one.
        remark: why there is no accuracy statement (empty for structural nodes).
    """

    path: str
    node: str
    depth: int
    cost: Measure | None
    accuracy: Accuracy | None
    remark: str = ""


@final
@attrs.frozen
class PlanSummary:
    """A plan's nodes with cost, noise and (1 − α) accuracy; ``str()`` is a table.

    Attributes:
        alpha: the failure probability of each row's accuracy statement.
        rows: the nodes, pre-order.
    """

    alpha: Fraction
    rows: tuple[SummaryRow, ...]

    def __str__(self) -> str:
        return render_summary(self)


def render_summary(summary: PlanSummary) -> str:
    """The summary as an aligned text table."""
    confidence = f"{float((1 - summary.alpha) * 100):.10g}%"
    table = [("path", "node", "cost", f"accuracy ({confidence})")]
    for row in summary.rows:
        cost = decimal_measure(row.cost, "up") if row.cost is not None else "unknown"
        accuracy = row.accuracy.describe() if row.accuracy is not None else row.remark
        table.append(("  " * row.depth + row.path, row.node, cost, accuracy))
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    lines = ["  ".join([r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]), r[3]]).rstrip() for r in table]
    statements = sum(1 for r in summary.rows if r.accuracy is not None)
    if statements > 1:
        lines.append(
            f"each row holds with probability >= {confidence} on its own; "
            f"for all {statements} statements at once use alpha/{statements}"
        )
    return "\n".join(lines)
