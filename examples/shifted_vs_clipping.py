"""Shifted inverse versus contribution clipping for a heavy-tailed user-level sum.

Each user has a few rows of "pages" drawn from a Pareto(1.2) tail, so a handful of
users hold a large share of the total. The privacy unit is one *user* (all their
rows). Two ways to release the total with ε-DP:

* **clipping**: cap every user's total at C and add discrete Laplace noise of scale
  C/ε. The error is bias (what the cap cuts off) plus noise (∝ C): it depends on C,
  and the best C depends on the data, so it cannot be chosen privately for free.
  Implemented with dpalg's own nodes: ``dpalg.data.per_unit_sums`` gives one row
  per user (a unit-local reduction), then ``Laplace(Query.sum("total") | Clip(0, C))``
  on that table is ε-DP for one user.
* **shifted inverse** (``ShiftedInverse``, exponential mechanism, and
  ``ShiftedInverseSearch``, noisy binary search; seed 004): no clip at all; the
  error is governed by the down sensitivity, i.e. by what removing the ~2τ
  largest users removes (``docs/mechanisms/shifted_inverse.md``).

Run: ``python examples/shifted_vs_clipping.py [--small] [--out DIR]`` (or set
``DPALG_EXAMPLES_SMALL=1``). Writes ``shifted_vs_clipping.png`` and
``shifted_vs_clipping.csv`` into ``examples/out/`` (git-ignored). All noise is
exact discrete noise from :mod:`dpalg.noise` with the seeded generator
(reproducible, NOT secure: for examples only).
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from dpalg import Clip, PureDP, Query  # noqa: E402
from dpalg.data import as_dataset, per_unit_sums  # noqa: E402
from dpalg.mechanisms import Laplace, ShiftedInverse, ShiftedInverseSearch  # noqa: E402
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import label_panel, number, parse_arguments, save, write_csv  # noqa: E402

DOMAIN = (0, 2**32 - 1)


def synthetic_users(users: int, seed: int) -> dict[str, npt.NDArray[np.generic]]:
    """Rows of (uid, pages): 1 + Poisson(2) rows per user, pages ~ floor(10 * Pareto(1.2))."""
    gen = np.random.default_rng(seed)  # synthetic population only, not privacy noise
    rows_per_user = 1 + gen.poisson(2.0, size=users)
    uid = np.repeat(np.arange(users), rows_per_user)
    pages = np.floor(10 * gen.pareto(1.2, size=uid.size))
    return {"uid": uid, "pages": pages}


def main() -> None:
    args = parse_arguments(__doc__, "fewer users, trials and settings (for the test suite)")
    small = args.small
    users = 3_000 if small else 30_000
    trials = 10 if small else 60
    epsilons = ["1"] if small else ["0.5", "1", "2"]
    clip_exponents = list(range(0, 25, 3 if small else 1))
    start = time.time()

    data = synthetic_users(users, seed=4)
    ds = as_dataset(data)
    totals = per_unit_sums(data["uid"], data["pages"])
    per_user = as_dataset({"total": totals})  # one row per user: row-level DP here is user-level DP
    truth = float(totals.sum())
    top_share = float(np.sort(totals)[-max(users // 100, 1):].sum() / truth)
    rng = SeededRandomness(20240604)
    pages = Query.user_sum("pages", user="uid")
    print(f"{users:,} users, {data['uid'].size:,} rows, true total {truth:,.0f}; the top 1% of users hold {top_share:.0%}")

    rows: list[dict[str, str | float | int]] = []

    def record(eps: str, method: str, clip: int | str, outs: npt.NDArray[np.float64]) -> None:
        err = np.abs(outs - truth)
        rows.append({
            "epsilon": eps, "method": method, "clip": clip, "mae": float(err.mean()),
            "median_ae": float(np.median(err)), "above_truth": float(np.mean(outs > truth)),
        })  # fmt: skip

    for eps in epsilons:
        for node in (ShiftedInverse(pages, domain=DOMAIN, epsilon=eps), ShiftedInverseSearch(pages, domain=DOMAIN, epsilon=eps)):
            assert node.cost() == PureDP(eps)
            record(eps, type(node).__name__, "", np.array([number(node.release(ds, rng)) for _ in range(trials)]))
        for j in clip_exponents:
            node_c = Laplace(Query.sum("total") | Clip(0, 2**j), epsilon=eps)
            assert node_c.cost() == PureDP(eps)
            record(eps, "clipping", 2**j, np.array([number(node_c.release(per_user, rng)) for _ in range(trials)]))

    write_csv(args.out / "shifted_vs_clipping.csv", rows, ["epsilon", "method", "clip", "mae", "median_ae", "above_truth"])

    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.2 * len(epsilons), 4.2), squeeze=False)
    print(f"\nerror over {trials} releases, relative to the true total (median |error|, mean |error|, share of releases above the truth):")
    for ax, eps in zip(axes[0], epsilons):
        clip_rows = [r for r in rows if r["epsilon"] == eps and r["method"] == "clipping"]
        ax.loglog([int(r["clip"]) for r in clip_rows], [float(r["median_ae"]) / truth for r in clip_rows], marker="o", ms=3,
                  label="clip each user's total at C, Laplace(C/eps)")  # fmt: skip
        for style, color, name in (("--", "C1", "ShiftedInverse"), (":", "C2", "ShiftedInverseSearch")):
            r = next(r for r in rows if r["epsilon"] == eps and r["method"] == name)
            ax.axhline(float(r["median_ae"]) / truth, linestyle=style, color=color, label=f"{name} (no clip)")
            print(f"  eps={eps}: {name:34s} {float(r['median_ae']) / truth:8.2%} {float(r['mae']) / truth:10.2%} {float(r['above_truth']):6.0%}")
        best = min(clip_rows, key=lambda r: float(r["median_ae"]))
        name = f"clipping, best C in hindsight 2^{int(best['clip']).bit_length() - 1}"
        print(f"  eps={eps}: {name:34s} {float(best['median_ae']) / truth:8.2%} {float(best['mae']) / truth:10.2%} {float(best['above_truth']):6.0%}")
        label_panel(ax, f"user-level sum, eps = {eps} ({users:,} users)", "clip C (per-user total)", f"median |error| / true total ({trials} releases)")
    save(fig, args.out / "shifted_vs_clipping.png")

    eps_mid = "1" if "1" in epsilons else epsilons[0]
    em = next(float(r["median_ae"]) for r in rows if r["epsilon"] == eps_mid and r["method"] == "ShiftedInverse")
    clip_rows = [r for r in rows if r["epsilon"] == eps_mid and r["method"] == "clipping"]
    best_err = min(float(r["median_ae"]) for r in clip_rows)
    beaten = sum(1 for r in clip_rows if float(r["median_ae"]) > em)
    print(f"\nConclusion (eps={eps_mid}): the shifted inverse (EM) needs no clip; its median error is {em / best_err:.1f}x that of the")
    print(f"best clip chosen in hindsight (a choice that itself uses the data) and smaller than {beaten} of the {len(clip_rows)} clips tried.")
    print("Both shifted-inverse forms under-estimate (their error is the mass of the ~2*tau largest users); the binary")
    print("search fails (lands above the truth) with probability <= beta = 1/20, which dominates its mean error.")
    print(f"Wrote {args.out / 'shifted_vs_clipping.png'} and .csv in {time.time() - start:.1f} s.")


if __name__ == "__main__":
    main()
