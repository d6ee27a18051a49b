"""Adversarial neighbour candidates for the empirical auditor, derived from a node's parameters.

For each mechanism dpalg knows where its privacy is tightest and builds small
pairs of neighbouring datasets there:

* **extreme values**: a base dataset at one clip bound, and the neighbour that
  adds (or substitutes) a row at the other bound -- the sensitivity boundary of
  counts, sums, means, vector sums and quantiles;
* **key boundaries**: a histogram key going from count 0 to 1 (the δ event of
  stable histograms), ties between the top keys (noisy max, PTR for the mode);
* **PTR's ⊥ boundary**: datasets whose distance to instability γ is 0 (the test
  must fail except with probability δ) next to neighbours with γ ≥ 1, found
  with the node's own :meth:`~dpalg.mechanisms.ProposeTest.distance`;
* **user level**: adding one user whose contribution is as large as the domain.

Nothing here reads real data; the pairs are synthetic and public.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import Unsupported
from dpalg.data import as_dataset
from dpalg.graph._node import AbstractPrimitive
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.mechanisms import (
    BoundedLS,
    BoundedLSRatio,
    CalibratedGaussianSum,
    CalibratedLaplaceSum,
    KSWRatio,
    NaiveRatio,
    NoisyMax,
    ProposeTest,
    PTRMode,
    StableHistogram,
)
from dpalg.queries import Query

__all__ = ["Columns", "NeighbourPair", "neighbour_candidates"]

Columns = Mapping[str, npt.NDArray[np.generic]]
AnyPrimitive = AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP]


@final
@attrs.frozen(eq=False)
class NeighbourPair:
    """Two neighbouring datasets and where to look in the output.

    Attributes:
        label: how the pair was derived (shown in the audit table).
        data, neighbour: the datasets (column name -> 1-D array).
        coordinate: the key (dict outputs) or index (vector outputs) to audit.
    """

    label: str
    data: Columns
    neighbour: Columns
    coordinate: str | int | None = None


def _f(values: list[float]) -> npt.NDArray[np.float64]:
    return np.array(values, dtype=np.float64)


def _num(x: Fraction) -> float:
    return float(x)


def _numeric_pairs(query: Query, relation: str, base_n: int = 8) -> list[NeighbourPair]:
    """Extreme-value pairs for a row-level query over one numeric column."""
    column = query.column or "row"
    lo = _num(query.lower) if query.lower is not None else 0.0
    hi = _num(query.upper) if query.upper is not None else 1.0
    big = hi if abs(hi) >= abs(lo) else lo
    mid = (lo + hi) / 2
    pairs: list[NeighbourPair] = []
    if relation == "substitution":
        pairs.append(NeighbourPair(f"{base_n} rows at lower; one replaced by upper", {column: _f([lo] * base_n)}, {column: _f([lo] * (base_n - 1) + [hi])}))
        pairs.append(NeighbourPair(f"{base_n} rows at upper; one replaced by lower", {column: _f([hi] * base_n)}, {column: _f([hi] * (base_n - 1) + [lo])}))
        return pairs
    other = lo if big == hi else hi
    pairs.append(NeighbourPair(f"{base_n} rows at {other:g}; add one at {big:g} (sensitivity boundary)", {column: _f([other] * base_n)}, {column: _f([other] * base_n + [big])}))
    pairs.append(NeighbourPair(f"{base_n} rows at {mid:g}; add one at {big:g}", {column: _f([mid] * base_n)}, {column: _f([mid] * base_n + [big])}))
    return pairs


def _histogram_pairs(query: Query, relation: str) -> list[NeighbourPair]:
    column = query.column
    assert column is not None
    keys = list(query.keys) if query.keys is not None else [1, 2]
    k0, k1 = keys[0], keys[1] if len(keys) > 1 else keys[0]
    dtype = object if any(isinstance(k, str) for k in keys) else np.float64
    base = [k for k in keys for _ in range(3)]
    if relation == "substitution":
        swapped = list(base)
        swapped[swapped.index(k1)] = k0
        return [NeighbourPair(f"3 rows per key; one {k1!r} row becomes {k0!r}", {column: np.array(base, dtype=dtype)}, {column: np.array(swapped, dtype=dtype)}, k0)]
    return [
        NeighbourPair(f"3 rows per key; add one {k0!r} row", {column: np.array(base, dtype=dtype)}, {column: np.array(base + [k0], dtype=dtype)}, k0),
    ]


def _user_pairs(query: Query, domain_hi: int | None) -> list[NeighbourPair]:
    user = query.user
    assert user is not None
    ids = np.arange(8, dtype=np.int64)
    if query.kind in ("user_count",) or (query.kind == "count" and query.column is None):
        data = {user: np.repeat(ids, 1)}
        extra = max(5, (query.max_rows or 0) + 3)
        return [NeighbourPair(f"8 users with 1 row; add a user with {extra} rows", data, {user: np.concatenate([data[user], np.full(extra, 99)])})]
    column = query.column
    assert column is not None
    # the added user is extreme: more rows than any cap, each at the top of the range
    rows = 4 if query.kind == "user_sum" else 1
    if query.user_bounded:
        rows = max(rows, (query.max_rows or 0) + 3, (query.max_keys or 0) * (query.rows_per_key or 0) + 3)
    if query.kind == "histogram":
        keys = list(query.keys) if query.keys is not None else [0, 1]
        dtype = object if any(isinstance(k, str) for k in keys) else np.float64
        small = {user: ids, column: np.array([keys[i % len(keys)] for i in range(ids.size)], dtype=dtype)}
        added_keys = [keys[i % len(keys)] for i in range(rows)]
        heavy_h = {user: np.concatenate([ids, np.full(rows, 99)]), column: np.array(small[column].tolist() + added_keys, dtype=dtype)}
        return [NeighbourPair(f"8 users with 1 row; add a user with {rows} rows over the keys", small, heavy_h, keys[0])]
    if query.upper is not None:
        cap = _num(query.upper)
    elif query.user_upper is not None:
        cap = _num(query.user_upper) + 1.0  # one row beyond the per-user clip
    else:
        cap = float(domain_hi if domain_hi is not None else 100)
    base = {user: ids, column: _f([1.0] * ids.size)}
    heavy = {user: np.concatenate([ids, np.full(rows, 99)]), column: _f([1.0] * ids.size + [cap] * rows)}
    empty = {user: np.array([], dtype=np.int64), column: _f([])}
    one = {user: np.full(rows, 99), column: _f([cap] * rows)}
    return [
        NeighbourPair(f"8 small users; add one user contributing {rows}x{cap:g}", base, heavy),
        NeighbourPair(f"no users; add one contributing {rows}x{cap:g}", empty, one),
    ]


def _query_pairs(query: Query, relation: str, domain_hi: int | None = None) -> list[NeighbourPair]:
    if query.user is not None:
        return _user_pairs(query, domain_hi)
    match query.kind:
        case "histogram":
            return _histogram_pairs(query, relation)
        case "count_distinct":
            column = query.column
            assert column is not None
            return [NeighbourPair("8 distinct values; add a new one", {column: _f(list(range(8)))}, {column: _f(list(range(9)))})]
        case "count":
            column = query.column or "row"
            if relation == "substitution":
                return [NeighbourPair("8 rows; one value becomes missing", {column: _f([1.0] * 8)}, {column: _f([1.0] * 7 + [float("nan")])})]
            return [NeighbourPair("8 rows; add one", {column: _f([0.0] * 8)}, {column: _f([0.0] * 9)})]
        case "median" | "quantile" if query.lower is not None and query.upper is not None:
            lo, hi = _num(query.lower), _num(query.upper)
            column = query.column
            assert column is not None
            split = [lo] * 4 + [hi] * 4
            return [
                NeighbourPair("4 rows at lower, 4 at upper; add one at upper (quantile jumps)", {column: _f(split)}, {column: _f(split + [hi])}),
                *_numeric_pairs(query, relation)[:1],
            ]
        case "mode":
            column = query.column
            assert column is not None
            tie = [0.0] * 3 + [1.0] * 3
            lead = [0.0] * 4 + [1.0] * 3
            return [
                NeighbourPair("a tie between two values; add one (mode becomes 1)", {column: _f(tie)}, {column: _f(tie + [1.0])}),
                NeighbourPair("mode leads by one; add one for the runner-up (a tie)", {column: _f(lead)}, {column: _f(lead + [1.0])}),
            ]
        case _:
            return _numeric_pairs(query, relation)


def _ptr_pairs(node: ProposeTest) -> list[NeighbourPair]:
    """PTR: the ⊥ boundary (γ = 0 next to γ ≥ 1) and a stable pair, found with the node's own γ."""
    query = node.query
    column = query.column or "row"
    if query.kind == "count":
        return _query_pairs(query, node.relation)
    assert query.lower is not None and query.upper is not None
    lo, hi = _num(query.lower), _num(query.upper)
    mid = (lo + hi) / 2

    def gamma(values: list[float]) -> int:
        return node.distance(node.query.values(as_dataset({column: _f(values)})))

    pairs: list[NeighbourPair] = []
    split = [lo, hi]
    pairs.append(NeighbourPair(
        f"unstable: lower and upper; add upper (γ = {gamma(split)} / {gamma(split + [hi])})",
        {column: _f(split)}, {column: _f(split + [hi])},
    ))
    # the ⊥ boundary: the smallest m with γ([mid]*m) = 0 and γ([mid]*(m+1)) >= 1
    for m in range(1, 257):
        g0, g1 = gamma([mid] * m), gamma([mid] * (m + 1))
        if g0 == 0 and g1 >= 1:
            pairs.append(NeighbourPair(
                f"⊥ boundary: {m} rows at the midpoint (γ = 0); add one (γ = {g1})",
                {column: _f([mid] * m)}, {column: _f([mid] * (m + 1))},
            ))
            break
    stable = [mid] * 24
    pairs.append(NeighbourPair(f"stable: 24 rows at the midpoint; add upper (γ = {gamma(stable)})", {column: _f(stable)}, {column: _f(stable + [hi])}))
    return pairs


def _count_pairs(node: BoundedLS) -> list[NeighbourPair]:
    wheres = sorted({c.where for c in node.counts if c.where is not None})
    limit = max([limit for _, limit in node.domain] + [2])
    pairs: list[NeighbourPair] = []
    for n in (limit, 4 * limit):
        base = {w: _f([1.0 if i % 2 == 0 else 0.0 for i in range(n)]) for w in wheres} or {"row": _f([0.0] * n)}
        ones = {k: np.concatenate([v, _f([1.0])]) for k, v in base.items()}
        zeros = {k: np.concatenate([v, _f([0.0])]) for k, v in base.items()}
        pairs.append(NeighbourPair(f"{n} rows (domain limit {limit}); add a row counted everywhere", base, ones))
        pairs.append(NeighbourPair(f"{n} rows; add a row counted nowhere", base, zeros))
    return pairs


def _ratio_pairs(column: str, relation: str) -> list[NeighbourPair]:
    if relation == "substitution":
        return [
            NeighbourPair("a=1, b=2; a 0 becomes 1", {column: _f([1.0, 0.0])}, {column: _f([1.0, 1.0])}),
            NeighbourPair("a=5, b=10; a 0 becomes 1", {column: _f([1.0] * 5 + [0.0] * 5)}, {column: _f([1.0] * 6 + [0.0] * 4)}),
        ]
    return [
        NeighbourPair("a=1, b=2; add a 1", {column: _f([1.0, 0.0])}, {column: _f([1.0, 0.0, 1.0])}),
        NeighbourPair("a=0, b=1; add a 1", {column: _f([0.0])}, {column: _f([0.0, 1.0])}),
        NeighbourPair("a=5, b=10; add a 0", {column: _f([1.0] * 5 + [0.0] * 5)}, {column: _f([1.0] * 5 + [0.0] * 6)}),
    ]


def _vector_pairs(queries: tuple[Query, ...], relation: str) -> list[NeighbourPair]:
    lows = [_num(q.lower) if q.lower is not None else 0.0 for q in queries]
    highs = [_num(q.upper) if q.upper is not None else 1.0 for q in queries]
    extreme = [h if abs(h) >= abs(lo) else lo for lo, h in zip(lows, highs)]
    columns = [q.column or f"c{i}" for i, q in enumerate(queries)]
    base = {c: _f([0.0] * 6) for c in columns}
    if relation == "substitution":
        low = {c: _f([lo] * 6) for c, lo in zip(columns, lows)}
        high = {c: _f([lo] * 5 + [h]) for c, lo, h in zip(columns, lows, highs)}
        return [NeighbourPair("6 rows at lower; one replaced by upper in every coordinate", low, high, i) for i in sorted({0, len(queries) - 1})]
    added = {c: np.concatenate([base[c], _f([e])]) for c, e in zip(columns, extreme)}
    return [
        NeighbourPair(f"6 rows of zeros; add a row at the extremes (coordinate {i})", base, added, i)
        for i in sorted({0, len(queries) - 1})
    ]


def neighbour_candidates(node: AnyPrimitive) -> tuple[NeighbourPair, ...]:
    """Adversarial neighbouring pairs for ``node``, derived from its parameters.

    Raises:
        Unsupported: when dpalg cannot derive candidates for this node (give
            neighbours explicitly, e.g. for a sample-and-aggregate block function).
    """
    relation = node.neighbouring.relation
    pairs: list[NeighbourPair]
    if isinstance(node, ProposeTest):
        pairs = _ptr_pairs(node)
    elif isinstance(node, PTRMode):
        pairs = _query_pairs(node.query, relation)
        stable = {node.query.column or "x": _f([0.0] * 30)}
        pairs.append(NeighbourPair("stable mode (30 zeros); add a one", stable, {k: np.concatenate([v, _f([1.0])]) for k, v in stable.items()}))
    elif isinstance(node, StableHistogram):
        column = node.query.column
        assert column is not None
        keys = list(node.query.keys) if node.query.keys is not None else [1, 2]
        k0, k1 = keys[0], keys[1] if len(keys) > 1 else keys[0]
        dtype = object if any(isinstance(k, str) for k in keys) else np.float64
        pairs = [
            NeighbourPair(f"key {k1!r} absent; add one row of it (count 0 -> 1: the δ event)", {column: np.array([k0] * 3, dtype=dtype)}, {column: np.array([k0] * 3 + [k1], dtype=dtype)}, k1),
            NeighbourPair(f"key {k0!r} with 5 rows; add one", {column: np.array([k0] * 5, dtype=dtype)}, {column: np.array([k0] * 6, dtype=dtype)}, k0),
        ]
    elif isinstance(node, NoisyMax):
        pairs = _query_pairs(node.query, relation)
    elif isinstance(node, BoundedLS):
        pairs = _count_pairs(node)
    elif isinstance(node, (NaiveRatio, KSWRatio, BoundedLSRatio)):
        pairs = _ratio_pairs(node.ratio.numerator, relation)
    elif isinstance(node, (CalibratedGaussianSum, CalibratedLaplaceSum)):
        pairs = _vector_pairs(node.queries, relation)
    else:
        query = getattr(node, "query", None)
        if not isinstance(query, Query):
            raise Unsupported(f"{type(node).__name__}: dpalg cannot derive neighbour candidates for it; pass --neighbours")
        domain = getattr(node, "domain", None)
        domain_hi = domain[1] if isinstance(domain, tuple) and len(domain) == 2 and isinstance(domain[1], int) else None
        pairs = _query_pairs(query, relation, domain_hi)
    return tuple(pairs)
