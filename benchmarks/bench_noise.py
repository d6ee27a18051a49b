"""Throughput of dpalg's exact samplers vs numpy's (insecure, float) samplers and OpenDP.

Run: ``python benchmarks/bench_noise.py``. Every dpalg number uses the SECURE
generator (the OS CSPRNG). OpenDP is measured only when it is importable.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from dpalg.noise import SecureRandomness, discrete_gaussian, discrete_laplace

N = 10**6


def rate(fn: Callable[[], object], n: int = N, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def opendp_rates() -> dict[str, float]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")
    out: dict[str, float] = {}
    n_odp = 100_000  # one vector-valued call, so FFI overhead is amortised
    zeros = [0] * n_odp
    dom = dp.vector_domain(dp.atom_domain(T=int))
    for label, scale in [("laplace t=10", 10.0), ("laplace t=1e6", 1e6)]:
        meas = dp.m.make_laplace(dom, dp.l1_distance(T=int), scale=scale)
        out[label] = rate(lambda: meas(zeros), n_odp, 1)
    for label, sigma in [("gaussian s2=100", 10.0), ("gaussian s2=1e12", 1e6)]:
        meas = dp.m.make_gaussian(dom, dp.l2_distance(T=int), scale=sigma)
        out[label] = rate(lambda: meas(zeros), n_odp, 1)
    return out


def main() -> None:
    secure = SecureRandomness()
    gen = np.random.default_rng()
    t0 = time.perf_counter()
    os.urandom(8 * N)
    urandom_mb_s = 8 * N / (time.perf_counter() - t0) / 1e6
    cases = [
        ("laplace t=10", lambda: discrete_laplace(10, size=N, rng=secure), lambda: gen.laplace(0.0, 10.0, N)),
        ("laplace t=1e6", lambda: discrete_laplace(10**6, size=N, rng=secure), lambda: gen.laplace(0.0, 1e6, N)),
        ("gaussian s2=100", lambda: discrete_gaussian(100, size=N, rng=secure), lambda: gen.normal(0.0, 10.0, N)),
        ("gaussian s2=1e12", lambda: discrete_gaussian(10**12, size=N, rng=secure), lambda: gen.normal(0.0, 1e6, N)),
    ]
    odp = opendp_rates()
    print(f"os.urandom throughput: {urandom_mb_s:.0f} MB/s ({urandom_mb_s / 8:.0f}M 64-bit words/s)")
    print(f"{'sampler':<18} {'dpalg exact/s':>14} {'numpy float/s':>14} {'numpy/dpalg':>11} {'opendp/s':>10} {'dpalg/opendp':>12}")
    for label, ours, theirs in cases:
        r_ours = rate(ours)
        r_np = rate(theirs)
        r_odp = odp.get(label)
        odp_txt = f"{r_odp:>10.0f} {r_ours / r_odp:>11.0f}x" if r_odp else f"{'n/a':>10} {'n/a':>12}"
        print(f"{label:<18} {r_ours:>14,.0f} {r_np:>14,.0f} {r_np / r_ours:>10.1f}x {odp_txt}")


if __name__ == "__main__":
    main()
