"""Utility and speed against peer libraries on the same synthetic data and budget.

Data: ``n = 10**6 + 1`` incomes, lognormal(10.5, 0.7) clipped to ``[0, 500_000]``
(seed 0; odd ``n`` so that every library's median is the same number). Budget:
pure ε = 1 for every release, one row is the privacy unit. For each library and
statistic: the mean absolute error over repeated releases, and the mean wall-clock
time of one release (including whatever input conversion the library's API needs,
excluding one-off construction such as OpenDP's scale search).

dpalg uses its defaults: SecureRandomness (the OS CSPRNG), exact discrete noise.

Semantics differ between libraries and the table states them:

* median -- dpalg ``ExponentialQuantile`` (exponential mechanism over the 2^20 + 1
  grid points of the clip range); OpenDP ``make_private_quantile`` on *the same*
  grid of candidates; diffprivlib ``tools.median`` (exponential mechanism over the
  intervals between data points); python-dp ``Median`` and PipelineDP
  ``PERCENTILE(50)`` (Google's quantile tree).
* mean -- dpalg ``Laplace(Query.mean)``: noisy sum / noisy count, ε/2 each
  (add/remove); OpenDP the same construction (float sum with its float-safe
  sensitivity); diffprivlib ``tools.mean`` treats ``n`` as public (Laplace with
  sensitivity (u − l)/n: bounded DP, a *weaker* neighbouring relation);
  python-dp ``BoundedMean`` and PipelineDP ``MEAN`` (Google's bounded mean).
* count -- the number of rows with Laplace-type noise of scale 1/ε.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks._common import Releases, Row, peer, repeat_release

LOWER, UPPER = 0.0, 500_000.0
EPSILON = 1.0
GRID_BITS = 20


def synthetic_incomes(n: int = 10**6 + 1, seed: int = 0) -> npt.NDArray[np.float64]:
    """The shared data set (data generation only; no privacy noise comes from numpy)."""
    gen = np.random.default_rng(seed)
    return np.clip(gen.lognormal(10.5, 0.7, n), LOWER, UPPER)


Runner = Callable[[], float]
# statistic -> (runner, description); a library provides some of "median", "mean", "count"
Provided = dict[str, tuple[Runner, str]]


def _number(value: object) -> float:
    assert isinstance(value, (int, float)), type(value)
    return float(value)


def _dpalg(x: npt.NDArray[np.float64]) -> Provided:
    from dpalg import Clip, Query
    from dpalg.data import as_dataset
    from dpalg.mechanisms import ExponentialQuantile, Laplace
    from dpalg.noise import SecureRandomness

    ds = as_dataset({"x": x})
    rng = SecureRandomness()
    median = ExponentialQuantile(Query.median("x") | Clip(LOWER, UPPER), epsilon=EPSILON, grid_bits=GRID_BITS)
    mean = Laplace(Query.mean("x") | Clip(LOWER, UPPER), epsilon=EPSILON)
    count = Laplace(Query.count(), epsilon=EPSILON)
    return {
        "median": (lambda: _number(median.release(ds, rng)), "ExponentialQuantile, 2^20 grid"),
        "mean": (lambda: _number(mean.release(ds, rng)), "noisy sum / noisy count"),
        "count": (lambda: _number(count.release(ds, rng)), "discrete Laplace"),
    }


def _opendp(x: npt.NDArray[np.float64]) -> Provided:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    candidates = np.linspace(LOWER, UPPER, 2**GRID_BITS + 1).tolist()
    median = dp.binary_search_chain(
        lambda s: dp.m.make_private_quantile(space[0], space[1], dp.max_divergence(), candidates, 0.5, s),
        d_in=1, d_out=EPSILON,
    )  # fmt: skip
    assert median.map(1) <= EPSILON
    clamped = space >> dp.t.then_clamp((LOWER, UPPER))
    noisy_sum = dp.binary_search_chain(lambda s: clamped >> dp.t.then_sum() >> dp.m.then_laplace(scale=s), d_in=1, d_out=EPSILON / 2)
    noisy_count_half = space >> dp.t.then_count() >> dp.m.then_laplace(scale=2 / EPSILON)
    assert noisy_sum.map(1) <= EPSILON / 2 and noisy_count_half.map(1) <= EPSILON / 2
    noisy_count = space >> dp.t.then_count() >> dp.m.then_laplace(scale=1 / EPSILON)
    assert noisy_count.map(1) <= EPSILON

    def mean() -> float:
        c = noisy_count_half(x)
        s = noisy_sum(x)
        return (LOWER + UPPER) / 2 if c <= 0 else min(max(s / c, LOWER), UPPER)

    return {
        "median": (lambda: float(median(x)), "make_private_quantile, same 2^20 grid"),
        "mean": (mean, "noisy sum / noisy count"),
        "count": (lambda: float(noisy_count(x)), "make_count + laplace"),
    }


def _diffprivlib(x: npt.NDArray[np.float64]) -> Provided:
    import diffprivlib.tools as tools

    def quiet(fn: Callable[[], Any]) -> Runner:
        def run() -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(fn())

        return run

    return {
        "median": (quiet(lambda: tools.median(x, epsilon=EPSILON, bounds=(LOWER, UPPER))), "tools.median"),
        "mean": (quiet(lambda: tools.mean(x, epsilon=EPSILON, bounds=(LOWER, UPPER))), "tools.mean, n public (bounded DP)"),
        "count": (quiet(lambda: tools.count_nonzero(x, epsilon=EPSILON)), "tools.count_nonzero"),
    }


def _pydp(x: npt.NDArray[np.float64]) -> Provided:
    from pydp.algorithms.laplacian import BoundedMean, Count, Median

    values = x.tolist()
    return {
        "median": (lambda: float(Median(epsilon=EPSILON, lower_bound=LOWER, upper_bound=UPPER, dtype="float").quick_result(values)), "Median"),
        "mean": (lambda: float(BoundedMean(epsilon=EPSILON, lower_bound=LOWER, upper_bound=UPPER, dtype="float").quick_result(values)), "BoundedMean"),
        "count": (lambda: float(Count(epsilon=EPSILON, dtype="float").quick_result(values)), "Count"),
    }  # fmt: skip


def _pipeline_dp(x: npt.NDArray[np.float64]) -> Provided:
    import pipeline_dp

    rows = list(enumerate(x.tolist()))  # one privacy id per row
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: 0, value_extractor=lambda r: r[1]
    )

    def runner(metric: Any, field: str, **bounds: float) -> Runner:
        def run() -> float:
            accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=0.0)
            engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
            params = pipeline_dp.AggregateParams(
                metrics=[metric], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                max_partitions_contributed=1, max_contributions_per_partition=1, **bounds,
            )  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = engine.aggregate(rows, params, extractors, public_partitions=[0])
                accountant.compute_budgets()
                ((_, metrics),) = list(result)
            return float(getattr(metrics, field))

        return run

    return {
        "median": (runner(pipeline_dp.Metrics.PERCENTILE(50), "percentile_50", min_value=LOWER, max_value=UPPER), "PERCENTILE(50), LocalBackend"),
        "mean": (runner(pipeline_dp.Metrics.MEAN, "mean", min_value=LOWER, max_value=UPPER), "MEAN, LocalBackend"),
        "count": (runner(pipeline_dp.Metrics.COUNT, "count"), "COUNT, LocalBackend"),
    }  # fmt: skip


PEERS: list[tuple[str, str, Callable[[npt.NDArray[np.float64]], Provided]]] = [
    ("opendp.prelude", "opendp", _opendp),
    ("diffprivlib", "diffprivlib", _diffprivlib),
    ("pydp", "python-dp", _pydp),
    ("pipeline_dp", "pipeline-dp", _pipeline_dp),
]

STATISTICS = ("median", "mean", "count")


def rows(full: bool = False, log: Callable[[str], None] = print) -> list[Row]:
    """MAE and time per release for each statistic: dpalg against every installed peer."""
    x = synthetic_incomes()
    truth = {"median": float(np.median(x)), "mean": float(np.mean(x)), "count": float(x.size)}
    # seconds of repeated releases per (library, statistic): slow peers get fewer releases
    # (stated in the table); dpalg always gets 100
    budget = 300.0 if full else 10.0
    max_releases = 100
    min_releases = 10 if full else 2

    def measure(runner: Runner) -> Releases:
        return repeat_release(runner, max_releases=max_releases, min_releases=min_releases, time_budget=budget)

    ours = _dpalg(x)
    mine: dict[str, Releases] = {}
    for stat in STATISTICS:
        log(f"  utility: dpalg {stat} ...")
        mine[stat] = repeat_release(ours[stat][0], max_releases=max_releases, min_releases=max_releases, time_budget=budget)
    out: list[Row] = []
    label = f"n=10^6+1, eps={EPSILON:g}"
    for module, dist, build in PEERS:
        mod, name = peer(module, dist)
        if mod is None:
            out.append(Row("utility", f"median/mean/count vs {dist}", None, None, name, note="skipped"))
            continue
        try:
            provided = build(x)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other peers
            out.append(Row("utility", f"median/mean/count vs {dist}", None, None, name, note=f"setup failed: {type(exc).__name__}"))
            continue
        for stat in STATISTICS:
            runner, how = provided[stat]
            log(f"  utility: {name} {stat} ...")
            try:
                theirs = measure(runner)
            except Exception as exc:  # noqa: BLE001
                out.append(Row("utility", f"{stat} vs {dist}", None, None, name, note=f"failed: {type(exc).__name__}: {str(exc)[:60]}"))
                continue
            ours_r = mine[stat]
            releases = f"{ours_r.count} vs {theirs.count} releases"
            se_ours, se_theirs = ours_r.mae_se(truth[stat]), theirs.mae_se(truth[stat])
            out.append(Row(
                "utility", f"{stat} MAE, {label}", ours_r.mae(truth[stat]), theirs.mae(truth[stat]), f"{name}: {how}",
                note=f"{releases}; SE {se_ours:.2g} vs {se_theirs:.2g}",
            ))  # fmt: skip
            out.append(Row("utility", f"{stat} time/release, {label}", ours_r.seconds_each, theirs.seconds_each, f"{name}: {how}", unit="s"))
    return out
