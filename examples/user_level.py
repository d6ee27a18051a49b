"""Every form of user-level privacy on one heavy-tailed data set: an error table and a plot.

Each synthetic user has 1 + Poisson(2) rows (0.5% "whales" have 20-200), and
each row a Pareto(1.2) amount, so a handful of users hold a large share of the
total. The privacy unit is one *user* with all their rows. For each statistic,
ε = 1 and every method is run ``--trials`` times with exact noise from
:mod:`dpalg.noise` (seeded generator: reproducible, NOT secure; examples only):

* total amount: ``ClipPerUser(0, C)`` with a guessed public C, with the best C in
  hindsight and at the 99th percentile of the totals (choices that look at the
  data, shown for reference only); ``Clip(0, c) | MaxRowsPerUser(k)``;
  ``AutoClipSum`` (no bound supplied); ``ShiftedInverse`` (no bound);
* number of rows: ``MaxRowsPerUser(5)``; ``ClipPerUser(0, 50)``; ``GroupPrivacy`` around
  a row-level count; ``ShiftedInverse``;
* number of users: ``count_users`` (sensitivity 1, no bound needed);
* a histogram over 8 public categories: ``MaxKeysPerUser(2, rows_per_key=3)`` versus ``MaxRowsPerUser(5)``,
  with Laplace (L1) and Gaussian (L2) noise.

Run: ``python examples/user_level.py [--small] [--out DIR]``. Writes
``user_level.md`` (the table) and ``user_level.png`` into ``examples/out/``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from dpalg import Clip, ClipPerUser, GroupPrivacy, MaxKeysPerUser, MaxRowsPerUser, Query  # noqa: E402
from dpalg import ZCDP, AbstractMeasurement, PureDP, Session  # noqa: E402
from dpalg.mechanisms import AutoClipSum, Gaussian, Laplace, ShiftedInverse  # noqa: E402
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import parse_arguments, number, save  # noqa: E402

CATEGORIES = tuple(f"c{i}" for i in range(8))


def synthetic_users(users: int, seed: int) -> dict[str, npt.NDArray[np.generic]]:
    """Rows of (uid, amount, category): 1 + Poisson(2) rows per user, 0.5% whales with 20-200 rows."""
    gen = np.random.default_rng(seed)  # synthetic population only, not privacy noise
    rows = 1 + gen.poisson(2.0, size=users)
    whales = gen.random(users) < 0.005
    rows[whales] = gen.integers(20, 200, size=int(whales.sum()))
    uid = np.repeat(np.arange(users), rows)
    amount = np.floor(10 * gen.pareto(1.2, size=uid.size))
    category = np.array(CATEGORIES, dtype=object)[np.minimum(gen.geometric(0.35, size=uid.size) - 1, 7)]
    return {"uid": uid, "amount": amount, "category": category}


def _session(node: AbstractMeasurement[PureDP] | AbstractMeasurement[ZCDP], trials: int) -> Session[PureDP] | Session[ZCDP]:
    """A session whose budget pays for ``trials`` runs of ``node``: the study spends it all."""
    cost = node.cost()
    if isinstance(cost, PureDP):
        return Session(PureDP(cost.epsilon * trials))
    assert isinstance(cost, ZCDP)
    return Session(ZCDP(cost.rho * trials))


def main() -> None:
    args = parse_arguments(__doc__, "fewer users and trials (for the test suite)", more=lambda parser: parser.add_argument("--trials", type=int, default=None))
    small = args.small
    users = 2_000 if small else 20_000
    trials = args.trials or (5 if small else 50)
    start = time.time()

    raw = synthetic_users(users, seed=15)
    codes = np.unique(raw["uid"], return_inverse=True)[1]
    totals = np.bincount(codes, weights=raw["amount"].astype(np.float64))
    rows_per_user = np.bincount(codes)
    rng = SeededRandomness(2026)
    print(f"{users:,} users, {raw['uid'].size:,} rows; the top 1% of users hold "
          f"{np.sort(totals)[-users // 100:].sum() / totals.sum():.0%} of the amount and "
          f"{np.sort(rows_per_user)[-users // 100:].sum() / rows_per_user.sum():.0%} of the rows")  # fmt: skip

    table: list[tuple[str, str, float, float, float]] = []  # statistic, method, truth, median |err|, mean |err|

    def study(statistic: str, method: str, node: Any, truth: float, read: Callable[[object], float] = number) -> None:
        session = _session(node, trials)
        outs = np.array([read(session.run(node, raw, rng=rng).value) for _ in range(trials)])
        err = np.abs(outs - truth)
        table.append((statistic, method, truth, float(np.median(err)), float(np.mean(err))))

    # --- the total amount -------------------------------------------------------------------
    amount = Query.sum("amount", user="uid")
    truth = float(totals.sum())
    study("total amount", "ClipPerUser(0, 1000), a guessed bound", Laplace(amount | ClipPerUser(0, 1000), epsilon=1), truth)
    clips = [2**j for j in range(4, 22, 2 if small else 1)]
    # expected |error| of a clip C: the bias it cuts off plus the Laplace noise C/ε (ε = 1)
    best = min(clips, key=lambda c: float(truth - np.minimum(totals, c).sum()) + c)
    study("total amount", f"ClipPerUser(0, {best}), best in hindsight", Laplace(amount | ClipPerUser(0, best), epsilon=1), truth)
    study("total amount", "Clip(0, 100) | MaxRowsPerUser(5)", Laplace(amount | Clip(0, 100) | MaxRowsPerUser(5), epsilon=1), truth)
    p99 = float(np.quantile(totals, 0.99))
    study("total amount", f"ClipPerUser(0, {p99:,.0f}), the 99th percentile (not private)", Laplace(amount | ClipPerUser(0, p99), epsilon=1), truth)

    def the_sum(value: object) -> float:
        assert isinstance(value, dict)
        return number(value["sum"])

    study("total amount", "AutoClipSum(upper_limit=2**30), no bound", AutoClipSum(amount, epsilon=1, upper_limit=2**30), truth, read=the_sum)
    study("total amount", "ShiftedInverse (no bound)", ShiftedInverse(Query.user_sum("amount", user="uid"), domain=(0, 2**40 - 1), epsilon=1), truth)

    # --- the number of rows -----------------------------------------------------------------
    truth = float(rows_per_user.sum())
    study("rows", "MaxRowsPerUser(5)", Laplace(Query.count(user="uid") | MaxRowsPerUser(5), epsilon=1), float(np.minimum(rows_per_user, 5).sum()))
    study("rows", "MaxRowsPerUser(5), error against all rows", Laplace(Query.count(user="uid") | MaxRowsPerUser(5), epsilon=1), truth)
    study("rows", "ClipPerUser(0, 50)", Laplace(Query.count(user="uid") | ClipPerUser(0, 50), epsilon=1), truth)
    study("rows", "GroupPrivacy(Laplace(count, eps=1/5), max_rows=5)", GroupPrivacy(Laplace(Query.count(), epsilon="0.2"), unit="uid", max_rows=5), truth)
    study("rows", "ShiftedInverse (no bound)", ShiftedInverse(Query.count(user="uid"), domain=(0, 2**40 - 1), epsilon=1), truth)

    # --- the number of users ----------------------------------------------------------------
    study("users", "count_users", Laplace(Query.count_users(user="uid"), epsilon=1), float(users))

    # --- a histogram over public categories (error: L1 distance to the true, unbounded counts) --
    hist = Query.histogram("category", keys=CATEGORIES, user="uid")
    true_counts = {k: float(np.sum(raw["category"] == k)) for k in CATEGORIES}
    total_rows = sum(true_counts.values())

    def l1(value: object) -> float:
        assert isinstance(value, dict)
        return sum(abs(number(value[k]) - true_counts[k]) for k in CATEGORIES) + total_rows  # study() subtracts the truth

    for label, q in (("MaxKeysPerUser(2, rows_per_key=3)", hist | MaxKeysPerUser(2, rows_per_key=3)), ("MaxRowsPerUser(5)", hist | MaxRowsPerUser(5))):
        study("histogram (L1 error)", f"Laplace, {label}", Laplace(q, epsilon=1), total_rows, read=l1)
        study("histogram (L1 error)", f"Gaussian rho=1/2, {label}", Gaussian(q, rho="0.5"), total_rows, read=l1)

    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["| statistic | method | true value | median abs. error | mean abs. error | median / truth |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for stat, method, tru, med, mean in table:
        lines.append(f"| {stat} | {method} | {tru:,.0f} | {med:,.1f} | {mean:,.1f} | {med / tru:.2%} |")
    text = "\n".join(lines) + "\n"
    (args.out / "user_level.md").write_text(text)
    print(f"\nε = 1 (Gaussian: ρ = 1/2), {trials} releases each:\n{text}")

    fig, ax = plt.subplots(figsize=(9, 0.35 * len(table) + 1.5))
    labels = [f"{s}: {m}" for s, m, *_ in table]
    ax.barh(range(len(table)), [max(med / tru, 1e-7) for _, _, tru, med, _ in table], color="C0")
    ax.set_yticks(range(len(table)), labels, fontsize=7)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel(f"median |error| / true value ({trials} releases, ε = 1)")
    ax.set_title(f"user-level releases on {users:,} heavy-tailed users")
    save(fig, args.out / "user_level.png")
    print(f"Wrote {args.out / 'user_level.md'} and user_level.png in {time.time() - start:.1f} s.")


if __name__ == "__main__":
    main()
