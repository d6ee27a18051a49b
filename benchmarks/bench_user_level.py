"""Benchmark: a bounded user-level sum over 10^6 users against a pandas groupby-sum.

Issue 15's goal: a bounded user-level sum (``Query.sum(col, user=uid) |
ClipPerUser(0, C)`` through ``Laplace``) over 10^6 users in at most 3x the time
of a pandas ``groupby(uid).sum()`` of the same rows, measured in the same run.
Also timed: the row cap (``| Clip(l, u) | MaxRowsPerUser(k)``, keyed-hash row
choice) and the per-user totals alone. Ids are int64 and, in a second pass,
strings (``"u123456"``), which is where a groupby is slower and dpalg's id policy
(:func:`dpalg.data.unit_index`) is heavier.

The second section times the row cap alone at scale (``--cap-users`` users with
``--cap-rows-per-user`` rows each, 10^7 rows by default): ``Laplace(Query.count(user=uid) |
MaxRowsPerUser(k))`` and ``Laplace(Query.sum(x, user=uid) | Clip(0, 100) | MaxRowsPerUser(k))``
against pandas ``groupby(uid).head(k)`` followed by a (clipped) sum, and polars' ``group_by(uid).head(k)``
when polars is installed, interleaved in one run (medians); the goal is at most 3x pandas.

Run: ``python benchmarks/bench_user_level.py [--users N] [--rows-per-user R] [--cap-users N] [--cap-rows-per-user R] [--cap-only]``
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks._common import best_of, interleaved_medians, parse_arguments
from dpalg import Clip, ClipPerUser, MaxRowsPerUser, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import Laplace
from dpalg.noise import SeededRandomness


def row_cap_section(users: int, rows_per_user: int, k: int, repeat: int) -> None:
    """MaxRowsPerUser(k) over users x rows_per_user rows against pandas (and polars) head(k) + sum."""
    import pandas as pd

    try:
        import polars as pl
    except ImportError:  # optional
        pl = None
    gen = np.random.default_rng(1)  # synthetic population only
    n_rows = users * rows_per_user
    uid_int = gen.integers(0, users, size=n_rows)
    x = np.floor(gen.pareto(1.2, size=n_rows) * 10)
    print(f"\nrow cap: {users:,} users, {n_rows:,} rows, k={k}; load average {os.getloadavg()[0]:.2f}")
    count = Laplace(Query.count(user="uid") | MaxRowsPerUser(k), epsilon=1)
    total = Laplace(Query.sum("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(k), epsilon=1)
    print(f"{'ids':4s} {'query':6s} {'dpalg s':>8s} {'pandas s':>9s} {'polars s':>9s} {'/ pandas':>9s} {'/ polars':>9s}")
    for label, ids in (("int", uid_int), ("str", np.array([f"u{u}" for u in uid_int.tolist()], dtype=object))):
        frame = pd.DataFrame({"uid": ids, "x": x})
        data = as_dataset({"uid": ids, "x": x})
        pframe = pl.DataFrame({"uid": ids if label == "int" else pl.Series(ids, dtype=pl.String), "x": x}) if pl is not None else None
        for name, node in (("count", count), ("sum", total)):
            fns = [
                lambda node=node: node.release(data, SeededRandomness(1)),
                (lambda: len(frame.groupby("uid", sort=False).head(k))) if name == "count" else (lambda: frame.groupby("uid", sort=False).head(k)["x"].clip(0, 100).sum()),
            ]
            if pframe is not None:
                fns.append(
                    (lambda: pframe.group_by("uid").head(k).height)
                    if name == "count"
                    else (lambda: pframe.group_by("uid").head(k)["x"].clip(0, 100).sum())
                )
            times = interleaved_medians(fns, repeat)
            t_pl = times[2] if len(times) > 2 else float("nan")
            print(f"{label:4s} {name:6s} {times[0]:8.3f} {times[1]:9.3f} {t_pl:9.3f} {times[0] / times[1]:9.2f} {times[0] / t_pl:9.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def main() -> None:
    args = parse_arguments(
        {"cap-only": "only the row-cap section"}, users=1_000_000, rows_per_user=3, repeat=3, cap_users=1_000_000, cap_rows_per_user=10, cap_k=5
    )
    if args.cap_only:
        row_cap_section(args.cap_users, args.cap_rows_per_user, args.cap_k, args.repeat)
        return
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
    row_cap_section(args.cap_users, args.cap_rows_per_user, args.cap_k, args.repeat)


if __name__ == "__main__":
    main()
