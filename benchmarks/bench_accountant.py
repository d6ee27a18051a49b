"""Benchmark: the static accountant on a Compose of 10,000 nodes.

Prints the time to build, derive and check the plan with exact rational costs,
and, when ``opendp`` is installed (``pip install -e '.[compare]'``), the time of
OpenDP's ``make_composition`` + privacy ``map`` over 10,000 Laplace measurements
measured in the same run, with the ratio.

Run: ``python benchmarks/bench_accountant.py``
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Callable

from dpalg import Compose, PureDP, Query
from dpalg.graph import derive
from dpalg.mechanisms import Laplace

N = 10_000


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    nodes = [Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**6)) for i in range(N)]
    plan = Compose(*nodes)
    budget = PureDP(1)
    t_build = best_of(lambda: Compose(*nodes))
    t_derive = best_of(lambda: derive(plan))
    t_check = best_of(lambda: plan.check(budget))
    print(f"dpalg: Compose of {N} Laplace nodes, exact rationals")
    print(f"  build {t_build * 1e3:.1f} ms   derive {t_derive * 1e3:.1f} ms   check {t_check * 1e3:.1f} ms   (goal: check < 100 ms)")
    print(f"  total cost {plan.cost()!r}")
    try:
        import opendp.prelude as dp
    except ImportError:
        print("opendp not installed: no peer comparison (pip install -e '.[compare]')")
        return
    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    meas = [space >> dp.m.then_laplace(scale=1.0 + (i % 97)) for i in range(N)]

    def opendp_run() -> object:
        comp = dp.c.make_composition(meas)
        return comp.map(1)

    t_opendp = best_of(opendp_run, repeats=2)
    print(f"opendp {dp.__name__}: make_composition + map of {N} Laplace: {t_opendp * 1e3:.1f} ms")
    print(f"  ratio opendp / dpalg check: {t_opendp / t_check:.1f}x")


if __name__ == "__main__":
    main()
