"""Exact neighbour enumeration shared by the mechanism tests (not used in releases).

:func:`multiset_neighbours` lists every neighbouring pair of small sorted datasets
over a domain, for checks that compare a mechanism's exact output laws on each pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = ["Values", "multiset_neighbours"]

Values = tuple[float, ...]


def multiset_neighbours(domain: Sequence[float], max_n: int, relation: str = "add_remove") -> list[tuple[Values, Values]]:
    """Every neighbouring pair ``(x, y)`` of sorted datasets over ``domain`` with at most ``max_n`` values.

    ``"add_remove"``: ``y`` is ``x`` plus one value; both orders ``(x, y)`` and
    ``(y, x)`` are listed. ``"substitution"``: ``y`` is ``x`` with one value
    replaced by any value of ``domain`` (``y`` may equal ``x``); every ``x`` is
    listed with each of its replacements, so each pair appears in both orders.

    Examples:
        >>> multiset_neighbours((0.0, 1.0), 2)[:4]
        [((), (0.0,)), ((0.0,), ()), ((), (1.0,)), ((1.0,), ())]
        >>> len(multiset_neighbours((0.0, 1.0), 2))
        12
        >>> multiset_neighbours((0.0, 1.0), 1, "substitution")
        [((0.0,), (0.0,)), ((0.0,), (1.0,)), ((1.0,), (0.0,)), ((1.0,), (1.0,))]
    """
    if relation not in ("add_remove", "substitution"):
        raise ValueError(f"relation must be 'add_remove' or 'substitution', not {relation!r}")
    pairs: list[tuple[Values, Values]] = []
    for n in range(max_n + 1):
        for x in itertools.combinations_with_replacement(domain, n):
            if relation == "add_remove":
                if n < max_n:
                    for v in domain:
                        y = tuple(sorted(x + (v,)))
                        pairs.extend([(x, y), (y, x)])
            else:
                for i, v in itertools.product(range(n), domain):
                    z = list(x)
                    z[i] = v
                    pairs.append((x, tuple(sorted(z))))
    return pairs
