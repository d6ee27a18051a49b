"""Benchmark: ``AutoClipSum``'s expected error over the best fixed clip in hindsight, for a grid of its settings, in closed form.

For each distribution of per-user totals and each setting of the clip rule, the
ratio ``E|AutoClipSum − truth| / min_j E|Σ_u min(T_u, 2^j) + Lap(2^j/ε) − truth|``
at ε = 1, with no sampling: ``E|b + Lap(s)| = |b| + s·e^{−|b|/s}`` for a clipped sum
with bias ``b`` and noise scale ``s``, summed over the candidates with the exact
selection probabilities ``∝ exp(−ε₁·score)``. The candidates, the lattice, the
noise scale ``max(Δ, 1)/ε₂`` and its lattice step are the node's own
(:meth:`~dpalg.mechanisms.AutoClipSum.candidates`,
:meth:`~dpalg.mechanisms.AutoClipSum.clipped_sum`); the totals are the node's
(:meth:`~dpalg.mechanisms.AutoClipSum.totals`). The score is recomputed here in
floats for every setting, ``max(#{u : T_u > C_j} − m/ε₂, 0) + (p/ε₁)·(doublings of
C_j above the smallest candidate)``, and checked against the node's
:meth:`~dpalg.mechanisms.AutoClipSum.clip_scores` at the node's own prior. The
closed form is the continuous Laplace's: the discrete Laplace of a release (on a
lattice about 2^-20 of its scale) and the re-rounding of the clipped sum move it by
far under 1%.

The grid: ``clip_share`` (ε₁/ε), the prior ``p`` per doubling (the module constant
``_PRIOR_PER_DOUBLING``: a factor ``e^p`` in the weights per doubling of the clip),
``steps_per_doubling`` and the target multiplier ``m`` (r = m/ε₂; the node's
default is m = 1). ``--below`` adds a variant, ``(1 − μ)·max(#{T_u > C_j} − r, 0) +
μ·#{u : T_u <= C_j/2}`` (a term against clips far above many users). Every such
score is monotone with sensitivity 1 (each user adds ``(1 − μ)·[0, 1] + μ·{0, 1} ⊂
[0, 1]`` to every score, all in the same direction; the prior is public), so every
setting is ε-DP at the node's rate ε₁.

Distributions: the baseball home runs per player (``--csv``, the Rdatasets
``plyr/baseball.csv``; at the power of two above the largest total, 10^6 and 2^30)
or bench_auto_clip's synthetic stand-in; ``bench_auto_clip``'s synthetic Pareto(1.2),
lognormal(3, 1.5) and uniform [0, 100] totals (the same seed), Pareto(2.5) and a
constant 100 (3,000 users each), at U = 10^6; and, with ``--tpch DIR``, the TPC-H
SF 1 per-customer totals of ``bench_tpch``'s Q5, Q12, Q10 and Q18 saved by
``--save-tpch`` as ``DIR/<query>.npy`` (the node's lattice totals at U = 2^30,
the default; computing them takes about a minute, evaluating the grid seconds).

Run: ``python -m benchmarks.bench_auto_clip_grid --csv baseball.csv --tpch /tmp/acstudy``
(first ``--save-tpch --tpch-data /tmp/tpch_sf1 --tpch /tmp/acstudy``); ``--shares``,
``--priors``, ``--steps``, ``--targets`` take comma-separated values (fractions allowed).
"""

from __future__ import annotations

import argparse
import itertools
import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt

from benchmarks.bench_auto_clip import _load, _synthetic
from dpalg import Query
from dpalg.data import as_dataset
from dpalg.mechanisms import AutoClipSum
from dpalg.mechanisms.auto_clip import _auto_clip

EPSILON = Fraction(1)
TPCH = ("Q5", "Q12", "Q10", "Q18")
QUERY = Query.sum("x", user="uid")


@dataclass(frozen=True)
class Totals:
    """One distribution: the node's lattice totals at the public bound ``upper`` (lattice ``2**k``)."""

    name: str
    upper: Fraction
    lattice: npt.NDArray[np.int64]


@dataclass(frozen=True)
class Setting:
    share: Fraction
    prior: Fraction
    steps: int
    target: Fraction  # r = target/ε₂
    below: Fraction = Fraction(0)  # μ, the weight of #{u : T_u <= C/2} (the node: 0)

    def label(self) -> str:
        tail = f" mu {self.below}" if self.below else ""
        return f"share {str(self.share):>4s} prior {str(self.prior):>3s} s {self.steps} r {str(self.target):>3s}/e2{tail}"


def expected_abs_error(bias: npt.NDArray[np.float64] | float, scale: npt.NDArray[np.float64] | float) -> npt.NDArray[np.float64]:
    """``E|b + L|`` for ``L ~ Laplace(scale)``: ``|b| + scale·e^{−|b|/scale}``."""
    b = np.abs(np.asarray(bias, dtype=np.float64))
    s = np.asarray(scale, dtype=np.float64)
    return np.asarray(b + s * np.exp(-b / s), dtype=np.float64)


def best_fixed(values: npt.NDArray[np.float64]) -> tuple[float, int]:
    """The best expected error of ``Σ min(T_u, 2^j) + Lap(2^j/ε)`` over j = −10 … 40, and its j."""
    truth = float(values.sum())
    return min((float(expected_abs_error(float(np.minimum(values, 2.0**j).sum()) - truth, 2.0**j / float(EPSILON))), j) for j in range(-10, 41))


class Evaluator:
    """The expected errors of one distribution, cached per (steps, share): what a setting's probabilities are summed against."""

    def __init__(self, totals: Totals) -> None:
        self.totals = totals
        self.ordered = np.sort(totals.lattice)
        node = AutoClipSum(QUERY, epsilon=EPSILON, upper_limit=totals.upper)
        self.k = node.lattice_k()
        values = self.ordered.astype(np.float64) * 2.0**self.k
        self.suffix = np.concatenate([np.cumsum(values[::-1])[::-1], [0.0]])  # suffix[i] = Σ_{u >= i} T_(u)
        self.fixed, self.fixed_j = best_fixed(values)
        self._cache: dict[tuple[int, Fraction], tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        self._below: dict[int, npt.NDArray[np.int64]] = {}

    def node(self, steps: int, share: Fraction) -> AutoClipSum:
        return AutoClipSum(QUERY, epsilon=EPSILON, upper_limit=self.totals.upper, clip_share=share, steps_per_doubling=steps)

    def per_candidate(self, steps: int, share: Fraction) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """``(users above each candidate, expected error at each candidate)``."""
        key = (steps, share)
        if key not in self._cache:
            node = self.node(steps, share)
            levels = np.array(node.levels(), dtype=np.int64)
            index = np.searchsorted(self.ordered, levels, side="right")
            above = self.ordered.size - index
            errors = np.empty(levels.size)
            for i, (level, clip) in enumerate(zip(levels.tolist(), node.candidates())):
                _, sensitivity, k2 = node.clipped_sum(np.zeros(0, dtype=np.int64), clip)  # Δ and k₂ depend on the clip only
                bias = self.suffix[index[i]] - float(above[i]) * level * 2.0**self.k
                scale = max(sensitivity, 1) / float(node.epsilon_sum) * 2.0**k2
                errors[i] = float(expected_abs_error(bias, scale))
            self._cache[key] = (above.astype(np.int64), errors)
        return self._cache[key]

    def below_half(self, steps: int) -> npt.NDArray[np.int64]:
        """``#{u : T_u <= C_j/2}`` for every candidate (the ``--below`` variant)."""
        if steps not in self._below:
            levels = np.array(self.node(steps, Fraction(1, 4)).levels(), dtype=np.int64)
            self._below[steps] = np.searchsorted(self.ordered, levels // 2, side="right").astype(np.int64)
        return self._below[steps]

    def scores(self, setting: Setting) -> npt.NDArray[np.float64]:
        above, _ = self.per_candidate(setting.steps, setting.share)
        eps1 = float(EPSILON * setting.share)
        r = float(setting.target / (EPSILON - EPSILON * setting.share))
        top = above.size - 1
        mu = float(setting.below)
        data = (1 - mu) * np.maximum(above - r, 0.0) + (mu * self.below_half(setting.steps) if mu else 0.0)
        return np.asarray(data + float(setting.prior) / setting.steps / eps1 * (top - np.arange(above.size)), dtype=np.float64)

    def expected(self, setting: Setting) -> float:
        _, errors = self.per_candidate(setting.steps, setting.share)
        scores = self.scores(setting)
        weights = np.exp(-float(EPSILON * setting.share) * (scores - scores.min()))
        return float((weights * errors).sum() / weights.sum())

    def ratio(self, setting: Setting) -> float:
        return self.expected(setting) / self.fixed

    def check(self, setting: Setting) -> None:
        """The float score equals the node's exact score where the setting is the node's own rule."""
        node = self.node(setting.steps, setting.share)
        exact = np.array([float(x) for x in node.clip_scores(self.totals.lattice)])
        assert np.allclose(self.scores(setting), exact, rtol=1e-12, atol=1e-9), self.totals.name


def distributions(csv: str | None, tpch: Path | None) -> list[Totals]:
    out: list[Totals] = []

    def add(name: str, ids: npt.NDArray[np.int64], values: npt.NDArray[np.float64], upper: Fraction) -> None:
        node = AutoClipSum(QUERY, epsilon=EPSILON, upper_limit=upper)
        out.append(Totals(name, upper, node.totals(as_dataset({"uid": ids, "x": values}))))

    name, ids, values = _load(csv)
    keep = ~np.isnan(values)
    short = "baseball" if csv is not None else "bb-synth"
    _, codes = np.unique(ids[keep], return_inverse=True)
    largest = float(np.bincount(codes, weights=values[keep]).max())
    for upper, tag in ((Fraction(2 ** math.ceil(math.log2(max(largest, 1.0)))), "tight"), (Fraction(10**6), "1e6"), (Fraction(2**30), "2^30")):
        add(f"{short} {tag}", ids[keep], values[keep], upper)
    shapes = _synthetic()
    gen = np.random.default_rng(2)
    n = 3000
    shapes += [("Pareto(2.5)", np.arange(n), np.floor(10 * gen.pareto(2.5, n))), ("constant 100", np.arange(n), np.full(n, 100.0))]
    short_names = {"Pareto(1.2), 1 row/user": "Par(1.2)", "lognormal(3, 1.5), 1 row/user": "lognorm", "uniform [0, 100], 1 row/user": "uniform",
                   "Pareto(2.5)": "Par(2.5)", "constant 100": "const"}  # fmt: skip
    for name, ids, values in shapes:
        add(short_names[name], ids, values, Fraction(10**6))
    if tpch is not None:
        for query in TPCH:
            out.append(Totals(query, Fraction(2**30), np.load(tpch / f"{query}.npy")))
    return out


def save_tpch(data: Path, directory: Path) -> None:
    """``bench_tpch``'s per-customer totals of Q5, Q12, Q10, Q18 (the node's lattice at its default U = 2^30), one .npy each."""
    from benchmarks.bench_tpch import as_numpy, load, queries
    from dpalg.data._tables import tables_dataset
    from dpalg.graph._schema import steps_data

    frames, public = load(data)
    tables = {t: as_numpy(f) for t, f in frames.items()}
    directory.mkdir(parents=True, exist_ok=True)
    for name, (query, _si, _kind, _polars) in queries(public).items():
        node = AutoClipSum(query, epsilon=EPSILON)
        np.save(directory / f"{name}.npy", node.totals(steps_data(node, tables_dataset(tables))))
        print(f"saved {directory / f'{name}.npy'}")


def fractions(text: str) -> list[Fraction]:
    return [Fraction(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default=None, help="the Rdatasets plyr/baseball.csv")
    parser.add_argument("--tpch", type=Path, default=None, help="a directory with Q5.npy, Q12.npy, Q10.npy, Q18.npy")
    parser.add_argument("--save-tpch", action="store_true", help="compute the TPC-H totals from --tpch-data into --tpch first")
    parser.add_argument("--tpch-data", type=Path, default=Path("/tmp/tpch_sf1"))
    parser.add_argument("--shares", default="1/16,1/8,1/6,1/4")
    parser.add_argument("--priors", default="1,3/2,2,3")
    parser.add_argument("--steps", default="1,2,4,8")
    parser.add_argument("--targets", default="0,1/2,1,2")
    parser.add_argument("--below", default="0", help="weights mu of a score term #{u : T_u <= C/2}, in [0, 1]")
    parser.add_argument("--limit", type=float, default=1.5, help="the TPC-H goal: every ratio at most this")
    parser.add_argument("--slack", type=float, default=1.05, help="the other distributions: at most this times the default's ratio")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.save_tpch:
        assert args.tpch is not None, "--save-tpch needs --tpch DIR"
        save_tpch(args.tpch_data, args.tpch)
    evaluators = [Evaluator(t) for t in distributions(args.csv, args.tpch)]
    default_node = AutoClipSum(QUERY, epsilon=EPSILON)
    default = Setting(default_node.clip_share, Fraction(_auto_clip._PRIOR_PER_DOUBLING), default_node.steps_per_doubling, Fraction(1))
    for ev in evaluators:
        ev.check(default)
    print(f"eps = {EPSILON}; expected |error| of AutoClipSum / best fixed 2^j clip's, closed form over the exact selection probabilities")
    print("best fixed clip per distribution: " + "; ".join(f"{ev.totals.name} 2^{ev.fixed_j} (largest total {float(ev.ordered[-1]) * 2.0**ev.k:,.4g})" for ev in evaluators))
    names = [ev.totals.name for ev in evaluators]
    header = f"{'setting':36s} " + " ".join(f"{n:>9s}" for n in names) + f" {'max TPC-H':>9s} {'max other/default':>17s}"
    print(header)
    print("-" * len(header))
    base = np.array([ev.ratio(default) for ev in evaluators])
    is_tpch = np.array([n in TPCH for n in names])
    steps = [int(s) for s in args.steps.split(",")]
    grid = [Setting(*c) for c in itertools.product(fractions(args.shares), fractions(args.priors), steps, fractions(args.targets), fractions(args.below))]
    if default not in grid:
        grid.append(default)
    passing: list[tuple[float, Setting, npt.NDArray[np.float64]]] = []
    rows: list[tuple[float, float, Setting, npt.NDArray[np.float64]]] = []
    for setting in grid:
        ratios = np.array([ev.ratio(setting) for ev in evaluators])
        worst_tpch = float(ratios[is_tpch].max()) if is_tpch.any() else math.nan
        worst_other = float((ratios[~is_tpch] / base[~is_tpch]).max())
        mark = " (default)" if setting == default else ""
        print(f"{setting.label():36s} " + " ".join(f"{x:9.2f}" for x in ratios) + f" {worst_tpch:9.2f} {worst_other:17.2f}{mark}")
        rows.append((worst_tpch, worst_other, setting, ratios))
        if worst_tpch <= args.limit and worst_other <= args.slack:
            passing.append((worst_tpch, setting, ratios))
    print(f"\nsettings with every TPC-H ratio <= {args.limit} and no other distribution worse than {args.slack}x the default's ratio: {len(passing)}")
    for worst, setting, ratios in sorted(passing, key=lambda t: t[0]):
        print(f"{setting.label():36s} " + " ".join(f"{x:9.2f}" for x in ratios))
    if is_tpch.any():
        print("\nthe trade-off: the lowest largest TPC-H ratio among the settings that leave every other distribution within a factor of the default's")
        for slack in (1.05, 1.1, 1.2, 1.3, 1.5):
            within = [row for row in rows if row[1] <= slack]
            worst_tpch, worst_other, setting, ratios = min(within, key=lambda row: (row[0], row[1]))
            print(f"  within {slack:4.2f}x: {setting.label():36s} " + " ".join(f"{x:9.2f}" for x in ratios) + f" {worst_tpch:9.2f} {worst_other:17.2f}")


if __name__ == "__main__":
    main()
