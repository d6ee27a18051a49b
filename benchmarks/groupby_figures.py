"""The figures of ``docs/groupby.md``: the keep-probability curve, and per-group medians by smooth sensitivity and the exponential mechanism.

Run: ``python benchmarks/groupby_figures.py [--reps 50]`` (needs matplotlib, the
``plots`` extra). Writes ``docs/figures/groupby_keep_probability.png`` and
``docs/figures/groupby_median.png`` and prints the median table the page shows.

* Keep probability: π(n) of the optimal partition selection (DVGM 2022, Thm 1) at
  ε = 1, δ = 1e-5 for a user holding at most m = 1 or m = 3 keys, from the exact
  integer bounds :func:`dpalg.noise.keep_probability_bounds` (``max_partitions=m``;
  the float closed form ``dpalg.noise._partition.keep_probability_float`` for m = 1 is
  drawn on top as a check).
* Medians: the synthetic regional incomes of ``bench_groupby.py`` (10 regions of
  25 to 30 000 rows, rounded to 100, one region a spike of equal values), one
  ``GroupBy`` per mechanism, ε = 1 per group (row level), ``--reps`` releases.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from benchmarks.bench_groupby import regional_incomes

OUT = Path(__file__).resolve().parents[1] / "docs" / "figures"


def keep_probability_figure() -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpalg.noise import certain_keep_count, keep_probability_bounds
    from dpalg.noise._partition import keep_probability_float  # the float closed form, a plotting oracle (not exported)

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for m, style in ((1, "-"), (3, "--")):
        top = certain_keep_count(1, "1e-5", max_partitions=m)
        ns = list(range(0, top + 4))
        pi = [keep_probability_bounds(n, 1, "1e-5", max_partitions=m)[0] / 2**64 for n in ns]
        ax.plot(ns, pi, style, marker="o", markersize=3, label=f"m = {m} (certain from {top} users)")
    ns = list(range(0, 27))
    ax.plot(ns, [keep_probability_float(n, 1.0, 1e-5) for n in ns], ":", color="black", linewidth=1, label="closed form, m = 1 (float)")
    p12 = keep_probability_bounds(12, 1, "1e-5")[0] / 2**64
    ax.annotate(f"π(12) = {p12:.3f}", (12, p12), textcoords="offset points", xytext=(10, -14))
    ax.set_xlabel("distinct users holding the key (after the bound of m keys per user)")
    ax.set_ylabel("probability the key is released")
    ax.set_title("PartitionSelection(epsilon=1, delta=1e-5)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = OUT / "groupby_keep_probability.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def median_figure(reps: int) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpalg import Clip, GroupBy, KeySet, Query, Session
    from dpalg.mechanisms import ExponentialQuantile, SmoothBound

    data = regional_incomes()
    keys = sorted(set(data["region"].tolist()), key=lambda k: int(k[1:]))
    sizes = {k: int(np.sum(data["region"] == k)) for k in keys}
    want = {k: float(np.median(data["x"][data["region"] == k])) for k in keys}
    query = Query.median("x") | Clip(0, 500_000)
    candidates = [100.0 * i for i in range(5001)]
    nodes = {
        "SmoothBound (ε=1, δ=1e-6)": SmoothBound(query, epsilon=1, delta="1e-6"),
        "ExponentialQuantile (ε=1, multiples of 100)": ExponentialQuantile(query, epsilon=1, candidates=candidates),
    }
    errors: dict[str, dict[str, float]] = {}
    for name, node in nodes.items():
        plan = GroupBy("region", keys=KeySet(keys), aggregates={"median": node})
        runs = [Session(plan.cost()).run(plan, data).value for _ in range(reps)]
        errors[name] = {k: float(np.mean([abs(float(r[k]["median"]) - want[k]) for r in runs])) for k in keys}
    print(f"| region | rows | true median | {' | '.join(f'MAE {n}' for n in nodes)} |")
    print("| --- | --- | --- |" + " --- |" * len(nodes))
    for k in sorted(keys, key=lambda k: sizes[k]):
        print(f"| {k} | {sizes[k]:,} | {want[k]:,.0f} | " + " | ".join(f"{errors[n][k]:,.4g}" for n in nodes) + " |")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    order = sorted(keys, key=lambda k: sizes[k])
    for name, marker in zip(nodes, ("o", "s")):
        ax.loglog([sizes[k] for k in order], [max(errors[name][k], 1e-2) for k in order], marker=marker, label=name)
    spike = next(k for k in keys if k == "r8")
    ax.annotate("60% ties", (sizes[spike], max(errors[next(iter(nodes))][spike], 1e-2)), textcoords="offset points", xytext=(6, 6), fontsize=8)
    ax.set_xlabel("rows in the group")
    ax.set_ylabel(f"MAE, {reps} releases (0 at 0.01)")
    ax.set_title("Per-group median of incomes, clip [0, 500 000]")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = OUT / "groupby_median.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"load average: {os.getloadavg()}")
    print(keep_probability_figure())
    print(median_figure(args.reps))
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
