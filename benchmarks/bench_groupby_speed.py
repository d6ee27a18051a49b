"""Benchmark: a per-group Laplace mean (GroupBy over public keys) against pandas ``groupby().agg(["count", "sum"])``.

The goal: a per-group mean over 10^7 rows and 10^4 public keys within 3x of pandas
computing each group's count and float sum on the same frame, in the same run.
pandas is the floor of what any per-group mean costs (a hash group-by and float
sums, no clipping, no exact arithmetic, no noise); dpalg runs the whole release:
the schema check, the group codes of the key column, the exact fixed-point sums
and counts of every group (:class:`~dpalg.data._grouped.GroupedRows`), one
vectorised draw of discrete Laplace noise per term for all groups, the
post-processing and the certificate.

Each line is the median of ``--repeat`` interleaved rounds (one call of each per
round, so both see the same machine load); the load average is printed at the
start and the end. The machine is shared: only the ratios mean anything. With
``--per-group`` the generic path (every group's rows taken and released one by one,
what GroupBy did before the grouped path) is timed once too, at the smaller size
only unless ``--per-group-all``.

Data: keys uniform over ``0..keys-1`` (an int64 column), values N(50, 10) with 1%
NaN; the plan is ``GroupBy("k", keys=KeySet(range(keys)), aggregates={"mean":
Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)})`` with the secure default
randomness.

Run: ``python -m benchmarks.bench_groupby_speed [--repeat R] [--per-group] [--per-group-all]``
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from benchmarks._common import interleaved_medians, parse_arguments
from dpalg import Clip, PureDP, Query
from dpalg.graph._groupby import GroupBy, KeySet
from dpalg.mechanisms import Laplace

SIZES: list[tuple[int, int]] = [(1_000_000, 1_000), (10_000_000, 10_000)]


def _frame(rows: int, keys: int) -> pd.DataFrame:
    gen = np.random.default_rng(0)  # synthetic data only
    x = gen.normal(50, 10, rows)
    x[gen.random(rows) < 0.01] = np.nan
    return pd.DataFrame({"k": gen.integers(0, keys, rows), "x": x})


def _dpalg(df: pd.DataFrame, keys: int) -> Callable[[], object]:
    key_set = KeySet(range(keys))

    def run() -> object:
        plan = GroupBy("k", keys=key_set, aggregates={"mean": Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)})
        plan.check(PureDP(1))
        return plan.run(df).value

    return run


def _per_group_seconds(run: Callable[[], object]) -> float:
    """One run with the grouped release switched off (every group released on its own rows)."""
    original = Laplace.release_groups
    Laplace.release_groups = lambda self, groups, rng: None  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        run()
        return time.perf_counter() - t0
    finally:
        Laplace.release_groups = original  # type: ignore[method-assign]


def main() -> None:
    args = parse_arguments(
        {"per-group": "also time the per-group path once (smaller size)", "per-group-all": "... at every size"}, repeat=5,
    )
    print(f"pandas {pd.__version__}, numpy {np.__version__}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    print("| rows | keys | dpalg GroupBy mean | pandas count+sum | ratio | goal | per-group path |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for rows, keys in SIZES:
        df = _frame(rows, keys)
        dpalg_run = _dpalg(df, keys)
        dpalg_run()  # warm-up (imports, first-touch of the columns)
        def pandas_run(frame: pd.DataFrame = df) -> object:
            return frame.groupby("k")["x"].agg(["count", "sum"])

        pandas_run()
        t_dp, t_pd = interleaved_medians([dpalg_run, pandas_run], repeat=args.repeat)
        goal = "<= 3x" if rows == 10_000_000 else ""
        per_group = ""
        if args.per_group_all or (args.per_group and rows == SIZES[0][0]):
            per_group = f"{_per_group_seconds(dpalg_run):.2f} s"
        print(f"| {rows:,} | {keys:,} | {t_dp * 1e3:.0f} ms | {t_pd * 1e3:.0f} ms | {t_dp / t_pd:.2f}x | {goal} | {per_group} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
