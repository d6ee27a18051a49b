"""Shifted inverse: exact privacy on tiny domains, utility guarantee, validation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpalg import ApproxDP, Clip, Compose, InvalidArgument, PureDP, Query, ZCDPToApprox
from dpalg.data import as_dataset
from dpalg.mechanisms._shifted_inverse import (
    ShiftedInverse,
    ShiftedInverseSearch,
    ShiftedInverseSearchZCDP,
    search_steps,
    user_loss,
)
from dpalg.noise import SeededRandomness

CONTRIBS = (0, 1, 2, 4, 7)


def _data(users: tuple[int, ...]) -> dict[str, np.ndarray]:
    """One row per user with that user's contribution (ids are positions)."""
    return {"uid": np.arange(len(users)), "v": np.array(users, dtype=np.float64)}


def _pairs(max_users: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    out = []
    for n in range(max_users):
        for x in itertools.combinations_with_replacement(CONTRIBS, n):
            for v in CONTRIBS:
                out.append((x, x + (v,)))
                out.append((x + (v,), x))
    return out


def _em_log_probs(node: ShiftedInverse, users: tuple[int, ...], factor: float = 1.0) -> np.ndarray:
    starts, lengths, logw = node.distribution(as_dataset(_data(users)))
    lo, hi = node.domain
    out = np.empty(hi - lo + 1)
    for s, n, w in zip(starts, lengths, logw):
        out[s - lo : s - lo + n] = w * factor
    normalised: np.ndarray = out - float(np.logaddexp.reduce(out))
    return normalised


def test_em_exact_ratios_on_all_neighbours() -> None:
    node = ShiftedInverse(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.7", beta="0.3")
    worst = max(float(np.max(_em_log_probs(node, x) - _em_log_probs(node, y))) for x, y in _pairs(3))
    assert 0.3 < worst <= 0.7 + 1e-12


def test_em_without_the_factor_two_is_caught() -> None:
    node = ShiftedInverse(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.7", beta="0.3")
    worst = max(float(np.max(_em_log_probs(node, x, 2.0) - _em_log_probs(node, y, 2.0))) for x, y in _pairs(3))
    assert worst > 0.7 + 0.05


def _search_distribution(node: ShiftedInverseSearch | ShiftedInverseSearchZCDP, users: tuple[int, ...]) -> dict[int, float]:
    """Exact output distribution of the noisy binary search (dynamic programming)."""
    loss = user_loss(node.query, as_dataset(_data(users)), node.domain[0])
    tau = node.tau()
    zs = range(-200, 201)
    if isinstance(node, ShiftedInverseSearch):
        p = math.exp(-1 / float(node.sigma()))
        weights = [(1 - p) / (1 + p) * p ** abs(z) for z in zs]
    else:
        s2 = float(node.sigma2())
        norm = sum(math.exp(-z * z / (2 * s2)) for z in range(-2000, 2001))
        weights = [math.exp(-z * z / (2 * s2)) / norm for z in zs]
    pmf = dict(zip(zs, weights)).__getitem__

    def left_prob(y: int) -> float:
        return sum(pmf(z) for z in zs if loss.loss(y) + z <= tau)

    out: dict[int, float] = {}

    def walk(lo: int, hi: int, prob: float) -> None:
        if lo + 1 >= hi:
            out[hi] = out.get(hi, 0.0) + prob
            return
        mid = (lo + hi) // 2
        pl = left_prob(mid)
        walk(lo, mid, prob * pl)
        walk(mid, hi, prob * (1 - pl))

    walk(node.domain[0], node.domain[1], 1.0)
    return out


def test_binary_search_exact_pure_dp() -> None:
    node = ShiftedInverseSearch(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.8", beta="0.3")
    worst = 0.0
    for x, y in _pairs(3):
        px, py = _search_distribution(node, x), _search_distribution(node, y)
        for out, p in px.items():
            if p > 1e-300:
                worst = max(worst, math.log(p / py.get(out, 0.0)))
    assert 0.05 < worst <= 0.8 + 1e-9


def test_binary_search_zcdp_renyi() -> None:
    node = ShiftedInverseSearchZCDP(Query.user_sum("v", user="uid"), domain=(0, 15), rho="0.5", beta="0.3")
    rho = float(node.rho)
    for x, y in _pairs(2):
        px, py = _search_distribution(node, x), _search_distribution(node, y)
        for alpha in (1.5, 2.0, 4.0, 8.0):
            s = sum(p**alpha * py[o] ** (1 - alpha) for o, p in px.items() if p > 0)
            assert math.log(s) / (alpha - 1) <= alpha * rho + 1e-9


def test_search_steps() -> None:
    assert search_steps((0, 1)) == 1
    assert search_steps((0, 2**64 - 1)) == 64
    assert search_steps((0, 16)) == 4


@pytest.mark.parametrize("form", ["em", "laplace", "gaussian"])
def test_utility_guarantee_on_heavy_tailed_data(form: str) -> None:
    gen = np.random.default_rng(7)
    n_users = 2000
    contribs = np.floor(gen.pareto(1.2, size=n_users) * 10)
    data = as_dataset({"uid": np.arange(n_users), "v": contribs})
    q = Query.user_sum("v", user="uid")
    beta = Fraction(1, 10)
    domain = (0, 2**40 - 1)
    node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP
    if form == "em":
        node = ShiftedInverse(q, domain=domain, epsilon=1, beta=beta)
    elif form == "laplace":
        node = ShiftedInverseSearch(q, domain=domain, epsilon=1, beta=beta)
    else:
        node = ShiftedInverseSearchZCDP(q, domain=domain, rho="0.5", beta=beta)
    loss = user_loss(q, data, 0)
    f = loss.value()
    slack = loss.down_sensitivity(2 * node.tau())
    runs = 200
    failures = 0
    for seed in range(runs):
        out = node.release(data, SeededRandomness(seed))
        assert isinstance(out, int)
        if not (f >= out >= f - slack - 1):  # -1: integer domain below a fractional f
            failures += 1
    # failure rate <= beta with a binomial margin (3 standard deviations)
    assert failures <= runs * float(beta) + 3 * math.sqrt(runs * float(beta))


def test_plan_with_all_three_forms() -> None:
    q = Query.user_sum("pages", user="uid")
    plan = Compose(
        ZCDPToApprox(ShiftedInverseSearchZCDP(q, domain=(0, 2**20), rho="0.1"), delta="1e-7"),
    )
    pure = Compose(ShiftedInverse(q, domain=(0, 2**20), epsilon="0.5"), ShiftedInverseSearch(q, domain=(0, 2**20), epsilon="0.5"))
    assert pure.cost() == PureDP(1)
    plan.check(ApproxDP(3, "1e-6"))
    data = {"uid": np.repeat(np.arange(500), 3), "pages": np.ones(1500)}
    out = plan.run(data, rng=1).value
    assert isinstance(out, tuple) and 1000 <= out[0] <= 1500
    assert pure.neighbouring.unit == "uid"


def test_user_max_and_counts() -> None:
    data = as_dataset({"uid": np.array([1, 1, 2, 3]), "v": np.array([5.0, 9.0, 3.0, 7.0])})
    assert user_loss(Query.user_max("v", user="uid"), data, 0).value() == 9
    assert user_loss(Query.count(user="uid"), data, 0).value() == 4
    assert user_loss(Query.user_count(user="uid"), data, 0).value() == 3
    clipped = user_loss(Query.user_sum("v", user="uid") | Clip(0, 6), data, 0)
    assert clipped.value() == 6 + 5 + 3 + 6


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: ShiftedInverse(Query.sum("v"), domain=(0, 10), epsilon=1), "ShiftedInverse", "query"),
        (lambda: ShiftedInverse(Query.user_sum("v", user="u"), domain=(5, 5), epsilon=1), "ShiftedInverse", "domain"),
        (lambda: ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 2**64), epsilon=1), "ShiftedInverse", "domain"),
        (lambda: ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 10), epsilon=0), "ShiftedInverse", "epsilon"),
        (lambda: ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 10), epsilon=1, beta=1), "ShiftedInverse", "beta"),
        (lambda: ShiftedInverse(Query.user_sum("v", user="u") | Clip(-1, 5), domain=(0, 10), epsilon=1), "ShiftedInverse", "query"),
        (lambda: ShiftedInverseSearch(Query.median("v"), domain=(0, 10), epsilon=1), "ShiftedInverseSearch", "query"),
        (lambda: ShiftedInverseSearchZCDP(Query.user_count(user="u"), domain=(0, 10), rho=-1), "ShiftedInverseSearchZCDP", "rho"),
    ],
)
def test_invalid_shifted_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner == owner and info.value.field == field


def test_binary_search_with_half_the_noise_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    node = ShiftedInverseSearch(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.8", beta="0.3")
    honest = node.sigma()
    monkeypatch.setattr(ShiftedInverseSearch, "sigma", lambda self: honest / 3)
    worst = 0.0
    for x, y in _pairs(3):
        px, py = _search_distribution(node, x), _search_distribution(node, y)
        for out, p in px.items():
            if p > 1e-300 and py.get(out, 0.0) > 0:
                worst = max(worst, math.log(p / py[out]))
    assert worst > 0.8
