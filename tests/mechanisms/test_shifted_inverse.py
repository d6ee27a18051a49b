"""Shifted inverse: exact privacy on tiny domains, utility guarantee, validation.

Neighbouring relation: add or remove one user with all their rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import ApproxDP, Clip, Compose, InvalidArgument, PureDP, Query, ZCDPToApprox
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms.shifted_inverse._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.mechanisms.shifted_inverse._search import search_steps, user_loss
from dpalg.noise import SeededRandomness
from dpalg.sensitivity import UserLoss, shifted_loss_runs

CONTRIBS = (0, 1, 2, 4, 7)


def _data(users: tuple[float, ...]) -> dict[str, np.ndarray]:
    """One row per user with that user's contribution (ids are positions)."""
    return {"uid": np.arange(len(users)), "v": np.array(users, dtype=np.float64)}


def _pairs(max_users: int, contribs: tuple[float, ...] = CONTRIBS) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    out = []
    for n in range(max_users):
        for x in itertools.combinations_with_replacement(contribs, n):
            for v in contribs:
                out.append((x, x + (v,)))
                out.append((x + (v,), x))
    return out


def _em_log_probs(node: ShiftedInverse, users: tuple[float, ...], factor: float = 1.0) -> np.ndarray:
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


@pytest.mark.parametrize(
    ("query", "contribs"),
    [
        (Query.user_sum("v", user="uid"), (0.0, 0.25, 1.5, 2.75, 6.5)),  # fractional f: the floored loss
        (Query.user_max("v", user="uid"), (-1.0, 2.5, 3.0, 9.25, 40.0)),  # f(∅) = y_lo; values above y_hi
        (Query.user_sum("v", user="uid") | Clip(1, 3), (0.0, 0.5, 2.0, 5.0)),
    ],
    ids=["fractional-sum", "max", "clipped-sum"],
)
def test_em_exact_ratios_for_other_queries(query: Query, contribs: tuple[float, ...]) -> None:
    node = ShiftedInverse(query, domain=(2, 17), epsilon="0.7", beta="0.3")
    worst = max(float(np.max(_em_log_probs(node, x) - _em_log_probs(node, y))) for x, y in _pairs(3, contribs))
    assert worst <= 0.7 + 1e-12


def test_em_without_the_factor_two_is_caught() -> None:
    node = ShiftedInverse(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.7", beta="0.3")
    worst = max(float(np.max(_em_log_probs(node, x, 2.0) - _em_log_probs(node, y, 2.0))) for x, y in _pairs(3))
    assert worst > 0.7 + 0.05


_Z_MAX = 200


def _noise_cdf(node: ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> list[float]:
    """``cdf[i] = P[Z <= i − _Z_MAX]`` of the node's per-step noise (exact pmf, float sums)."""
    zs = range(-_Z_MAX, _Z_MAX + 1)
    if isinstance(node, ShiftedInverseSearch):
        p = math.exp(-1 / float(node.sigma()))
        weights = [(1 - p) / (1 + p) * p ** abs(z) for z in zs]
    else:
        s2 = float(node.sigma2())
        norm = sum(math.exp(-z * z / (2 * s2)) for z in range(-2000, 2001))
        weights = [math.exp(-z * z / (2 * s2)) / norm for z in zs]
    return list(itertools.accumulate(weights))


def _search_distribution(
    node: ShiftedInverseSearch | ShiftedInverseSearchZCDP, users: tuple[float, ...], cdf: list[float] | None = None
) -> dict[int, float]:
    """Exact output distribution of the noisy binary search (walk the whole search tree)."""
    loss = user_loss(node.query, as_dataset(_data(users)), node.domain[0])
    tau = node.tau()
    cdf = _noise_cdf(node) if cdf is None else cdf

    def left_prob(y: int) -> float:  # P[ℓ(y) + Z <= τ]
        i = tau - loss.loss(y) + _Z_MAX
        return 0.0 if i < 0 else cdf[min(i, len(cdf) - 1)]

    out: dict[int, float] = {}

    def walk(lo: int, hi: int, prob: float) -> None:
        if lo + 1 >= hi:
            out[hi] = out.get(hi, 0.0) + prob
            return
        mid = (lo + hi) // 2
        assert node.domain[0] <= mid < node.domain[1]  # only candidates of Y are queried
        pl = left_prob(mid)
        walk(lo, mid, prob * pl)
        walk(mid, hi, prob * (1 - pl))

    walk(node.domain[0] - 1, node.domain[1], 1.0)  # the search starts one below y_lo
    return out


def _depth(domain: tuple[int, int]) -> int:
    """The deepest path of the search tree, by walking it."""

    def walk(lo: int, hi: int) -> int:
        if lo + 1 >= hi:
            return 0
        mid = (lo + hi) // 2
        return 1 + max(walk(lo, mid), walk(mid, hi))

    return walk(domain[0] - 1, domain[1])


def test_binary_search_exact_pure_dp() -> None:
    node = ShiftedInverseSearch(Query.user_sum("v", user="uid"), domain=(0, 15), epsilon="0.8", beta="0.3")
    cdf = _noise_cdf(node)
    worst = 0.0
    for x, y in _pairs(3):
        px, py = _search_distribution(node, x, cdf), _search_distribution(node, y, cdf)
        assert abs(sum(px.values()) - 1) < 1e-9
        for out, p in px.items():
            if p > 1e-300:
                worst = max(worst, math.log(p / py.get(out, 0.0)))
    assert 0.05 < worst <= 0.8 + 1e-9


def test_binary_search_zcdp_renyi() -> None:
    node = ShiftedInverseSearchZCDP(Query.user_sum("v", user="uid"), domain=(0, 15), rho="0.5", beta="0.3")
    rho = float(node.rho)
    cdf = _noise_cdf(node)
    for x, y in _pairs(2):
        px, py = _search_distribution(node, x, cdf), _search_distribution(node, y, cdf)
        for alpha in (1.5, 2.0, 4.0, 8.0):
            s = sum(p**alpha * py[o] ** (1 - alpha) for o, p in px.items() if p > 0)
            assert math.log(s) / (alpha - 1) <= alpha * rho + 1e-9


def test_search_steps() -> None:
    assert search_steps((0, 1)) == 1
    assert search_steps((0, 2**64 - 1)) == 64
    assert search_steps((0, 15)) == 4
    assert search_steps((0, 16)) == 5  # |Y| = 17: the search starts at y_lo − 1
    for hi in range(1, 70):  # the claimed number of steps is the real worst case
        assert _depth((3, 3 + hi)) == search_steps((3, 3 + hi))


def _utility_node(
    form: str, q: Query, domain: tuple[int, int], beta: Fraction
) -> ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP:
    """The three forms at ε = 1 (ρ = 1/2 for the zCDP search), as the utility tests use them."""
    if form == "em":
        return ShiftedInverse(q, domain=domain, epsilon=1, beta=beta)
    if form == "laplace":
        return ShiftedInverseSearch(q, domain=domain, epsilon=1, beta=beta)
    return ShiftedInverseSearchZCDP(q, domain=domain, rho="0.5", beta=beta)


def _assert_failure_rate(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP, data: Dataset, runs: int,
                         beta: Fraction, holds: Callable[[int], bool]) -> None:
    """Of ``runs`` seeded releases (each an int), at most a β fraction miss ``holds``, with a binomial margin of 3 standard deviations."""
    failures = 0
    for seed in range(runs):
        out = node.release(data, SeededRandomness(seed))
        assert isinstance(out, int)
        if not holds(out):
            failures += 1
    assert failures <= runs * float(beta) + 3 * math.sqrt(runs * float(beta))


@pytest.mark.parametrize("form", ["em", "laplace", "gaussian"])
def test_utility_guarantee_on_heavy_tailed_data(form: str) -> None:
    gen = np.random.default_rng(7)
    n_users = 2000
    contribs = np.floor(gen.pareto(1.2, size=n_users) * 10)
    data = as_dataset({"uid": np.arange(n_users), "v": contribs})
    q = Query.user_sum("v", user="uid")
    beta = Fraction(1, 10)
    domain = (0, 2**40 - 1)
    node = _utility_node(form, q, domain, beta)
    loss = user_loss(q, data, 0)
    f = loss.value()
    slack = loss.down_sensitivity(2 * node.tau())
    _assert_failure_rate(node, data, 200, beta, lambda out: f >= out >= f - slack)


@pytest.mark.parametrize("form", ["em", "laplace", "gaussian"])
def test_utility_guarantee_with_fractional_contributions(form: str) -> None:
    """5000 users with 0.01 each: f is just above 50 and not an integer.

    On the real-valued f no integer y has ℓ* <= 0 (see test_shift_runs), and
    the exponential mechanism would be close to uniform over 2**40 candidates;
    the floored loss restores Theorem 4's guarantee for ⌊f⌋ (so M <= f).
    """
    n_users = 5000
    data = as_dataset({"uid": np.arange(n_users), "v": np.full(n_users, 0.01)})
    q = Query.user_sum("v", user="uid")
    beta = Fraction(1, 10)
    domain = (0, 2**40 - 1)
    node = _utility_node(form, q, domain, beta)
    real = UserLoss.user_sum(np.full(n_users, 0.01))
    assert real.value() > 50 and user_loss(q, data, 0).value() == 50
    slack = real.down_sensitivity(2 * node.tau())
    _assert_failure_rate(node, data, 100, beta, lambda out: real.value() >= out > real.value() - slack - 1)


def test_unfloored_em_would_be_useless_on_fractional_data() -> None:
    """The bug the floor fixes: with the real-valued loss no y in Y has ℓ* <= 0."""
    node = ShiftedInverse(Query.user_sum("v", user="uid"), domain=(0, 2**40 - 1), epsilon=1, beta="0.1")
    real = UserLoss.user_sum(np.full(5000, 0.01))
    tau = node.tau()
    starts, lengths, losses = shifted_loss_runs(real, 0, 2**40 - 1, tau)
    assert int(losses.min()) > 0  # Theorem 4's premise fails (here min ℓ* = 40 at y = 49)
    # P[M <= 110] (f is about 50): the output would be spread over the whole domain
    near = sum(math.exp(-0.5 * int(v)) * max(0, min(n, 111 - s)) for s, n, v in zip(starts, lengths, losses.tolist()))
    total = sum(math.exp(-0.5 * int(v)) * n for s, n, v in zip(starts, lengths, losses.tolist()))
    assert near / total < 1e-6
    fixed = shifted_loss_runs(real.floored(), 0, 2**40 - 1, tau)[2]
    assert int(fixed.min()) <= 0


@pytest.mark.parametrize("form", ["laplace", "gaussian"])
def test_binary_search_can_release_y_lo(form: str) -> None:
    """f(x) = y_lo: the seed's search started at i_min = y_lo would always return y_lo + 1 > f."""
    data = as_dataset({"uid": np.arange(50), "v": np.zeros(50)})
    q = Query.user_sum("v", user="uid")
    node: ShiftedInverseSearch | ShiftedInverseSearchZCDP
    if form == "laplace":
        node = ShiftedInverseSearch(q, domain=(0, 2**20), epsilon=2, beta="0.1")
    else:
        node = ShiftedInverseSearchZCDP(q, domain=(0, 2**20), rho=2, beta="0.1")
    outs = [node.release(data, SeededRandomness(seed)) for seed in range(40)]
    assert outs.count(0) >= 30


def test_user_max_with_infinite_values_releases() -> None:
    """+inf in one user's rows must not make the release fail (that would leak)."""
    data = as_dataset({"uid": np.array([1, 2, 3]), "v": np.array([3.0, np.inf, 5.0])})
    q = Query.user_max("v", user="uid")
    for node in (
        ShiftedInverse(q, domain=(0, 100), epsilon=1),
        ShiftedInverseSearch(q, domain=(0, 100), epsilon=1),
        ShiftedInverseSearchZCDP(q, domain=(0, 100), rho=1),
    ):
        out = node.release(data, SeededRandomness(0))
        assert isinstance(out, int) and 0 <= out <= 100


# --- global sensitivity 1 of the losses the mechanisms use, end to end from rows -------
ROW = st.tuples(st.integers(0, 6), st.one_of(st.sampled_from([float("nan"), -2.0, 0.5, 0.1, 2.75]), st.integers(0, 9).map(float)))
ROWS = st.lists(ROW, max_size=16)
QUERIES = [
    Query.user_sum("v", user="uid"),
    Query.user_sum("v", user="uid") | Clip(0, 4),
    Query.user_sum("v", user="uid") | Clip("0.5", "2.5"),
    Query.user_count(user="uid"),
    Query.count(user="uid"),
    Query.count("v", user="uid"),
    Query.user_max("v", user="uid"),
    Query.user_max("v", user="uid") | Clip(-1, 6),
]


def _losses(query: Query, rows: list[tuple[int, float]], ys: range) -> tuple[list[int], list[int | None]]:
    data = as_dataset({"uid": np.array([u for u, _ in rows], dtype=np.int64), "v": np.array([v for _, v in rows], dtype=np.float64)})
    loss = user_loss(query, data, 1)
    assert loss.is_floored
    return [loss.loss(y) for y in ys], [loss.loss_strict(y) for y in ys]


@pytest.mark.parametrize("query", QUERIES, ids=repr)
@settings(max_examples=30, deadline=None)
@given(rows=ROWS, who=st.integers(0, 6))
def test_losses_have_sensitivity_one_on_neighbours(query: Query, rows: list[tuple[int, float]], who: int) -> None:
    """Seed 004, Prop. 3: removing one user (all rows) changes ℓ and ℓ̄ by 0 or 1, never up."""
    smaller = [(u, v) for u, v in rows if u != who]
    ys = range(1, 80)
    big_l, big_s = _losses(query, rows, ys)
    small_l, small_s = _losses(query, smaller, ys)
    for a, b in zip(big_l, small_l):
        assert 0 <= a - b <= 1
    for sa, sb in zip(big_s, small_s):
        assert (sa is None) == (sb is None)
        if sa is not None and sb is not None:
            assert 0 <= sa - sb <= 1


def _brute_floor_f(query: Query, rows: list[tuple[int, float]], floor: int) -> list[Fraction]:
    """h(k) of ⌊f⌋ by enumerating every set of kept users (exact Fractions)."""
    users = sorted({u for u, _ in rows})

    def clip(v: float) -> Fraction:
        if query.lower is None or query.upper is None:
            return Fraction(v)
        return min(max(Fraction(v), query.lower), query.upper)

    def f(kept: tuple[int, ...]) -> Fraction:
        vals = [clip(v) for u, v in rows if u in kept and v == v]
        match query.kind:
            case "user_sum":  # each user's total clamped at 0, then summed
                totals = [sum((clip(v) for u, v in rows if u == w and v == v), Fraction(0)) for w in kept]
                return Fraction(math.floor(sum((max(t, Fraction(0)) for t in totals), Fraction(0))))
            case "user_count":
                return Fraction(len(kept))
            case "count":
                return Fraction(sum(1 for u, v in rows if u in kept and (query.column is None or v == v)))
            case _:
                return Fraction(math.floor(max([Fraction(floor), *vals])))

    n = len(users)
    best = [min(f(kept) for kept in itertools.combinations(users, n - j)) for j in range(n + 1)]
    return list(itertools.accumulate(best, min))


@pytest.mark.parametrize("query", QUERIES, ids=repr)
@settings(max_examples=25, deadline=None)
@given(rows=st.lists(ROW, max_size=9), floor=st.integers(0, 3))
def test_user_loss_matches_brute_force_of_floor_f(query: Query, rows: list[tuple[int, float]], floor: int) -> None:
    data = as_dataset({"uid": np.array([u for u, _ in rows], dtype=np.int64), "v": np.array([v for _, v in rows], dtype=np.float64)})
    loss = user_loss(query, data, floor)
    prof = _brute_floor_f(query, rows, floor)
    n = len(prof) - 1
    assert loss.value() == prof[0]
    for y in range(loss.min_y, int(prof[0]) + 3):
        assert loss.loss(y) == min(k for k in range(n + 1) if prof[k] <= y), y
        strict = [k for k in range(n + 1) if prof[k] < y]
        assert loss.loss_strict(y) == (min(strict) if strict else None), y
    for k in range(n + 2):
        assert loss.down_sensitivity(k) == prof[0] - prof[min(k, n)]


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
    data = as_dataset({"uid": np.array([1, 1, 2, 3]), "v": np.array([5.0, 9.0, 3.0, np.nan])})
    assert user_loss(Query.user_max("v", user="uid"), data, 0).value() == 9
    assert user_loss(Query.user_max("v", user="uid") | Clip(0, 6), data, 0).value() == 6
    assert user_loss(Query.user_max("v", user="uid"), data, 20).value() == 20  # f(∅) = y_lo
    assert user_loss(Query.count(user="uid"), data, 0).value() == 4
    assert user_loss(Query.count("v", user="uid"), data, 0).value() == 3  # non-missing values
    assert user_loss(Query.user_count(user="uid"), data, 0).value() == 3
    clipped = user_loss(Query.user_sum("v", user="uid") | Clip(0, 6), data, 0)
    assert clipped.value() == 6 + 5 + 3
    fractional = as_dataset({"uid": np.array([1, 2]), "v": np.array([0.75, 1.5])})
    assert user_loss(Query.user_sum("v", user="uid"), fractional, 0).value() == 2  # ⌊2.25⌋


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
    cdf = _noise_cdf(node)
    worst = 0.0
    for x, y in _pairs(3):
        px, py = _search_distribution(node, x, cdf), _search_distribution(node, y, cdf)
        for out, p in px.items():
            if p > 1e-300 and py.get(out, 0.0) > 0:
                worst = max(worst, math.log(p / py[out]))
    assert worst > 0.8
