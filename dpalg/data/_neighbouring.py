"""The privacy unit and the neighbouring relation: which datasets are neighbours.

Split from :mod:`dpalg.data._dataset` (which re-exports every name here): a
:class:`Neighbouring` is public data about the plan, never about the rows.
"""

from __future__ import annotations

from typing import Literal, final

import attrs

from dpalg._errors import InvalidArgument, optional_name_param

__all__ = ["Neighbouring", "ROW", "Relation", "check_relation"]

Relation = Literal["add_remove", "substitution"]


def check_relation(value: object, owner: str) -> Relation:
    """``value`` as a :data:`Relation`, or :class:`~dpalg.InvalidArgument` naming ``owner`` and the field ``relation``.

    Examples:
        >>> check_relation("substitution", "smooth_sensitivity")
        'substitution'
    """
    if value == "add_remove":
        return "add_remove"
    if value == "substitution":
        return "substitution"
    raise InvalidArgument(owner, "relation", value, "must be 'add_remove' or 'substitution'")


def _relation(value: str) -> Relation:
    return check_relation(value, "Neighbouring")


def _unit(value: str | None) -> str | None:
    return optional_name_param("Neighbouring", "unit", value, "must be None (one row) or a non-empty id column name")


@final
@attrs.frozen
class Neighbouring:
    """Which datasets are neighbours: the privacy unit and the relation.

    Args:
        unit: ``None`` for one row, or the name of the id column whose value
            identifies a user (then a unit is *all* rows of one user).
        relation: ``"add_remove"`` (default: add or remove one unit) or
            ``"substitution"`` (replace one unit's data).
    """

    unit: str | None = attrs.field(default=None, converter=_unit)
    relation: Relation = attrs.field(default="add_remove", converter=_relation)

    def describe(self) -> str:
        """A sentence for docs and certificates."""
        who = "one row" if self.unit is None else f"one user (all rows sharing {self.unit!r})"
        how = "adding or removing" if self.relation == "add_remove" else "replacing"
        return f"neighbours differ by {how} {who}"


ROW = Neighbouring()
