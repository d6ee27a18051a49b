"""Benchmark: the static accountant on a Compose of 10^4 and 10^5 Laplace nodes, next to OpenDP.

For each size it prints, measured in the same run as medians of interleaved
repetitions (one call of each function per round, so both libraries see the
same machine load), and with the load average before and after:

* ``check``: ``plan.check(budget)`` on a built plan, exact rationals, vs
  OpenDP's ``make_composition(meas).map(1)`` over as many Laplace measurements
  (the comparison of ``benchmarks/figures.py``);
* ``build + check``: ``Compose(*nodes).check(budget)``, a fresh plan from built
  nodes (what ``python -m benchmarks`` reports), vs the same OpenDP call;
* ``cold``: everything from the parameters -- the nodes, the plan and its check --
  vs OpenDP building the measurements, composing them and mapping;
* a failing check (the explanation of where the budget breaks), dpalg only.

Each node's claim is computed once per node object (a frozen node's cost is a
function of its parameters), so ``check`` and ``build + check`` reuse the claims
made when the nodes were first composed; ``cold`` pays for them.

Run: ``python benchmarks/bench_accountant.py [--sizes 10000 100000] [--repeat 5]``
(OpenDP comes from ``pip install -e '.[compare]'``; without it only dpalg is timed).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import interleaved_medians, peer
from dpalg import BudgetExceeded, Compose, PureDP, Query
from dpalg.mechanisms import Laplace


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.1f} ms"


def _nodes(n: int) -> list[Laplace]:
    return [Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**6)) for i in range(n)]


def measure(n: int, repeat: int) -> list[tuple[str, float, float | None]]:
    """``(figure, dpalg seconds, OpenDP seconds or None)`` for a plan of ``n`` nodes."""
    nodes = _nodes(n)
    plan = Compose(*nodes)
    budget = PureDP(1) if n <= 10_000 else PureDP(10)  # the cost is about n * 4.9e-5
    plan.check(budget)
    mod, _ = peer("opendp.prelude", "opendp")

    def check() -> object:
        return plan.check(budget)

    def build_check() -> object:
        return Compose(*nodes).check(budget)

    def cold() -> object:
        return Compose(*_nodes(n)).check(budget)

    def failing() -> object:
        try:
            plan.check(PureDP(Fraction(1, 10)))
        except BudgetExceeded as err:
            return err
        raise AssertionError("the budget of 1/10 was expected to fail")

    if mod is None:
        ours = interleaved_medians([check, build_check, cold, failing], repeat=repeat)
        return [(label, t, None) for label, t in zip(("check", "build + check", "cold", "failing check"), ours)]

    dp = mod
    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)

    def measurements() -> list[object]:
        return [space >> dp.m.then_laplace(scale=1.0 + (i % 97)) for i in range(n)]

    meas = measurements()

    def odp() -> object:
        return dp.c.make_composition(meas).map(1)

    def odp_cold() -> object:
        return dp.c.make_composition(measurements()).map(1)

    fns: list[Callable[[], object]] = [check, odp, build_check, cold, odp_cold, failing]
    t_check, t_odp, t_build, t_cold, t_odp_cold, t_fail = interleaved_medians(fns, repeat=repeat)
    return [
        ("check", t_check, t_odp),
        ("build + check", t_build, t_odp),
        ("cold: nodes + build + check", t_cold, t_odp_cold),
        ("failing check (explanation)", t_fail, None),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds per size (the median is reported)")
    args = parser.parse_args(argv)
    _, name = peer("opendp.prelude", "opendp")
    print(f"load average before: {_load()}   ({os.cpu_count()} cores; peer: {name})")
    for n in args.sizes:
        rows = measure(n, args.repeat)
        budget = "PureDP(1)" if n <= 10_000 else "PureDP(10)"
        print(f"\nCompose of {n:,} Laplace nodes, exact rationals, budget {budget}; medians of {args.repeat} interleaved rounds")
        print(f"  {'figure':<30} {'dpalg':>12} {'OpenDP':>12}  ratio dpalg/OpenDP")
        for label, ours, theirs in rows:
            ratio = f"{ours / theirs:.2f}x" if theirs else "-"
            print(f"  {label:<30} {_ms(ours):>12} {_ms(theirs) if theirs else '-':>12}  {ratio}")
        print(f"  load average: {_load()}")
    print("\nOpenDP: make_composition(measurements).map(1) over Laplace measurements (float); 'cold' also builds them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
