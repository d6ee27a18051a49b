"""A user-defined statistic by propose-test-release: the mean of log(1 + income).

Run: ``python examples/user_statistic.py [--small] [--out DIR]``. Writes
``user_statistic.md`` into ``examples/out/`` (git-ignored). A few seconds.

dpalg has no sensitivity for a function it does not know, so the user states a
bound F(k, n) on its local sensitivity at distance k and dpalg releases it by
PTR on that *promise* (docs/mechanisms/ptr.md, "User-defined statistics"):

* the statistic is f(x) = mean(log(1 + x)) over incomes clipped to [0, U]; on
  empty data it is the public fallback 0 = log(1 + 0);
* with R = log(1 + U), one added or removed row moves the mean by at most
  R / max(n, 1), and a dataset at distance k has at least n − k rows, so
  LS_k(x) <= R / max(n − k, 1) (proof in tests/mechanisms/test_user_statistic.py);
  ``+ log(1 + upper)/2**45`` covers the float rounding of np.mean;
* dpalg proves F non-negative, non-decreasing in k and the PTR neighbour
  condition (sympy), tries the function on public values, and tries to refute F
  by brute force on every small public dataset; half the formula is refuted.

The incomes are synthetic (log-normal); releases use the seeded generator
(reproducible, NOT secure). Costs: (2ε, δ) per release.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dpalg import BOTTOM, Clip, InvalidArgument, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import LocalSensAtDistance, ProposeTest
from dpalg.noise import SeededRandomness

UPPER = 1_000_000
FORMULA = "log(1 + upper)/Max(n - k, 1) + log(1 + upper)/2**45"


def log1p_mean(x: npt.NDArray[np.float64]) -> float:
    """The statistic: the mean of log(1 + x) over the clipped incomes."""
    return float(np.mean(np.log1p(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="few rows and releases (a smoke test)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    n_rows, releases = (20_000, 5) if args.small else (200_000, 50)
    start = time.time()
    incomes = np.random.default_rng(3).lognormal(mean=10.5, sigma=1.0, size=n_rows)
    data = as_dataset({"income": incomes})
    query = Query.function(log1p_mean, column="income") | Clip(0, UPPER)
    truth = log1p_mean(np.sort(np.clip(incomes, 0, UPPER)))  # the statistic itself (user code runs in ProposeTest only)

    refuted = ""
    try:  # a formula below the true LS_k is refused, with a public counterexample
        LocalSensAtDistance(query, "log(1 + upper)/(2*Max(n - k, 1))")
    except InvalidArgument as exc:
        refuted = str(exc)

    bound = 2 * np.log1p(UPPER) / n_rows  # proposed LS bound: passes while n − k > n/2
    target = LocalSensAtDistance(query, FORMULA)
    lines = [f"# Mean of log(1 + income), n = {n_rows:,}, clip [0, {UPPER:,}], true value {truth:.5f}", ""]
    lines += ["| epsilon (each stage) | cost | bound b | releases | ⊥ | median abs error | 90th pct abs error |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    rng = SeededRandomness(20251125)
    for eps in ("0.1", "0.5", "1"):
        node = ProposeTest(target, bound=f"{bound:.3g}", epsilon=eps, delta="1e-7")
        outs = [node.release(data, rng) for _ in range(releases)]
        errors = np.array([abs(float(o) - truth) for o in outs if o is not BOTTOM])  # type: ignore[arg-type]
        bottoms = sum(o is BOTTOM for o in outs)
        med, p90 = (f"{np.median(errors):.2e}", f"{np.quantile(errors, 0.9):.2e}") if errors.size else ("-", "-")
        lines.append(f"| {eps} | {node.cost()} | {float(node.bound):.3g} | {releases} | {bottoms} | {med} | {p90} |")
    lines += ["", "Certificate notes of the release:", ""]
    lines += [f"* {note}" for note in target.notes()]
    lines += ["", "Half the formula, at construction:", "", f"    {refuted}"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "user_statistic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {args.out}/user_statistic.md in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
