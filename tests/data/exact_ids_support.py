"""The exact-id property tests' values and brute force, shared by ``test_exact_ids.py`` and its Spark twin.

Test modules cannot import one another under ``--import-mode=importlib``; ``tests/conftest.py``
puts this folder on ``sys.path``, so they import this plain module (as ``backend_support.py``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import strategies as st

BIG = 2**53
# values at which a float rounds: 2**53 + k, 10**30 + k, 2**63 ± k, 2**64 - 1; small ones; non-integral ones
EXACT_VALUES: list[Fraction] = [
    Fraction(v) for v in (0, 1, -1, 7, BIG - 1, BIG, BIG + 1, BIG + 2, BIG + 3, -BIG - 1, 10**30, 10**30 + 1, 10**30 + 2,
                          2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1, 10**38 - 1)
] + [Fraction(1, 2), Fraction(1, 10), Fraction(3, 10), Fraction(1, 3), Fraction(2 * BIG + 1, 2), Fraction(10**20 + 1, 10**5)]  # fmt: skip


def decimal(value: Fraction, scale: int) -> Decimal:
    """``value`` as a Decimal with ``scale`` digits after the point, built exactly (no context rounding)."""
    n = value * Fraction(10) ** scale
    assert n.denominator == 1
    return Decimal((int(n < 0), tuple(int(c) for c in str(abs(n.numerator))), -scale))


def representations(value: Fraction) -> list[object]:
    """Every way a row may hold ``value`` exactly (an int, Decimals with and without an exponent, a Fraction, ...)."""
    out: list[object] = [value]
    if value.denominator == 1:
        n = value.numerator
        out += [n, Decimal(n), Decimal(f"{n}.000"), decimal(value, 3), decimal(value, 0)]
        if n % 1000 == 0:
            out.append(decimal(value, -3))  # the 1E+3 form
        if -(2**63) <= n < 2**63:
            out.append(np.int64(n))
        if 0 <= n < 2**64:
            out.append(np.uint64(n))
    d = value.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:  # a terminating decimal: Decimal holds it exactly
        scale = next(s for s in range(40) if (value * 10**s).denominator == 1)
        out += [decimal(value, scale), decimal(value, scale + 2)]
    as_float = value.numerator / value.denominator
    if Fraction(as_float) == value:
        out.append(as_float)
    return out


def exact(v: object) -> Fraction | None:
    """The brute force: a present number as the exact ``Fraction`` it is (``None``: missing)."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, np.integer):
        return Fraction(int(v))
    assert isinstance(v, (int, float, Decimal, Fraction)), type(v)
    return Fraction(v)


@st.composite
def id_rows(draw: st.DrawFn, *, pool: list[Fraction] = EXACT_VALUES, allow_missing: bool = True) -> list[object]:
    """A column of ids: a few distinct exact values, each row one representation of one (or a missing id)."""
    values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6, unique=True))
    n = draw(st.integers(0, 25))
    rows: list[object] = []
    for _ in range(n):
        if allow_missing and draw(st.integers(0, 9)) == 0:
            rows.append(None)
        else:
            rows.append(draw(st.sampled_from(representations(draw(st.sampled_from(values))))))
    return rows


def brute_units(ids: list[object]) -> Counter[Fraction]:
    """Each distinct present exact id and its number of rows."""
    return Counter(e for e in map(exact, ids) if e is not None)


def brute_sums(ids: list[object], x: list[float]) -> list[float]:
    """Each user's clamped total (``max(sum, 0)``; values are small integers: exact), ascending."""
    totals: dict[Fraction, float] = {}
    for uid, v in zip(ids, x):
        e = exact(uid)
        if e is not None:
            totals[e] = totals.get(e, 0.0) + v
    return sorted(max(t, 0.0) for t in totals.values())


def objects(values: Sequence[object]) -> np.ndarray[Any, np.dtype[np.object_]]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


