"""Private median error versus ε: smooth sensitivity against the exponential mechanism.

Two data sets of n = 10,000 rows: continuous incomes (lognormal, clipped to
[0, 500,000]) and integer ages (many ties, clipped to [0, 100]). For each ε:

* ``ExponentialQuantile`` -- exponential mechanism over the 2^20 + 1 grid points
  of the clip range, pure ε-DP (McSherry–Talwar);
* ``SmoothBound`` -- the median plus Laplace noise of scale 2S/ε, S the β-smooth
  sensitivity (NRS07), (ε, δ)-DP with δ = 10⁻⁶;
* ``SmoothBoundCauchy`` -- the same with Cauchy noise, pure ε-DP (NRS07 constants).

Neighbouring relation: add/remove of one row for all three (dpalg refuses row
substitution for a column query: a substituted row can turn a value into a
missing one). The exact add/remove smooth sensitivity is slow for small β (about
1 s per release at ε = 0.05 on 10,000 rows), so the sweep starts at ε = 0.2 to
stay under a minute; below that the exponential mechanism is far ahead anyway.

Run: ``python examples/median_vs_epsilon.py [--small] [--out DIR]`` (or set
``DPALG_EXAMPLES_SMALL=1``). Writes ``median_vs_epsilon.png`` and
``median_vs_epsilon.csv`` into ``examples/out/`` (git-ignored). Noise: exact
discrete noise with the seeded generator (reproducible, NOT secure: examples only).
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from dpalg import Clip, Query  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.graph import AbstractPrimitive  # noqa: E402
from dpalg.measures import ApproxDP, PureDP  # noqa: E402
from dpalg.mechanisms import ExponentialQuantile, SmoothBound, SmoothBoundCauchy  # noqa: E402
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import label_panel, number, parse_arguments, save, write_csv  # noqa: E402

N = 10_000
DELTA = "1e-6"
RELATION = "add_remove"


def datasets(seed: int) -> dict[str, tuple[npt.NDArray[np.float64], int]]:
    """name -> (values, upper bound of the clip range; the lower bound is 0)."""
    gen = np.random.default_rng(seed)  # synthetic populations only, not privacy noise
    incomes = np.clip(gen.lognormal(10.5, 0.7, N), 0, 500_000)
    ages = np.clip(np.round(17 + gen.gamma(2.52, 8.56, size=N)), 0, 100)
    return {"incomes (continuous), clip [0, 500000]": (incomes, 500_000), "ages (integers, ties), clip [0, 100]": (ages, 100)}


def rows_truth(rows: list[dict[str, str | float]], label: str) -> float:
    return float(next(r["truth"] for r in rows if r["data"] == label))


def main() -> None:
    args = parse_arguments(__doc__, "fewer epsilons and trials (for the test suite)")
    small = args.small
    trials = 10 if small else 40
    epsilons = ["0.5", "2"] if small else ["0.2", "0.5", "1", "2", "5"]
    start = time.time()
    rng = SeededRandomness(20240603)

    rows: list[dict[str, str | float]] = []
    for label, (values, upper) in datasets(seed=3).items():
        ds = as_dataset({"x": values})
        query = Query.median("x") | Clip(0, upper)
        truth = float(np.sort(values)[(N + 1) // 2 - 1])  # dpalg's median: the lower median
        for eps in epsilons:
            nodes: list[tuple[str, AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP]]] = [
                ("ExponentialQuantile (eps-DP)", ExponentialQuantile(query, epsilon=eps, relation=RELATION)),
                (f"SmoothBound, Laplace ((eps, {DELTA})-DP)", SmoothBound(query, epsilon=eps, delta=DELTA, relation=RELATION)),
                ("SmoothBoundCauchy (eps-DP)", SmoothBoundCauchy(query, epsilon=eps, relation=RELATION)),
            ]
            for name, node in nodes:
                outs = np.array([number(node.release(ds, rng)) for _ in range(trials)])
                err = np.abs(outs - truth)
                rows.append({"data": label, "epsilon": eps, "mechanism": name, "mae": float(err.mean()),
                             "median_ae": float(np.median(err)), "truth": truth})  # fmt: skip

    write_csv(args.out / "median_vs_epsilon.csv", rows, ["data", "epsilon", "mechanism", "mae", "median_ae", "truth"])

    labels = list(dict.fromkeys(str(r["data"]) for r in rows))
    names = list(dict.fromkeys(str(r["mechanism"]) for r in rows))
    fig, axes = plt.subplots(1, len(labels), figsize=(5.8 * len(labels), 4.3), squeeze=False)
    floor = 1e-9  # an error of exactly 0 is drawn at the floor of the log axis
    for ax, label in zip(axes[0], labels):
        print(f"\n{label}: median absolute error of the median over {trials} releases (true median {rows_truth(rows, label):g})")
        print(f"  {'eps':>5s} " + " ".join(f"{n[:28]:>29s}" for n in names))
        for eps in epsilons:
            cells = {str(r["mechanism"]): float(r["median_ae"]) for r in rows if r["data"] == label and r["epsilon"] == eps}
            print(f"  {eps:>5s} " + " ".join(f"{cells[n]:29.4g}" for n in names))
        for name in names:
            pts = [(float(r["epsilon"]), max(float(r["median_ae"]), floor)) for r in rows if r["data"] == label and r["mechanism"] == name]
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        label_panel(ax, f"{label}, n = {N:,}, add/remove", "epsilon", f"median |error| of the median ({trials} releases)", title_size=9)
    save(fig, args.out / "median_vs_epsilon.png")

    print("\nConclusion (by median |error|; Cauchy noise has no mean, so mean errors are not comparable):")
    for label in labels:
        wins = []
        for eps in epsilons:
            cells = {str(r["mechanism"]): float(r["median_ae"]) for r in rows if r["data"] == label and r["epsilon"] == eps}
            wins.append(f"eps={eps}: {min(cells, key=lambda n: cells[n]).split(' (')[0]}")
        print(f"  {label}: best per eps -> " + "; ".join(wins))
    print(f"Wrote {args.out / 'median_vs_epsilon.png'} and .csv in {time.time() - start:.1f} s.")


if __name__ == "__main__":
    main()
