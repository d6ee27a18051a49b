"""A plan mixing Query, Clip, LocalSensAtDistance and ProposeTest.

Check its cost without any data:

    dpalg check examples/plan.py:plan --budget "eps=2,delta=1e-6"

and run it on synthetic data with ``python examples/plan.py``.
"""

from __future__ import annotations

import numpy as np

from dpalg import ApproxDP, Clip, Compose, PureToApprox, Query
from dpalg.mechanisms import ExponentialQuantile, LocalSensAtDistance, ProposeTest, PTRMode

ages = Query.mean("age") | Clip(0, 100)
# A user-supplied LS_k bound for the clipped mean under add/remove (a dataset
# within distance k has at least n - k values; removing one of m values moves the
# mean by at most (upper - lower)/(m - 1)): sympy proves it non-decreasing in k,
# and each run checks it against dpalg's exact LS_k for every k it uses.
mean_ls = LocalSensAtDistance(ages, "(upper - lower) / Max(n - k - 1, 1)")

plan = Compose(
    ProposeTest(mean_ls, bound="0.002", epsilon="0.25", delta="1e-7"),
    ProposeTest(Query.median("age") | Clip(0, 100), bound=1, epsilon="0.25", delta="1e-7"),
    PTRMode(Query.mode("visits"), epsilon="0.2", delta="1e-7"),
    PureToApprox(ExponentialQuantile(Query.quantile("age", "0.9") | Clip(0, 100), epsilon="0.3")),
)

BUDGET = ApproxDP(2, "1e-6")


if __name__ == "__main__":
    gen = np.random.default_rng(7)
    data = {
        "age": np.clip(gen.normal(41, 13, size=200_000).round(), 0, 100),
        "visits": gen.poisson(1.2, size=200_000).astype(np.float64),
    }
    print(plan.check(BUDGET).render())
    release = plan.run(data)
    print("released:", release.value)
    print("true:    ", float(np.mean(data["age"])), float(np.median(data["age"])), 1.0, float(np.quantile(data["age"], 0.9)))
