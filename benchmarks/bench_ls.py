"""Benchmark: the LS_k profile of the median on 10**7 rows, as a ratio to np.sort.

Run: ``python -m benchmarks.bench_ls [n] [kmax]``. The profile is computed for
k = 0..kmax (default 2000, above the PTR cap ceil(ln(1/δ)/ε) + ceil(40/ε) of
typical parameters, e.g. ε = 0.1, δ = 1e-9 gives 608). An exact profile of *all*
k ≤ n is a (max,+) convolution of two monotone sequences and has no known
near-linear algorithm; see docs/mechanisms/local_sensitivity.md.
"""

from __future__ import annotations

import sys

import numpy as np

from benchmarks._common import best_of
from dpalg.queries import Clip, Query
from dpalg.sensitivity._catalog import distance_to_instability, ls_profile


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**7
    kmax = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rng = np.random.default_rng(0)
    data = rng.normal(50_000, 15_000, size=n).clip(0, 500_000)
    query = Query.median("income") | Clip(0, 500_000)
    t_sort = best_of(lambda: np.sort(data))
    for relation in ("add_remove", "substitution"):
        t_prof = best_of(lambda: ls_profile(query, data, kmax, relation))  # noqa: B023
        print(f"median LS_k profile k=0..{kmax}, n={n:,}, {relation}: {t_prof:.3f} s; np.sort {t_sort:.3f} s; "
              f"ratio {t_prof / t_sort:.2f}x (goal <= 3x)")
    t_d = best_of(lambda: distance_to_instability(query, data, 5.0), repeat=1)
    print(f"distance_to_instability(median, bound=5.0), n={n:,}: {t_d:.3f} s ({t_d / t_sort:.2f}x sort)")


if __name__ == "__main__":
    main()
