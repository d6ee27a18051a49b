"""A primitive with a fixed cost and no data access, for tests and doctests."""

from __future__ import annotations

from typing import final

import attrs

from dpalg.data import Dataset, Neighbouring
from dpalg.graph._node import AbstractPrimitive, M, PrivacyClaim
from dpalg.noise._random import AbstractRandomness

__all__ = ["Fixed"]


@final
@attrs.frozen
class Fixed(AbstractPrimitive[M]):
    """Costs ``loss``, releases ``value``; reads no data and draws no noise.

    Privacy guarantee:
        A constant output is 0-DP; ``Fixed`` *charges* ``loss`` anyway, which is
        what accountant tests need (an upper bound is always valid).
    """

    loss: M
    value: int = 0
    unit: str | None = None

    @property
    def neighbouring(self) -> Neighbouring:
        """Row-level add/remove unless a unit column is given."""
        return Neighbouring(self.unit)

    def privacy(self) -> PrivacyClaim[M]:
        """The fixed loss."""
        return PrivacyClaim(self.loss, "fixed cost (test node)")

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The constant value."""
        return self.value
