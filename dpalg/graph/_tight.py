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
  evaluated rigorously and rounded up (:func:`dpalg.measures.optimal_epsilon`);
* **the PLD rule**: when every part is a discrete Laplace or discrete Gaussian release
  of one integer query (``PrivacyClaim.pld``; through ``PureToApprox``,
  ``ZCDPToApprox``, ``PureToZCDP`` and ``Compose``), the parts' exact privacy loss
  distributions are composed by convolution on a pessimistic grid with certified
  arithmetic (:func:`dpalg.measures.pld_epsilon`: dominating pair ``(Z, Z + Δ)``,
  Sommer–Meiser–Mohammadi 2019, Koskela et al. 2020, Doroshenko et al. 2022). This
  uses the mechanisms themselves, not only their (ε, δ), so it can beat the optimal
  composition of their (ε, δ).
  A ``Subsample`` of one such release is a sampled part (its pairs
  ``((1 − q)P + qQ, P)`` and ``(P, (1 − q)P + qQ)``, Zhu–Dong–Wang 2022 Thm 11); a
  ``Subsample`` of several releases is not (one sample serves them all, so it is not the
  composition of sampled parts) and leaves the PLD rule to the other rules.

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
from dpalg.graph._compose import Compose, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._derivation import Derivation
from dpalg.graph._node import AbstractPrimitive, claim_of
from dpalg.graph._subsample import Subsample
from dpalg.measures import ZCDP, ApproxDP, Measure, PLDSampled, PureDP, pld_epsilon
from dpalg.measures._display import short_number
from dpalg.measures._zcdp_conversion import zcdp_to_approx_epsilon
from dpalg.measures import optimal_epsilon

__all__ = ["TIGHT_RULE", "epsilon_at", "epsilon_candidates", "parts_of", "tighten"]

#: the PLD rule is tried on at most this many distinct (noise, parameter, sensitivity) parts
MAX_PLD_KINDS: Final = 256
#: the root rule of a tightened derivation (its first words identify it in a certificate)
TIGHT_RULE: Final = "tightest of basic composition, the zCDP route and optimal composition"


@attrs.frozen
class Part:
    """One part of a composition: its (ε, δ), when it has one its zCDP ρ, and when known the PLDs of its releases."""

    epsilon: Fraction
    delta: Fraction
    rho: Fraction | None
    pld: tuple[PLDSampled, ...] | None = None


def _pld_of(node: object, sampled: bool = True) -> tuple[PLDSampled, ...] | None:
    """The PLD parts of the releases of ``node`` with their sampling rates (conversions and compositions see
    through), or ``None``. ``sampled=False``: a ``Subsample`` has none (the rules before sampled PLDs)."""
    if isinstance(node, (PureToApprox, ZCDPToApprox, PureToZCDP)):
        return _pld_of(node.child, sampled)
    if isinstance(node, Subsample):
        inner = _pld_of(node.plan, sampled) if sampled else None
        # one sample serves the whole plan: only a plan of one release is a sampled part (a sampled
        # composition is not the composition of sampled parts); nested samples multiply their rates
        if inner is None or len(inner) != 1:
            return None
        return ((inner[0][0], inner[0][1] * node.rate),)
    if isinstance(node, Compose):
        out: list[PLDSampled] = []
        for child in node.children:
            got = _pld_of(child, sampled)
            if got is None:
                return None
            out.extend(got)
        return tuple(out)
    if isinstance(node, AbstractPrimitive):
        part = claim_of(node).pld
        return None if part is None else ((part, Fraction(1)),)
    return None


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


def parts_of(root: Derivation, *, sampled: bool = True) -> list[Part]:
    """The parts of ``root``'s composition (module docstring), with their (ε, δ) and ρ when one is known.

    ``sampled=False``: a ``Subsample`` part has no PLD (the rules of certificates written before sampled PLDs).
    """
    out: list[Part] = []
    for d in _flatten(root):
        cost = d.cost
        if isinstance(cost, PureDP):
            out.append(Part(cost.epsilon, Fraction(0), _pure_rho(d, cost.epsilon), _pld_of(d.source, sampled)))
        elif isinstance(cost, ApproxDP):
            rho: Fraction | None = None
            if cost.delta == 0:
                rho = _pure_rho(d, cost.epsilon)
            elif isinstance(d.source, ZCDPToApprox) and d.children and isinstance(d.children[0].cost, ZCDP):
                rho = d.children[0].cost.rho
            out.append(Part(cost.epsilon, cost.delta, rho, _pld_of(d.source, sampled)))
        else:
            raise InvalidArgument("tighten", "part", type(cost).__name__, "must cost PureDP or ApproxDP")
    return out


def epsilon_candidates(parts: list[Part], delta: Fraction, *, pld: bool = True) -> dict[str, Fraction | None]:
    """The ε each rule certifies at ``delta`` (``None``: the rule does not apply or cannot reach ``delta``).

    ``pld=False`` leaves the PLD rule out (the rules of certificates written before it existed).
    """
    total_delta = sum((p.delta for p in parts), Fraction(0))
    out: dict[str, Fraction | None] = {"basic": sum((p.epsilon for p in parts), Fraction(0)) if total_delta <= delta else None}
    rhos = [p.rho for p in parts]
    if rhos and all(r is not None for r in rhos) and 0 < delta < 1:
        out["zcdp"] = zcdp_to_approx_epsilon(sum((r for r in rhos if r is not None), Fraction(0)), delta)
    else:
        out["zcdp"] = None
    out["optimal"] = _optimal(parts, delta)
    if pld:
        out["pld"] = _pld(parts, delta)
    return out


def _pld(parts: list[Part], delta: Fraction) -> Fraction | None:
    counts: Counter[PLDSampled] = Counter()
    for p in parts:
        if p.pld is None:
            return None
        counts.update(p.pld)
    if not counts or len(counts) > MAX_PLD_KINDS:  # a public cap on the work (each distinct part builds its own PLD)
        return None
    return pld_epsilon(sorted(counts.items()), delta)


def _optimal(parts: list[Part], delta: Fraction) -> Fraction | None:
    groups = Counter((p.epsilon, p.delta) for p in parts)
    result = optimal_epsilon([(e, d, k) for (e, d), k in sorted(groups.items())], delta)
    return result if isinstance(result, Fraction) else None


def tighten(root: Derivation, budget: Measure, *, pld: bool = True, sampled: bool = True) -> Derivation | None:
    """The root derivation certified by the tightest rule at the budget's δ, or ``None`` when no rule fits ``budget``.

    Only for ``ApproxDP`` budgets and plans (ε-DP and zCDP plans compose exactly already).
    ``pld=False``: without the PLD rule (to re-derive a certificate written before it existed);
    ``sampled=False``: without the PLDs of sampled parts (likewise). A derivation that used them records
    the input ``pld_sampled``.
    """
    if not isinstance(budget, ApproxDP) or not isinstance(root.cost, ApproxDP) or budget.delta <= 0:
        return None
    parts = parts_of(root, sampled=sampled)
    found = epsilon_candidates(parts, budget.delta, pld=pld)
    best = min((e, name) for name, e in found.items() if e is not None) if any(e is not None for e in found.values()) else None
    if best is None or best[0] > budget.epsilon:
        return None
    epsilon, name = best
    inputs = (
        ("rule", name), ("delta", str(budget.delta)), ("parts", str(len(parts))),
        *((f"epsilon_{rule}", "n/a" if e is None else str(e)) for rule, e in found.items()),
    )  # fmt: skip
    rates = sorted({str(rate) for p in parts for _, rate in (p.pld or ()) if rate != 1})
    rule = _RULES[name]
    if pld and rates:  # the PLD rule saw sampled parts: a certificate written before them re-derives without
        inputs = (*inputs, ("pld_sampled", ", ".join(rates)))
        if name == "pld":
            rule += f"; {_SAMPLED_PLD}"
    return Derivation(root.path, root.source, f"{TIGHT_RULE}: {rule}", inputs, ApproxDP(epsilon, budget.delta), (root,), combine="convert")


_RULES: Final = {
    "basic": "basic composition, exact sum (Dwork-Roth Thm 3.16)",
    "zcdp": "pure parts as eps^2/2-zCDP (Bun-Steinke Prop 1.4), zCDP composition, tight conversion rounded up (Canonne-Kamath-Steinke 2020 Cor 13)",
    "optimal": "optimal composition of (eps_i, delta_i) parts (Kairouz-Oh-Viswanath 2015 Thm 3.3; Murtagh-Vadhan 2016), rounded up",
    "pld": "privacy loss distributions of the discrete Laplace/Gaussian parts, pair (Z, Z+sensitivity), composed by convolution "
    "on a pessimistic grid (Sommer-Meiser-Mohammadi 2019; Koskela et al. 2020; Doroshenko et al. 2022), certified, rounded up",
}


_SAMPLED_PLD: Final = (
    "a part run on a Poisson sample at rate q by its pairs ((1-q)P + qQ, P) and (P, (1-q)P + qQ), each direction "
    "composed on its own, the larger delta kept (Zhu-Dong-Wang 2022 Thm 10, 11)"
)


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
