"""Seed 002's sample-and-aggregate example: the mean age, versus the global-sensitivity mean.

Run: ``python examples/sample_aggregate.py [--small] [--out DIR]``. Writes
``sample_aggregate.png``, ``sample_aggregate.md`` and ``sample_aggregate.csv`` into
``examples/out/`` (git-ignored). Under a minute on two cores.

Setting (seed 002, "Sample and Aggregate"): the block function is the plain mean
of the ages in a block; its outputs are clipped to ``[l, u] = [20, 80]`` and
averaged with Laplace noise ``(u − l)/(mε)`` (pure ε-DP), for ``m`` from 10 to
6000 blocks, compared with the global-sensitivity mean (noisy clipped sum over
noisy count, ε/2 each, clip ``[0, 100]``) at ε = 1. The smooth-sensitivity median
of the block outputs (ε = 1, δ = 1e-6) is shown as a third line.

The data are synthetic (the seed uses the Adult census ages, which are not
shipped): 32,561 integer ages from 17 + Gamma(2.5, 8.6), clipped to 90, which
matches Adult's size, mean (≈ 38.6) and spread. Unlike the seed's contiguous
chunks, dpalg assigns each row an independent random block (see
:mod:`dpalg.mechanisms.sample_aggregate._aggregate`), which is what makes the guarantee hold
under add/remove. Every release uses exact discrete noise and the seeded generator
(reproducible, NOT secure).
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from dpalg import Clip, Query  # noqa: E402
from dpalg.data import Dataset, as_dataset  # noqa: E402
from dpalg.mechanisms import Laplace, SampleAggregateMean, SampleAggregateMedian  # noqa: E402
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import parse_arguments, write_csv  # noqa: E402

N_ROWS = 32_561
LOWER, UPPER = 20, 80
EPSILON = 1
DELTA = "1e-6"


def synthetic_ages(seed: int = 7) -> npt.NDArray[np.float64]:
    """Adult-like ages: 17 + Gamma(2.5, 8.6), rounded, at most 90."""
    gen = np.random.default_rng(seed)
    return np.minimum(np.round(17 + gen.gamma(2.5, 8.6, N_ROWS)), 90).astype(np.float64)


def mean_age(block: Dataset) -> float:
    """The block function of seed 002: the (non-private) mean of the block's ages."""
    ages = block.numeric("age")
    return float(np.mean(ages)) if ages.size else float("nan")  # NaN -> the lower bound


def pct_error(truth: float, estimate: float) -> float:
    return 100.0 * abs(truth - estimate) / truth


def main() -> None:
    args = parse_arguments(__doc__, "few trials (for a smoke test)")
    trials = 10 if args.small else 100
    median_trials = 10 if args.small else 40  # the extra line; keeps the run under a minute
    blocks = [10, 100, 1000, 6000] if args.small else [10, 30, 100, 300, 1000, 3000, 6000]
    ages = synthetic_ages()
    data = as_dataset({"age": ages})
    truth = float(np.mean(ages))
    rng = SeededRandomness(20240602)
    start = time.time()

    gs = Laplace(Query.mean("age") | Clip(0, 100), epsilon=EPSILON)
    gs_err = np.array([pct_error(truth, float(gs.release(data, rng))) for _ in range(trials)])  # type: ignore[arg-type]

    rows: list[dict[str, str | int | float]] = []
    for m in blocks:
        sa = SampleAggregateMean(mean_age, blocks=m, lower=LOWER, upper=UPPER, epsilon=EPSILON)
        sa_err = np.array([pct_error(truth, float(sa.release(data, rng))) for _ in range(trials)])  # type: ignore[arg-type]
        med = SampleAggregateMedian(mean_age, blocks=m, lower=LOWER, upper=UPPER, epsilon=EPSILON, delta=DELTA)
        med_err = np.array([pct_error(truth, float(med.release(data, rng))) for _ in range(median_trials)])  # type: ignore[arg-type]
        for name, err, cost in (
            ("sample-and-aggregate mean", sa_err, f"{sa.cost()}"),
            ("sample-and-aggregate smooth median", med_err, f"{med.cost()}"),
            ("global-sensitivity mean", gs_err, f"{gs.cost()}"),
        ):
            rows.append({"m": m, "mechanism": name, "cost": cost, "median_pct_error": float(np.median(err)),
                         "mean_pct_error": float(np.mean(err)), "p90_pct_error": float(np.quantile(err, 0.9))})  # fmt: skip

    write_csv(args.out / "sample_aggregate.csv", rows)
    lines = [
        f"# Sample-and-aggregate mean of ages (synthetic Adult-like, n = {N_ROWS:,}, true mean {truth:.3f}, "
        f"eps = {EPSILON}, {trials} releases each, {median_trials} for the smooth median)",
        "",
        "| m | mechanism | cost | median % error | mean % error | 90th pct % error |",
        "| ---: | --- | --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['m']} | {r['mechanism']} | {r['cost']} | {r['median_pct_error']:.4f} | {r['mean_pct_error']:.4f} | {r['p90_pct_error']:.4f} |"
        for r in rows
    ]
    (args.out / "sample_aggregate.md").write_text("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, style in (("sample-and-aggregate mean", "o-"), ("sample-and-aggregate smooth median", "s--"), ("global-sensitivity mean", "k:")):
        ys = [float(r["median_pct_error"]) for r in rows if r["mechanism"] == name]
        ax.plot(blocks, ys, style, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of blocks m")
    ax.set_ylabel("median percent error")
    ax.set_title(f"Mean age, eps = {EPSILON} (l = {LOWER}, u = {UPPER})")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "sample_aggregate.png", dpi=120)
    print("\n".join(lines))
    print(f"\nwrote {args.out}/sample_aggregate.{{csv,md,png}} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
