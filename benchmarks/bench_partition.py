"""Partition selection: dpalg's exact, count-independent ``sample_keep`` vs a float ``rng.random(n) < pi(counts)``.

Run: ``python benchmarks/bench_partition.py``. Both sides run in the same process,
interleaved (median of 5 rounds), at eps = 1, delta = 1e-5; dpalg uses the SECURE
generator, the baseline numpy's PCG64 and a float table of DVGM's closed form (not
exact, not private against floating-point attacks). The load average is printed
because this machine is shared.
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks._common import interleaved_medians
from dpalg.noise import SecureRandomness, certain_keep_count, sample_keep
from dpalg.noise._partition import keep_probability_float

EPS, DELTA = 1, "1e-5"


def main() -> None:
    secure = SecureRandomness()
    gen = np.random.default_rng()
    n_star = certain_keep_count(EPS, DELTA)
    pi_float = np.array([keep_probability_float(n, 1.0, 1e-5) for n in range(n_star + 1)])
    sample_keep(np.arange(10), EPS, DELTA, secure)  # build the table once
    print(f"load average: {os.getloadavg()}")
    print(f"{'keys':>9} {'dpalg s':>9} {'float s':>9} {'ratio':>7}")
    for size in (10**4, 10**6):
        counts = np.random.default_rng(0).zipf(1.6, size).astype(np.int64)

        def exact() -> object:
            return sample_keep(counts, EPS, DELTA, secure)

        def floating() -> object:
            return gen.random(size) < pi_float[np.minimum(counts, n_star)]

        t_exact, t_float = interleaved_medians([exact, floating], repeat=5)
        print(f"{size:>9} {t_exact:9.5f} {t_float:9.5f} {t_exact / t_float:7.1f}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
