"""Empirical audits of user-level releases on pairs where the added user is extreme.

D is an ordinary population; D' adds one user with many rows and huge or
non-finite values. The Clopper–Pearson lower bound on ε from 20 000 runs per
dataset must stay below the claim for the real nodes, and must refute a
deliberately broken node that forgets the row cap (so the audit can fail).
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs
import numpy as np
import pytest

from dpalg import ClipPerUser, MaxKeysPerUser, MaxRowsPerUser, PureDP, Query
from dpalg.data import Dataset, Neighbouring
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.mechanisms import Laplace, NoisyMax
from dpalg.noise import AbstractRandomness, SeededRandomness, discrete_laplace
from dpalg.release import empirical_epsilon_lower_bound

pytestmark = pytest.mark.slow

BASE = {"uid": np.array(["a", "a", "b", "c"], dtype=object), "x": np.array([1.0, 2.0, 3.0, 4.0]), "k": np.array(["p", "q", "p", "q"], dtype=object)}
EXTREME = {
    "uid": np.concatenate([BASE["uid"], np.array(["whale"] * 60, dtype=object)]),
    "x": np.concatenate([BASE["x"], np.array([1e300, float("inf"), 5e15] * 20)]),
    "k": np.concatenate([BASE["k"], np.array(["q"] * 60, dtype=object)]),
}


@final
@attrs.frozen
class ForgetfulRowCap(AbstractPrimitive[PureDP]):
    """Broken on purpose: user-level row count with noise for 3 rows per user but no cap applied."""

    epsilon: Fraction

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring("uid", "add_remove")

    def privacy(self) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "broken on purpose: the cap of 3 rows is never enforced")

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        return data.n_rows + int(discrete_laplace(3 / self.epsilon, size=1, rng=rng)[0])


@pytest.mark.parametrize(
    "node",
    [
        Laplace(Query.count(user="uid") | MaxRowsPerUser(3), epsilon=1),
        Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 10), epsilon=1, granularity=0),
        NoisyMax(Query.histogram("k", keys=["p", "q"], user="uid") | MaxKeysPerUser(1, rows_per_key=2), epsilon=1),
    ],
    ids=repr,
)
def test_an_extreme_user_does_not_break_the_claim(node: AbstractPrimitive[PureDP]) -> None:
    for first, second in ((BASE, EXTREME), (EXTREME, BASE)):
        audit = empirical_epsilon_lower_bound(node, first, second, trials=20_000, epsilon=1.0, rng=SeededRandomness(5))
        assert audit.epsilon_lower <= 1.0, audit


def test_the_audit_refutes_a_node_that_forgets_the_cap() -> None:
    audit = empirical_epsilon_lower_bound(ForgetfulRowCap(Fraction(1)), BASE, EXTREME, trials=20_000, rng=SeededRandomness(5))
    assert audit.epsilon_lower > 1.0
