"""GROUP BY utility against OpenDP and PipelineDP: the same data, the same ε, the same bounds.

Run (in an environment with the peers; each peer is skipped when absent)::

    python benchmarks/bench_groupby.py [--insteval PATH/InstEval.csv] [--reps 50]

Three comparisons; every figure is a mean absolute error per cell (one cell = one
group's statistic), averaged over the groups and ``--reps`` releases, the truth being
the statistic on the *whole* data (so the bias of contribution bounding counts):

1. **Per-group count and mean, public keys, user level.** Students (the privacy
   unit) rate lectures in 14 departments, ratings 1..5 (lme4's ``InstEval``
   shape). Bounds: each student reaches at most ``m = 3`` departments (L0) and
   keeps at most ``k = 20`` ratings per department (L∞); total pure ε = 1.
   dpalg ``GroupBy(..., bound=MaxGroupsPerUser(3))`` with ``| MaxRowsPerUser(20)``
   costs ``3·(ε_n + ε_mean)``; it is compared with each peer under *that peer's*
   split of the budget:

   * OpenDP 0.16 (polars context: ``truncate_num_groups(3)``,
     ``truncate_per_group(20)``, ``dp.len()`` and ``.dp.mean((1, 5))`` over public
     keys ``with_keys``): ε/3 to the count, ε/3 to the mean's sum and ε/3 to its
     count -- dpalg ``n`` at ε/9 and ``mean`` at 2ε/9 per group is the same split;
   * PipelineDP 0.3 (``DPEngine`` on the local backend, ``COUNT`` + ``MEAN``,
     ``max_partitions_contributed=3``, ``max_contributions_per_partition=20``,
     public partitions): it *shares* one noisy count between COUNT and MEAN and
     centres the sum (ε/2 each); dpalg does the same with two aggregates (a count
     and the sum of ``y − 3`` clipped to [−2, 2], ε/6 each per group) and the
     mean ``3 + sum/max(1, n)`` as post-processing.

   Every mean is clamped to [1, 5] (post-processing, for every library).
   Data: a synthetic population with the InstEval shape whose students all obey
   the bounds (so the error is the noise's), and the real InstEval when
   ``--insteval`` names its CSV (students there rate in up to 13 departments and
   up to 92 lectures, so bounding drops rows; OpenDP's group truncation runs with
   ``keep="first"``: its ``keep="sample"`` fails on polars 1.36 with "multiple
   fields with name 'dept'"), and on either data OpenDP's ``truncate_num_groups(3)``
   keeps 2 groups per student: it filters a 1-based dense rank with ``< k``, while
   its accounting assumes 3 (private, but it loses rows).

2. **Per-group median, public keys, row level**, pure ε = 1 per group (parallel
   composition): dpalg ``SmoothBound`` (ε = 1, δ = 1e-6: it is (ε, δ)-DP, the others
   pure), dpalg ``ExponentialQuantile`` (exponential mechanism and
   permute-and-flip) and OpenDP ``.dp.median(candidates)`` on the same candidates.
   Data: InstEval ratings per department (integers 1..5: ties everywhere,
   candidates 1..5) and synthetic incomes in 10 regions of 25 to 30 000 rows,
   rounded to 100 (ties), candidates the multiples of 100 in [0, 500 000] (so the
   true median is a candidate), and the same incomes to the cent with the grid of
   multiples of 500 (the true median is not a candidate).

3. **Private keys**: how many of the true keys are released by dpalg
   ``PartitionSelection(epsilon=1, delta=1e-5)`` and by PipelineDP's
   ``select_partitions`` (truncated geometric, the same optimal rule) at the same
   (ε, δ) and bound ``m``; and the fraction of keys with exactly 12 users kept
   (DVGM's π(12) ≈ 0.760 at m = 1).

The load average is printed at the start and at the end (the machine is shared).
"""

from __future__ import annotations

import argparse
import math
import os
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks._common import peer

DEPTS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15]  # InstEval's 14 department codes
M_GROUPS, K_ROWS = 3, 20
Columns = dict[str, npt.NDArray[Any]]
Cells = dict[object, dict[str, float]]  # key -> {statistic: value}


# --- data -------------------------------------------------------------------------------------------


def insteval_like(students: int = 2972, seed: int = 0) -> Columns:
    """A synthetic InstEval: each student rates in 1 to 3 departments, 1 to 20 ratings in all (data generation only)."""
    gen = np.random.default_rng(seed)
    popularity = gen.dirichlet(np.full(len(DEPTS), 3.0))
    tilt = gen.normal(0, 0.25, len(DEPTS))  # departments differ in their mean rating
    s, dept, y = [], [], []
    for student in range(students):
        depts = gen.choice(len(DEPTS), size=gen.integers(1, 4), replace=False, p=popularity)
        n = gen.integers(len(depts), 21)
        where = depts[gen.integers(0, len(depts), n)]
        where[: len(depts)] = depts  # every chosen department gets a rating
        rating = np.clip(np.rint(gen.normal(3.2 + tilt[where], 1.3)), 1, 5)
        s += [student] * n
        dept += [DEPTS[i] for i in where]
        y += rating.tolist()
    return {"s": np.array(s), "dept": np.array(dept), "y": np.array(y, dtype=float)}


def load_insteval(path: str) -> Columns:
    """lme4's InstEval (student ``s``, department ``dept``, rating ``y``) from its Rdatasets CSV."""
    import pandas as pd

    frame = pd.read_csv(path)
    return {"s": frame["s"].to_numpy(), "dept": frame["dept"].to_numpy(), "y": frame["y"].to_numpy().astype(float)}


def regional_incomes(seed: int = 1, rounded: bool = True) -> Columns:
    """Incomes in 10 regions of 25 to 30 000 rows, rounded to 100 (ties) or to the cent; one region is a spike of equal values."""
    gen = np.random.default_rng(seed)
    sizes = [25, 60, 150, 400, 1000, 3000, 10_000, 30_000, 2_000, 500]
    region, x = [], []
    for r, n in enumerate(sizes):
        values = gen.lognormal(10.3 + 0.05 * r, 0.6, n)
        if r == 8:  # a region where 60% of the rows hold one value
            values[: int(0.6 * n)] = 31_200
        region += [f"r{r}"] * n
        x += (np.round(values / 100) * 100 if rounded else np.round(values, 2)).tolist()
    return {"region": np.array(region, dtype=object), "x": np.clip(np.array(x), 0, 500_000)}


def truth(data: Columns, by: str, keys: list[object]) -> Cells:
    out: Cells = {}
    for key in keys:
        y = data["y"][data[by] == key]
        out[key] = {"n": float(y.size), "mean": float(y.mean()) if y.size else 3.0}
    return out


def mae(releases: list[Cells], want: Cells, stat: str) -> float:
    errs = [abs(rel[k][stat] - want[k][stat]) for rel in releases for k in want]
    return sum(errs) / len(errs)


# --- 1. count and mean, user level --------------------------------------------------------------------


def dpalg_count_mean(data: Columns, split: str) -> Callable[[], Cells]:
    from dpalg import Clip, GroupBy, KeySet, MaxGroupsPerUser, MaxRowsPerUser, Query, Session
    from dpalg.mechanisms import Laplace

    per_group = Fraction(1, M_GROUPS)  # m·(sum of the aggregates' ε) = 1
    if split == "opendp":
        aggregates = {
            "n": Laplace(Query.count(user="s") | MaxRowsPerUser(K_ROWS), epsilon=per_group / 3),
            "mean": Laplace(Query.mean("y", user="s") | Clip(1, 5) | MaxRowsPerUser(K_ROWS), epsilon=per_group * 2 / 3),
        }
    else:  # PipelineDP's: one count, shared, and the centred sum
        aggregates = {
            "n": Laplace(Query.count(user="s") | MaxRowsPerUser(K_ROWS), epsilon=per_group / 2),
            "sum": Laplace(Query.sum("yc", user="s") | Clip(-2, 2) | MaxRowsPerUser(K_ROWS), epsilon=per_group / 2),
        }
    plan = GroupBy("dept", keys=KeySet(DEPTS), aggregates=aggregates, bound=MaxGroupsPerUser(M_GROUPS))
    assert plan.cost().epsilon == 1
    cols = {**data, "yc": data["y"] - 3}

    def run() -> Cells:
        value = Session(plan.cost()).run(plan, cols).value
        out: Cells = {}
        for key, cell in value.items():
            n = float(cell["n"])
            mean = float(cell["mean"]) if "mean" in cell else 3 + float(cell["sum"]) / max(1.0, n)
            out[key] = {"n": n, "mean": min(5.0, max(1.0, mean))}
        return out

    return run


def opendp_count_mean(dp: Any, data: Columns, keep: str) -> Callable[[], Cells]:
    import polars as pl

    frame = pl.DataFrame({"s": data["s"], "dept": data["dept"], "y": data["y"]}).lazy()
    keys = pl.DataFrame({"dept": DEPTS}, schema={"dept": frame.collect_schema()["dept"]})

    def run() -> Cells:
        ctx = dp.Context.compositor(
            data=frame, privacy_unit=dp.unit_of(contributions=1, identifier="s"), privacy_loss=dp.loss_of(epsilon=1.0),
            split_evenly_over=1, margins=[dp.polars.Margin(by=["dept"], invariant="keys", max_length=len(data["y"]))],
        )  # fmt: skip
        query = (
            ctx.query().truncate_num_groups(M_GROUPS, by=["dept"], keep=keep).truncate_per_group(K_ROWS, by=["dept"])
            .group_by("dept").agg(dp.len(signed=False), pl.col("y").fill_null(3.0).dp.mean((1.0, 5.0)))
            .with_keys(keys)
        )  # fmt: skip
        out = query.release().collect()
        return {
            row["dept"]: {"n": float(row["len"]), "mean": min(5.0, max(1.0, float(row["y"])))}
            for row in out.iter_rows(named=True)
        }

    return run


def pipeline_dp_count_mean(pdp: Any, data: Columns) -> Callable[[], Cells]:
    rows = list(zip(data["s"].tolist(), data["dept"].tolist(), data["y"].tolist()))
    extractors = pdp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1], value_extractor=lambda r: r[2])

    def run() -> Cells:
        accountant = pdp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=0.0)
        engine = pdp.DPEngine(accountant, pdp.LocalBackend())
        params = pdp.AggregateParams(
            metrics=[pdp.Metrics.COUNT, pdp.Metrics.MEAN], noise_kind=pdp.NoiseKind.LAPLACE,
            max_partitions_contributed=M_GROUPS, max_contributions_per_partition=K_ROWS, min_value=1.0, max_value=5.0,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = engine.aggregate(rows, params, extractors, public_partitions=DEPTS)
            accountant.compute_budgets()
            return {k: {"n": float(v.count), "mean": min(5.0, max(1.0, float(v.mean)))} for k, v in result}

    return run


def count_mean(data: Columns, label: str, reps: int, odp: Any, odp_name: str, pdp: Any, pdp_name: str) -> None:
    want = truth(data, "dept", list(DEPTS))
    kept = _bounded_share(data)
    print(f"\n[1] per-department count and mean, user level, m={M_GROUPS}, k={K_ROWS}, total eps=1: {label}")
    print(f"    {len(data['y']):,} ratings, {len(np.unique(data['s'])):,} students; rows a random bound keeps: {kept:.1%}")
    print(f"    {'library (split)':58s} {'count MAE':>10s} {'mean MAE':>9s}")
    pairs: list[tuple[str, Callable[[], Cells] | None, str, Callable[[], Cells]]] = [
        ("OpenDP split: n eps/3, mean eps/3 + eps/3", None if odp is None else opendp_count_mean(odp, data, "first"), odp_name, dpalg_count_mean(data, "opendp")),
        ("PipelineDP split: shared n eps/2, centred sum eps/2", None if pdp is None else pipeline_dp_count_mean(pdp, data), pdp_name, dpalg_count_mean(data, "pipeline_dp")),
    ]  # fmt: skip
    for split, theirs, name, ours in pairs:
        ours_out = [ours() for _ in range(reps)]
        a_n, a_m = mae(ours_out, want, "n"), mae(ours_out, want, "mean")
        print(f"    {'dpalg GroupBy (' + split + ')':58s} {a_n:10.1f} {a_m:9.4f}")
        if theirs is None:
            print(f"    {name + ' (skipped)':58s}")
            continue
        their_out = [theirs() for _ in range(reps)]
        b_n, b_m = mae(their_out, want, "n"), mae(their_out, want, "mean")
        print(f"    {name:58s} {b_n:10.1f} {b_m:9.4f}")
        print(f"    {'ratio dpalg/' + name.split()[0]:58s} {a_n / b_n:10.2f} {a_m / b_m:9.2f}")


def _bounded_share(data: Columns) -> float:
    """The share of rows that survive m groups per student (a uniform choice) and k rows per group (expected, non-private)."""
    import pandas as pd

    frame = pd.DataFrame({"s": data["s"], "dept": data["dept"]})
    per = frame.groupby(["s", "dept"]).size().clip(upper=K_ROWS).reset_index(name="n")
    groups = per.groupby("s")["n"].agg(["sum", "size"])
    return float((groups["sum"] * np.minimum(1.0, M_GROUPS / groups["size"])).sum() / len(frame))


# --- 2. medians, row level ------------------------------------------------------------------------------


def dpalg_medians(data: Columns, by: str, col: str, keys: list[object], lo: float, hi: float, candidates: list[float]) -> dict[str, Callable[[], dict[object, float]]]:
    from dpalg import Clip, GroupBy, KeySet, Query, Session
    from dpalg.mechanisms import ExponentialQuantile, SmoothBound

    query = Query.median(col) | Clip(lo, hi)
    nodes = {
        "dpalg SmoothBound (eps=1, delta=1e-6)": SmoothBound(query, epsilon=1, delta="1e-6"),
        "dpalg ExponentialQuantile (exponential)": ExponentialQuantile(query, epsilon=1, candidates=candidates),
        "dpalg ExponentialQuantile (permute-and-flip)": ExponentialQuantile(query, epsilon=1, candidates=candidates, selection="permute_and_flip"),
    }
    out = {}
    for name, node in nodes.items():
        plan = GroupBy(by, keys=KeySet(keys), aggregates={"median": node})

        def run(plan: Any = plan) -> dict[object, float]:
            return {k: float(v["median"]) for k, v in Session(plan.cost()).run(plan, data).value.items()}

        out[name] = run
    return out


def opendp_median(dp: Any, data: Columns, by: str, col: str, keys: list[object], candidates: list[float]) -> Callable[[], dict[object, float]]:
    import polars as pl

    frame = pl.DataFrame({by: data[by].tolist(), col: data[col].astype(float)}).lazy()
    key_frame = pl.DataFrame({by: keys}, schema={by: frame.collect_schema()[by]})

    def run() -> dict[object, float]:
        ctx = dp.Context.compositor(
            data=frame, privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1,
            margins=[dp.polars.Margin(by=[by], invariant="keys", max_length=len(data[col]))],
        )  # fmt: skip
        query = ctx.query().group_by(by).agg(pl.col(col).fill_null(candidates[0]).dp.median(candidates)).with_keys(key_frame)
        return {row[by]: float(row[col]) for row in query.release().collect().iter_rows(named=True)}

    return run


def medians(data: Columns, label: str, by: str, col: str, lo: float, hi: float, candidates: list[float], reps: int, odp: Any, odp_name: str) -> None:
    keys = sorted(set(data[by].tolist()), key=lambda k: (str(type(k)), k))
    want = {k: float(np.median(data[col][data[by] == k])) for k in keys}
    sizes = {k: int(np.sum(data[by] == k)) for k in keys}
    runners = dpalg_medians(data, by, col, keys, lo, hi, candidates)
    if odp is not None:
        runners[f"{odp_name} .dp.median (exponential, same candidates)"] = opendp_median(odp, data, by, col, keys, candidates)
    print(f"\n[2] per-group median, row level, eps=1 per group: {label}; {len(candidates)} candidates")
    results = {name: [run() for _ in range(reps)] for name, run in runners.items()}
    small = [k for k in keys if sizes[k] <= 200]
    print(f"    {'library':62s} {'MAE all':>9s} {'MAE n<=200':>11s} {'MAE n>200':>10s}")

    def err(name: str, ks: list[object]) -> float:
        return float(np.mean([abs(rel[k] - want[k]) for rel in results[name] for k in ks])) if ks else math.nan

    base = next((n for n in results if n.startswith(odp_name)), None) if odp is not None else None
    for name in results:
        large = [k for k in keys if k not in small]
        print(f"    {name:62s} {err(name, keys):9.4g} {err(name, small):11.4g} {err(name, large):10.4g}")
    if base is not None:
        for name in results:
            if name != base:
                b = err(base, keys)
                ratio = "n/a (OpenDP's MAE is 0)" if b == 0 else f"{err(name, keys) / b:9.3g}"
                print(f"    ratio {name + ' / OpenDP':56s} {ratio}")
    print("    per group (size: true median | " + " | ".join(n.split(" (")[0].replace("dpalg ", "") for n in results) + ")")
    for k in keys:
        cells = " | ".join(f"{float(np.mean([abs(rel[k] - want[k]) for rel in results[n]])):.4g}" for n in results)
        print(f"      {k!s:>5} n={sizes[k]:<6d} {want[k]:>9g} | {cells}")


# --- 3. private keys ---------------------------------------------------------------------------------------


def private_keys(reps: int, pdp: Any, pdp_name: str) -> None:
    from dpalg import GroupBy, MaxGroupsPerUser, MaxRowsPerUser, PartitionSelection, PureToApprox, Query, Session
    from dpalg.mechanisms import Laplace
    from dpalg.noise import keep_probability_bounds

    gen = np.random.default_rng(2)  # data generation only
    print("\n[3] private keys, eps=1, delta=1e-5 for the selection")
    for m in (1, 3):
        # keys with exactly n users (each user holds m keys), and a long-tailed population of keys
        blocks = [(n, 400) for n in (6, 10, 12, 15, 20, 30)]
        users, keys_col, key_users = [], [], {}
        uid = 0
        for n, count in blocks:
            names = [f"n{n}_{i}" for i in range(count)]
            slots = [name for name in names for _ in range(n)]  # every key needs n distinct users
            gen.shuffle(slots)
            for start in range(0, len(slots), m):
                held = slots[start:start + m]
                if len(set(held)) < len(held):  # a user holding one key twice would hold fewer keys: split them
                    for name in held:
                        users.append(uid), keys_col.append(name)
                        uid += 1
                    continue
                for name in held:
                    users.append(uid), keys_col.append(name)
                uid += 1
            for name in names:
                key_users[name] = n
        tail = gen.zipf(1.5, 20_000)
        for t in tail.tolist():
            users.append(uid), keys_col.append(f"z{min(t, 10**6)}")
            uid += 1
        data = {"u": np.array(users), "k": np.array(keys_col, dtype=object)}
        present = set(keys_col)
        plan = GroupBy(
            "k", keys=PartitionSelection(epsilon=1, delta="1e-5"), bound=MaxGroupsPerUser(m),
            aggregates={"n": PureToApprox(Laplace(Query.count(user="u") | MaxRowsPerUser(1), epsilon=Fraction(1, 1000 * m)))},
        )  # fmt: skip

        def ours() -> set[object]:
            return set(Session(plan.cost()).run(plan, data).value)

        runs: dict[str, Callable[[], set[object]]] = {"dpalg PartitionSelection": ours}
        if pdp is not None:
            rows = list(zip(users, keys_col))
            extractors = pdp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1], value_extractor=lambda r: 0)

            def theirs(rows: list[tuple[int, str]] = rows, extractors: Any = extractors, m: int = m) -> set[object]:
                accountant = pdp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-5)
                engine = pdp.DPEngine(accountant, pdp.LocalBackend())
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = engine.select_partitions(rows, pdp.SelectPartitionsParams(max_partitions_contributed=m), extractors)
                    accountant.compute_budgets()
                    return set(out)

            runs[f"{pdp_name} select_partitions"] = theirs
        lo12, _ = keep_probability_bounds(12, 1, "1e-5", max_partitions=m)
        print(f"  m={m}: {len(present):,} true keys ({len(present) - len(key_users):,} from a Zipf(1.5) tail); pi(12) = {lo12 / 2**64:.4f}")
        print(f"    {'library':44s} {'keys released':>14s} " + " ".join(f"{'kept@' + str(n):>8s}" for n, _ in blocks))
        for name, run in runs.items():
            outs = [run() for _ in range(reps)]
            assert all(o <= present for o in outs)
            released = np.mean([len(o) for o in outs])
            fracs = [np.mean([sum(1 for key in o if key.startswith(f"n{n}_")) / count for o in outs]) for n, count in blocks]
            print(f"    {name:44s} {released:14.1f} " + " ".join(f"{f:8.3f}" for f in fracs))
        print(f"    {'pi(n), exact (keep_probability_bounds)':44s} {'':14s} " + " ".join(
            f"{keep_probability_bounds(n, 1, '1e-5', max_partitions=m)[0] / 2**64:8.3f}" for n, _ in blocks))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--insteval", help="path to lme4's InstEval.csv (Rdatasets csv/lme4/InstEval.csv); synthetic data only without it")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--only", choices=["count-mean", "median", "keys"], action="append")
    args = parser.parse_args()
    only = args.only or ["count-mean", "median", "keys"]
    odp, odp_name = peer("opendp.prelude", "opendp")
    if odp is not None:
        odp.enable_features("contrib")
    pdp, pdp_name = peer("pipeline_dp", "pipeline-dp")
    print(f"load average at the start: {os.getloadavg()}; peers: {odp_name}; {pdp_name}; {args.reps} releases each")
    real = load_insteval(args.insteval) if args.insteval else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # OpenDP's note on the default of signed=
        if "count-mean" in only:
            count_mean(insteval_like(), "synthetic InstEval shape (every student within the bounds)", args.reps, odp, odp_name, pdp, pdp_name)
            if real is not None:
                count_mean(real, "real InstEval (lme4)", args.reps, odp, odp_name, pdp, pdp_name)
        if "median" in only:
            if real is not None:
                medians({"dept": real["dept"], "y": real["y"]}, "InstEval ratings per department (ties)", "dept", "y", 1, 5, [1.0, 2.0, 3.0, 4.0, 5.0], args.reps, odp, odp_name)
            incomes = regional_incomes()
            medians(incomes, "synthetic incomes by region, rounded to 100", "region", "x", 0, 500_000, [100.0 * i for i in range(5001)], args.reps, odp, odp_name)
            cents = regional_incomes(rounded=False)
            medians(cents, "the same incomes to the cent, a grid of step 500", "region", "x", 0, 500_000, [500.0 * i for i in range(1001)], args.reps, odp, odp_name)
        if "keys" in only:
            private_keys(args.reps, pdp, pdp_name)
    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
