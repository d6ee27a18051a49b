"""``plan.summary()``: a table over a plan's nodes of cost, noise and accuracy, before running.

Everything in it comes from public parameters: the static cost of each node
(as the accountant derives it) and, for each mechanism, the (1 − α) error its
noise implies (:meth:`~dpalg.AbstractMeasurement.accuracy`). Each row's
statement holds on its own with probability at least 1 − α; for all rows at
once, ask for α / (number of rows) (a union bound).
"""

from __future__ import annotations

from fractions import Fraction

from dpalg._errors import DPAlgError, Unsupported
from dpalg._numbers import ExactLike
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._pretty import _parts
from dpalg.graph._node import SUMMARISE, AbstractMeasurement
from dpalg.graph._summary_table import PlanSummary, SummaryRow, render_summary
from dpalg.measures import Measure

__all__ = ["PlanSummary", "SummaryRow", "render_summary", "summarise"]  # the value classes live in _summary_table (below the nodes)


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


SUMMARISE.provide(summarise)  # plan.summary()
