"""Exponential-mechanism nodes: a private quantile over a grid, and noisy max.

Both sample candidate ``c`` with probability ``∝ exp(−γ·s_c)`` for integer scores
``s_c ≥ 0`` (or flip its coin with probability ``exp(−γ(s_c − s*))``, permute-and-flip,
McKenna–Sheldon 2020). **Accuracy** (proof of the score gap
:func:`~dpalg.mechanisms._common.accuracy.exp_mech_gap`: McSherry–Talwar 2007 Thm 8,
in :mod:`dpalg.mechanisms._common.accuracy`): with ``N`` candidates and rate ``γ``,
the output's score is at most ``t − 1`` above the best with probability ``≥ 1 − α``.

* :class:`ExponentialQuantile`: ``N = 2**grid_bits + 1`` grid points, score
  ``den(q)·|(1 − q)·#{x < c} − q·#{x > c}|``, ``γ = ε/(2Δ·den(q))``. The
  "rank" error is the gap of ``|(1 − q)·#{x < c} − q·#{x > c}|`` between the
  output and the best grid point: ``(t − 1)/den(q) ≈ (2Δ/ε)·ln((N − 1)/α)``.
  For an output ``c`` holding ``E`` values with ``L`` below, that quantity is
  ``|L + qE − qn|``, at least the distance from ``qn`` to ``c``'s ranks
  ``[L, L + E]``. The best grid point is within ``max(q, 1 − q)·E*`` of 0
  (``E*`` the ties at the grid point holding the true quantile; below 1 for
  distinct values); snapping the data to the grid comes on top.
* :class:`NoisyMax`: ``N`` keys, score ``max count − count``, ``γ = ε/L∞``
  (add/remove) or ``ε/(2L∞)`` (substitution): the released key's count is
  within ``t − 1`` of the largest count.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Final, Literal, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Dataset, Neighbouring, Relation, as_reductions
from dpalg.data._grid_view import GridSpan, GridView
from dpalg.data._numpy_reductions import MAX_COUNTED_GRID_BITS
from dpalg.data._schema import column_kind
from dpalg.data._unit_spec import KeptRowCellSpec
from dpalg.data._unit_totals import grid_index
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import exp_mech_gap, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim, SchemaChoice
from dpalg.measures import PureDP
from dpalg.mechanisms._common.params import floor_log2, positive_param, relation_param
from dpalg.mechanisms._common.user_level import (
    check_user_level,
    histogram_sensitivity,
    kept_rows,
    row_values,
    user_key_counts,
    sorted_user_totals,
    values_per_user,
)
from dpalg.noise import AbstractRandomness, prf_secret, sample_exp_runs, sample_exp_weights
from dpalg.noise._exponential import Run, near_threshold, sample_exp_window
from dpalg.noise._permute_flip import MAX_PF_CANDIDATES, sample_permute_flip
from dpalg.queries import Query
from dpalg.queries._query import refuse_user_function
from dpalg.graph._node import ABSENT_IN_CERTIFICATE

__all__ = [
    "MAX_CANDIDATES", "ExponentialQuantile", "NoisyMax", "candidate_scores", "integer_range", "quantile_runs", "quantile_runs_from_counts",
]  # fmt: skip

#: the most public candidates an :class:`ExponentialQuantile` accepts
MAX_CANDIDATES: Final = 1 << 16  # a certificate records every candidate (plan, plan_repr, derivation): 2**16 keeps it far below the auditor's 16 MiB

Selection = Literal["exponential", "permute_and_flip"]


def _quantile_query(value: Query) -> Query:
    refuse_user_function("ExponentialQuantile", value)
    if not isinstance(value, Query) or value.kind not in ("median", "quantile"):
        raise InvalidArgument("ExponentialQuantile", "query", value, "must be Query.median(...) or Query.quantile(...)")
    lower, upper = grid_bounds(value)
    if lower == upper:
        raise InvalidArgument("ExponentialQuantile", "query", value, "needs a clip range with lower < upper")
    return value


def grid_bounds(query: Query) -> tuple[Fraction, Fraction]:
    """The candidates' range: the per-user clip for a quantile of users' totals, else the row clip."""
    if query.per_user_totals:
        assert query.user_lower is not None and query.user_upper is not None
        return query.user_lower, query.user_upper
    return query.require_bounds("ExponentialQuantile")


def _quantile_values(query: Query, data: Dataset, rng: AbstractRandomness) -> npt.NDArray[np.float64]:
    """The values ranked: rows (row-level), kept rows (MaxRowsPerUser) or users' clipped totals."""
    if query.user is None:
        return query.values(data)
    secret = prf_secret(rng) if query.max_rows is not None else bytes(32)
    if query.per_user_totals:
        lower, upper = grid_bounds(query)
        k = floor_log2(upper - lower) - 40  # public: totals are exact multiples of 2**k
        totals = sorted_user_totals(query, data, k, secret)  # the multiset is ranked: ascending, from the seam
        return np.ldexp(totals.astype(np.float64), k)  # a per-user map; the grid snap follows
    _, _, keep = kept_rows(query, data, secret, ordered=False)
    return row_values(query, data, keep)


def _eq_eps(value: ExactLike) -> Fraction:
    return positive_param("ExponentialQuantile", "epsilon", value)


def _eq_relation(value: str) -> Relation:
    return relation_param("ExponentialQuantile", value)


def _grid_bits(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 62:
        raise InvalidArgument("ExponentialQuantile", "grid_bits", value, "must be an int in [1, 62]")
    return value


CandidateRule = Literal["auto", "integers"]


def _candidates(
    value: Sequence[ExactLike] | npt.NDArray[np.generic] | str | None,
) -> tuple[Fraction, ...] | CandidateRule | None:
    """``"auto"``, ``"integers"``, ``None`` (the grid), or the public candidates as a tuple of exact Fractions, strictly increasing."""
    owner = "ExponentialQuantile"
    if value is None:
        return None
    if isinstance(value, str) and value in ("auto", "integers"):
        return "auto" if value == "auto" else "integers"
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InvalidArgument(
            owner, "candidates", value if isinstance(value, str) else type(value).__name__,
            "must be 'auto', 'integers', None (the grid) or a sequence of numbers (list, tuple, range, 1-D array)",
        )
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise InvalidArgument(owner, "candidates", f"<array of shape {value.shape}>", "must be one-dimensional")
    if not 1 <= len(value) <= MAX_CANDIDATES:
        raise InvalidArgument(owner, "candidates", f"<{len(value)} values>", f"must hold 1 to 2**16 = {MAX_CANDIDATES} values")
    out = tuple(to_fraction(v, owner=owner, field=f"candidates[{i}]") for i, v in enumerate(value))
    for i in range(1, len(out)):
        if out[i] <= out[i - 1]:
            raise InvalidArgument(owner, f"candidates[{i}]", _plain(out[i]), f"must be > candidates[{i - 1}]={out[i - 1]} (strictly increasing)")
    return out


#: integer candidates are exact as float64 up to here (the clip range must lie inside ±2**53)
_MAX_EXACT_INT = 1 << 53


def integer_range(query: Query) -> tuple[int, int] | None:
    """The integers ``[a, b]`` of the clip range that ``candidates="integers"`` uses, or ``None``.

    ``a = ceil(l)``, ``b = floor(u)``; ``None`` when the range holds no integer,
    more than :data:`MAX_CANDIDATES`, or reaches beyond ±2**53 (where float64
    values stop being exact integers). A function of the public parameters only.
    """
    lower, upper = grid_bounds(query)
    a, b = -((-lower.numerator) // lower.denominator), upper.numerator // upper.denominator
    if a > b or b - a + 1 > MAX_CANDIDATES or a < -_MAX_EXACT_INT or b > _MAX_EXACT_INT:
        return None
    return a, b


def _integer_typed(data: Dataset, column: str) -> bool:
    """Whether the column's *declared* type is an integer (the public schema, never a value)."""
    return column_kind(data, column) == "int"


def _selection(value: str) -> Selection:
    if value == "exponential":
        return "exponential"
    if value == "permute_and_flip":
        return "permute_and_flip"
    raise InvalidArgument("ExponentialQuantile", "selection", value, "must be 'exponential' or 'permute_and_flip'")


def _plain(c: Fraction) -> int | Fraction:
    """A candidate as an error message shows it: an int when whole."""
    return c.numerator if c.denominator == 1 else c


def _candidate_text(c: Fraction) -> str:
    return str(c.numerator) if c.denominator == 1 else repr(c)


def candidate_scores(x: npt.NDArray[np.float64], candidates: tuple[Fraction, ...], q: Fraction) -> npt.NDArray[np.int64]:
    """The integer scores ``den(q)·|(1 − q)·#{x < c} − q·#{x > c}|`` of every candidate, exactly.

    ``x`` holds the (clipped) values; each record enters every count through a
    comparison of its own value with the public candidate, so one record moves
    ``#{x < c}`` or ``#{x > c}`` by at most one. The comparisons are exact:
    with ``f`` the nearest float to ``c``, no float lies strictly between ``f``
    and ``c``, so ``x < c`` is ``x <= f`` when ``f < c`` and ``x < f`` otherwise.
    """
    xs = np.sort(x)
    n = int(xs.size)
    cf = np.array([float(c) for c in candidates], dtype=np.float64)
    below = np.searchsorted(xs, cf, side="left").astype(np.int64)  # #{x < f}
    at_or_below = np.searchsorted(xs, cf, side="right").astype(np.int64)  # #{x <= f}
    exact = all(c.denominator & (c.denominator - 1) == 0 and abs(c.numerator) < 1 << 53 for c in candidates)
    if exact:  # dyadic with a 53-bit numerator: f == c
        less, greater = below, n - at_or_below
    else:
        f_below_c = np.array([f < c for f, c in zip(cf.tolist(), candidates)], dtype=np.bool_)  # exact float/Fraction comparisons
        f_above_c = np.array([f > c for f, c in zip(cf.tolist(), candidates)], dtype=np.bool_)
        less = np.where(f_below_c, at_or_below, below)
        greater = n - np.where(f_above_c, below, at_or_below)
    a = q.denominator - q.numerator
    b = q.numerator
    scores: npt.NDArray[np.int64] = np.abs(a * less - b * greater).astype(np.int64)
    return scores


def slot_scores(slots: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], m: int, q: Fraction) -> npt.NDArray[np.int64]:
    """:func:`candidate_scores` from the values' counts per candidate slot (:func:`~dpalg.data._unit_totals.candidate_slots`).

    ``#{x < c_j}`` is the count of slots ``<= 2j`` and ``#{x > c_j}`` of slots
    ``>= 2j + 2``: the same integers, so the same scores.

    Examples:
        >>> from dpalg.data._unit_totals import candidate_slots
        >>> x, c = np.array([0.5, 1.0, 1.0, 3.0]), (Fraction(1), Fraction(2))
        >>> s, n = np.unique(candidate_slots(x, c), return_counts=True)
        >>> slot_scores(s, n, 2, Fraction(1, 2)).tolist() == candidate_scores(x, c, Fraction(1, 2)).tolist()
        True
    """
    dense = np.zeros(2 * m + 1, dtype=np.int64)
    dense[slots] = counts
    upto = np.cumsum(dense)
    n = int(upto[-1])
    less = upto[0 : 2 * m : 2]  # slots 0, 2, .., 2m - 2: #{x < c_j} is the count up to slot 2j
    greater = n - upto[1 : 2 * m : 2]  # n minus the count up to slot 2j + 1
    a, b = q.denominator - q.numerator, q.numerator
    scores: npt.NDArray[np.int64] = np.abs(a * less - b * greater).astype(np.int64)
    return scores


def _score_runs(scores: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Maximal runs of consecutive equal scores: ``(starts, lengths, scores)``."""
    starts = np.concatenate(([0], np.flatnonzero(np.diff(scores) != 0) + 1)).astype(np.int64)
    lengths = np.diff(np.append(starts, scores.size)).astype(np.int64)
    return starts, lengths, scores[starts]


def quantile_runs(
    grid_index: npt.NDArray[np.int64], grid_size: int, q: Fraction
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Runs of candidates with equal quantile score (vectorised, O(n log n)).

    Candidates are ``j = 0..grid_size``; each record sits on the grid index in
    ``grid_index``. The score of candidate j is
    ``|(1 − q)·#{i < j} − q·#{i > j}|`` times the denominator of q (an integer).
    For every distinct data index d there is the run ``{d}`` and the run of
    candidates strictly between the previous data index and d (when non-empty),
    plus the final run after the last data index.

    Returns:
        ``(starts, lengths, scores)`` as int64 arrays.
    """
    if grid_index.size == 0:  # every candidate scores 0
        return quantile_runs_from_counts(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), grid_size, q)
    uniq, counts = np.unique(grid_index, return_counts=True)
    return quantile_runs_from_counts(uniq.astype(np.int64), counts.astype(np.int64), grid_size, q)


def quantile_runs_from_counts(
    uniq: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], grid_size: int, q: Fraction
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`quantile_runs` from the occupied grid indices (ascending) and their counts.

    This is all the data the quantile's utility reads: a backend answers it with
    grid counts (:meth:`~dpalg.data.Reductions.grid_counts`) instead of a sort.
    """
    a = q.denominator - q.numerator  # (1 - q) * den
    b = q.numerator  # q * den
    n = int(counts.sum())
    if n == 0:  # every candidate scores 0
        return np.array([0], dtype=np.int64), np.array([grid_size + 1], dtype=np.int64), np.array([0], dtype=np.int64)
    below = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)  # records strictly below each index
    prev_end = np.concatenate(([0], uniq[:-1] + 1)).astype(np.int64)
    gap_len = uniq - prev_end
    gap_score = np.abs(a * below - b * (n - below))
    at_score = np.abs(a * below - b * (n - below - counts))
    # interleave: gap run (if non-empty) then the run at the data index
    starts = np.stack([prev_end, uniq], axis=1).reshape(-1)
    lengths = np.stack([gap_len, np.ones_like(uniq)], axis=1).reshape(-1)
    scores = np.stack([gap_score, at_score], axis=1).reshape(-1)
    last = int(uniq[-1]) + 1
    if last <= grid_size:
        starts = np.append(starts, last)
        lengths = np.append(lengths, grid_size + 1 - last)
        scores = np.append(scores, abs(a * n - b * 0))
    keep = lengths > 0
    return starts[keep].astype(np.int64), lengths[keep].astype(np.int64), scores[keep].astype(np.int64)


#: fewer occupied grid points than this: the runs are built in full (the lazy window saves nothing)
LAZY_GRID_MIN: Final = 4096
#: more occupied points than this near the target rank (a tiny epsilon): the runs are built in full
LAZY_WINDOW_MAX: Final = 1 << 14


def sample_quantile_grid(
    occupied: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    grid_size: int,
    q: Fraction,
    gamma: Fraction,
    rng: AbstractRandomness,
    *,
    lazy: bool = True,
) -> int:
    """The grid candidate of the exponential quantile: the runs of :func:`quantile_runs_from_counts`,
    sampled as :func:`~dpalg.noise.sample_exp_runs` samples them, then a uniform candidate of the run.

    Only the runs near the target rank are built. The signed score
    ``(1 − q)·#{x < c} − q·#{x > c}`` never decreases along the candidates, so its
    absolute value falls then rises and the runs below any score form one window of
    occupied points, found by binary search on the cumulative counts; a run of the
    far block is looked up from the counts when (with negligible probability) it is
    proposed (:func:`~dpalg.noise._exponential.sample_exp_window`). The draws are the
    same as with the full list of runs, so the release is the same.
    """
    m = int(occupied.shape[0])
    n = int(counts.sum()) if m else 0
    if not lazy or m < LAZY_GRID_MIN or n == 0:
        starts, lengths, scores = quantile_runs_from_counts(occupied, counts, grid_size, q)
        run = sample_exp_runs(scores, gamma, lengths, rng=rng)
        length = int(lengths[run])
        return int(starts[run]) + (rng.big_below(length) if length > 1 else 0)
    a = q.denominator - q.numerator  # (1 - q) * den
    b = q.numerator  # q * den
    upto = np.cumsum(counts)  # records at or below each occupied point
    last_cell = int(occupied[-1])

    def below(i: int) -> int:  # records strictly below occupied point i
        return int(upto[i - 1]) if i else 0

    def cell_runs(lo: int, hi: int) -> list[Run]:
        """The runs of occupied points lo..hi-1 (the gap before each, then the point), and the final run when hi == m."""
        out: list[Run] = []
        for i in range(lo, hi):
            cell, under = int(occupied[i]), below(i)
            start = int(occupied[i - 1]) + 1 if i else 0
            if cell > start:
                out.append((start, cell - start, abs(a * under - b * (n - under))))
            out.append((cell, 1, abs(a * under - b * (n - under - int(counts[i])))))
        if hi == m and last_cell < grid_size:
            out.append((last_cell + 1, grid_size - last_cell, a * n))
        return out

    def first_at_least(threshold: int) -> int:
        """The first occupied point i with below(i) >= threshold (m if none)."""
        if threshold <= 0:
            return 0
        return min(int(np.searchsorted(upto, threshold, side="left")) + 1, m)

    # the signed score of point i's runs lies in [(a+b)·below(i) − b·n, (a+b)·below(i+1) − b·n]
    # the least |score| is where the signed score turns non-negative: the last negative run belongs to
    # point turn - 2 or turn - 1 (the gap before turn - 1 may be empty), the first non-negative one to
    # point turn - 1 or turn, or it is the final run
    turn = first_at_least(-(-(b * n) // (a + b)))  # the first point whose gap run would be non-negative
    s_min = min(s for _, _, s in cell_runs(max(turn - 2, 0), min(turn + 1, m)))
    s_cap = near_threshold(s_min, gamma)[1]
    # points whose runs all score <= -s_cap lie before lo; points whose runs all score >= s_cap from hi on
    lo = max(first_at_least((b * n - s_cap) // (a + b) + 1) - 1, 0)
    hi = max(first_at_least(-(-(b * n + s_cap) // (a + b))), lo)
    if hi - lo > LAZY_WINDOW_MAX:  # a tiny epsilon: most runs are near, build them all (vectorised)
        return sample_quantile_grid(occupied, counts, grid_size, q, gamma, rng, lazy=False)

    def window(threshold: int) -> list[Run]:
        assert threshold == s_cap
        return cell_runs(lo, hi)

    def far_run(p: int) -> Run:
        i = int(np.searchsorted(occupied, p, side="left"))
        if i < m and int(occupied[i]) == p:
            return cell_runs(i, i + 1)[-1] if i + 1 < m or last_cell == grid_size else cell_runs(i, i + 1)[-2]
        if i == m:
            return cell_runs(m, m)[0]
        return cell_runs(i, i + 1)[0]

    start, length, _ = sample_exp_window(s_min, window, far_run, grid_size + 1, gamma, rng)
    return start + (rng.big_below(length) if length > 1 else 0)


def _span_runs(span: GridSpan, grid_size: int, a: int, b: int) -> list[tuple[int, int, int]]:
    """The score runs over the candidates ``span.prev + 1 .. span.next - 1`` (``0 .. grid_size`` at the ends), signed.

    Those of :func:`quantile_runs_from_counts` on the whole grid, in order, as
    ``(start, length, signed score)`` with the signed score ``a·below − b·above``
    (``|·|`` is the score): the gap before each cell of the span, the cell, then the
    gap up to ``span.next`` (the final run, with every value below it, when there is no next).
    """
    n = span.n
    out: list[tuple[int, int, int]] = []
    start = 0 if span.prev is None else span.prev + 1
    under = span.below
    for cell, count in zip(span.cells.tolist(), span.counts.tolist()):
        if cell > start:
            out.append((start, cell - start, a * under - b * (n - under)))
        out.append((cell, 1, a * under - b * (n - under - count)))
        start, under = cell + 1, under + count
    stop = grid_size + 1 if span.next is None else span.next
    if stop > start:
        out.append((start, stop - start, a * under - b * (n - under)))
    return out


def _run_at(runs: Sequence[tuple[int, int, int]], p: int) -> Run | None:
    """The run holding candidate ``p`` (with its score ``|signed|``), or ``None`` when no run of ``runs`` holds it."""
    i = bisect.bisect_right([r[0] for r in runs], p) - 1
    if i < 0 or p >= runs[i][0] + runs[i][1]:
        return None
    start, length, signed = runs[i]
    return start, length, abs(signed)


def sample_quantile_view(view: GridView, grid_size: int, q: Fraction, gamma: Fraction, rng: AbstractRandomness) -> int:
    """:func:`sample_quantile_grid` reading only the grid cells near the target rank: the same draws, the same candidate.

    With the whole grid at hand (``view.counted``), that function. Otherwise the near
    runs are found from a bound. The signed score ``(a+b)·below − b·n`` of a run
    never decreases along the candidates; every run of a cell in the block holding
    rank ``r = floor(b·n/(a+b))`` (ranks ``lo .. hi − 1``) has a signed score in
    ``[(a+b)·lo − b·n, (a+b)·hi − b·n]``, so the least score ``s_min`` is at most
    ``s_up``, the larger magnitude of the two ends, and the near threshold ``s_cap``
    at most ``near_threshold(s_up)`` (it grows with ``s_min``). A run scoring below
    that lies within ``s_cap_up/(a+b)`` ranks of the target, so one span (the cells
    holding the ranks ``target ± (s_cap_up/(a+b) + 1)``) holds every run scoring below
    ``s_cap_up``: a point run's score ``|(a+b)·(L + b·E/(a+b)) − b·n|`` (``L`` values
    below, ``E`` at the cell) puts a rank of the cell within reach of the target, and a
    gap run's ``|(a+b)·L − b·n|`` puts the cell after the gap there. The bound is
    checked: when the span's least score is at most ``s_up``, the least score of the
    whole grid is in the span (it is below ``s_cap_up``), so is every run below
    ``s_cap <= s_cap_up``; otherwise (never) the whole grid answers. A far run is
    looked up (``view.around``, a backend pass) only when the far block is proposed
    (:func:`~dpalg.noise._exponential.sample_exp_window`: probability about
    ``N·2**-256``). The draws are those of :func:`sample_exp_window` on the same near
    runs, ``s_min`` and far runs, hence of :func:`sample_quantile_grid`.
    """
    counted = view.counted
    n = view.n
    if counted is not None or n == 0:
        cells, counts = counted if counted is not None else view.full()
        return sample_quantile_grid(cells, counts, grid_size, q, gamma, rng)
    a = q.denominator - q.numerator  # (1 - q) * den
    b = q.numerator  # q * den
    target = Fraction(b * n, a + b)
    lo, hi = view.rank_block(min(max(target.__floor__(), 0), n - 1))
    s_up = max(abs((a + b) * lo - b * n), abs((a + b) * hi - b * n))
    reach = Fraction(near_threshold(s_up, gamma)[1], a + b) + 1
    span = view.span(max((target - reach).__floor__(), 0), min((target + reach).__ceil__(), n - 1))
    runs = _span_runs(span, grid_size, a, b)
    s_min = min(abs(s) for _, _, s in runs)
    s_cap = near_threshold(s_min, gamma)[1]
    if s_min > s_up:  # not reached (the block's bound holds); checked, as the argument rests on it
        return sample_quantile_grid(*view.full(), grid_size, q, gamma, rng)
    window = [(start, length, abs(s)) for start, length, s in runs]

    def near(threshold: int) -> list[Run]:
        assert threshold == s_cap
        return window

    def far_run(p: int) -> Run:
        found = _run_at(runs, p)
        if found is None:
            found = _run_at(_span_runs(view.around(p), grid_size, a, b), p)
        assert found is not None
        return found

    start, length, _ = sample_exp_window(s_min, near, far_run, grid_size + 1, gamma, rng)
    return start + (rng.big_below(length) if length > 1 else 0)


@final
@attrs.frozen
class ExponentialQuantile(AbstractPrimitive[PureDP]):
    """A private quantile by the exponential mechanism (or permute-and-flip) over public candidates.

    By default (``candidates="auto"``) the candidates are the integers of the
    clip range when the column's *declared* type is an integer and ``[l, u]``
    holds 1 to 2**16 integers (within ±2**53), else the ``2**grid_bits + 1``
    points ``l + j (u − l)/2**grid_bits`` (``candidates=None`` always uses
    that grid). On the grid, each record is first snapped to its nearest
    candidate (a per-record map, so neighbouring datasets stay neighbours). The
    utility of candidate c is ``−|(1 − q)·#{x < c} − q·#{x > c}|``; candidates
    with equal utility form O(n) runs, each weighted in one step by the exact
    sampler, then a uniform point is drawn inside the chosen run — the grid is
    never enumerated.

    With ``candidates=(c_1 < … < c_N)`` (public, finite, inside the clip range,
    N ≤ 2**20) the output is one of them; records are compared with each
    candidate exactly, without snapping (on integer data with integer
    candidates the median itself can be released). The utility, Δ and the
    sampler are the same.

    Args:
        query: ``Query.median(col) | Clip(l, u)`` or ``Query.quantile(col, q) | Clip(l, u)``
            (or a user-level form, see below).
        epsilon: ε > 0.
        relation: ``"add_remove"`` (default) or ``"substitution"``.
        grid_bits: log2 of the number of grid intervals (default 20); must stay
            20 when ``candidates`` is given.
        candidates: ``"auto"`` (default: the integers of ``[l, u]`` on an
            integer-typed column, else the grid), ``"integers"`` (the integers
            ``ceil(l)..floor(u)``, at most 2**16, whatever the column's type),
            ``None`` (the grid), or a public, strictly increasing sequence of
            finite numbers inside the clip range, stored as exact Fractions.
        selection: ``"exponential"`` (default) or ``"permute_and_flip"``
            (needs at most 2**20 + 1 candidates: ``grid_bits <= 20`` or ``candidates``).

    Raises:
        InvalidArgument: at construction, for any parameter outside the above.

    Privacy guarantee:
        ε-DP (McSherry–Talwar 2007, Theorem 6; Dwork–Roth Theorem 3.10): the
        utility has sensitivity Δ = max(q, 1 − q) under add/remove (one record
        moves #{x < c} by 1 − q or #{x > c} by q) and Δ = 1 under substitution;
        sampling ∝ exp(ε·u/(2Δ)) exactly (:func:`dpalg.noise.sample_exp_weights`).
        ``selection="permute_and_flip"``: ε-DP by McKenna–Sheldon 2020,
        Theorem 1, coins Bernoulli(exp(ε(u − u*)/(2Δ))) with the same Δ, sampled
        exactly (:func:`dpalg.noise._permute_flip.sample_permute_flip`); its
        expected utility is never below the exponential mechanism's (their Theorem 2).
        User level (add/remove one user): with ``| ClipPerUser(L, U)`` the
        records are the users' clipped totals, one per user, and the candidates
        lie in [L, U], so Δ is unchanged; with ``| MaxRowsPerUser(k)`` one user adds at
        most k records and Δ = k·max(q, 1 − q). Public candidates do not touch
        the argument: every count is a sum of per-record indicators.
        The theorem needs the candidate set to be fixed independently of the
        data: ``"integers"`` is a function of (l, u) alone; ``"auto"`` of (l, u,
        grid_bits) and the column's declared type, read from the schema
        (:meth:`dpalg.data.Dataset.column_type`, never a value), which is public
        and the same on neighbouring datasets (they differ in rows, not in
        schema). So on each schema the mechanism is the exponential mechanism over
        one fixed public set, ε-DP with the same Δ; the cost never depends on
        which set runs. The integer path ranks values on a grid of step 1 (index
        ``x − l`` of an integer value in ``[l, u]``), which gives every integer
        candidate the score :func:`candidate_scores` gives it: the same law.

        Bounded range (``selection="exponential"``): ε-bounded-range (BR, Durfee–Rogers
        2019): for neighbours x, x' and every candidate c,
        ``ln(P[c | x]/P[c | x']) = (ε/(2Δ))·(u(x, c) − u(x', c)) + ln(Z(x')/Z(x))``, and
        ``u(x, c) − u(x', c) ∈ [−Δ, Δ]`` for every c, so the log-ratio lies in an
        interval of width ε (Steinke, "The Exponential Mechanism and Bounded Range
        Privacy", differentialprivacy.org 2021, Lemma 3). Stated in the claim
        (``bounded_range=ε``), so :class:`~dpalg.PureToZCDP` charges it ε²/8-zCDP
        (Cesar–Rogers 2021, arXiv:2004.07223, Lemmas 3.2 and 3.4), not ε²/2.
        Permute-and-flip is not claimed bounded-range: no proof of a width below 2ε
        (which every ε-DP mechanism has, and which gives ε²/2 again) is known to us.

    Examples:
        >>> from dpalg import Clip, PureDP, Query
        >>> node = ExponentialQuantile(Query.median("price") | Clip(0, 10), epsilon=2, candidates=range(11))
        >>> node
        ExponentialQuantile(query=Query.median('price') | Clip(0, 10), epsilon=Fraction(2, 1), relation='add_remove', grid_bits=20, candidates=(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))
        >>> node.check(PureDP(2)).cost
        PureDP(2)
        >>> node.run({"price": [3, 4, 4, 4, 4, 4, 5] * 20}, rng=0).value  # seeded: reproducible, NOT secure
        4.0
    """

    query: Query = attrs.field(converter=_quantile_query)
    epsilon: Fraction = attrs.field(converter=_eq_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_eq_relation)
    grid_bits: int = attrs.field(default=20, converter=_grid_bits)
    # a certificate written before this field existed meant the grid: it decodes to None (dpalg.release._serialize)
    candidates: tuple[Fraction, ...] | CandidateRule | None = attrs.field(
        default="auto", converter=_candidates, metadata={ABSENT_IN_CERTIFICATE: None}
    )
    selection: Selection = attrs.field(default="exponential", converter=_selection)

    def __repr__(self) -> str:
        # the attrs repr of the fields every node has; the optional ones only when set, so
        # existing plans (and their certificates' plan_repr) read exactly as before
        text = (
            f"ExponentialQuantile(query={self.query!r}, epsilon={self.epsilon!r}, "
            f"relation={self.relation!r}, grid_bits={self.grid_bits!r}"
        )
        if isinstance(self.candidates, str):  # the default "auto" too: a plan says which candidates it uses
            text += f", candidates={self.candidates!r}"
        elif self.candidates is not None:
            text += f", candidates=({', '.join(_candidate_text(c) for c in self.candidates)}{',' if len(self.candidates) == 1 else ''})"
        if self.selection != "exponential":
            text += f", selection={self.selection!r}"
        return text + ")"

    @property
    def neighbouring(self) -> Neighbouring:
        """Row-level under ``relation``."""
        return self.query.neighbouring(self.relation)

    @property
    def q(self) -> Fraction:
        """The quantile level."""
        return self.query.q if self.query.q is not None else Fraction(1, 2)

    @property
    def n_candidates(self) -> int:
        """N, the number of candidates (public); for ``"auto"`` the larger of the two forms it may take (a bound on N)."""
        grid = (1 << self.grid_bits) + 1
        if isinstance(self.candidates, tuple):
            return len(self.candidates)
        span = integer_range(self.query)
        integers = 0 if span is None else span[1] - span[0] + 1
        if self.candidates == "integers":
            return integers
        return grid if self.candidates is None else max(grid, integers)

    def __attrs_post_init__(self) -> None:
        check_user_level("ExponentialQuantile", self.query, self.relation, ("median", "quantile"))
        if self.candidates == "integers" and integer_range(self.query) is None:
            lower, upper = grid_bounds(self.query)
            raise InvalidArgument(
                "ExponentialQuantile", "candidates", "integers",
                f"needs 1 to 2**16 = {MAX_CANDIDATES} integers inside the clip range [{lower}, {upper}] (within ±2**53)",
            )
        if self.candidates is not None and self.candidates != "auto":
            if self.grid_bits != 20:
                raise InvalidArgument("ExponentialQuantile", "grid_bits", self.grid_bits, "is unused with candidates: leave it at 20")
        if isinstance(self.candidates, tuple):
            lower, upper = grid_bounds(self.query)
            for i in (0, len(self.candidates) - 1):  # sorted: the ends decide
                if not lower <= self.candidates[i] <= upper:
                    raise InvalidArgument("ExponentialQuantile", f"candidates[{i}]", _plain(self.candidates[i]), f"must lie inside the clip range [{lower}, {upper}]")
        if self.selection == "permute_and_flip" and self.n_candidates > MAX_PF_CANDIDATES:
            raise InvalidArgument(
                "ExponentialQuantile", "selection", self.selection,
                f"flips one coin per candidate: needs grid_bits <= 20 or candidates (here {self.n_candidates} > 2**20 + 1)",
            )

    def sensitivity(self) -> Fraction:
        """Δ of the utility under the relation (times the values one user adds, at user level)."""
        per_value = Fraction(1) if self.relation == "substitution" else max(self.q, 1 - self.q)
        return per_value * values_per_user(self.query)

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε from the parameters."""
        span = integer_range(self.query)
        integers = "none" if span is None else f"[{span[0]}, {span[1]}]"
        where: tuple[tuple[str, str], ...]
        if self.candidates is None:
            where = (("grid", f"2**{self.grid_bits}"),)
        elif self.candidates == "auto":  # which form runs is read from the public schema; eps is the same
            where = (("candidates", "auto"), ("integers", integers), ("grid", f"2**{self.grid_bits}"))
        elif self.candidates == "integers":
            where = (("candidates", "integers"), ("integers", integers))
        else:
            where = (("candidates", str(len(self.candidates))),)
        params = (("epsilon", str(self.epsilon)), ("Delta", str(self.sensitivity())), *where)
        if self.selection == "permute_and_flip":
            return PrivacyClaim(
                PureDP(self.epsilon),
                "permute-and-flip, coins exp(eps*(u-u*)/(2*Delta)) (McKenna-Sheldon 2020 Thm 1)",
                params,
            )
        return PrivacyClaim(
            PureDP(self.epsilon), "exponential mechanism, exp(eps*u/(2*Delta)) (McSherry-Talwar 2007 Thm 6)", params,
            bounded_range=self.epsilon,  # the leaf's rule text is unchanged: certificates record it
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20)) -> Accuracy:
        """The (1 − ``alpha``) rank error, from the parameters only (no data touched).

        With probability ≥ 1 − α, ``|(1 − q)·#{x < c} − q·#{x > c}|`` at the
        output ``c`` is within ``(2Δ/ε)·ln((N − 1)/α)`` (rounded to whole
        scores) of the best candidate's, N = 2**grid_bits + 1 or the number of
        ``candidates`` (McSherry–Talwar 2007 Thm 8; Dwork–Roth Thm 3.11; for
        permute-and-flip by a union bound over its coins). Proof in
        the module docstring; see ``docs/accuracy.md``.
        """
        return exponential_quantile_accuracy(self, alpha)

    def schema_choice(self, kinds: Mapping[str, str]) -> SchemaChoice | None:
        """For ``candidates="auto"``: ``"integers"`` when the column's declared type is ``"int"`` and the clip
        range holds 1 to 2**16 integers (within ±2**53), else ``"grid"``; ``None`` for any other ``candidates``.

        ``kinds`` maps the column to its type as the schema check classifies it
        (:func:`dpalg.data._schema.column_kind`); the release decides through this
        method, so a certificate's ``resolved`` entry is the candidate set that ran.

        Examples:
            >>> from dpalg import Clip
            >>> node = ExponentialQuantile(Query.median("price") | Clip(0, 100), epsilon=1)
            >>> node.schema_choice({"price": "int"}).describe()
            "candidates: integers (column 'price' is int)"
            >>> node.schema_choice({"price": "float"}).describe()
            "candidates: grid (column 'price' is float: 2**20 grid points)"
        """
        if self.candidates != "auto":
            return None
        column = self.query.column
        assert column is not None
        # a derived column (dpalg.col expressions) is a double on every backend, whatever the columns it reads
        kind = "float" if self.query.derived is not None else kinds[column]
        if kind != "int":
            return SchemaChoice("candidates", "grid", f"column {column!r} is {kind}: 2**{self.grid_bits} grid points")
        if integer_range(self.query) is None:
            lower, upper = grid_bounds(self.query)
            return SchemaChoice(
                "candidates", "grid",
                f"column {column!r} is int, but [{lower}, {upper}] holds no integer, more than 2**16, or reaches past ±2**53",
            )
        return SchemaChoice("candidates", "integers", f"column {column!r} is int")

    def uses_integers(self, data: Dataset) -> bool:
        """Whether the release on ``data`` uses the integer candidates: ``"integers"``, or ``"auto"``
        on a column whose declared type is an integer (the public schema; no value is read)."""
        if self.candidates == "integers":
            return True
        if self.candidates != "auto":
            return False
        assert self.query.column is not None
        choice = self.schema_choice({self.query.column: column_kind(data, self.query.column)})
        assert choice is not None
        return choice.choice == "integers"

    def integer_runs(
        self, data: Dataset, rng: AbstractRandomness
    ) -> tuple[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
        """``(a, runs)``: the score runs over the integer candidates ``a..b`` of an integer-typed
        column with integer clip bounds, computed like the grid's (a grid of step 1).

        The clipped values are integers in ``[a, b]`` (the column's type is an integer and
        so are the bounds; per-user totals of integers are integers), so ``x - a`` is the
        exact index of the candidate each value equals, and the runs' scores are those of
        :func:`candidate_scores` at every integer candidate: the same weights, so the same law.
        """
        span = integer_range(self.query)
        assert span is not None
        a, b = span
        if self._kept_row_grid():  # a row cap alone: the kept rows' counts per integer, through the seam
            occupied, counts = self._kept_row_counts(data, rng, "integers")
            return a, quantile_runs_from_counts(occupied, counts, b - a, self.q)
        x = _quantile_values(self.query, data, rng)
        idx = np.rint(x - float(a)).astype(np.int64)  # exact: x is an integer in [a, b] and |x| <= 2**53
        return a, quantile_runs(idx, b - a, self.q)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """A candidate (an integer, a grid point, or one of ``candidates``) as a float."""
        if isinstance(self.candidates, tuple):
            return self._release_candidates(data, rng, self.candidates)
        lower, upper = grid_bounds(self.query)
        if self.uses_integers(data):
            span = integer_range(self.query)
            assert span is not None and self.query.column is not None
            if lower != span[0] or upper != span[1] or not _integer_typed(data, self.query.column):
                # the values may be non-integers (a float column, or clipped to a fractional bound): exact comparisons
                return self._release_candidates(data, rng, tuple(Fraction(c) for c in range(span[0], span[1] + 1)))
            a, (starts, lengths, scores) = self.integer_runs(data, rng)
            return self._sample_runs(starts, lengths, scores, rng, lambda j: float(a + j))
        size = 1 << self.grid_bits
        if self.query.user is None and self.grid_bits <= MAX_COUNTED_GRID_BITS:
            # row level: the utility reads only how many values fall on each grid point
            assert self.query.column is not None
            reductions = as_reductions(data)
            if self.selection == "exponential":  # only the runs near the target rank are built (and, on Spark, read)
                gamma = self.epsilon / (2 * self.sensitivity() * self.q.denominator)
                j = sample_quantile_view(reductions.grid_view(self.query.column, lower, upper, self.grid_bits), size, self.q, gamma, rng)
                return float(lower + (upper - lower) * Fraction(j, size))
            occupied, counts = reductions.grid_counts(self.query.column, lower, upper, self.grid_bits)
            starts, lengths, scores = quantile_runs_from_counts(occupied, counts, size, self.q)
        elif self._kept_row_grid():
            # a row cap alone: the grid counts of the rows the users keep, through the seam (on Spark, per user partition)
            occupied, counts = self._kept_row_counts(data, rng, None)
            starts, lengths, scores = quantile_runs_from_counts(occupied, counts, size, self.q)
        else:
            x = _quantile_values(self.query, data, rng)
            # the grid index is a per-row function of the value, so the sensitivity argument is unchanged
            starts, lengths, scores = quantile_runs(grid_index(x, lower, upper, self.grid_bits), size, self.q)
        return self._sample_runs(starts, lengths, scores, rng, lambda j: float(lower + (upper - lower) * Fraction(j, size)))

    def _kept_row_grid(self) -> bool:
        """A user-level quantile capped by rows alone (no ``ClipPerUser``, no key cap): its grid is the kept rows' grid
        counts (:class:`~dpalg.data._unit_spec.KeptRowCellSpec`, the values :func:`_quantile_values` ranks)."""
        q = self.query
        return q.user is not None and q.max_rows is not None and q.max_keys is None and not q.per_user_totals and q.column is not None

    def _kept_row_counts(
        self, data: Dataset, rng: AbstractRandomness, candidates: tuple[Fraction, ...] | Literal["integers"] | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The kept rows' counts per grid point, integer or candidate slot (:class:`~dpalg.data._unit_spec.KeptRowCellSpec`):
        what :func:`_quantile_values` ranks, counted by index, with its one draw of the row choice's secret."""
        q = self.query
        assert q.user is not None and q.column is not None and q.max_rows is not None
        lower, upper = grid_bounds(q)
        spec = KeptRowCellSpec(q.user, q.column, lower, upper, self.grid_bits, q.max_rows, candidates=candidates)
        return as_reductions(data).kept_row_cells(spec, prf_secret(rng))

    def _sample_runs(
        self,
        starts: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.int64],
        scores: npt.NDArray[np.int64],
        rng: AbstractRandomness,
        point: Callable[[int], float],
    ) -> float:
        """Candidate ``j`` with probability ∝ exp(−γ·s_j) (or permute-and-flip), returned as ``point(j)``."""
        # scores are integers = den(q)·|…|; exp(-ε·score/(den·2Δ))
        gamma = self.epsilon / (2 * self.sensitivity() * self.q.denominator)
        if self.selection == "permute_and_flip":  # N <= 2**20 + 1 (checked at construction)
            return point(sample_permute_flip(np.repeat(scores, lengths), gamma, rng=rng))
        run = sample_exp_runs(scores, gamma, lengths, rng=rng)
        length = int(lengths[run])
        return point(int(starts[run]) + (rng.big_below(length) if length > 1 else 0))

    def _release_candidates(self, data: Dataset, rng: AbstractRandomness, candidates: tuple[Fraction, ...]) -> float:
        if self._kept_row_grid():  # a row cap alone: the kept rows' counts per candidate slot, through the seam
            slots, counts = self._kept_row_counts(data, rng, candidates)
            scores = slot_scores(slots, counts, len(candidates), self.q)
        else:
            scores = candidate_scores(_quantile_values(self.query, data, rng), candidates, self.q)
        gamma = self.epsilon / (2 * self.sensitivity() * self.q.denominator)
        if self.selection == "permute_and_flip":
            return float(candidates[sample_permute_flip(scores, gamma, rng=rng)])
        starts, lengths, run_scores = _score_runs(scores)
        run = sample_exp_runs(run_scores, gamma, lengths, rng=rng)
        length = int(lengths[run])
        j = int(starts[run]) + (rng.big_below(length) if length > 1 else 0)
        return float(candidates[j])


def _nm_query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind != "histogram" or value.keys is None:
        raise InvalidArgument("NoisyMax", "query", value, "must be Query.histogram(col, keys=...) with public keys")
    return value


def _nm_eps(value: ExactLike) -> Fraction:
    return positive_param("NoisyMax", "epsilon", value)


def _nm_relation(value: str) -> Relation:
    return relation_param("NoisyMax", value)


@final
@attrs.frozen
class NoisyMax(AbstractPrimitive[PureDP]):
    """Report the (approximately) most frequent public key: exponential mechanism on counts.

    Privacy guarantee:
        ε-DP. One row changes one count by 1 (L∞ = 1); one user of a bounded
        user-level histogram (``| MaxKeysPerUser(m, rows_per_key=c)`` or
        ``| MaxRowsPerUser(k)``) changes each count by at most L∞ = min(c, k).
        Under add/remove all counts move in the same direction, so the utility
        is monotone and sampling ∝ exp(ε·count/L∞) is ε-DP (McSherry–Talwar 2007,
        monotone case; Dwork–Roth Thm 3.10 remark); under substitution (row
        level only) we sample ∝ exp(ε·count/2).

        Also ε-bounded-range (Durfee–Rogers 2019), monotone factor included:
        ``ln(P[k | x]/P[k | x']) = r·(count_k(x) − count_k(x')) + ln(Z(x')/Z(x))``
        with r the rate. Under add/remove every count moves the same way, so
        ``count_k(x') − count_k(x) ∈ [0, L∞]`` for every k (or ``[−L∞, 0]``): an
        interval of width r·L∞ = ε. Under substitution the differences lie in
        ``[−1, 1]``, width 2·(ε/2) = ε. The sampler is the exact exponential
        mechanism (:func:`dpalg.noise.sample_exp_weights`, not noisy max with
        exponential or Laplace noise). So :class:`~dpalg.PureToZCDP` charges it
        ε²/8-zCDP (Cesar–Rogers 2021, arXiv:2004.07223, Lemmas 3.2 and 3.4).
    """

    query: Query = attrs.field(converter=_nm_query)
    epsilon: Fraction = attrs.field(converter=_nm_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_nm_relation)

    def __attrs_post_init__(self) -> None:
        check_user_level("NoisyMax", self.query, self.relation, ("histogram",))

    @property
    def neighbouring(self) -> Neighbouring:
        """One row (or one user, for a user-level histogram) under ``relation``."""
        return self.query.neighbouring(self.relation)

    def linf(self) -> int:
        """The most one row (one user) changes any count: 1, or the per-key cap of a user-level histogram."""
        return histogram_sensitivity(self.query)[2]

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε from the parameters."""
        factor = "eps*count (monotone)" if self.relation == "add_remove" else "eps*count/2"
        return PrivacyClaim(
            PureDP(self.epsilon),
            f"exponential mechanism on counts, exp({factor}/Linf) (McSherry-Talwar 2007)",
            (("epsilon", str(self.epsilon)), ("Linf", str(self.linf()))),
            bounded_range=self.epsilon,
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20)) -> Accuracy:
        """The (1 − ``alpha``) score error, from the parameters only (no data touched).

        With probability ≥ 1 − α the released key's count is within
        ``ln((K − 1)/α)/r`` (rounded to whole counts) of the largest count, K keys,
        r = ε/L∞ (add/remove) or ε/(2L∞) (McSherry–Talwar 2007 Thm 8; Dwork–Roth
        Thm 3.11). Proof in the module docstring.
        """
        return noisy_max_accuracy(self, alpha)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The chosen key."""
        assert self.query.column is not None and self.query.keys is not None
        keys = self.query.keys
        if self.query.user is None:  # missing or unlisted keys count nowhere (data policy)
            counts = as_reductions(data).key_counts(self.query.column, keys).tolist()
        else:  # the rows each user keeps under the caps
            counts = user_key_counts(self.query, data, prf_secret(rng))[1].tolist()
        best = max(counts)
        scores = [Fraction(best - c) for c in counts]
        gamma = (self.epsilon if self.relation == "add_remove" else self.epsilon / 2) / self.linf()
        return keys[sample_exp_weights(scores, gamma, rng=rng)]


def exponential_quantile_accuracy(node: ExponentialQuantile, alpha: ExactLike) -> Accuracy:
    """The (1 − α) rank error of :class:`ExponentialQuantile` (module docstring).

    N is ``2**grid_bits + 1`` for the grid, ``len(candidates)`` otherwise. For
    ``selection="permute_and_flip"`` the same bound holds, by a union bound
    proven here (McKenna–Sheldon prove only that its *expected* error is no
    worse than the exponential mechanism's, their Theorem 2): the output is
    always a candidate whose coin came up heads, and candidate ``c``'s coin is
    heads with probability ``exp(−γ(s_c − s*))``, so with ``B = {c : s_c ≥ s* + t}``
    (``t ≥ 1``, ``c* ∉ B``, ``|B| ≤ N − 1``)::

        P[s_out − s* ≥ t] <= P[some coin in B is heads] <= Σ_B e^{−γ(s_c − s*)} <= (N − 1) e^{−γ t}

    the same right side as for the exponential mechanism, hence the same ``t``.
    """
    a = alpha_param("ExponentialQuantile.accuracy", alpha)
    den = node.q.denominator
    delta_u = node.sensitivity()
    gamma = node.epsilon / (2 * delta_u * den)  # the release's rate per integer score unit
    candidates = node.n_candidates
    gap = exp_mech_gap(candidates, gamma, a)
    where = {None: "grid points", "auto": "public candidates (integers or grid points, the larger N)", "integers": "integers"}.get(
        node.candidates if not isinstance(node.candidates, tuple) else "", "public candidates")
    pf = node.selection == "permute_and_flip"
    if pf:
        noise = f"permute-and-flip over {candidates} {where}, coins exp(eps*(u-u*)/(2*Delta)), Delta={up_text(delta_u)}"
    else:
        noise = f"exponential mechanism over {candidates} {where}, exp(eps*u/(2*Delta)), Delta={up_text(delta_u)}"
    best = "grid point's" if node.candidates is None else "candidate's"
    notes = (
        f"rank error: |(1-q)*#{{x<c}} - q*#{{x>c}}| of the output c exceeds the best {best} by at most this "
        f"(q={node.q}); off the data it is |#{{x<c}} - q*n|",
        f"bound: (2*Delta/eps)*ln({candidates - 1}/alpha), rounded to whole scores "
        + ("(union bound over the coins; the same tail as McSherry-Talwar 2007 Thm 8)" if pf else "(McSherry-Talwar 2007 Thm 8)"),
    )
    return Accuracy(a, Fraction(gap, den), "rank", noise, False, None, notes)


def noisy_max_accuracy(node: NoisyMax, alpha: ExactLike) -> Accuracy:
    """The (1 − α) score error of :class:`NoisyMax`: the released key's count is within this of the largest."""
    a = alpha_param("NoisyMax.accuracy", alpha)
    assert node.query.keys is not None
    keys = len(node.query.keys)
    gamma = (node.epsilon if node.relation == "add_remove" else node.epsilon / 2) / node.linf()
    gap = exp_mech_gap(keys, gamma, a)
    factor = "eps*count/Linf" if node.relation == "add_remove" else "eps*count/(2*Linf)"
    noise = f"exponential mechanism over {keys} keys, exp({factor}), Linf={node.linf()}"
    notes = (f"the released key's count is at most this below the largest count (bound: ln({keys - 1}/alpha)/rate)",)
    return Accuracy(a, Fraction(gap), "count below the top key's", noise, False, None, notes)
