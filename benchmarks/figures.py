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

from benchmarks._common import Row, best_of, interleaved_medians, peer, repeat_release


def accountant(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """plan.check on a Compose of 10^4 and 10^5 Laplace nodes (exact rationals) vs OpenDP's composition map."""
    from dpalg import Compose, PureDP, Query
    from dpalg.mechanisms import Laplace

    out: list[Row] = []
    mod, name = peer("opendp.prelude", "opendp")
    for n in (10_000, 100_000):
        log(f"  accountant: Compose of {n} nodes ...")
        nodes = [Laplace(Query.count(), epsilon=Fraction(i % 97 + 1, 10**6)) for i in range(n)]
        figure = f"check a Compose of {n:,} Laplace nodes"

        def ours() -> object:
            return Compose(*nodes).check(PureDP(n))  # a fresh plan: no cached derivation of the whole plan

        if mod is None:
            out.append(Row("accountant", figure, interleaved_medians([ours], repeat=5)[0], None, name, unit="s", note="skipped"))
            continue
        dp = mod
        dp.enable_features("contrib")
        space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
        meas = [space >> dp.m.then_laplace(scale=1.0 + (i % 97)) for i in range(n)]
        t_ours, t_odp = interleaved_medians([ours, lambda: dp.c.make_composition(meas).map(1)], repeat=5 if n < 10**5 else 3)
        out.append(Row("accountant", figure, t_ours, t_odp, f"{name}: make_composition + map (float)", unit="s"))
    return out


def noise(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """Exact secure samplers: time per sample vs numpy's float samplers, throughput vs OpenDP's exact ones."""
    from dpalg.noise import SecureRandomness, discrete_gaussian, discrete_laplace

    n = 10**6
    log("  noise: samplers ...")
    secure = SecureRandomness()
    gen = np.random.default_rng()
    cases = [
        ("discrete Laplace t=10", lambda: discrete_laplace(10, size=n, rng=secure), lambda: gen.laplace(0.0, 10.0, n), "numpy Generator.laplace (float, PCG64)"),
        ("discrete Laplace t=10^6", lambda: discrete_laplace(10**6, size=n, rng=secure), lambda: gen.laplace(0.0, 1e6, n), "numpy Generator.laplace (float, PCG64)"),
        ("discrete Gaussian s^2=10^12", lambda: discrete_gaussian(10**12, size=n, rng=secure), lambda: gen.normal(0.0, 1e6, n), "numpy Generator.normal (float, PCG64)"),
    ]  # fmt: skip
    out: list[Row] = []
    ours: dict[str, float] = {}
    for label, mine, theirs, base in cases:
        t_ours, t_np = interleaved_medians([mine, theirs], repeat=5)
        ours[label] = t_ours
        out.append(Row("noise", f"{label}, secure, time for 10^6", t_ours, t_np, base, unit="s"))
    mod, name = peer("opendp.prelude", "opendp")
    if mod is not None:
        dp = mod
        dp.enable_features("contrib")
        m = 100_000
        zeros = [0] * m
        dom = dp.vector_domain(dp.atom_domain(T=int))
        lap = dp.m.make_laplace(dom, dp.l1_distance(T=int), scale=1e6)
        gauss = dp.m.make_gaussian(dom, dp.l2_distance(T=int), scale=1e6)
        for label, meas, ours_label in (("discrete Laplace t=10^6", lap, "discrete Laplace t=10^6"),
                                        ("discrete Gaussian s^2=10^12", gauss, "discrete Gaussian s^2=10^12")):
            t_mine, t_odp = interleaved_medians([cases[[c[0] for c in cases].index(ours_label)][1], lambda: meas(zeros)], repeat=3)
            out.append(Row("noise", f"{label}, samples/s", n / t_mine, m / t_odp,
                           f"{name}: exact sampler on a vector of {m:,}", better="higher"))
    words = 1 << 20
    t_aes, t_os = interleaved_medians([lambda: SecureRandomness("aes-ctr").uint64(words), lambda: SecureRandomness("os").uint64(words)], repeat=5)
    out.append(Row("noise", "secure words/s: AES-256-CTR re-keyed per block", words / t_aes, words / t_os, "os.urandom", better="higher"))
    return out


def cold_start(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """Wall time of ``dpalg audit CERT`` and ``dpalg --help`` in a fresh interpreter vs ``python -c 'import numpy'``."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from dpalg import Clip, Compose, PureDP, Query
    from dpalg.mechanisms import ExponentialQuantile, Laplace

    log("  cold start: dpalg audit / --help in fresh interpreters ...")
    plan = Compose(Laplace(Query.count(), epsilon=1), ExponentialQuantile(Query.median("x") | Clip(0, 9), epsilon=1))
    plan.check(PureDP(2))
    with tempfile.TemporaryDirectory() as tmp:
        cert = Path(tmp) / "cert.json"
        cert.write_text(plan.run({"x": np.arange(5.0)}, rng=1).certificate_json())

        def run(code: str) -> Callable[[], object]:
            return lambda: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)

        numpy_only = run("import numpy")
        audit = run(f"import sys; from dpalg.cli import main; sys.exit(main(['audit', {str(cert)!r}]))")
        helps = run("from dpalg.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
        t_np, t_audit, t_help = interleaved_medians([numpy_only, audit, helps], repeat=7)
    return [
        Row("cold start", "dpalg audit CERT, wall time", t_audit, t_np, "python -c 'import numpy'", unit="s",
            note=f"difference {t_audit - t_np:.2f} s (goal <= 0.7 s)"),
        Row("cold start", "dpalg --help, wall time", t_help, t_np, "python -c 'import numpy'", unit="s",
            note=f"difference {t_help - t_np:.2f} s"),
    ]


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
    "cold-start": cold_start,
    "ls": local_sensitivity,
    "smooth": smooth,
    "shifted": shifted,
    "reductions": reductions,
}


def timed(fn: Callable[[], list[Row]]) -> tuple[list[Row], float]:
    t0 = time.perf_counter()
    rows = fn()
    return rows, time.perf_counter() - t0
