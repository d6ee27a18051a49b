"""The empirical auditor accepts correct mechanisms and refutes broken ones."""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs
import numpy as np

from dpalg import PureDP, Query
from dpalg.data import Dataset, Neighbouring
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.mechanisms import Laplace
from dpalg.noise import AbstractRandomness, SeededRandomness, discrete_laplace
from dpalg.release import empirical_epsilon_lower_bound


@final
@attrs.frozen
class _HalfNoiseCount(AbstractPrimitive[PureDP]):
    """Deliberately broken: claims eps but uses half the required noise."""

    epsilon: Fraction

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring()

    def privacy(self) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "broken on purpose")

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        return data.n_rows + int(discrete_laplace(1 / (2 * self.epsilon), size=1, rng=rng)[0])


X = {"x": np.zeros(10)}
X_PLUS = {"x": np.zeros(11)}


def test_correct_laplace_is_not_refuted() -> None:
    node = Laplace(Query.count(), epsilon=1)
    audit = empirical_epsilon_lower_bound(node, X, X_PLUS, trials=20_000, rng=SeededRandomness(0))
    assert audit.epsilon_lower <= 1.0
    assert audit.epsilon_lower > 0.5  # the auditor has power: Laplace is tight


def test_broken_variant_is_refuted() -> None:
    node = _HalfNoiseCount(Fraction(1))
    audit = empirical_epsilon_lower_bound(node, X, X_PLUS, trials=20_000, rng=SeededRandomness(0))
    assert audit.epsilon_lower > 1.0
