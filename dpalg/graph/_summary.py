"""``plan.summary()``: a table over a plan's nodes of cost, noise and accuracy, before running.

Everything in it comes from public parameters: the static cost of each node
(as the accountant derives it) and, for each mechanism, the (1 − α) error its
noise implies (:meth:`~dpalg.AbstractMeasurement.accuracy`). Each row's
statement holds on its own with probability at least 1 − α; for all rows at
once, ask for α / (number of rows) (a union bound).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from fractions import Fraction
from typing import TypeAlias

from dpalg._errors import DPAlgError, InvalidArgument, Unsupported
from dpalg._numbers import ExactLike
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._pretty import _parts
from dpalg.graph._node import SUMMARISE, AbstractMeasurement
from dpalg.graph._summary_table import PlanSummary, SummaryRow, render_summary
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = ["Assumptions", "PlanSummary", "SummaryRow", "render_summary", "summarise"]  # the value classes live in _summary_table (below the nodes)


#: public assumptions for the accuracy statements: ``{name: value}`` for every node that takes that
#: keyword (``n``, ``denominator``, ``distance``, ``clip``, ...), and ``{path: {name: value}}`` for one node
Assumptions: TypeAlias = Mapping[str, object]


def _accepted(node: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]) -> frozenset[str]:
    """The keyword-only assumptions a node's ``accuracy`` takes (its public conditions)."""
    params = inspect.signature(node.accuracy).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _rows(node: object, label: str, depth: int, alpha: Fraction, assume: Assumptions, used: set[str], out: list[SummaryRow]) -> None:
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
            accepted = _accepted(node)
            plan_wide = {k: v for k, v in assume.items() if not isinstance(v, Mapping) and k in accepted}
            used.update(plan_wide)
            own = assume.get(label)
            given: dict[str, object] = {}
            if isinstance(own, Mapping):
                used.add(label)
                unknown = sorted(set(own) - accepted)
                if unknown:
                    raise InvalidArgument(
                        "summary", "assume", label, f"{type(node).__name__}.accuracy takes no {unknown}; it takes {sorted(accepted) or 'none'}"
                    )
                given.update(own)
            try:
                accuracy = node.accuracy(alpha, **given)
                if accuracy.error is None and plan_wide:  # conditional: the plan-wide assumptions give it a number
                    accuracy = node.accuracy(alpha, **{**plan_wide, **given})
            except Unsupported:
                remark = remark or "no accuracy statement"
    out.append(SummaryRow(label, type(node).__name__, depth, cost, accuracy, remark))
    for child_label, child in children:
        _rows(child, f"{label}/{child_label}", depth + 1, alpha, assume, used, out)


def summarise(plan: object, alpha: ExactLike = Fraction(1, 20), *, assume: Assumptions | None = None) -> PlanSummary:
    """The :class:`PlanSummary` of ``plan`` at failure probability ``alpha``.

    Args:
        plan: the plan.
        alpha: each row's failure probability.
        assume: public assumptions for the statements that are conditional on a
            property of the data (a public lower bound ``n`` on a mean's count,
            ``denominator`` on a ratio's, a PTR ``distance``, ...): a name maps to
            a value for every node whose statement is conditional and whose
            ``accuracy`` takes that keyword; a node path (``"Compose/1"``) maps to
            ``{name: value}`` for that node alone (it wins over the plan-wide
            value). Each statement then says what it
            assumed. Nothing here reads data: an assumption is the caller's claim.

    Raises:
        InvalidArgument: an assumption no node of the plan takes, a path that is
            not in the plan, or a value the node's ``accuracy`` refuses.

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
        >>> mean = Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)
        >>> print(summarise(mean, assume={"n": 15000}).rows[0].accuracy.describe())  # doctest: +ELLIPSIS
        ±0.0479483 absolute (95%); ... if the true count is at least 15000; ...
    """
    a = alpha_param("summary", alpha)
    given: Assumptions = {} if assume is None else assume
    if not isinstance(given, Mapping):
        raise InvalidArgument("summary", "assume", type(given).__name__, "must be a mapping of names (or node paths) to values")
    out: list[SummaryRow] = []
    used: set[str] = set()
    _rows(plan, type(plan).__name__, 0, a, given, used, out)
    unused = sorted(set(given) - used)
    if unused:
        raise InvalidArgument(
            "summary", "assume", unused, "names no node path of the plan and no assumption any of its nodes takes (see each node's accuracy())"
        )
    return PlanSummary(a, tuple(out))


SUMMARISE.provide(summarise)  # plan.summary()
