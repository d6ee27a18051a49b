"""A user-defined statistic released three ways: the mean of log(1 + income).

Run: ``python examples/user_statistic.py [--small] [--out DIR]``. Writes
``user_statistic.md`` (the tables) and ``user_statistic.png`` (median error vs
ε; needs matplotlib, the ``plots`` extra, else skipped with a note) into
``examples/out/`` (git-ignored). Full: n = 200,000 rows, 50 releases per cell,
about 7 minutes on two shared cores (sample-and-aggregate with 20,000 blocks dominates);
``--small``: 20,000 rows, 5 releases per cell, a few seconds.

dpalg has no sensitivity for a function it does not know, so the user states a
bound F(k, n) on its local sensitivity at distance k (docs/mechanisms/ptr.md,
"User-defined statistics"):

* the statistic is f(x) = mean(log(1 + x)) over incomes clipped to [0, U]; on
  empty data it is the public fallback 0 = log(1 + 0);
* with R = log(1 + U), one added or removed row moves the mean by at most
  R / max(n, 1), and a dataset at distance k has at least n − k rows, so
  LS_k(x) <= R / max(n − k, 1) (proof in tests/mechanisms/test_user_statistic.py);
  ``+ log(1 + upper)/2**45`` covers the float rounding of np.mean;
* dpalg proves F non-negative, non-decreasing in k and the PTR neighbour
  condition (sympy), tries the function on public values, and tries to refute F
  by brute force on every small public dataset; half the formula is refuted.

The three routes, compared at equal total privacy cost ε (δ = 1e-7 for the
approximate ones):

* PTR, ``ProposeTest(LocalSensAtDistance(query, F), bound=b, epsilon_test=ε/2,
  epsilon_release=ε/2, delta)``: (ε, δ). The bound is proposed from the public
  design size n̂ (the size the analyst asked for, not read from the data) with a
  10% margin, b = R/(0.9 n̂) = F(0, 0.9 n̂): the test passes while the data are
  more than n − 0.9 n̂ rows (far beyond the distance cap) from a dataset whose
  promised LS exceeds b, so ⊥ is rare; the error scales linearly with b.
* smooth sensitivity, ``SmoothBound(LocalSensAtDistance(query, F), epsilon=ε,
  delta)``: (ε, δ), Laplace noise S/α with α = ε/2 and S the β-smooth envelope of
  F(0, ·), which is F(0, n) itself at these n; and ``SmoothBoundCauchy(…, epsilon=ε)``,
  pure ε, heavier-tailed, as a pure-DP reference.
* sample-and-aggregate, ``SampleAggregateMean(query, blocks=m, lower=0,
  upper=R, epsilon=ε)``: pure ε, no promise needed. The output range [0, R] is
  the image of the public clip [0, U] under log(1 + x), the only range known
  without prior knowledge of the incomes (the other routes use no more); a
  narrower prior range [a, b] would scale the noise (b − a)/(mε) by (b − a)/R.
  Two block counts: m = n̂/100 (about 100 rows a block) and m = n̂/10 (about 10:
  less noise, but the mean of the block means differs more from the full-data
  mean, and a block is empty with probability about e^-10 and then outputs the
  midpoint R/2).

The incomes are synthetic (log-normal). Every release uses the seeded generator
``SeededRandomness``: reproducible, NOT secure. The library warns about that with
``InsecureRandomnessWarning`` on every release; the example silences that one
warning inside ``warnings.catch_warnings()`` around its release loop only.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dpalg import BOTTOM, Clip, InsecureRandomnessWarning, InvalidArgument, Query
from dpalg.data import Dataset, as_dataset
from dpalg.graph import AbstractPrimitive
from dpalg.measures import ApproxDP, PureDP
from dpalg.mechanisms import (
    LocalSensAtDistance,
    ProposeTest,
    SampleAggregateMean,
    SmoothBound,
    SmoothBoundCauchy,
)
from dpalg.noise import SeededRandomness
from _support import parse_arguments

UPPER = 1_000_000
FORMULA = "log(1 + upper)/Max(n - k, 1) + log(1 + upper)/2**45"
DELTA = "1e-7"
EPSILONS = ("0.1", "0.25", "0.5", "1", "2")  # total ε of every route
SEED = 20251125

Node = AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP]


def log1p_mean(x: npt.NDArray[np.float64]) -> float:
    """The statistic: the mean of log(1 + x) over the clipped incomes."""
    return float(np.mean(np.log1p(x)))


@dataclass
class Cell:
    """The releases of one route at one total ε."""

    route: str
    epsilon: str
    cost: str
    releases: int
    bottoms: int
    errors: npt.NDArray[np.float64]  # absolute errors of the non-⊥ releases
    seconds: float  # median wall time of one release

    def median(self) -> float:
        return float(np.median(self.errors)) if self.errors.size else math.nan

    def p90(self) -> float:
        return float(np.quantile(self.errors, 0.9)) if self.errors.size else math.nan


def _routes(target: LocalSensAtDistance, query: Query, eps: str, n_public: int) -> dict[str, Node]:
    """The five nodes at total ε = ``eps``; ``n_public`` is the public design size."""
    half = str(float(eps) / 2)
    r = math.log1p(UPPER)
    upper = f"{math.ceil(r * 10**4) / 10**4}"  # R rounded up: every block output lies in [0, upper]
    return {
        "PTR, b = R/(0.9 n̂)": ProposeTest(
            target, bound=f"{r / (0.9 * n_public):.6g}", epsilon_test=half, epsilon_release=half, delta=DELTA
        ),
        "SmoothBound (Laplace)": SmoothBound(target, epsilon=eps, delta=DELTA),
        "SmoothBoundCauchy (pure)": SmoothBoundCauchy(target, epsilon=eps),
        f"SampleAggregateMean, m = {n_public // 100:,}": SampleAggregateMean(
            query, blocks=n_public // 100, lower=0, upper=upper, epsilon=eps
        ),
        f"SampleAggregateMean, m = {n_public // 10:,}": SampleAggregateMean(
            query, blocks=n_public // 10, lower=0, upper=upper, epsilon=eps
        ),
    }


def _measure(route: str, eps: str, node: Node, data: Dataset, truth: float, releases: int, seed: int) -> Cell:
    rng = SeededRandomness(seed)
    errors: list[float] = []
    times: list[float] = []
    bottoms = 0
    for _ in range(releases):
        t0 = time.perf_counter()
        out = node.release(data, rng)
        times.append(time.perf_counter() - t0)
        if out is BOTTOM:
            bottoms += 1
        else:
            errors.append(abs(float(out) - truth))  # type: ignore[arg-type]  # a float when not ⊥
    return Cell(route, eps, str(node.cost()), releases, bottoms, np.array(errors), float(np.median(times)))


def _plot(cells: list[Cell], path: Path, title: str) -> bool:
    """Median absolute error vs total ε, log-log, one line per route; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'dpalg[plots]'): no plot")
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for route in dict.fromkeys(c.route for c in cells):
        mine = [c for c in cells if c.route == route and c.errors.size]
        ax.plot([float(c.epsilon) for c in mine], [c.median() for c in mine], marker="o", label=route)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("total ε (δ = 1e-7 for PTR and SmoothBound)")
    ax.set_ylabel("median absolute error")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main() -> None:
    args = parse_arguments(__doc__, "few rows and releases (a smoke test)")
    n_rows, releases = (20_000, 5) if args.small else (200_000, 50)
    start = time.time()
    incomes = np.random.default_rng(3).lognormal(mean=10.5, sigma=1.0, size=n_rows)
    data = as_dataset({"income": incomes})
    query = Query.function(log1p_mean, column="income") | Clip(0, UPPER)
    truth = log1p_mean(np.sort(np.clip(incomes, 0, UPPER)))  # the statistic itself, for the errors

    refuted = ""
    try:  # a formula below the true LS_k is refused, with a public counterexample
        LocalSensAtDistance(query, "log(1 + upper)/(2*Max(n - k, 1))")
    except InvalidArgument as exc:
        refuted = str(exc)

    target = LocalSensAtDistance(query, FORMULA)
    cells: list[Cell] = []
    with warnings.catch_warnings():  # seeded releases: reproducible, NOT secure (see the docstring)
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        for i, eps in enumerate(EPSILONS):
            for j, (route, node) in enumerate(_routes(target, query, eps, n_rows).items()):
                cells.append(_measure(route, eps, node, data, truth, releases, SEED + 100 * i + j))

    title = f"Mean of log(1 + income), n = {n_rows:,}, clip [0, {UPPER:,}], {releases} releases a point"
    routes = list(dict.fromkeys(c.route for c in cells))
    lines = [f"# {title}", "", f"True value {truth:.5f}; R = log(1 + {UPPER:,}) = {math.log1p(UPPER):.4f}.", ""]
    lines += ["Median absolute error (90th percentile) by total ε:", ""]
    lines += ["| total ε | " + " | ".join(routes) + " |", "| ---: |" + " ---: |" * len(routes)]
    for eps in EPSILONS:
        row = [f"{c.median():.2e} ({c.p90():.2e})" for c in cells if c.epsilon == eps]
        lines.append(f"| {eps} | " + " | ".join(row) + " |")
    lines += ["", "Every cell:", ""]
    lines += ["| route | total ε | cost | releases | ⊥ | median abs error | 90th pct abs error | s / release |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for c in cells:
        lines.append(
            f"| {c.route} | {c.epsilon} | {c.cost} | {c.releases} | {c.bottoms} | {c.median():.2e} | {c.p90():.2e} "
            f"| {c.seconds:.3f} |"
        )
    lines += ["", "Certificate notes of the user formula (LocalSensAtDistance):", ""]
    lines += [f"* {note}" for note in target.notes()]
    lines += ["", "Half the formula, at construction:", "", f"    {refuted}"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "user_statistic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    plotted = _plot(cells, args.out / "user_statistic.png", title)
    written = "user_statistic.md" + (" and user_statistic.png" if plotted else "")
    print(f"\nwrote {written} into {args.out} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
