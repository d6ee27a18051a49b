"""Benchmark: per-user fixed-point sums (issue 17) on numpy, polars and Spark, against ``np.bincount``.

Issue 17's goal: per-user sums over 10^6 users in Spark local mode <= 25x numpy on
the same data in the same run (and polars <= 2x numpy). The baseline is
``np.bincount(ids, weights=x)``: a float sum per user over dense integer ids already
in memory, the floor of what any per-user sum costs (it is neither exact nor
independent of the row order, and it knows the users' codes in advance). Each line
times ``per_unit_sums`` of the protocol (one exact fixed-point total per user,
ascending) on:

* dpalg numpy: :class:`~dpalg.data.NumpyReductions` on the numpy columns (the
  users' codes by ``np.unique``, then the exact digit sums of ``per_unit_lattice_sums``);
* polars: :class:`~dpalg.data.PolarsReductions` on a polars DataFrame (a ``group_by``);
* Spark: :class:`~dpalg.data.SparkReductions` on a Spark frame read from Parquet and
  cached (``local[2]``, UI off; skipped when pyspark or Java is missing). The session
  start, the Parquet read and the cache fill are not timed, and every backend is
  called once before timing (which also checks its answer equals numpy's bit for bit).

Two questions: the shifted inverse's user sum with a clip ``[0, 100]`` on the lattice
``2**-29`` (Spark: ``long`` sums, polars: ``Int64``), and without a clip on ``2**-20``
(rows clamped at ``±2**42``: Spark sums the split terms, polars in ``Int128``). The
data: 10^7 rows, 10^6 users (uniform ids), values Exponential(20) with 1% NaN.

Timings are medians of ``--repeat`` interleaved rounds (one call of each backend per
round: every backend sees the same machine load); the load average is printed at
the start and the end. The machine is shared, so only the ratios mean anything.

Run: ``python -m benchmarks.bench_per_unit [--rows N] [--users U] [--repeat R] [--no-spark]``
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from benchmarks._common import interleaved_medians, parse_arguments
from dpalg.data import NumpyReductions, Reductions, as_dataset, as_reductions

QUESTIONS: list[tuple[str, float | None, float | None, int]] = [
    ("clip [0, 100], k = -29", 0.0, 100.0, -29),
    ("no clip, k = -20", None, None, -20),
]


def _spark_session(shuffle_partitions: int) -> Any | None:
    """A local[2] session, or ``None`` (printed why) when pyspark or Java is missing."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("Spark: skipped (pyspark is not installed)")
        return None
    from dpalg.data._spark import java_problem

    problem = java_problem()
    if problem is not None:
        print(f"Spark: skipped ({problem})")
        return None
    t0 = time.perf_counter()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-bench-per-unit")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    print(f"Spark {session.version}: session started in {time.perf_counter() - t0:.1f} s (not timed)")
    return session


def main() -> None:
    args = parse_arguments({"no-spark": "numpy and polars only (no Spark session)"}, rows=10_000_000, users=1_000_000, repeat=3, shuffle_partitions=4)
    print(f"{args.rows:,} rows, {args.users:,} users; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")

    gen = np.random.default_rng(0)  # synthetic data only
    ids = gen.integers(0, args.users, args.rows, dtype=np.int64)
    x = gen.exponential(20.0, args.rows)
    x[gen.random(args.rows) < 0.01] = np.nan
    names = ["np.bincount", "dpalg numpy", "polars"]
    backends: list[Reductions] = [NumpyReductions(as_dataset({"id": ids, "x": x})), as_reductions(as_dataset(pl.DataFrame({"id": ids, "x": x})))]

    session = None if args.no_spark else _spark_session(args.shuffle_partitions)
    with tempfile.TemporaryDirectory() as tmp:
        if session is not None:
            path = os.path.join(tmp, "data.parquet")
            pl.DataFrame({"id": ids, "x": x}).write_parquet(path)
            frame = session.read.parquet(path).persist()
            t0 = time.perf_counter()
            frame.count()  # fills the cache
            print(f"Spark: Parquet read and cached in {time.perf_counter() - t0:.1f} s (not timed)")
            backends.append(as_reductions(as_dataset(frame)))
            names.append("Spark local[2]")

        print()
        print("| question | " + " | ".join(names) + " | " + " | ".join(f"{n} / bincount" for n in names[1:]) + " | polars / dpalg numpy |")
        print("| --- " * (2 * len(names) + 1) + "|")
        for label, lower, upper, k in QUESTIONS:

            def ask(r: Reductions, lower: float | None = lower, upper: float | None = upper, k: int = k) -> object:
                return r.per_unit_sums("id", "x", lower, upper, k)

            want = np.asarray(ask(backends[0]))
            for name, backend in zip(names[2:], backends[1:]):  # the warm-up call, checked bit for bit
                got = np.asarray(ask(backend))
                assert got.tobytes() == want.tobytes(), f"{label}: {name} differs from numpy"
            calls: list[Callable[[], object]] = [lambda: np.bincount(ids, weights=x, minlength=args.users)]
            calls += [lambda b=b: ask(b) for b in backends]  # type: ignore[misc]
            times = interleaved_medians(calls, args.repeat)
            base = times[0]
            cells = " | ".join(f"{t * 1e3:.0f} ms" for t in times)
            ratios = " | ".join(f"{t / base:.1f}x" for t in times[1:])
            print(f"| {label} | {cells} | {ratios} | {times[2] / times[1]:.2f}x |", flush=True)
        if session is not None:
            frame.unpersist()
            session.stop()
    print(f"\nload average {os.getloadavg()[0]:.2f} at end; goals: Spark <= 25x np.bincount (issue 17), polars <= 2x numpy")


if __name__ == "__main__":
    main()
