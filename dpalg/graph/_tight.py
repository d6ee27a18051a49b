"""Tighter composition of an (ε, δ) plan than the exact sum: the rules ``plan.check`` tries when the sum does not fit.

A plan's cost (``plan.cost()``) is its basic composition: the exact sum of its parts'
(ε, δ) (Dwork–Roth 2014, Thm 3.16). That bound is loose for many parts. When the sum
does not fit an ``ApproxDP`` budget, :func:`tighten` tries two more rules on the same
parts, each sound on its own, and certifies the plan at the budget's δ with the
smallest ε any of them proves:

* **the zCDP route**: when every part is pure (an ε-DP part is ε²/2-zCDP, Bun–Steinke
  2016 Prop. 1.4; an η-bounded-range one, such as the exponential mechanism, η²/8-zCDP,
  Cesar–Rogers 2021) or a conversion of a zCDP plan (``ZCDPToApprox``: its ρ), the
  parts compose to Σρ-zCDP (Bun–Steinke 2016 Lemma 2.3), converted once at δ with the
  tight conversion (Canonne–Kamath–Steinke 2020 Cor. 13, rounded up);
* **optimal composition**: k parts that are (ε_i, δ_i)-DP compose to (ε, δ(ε))-DP with
  δ(ε) the hockey-stick divergence of the product of their worst-case pairs
  (Kairouz–Oh–Viswanath 2015 Thm 3.3; Murtagh–Vadhan 2016 for distinct parts),
  evaluated rigorously and rounded up (:func:`dpalg.measures.optimal_epsilon`).

The parts are the plan's composition flattened: the children of every ``Compose``
(composition is associative) and of every ``PureToApprox`` around a ``Compose`` (an
ε-DP composition is the composition of its ε-DP children, each (ε_i, 0)); any other
node is one part with its own cost. Which rule certified the plan, and what every rule
gave, are the inputs of the certificate's root derivation node, so ``dpalg audit``
re-derives the same bound from the plan and the budget (:func:`tighten` is a function
of them only).

The plan's ``cost()`` keeps its meaning (the sum); a :class:`~dpalg.Session` charges the
sum (a session spends one budget over many plans by basic composition).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from typing import Final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.graph._compose import Compose, PureToApprox, ZCDPToApprox
from dpalg.graph._derivation import Derivation
from dpalg.graph._node import AbstractPrimitive, claim_of
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import short_number
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon
from dpalg.measures import optimal_epsilon

__all__ = ["TIGHT_RULE", "epsilon_at", "epsilon_candidates", "parts_of", "tighten"]

#: the root rule of a tightened derivation (its first words identify it in a certificate)
TIGHT_RULE: Final = "tightest of basic composition, the zCDP route and optimal composition"


@attrs.frozen
class Part:
    """One part of a composition: its (ε, δ) and, when it has one, its zCDP ρ."""

    epsilon: Fraction
    delta: Fraction
    rho: Fraction | None


def _flatten(d: Derivation) -> Iterator[Derivation]:
    if isinstance(d.source, Compose) and d.combine == "sum":
        for child in d.children:
            yield from _flatten(child)
    elif isinstance(d.source, PureToApprox) and d.children and isinstance(d.children[0].source, Compose):
        for child in d.children[0].children:  # each pure child is (ε_i, 0)-DP: the conversion distributes over the sum
            yield from _pure_leaves(child)
    else:
        yield d


def _pure_leaves(d: Derivation) -> Iterator[Derivation]:
    if isinstance(d.source, Compose) and d.combine == "sum":
        for child in d.children:
            yield from _pure_leaves(child)
    else:
        yield d


def _pure_rho(d: Derivation, epsilon: Fraction) -> Fraction:
    """The zCDP ρ of an ε-DP part: ε²/2 (Bun–Steinke Prop 1.4), or η²/8 for an η-bounded-range primitive (Cesar–Rogers 2021)."""
    rho = epsilon * epsilon / 2
    node = d.source
    while isinstance(node, PureToApprox):
        node = node.child
    if isinstance(node, AbstractPrimitive):
        eta = claim_of(node).bounded_range
        if eta is not None:
            rho = min(rho, eta * eta / 8)
    return rho


def parts_of(root: Derivation) -> list[Part]:
    """The parts of ``root``'s composition (module docstring), with their (ε, δ) and ρ when one is known."""
    out: list[Part] = []
    for d in _flatten(root):
        cost = d.cost
        if isinstance(cost, PureDP):
            out.append(Part(cost.epsilon, Fraction(0), _pure_rho(d, cost.epsilon)))
        elif isinstance(cost, ApproxDP):
            rho: Fraction | None = None
            if cost.delta == 0:
                rho = _pure_rho(d, cost.epsilon)
            elif isinstance(d.source, ZCDPToApprox) and d.children and isinstance(d.children[0].cost, ZCDP):
                rho = d.children[0].cost.rho
            out.append(Part(cost.epsilon, cost.delta, rho))
        else:
            raise InvalidArgument("tighten", "part", type(cost).__name__, "must cost PureDP or ApproxDP")
    return out


def epsilon_candidates(parts: list[Part], delta: Fraction) -> dict[str, Fraction | None]:
    """The ε each rule certifies at ``delta`` (``None``: the rule does not apply or cannot reach ``delta``)."""
    total_delta = sum((p.delta for p in parts), Fraction(0))
    out: dict[str, Fraction | None] = {"basic": sum((p.epsilon for p in parts), Fraction(0)) if total_delta <= delta else None}
    rhos = [p.rho for p in parts]
    if rhos and all(r is not None for r in rhos) and 0 < delta < 1:
        out["zcdp"] = zcdp_to_approx_epsilon(sum((r for r in rhos if r is not None), Fraction(0)), delta)
    else:
        out["zcdp"] = None
    out["optimal"] = _optimal(parts, delta)
    return out


def _optimal(parts: list[Part], delta: Fraction) -> Fraction | None:
    groups = Counter((p.epsilon, p.delta) for p in parts)
    result = optimal_epsilon([(e, d, k) for (e, d), k in sorted(groups.items())], delta)
    return result if isinstance(result, Fraction) else None


def tighten(root: Derivation, budget: Measure) -> Derivation | None:
    """The root derivation certified by the tightest rule at the budget's δ, or ``None`` when no rule fits ``budget``.

    Only for ``ApproxDP`` budgets and plans (ε-DP and zCDP plans compose exactly already).
    """
    if not isinstance(budget, ApproxDP) or not isinstance(root.cost, ApproxDP) or budget.delta <= 0:
        return None
    parts = parts_of(root)
    found = epsilon_candidates(parts, budget.delta)
    best = min((e, name) for name, e in found.items() if e is not None) if any(e is not None for e in found.values()) else None
    if best is None or best[0] > budget.epsilon:
        return None
    epsilon, name = best
    inputs = (
        ("rule", name), ("delta", str(budget.delta)), ("parts", str(len(parts))),
        *((f"epsilon_{rule}", "n/a" if e is None else str(e)) for rule, e in found.items()),
    )  # fmt: skip
    return Derivation(root.path, root.source, f"{TIGHT_RULE}: {_RULES[name]}", inputs, ApproxDP(epsilon, budget.delta), (root,), combine="convert")


_RULES: Final = {
    "basic": "basic composition, exact sum (Dwork-Roth Thm 3.16)",
    "zcdp": "pure parts as eps^2/2-zCDP (Bun-Steinke Prop 1.4), zCDP composition, tight conversion rounded up (Canonne-Kamath-Steinke 2020 Cor 13)",
    "optimal": "optimal composition of (eps_i, delta_i) parts (Kairouz-Oh-Viswanath 2015 Thm 3.3; Murtagh-Vadhan 2016), rounded up",
}


def epsilon_at(root: Derivation, delta: Fraction) -> Fraction:
    """The smallest ε, rounded up, that any rule certifies for the plan of ``root`` at ``delta``.

    A zCDP plan: its tight conversion. An ε-DP or (ε, δ) plan: the best of the
    rules of :func:`epsilon_candidates` over its parts.

    Raises:
        InvalidArgument: ``delta`` outside ``[0, 1)``, or no rule reaches it (the
            parts' own δ already exceed it).
    """
    if not 0 <= delta < 1:
        raise InvalidArgument("epsilon_at", "delta", delta, "must be in [0, 1)")
    cost = root.cost
    if isinstance(cost, ZCDP):
        if delta == 0:
            raise InvalidArgument("epsilon_at", "delta", delta, "must be > 0 for a zCDP plan")
        return zcdp_to_approx_epsilon(cost.rho, delta)
    found = epsilon_candidates(parts_of(root), delta)
    reached = [e for e in found.values() if e is not None]
    if not reached:
        raise InvalidArgument("epsilon_at", "delta", delta, f"is below what the plan's parts need ({describe(found)})")
    return min(reached)


def describe(found: dict[str, Fraction | None]) -> str:
    """The candidates as short text (for messages)."""
    return ", ".join(f"{name} {'n/a' if e is None else short_number(e, 'up')}" for name, e in found.items())
