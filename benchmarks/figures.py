"""The engineering figures, each next to a baseline measured in the same run.

Quick versions of the standalone scripts (``bench_accountant.py``,
``bench_noise.py``, ``bench_ls.py``, ``bench_smooth.py``, ``bench_shifted.py``);
``full=True`` uses their large sizes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from benchmarks._common import Row, best_of, peer, repeat_release


def accountant(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """plan.check on a Compose of 10,000 Laplace nodes (exact rationals) vs OpenDP's composition map."""
    from dpalg import Compose, PureDP, Query
    from dpalg.mechanisms import Laplace

    n = 10_000
    log(f"  accountant: Compose of {n} nodes ...")
    nodes = [Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**6)) for i in range(n)]
    plan = Compose(*nodes)
    budget = PureDP(1)
    t_check = best_of(lambda: plan.check(budget), repeat=5)
    figure = f"check a Compose of {n:,} Laplace nodes"
    mod, name = peer("opendp.prelude", "opendp")
    if mod is None:
        return [Row("accountant", figure, t_check, None, name, unit="s", note="skipped")]
    dp = mod
    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    meas = [space >> dp.m.then_laplace(scale=1.0 + (i % 97)) for i in range(n)]
    t_odp = best_of(lambda: dp.c.make_composition(meas).map(1), repeat=2)
    return [Row("accountant", figure, t_check, t_odp, f"{name}: make_composition + map (float)", unit="s")]


def noise(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """Throughput of dpalg's exact secure samplers vs numpy's (insecure, floating-point) ones."""
    from dpalg.noise import SecureRandomness, discrete_gaussian, discrete_laplace

    n = 10**6
    log("  noise: samplers ...")
    secure = SecureRandomness()
    gen = np.random.default_rng()
    cases = [
        ("discrete Laplace t=10^6", lambda: discrete_laplace(10**6, size=n, rng=secure), lambda: gen.laplace(0.0, 1e6, n), "numpy Generator.laplace (float, PCG64)"),
        ("discrete Gaussian s^2=10^12", lambda: discrete_gaussian(10**12, size=n, rng=secure), lambda: gen.normal(0.0, 1e6, n), "numpy Generator.normal (float, PCG64)"),
    ]  # fmt: skip
    out: list[Row] = []
    for label, ours, theirs, base in cases:
        r_ours = n / best_of(ours)
        r_np = n / best_of(theirs)
        out.append(Row("noise", f"{label}, secure, samples/s", r_ours, r_np, base, better="higher"))
    mod, name = peer("opendp.prelude", "opendp")
    if mod is not None:
        dp = mod
        dp.enable_features("contrib")
        m = 100_000
        zeros = [0] * m
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=1e6)
        r_odp = m / best_of(lambda: meas(zeros), repeat=2)
        r_ours = n / best_of(cases[0][1])
        out.append(Row("noise", "discrete Laplace t=10^6, samples/s", r_ours, r_odp, f"{name}: make_laplace on a vector of {m:,}", better="higher"))
    return out


def local_sensitivity(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """The median's LS_k profile for k = 0..2000 vs np.sort of the same data."""
    from dpalg import Clip, Query
    from dpalg.sensitivity import ls_profile

    n = 10**7 if full else 10**6
    log(f"  ls: LS_k profile, n={n:,} ...")
    data = np.random.default_rng(0).normal(50_000, 15_000, size=n).clip(0, 500_000)
    query = Query.median("income") | Clip(0, 500_000)
    t_sort = best_of(lambda: np.sort(data))
    t_prof = best_of(lambda: ls_profile(query, data, 2000, "add_remove"))
    return [Row("ls", f"median LS_k profile k<=2000, n=10^{len(str(n)) - 1}, add/remove", t_prof, t_sort, "np.sort of the same data", unit="s")]


def smooth(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """Sort + the smooth-sensitivity pass of the median vs np.sort alone (goal: <= 3x)."""
    from dpalg.sensitivity import smooth_sensitivity_quantile

    n = 10**7 if full else 10**6
    log(f"  smooth: smooth sensitivity of the median, n={n:,} ...")
    data = np.random.default_rng(0).uniform(0.0, 1.0, n)
    t_sort = best_of(lambda: np.sort(data), repeat=2)
    x = np.sort(data)
    out = []
    for relation, beta in (("substitution", 0.01), ("add_remove", 0.1)):
        t_pass = best_of(lambda: smooth_sensitivity_quantile(x, "1/2", 0, 1, beta, relation), repeat=2)  # type: ignore[arg-type]  # noqa: B023
        out.append(Row("smooth", f"sort + S*_beta(median) pass, {relation}, beta={beta}, n=10^{len(str(n)) - 1}", t_sort + t_pass, t_sort,
                       "np.sort of the same data", unit="s"))  # fmt: skip
    return out


def shifted(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """User-level sum with Pareto contributions: shifted inverse vs the clipped sum with the best clip in hindsight."""
    from dpalg import Query
    from dpalg.data import as_dataset, per_unit_sums
    from dpalg.mechanisms import ShiftedInverse
    from dpalg.noise import SecureRandomness, discrete_laplace

    users = 10**6 if full else 10**5
    log(f"  shifted: user sum over {users:,} users ...")
    gen = np.random.default_rng(0)  # synthetic population only
    uid = gen.integers(0, users, size=3 * users)
    pages = np.floor(gen.pareto(1.2, size=3 * users) * 10)
    data = as_dataset({"uid": uid, "pages": pages})
    totals = per_unit_sums(uid, pages)
    truth = float(totals.sum())
    rng = SecureRandomness()
    node = ShiftedInverse(Query.user_sum("pages", user="uid"), domain=(0, 2**40 - 1), epsilon=1)
    releases = repeat_release(lambda: float(node.release(data, rng)), max_releases=100, min_releases=10, time_budget=600 if full else 20)  # type: ignore[arg-type]
    best: tuple[float, int] | None = None
    for j in range(30):  # the clip C = 2^j with the smallest error, chosen AFTER seeing the data (not private)
        clip = 2**j
        noisy = float(np.minimum(totals, clip).sum()) + discrete_laplace(clip, size=releases.count, rng=rng).astype(np.float64)
        mae = float(np.mean(np.abs(noisy - truth)))
        if best is None or mae < best[0]:
            best = (mae, clip)
    assert best is not None
    fixed_clip = 2**10
    noisy_fixed = float(np.minimum(totals, fixed_clip).sum()) + discrete_laplace(fixed_clip, size=releases.count, rng=rng).astype(np.float64)
    mae_fixed = float(np.mean(np.abs(noisy_fixed - truth)))
    label = f"user sum MAE, {users:,} Pareto(1.2) users, eps=1"
    note = f"{releases.count} releases"
    return [
        Row("shifted", label, releases.mae(truth), best[0], f"clipped sum, best clip in hindsight C=2^{best[1].bit_length() - 1} (not private)", note=note),
        Row("shifted", label, releases.mae(truth), mae_fixed, f"clipped sum, fixed clip C=2^10", note=note),
        Row("shifted", f"shifted inverse (EM) time/release, {users:,} users", releases.seconds_each, None, "-", unit="s"),
    ]


def reductions(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """Issue 16's one-pass paths (Laplace mean, ExponentialQuantile, PTR, SmoothBound) vs np.sum / np.sort."""
    from benchmarks.bench_reductions import measure

    rows, ptr_rows = (10**7, 10**6) if full else (10**6, 10**5)
    out = []
    for m in measure(rows, ptr_rows, repeat=3 if full else 2, log=log):
        note = f"peak memory {m.memory:.2f}x the column; goal {m.goal}"
        out.append(Row("reductions", f"{m.name}, n={rows if 'ProposeTest' not in m.name else ptr_rows:,}", m.seconds,
                       m.baseline_seconds, f"{m.baseline} of the same column", unit="s", note=note))  # fmt: skip
    return out


GROUPS: dict[str, Callable[..., list[Row]]] = {
    "accountant": accountant,
    "noise": noise,
    "ls": local_sensitivity,
    "smooth": smooth,
    "shifted": shifted,
    "reductions": reductions,
}


def timed(fn: Callable[[], list[Row]]) -> tuple[list[Row], float]:
    t0 = time.perf_counter()
    rows = fn()
    return rows, time.perf_counter() - t0
