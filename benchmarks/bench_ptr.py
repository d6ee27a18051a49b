"""Benchmark: propose-test-release's run time does not depend on the data's distance to instability.

Run: ``python benchmarks/bench_ptr.py [n] [repeat]``. For each PTR variant the release
is timed on a *stable* dataset (large distance γ: the median of many equal values) and on
an *unstable* one (γ = 0: two far-apart clusters), in the same run, next to ``np.sort`` of
the same column as the baseline. Before issue 14 the work stopped at γ (7.5 ms per step),
so one timing told the two apart; now every run evaluates the LS profile and the user
formula to the public cap ``ptr_cap(ε, δ)``, and the ratio unstable/stable should be ≈ 1.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np

from dpalg.data import as_dataset
from dpalg.mechanisms import LocalSensAtDistance, ProposeTest
from dpalg.mechanisms._common.ptr_test import ptr_cap
from dpalg.noise import SeededRandomness
from dpalg.queries import Clip, Query


def _median_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**5
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    gen = np.random.default_rng(0)
    stable = np.full(n, 50.0)
    unstable = np.concatenate([np.zeros(n // 2), np.full(n - n // 2, 100.0)])
    gen.shuffle(unstable)
    median = Query.median("x") | Clip(0, 100)
    plans = {
        "median, catalog LS": ProposeTest(median, bound=1, epsilon="0.5", delta="1e-6"),
        "median, user formula": ProposeTest(
            LocalSensAtDistance(median, "(upper - lower) * Min(k + 1, 2)"), bound=1, epsilon="0.5", delta="1e-6"
        ),
        "mean, catalog LS": ProposeTest(Query.mean("x") | Clip(0, 100), bound="0.01", epsilon="0.5", delta="1e-6"),
    }
    load = os.getloadavg()[0]
    shuffled = gen.random(n)
    t_sort = _median_of(lambda: np.sort(shuffled), repeat)
    print(f"n = {n:,}, load average {load:.2f}, cap = {ptr_cap(plans['median, catalog LS'].epsilon, plans['median, catalog LS'].delta)}"
          f", np.sort baseline {t_sort * 1e3:.2f} ms")
    for name, plan in plans.items():
        rng = SeededRandomness(1)
        a, b = as_dataset({"x": stable}), as_dataset({"x": unstable})
        t_a = _median_of(lambda: plan.release(a, rng), repeat)  # noqa: B023
        t_b = _median_of(lambda: plan.release(b, rng), repeat)  # noqa: B023
        print(f"{name:24s} stable {t_a * 1e3:8.2f} ms ({t_a / t_sort:6.2f}x sort)  unstable {t_b * 1e3:8.2f} ms "
              f"({t_b / t_sort:6.2f}x sort)  unstable/stable {t_b / t_a:.3f}")


if __name__ == "__main__":
    main()
