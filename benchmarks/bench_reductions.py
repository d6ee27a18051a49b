"""Benchmark: the reductions seam (issue 16) against numpy baselines measured in the same run.

Issue 16's goals, each a ratio to a numpy call on the same column in the same process:

| path | goal |
| --- | --- |
| Laplace mean of 10^7 rows | <= 10x ``np.sum``; peak traced memory <= 0.5x the column |
| ExponentialQuantile median of 10^7 rows | <= 2x ``np.sort``; memory <= 1.5x the column |
| ProposeTest mean and median, 10^6 rows | <= 3x ``np.sort`` |
| SmoothBound median of 10^7 rows | <= 1.2x ``np.sort``; memory <= 1.5x the column |

Times are the best of ``--repeat`` releases (the baseline likewise); memory is the
peak traced by ``tracemalloc`` during one release, over the column's bytes (the
column itself is allocated before tracing starts). The load average is printed:
the machine is shared, so only the ratios mean anything.

Run: ``python -m benchmarks.bench_reductions [--rows N] [--ptr-rows N] [--repeat R]``
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from benchmarks._common import best_of, parse_arguments
from dpalg import Clip, Query
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms import ExponentialQuantile, Laplace, ProposeTest, SmoothBound
from dpalg.noise import SeededRandomness


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass(frozen=True)
class Measured:
    """One path: dpalg's best time, the baseline's, and the peak memory over the column."""

    name: str
    seconds: float
    baseline_seconds: float
    baseline: str
    memory: float
    goal: str


def _measure(name: str, run: Callable[[Dataset, SeededRandomness], object], data: Dataset, column: npt.NDArray[np.float64],
             baseline: tuple[str, Callable[[], object]], repeat: int, goal: str) -> Measured:  # fmt: skip
    rng = SeededRandomness(1)
    release = lambda: run(data, rng)  # noqa: E731
    release()  # warm-up (imports, caches)
    base_name, base = baseline
    t_base = best_of(base, repeat)
    t_dp = best_of(release, repeat)
    return Measured(name, t_dp, t_base, base_name, _peak(release) / column.nbytes, goal)


def measure(rows: int, ptr_rows: int, repeat: int, log: Callable[[str], None] = print) -> list[Measured]:
    """Every path of issue 16's goals, in this process."""
    gen = np.random.default_rng(0)  # synthetic data only
    big = gen.normal(50, 10, rows)
    small = gen.normal(50, 10, ptr_rows)
    big_data, small_data = as_dataset({"x": big}), as_dataset({"x": small})
    clip = Clip(0, 100)
    np_sum = ("np.sum", lambda: np.sum(big))
    sort_big = ("np.sort", lambda: np.sort(big))
    sort_small = ("np.sort", lambda: np.sort(small))
    cases = [
        ("Laplace mean", Laplace(Query.mean("x") | clip, epsilon=1), big_data, big, np_sum, "<= 10x, <= 0.5x"),
        ("ExponentialQuantile median", ExponentialQuantile(Query.median("x") | clip, epsilon=1), big_data, big, sort_big,
         "<= 2x, <= 1.5x"),
        ("ProposeTest mean", ProposeTest(Query.mean("x") | clip, bound="0.001", epsilon=1, delta="1e-7"), small_data, small,
         sort_small, "<= 3x"),
        ("ProposeTest median", ProposeTest(Query.median("x") | clip, bound="0.1", epsilon=1, delta="1e-7"), small_data, small,
         sort_small, "<= 3x"),
        ("SmoothBound median", SmoothBound(Query.median("x") | clip, epsilon=1, delta="1e-7"), big_data, big, sort_big,
         "<= 1.2x, <= 1.5x"),
    ]  # fmt: skip
    out = []
    for name, node, data, column, baseline, goal in cases:
        log(f"  reductions: {name}, n={column.size:,} ...")
        out.append(_measure(name, node.release, data, column, baseline, repeat, goal))
    return out


def main() -> None:
    args = parse_arguments(rows=10_000_000, ptr_rows=1_000_000, repeat=3)
    print(f"{args.rows:,} rows (PTR: {args.ptr_rows:,}); load average {os.getloadavg()[0]:.2f} at start")
    print("| path | dpalg | baseline | ratio | peak memory / column | goal |")
    print("| --- | --- | --- | --- | --- | --- |")
    for m in measure(args.rows, args.ptr_rows, args.repeat, log=lambda _: None):
        print(f"| {m.name} | {m.seconds * 1e3:.1f} ms | {m.baseline_seconds * 1e3:.1f} ms ({m.baseline}) | "
              f"{m.seconds / m.baseline_seconds:.2f}x | {m.memory:.2f}x | {m.goal} |", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
