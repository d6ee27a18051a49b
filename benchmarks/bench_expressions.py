"""Benchmark: a query's row steps (a derived column and a filter) against the same computation written by hand.

``Query.sum(col("price") * (1 - col("discount"))) | Where((col("ship") >= "1994-01-01") & (col("qty") < 25))``
on N rows: the time of the row steps alone (``apply_steps`` plus reading the derived column), next to
the same filter and product written directly in numpy (boolean mask, ``*``) and in polars
(``filter``/``select``), in the same run, with the load average. dpalg's evaluation also maps
non-finite values to missing and normalises -0.0 after every step (the data policy), so it does
more work than the hand-written line.

Run: ``python -m benchmarks.bench_expressions [--rows N] [--repeats R]``
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from benchmarks._common import parse_arguments
from dpalg import col
from dpalg.data import as_dataset
from dpalg.data._transform import RowSteps, apply_steps


def _best(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    args = parse_arguments(rows=2_000_000, repeats=3)
    gen = np.random.default_rng(0)  # synthetic data only
    n = args.rows
    price = gen.uniform(1, 1000, n)
    discount = gen.uniform(0, 0.1, n)
    qty = gen.integers(1, 50, n).astype(np.float64)
    days = gen.integers(0, 2500, n)
    ship = np.array([f"199{2 + d // 365}-{1 + (d % 365) // 31:02d}-{1 + d % 28:02d}" for d in days])
    columns = {"price": price, "discount": discount, "qty": qty, "ship": ship}
    steps = RowSteps((("v", col("price") * (1 - col("discount"))),), (col("ship") >= "1994-01-01") & (col("qty") < 25))

    def dpalg_numpy() -> object:
        return apply_steps(as_dataset(columns), steps, []).numeric("v")

    def numpy_direct() -> object:
        mask = (ship >= "1994-01-01") & (qty < 25)
        return price[mask] * (1 - discount[mask])

    print(f"{n:,} rows; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    t_d, t_n = _best(dpalg_numpy, args.repeats), _best(numpy_direct, args.repeats)
    print(f"numpy:  dpalg {t_d:.3f} s, by hand {t_n:.3f} s, ratio {t_d / t_n:.2f}")
    assert np.array_equal(dpalg_numpy(), numpy_direct())  # type: ignore[arg-type]
    try:
        import polars as pl
    except ImportError:
        print("polars not installed: skipped")
        return
    frame = pl.DataFrame(columns)

    def dpalg_polars() -> object:
        return apply_steps(as_dataset(frame), steps, []).numeric("v")

    def polars_direct() -> object:
        out = frame.lazy().filter((pl.col("ship") >= "1994-01-01") & (pl.col("qty") < 25))
        return out.select(pl.col("price") * (1 - pl.col("discount"))).collect().to_series().to_numpy()

    t_dp, t_p = _best(dpalg_polars, args.repeats), _best(polars_direct, args.repeats)
    print(f"polars: dpalg {t_dp:.3f} s, by hand {t_p:.3f} s, ratio {t_dp / t_p:.2f}")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
