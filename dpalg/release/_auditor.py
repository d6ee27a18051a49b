"""Empirical audits of whole mechanisms and plans: ε̂ against the claimed ε, as a table.

:func:`audit_mechanism` runs the empirical auditor of
:mod:`dpalg.release._empirical` on every neighbour pair (user-given, or the
adversarial candidates of :mod:`dpalg.release._adversary`) with the confidence
budget α split evenly between the pairs (Bonferroni), so that *all* reported
lower bounds hold jointly with probability ≥ 1 − α. A mechanism is flagged when
its ε̂ exceeds the claimed ε, or its δ̂ at the claimed ε exceeds the claimed δ.
zCDP mechanisms are audited as (ε(ρ, δ), δ)-DP with the tight conversion at a
chosen δ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.graph._accountant import derive
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise._random import RngLike, resolve_rng
from dpalg.release._adversary import NeighbourPair, neighbour_candidates
from dpalg.release._empirical import AnyPrimitive, EmpiricalAudit, draw_samples, evaluate_samples, plot_audit

__all__ = ["MechanismAudit", "audit_mechanism", "audit_plan", "claimed_epsilon_delta", "format_table"]


def _up(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def claimed_epsilon_delta(cost: Measure, zcdp_delta: Fraction = Fraction(1, 10**6)) -> tuple[float, float, str]:
    """(ε, δ) of a claim as floats rounded up, and its description.

    zCDP is converted with the tight conversion at ``zcdp_delta`` (rounded up).
    """
    match cost:
        case PureDP():
            return _up(cost.epsilon), 0.0, f"eps={cost.epsilon}"
        case ApproxDP():
            return _up(cost.epsilon), _up(cost.delta), f"eps={cost.epsilon}, delta={cost.delta}"
        case ZCDP():
            approx = cost.to_approx(zcdp_delta)
            return _up(approx.epsilon), _up(approx.delta), f"rho={cost.rho} -> eps={float(approx.epsilon):.4g} at delta={zcdp_delta}"


@final
@attrs.frozen
class MechanismAudit:
    """The empirical audit of one mechanism over several neighbour pairs.

    Attributes:
        label: where the mechanism sits (its path in the plan, or its class name).
        node_repr: the node's repr.
        claim: the claimed cost, as text.
        epsilon: the claimed ε (rounded up); delta: the claimed δ.
        results: ``(pair label, EmpiricalAudit)`` for every pair.
        skipped: why no pair could be audited, if so.
    """

    label: str
    node_repr: str
    claim: str
    epsilon: float
    delta: float
    results: tuple[tuple[str, EmpiricalAudit], ...]
    skipped: str | None = None

    @property
    def epsilon_lower(self) -> float:
        """The largest ε̂ over the pairs (0 when none)."""
        return max((r.epsilon_lower for _, r in self.results), default=0.0)

    @property
    def delta_lower(self) -> float:
        """The largest δ̂ at the claimed ε over the pairs."""
        return max((r.delta_lower or 0.0 for _, r in self.results), default=0.0)

    @property
    def violation(self) -> bool:
        """Whether the audit refutes the claim (ε̂ > ε or δ̂ > δ)."""
        return self.epsilon_lower > self.epsilon or self.delta_lower > self.delta

    @property
    def worst(self) -> tuple[str, EmpiricalAudit] | None:
        """The pair with the largest ε̂ (ties: the largest δ̂)."""
        if not self.results:
            return None
        return max(self.results, key=lambda item: (item[1].epsilon_lower, item[1].delta_lower or 0.0))


def _pairs(node: AnyPrimitive, pairs: Sequence[NeighbourPair] | None) -> tuple[NeighbourPair, ...]:
    if pairs is not None:
        out = tuple(pairs)
        if not out or not all(isinstance(p, NeighbourPair) for p in out):
            raise InvalidArgument("audit_mechanism", "pairs", type(pairs).__name__, "must be a non-empty sequence of NeighbourPair")
        return out
    return neighbour_candidates(node)


def audit_mechanism(
    node: AnyPrimitive,
    pairs: Sequence[NeighbourPair] | None = None,
    *,
    trials: int = 20_000,
    alpha: float = 0.01,
    rng: RngLike = None,
    zcdp_delta: Fraction = Fraction(1, 10**6),
    progress: bool | None = False,
    label: str | None = None,
) -> MechanismAudit:
    """Audit one primitive empirically on adversarial (or given) neighbour pairs.

    Args:
        node: the mechanism.
        pairs: neighbour pairs; ``None`` derives candidates (:func:`neighbour_candidates`).
        trials: runs per dataset and pair.
        alpha: every bound reported holds jointly with probability ≥ 1 − α.
        rng: the randomness of the runs.
        zcdp_delta: the δ at which a zCDP claim is converted to (ε, δ).
        progress: tqdm progress bars (``None``: when tqdm is installed).
        label: the name shown in tables (default: the class name).
    """
    if not isinstance(node, AbstractPrimitive):
        raise InvalidArgument("audit_mechanism", "node", type(node).__name__, "must be a primitive mechanism")
    eps, delta, claim = claimed_epsilon_delta(node.privacy().cost, zcdp_delta)
    chosen = _pairs(node, pairs)
    source = resolve_rng(rng)
    name = label or type(node).__name__
    results: list[tuple[str, EmpiricalAudit]] = []
    for pair in chosen:
        samples = draw_samples(
            node, pair.data, pair.neighbour, trials=trials, rng=source, coordinate=pair.coordinate,
            progress=progress, label=f"{name}: {pair.label[:40]}",
        )
        results.append((pair.label, evaluate_samples(samples, delta=delta, epsilon=eps, alpha=alpha / len(chosen))))
    return MechanismAudit(name, repr(node), claim, eps, delta, tuple(results))


def audit_plan(
    plan: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP],
    pairs: Sequence[NeighbourPair] | None = None,
    *,
    trials: int = 20_000,
    alpha: float = 0.01,
    rng: RngLike = None,
    zcdp_delta: Fraction = Fraction(1, 10**6),
    progress: bool | None = False,
) -> tuple[MechanismAudit, ...]:
    """Audit every primitive of a plan on its own (α is split between them).

    A primitive for which no candidates can be derived (and no pairs are given)
    is reported as skipped rather than silently passed.
    """
    leaves = [d for d in derive(plan).walk() if d.combine == "leaf"]
    source = resolve_rng(rng)
    out: list[MechanismAudit] = []
    for d in leaves:
        node = d.source
        assert isinstance(node, AbstractPrimitive)
        try:
            out.append(audit_mechanism(
                node, pairs, trials=trials, alpha=alpha / len(leaves), rng=source, zcdp_delta=zcdp_delta,
                progress=progress, label=d.path,
            ))
        except Exception as exc:  # noqa: BLE001 - report and go on; a skipped mechanism is never counted as passing
            eps, delta, claim = claimed_epsilon_delta(node.privacy().cost, zcdp_delta)
            out.append(MechanismAudit(d.path, repr(node), claim, eps, delta, (), skipped=f"{type(exc).__name__}: {exc}"))
    return tuple(out)


def format_table(audits: Sequence[MechanismAudit]) -> str:
    """A text table: mechanism, claim, ε̂, δ̂ at the claimed ε, verdict, worst pair."""
    rows = [("mechanism", "claimed", "eps", "eps_hat", "delta", "delta_hat", "verdict", "worst pair / event")]
    for a in audits:
        if a.skipped is not None:
            rows.append((a.label, a.claim, f"{a.epsilon:.4g}", "-", f"{a.delta:.3g}", "-", "SKIPPED", a.skipped[:80]))
            continue
        worst = a.worst
        detail = "" if worst is None else f"{worst[0]} | {worst[1].event.describe()}"
        verdict = "VIOLATION" if a.violation else "ok"
        rows.append((a.label, a.claim, f"{a.epsilon:.4g}", f"{a.epsilon_lower:.4g}", f"{a.delta:.3g}", f"{a.delta_lower:.3g}", verdict, detail))
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        cells = [c[:60].ljust(w) for c, w in zip(r[:-1], widths)]
        lines.append("  ".join(cells) + "  " + r[-1])
    return "\n".join(lines)


def plot_mechanism(audit: MechanismAudit, directory: str | Path, index: int = 0) -> Path | None:
    """Write the plot of the worst pair of ``audit`` into ``directory``; ``None`` if nothing was audited."""
    worst = audit.worst
    if worst is None:
        return None
    safe = "".join(ch if ch.isalnum() else "_" for ch in audit.label)[:80]
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    return plot_audit(worst[1], out / f"{index:02d}-{safe}.png", title=f"{audit.label}: {worst[0]}")
