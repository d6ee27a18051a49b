"""GroupPrivacy: a row-level plan on at most k rows per user is user-level private at the group cost.

* the cost arithmetic is exact, and the (ε, δ) exponential is rounded *up*;
* brute force: on random data, adding one user (with many rows) moves the bounded
  row count by at most k, so the discrete Laplace release's worst log-ratio is
  at most kε; without the row cap (a broken variant) it exceeds kε;
* missing ids are nobody's rows; the row order never changes a seeded release;
* GroupPrivacy composes with user-level nodes; a bare row-level node does not;
* the accountant, the Session and ``dpalg audit`` all handle it.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import ZCDP, ApproxDP, Clip, Compose, GroupPrivacy, InvalidArgument, PureDP, PureToApprox, Query, Session, ZCDPToApprox
from dpalg.data import as_dataset
from dpalg.graph._group import bounded_rows, exp_upper, group_cost
from dpalg.graph._testing import Fixed
from dpalg.mechanisms import Gaussian, Laplace, SmoothBound
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(40), Fraction(1, 10**9)])
def test_exp_upper_is_an_upper_bound_and_tight(x: Fraction) -> None:
    with mpmath.workprec(400):
        exact = mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
        bound = mpmath.mpf(exp_upper(x).numerator) / exp_upper(x).denominator
        assert bound >= exact
        assert bound <= exact * (1 + mpmath.ldexp(1, -60))


def test_group_costs() -> None:
    assert group_cost(PureDP("0.1"), 7) == PureDP("0.7")
    assert group_cost(ZCDP("0.02"), 3) == ZCDP("0.18")
    approx = group_cost(ApproxDP("0.5", "1e-8"), 4)
    assert isinstance(approx, ApproxDP) and approx.epsilon == 2
    with mpmath.workprec(200):
        assert mpmath.mpf(approx.delta.numerator) / approx.delta.denominator >= 4 * mpmath.exp(mpmath.mpf(3) / 2) * mpmath.mpf("1e-8")
    node = GroupPrivacy(ZCDPToApprox(Gaussian(Query.count(), rho="0.01"), delta="1e-9"), unit="uid", max_rows=2)
    inner = node.plan.cost()
    assert node.cost() == group_cost(inner, 2)


def _rows(ids: list[object], xs: list[float]) -> dict[str, npt.NDArray[np.generic]]:
    return {"uid": np.array(ids, dtype=object), "x": np.array(xs, dtype=np.float64)}


_users = st.lists(st.tuples(st.sampled_from(["a", "b", "cc", 4, None]), st.floats(0, 9)), max_size=30)


@settings(max_examples=120, deadline=None)
@given(rows=_users, extra=st.integers(1, 40), k=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_adding_one_user_moves_the_bounded_count_by_at_most_k(rows: list[tuple[object, float]], extra: int, k: int, seed: int) -> None:
    eps = Fraction(1, 3)
    node = GroupPrivacy(Laplace(Query.count(), epsilon=eps), unit="uid", max_rows=k)
    ids: list[object] = [r[0] for r in rows]
    xs = [r[1] for r in rows]
    a = int(bounded_rows(node, as_dataset(_rows(ids, xs)), SeededRandomness(seed), ["x"]).sum())
    b = int(bounded_rows(node, as_dataset(_rows(ids + ["new-user"] * extra, xs + [1.0] * extra)), SeededRandomness(seed), ["x"]).sum())
    # the release is count + DLap(1/eps): its worst log-ratio is |b - a|·eps, exactly
    cost = node.cost()
    assert isinstance(cost, PureDP) and abs(b - a) * eps <= cost.epsilon
    # broken variant (no row cap: the plan on all rows with an id): the same pair exceeds k·eps
    if extra > k:
        assert extra * eps > cost.epsilon  # the uncapped count moves by all the new rows


def test_missing_ids_are_dropped_and_row_order_does_not_matter() -> None:
    node = GroupPrivacy(Laplace(Query.sum("x") | Clip(0, 10), epsilon=1, granularity=0), unit="uid", max_rows=2)
    uid = np.array(["a"] * 5 + ["b"] * 3 + [None, float("nan")], dtype=object)
    x = np.arange(10, dtype=np.float64)
    keep = bounded_rows(node, as_dataset({"uid": uid, "x": x}), SeededRandomness(0), ["x"])
    assert keep.tolist()[-2:] == [False, False] and int(keep.sum()) == 4
    perm = np.random.default_rng(1).permutation(10)
    values = []
    for order in (np.arange(10), perm):
        session = Session(PureDP(2))
        values.append(session.run(node, {"uid": uid[order], "x": x[order]}, rng=5).value)
    assert values[0] == values[1]


def test_composition_with_user_level_nodes() -> None:
    user_count = Laplace(Query.count_users(user="uid"), epsilon="0.5")
    plan = Compose(GroupPrivacy(Laplace(Query.count(), epsilon="0.1"), unit="uid", max_rows=5), user_count)
    assert plan.cost() == PureDP(1) and plan.neighbouring.unit == "uid"
    with pytest.raises(InvalidArgument, match="neighbouring"):
        Compose(Laplace(Query.count(), epsilon="0.1"), user_count)
    approx = Compose(PureToApprox(GroupPrivacy(Laplace(Query.count(), epsilon="0.1"), unit="uid", max_rows=5)),
                     GroupPrivacy(SmoothBound(Query.median("x") | Clip(0, 10), epsilon="0.1", delta="1e-9"), unit="uid", max_rows=3))  # fmt: skip
    assert isinstance(approx.cost(), ApproxDP)


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: GroupPrivacy(Laplace(Query.count_users(user="uid"), epsilon=1), unit="uid", max_rows=2), "one row"),
        (lambda: GroupPrivacy(Laplace(Query.count(), epsilon=1, relation="substitution"), unit="uid", max_rows=2), "one row"),
        (lambda: GroupPrivacy(Fixed(PureDP(1)), unit="uid", max_rows=0), "max_rows"),
        (lambda: GroupPrivacy(Fixed(PureDP(1)), unit="", max_rows=2), "unit"),
        (lambda: GroupPrivacy(GroupPrivacy(Fixed(PureDP(1)), unit="u", max_rows=2), unit="u", max_rows=2), "one row"),
        (lambda: GroupPrivacy(Fixed(ApproxDP(1, "0.01")), unit="u", max_rows=10), "vacuous"),
    ],
)
def test_invalid_group_privacy_fails_at_construction(build: object, needle: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert needle in str(info.value)


def test_the_audit_re_derives_group_privacy() -> None:
    plan = Compose(
        GroupPrivacy(Laplace(Query.mean("x") | Clip(0, 10), epsilon="0.2"), unit="uid", max_rows=3),
        Laplace(Query.count_users(user="uid"), epsilon="0.4"),
    )
    plan.check(PureDP(1))
    cert = json.loads(plan.run({"uid": np.array([1, 1, 2, 3, 3, 3, 3]), "x": np.arange(7.0)}, rng=2).certificate_json())
    report = audit_certificate(cert)
    assert report.exit_code == 0 and report.status == "cost_confirmed", report.findings
    tampered = json.loads(json.dumps(cert).replace('"max_rows": 3', '"max_rows": 1'))
    assert tampered != cert and audit_certificate(tampered).exit_code != 0


def test_missing_unit_column_is_refused_before_the_charge() -> None:
    session = Session(PureDP(1))
    with pytest.raises(InvalidArgument, match="uid"):
        session.run(GroupPrivacy(Laplace(Query.count(), epsilon="0.1"), unit="uid", max_rows=2), {"x": np.arange(3.0)})
    assert session.spent == PureDP(0)
