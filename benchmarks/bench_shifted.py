"""Benchmark: user-level sum over 10^6 users with Pareto contributions, eps = 1.

For each shifted-inverse form: the time of one full release (reductions, loss,
runs, sampling) and the mean absolute error over 100 releases (the loss is
computed once and the releases re-sampled from it, which is the same
distribution). Baselines in the same run: the clipped user sum with the clip that
is best in hindsight (Laplace noise C/eps), and the R2T node (Dong et al.
SIGMOD 2022) with thresholds 2^j below 2^40 and below 2^30.

Run: ``python -m benchmarks.bench_shifted [--users N] [--releases R]`` (from the repository root)
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from benchmarks._common import parse_arguments
from dpalg import Query
from dpalg.data import as_dataset, per_unit_sums
from dpalg.mechanisms import R2T, ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.mechanisms.shifted_inverse._search import binary_search, SearchNoise, search_steps, user_loss
from dpalg.noise import SeededRandomness, discrete_laplace, sample_exp_runs
from dpalg.sensitivity import shifted_loss_runs

DOMAIN = (0, 2**40 - 1)


def main() -> None:
    args = parse_arguments(users=1_000_000, releases=100)
    gen = np.random.default_rng(0)  # synthetic population only
    n_rows = 3 * args.users
    uid = gen.integers(0, args.users, size=n_rows)
    pages = np.floor(gen.pareto(1.2, size=n_rows) * 10)
    data = as_dataset({"uid": uid, "pages": pages})
    q = Query.user_sum("pages", user="uid")
    totals = per_unit_sums(uid, pages)
    truth = float(totals.sum())
    rng = SeededRandomness(1)
    print(f"{args.users} users, {n_rows} rows, true sum {truth:,.0f}, max user {totals.max():,.0f}, eps = 1")
    print(f"{'method':38s} {'time/release':>12s} {'MAE':>14s} {'rel. MAE':>9s}")

    em = ShiftedInverse(q, domain=DOMAIN, epsilon=1, beta="0.05")
    t0 = time.perf_counter()
    em.release(data, rng)
    t_em = time.perf_counter() - t0
    loss = user_loss(q, data, 0)
    starts, lengths, losses = shifted_loss_runs(loss, DOMAIN[0], DOMAIN[1], em.tau())
    scores = losses - int(losses.min())
    outs = []
    for _ in range(args.releases):
        r = sample_exp_runs(scores, Fraction(1, 2), lengths, rng=rng)
        outs.append(starts[r] + rng.big_below(lengths[r]))
    report("shifted inverse, EM (pure)", t_em, outs, truth)

    for node, kind in (
        (ShiftedInverseSearch(q, domain=DOMAIN, epsilon=1, beta="0.05"), "laplace"),
        (ShiftedInverseSearchZCDP(q, domain=DOMAIN, rho="0.5", beta="0.05"), "gaussian"),
    ):
        t0 = time.perf_counter()
        node.release(data, rng)
        t = time.perf_counter() - t0
        param = node.sigma() if isinstance(node, ShiftedInverseSearch) else node.sigma2()
        outs = [binary_search(loss, DOMAIN, node.tau(), SearchNoise(kind, param, rng, search_steps(DOMAIN) + 1)) for _ in range(args.releases)]
        label = "binary search, discrete Laplace (pure)" if kind == "laplace" else "binary search, discrete Gaussian (rho=1/2)"
        report(label, t, outs, truth)

    best = None
    for j in range(0, 30):
        clip = 2**j
        clipped = float(np.minimum(totals, clip).sum())
        noise = discrete_laplace(clip, size=args.releases, rng=rng)
        mae = float(np.mean(np.abs(clipped + noise - truth)))
        if best is None or mae < best[0]:
            best = (mae, clip)
    assert best is not None
    print(f"{'clipped sum, best clip in hindsight C=' + str(best[1]):38s} {'-':>12s} {best[0]:14,.1f} {best[0] / truth:9.2e}")

    # R2T (Dong et al. 2022), the node: thresholds upper_limit*2^-j; its totals and truncated sums once, then
    # the releases re-sampled from them (the same distribution as full releases)
    for upper, levels in ((2**40, 40), (2**30, 30)):
        node = R2T(Query.sum("pages", user="uid"), epsilon=1, upper_limit=upper, thresholds=levels, beta="0.05")
        t0 = time.perf_counter()
        node.release(data, rng)
        t_r2t = time.perf_counter() - t0
        truncated = node.truncated(node.totals(data))
        outs_r2t = [node.sample(truncated, rng) for _ in range(args.releases)]
        report(f"R2T node, upper_limit 2^{upper.bit_length() - 1}, L={levels}", t_r2t, outs_r2t, truth)


def report(label: str, seconds: float, outs: list[int] | list[float], truth: float) -> None:
    errors = np.abs(np.array(outs, dtype=np.float64) - truth)
    print(f"{label:38s} {seconds:11.2f}s {errors.mean():14,.1f} {errors.mean() / truth:9.2e}")


if __name__ == "__main__":
    main()
