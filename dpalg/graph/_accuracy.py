"""Accuracy before running: what a node's noise implies about its error, from its parameters only.

``node.accuracy(alpha)`` returns an :class:`Accuracy`: with probability at least
``1 - alpha`` over the mechanism's randomness, the released value is within
``error`` of the (clipped, lattice-rounded) statistic the node computes. Like a
node's cost, it is computed from public parameters and never reads data; a
statement that needs a property of the data (a count, a distance to
instability) says so in ``condition`` and is given at the public value the
caller supplies.

The error is about the *noise*: clipping bias (values outside ``Clip(l, u)``)
and the lattice rounding of each value (at most ``2**k`` per value, where
``Accuracy.noise`` names ``k``) come on top and are the user's choice.
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.measures._display import decimal_text

__all__ = ["Accuracy", "alpha_param"]


def alpha_param(owner: str, alpha: ExactLike) -> Fraction:
    """``alpha`` as an exact number in (0, 1), or :class:`~dpalg.InvalidArgument`."""
    a = to_fraction(alpha, owner=owner, field="alpha")
    if not 0 < a < 1:
        raise InvalidArgument(owner, "alpha", a, "must be in (0, 1)")
    return a


@final
@attrs.frozen
class Accuracy:
    """A (1 − α) error statement about one node, from its parameters only.

    Attributes:
        alpha: the failure probability: the statement holds with probability
            at least ``1 - alpha``.
        error: the error bound, in ``unit``; ``None`` when the node gives only
            a conditional statement (read ``condition``).
        unit: what ``error`` measures, e.g. ``"absolute"`` (same units as the
            value), ``"absolute, per key"`` or ``"rank"``.
        noise: the noise the statement comes from, e.g.
            ``"discrete Laplace, scale 20 (lattice step 2**-15)"``.
        tight: ``error`` is the exact (1 − α) quantile of the noise (no
            smaller bound holds), not just an upper bound.
        condition: when the statement depends on the data: the condition
            under which it holds (``None``: unconditional).
        notes: further statements (e.g. the probability of ⊥).
        lattice_k: the release is on the lattice of multiples of ``2**lattice_k``
            (``None``: not a lattice release, or not stated); displays never show
            more digits than the step holds.
    """

    alpha: Fraction
    error: Fraction | None
    unit: str
    noise: str
    tight: bool = False
    condition: str | None = None
    notes: tuple[str, ...] = ()
    lattice_k: int | None = None

    def describe(self) -> str:
        """One line: ``±12.5 absolute (95%, tight); discrete Laplace, scale 10``."""
        confidence = _percent(1 - self.alpha)
        if self.error is None:
            head = f"conditional ({confidence})"
        else:
            head = f"±{_decimal(self.error)} {self.unit} ({confidence}{', tight' if self.tight else ''})"
        parts = [head, self.noise]
        if self.condition:
            parts.append(f"if {self.condition}")
        parts.extend(self.notes)
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.describe()


def _percent(x: Fraction) -> str:
    text = f"{float(x * 100):.10g}"
    return f"{text}%"


def _decimal(x: Fraction) -> str:
    """A bound for people: 6 significant digits, rounded up (a bound is never understated)."""
    return decimal_text(x, "up").removeprefix("<=")
