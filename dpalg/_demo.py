"""``dpalg demo``: the main job on built-in synthetic data.

Builds a realistic multi-node plan (pure-DP and zCDP parts joined by explicit
conversions), proves its cost against a budget before touching data, runs it,
prints the released values next to the true ones, writes the certificate
(``dpalg-demo-certificate.json`` in ``--out DIR``, by default the current
directory) and audits it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dpalg._commands import UsageError, audit_certificate
from dpalg import (
    ApproxDP, Clip, ClipPerUser, Compose, GroupBy, GroupPrivacy, KeySet, MaxGroupsPerUser, MaxRowsPerUser, PureDP, PureToApprox, Query,
    ZCDPToApprox,
)
from dpalg.graph._node import AbstractMeasurement
from dpalg.measures import ApproxDP as _ApproxDP
from dpalg.measures._display import short_measure
from dpalg.mechanisms import ProposeTest, PTRMode
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace, NoisyMax, PrivateRatio, ShiftedInverse, ShiftedInverseSearch

__all__ = ["demo_plan", "run_demo", "synthetic_data"]

REGIONS = ("north", "south", "east", "west")


def synthetic_data(rows: int, seed: int | None = None) -> dict[str, npt.NDArray[np.generic]]:
    """Synthetic people: age, income (heavy-tailed), region, user id and pages.

    Data generation is not a release path: it uses numpy's PCG64 for the
    fake population only; all privacy noise comes from :mod:`dpalg.noise`.
    """
    gen = np.random.default_rng(seed)
    age = np.clip(np.round(gen.gamma(9.0, 4.5, size=rows)), 0, 110)
    income = np.round((gen.pareto(2.5, size=rows) + 1) * 18_000, 2)
    region = np.array(REGIONS, dtype=object)[gen.choice(4, size=rows, p=[0.4, 0.3, 0.2, 0.1])]
    users = max(rows // 5, 1)
    uid = gen.integers(0, users, size=rows)
    pages = np.floor(gen.pareto(1.5, size=rows) * 3).astype(np.int64)
    clicked = (gen.random(size=rows) < 0.3).astype(np.int64)
    return {"age": age, "income": income, "region": region, "uid": uid, "pages": pages, "clicked": clicked}


def demo_plan() -> AbstractMeasurement[_ApproxDP]:
    """The demo's plan: (ε, δ)-DP overall, with pure and zCDP parts."""
    pure_part = Compose(
        Laplace(Query.count(), epsilon="0.1"),
        Laplace(Query.mean("age") | Clip(0, 100), epsilon="0.2"),
        Laplace(Query.histogram("region", keys=REGIONS), epsilon="0.2"),
        ExponentialQuantile(Query.median("income") | Clip(0, 500_000), epsilon="0.25"),
        NoisyMax(Query.histogram("region", keys=REGIONS), epsilon="0.05"),
        PrivateRatio("clicked").ksw(epsilon="0.2"),
    )
    zcdp_part = Compose(
        Gaussian(Query.sum("age") | Clip(0, 100), rho="0.005"),
        Gaussian(Query.count_distinct("age"), rho="0.005"),
    )
    ptr_part = Compose(  # data-dependent releases: each may return ⊥
        ProposeTest(Query.median("age") | Clip(0, 100), bound=1, epsilon="0.25", delta="1e-7"),
        PTRMode(Query.mode("clicked"), epsilon="0.1", delta="1e-7"),
    )
    return Compose(PureToApprox(pure_part), ZCDPToApprox(zcdp_part, delta="1e-7"), ptr_part)


DEMO_BUDGET = ApproxDP(3, "1e-5")


def user_plan() -> AbstractMeasurement[PureDP]:
    """A second plan protecting *users* (all rows of one uid): it cannot be
    composed with the row-level plan (dpalg refuses), so it has its own budget."""
    pages = Query.user_sum("pages", user="uid")
    return Compose(
        Laplace(Query.count_users(user="uid"), epsilon="0.1"),
        Laplace(Query.count(user="uid") | MaxRowsPerUser(10), epsilon="0.1"),
        Laplace(Query.sum("pages", user="uid") | ClipPerUser(0, 100), epsilon="0.2"),
        GroupPrivacy(Laplace(Query.mean("age") | Clip(0, 100), epsilon="0.01"), unit="uid", max_rows=10),
        ShiftedInverse(pages, domain=(0, 2**32 - 1), epsilon="0.25"),
        ShiftedInverseSearch(pages, domain=(0, 2**32 - 1), epsilon="0.25"),
    )


USER_BUDGET = PureDP(1)


def group_plan() -> AbstractMeasurement[PureDP]:
    """A third plan: per region, at user level (each user's rows count in at most 2 regions, 10 rows in each)."""
    return GroupBy("region", keys=KeySet(REGIONS), aggregates={
        "rows": Laplace(Query.count(user="uid") | MaxRowsPerUser(10), epsilon="0.25"),
        "mean_age": Laplace(Query.mean("age", user="uid") | Clip(0, 100) | MaxRowsPerUser(10), epsilon="0.25"),
    }, bound=MaxGroupsPerUser(2))


GROUP_BUDGET = PureDP(1)


CERTIFICATE_NAME = "dpalg-demo-certificate.json"


def run_demo(seed: int | None = None, rows: int = 100_000, out: Path | str = ".") -> int:
    """Run the demo; returns the process exit code.

    Args:
        seed: seeds the synthetic data *and* the noise (insecure; reproducible demos).
        rows: rows of synthetic data.
        out: the directory the certificate is written to, as
            ``dpalg-demo-certificate.json`` (created if missing).
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise UsageError(f"--rows must be a positive integer, not {rows!r}")
    directory = Path(out)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {directory}: {exc}") from None
    if not directory.is_dir():
        raise UsageError(f"--out {directory}: not a directory")

    plan = demo_plan()
    print("== plan ==")
    print(plan)  # the indented tree; repr(plan) is the one-line form that rebuilds it
    print("\n== derivation (no data touched) ==")
    derivation = plan.check(DEMO_BUDGET)
    print(derivation.render())
    print(f"\nOK: {short_measure(derivation.cost, 'up')} fits {short_measure(DEMO_BUDGET, 'down')}")

    data = synthetic_data(rows, seed)
    release = plan.run(data, rng=seed)
    from dpalg.data import as_dataset

    ds = as_dataset(data)
    truths = [
        ("count", Query.count().evaluate(ds)),
        ("mean age", (Query.mean("age") | Clip(0, 100)).evaluate(ds)),
        ("region histogram", Query.histogram("region", keys=REGIONS).evaluate(ds)),
        ("median income", (Query.median("income") | Clip(0, 500_000)).evaluate(ds)),
        ("most common region", max(REGIONS, key=lambda r: int(np.sum(data["region"] == r)))),
        ("click-through ratio", float(np.mean(data["clicked"].astype(np.float64)))),
        ("sum of ages", (Query.sum("age") | Clip(0, 100)).evaluate(ds)),
        ("distinct ages", Query.count_distinct("age").evaluate(ds)),
        ("median age (PTR)", (Query.median("age") | Clip(0, 100)).evaluate(ds)),
        ("modal clicked (PTR)", Query.mode("clicked").evaluate(ds)),
    ]
    parts = release.value
    assert isinstance(parts, tuple) and all(isinstance(p, tuple) for p in parts)
    released = [v for part in parts for v in part]
    print(f"\n== release on {rows} synthetic rows ({release.certificate['randomness']}) ==")
    for (name, truth), value in zip(truths, released):
        print(f"  {name:20s} released {_fmt(value):>40s}   true {_fmt(truth)}")

    uplan = user_plan()
    print(f"\n== user-level plan (unit: one user with all rows) ==\n{uplan.check(USER_BUDGET).render()}")
    user_values = uplan.run(data, rng=seed).value
    assert isinstance(user_values, tuple)
    totals = np.bincount(np.unique(data["uid"], return_inverse=True)[1], weights=data["pages"].astype(np.float64))
    rows_per_user = np.bincount(np.unique(data["uid"], return_inverse=True)[1])
    user_truths = [
        float(totals.size), float(np.minimum(rows_per_user, 10).sum()), float(np.minimum(totals, 100).sum()),
        float(np.mean(data["age"].astype(np.float64))), float(np.sum(data["pages"])), float(np.sum(data["pages"])),
    ]
    names = (
        "users", "rows (<= 10 per user)", "pages (each user clipped at 100)", "mean age (group privacy, 10 rows)",
        "pages (shifted inverse, EM)", "pages (binary search)",
    )
    for name, truth, value in zip(names, user_truths, user_values):
        print(f"  {name:34s} released {_fmt(value):>20s}   true {_fmt(truth)}")
    print(
        "  (the shifted inverse releases a sum whose users' totals are truncated at a privately chosen level: it\n"
        "   errs downwards by design, by at most the mass above that level; see docs/mechanisms/shifted_inverse.md)"
    )

    gplan = group_plan()
    print(f"\n== per region, user level (GroupBy: a user counts in at most 2 regions) ==\n{gplan.check(GROUP_BUDGET).render()}")
    by_region = gplan.run(data, rng=seed).value
    assert isinstance(by_region, dict)
    for region in REGIONS:
        mask = data["region"] == region
        got = by_region[region]
        print(
            f"  {region:6s} rows released {_fmt(got['rows']):>8s} (true {int(mask.sum())}),"
            f" mean age released {_fmt(got['mean_age']):>6s} (true {_fmt(float(np.mean(data['age'][mask])))})"
        )
    print("  (released counts are lower: a user's rows count in at most 2 regions and 10 rows in each)")

    path = directory / CERTIFICATE_NAME
    try:
        path.write_text(release.certificate_json())
    except OSError as exc:
        raise UsageError(f"--out {directory}: cannot write the certificate: {exc}") from None
    ok, findings = audit_certificate(json.loads(path.read_text()))
    print(f"\n== audit of {path} (the same as: dpalg audit {path}) ==")
    for line in findings:
        print("  " + line)
    return 0 if ok else 1


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)
