"""Brute-force helpers shared by the tests of the local- and smooth-sensitivity code (not used in releases)."""

from __future__ import annotations

from collections.abc import Iterable

from dpalg.sensitivity._smooth_rounding import Relation

__all__ = ["domain_neighbours", "value_neighbours"]


def domain_neighbours(y: tuple[int, ...], relation: Relation, domain: Iterable[int]) -> set[tuple[int, ...]]:
    """Every sorted dataset one value-level step from ``y`` over the values ``domain``.

    Add/remove: add any value or remove one; substitution: replace one value
    (``y`` itself is among the results when a value is replaced by itself).

    Examples:
        >>> sorted(domain_neighbours((1, 4), "add_remove", (1, 4)))
        [(1,), (1, 1, 4), (1, 4, 4), (4,)]
        >>> sorted(domain_neighbours((4,), "substitution", (1, 4)))
        [(1,), (4,)]
    """
    values = tuple(domain)
    out: set[tuple[int, ...]] = set()
    if relation == "add_remove":
        out.update(tuple(sorted(y + (v,))) for v in values)
        out.update(y[:i] + y[i + 1 :] for i in range(len(y)))
    else:
        for i in range(len(y)):
            out.update(tuple(sorted(y[:i] + (v,) + y[i + 1 :])) for v in values)
    return out


def value_neighbours(y: tuple[int, ...], relation: Relation, top: int) -> set[tuple[int, ...]]:
    """Every sorted dataset one value-level step from ``y`` over the integers ``0..top``.

    Add/remove: add any value or remove one; substitution: replace one value.

    Examples:
        >>> sorted(value_neighbours((1,), "add_remove", 1))
        [(), (0, 1), (1, 1)]
    """
    return domain_neighbours(y, relation, range(top + 1))
