"""Benchmark: a per-user sum with no known bound, ``AutoClipSum`` against OpenDP (private quantile, then a clamped sum).

The job: ``Σ_u T_u`` over users with unbounded contributions, ε = 1, user-level
add/remove. Each method is given the same public upper bound U on a user's total
and chooses the clip privately:

* **dpalg** ``AutoClipSum(Query.sum(col, user=uid), epsilon=1, upper_limit=U)`` with
  its defaults (the rule in ``dpalg/mechanisms/auto_clip/_auto_clip.py``), for U =
  10^6 and the default U = 2**30;
* **dpalg, earlier rule**: the rule before the monotone score, reimplemented here
  on the node's own exact pieces (its totals, clipped sum and samplers): two-sided
  score ``|#{T_u > C} − r| + (2/ε₁)·(doublings above the smallest)`` sampled at
  rate ε₁/2, one candidate per doubling, 32 doublings, ε₁ = ε/4;
* **OpenDP** (``make_private_quantile`` on the vector of per-user totals over public
  candidates, either dpalg's default grid ``U·2^(−j/4)`` or 1,001 evenly spaced
  points of ``[0, U]``; then ``make_clamp(0, C) >> make_sum >> make_laplace``), for
  every quantile α in ``ALPHAS`` and quantile share of ε in ``SHARES``, and a plain
  clamp at U with all of ε; the table shows the best of these configurations in
  hindsight (generous to OpenDP), and ``--all`` prints every one.

Three public bounds U for the baseball data: the power of two just above the
largest total (a bound someone happened to know; "tight"), 10^6, and dpalg's
default 2**30; U = 10^6 for the synthetic shapes.

Data: the R ``plyr::baseball`` data (``--csv PATH``; the Rdatasets CSV, columns
id, hr, ...), home runs summed per player; without ``--csv`` a synthetic stand-in
(1,228 users, totals ⌊10·Pareto(1.5)⌋) is used and the table says so. Synthetic
shapes, one row per user: Pareto(1.2) and lognormal(3, 1.5) (heavy tails), uniform
[0, 100] (light tail), 3,000 users each.

Each figure is the mean absolute error over ``--releases`` seeded releases (seeds
0, 1, ...; dpalg draws exact noise from ``SeededRandomness(seed)``, OpenDP from its
own secure source), with its standard error. The load average is printed at the
start and the end (the machine is shared; errors do not depend on it).

Run: ``python -m benchmarks.bench_auto_clip [--csv baseball.csv] [--releases 200] [--all]``
(OpenDP is optional: ``pip install opendp``).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks._common import peer
from dpalg import Query
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms import AutoClipSum
from dpalg.noise import AbstractRandomness, SeededRandomness, discrete_laplace, sample_exp_weights

EPSILON = Fraction(1)
ALPHAS = (0.99, 0.995, 0.999)  # 0.95 and a share of 0.5 were worse everywhere in a first sweep
SHARES = (0.1, 0.25)
GRIDS = ("geometric", "linear")


def _load(csv: str | None) -> tuple[str, npt.NDArray[Any], npt.NDArray[np.float64]]:
    """``(name, user ids, values)`` of the baseball rows, or of the synthetic stand-in."""
    if csv is not None:
        import csv as csv_module

        with open(csv, newline="") as handle:
            rows = list(csv_module.DictReader(handle))
        ids = np.array([r["id"] for r in rows])
        hr = np.array([float(r["hr"]) if r["hr"] not in ("", "NA") else math.nan for r in rows])
        return "baseball hr per player", ids, hr
    gen = np.random.default_rng(7)  # synthetic stand-in, one row per user
    return "SYNTHETIC stand-in (no --csv)", np.arange(1228), np.floor(10 * gen.pareto(1.5, 1228))


def _synthetic() -> list[tuple[str, npt.NDArray[Any], npt.NDArray[np.float64]]]:
    gen = np.random.default_rng(1)
    n = 3000
    return [
        ("Pareto(1.2), 1 row/user", np.arange(n), np.floor(10 * gen.pareto(1.2, n))),
        ("lognormal(3, 1.5), 1 row/user", np.arange(n), np.exp(gen.normal(3, 1.5, n))),
        ("uniform [0, 100], 1 row/user", np.arange(n), gen.uniform(0, 100, n)),
    ]


def _earlier_rule(node: AutoClipSum, data: Dataset, rng: AbstractRandomness) -> float:
    """The rule before the monotone score (module docstring), on ``node``'s exact pieces; ``node`` has one candidate per doubling."""
    assert node.steps_per_doubling == 1
    totals = node.totals(data)
    ordered = np.sort(totals)
    above = ordered.size - np.searchsorted(ordered, np.array(node.levels(), dtype=np.int64), side="right")
    r = node.target()
    scores = [abs(Fraction(int(a)) - r) + 2 / node.epsilon_clip * (node.grid_steps - j) for j, a in enumerate(above.tolist())]
    clip = node.candidates()[sample_exp_weights(scores, node.epsilon_clip / 2, rng=rng)]
    value, sensitivity, k2 = node.clipped_sum(totals, clip)
    noisy = value + int(discrete_laplace(Fraction(max(sensitivity, 1)) / node.epsilon_sum, size=1, rng=rng)[0])
    return float(Fraction(noisy) * Fraction(2) ** k2)


def _dpalg(node: AutoClipSum, data: Dataset) -> Callable[[int], float]:
    def run(seed: int) -> float:
        out = node.release(data, SeededRandomness(seed))
        assert isinstance(out, dict)
        return float(out["sum"])

    return run


def _opendp_sum(dp: Any, space: tuple[Any, Any], clip: float, eps: float) -> Any:
    """OpenDP's clamped Laplace sum at ``eps`` (its float-sum sensitivity is a little above ``clip``: the scale is checked by its map)."""
    pre = dp.t.make_clamp(*space, bounds=(0.0, clip)) >> dp.t.then_sum()
    meas = pre >> dp.m.then_laplace(clip / eps * 1.000001)
    if meas.map(1) <= eps:
        return meas
    return dp.binary_search_chain(lambda s: pre >> dp.m.then_laplace(s), d_in=1, d_out=eps)


def _opendp(dp: Any, totals: npt.NDArray[np.float64], upper: float, grid: str, alpha: float, share: float) -> Callable[[int], float]:
    """OpenDP: the private α-quantile of the per-user totals over public candidates, then a clamped Laplace sum.

    ``grid``: ``"geometric"`` (dpalg's default grid ``U·2^(−j/4)``, j ≤ 160), ``"linear"``
    (1,001 points of ``[0, U]``), or ``"none"`` (no quantile: clamp at U with all of ε).
    """
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    data = totals.tolist()
    if grid == "none":
        fixed = _opendp_sum(dp, space, upper, float(EPSILON))
        return lambda _seed: float(fixed(data))
    if grid == "geometric":
        candidates = [upper * 2.0 ** (-j / 4) for j in range(160, -1, -1)]  # increasing
    else:
        candidates = [upper * i / 1000 for i in range(1001)]
    eps1, eps2 = share * float(EPSILON), (1 - share) * float(EPSILON)
    quantile = dp.binary_search_chain(
        lambda s: dp.m.make_private_quantile(*space, dp.max_divergence(), candidates=candidates, alpha=alpha, scale=s), d_in=1, d_out=eps1
    )
    sums: dict[float, Any] = {}

    def run(_seed: int) -> float:
        clip = float(quantile(data))
        if clip not in sums:
            sums[clip] = _opendp_sum(dp, space, clip, eps2)
        return float(sums[clip](data))

    return run


def _mae(run: Callable[[int], float], truth: float, releases: int) -> tuple[float, float]:
    errors = np.array([abs(run(seed) - truth) for seed in range(releases)])
    return float(errors.mean()), float(errors.std(ddof=1) / math.sqrt(releases))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default=None, help="the Rdatasets plyr/baseball.csv")
    parser.add_argument("--releases", type=int, default=200)
    parser.add_argument("--all", action="store_true", help="print every OpenDP configuration")
    args = parser.parse_args()
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    dp, dp_name = peer("opendp.prelude", "opendp")
    if dp is not None:
        dp.enable_features("contrib")
    print(f"OpenDP: {dp_name}; eps = {EPSILON}; {args.releases} seeded releases per figure; mean abs error (standard error)")
    header = f"{'data':34s} {'U':>7s} {'dpalg now':>16s} {'dpalg earlier':>16s} {'OpenDP best':>16s}  OpenDP config"
    print(header)
    print("-" * len(header))
    for index, (name, ids, values) in enumerate([_load(args.csv), *_synthetic()]):
        data = as_dataset({"uid": ids, "x": values})
        keep = ~np.isnan(values)
        _, codes = np.unique(ids[keep], return_inverse=True)
        totals = np.bincount(codes, weights=values[keep]).astype(np.float64)
        truth = float(totals.sum())
        tight = 2 ** math.ceil(math.log2(max(float(totals.max()), 1.0)))  # "a tight public bound": the power of two above the largest total
        for upper in (tight, 10**6, 2**30) if index == 0 else (10**6,):  # the synthetic shapes at one bound (run time)
            query = Query.sum("x", user="uid")
            now = _mae(_dpalg(AutoClipSum(query, epsilon=EPSILON, upper_limit=upper), data), truth, args.releases)
            earlier_node = AutoClipSum(query, epsilon=EPSILON, upper_limit=upper, grid_steps=32, steps_per_doubling=1)
            earlier = _mae(lambda seed: _earlier_rule(earlier_node, data, SeededRandomness(seed)), truth, args.releases)
            best: tuple[float, float, str] | None = None
            if dp is not None:
                configs = [("none", 1.0, 0.0)] + [(g, a, s) for g in GRIDS for a in ALPHAS for s in SHARES]
                for grid, alpha, share in configs:
                    mae = _mae(_opendp(dp, totals, float(upper), grid, alpha, share), truth, args.releases)
                    config = "clamp at U, no quantile" if grid == "none" else f"{grid} quantile alpha={alpha}, eps_q={share}"
                    if args.all:
                        print(f"    OpenDP {name}, U={upper:.3g}, {config}: {mae[0]:,.0f} ({mae[1]:,.0f})")
                    if best is None or mae[0] < best[0]:
                        best = (mae[0], mae[1], config)
            peer_text = "n/a" if best is None else f"{best[0]:,.0f} ({best[1]:,.0f})"
            print(
                f"{name:34s} {upper:>7.3g} {now[0]:>9,.0f} ({now[1]:>4,.0f}) {earlier[0]:>9,.0f} ({earlier[1]:>4,.0f}) "
                f"{peer_text:>16s}  {'' if best is None else best[2]}"
            )
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
