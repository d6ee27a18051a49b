"""AutoClipSum: exact privacy of both steps on small domains, order independence, validation.

Step 1 (choice of the clip): for every multiset D of user totals over a small
domain and every D' = D + one user, the exact selection probabilities
(∝ exp(−clip_rate · score), what the release samples) differ by at most a factor
e^{ε₁}; the same check finds a violating pair at twice the rate, and for the
two-sided score ``|#{T_u > C} − r|`` at the same rate (not monotone).
Step 2 (the clipped sum, for each candidate C): one user moves the rounded sum by
at most its stated sensitivity, so the discrete Laplace release is ε₂-DP.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from dpalg import Clip, ClipPerUser, InvalidArgument, PureDP, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import AutoClipSum
from dpalg.noise import SeededRandomness

NODE = AutoClipSum(Query.sum("x", user="uid"), epsilon=1, upper_limit=64, grid_steps=5, clip_share="1/2")
STEP = Fraction(2) ** NODE.lattice_k()
DOMAIN = [0, 1, 3, 8, 20, 64, 500]  # real totals; 500 is beyond upper_limit (clamped)


def _lattice(totals: tuple[int, ...]) -> npt.NDArray[np.int64]:
    top = int(NODE.upper_limit / STEP)
    return np.array([min(int(Fraction(t) / STEP), top) for t in totals], dtype=np.int64)


def _probabilities(scores: list[Fraction], gamma: Fraction) -> list[float]:
    weights = [math.exp(-float(gamma * s)) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


Scores = Callable[[npt.NDArray[np.int64]], list[Fraction]]


def _two_sided(totals: npt.NDArray[np.int64]) -> list[Fraction]:
    """A broken variant: the excess over r in absolute value (not monotone), same prior."""
    r = NODE.target()
    return [s - max(Fraction(a) - r, Fraction(0)) + abs(Fraction(a) - r) for s, a in zip(NODE.clip_scores(totals), _above(totals))]


def _above(totals: npt.NDArray[np.int64]) -> list[int]:
    return [int(np.count_nonzero(totals > level)) for level in NODE.levels()]


def _worst_ratio(gamma: Fraction, scores: Scores = NODE.clip_scores) -> float:
    worst = 0.0
    for n in range(0, 4):
        for base in itertools.combinations_with_replacement(DOMAIN, n):
            p = _probabilities(scores(_lattice(base)), gamma)
            for extra in DOMAIN:
                q = _probabilities(scores(_lattice(base + (extra,))), gamma)
                worst = max(worst, max(abs(math.log(a / b)) for a, b in zip(p, q)))
    return worst


def test_the_clip_choice_is_epsilon1_dp_and_broken_variants_are_caught() -> None:
    eps1 = NODE.epsilon_clip
    assert NODE.clip_rate() == eps1
    assert _worst_ratio(NODE.clip_rate()) <= float(eps1) + 1e-12
    assert _worst_ratio(2 * NODE.clip_rate()) > float(eps1) * 1.5  # twice the rate: twice the loss
    assert _worst_ratio(NODE.clip_rate(), _two_sided) > float(eps1) * 1.5  # the monotone case needs a monotone score


def test_the_candidates_are_the_exact_grid() -> None:
    node = AutoClipSum(Query.sum("x", user="uid"), epsilon=1, upper_limit=10**6, grid_steps=3, steps_per_doubling=4)
    cands = node.candidates()
    assert len(cands) == 13 and cands[0] == 10**6 and cands[4] == 500_000 and cands[12] == 125_000
    for j, c in enumerate(cands):  # at or below upper_limit·2^(-j/4), within a relative 2^-31, exact as a float
        assert (c / 10**6) ** 4 * 2**j <= 1 < (c * (1 + Fraction(1, 2**31)) / 10**6) ** 4 * 2**j
        assert Fraction(float(c)) == c
    assert AutoClipSum(Query.sum("x", user="uid"), epsilon=1).upper_limit == 2**30  # the documented public default


@pytest.mark.parametrize("clip", NODE.candidates())
def test_the_clipped_sum_moves_within_its_sensitivity(clip: Fraction) -> None:
    for n in range(0, 4):
        for base in itertools.combinations_with_replacement(DOMAIN, n):
            a, sens_a, k_a = NODE.clipped_sum(_lattice(base), clip)
            for extra in DOMAIN:
                b, sens_b, k_b = NODE.clipped_sum(_lattice(base + (extra,)), clip)
                assert sens_a == sens_b and k_a == k_b  # public: a function of C only
                assert abs(b - a) <= sens_a


def test_a_huge_epsilon_makes_the_rounding_slack_visible() -> None:
    # with a coarse noise lattice (d > 0) the stated sensitivity includes the +1 of re-rounding
    node = AutoClipSum(Query.sum("x", user="uid"), epsilon="1/1024", upper_limit=2**20, grid_steps=2)
    totals = np.array([0], dtype=np.int64)
    _, sens, k2 = node.clipped_sum(totals, node.candidates()[0])
    assert k2 > node.lattice_k() and sens == -(-int(node.candidates()[0] / Fraction(2) ** node.lattice_k()) // 2 ** (k2 - node.lattice_k())) + 1


def test_release_is_order_independent_and_reports_the_clip() -> None:
    gen = np.random.default_rng(0)
    uid = np.repeat(np.arange(300), 3)
    x = np.floor(gen.pareto(1.2, size=uid.size) * 10)
    node = AutoClipSum(Query.sum("x", user="uid") | Clip(0, 10**6), epsilon=1, upper_limit=2**20)
    first = node.release(as_dataset({"uid": uid, "x": x}), SeededRandomness(9))
    perm = gen.permutation(uid.size)
    second = node.release(as_dataset({"uid": uid[perm], "x": x[perm]}), SeededRandomness(9))
    assert first == second
    assert isinstance(first, dict) and set(first) == {"sum", "clip"} and first["clip"] in [float(c) for c in node.candidates()]


def test_cost_and_certificate() -> None:
    assert NODE.cost() == PureDP(1)
    inputs = dict(NODE.privacy().inputs)
    assert inputs["epsilon_clip"] == "1/2" and inputs["users_above"] == "2" and inputs["steps_per_doubling"] == "4"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"query": Query.sum("x")}, "user"),
        ({"query": Query.sum("x", user="uid") | ClipPerUser(0, 1)}, "ClipPerUser"),
        ({"query": Query.sum("x", user="uid") | Clip(-1, 1)}, "l >= 0"),
        ({"epsilon": 0}, "epsilon"),
        ({"upper_limit": -1}, "upper_limit"),
        ({"clip_share": 1}, "clip_share"),
        ({"grid_steps": 41}, "grid_steps"),
        ({"users_above": -1}, "users_above"),
        ({"steps_per_doubling": 3}, "steps_per_doubling"),
    ],
)
def test_invalid_parameters_fail_at_construction(kwargs: dict[str, object], needle: str) -> None:
    args: dict[str, object] = {"query": Query.sum("x", user="uid"), "epsilon": 1, "upper_limit": 100}
    args.update(kwargs)
    with pytest.raises(InvalidArgument) as info:
        AutoClipSum(**args)  # type: ignore[arg-type]
    assert needle in str(info.value)


def test_a_certificate_without_steps_per_doubling_decodes_to_one_candidate_per_doubling() -> None:
    from dpalg.release import decode
    from dpalg.release._serialize import encode

    node = AutoClipSum(Query.sum("x", user="uid"), epsilon=1)
    encoded = encode(node)
    assert isinstance(encoded, dict) and isinstance(encoded["fields"], dict)
    assert decode(encoded) == node
    del encoded["fields"]["steps_per_doubling"]  # written before the field existed: the grid had ratio 2
    old = decode(encoded)
    assert isinstance(old, AutoClipSum) and old.steps_per_doubling == 1
