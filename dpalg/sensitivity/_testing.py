"""Brute-force helpers shared by the tests of the local- and smooth-sensitivity code (not used in releases)."""

from __future__ import annotations

from dpalg.sensitivity._smooth import Relation

__all__ = ["value_neighbours"]


def value_neighbours(y: tuple[int, ...], relation: Relation, top: int) -> set[tuple[int, ...]]:
    """Every sorted dataset one value-level step from ``y`` over the integers ``0..top``.

    Add/remove: add any value or remove one; substitution: replace one value.

    Examples:
        >>> sorted(value_neighbours((1,), "add_remove", 1))
        [(), (0, 1), (1, 1)]
    """
    out: set[tuple[int, ...]] = set()
    if relation == "add_remove":
        out.update(tuple(sorted(y + (v,))) for v in range(top + 1))
        out.update(y[:i] + y[i + 1 :] for i in range(len(y)))
    else:
        for i in range(len(y)):
            out.update(tuple(sorted(y[:i] + (v,) + y[i + 1 :])) for v in range(top + 1))
    return out
