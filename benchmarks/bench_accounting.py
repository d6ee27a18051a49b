"""Benchmark: what dpalg certifies for compositions of its own mechanisms, next to the best known bounds.

For each plan of the accounting issue's table it prints the ε dpalg certifies at
δ = 10⁻⁶ (``plan.epsilon_at``, the tightest sound rule it knows, rounded up), the rule,
the basic sum, and the reference value (Google's dp-accounting 0.6.0, PLD pessimistic,
or the exact optimum where one is known), with the ratio dpalg / reference. Then the
time of ``plan.check`` on the 100-node plans (which runs the tighter rules, the sum not
fitting) and on 10⁴ Laplace nodes, with the load average.

Run: ``python benchmarks/bench_accounting.py``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpalg import ApproxDP, BudgetExceeded, Clip, Compose, PureToApprox, PureToZCDP, Query, Subsample, ZCDPToApprox
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._testing import Fixed
from dpalg.graph._tight import epsilon_candidates, parts_of
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace

DELTA = Fraction(1, 10**6)


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def plans() -> list[tuple[str, Callable[[], AbstractMeasurement[ApproxDP]], float]]:
    """(name, plan factory, reference ε at δ = 1e-6: exact optimum or dp-accounting's PLD)."""
    return [
        ("100 x generic (0.1, 1e-9) nodes", lambda: Compose(*[Fixed(ApproxDP("0.1", "1e-9")) for _ in range(100)]), 4.7877),
        ("100 x Laplace(eps=0.1) counts", lambda: PureToApprox(Compose(*[Laplace(Query.count(), epsilon="0.1") for _ in range(100)])), 4.7746),
        ("100 x Laplace(eps=0.1) clipped sums", lambda: PureToApprox(Compose(*[
            Laplace(Query.sum("x") | Clip(0, 1000), epsilon="0.1") for _ in range(100)])), 4.693),
        ("100 discrete Gaussians, total rho=0.5", lambda: ZCDPToApprox(Compose(*[
            Gaussian(Query.count(), rho="0.005") for _ in range(100)]), delta="1e-6"), 4.887),
        # exact: the two-point pairs ((1-q)P + qQ, P) and (P, (1-q)P + qQ) enumerated in mpmath (40 digits);
        # dp-accounting 0.6.0's pessimistic PLD (from_discrete_laplace_mechanism, sampling_prob=0.1) gives 0.3994
        ("100 x Subsample(Laplace(eps=0.1), q=0.1)", lambda: PureToApprox(Compose(*[
            Subsample(Laplace(Query.count(), epsilon="0.1"), rate="0.1") for _ in range(100)])), 0.394830),
    ]


def main() -> None:
    print(f"load average before: {_load()}")
    print(f"{'plan':40s} {'dpalg':>9s} {'rule':>8s} {'sum':>7s} {'reference':>10s} {'ratio':>6s}")
    for name, make, reference in plans():
        plan = make()
        root = plan.derive()
        found = epsilon_candidates(parts_of(root), DELTA)  # a converted zCDP plan: its rho (zcdp) or its Gaussians (pld)
        best = min((e, rule) for rule, e in found.items() if e is not None)
        total = root.cost.epsilon if isinstance(root.cost, ApproxDP) else float("nan")
        print(f"{name:40s} {float(best[0]):9.4f} {best[1]:>8s} {float(total):7.3f} {reference:10.4f} {float(best[0]) / reference:6.3f}")
    em = ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1)
    print(f"{'ExponentialQuantile(eps=1) in a zCDP plan':40s} rho = {PureToZCDP(em).cost().rho} (eps^2/2 = 1/2; bounded range eps^2/8 = 1/8)")
    print()
    for name, make, _ in plans():
        plan = make()
        budget = ApproxDP(Fraction(5) if plan.cost().epsilon > 5 else Fraction(2, 5), DELTA)
        start = time.perf_counter()
        try:
            outcome = dict(plan.check(budget).inputs).get("rule", "sum")
        except BudgetExceeded:
            outcome = "refused"
        elapsed = time.perf_counter() - start
        print(f"check {name} against ({budget.epsilon}, 1e-6): {elapsed * 1e3:8.1f} ms ({outcome})")
    mixed = PureToApprox(Compose(*[Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**4)) for i in range(10_000)]))
    start = time.perf_counter()
    d = mixed.check(ApproxDP(3, DELTA))
    print(f"check 10^4 Laplace nodes of 97 distinct eps (sum {float(mixed.cost().epsilon):.2f}) against (3, 1e-6): "
          f"{(time.perf_counter() - start) * 1e3:8.1f} ms ({dict(d.inputs)['rule']}: eps {float(d.cost.epsilon):.4f})")
    big = PureToApprox(Compose(*[Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**6)) for i in range(10_000)]))
    start = time.perf_counter()
    big.check(ApproxDP(1, DELTA))
    print(f"check 10^4 Laplace nodes (the sum fits): {(time.perf_counter() - start) * 1e3:8.1f} ms")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
