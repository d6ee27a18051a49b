"""``plan.summary()``: a table over a plan's nodes of cost, noise and accuracy, before running.

Everything in it comes from public parameters: the static cost of each node
(as the accountant derives it) and, for each mechanism, the (1 − α) error its
noise implies (:meth:`~dpalg.AbstractMeasurement.accuracy`). Each row's
statement holds on its own with probability at least 1 − α; for all rows at
once, ask for α / (number of rows) (a union bound).
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs

from dpalg._errors import DPAlgError, Unsupported
from dpalg._numbers import ExactLike
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._pretty import _parts
from dpalg.measures import Measure
from dpalg.measures._display import decimal_measure
from dpalg.graph._node import SUMMARISE, AbstractMeasurement

__all__ = ["PlanSummary", "SummaryRow", "summarise"]


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


def _rows(node: object, label: str, depth: int, alpha: Fraction, out: list[SummaryRow]) -> None:
    _, children = _parts(node)
    cost: Measure | None = None
    accuracy: Accuracy | None = None
    remark = ""
    if isinstance(node, AbstractMeasurement):
        try:
            cost = node.cost()
        except DPAlgError as exc:
            remark = f"cost unknown ({type(exc).__name__})"
        if not children:
            try:
                accuracy = node.accuracy(alpha)
            except Unsupported:
                remark = remark or "no accuracy statement"
    out.append(SummaryRow(label, type(node).__name__, depth, cost, accuracy, remark))
    for child_label, child in children:
        _rows(child, f"{label}/{child_label}", depth + 1, alpha, out)


def summarise(plan: object, alpha: ExactLike = Fraction(1, 20)) -> PlanSummary:
    """The :class:`PlanSummary` of ``plan`` at failure probability ``alpha``.

    Examples:
        >>> from dpalg import Compose, Query, Clip
        >>> from dpalg.mechanisms import Laplace
        >>> plan = Compose(Laplace(Query.count(), epsilon=1), Laplace(Query.sum("x") | Clip(0, 10), epsilon=1))
        >>> print(summarise(plan))
        path         node     cost         accuracy (95%)
        Compose      Compose  PureDP(ε=2)
          Compose/0  Laplace  PureDP(ε=1)  ±3 absolute (95%, tight); discrete Laplace, scale 1
          Compose/1  Laplace  PureDP(ε=1)  ±29.9574 absolute (95%, tight); discrete Laplace, scale 10 (lattice step 2**-17)
        each row holds with probability >= 95% on its own; for all 2 statements at once use alpha/2
    """
    a = alpha_param("summary", alpha)
    out: list[SummaryRow] = []
    _rows(plan, type(plan).__name__, 0, a, out)
    return PlanSummary(a, tuple(out))


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


SUMMARISE.provide(summarise)  # plan.summary()
