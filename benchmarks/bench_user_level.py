"""Benchmark: a bounded user-level sum over 10^6 users against a pandas groupby-sum.

Issue 15's goal: a bounded user-level sum (``Query.sum(col, user=uid) |
ClipPerUser(0, C)`` through ``Laplace``) over 10^6 users in at most 3x the time
of a pandas ``groupby(uid).sum()`` of the same rows, measured in the same run.
Also timed: the row cap (``| Clip(l, u) | MaxRowsPerUser(k)``, keyed-hash row
choice) and the per-user totals alone. Ids are int64 and, in a second pass,
strings (``"u123456"``), which is where a groupby is slower and dpalg's id policy
(:func:`dpalg.data.unit_index`) is heavier.

Run: ``python benchmarks/bench_user_level.py [--users N] [--rows-per-user R]``
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks._common import best_of, parse_arguments
from dpalg import Clip, ClipPerUser, MaxRowsPerUser, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import Laplace
from dpalg.noise import SeededRandomness


def main() -> None:
    args = parse_arguments(users=1_000_000, rows_per_user=3, repeat=3)
    import pandas as pd

    gen = np.random.default_rng(0)  # synthetic population only
    n_rows = args.rows_per_user * args.users
    uid_int = gen.integers(0, args.users, size=n_rows)
    spend = np.floor(gen.pareto(1.2, size=n_rows) * 10)
    print(f"{args.users:,} users, {n_rows:,} rows; load average {os.getloadavg()[0]:.2f}")
    clip_total = Laplace(Query.sum("spend", user="uid") | ClipPerUser(0, 1000), epsilon=1)
    cap_rows = Laplace(Query.sum("spend", user="uid") | Clip(0, 100) | MaxRowsPerUser(3), epsilon=1)
    print(f"{'ids':6s} {'figure':44s} {'seconds':>8s} {'/ pandas':>9s}")
    for label, ids in (("int", uid_int), ("str", np.array([f"u{u}" for u in uid_int.tolist()], dtype=object))):
        frame = pd.DataFrame({"uid": ids, "spend": spend})
        data = as_dataset({"uid": ids, "spend": spend})
        base = best_of(lambda: frame.groupby("uid", sort=False)["spend"].sum().clip(0, 1000).sum(), args.repeat)
        print(f"{label:6s} {'pandas groupby-sum + clip (baseline)':44s} {base:8.3f} {1.0:9.2f}")
        rng = SeededRandomness(1)
        for name, node in (("Laplace sum | ClipPerUser(0, 1000)", clip_total), ("Laplace sum | Clip | MaxRowsPerUser(3)", cap_rows)):
            t = best_of(lambda node=node: node.release(data, rng), args.repeat)
            print(f"{label:6s} {name:44s} {t:8.3f} {t / base:9.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
