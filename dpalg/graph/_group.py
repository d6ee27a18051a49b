"""Group privacy: a row-level plan run on data with at most k rows per user is user-level private.

``GroupPrivacy(plan, unit="uid", max_rows=k)`` keeps at most k rows of each user
(rows chosen by a keyed hash, :func:`dpalg.data.select_rows`; rows whose id is
missing dropped) and runs the row-level ``plan`` on what is left. Adding or
removing one user then adds or removes at most k rows of the bounded data, so
the plan's row-level guarantee holds for one user at the group-privacy cost.
With it, row-level and user-level nodes compose in one :class:`~dpalg.Compose`.
"""

from __future__ import annotations

from fractions import Fraction
from collections.abc import Sequence
from typing import Final, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, name_param
from dpalg.data import Dataset, Neighbouring, keyed_hashes, row_hashes, select_rows, unit_index
from dpalg.graph._node import AbstractMeasurement, M
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise import AbstractRandomness, prf_secret
from dpalg.queries._bounding import cap_param

__all__ = ["GroupPrivacy", "exp_upper", "group_cost"]

_MARGIN_BITS: Final = 150


def exp_upper(x: Fraction) -> Fraction:
    """A rational upper bound on e^x (x >= 0), within a relative 2^-60 of it.

    Evaluated with mpmath at 220 bits; the margin 2^-150 covers the evaluation
    error many times over, and the result is rounded *up* to 64 significant
    bits, so it is never below e^x.

    Examples:
        >>> float(exp_upper(Fraction(1))) >= 2.718281828459045
        True
        >>> exp_upper(Fraction(0))
        Fraction(1, 1)
    """
    if x < 0:
        raise InvalidArgument("exp_upper", "x", x, "must be >= 0")
    if x == 0:
        return Fraction(1)
    import mpmath

    with mpmath.workprec(220):
        value = mpmath.exp(mpmath.mpf(x.numerator) / x.denominator) * (1 + mpmath.ldexp(1, -_MARGIN_BITS))
        _, e = mpmath.frexp(value)
        shift = 64 - int(e)
        scaled = int(mpmath.ceil(mpmath.ldexp(value, shift)))
    return Fraction(scaled) / Fraction(2) ** shift if shift >= 0 else Fraction(scaled * 2 ** (-shift))


def group_cost(cost: Measure, k: int) -> Measure:
    """The cost of a row-level guarantee for a group of k rows (exact, rounded up).

    * ε-DP → kε (Dwork–Roth 2014, Theorem 2.2);
    * (ε, δ)-DP → (kε, k·e^{(k−1)ε}·δ): chaining the k row-level steps
      x₀ … x_k gives P[M(x₀) ∈ T] ≤ e^{kε}·P[M(x_k) ∈ T] + δ·Σ_{i<k} e^{iε}, and
      Σ_{i<k} e^{iε} ≤ k·e^{(k−1)ε} (the group-privacy lemma; Vadhan 2017, §2);
      e^{(k−1)ε} is rounded up (:func:`exp_upper`);
    * ρ-zCDP → k²ρ (Bun–Steinke 2016, Proposition 1.9).

    Examples:
        >>> group_cost(PureDP("0.5"), 3)
        PureDP('3/2')
        >>> group_cost(ZCDP("0.01"), 5)
        ZCDP('1/4')
        >>> group_cost(ApproxDP(0, "1e-6"), 2)
        ApproxDP(0, '1/500000')
    """
    if isinstance(cost, PureDP):
        return PureDP(cost.epsilon * k)
    if isinstance(cost, ZCDP):
        return ZCDP(cost.rho * k * k)
    return ApproxDP(cost.epsilon * k, k * exp_upper((k - 1) * cost.epsilon) * cost.delta)


def _max_rows(value: int) -> int:
    return cap_param("GroupPrivacy", "max_rows", value)


def _unit(value: str) -> str:
    return name_param("GroupPrivacy", "unit", value, "must name the id column (a non-empty str)")


@final
@attrs.frozen(repr=False)
class GroupPrivacy(AbstractMeasurement[M]):
    """Run a row-level plan on at most ``max_rows`` rows per user: user-level privacy by group privacy.

    Args:
        plan: a row-level plan (``neighbouring`` one row, add/remove); any
            measure. It must not contain another ``GroupPrivacy``.
        unit: the id column naming the user.
        max_rows: k, the rows kept per user (1 ≤ k ≤ 10⁶).

    Rows whose id is missing are dropped (they belong to no user); each user keeps
    at most k rows, chosen by a keyed hash of the user, the row's content over
    the columns the plan reads and its occurrence number, keyed by a fresh secret
    from :mod:`dpalg.noise` on each run (:func:`dpalg.data.select_rows`: the choice
    depends only on that user's rows, never on the row order or other users).

    Privacy guarantee:
        Neighbouring relation: add or remove one user with all their rows. The
        bounded datasets of two such neighbours differ by adding or removing at
        most k rows, one at a time, each step a row-level neighbour (the kept rows
        of every other user are unchanged). Group privacy over those k steps:
        ε-DP becomes kε-DP (Dwork–Roth 2014, Thm 2.2); (ε, δ) becomes
        (kε, k·e^{(k−1)ε}·δ) (the chained argument in :func:`group_cost`), the
        exponential rounded up;
        ρ-zCDP becomes k²ρ-zCDP (Bun–Steinke 2016, Prop. 1.9). A plan whose
        group δ would reach 1 is refused at construction (a vacuous guarantee).

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import Laplace
        >>> GroupPrivacy(Laplace(Query.count(), epsilon="0.1"), unit="uid", max_rows=5).cost()
        PureDP('1/2')
    """

    plan: AbstractMeasurement[M]
    unit: str = attrs.field(converter=_unit)
    max_rows: int = attrs.field(converter=_max_rows)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, AbstractMeasurement):
            raise InvalidArgument("GroupPrivacy", "plan", type(self.plan).__name__, "must be a dpalg node")
        if self.plan.neighbouring != Neighbouring(None, "add_remove"):
            raise InvalidArgument(
                "GroupPrivacy", "plan.neighbouring", self.plan.neighbouring,
                "must be one row, add/remove (group privacy turns a row-level add/remove guarantee into a user-level one)",
            )
        if _contains_group(self.plan):
            raise InvalidArgument("GroupPrivacy", "plan", type(self.plan).__name__, "must not contain another GroupPrivacy")
        inner = self.plan.cost()
        k = self.max_rows
        if isinstance(inner, ApproxDP) and k * exp_upper((k - 1) * inner.epsilon) * inner.delta >= 1:
            raise InvalidArgument(
                "GroupPrivacy", "max_rows", self.max_rows,
                "makes the group delta k*e^((k-1)eps)*delta reach 1 (a vacuous guarantee); lower max_rows or the plan's epsilon/delta",
            )

    @property
    def neighbouring(self) -> Neighbouring:
        """One user (``unit``), add/remove."""
        return Neighbouring(self.unit, "add_remove")

    def __repr__(self) -> str:
        return f"GroupPrivacy({self.plan!r}, unit={self.unit!r}, max_rows={self.max_rows})"


def _contains_group(node: object) -> bool:
    if isinstance(node, GroupPrivacy):
        return True
    for name in ("children", "child", "plan"):
        inner = getattr(node, name, None)
        if isinstance(inner, tuple) and any(_contains_group(c) for c in inner):
            return True
        if isinstance(inner, AbstractMeasurement) and _contains_group(inner):
            return True
    parts = getattr(node, "parts", None)
    return isinstance(parts, tuple) and any(_contains_group(c) for _, c in parts)


def bounded_rows(
    node: GroupPrivacy[PureDP] | GroupPrivacy[ApproxDP] | GroupPrivacy[ZCDP],
    data: Dataset,
    rng: AbstractRandomness,
    columns: Sequence[str],
) -> npt.NDArray[np.bool_]:
    """The rows the plan of ``node`` sees: present ids, at most ``max_rows`` per user.

    Args:
        node: the group-privacy node.
        data: the dataset.
        rng: the noise layer's randomness (the key of the row choice).
        columns: the columns the plan reads (its public schema); a row's content
            is hashed over them, in sorted order, without the id column.
    """
    ids = data.column(node.unit)
    n_units, codes = unit_index(ids, owner="GroupPrivacy")
    secret = prf_secret(rng)
    content = row_hashes(data, sorted(set(columns) - {node.unit}), secret)
    return select_rows(codes, n_units, keyed_hashes(ids, secret), content, node.max_rows, secret)
