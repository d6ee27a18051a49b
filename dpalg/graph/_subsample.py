"""Poisson subsampling with privacy amplification: run a plan on a random sample of the units.

``Subsample(plan, rate=q)`` keeps each privacy unit of the data -- a row at row
level, a user with all their rows at user level (the plan's neighbouring unit) --
independently with probability at most q, and runs ``plan`` on the rows kept. The
sample is drawn by a keyed PRF of each unit's exact identity under a fresh secret
from :mod:`dpalg.noise` on every run (:mod:`dpalg.data._poisson`): unit-local,
independent of the row order, bit-identical on every backend for a seeded run, and
drawn anew for every ``Subsample`` node and every run (two ``Subsample`` nodes in one
``Compose``, even the same node object twice, draw independent samples).

Cost (add/remove neighbours, Poisson sampling; Balle–Barthe–Gaboardi 2018, Thm 8;
Steinke 2025, "Privacy amplification by subsampling", Thm 1, with proof):

* an ε-DP plan becomes ln(1 + q(e^ε − 1))-DP;
* an (ε, δ)-DP plan becomes (ln(1 + q(e^ε − 1)), qδ)-DP.

The amplified ε is increasing in q, and the sampler's exact keep probability
``floor(q·2^64)/2^64`` is at most q, so charging at q is sound (a unit kept with a
probability p ≤ q is covered by the bound for q: the theorem holds with p, and
its ε and δ are increasing in p). The logarithm is rounded up
(:func:`amplified_epsilon`).

Refused at construction: a zCDP plan (there is no simple tight amplification of
zCDP by subsampling; convert it to (ε, δ) first with ``ZCDPToApprox``), and a plan
with substitution neighbours (the theorem is for adding or removing one unit).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Final, cast, final, overload

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring
from dpalg.data._poisson import poisson_rows
from dpalg.graph._compose import measure_type, register_wrapper
from dpalg.graph._node import AbstractMeasurement, M
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise import AbstractRandomness, prf_secret

__all__ = ["Subsample", "amplified_epsilon", "sampled_rows", "subsample_cost"]

_PREC: Final = 256
_MARGIN_BITS: Final = 150


def amplified_epsilon(epsilon: Fraction, rate: Fraction) -> Fraction:
    """A rational upper bound on ln(1 + q(e^ε − 1)), within a relative 2^-60 of it.

    Evaluated with mpmath at 256 bits as ``log1p(q·expm1(ε))`` (no cancellation for
    small ε or q); the value is raised by a relative 2^-150, which covers the
    evaluation error many times over, and rounded *up* to 64 significant bits, so
    the result is never below the true value (as :func:`dpalg.graph._group.exp_upper`).

    Examples:
        >>> amplified_epsilon(Fraction(0), Fraction(1, 2))
        Fraction(0, 1)
        >>> import math
        >>> x = amplified_epsilon(Fraction(1), Fraction(1, 10))
        >>> 0 <= float(x) - math.log1p(0.1 * math.expm1(1)) < 1e-15
        True
    """
    if epsilon < 0:
        raise InvalidArgument("amplified_epsilon", "epsilon", epsilon, "must be >= 0")
    if not 0 < rate <= 1:
        raise InvalidArgument("amplified_epsilon", "rate", rate, "must be in (0, 1]")
    if epsilon == 0:
        return Fraction(0)
    import mpmath

    with mpmath.workprec(_PREC):
        eps = mpmath.mpf(epsilon.numerator) / epsilon.denominator
        q = mpmath.mpf(rate.numerator) / rate.denominator
        value = mpmath.log1p(q * mpmath.expm1(eps)) * (1 + mpmath.ldexp(1, -_MARGIN_BITS))
        _, e = mpmath.frexp(value)
        shift = 64 - int(e)
        scaled = int(mpmath.ceil(mpmath.ldexp(value, shift)))
    return Fraction(scaled) / Fraction(2) ** shift if shift >= 0 else Fraction(scaled * 2 ** (-shift))


def subsample_cost(cost: Measure, rate: Fraction) -> Measure:
    """The cost of a plan run on a Poisson sample at ``rate``: ε → ln(1 + q(e^ε − 1)), δ → qδ (rounded up).

    Examples:
        >>> subsample_cost(ApproxDP(0, "1e-6"), Fraction(1, 10))
        ApproxDP(0, '1/10000000')
        >>> float(subsample_cost(PureDP(1), Fraction(1, 10)).epsilon)  # ln(1 + 0.1(e - 1))
        0.1585650787404291
    """
    if isinstance(cost, PureDP):
        return PureDP(amplified_epsilon(cost.epsilon, rate))
    if isinstance(cost, ApproxDP):
        return ApproxDP(amplified_epsilon(cost.epsilon, rate), rate * cost.delta)
    raise InvalidArgument(
        "Subsample", "plan", "ZCDP",
        "costs zCDP, which has no simple tight amplification by subsampling; convert it to (eps, delta) first (ZCDPToApprox)",
    )


def _rate(value: ExactLike) -> Fraction:
    q = to_fraction(value, owner="Subsample", field="rate")
    if not 0 < q < 1:
        raise InvalidArgument("Subsample", "rate", value, "must be in (0, 1) (the probability that a unit is kept)")
    return q


def _unit(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgument("Subsample", "unit", value, "must be None or the id column of the plan's privacy unit (a non-empty str)")
    return value


@final
@attrs.frozen(init=False, repr=False)
class Subsample(AbstractMeasurement[M]):
    """Run ``plan`` on a Poisson sample of the privacy units, kept each with probability ``rate``.

    Args:
        plan: an ε-DP or (ε, δ)-DP plan with add/remove neighbours (one row, or one
            user with all their rows). A zCDP plan is refused: convert it first.
        rate: q, rational in (0, 1).
        unit: ``None`` (the plan's own unit), or the plan's unit written out (it
            must equal ``plan.neighbouring.unit``; a user-level sample of a
            row-level plan would not be covered by the plan's guarantee).

    What is sampled (:mod:`dpalg.data._poisson`): at row level each row, whose
    identity is its values in the columns the plan reads and its occurrence
    number among the rows identical to it there; at user level each user (rows
    whose id is missing belong to no user and are dropped), with all their rows
    kept or dropped together. A unit is kept iff a keyed BLAKE2b word of its
    identity, under a fresh secret from :mod:`dpalg.noise` on every run, is below
    ``floor(q·2^64)``: probability ``floor(q·2^64)/2^64 ≤ q``, independently of
    every other unit and of the plan's noise.

    Privacy guarantee:
        Neighbouring relation: the plan's (add or remove one unit). With the units
        kept independently with probability p ≤ q, an ε-DP plan becomes
        ln(1 + q(e^ε − 1))-DP and an (ε, δ)-DP plan (ln(1 + q(e^ε − 1)), qδ)-DP
        (Balle–Barthe–Gaboardi 2018, Thm 8; Steinke 2025, Thm 1: condition on
        whether the added unit is kept; the bound is increasing in p). The
        logarithm is rounded up. The sample is drawn afresh by every
        ``Subsample`` node on every run, so two of them compose as independent
        mechanisms.

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import Laplace
        >>> float(Subsample(Laplace(Query.count(), epsilon=1), rate="0.1").cost().epsilon)
        0.1585650787404291
    """

    plan: AbstractMeasurement[M]
    rate: Fraction = attrs.field(converter=_rate)
    unit: str | None = attrs.field(default=None, converter=_unit)

    @overload
    def __init__(self: Subsample[PureDP], plan: AbstractMeasurement[PureDP], *, rate: ExactLike, unit: str | None = None) -> None: ...

    @overload
    def __init__(self: Subsample[ApproxDP], plan: AbstractMeasurement[ApproxDP], *, rate: ExactLike, unit: str | None = None) -> None: ...

    def __init__(
        self, plan: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP], *, rate: ExactLike, unit: str | None = None,
    ) -> None:
        self.__attrs_init__(cast("AbstractMeasurement[M]", plan), rate, unit)  # the overloads tie M to the plan's measure

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, AbstractMeasurement):
            raise InvalidArgument("Subsample", "plan", type(self.plan).__name__, "must be a dpalg node")
        nb = self.plan.neighbouring
        if nb.relation != "add_remove":
            raise InvalidArgument(
                "Subsample", "plan.neighbouring", nb,
                "must be add/remove (amplification by Poisson subsampling is proved for adding or removing one unit)",
            )
        if self.unit is not None and self.unit != nb.unit:
            raise InvalidArgument(
                "Subsample", "unit", self.unit,
                f"must be None or the plan's privacy unit ({nb.unit!r}): the sampled unit must be the unit the plan protects",
            )
        kind = measure_type(self.plan)
        if kind is ZCDP or (kind is None and isinstance(self.plan.cost(), ZCDP)):
            raise InvalidArgument(
                "Subsample", "plan", type(self.plan).__name__,
                "costs zCDP, which has no simple tight amplification by subsampling; convert it to (eps, delta) first (ZCDPToApprox)",
            )

    @property
    def neighbouring(self) -> Neighbouring:
        """The plan's: one row or one user, add/remove."""
        return self.plan.neighbouring

    def __repr__(self) -> str:
        tail = "" if self.unit is None else f", unit={self.unit!r}"
        return f"Subsample({self.plan!r}, rate={str(self.rate)!r}{tail})"


register_wrapper(Subsample)


def sampled_rows(
    node: Subsample[PureDP] | Subsample[ApproxDP] | Subsample[ZCDP], data: Dataset, rng: AbstractRandomness, columns: Sequence[str],
) -> npt.NDArray[np.bool_]:
    """The rows the plan of ``node`` sees: a fresh Poisson sample of the units (module docstring).

    Args:
        node: the subsampling node.
        data: the dataset.
        rng: the noise layer's randomness (one fresh PRF key per call).
        columns: the columns the plan reads (a row's content at row level).
    """
    unit = node.plan.neighbouring.unit
    return poisson_rows(data, prf_secret(rng), node.rate, unit=unit, columns=[c for c in columns if c != unit], owner="Subsample")
