"""Down sensitivity and the inverse-sensitivity losses ``ℓ``, ``ℓ̄`` of monotone user-level queries.

Setting (seed 004): a dataset ``x`` is a multiset of units, one user with all
their rows; neighbours differ by **adding or removing one user with all their
rows**; ``dist`` counts users. A query ``f`` is *monotone* when ``x' ⊆ x``
implies ``f(x') <= f(x)`` (seed Eq. 3). For an integer candidate ``y``:

* ``DS^k_f(x) = max{f(x) − f(x̃) : x̃ ⊆ x, dist(x, x̃) <= k}`` (seed Eq. 1);
* ``ℓ(x, y) = min{dist(x, x̃) : x̃ ⊆ x, f(x̃) <= y}`` (seed Eq. 4);
* ``ℓ̄(x, y) = min{dist(x, x̃) : x̃ ⊆ x, f(x̃) < y}`` (seed footnote 4, Eq. A),
  ``+∞`` (``None`` here) when ``y <= f(∅)``.

Both losses have global sensitivity 1 in ``x`` for every fixed ``y`` (seed
Proposition 3; the proof needs monotonicity), so they are safe scores for the
exponential mechanism and for noisy binary search. ``DS^k`` appears only in
*utility* statements (seed Theorem 4): no privacy guarantee depends on it.

Everything is computed exactly from the **deletion profile**
``h(k) = min{f(x̃) : x̃ ⊆ x, dist(x, x̃) <= k}`` (``k = 0..n``), non-increasing,
``h(n) = f(∅)`` for monotone ``f``::

    ℓ(y)  = #{k < n : h(k) > y}  = #{k < n : ⌈h(k)⌉ > y}      (y >= f(∅))
    ℓ̄(y)  = #{k < n : h(k) >= y} = #{k < n : ⌊h(k)⌋ >= y}     (y >  f(∅))
    DS^k  = h(0) − h(min(k, n))

(the integer forms hold because ``y`` is an integer). So one sort gives two
ascending integer threshold arrays, and each loss is one ``np.searchsorted``:
``O(log n)`` per candidate, and vectorised over many candidates. No float
comparison decides a loss.

Profiles per query kind (per-unit inputs from :mod:`dpalg.data._units`):

* **user sum** (non-negative per-user totals ``c_u``), **row count** (``c_u`` =
  a user's rows), **number of users** (``c_u = 1``) and **count distinct with
  disjoint value sets** (``c_u = |V_u|``): ``f = Σ c_u``; deleting the ``k``
  largest contributions is optimal, so ``h(k) = total − (sum of the k largest)``.
  Floats are converted *exactly* to integers over a common power of two, so
  ``h`` is the exact real sum of the float64 totals (no rounding, no order
  dependence);
* **max over users** with a public ``f(∅)``: ``h(k) = max(f(∅), (k+1)-th largest
  user maximum)``;
* **count distinct with values shared between users**: ``ℓ`` is a
  set-cover-type problem (remove the fewest users so that at most ``y`` values
  keep a holder). No exact fast algorithm is known and an approximate loss has
  no proof of sensitivity 1, so :meth:`MonotoneLoss.count_distinct` **refuses**
  it with :class:`InvalidArgument`. Caveat: that check reads the data, so a
  release path must only reach it when the *schema* guarantees disjointness
  (e.g. values are ``(user, item)`` keys); otherwise whether it raises would
  itself depend on one user. ``DS^k`` with shared values is given as exact
  brute force on small instances and otherwise as certified lower/upper bounds
  (:func:`down_sensitivity_count_distinct`);
* **a user function** ``fn(mask)`` of the kept users: brute force over all
  ``2**n`` subsets (``n <= 16``), for tests and tiny data; monotonicity is the
  caller's promise (:func:`check_user_monotone` can only refute it).

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. ACM CCS 2022.
    T. Steinke. Beyond Local Sensitivity via Down Sensitivity.
    DifferentialPrivacy.org, 2023 (seed 004: Eq. 1, 3, 4, A; Prop. 3; Thm. 4).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Final, Literal, Union, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil, fraction_floor, to_fraction
from dpalg.data import Dataset
from dpalg.data._units import per_unit_max, per_unit_row_counts, per_unit_sums, per_unit_value_sets, unit_count
from dpalg.queries import Query

__all__ = [
    "DownSensitivityBounds",
    "IntArray",
    "LossKind",
    "MonotoneLoss",
    "UserFunction",
    "check_user_monotone",
    "down_sensitivity_count_distinct",
    "down_sensitivity_function",
]

#: ascending integer thresholds: int64 when every entry is within ±2**62, else Python ints
IntArray = Union[npt.NDArray[np.int64], npt.NDArray[np.object_]]
#: a user-supplied query: its value on the users where the boolean mask is true
UserFunction = Callable[[npt.NDArray[np.bool_]], ExactLike]
#: the query kinds :class:`MonotoneLoss` supports
LossKind = Literal["user_sum", "count", "user_count", "count_distinct", "user_max", "function"]

_SMALL: Final = 1 << 62  # int64 thresholds stay within ±2**62 so t + 1 and clamped y fit
_CLAMP: Final = _SMALL + 1  # clamping y to ±(2**62 + 1) keeps its order with every int64 threshold
_MAX_BRUTE_UNITS: Final = 16


def _int(value: object, owner: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(owner, field, value, "must be an int")
    return int(value)


def _nonneg_int(value: object, owner: str, field: str) -> int:
    v = _int(value, owner, field)
    if v < 0:
        raise InvalidArgument(owner, field, v, "must be >= 0")
    return v


def _as_thresholds(values: Sequence[int] | npt.NDArray[np.int64]) -> IntArray:
    """Ascending ints as a read-only int64 array when small, else an object array of Python ints."""
    out: IntArray
    if isinstance(values, np.ndarray) and values.dtype == np.int64:
        if values.size and (int(values[0]) < -_SMALL or int(values[-1]) > _SMALL):
            out = np.array([int(v) for v in values.tolist()], dtype=object)
        else:
            out = values.copy()
    else:
        ints = [int(v) for v in values]
        small = not ints or (-_SMALL <= ints[0] and ints[-1] <= _SMALL)
        out = np.array(ints, dtype=np.int64) if small else np.array(ints, dtype=object)
    out.flags.writeable = False
    return out


def _float_ints(values: npt.NDArray[np.float64]) -> IntArray:
    """Integral finite floats (ascending) as exact integers."""
    if values.size == 0 or float(np.abs(values).max()) <= float(_SMALL):
        return _as_thresholds(values.astype(np.int64))
    return _as_thresholds([int(v) for v in values.tolist()])


def _mask_gt(arr: npt.NDArray[np.float64], k: int, *, inclusive: bool) -> npt.NDArray[np.bool_]:
    """``arr > k`` (or ``>=``) exactly, also when ``k`` is not a float."""
    if abs(k) <= 1 << 53:  # k is exactly a float64: numpy's comparison is exact
        return arr >= float(k) if inclusive else arr > float(k)
    vals = arr.tolist()
    return np.array([(v >= k) if inclusive else (v > k) for v in vals], dtype=np.bool_)


def _clamp_ys(ys: npt.NDArray[np.int64] | npt.NDArray[np.object_], big: bool) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    if big:
        return ys.astype(object)
    if ys.dtype == np.int64:
        clamped: npt.NDArray[np.int64] = np.clip(ys, -_CLAMP, _CLAMP).astype(np.int64)
        return clamped
    return np.array([min(max(int(v), -_CLAMP), _CLAMP) for v in ys.tolist()], dtype=np.int64)


@final
class MonotoneLoss:
    """``ℓ``, ``ℓ̄`` and ``DS^k`` of one monotone user-level query on one dataset.

    Build it with a classmethod from per-unit reductions (never from raw rows),
    or with :meth:`from_query`. After one sort, :meth:`loss_at` and
    :meth:`strict_loss_at` cost ``O(log n)``; :meth:`losses` is vectorised;
    :meth:`thresholds` feeds :func:`dpalg.sensitivity._shifted_runs.shifted_loss_runs`.
    Nothing here draws randomness; every output is private data (never print it).

    Privacy guarantee:
        Not a mechanism. For each fixed integer ``y``, ``ℓ(·, y)`` and
        ``ℓ̄(·, y)`` have global sensitivity 1 under the neighbouring relation
        "add or remove one user with all their rows", provided ``f`` is
        monotone (seed 004, Proposition 3 and footnote 4). The built-in kinds
        are monotone by construction (non-negative contributions, max with a
        public floor, disjoint distinct counts); for :meth:`from_function`
        monotonicity is the caller's promise.

    Examples:
        >>> loss = MonotoneLoss.user_sum([5.0, 1.0, 3.0])
        >>> loss.value(), [loss.loss_at(y) for y in (9, 8, 4, 3, 0)]
        (Fraction(9, 1), [0, 1, 1, 2, 3])
        >>> loss.strict_loss_at(9), loss.strict_loss_at(1), loss.strict_loss_at(0) is None
        (1, 3, True)
        >>> loss.down_sensitivity(2)
        Fraction(8, 1)

    References:
        Fang, Dong, Yi, CCS 2022; seed 004 Eq. 1, 4, A and Proposition 3.
    """

    __slots__ = ("_kind", "_n", "_empty", "_ceil", "_floor", "_profile")

    def __init__(
        self,
        kind: LossKind,
        n_units: int,
        empty_value: Fraction,
        ceil_asc: IntArray,
        floor_asc: IntArray,
        profile: Callable[[int], Fraction],
    ) -> None:
        """Private: use the classmethods.

        ``ceil_asc`` holds ``⌈h(k)⌉ > ⌈f(∅)⌉`` and ``floor_asc`` holds
        ``⌊h(k)⌋ > ⌊f(∅)⌋`` for ``k < n``, both ascending; entries outside
        those ranges never count for a candidate with a finite loss.
        """
        self._kind: LossKind = kind
        self._n = n_units
        self._empty = empty_value
        self._ceil = ceil_asc
        self._floor = floor_asc
        self._profile = profile

    # --- constructors --------------------------------------------------------
    @classmethod
    def user_sum(cls, contributions: npt.ArrayLike) -> MonotoneLoss:
        """``f = Σ_u c_u`` over non-negative finite per-user totals.

        Args:
            contributions: one finite number ``>= 0`` per user, e.g. from
                :func:`dpalg.data._units.per_unit_sums`.

        Returns:
            The loss object (``f(∅) = 0``).

        Raises:
            InvalidArgument: if some contribution is negative, NaN or infinite
                (``per_unit_sums`` never produces one).

        Examples:
            >>> MonotoneLoss.user_sum([0.5, 0.25, 2.0]).thresholds()
            ([1, 1, 3], [2])
        """
        c = np.asarray(contributions, dtype=np.float64)
        if c.ndim != 1:
            raise InvalidArgument("MonotoneLoss.user_sum", "contributions", f"<array ndim={c.ndim}>", "must be 1-D")
        if c.size and not (bool(np.isfinite(c).all()) and float(c.min()) >= 0.0):
            raise InvalidArgument("MonotoneLoss.user_sum", "contributions", "<some entry>", "must be finite and >= 0")
        return cls._additive("user_sum", c)

    @classmethod
    def row_count(cls, counts: npt.ArrayLike) -> MonotoneLoss:
        """``f`` = number of rows, from per-user row counts (``per_unit_row_counts``).

        Raises:
            InvalidArgument: if ``counts`` is not a 1-D array of integers ``>= 0``.
        """
        return cls._counts("count", counts, "MonotoneLoss.row_count")

    @classmethod
    def user_count(cls, n_units: int) -> MonotoneLoss:
        """``f`` = number of users (every user contributes 1).

        Examples:
            >>> MonotoneLoss.user_count(4).loss_at(1)
            3
        """
        n = _nonneg_int(n_units, "MonotoneLoss.user_count", "n_units")
        return cls._counts("user_count", np.ones(n, dtype=np.int64), "MonotoneLoss.user_count")

    @classmethod
    def count_distinct(cls, indptr: npt.ArrayLike, codes: npt.ArrayLike) -> MonotoneLoss:
        """``f`` = number of distinct values, when no value is held by two users.

        Args:
            indptr: CSR index pointer from :func:`dpalg.data._units.per_unit_value_sets`.
            codes: the value codes of every user's set.

        Raises:
            InvalidArgument: if the CSR arrays are malformed, or some value is
                held by two users (then ``ℓ`` is a set-cover problem and no exact,
                sensitivity-1 loss is offered; see the module docstring).

        Examples:
            >>> MonotoneLoss.count_distinct([0, 2, 3], [0, 1, 2]).loss_at(1)
            1
        """
        ptr, cds = _csr(indptr, codes, "MonotoneLoss.count_distinct")
        if np.unique(cds).size != cds.size:
            raise InvalidArgument(
                "MonotoneLoss.count_distinct",
                "codes",
                "<shared values>",
                "must be disjoint between users: with shared values the loss is a set-cover problem "
                "and no exact sensitivity-1 loss is available; key the values by (user, value) or use another query",
            )
        return cls._counts("count_distinct", np.diff(ptr), "MonotoneLoss.count_distinct")

    @classmethod
    def user_max(cls, maxima: npt.ArrayLike, *, empty_value: ExactLike) -> MonotoneLoss:
        """``f = max(empty_value, largest value over all users' rows)``.

        Args:
            maxima: one float per user (``-inf`` for a user without values), from
                :func:`dpalg.data._units.per_unit_max`.
            empty_value: ``f(∅)``, a public constant (the clip lower bound or the
                lowest candidate of the output domain).

        Raises:
            InvalidArgument: if ``maxima`` is not 1-D or holds NaN or ``+inf``.

        Examples:
            >>> loss = MonotoneLoss.user_max([3.0, 7.5, -np.inf], empty_value=0)
            >>> [loss.loss_at(y) for y in (0, 3, 7, 8)], loss.strict_loss_at(7)
            ([2, 1, 1, 0], 1)
        """
        owner = "MonotoneLoss.user_max"
        empty = to_fraction(empty_value, owner=owner, field="empty_value")
        m = np.asarray(maxima, dtype=np.float64)
        if m.ndim != 1 or bool(np.isnan(m).any()) or bool(np.isposinf(m).any()):
            raise InvalidArgument(owner, "maxima", "<some entry>", "must be 1-D, not NaN and not +inf")
        asc = np.sort(m)
        n = int(asc.size)
        # ⌈max(E, v)⌉ > ⌈E⌉ iff v > ⌈E⌉;  ⌊max(E, v)⌋ > ⌊E⌋ iff v >= ⌊E⌋ + 1
        ceil_asc = _float_ints(np.ceil(asc[_mask_gt(asc, fraction_ceil(empty), inclusive=False)]))
        floor_asc = _float_ints(np.floor(asc[_mask_gt(asc, fraction_floor(empty) + 1, inclusive=True)]))

        def profile(k: int) -> Fraction:
            if k >= n:
                return empty
            v = float(asc[n - 1 - k])
            return max(empty, Fraction(v)) if math.isfinite(v) else empty

        return cls("user_max", n, empty, ceil_asc, floor_asc, profile)

    @classmethod
    def from_function(cls, fn: UserFunction, n_units: int) -> MonotoneLoss:
        """Brute force over all subsets of ``n_units <= 16`` users (tests, tiny data).

        Args:
            fn: ``f`` on the users where the boolean mask is true; returns an
                exact number (int, Fraction, decimal string; a float is taken at
                its exact binary value).
            n_units: the number of users.

        Raises:
            InvalidArgument: if ``n_units > 16`` or ``fn`` returns a non-number.

        The profile is a running minimum, so ``ℓ`` and ``ℓ̄`` are the exact
        minima of their definitions for any ``fn``; their sensitivity 1 needs
        ``fn`` monotone, which is the caller's promise.

        Examples:
            >>> MonotoneLoss.from_function(lambda m: int(m.sum()), 3).loss_at(1)
            2
        """
        owner = "MonotoneLoss.from_function"
        n = _nonneg_int(n_units, owner, "n_units")
        if n > _MAX_BRUTE_UNITS:
            raise InvalidArgument(owner, "n_units", n, f"must be <= {_MAX_BRUTE_UNITS} (brute force over 2**n subsets)")
        best: list[Fraction | None] = [None] * (n + 1)
        for bits in range(1 << n):
            mask = np.array([(bits >> i) & 1 == 1 for i in range(n)], dtype=np.bool_)
            removed = n - int(mask.sum())
            v = to_fraction(fn(mask), owner=owner, field="fn(mask)")
            cur = best[removed]
            if cur is None or v < cur:
                best[removed] = v
        exact = [b for b in best if b is not None]
        prof = list(itertools.accumulate(exact, min))  # h(k): removing at most k users
        empty = prof[n]
        ceil_asc = sorted(c for c in (fraction_ceil(g) for g in prof[:n]) if c > fraction_ceil(empty))
        floor_asc = sorted(f for f in (fraction_floor(g) for g in prof[:n]) if f > fraction_floor(empty))
        return cls("function", n, empty, _as_thresholds(ceil_asc), _as_thresholds(floor_asc), prof.__getitem__)

    @classmethod
    def from_query(cls, query: Query, data: Dataset, *, empty_value: ExactLike | None = None) -> MonotoneLoss:
        """The loss of a user-level query, read through the per-unit reductions.

        Supported: ``user_sum`` (rows clipped to the query's range if any, then
        to ``>= 0``), ``user_count``, ``count`` with ``user=`` (rows, or
        non-missing values of the column), ``count_distinct`` with ``user=``
        (disjoint value sets only) and ``user_max``.

        Args:
            query: a query whose ``user`` names the id column.
            data: the dataset.
            empty_value: ``f(∅)`` for ``user_max`` (default: the clip lower bound).

        Raises:
            InvalidArgument: for another kind, a row-level query, a ``user_max``
                without ``empty_value`` or clip, or shared distinct values.

        Examples:
            >>> from dpalg.data import as_dataset
            >>> data = as_dataset({"uid": [1, 1, 2], "pages": [3, 4, 10]})
            >>> MonotoneLoss.from_query(Query.user_sum("pages", user="uid"), data).value()
            Fraction(17, 1)
        """
        owner = "MonotoneLoss.from_query"
        if query.user is None:
            raise InvalidArgument(owner, "query", query, "must be user-level (user=...)")
        ids = data.column(query.user)
        match query.kind:
            case "user_sum":
                assert query.column is not None
                values = data.numeric(query.column)
                if query.lower is not None and query.upper is not None:
                    values = np.clip(values, float(query.lower), float(query.upper))
                return cls.user_sum(per_unit_sums(ids, values))
            case "user_count":
                return cls.user_count(unit_count(ids))
            case "count":
                col = None if query.column is None else data.column(query.column)
                return cls.row_count(per_unit_row_counts(ids, col))
            case "count_distinct":
                assert query.column is not None
                return cls.count_distinct(*per_unit_value_sets(ids, data.column(query.column)))
            case "user_max":
                assert query.column is not None
                floor = empty_value if empty_value is not None else query.lower
                if floor is None:
                    raise InvalidArgument(owner, "empty_value", None, "is needed for user_max (or clip the query)")
                values = data.numeric(query.column)
                if query.lower is not None and query.upper is not None:
                    values = np.clip(values, float(query.lower), float(query.upper))
                return cls.user_max(per_unit_max(ids, values), empty_value=floor)
            case _:
                raise InvalidArgument(owner, "query", query, "has no monotone user-level loss here")

    @classmethod
    def _counts(cls, kind: LossKind, counts: npt.ArrayLike, owner: str) -> MonotoneLoss:
        c = np.asarray(counts)
        if c.ndim != 1 or (c.size and not np.issubdtype(c.dtype, np.integer)):
            raise InvalidArgument(owner, "counts", f"<array {c.dtype} ndim={c.ndim}>", "must be a 1-D integer array")
        if c.size and int(c.min()) < 0:
            raise InvalidArgument(owner, "counts", "<some entry>", "must be >= 0")
        ints = np.sort(c.astype(np.int64)[c > 0])
        if ints.size and int(ints[-1]) * int(ints.size) > _SMALL:
            return cls._exact_additive(kind, int(c.size), [int(v) for v in ints.tolist()], 0)
        return cls._int64_additive(kind, int(c.size), ints, 0)

    @classmethod
    def _additive(cls, kind: LossKind, c: npt.NDArray[np.float64]) -> MonotoneLoss:
        n = int(c.size)
        pos = np.sort(c[c > 0])  # zero contributions never change f
        if pos.size == 0:
            return cls._int64_additive(kind, n, np.zeros(0, dtype=np.int64), 0)
        mant, expo = np.frexp(pos)
        m = (mant * float(1 << 53)).astype(np.int64)  # exact: pos = m * 2**e
        e = expo.astype(np.int64) - 53
        tz = np.log2((m & -m).astype(np.float64)).astype(np.int64)  # strip trailing zero bits
        m, e = m >> tz, e + tz
        bits = np.frexp(m.astype(np.float64))[1].astype(np.int64)  # bit length of m (< 2**53)
        s = max(0, -int(e.min()))  # every pos is G / 2**s with an integer G = m * 2**(e + s)
        top = int((bits + e).max()) + s  # bits of the largest G
        if top + int(pos.size).bit_length() <= 61 and s <= 62:
            return cls._int64_additive(kind, n, m << (e + s), s)
        g_list = [mi << si for mi, si in zip(m.tolist(), (e + s).tolist())]
        return cls._exact_additive(kind, n, g_list, s)

    @classmethod
    def _int64_additive(cls, kind: LossKind, n: int, g: npt.NDArray[np.int64], s: int) -> MonotoneLoss:
        """``g`` ascending int64 scaled contributions (each ``c = g / 2**s``), total < 2**62."""
        sums = np.cumsum(g)  # sums[j] = 2**s * (sum of the j+1 smallest) = 2**s * h(m-1-j)
        m = int(sums.size)
        ceil = -((-sums) >> s) if s else sums
        floor = sums >> s if s else sums
        floor = floor[floor > 0]
        sums.flags.writeable = False

        def profile(k: int) -> Fraction:
            j = m - 1 - k
            return Fraction(int(sums[j]), 1 << s) if j >= 0 else Fraction(0)

        return cls(kind, n, Fraction(0), _as_thresholds(ceil), _as_thresholds(floor), profile)

    @classmethod
    def _exact_additive(cls, kind: LossKind, n: int, g: list[int], s: int) -> MonotoneLoss:
        sums = list(itertools.accumulate(g))
        m = len(sums)
        ceil = [-((-v) >> s) for v in sums]
        floor = [f for f in (v >> s for v in sums) if f > 0]

        def profile(k: int) -> Fraction:
            j = m - 1 - k
            return Fraction(sums[j], 1 << s) if j >= 0 else Fraction(0)

        return cls(kind, n, Fraction(0), _as_thresholds(ceil), _as_thresholds(floor), profile)

    # --- properties ----------------------------------------------------------
    @property
    def kind(self) -> LossKind:
        """The query kind this loss was built for."""
        return self._kind

    @property
    def n_units(self) -> int:
        """The number of users (private: never release it)."""
        return self._n

    @property
    def empty_value(self) -> Fraction:
        """``f(∅)``, a public constant: ``ℓ(y)`` is finite iff ``y >= f(∅)``."""
        return self._empty

    @property
    def min_y(self) -> int:
        """The smallest integer with a finite ``ℓ``: ``⌈f(∅)⌉``."""
        return fraction_ceil(self._empty)

    @property
    def min_strict_y(self) -> int:
        """The smallest integer with a finite ``ℓ̄``: ``⌊f(∅)⌋ + 1``."""
        return fraction_floor(self._empty) + 1

    def value(self) -> Fraction:
        """``f(x)`` exactly (private; for tests and utility statements)."""
        return self._profile(0)

    def thresholds(self) -> tuple[list[int], list[int]]:
        """The ascending thresholds ``(⌈h(k)⌉ > ⌈f(∅)⌉, ⌊h(k)⌋ > ⌊f(∅)⌋)`` as Python ints.

        ``ℓ(y)`` drops by one at each ``t`` of the first list (between ``t − 1``
        and ``t``) and ``ℓ̄(y)`` after each ``s`` of the second (between ``s`` and
        ``s + 1``).
        """
        return [int(v) for v in self._ceil.tolist()], [int(v) for v in self._floor.tolist()]

    def threshold_arrays(self) -> tuple[IntArray, IntArray]:
        """:meth:`thresholds` as read-only arrays (int64 when within ±2**62)."""
        return self._ceil, self._floor

    def floored(self) -> MonotoneLoss:
        """The losses of the integer-valued query ``⌊f⌋`` (use this for an integer output domain).

        Theorem 4 of seed 004 assumes ``f`` maps *into* ``Y``: its utility proof
        needs a candidate ``ŷ = min{f(x̃) : dist(x, x̃) <= τ}`` in ``Y`` with
        ``ℓ*(x, ŷ) <= 0``. With an integer ``Y`` and a fractional ``f`` (float
        sums, real maxima) no such candidate may exist: 500 users contributing
        ``0.01`` each have ``min_y ℓ*(x, y) = τ − 1``. ``⌊f⌋`` is monotone and
        integer-valued, ``h`` becomes ``⌊h⌋`` (both losses then use the floor
        thresholds), Proposition 3 still applies, and the released ``M``
        satisfies ``⌊f(x)⌋ >= M >= ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x)`` with probability
        ``>= 1 − β``. For integer-valued ``f`` (counts, integer sums) this is the
        same object.

        Examples:
            >>> loss = MonotoneLoss.user_sum([0.5, 2.75]).floored()
            >>> loss.value(), loss.loss_at(2), loss.loss_at(3), loss.strict_loss_at(3)
            (Fraction(3, 1), 1, 0, 1)
        """
        prof = self._profile

        def profile(k: int) -> Fraction:
            return Fraction(fraction_floor(prof(k)))

        # for ⌊f⌋: ⌈⌊h⌋⌉ = ⌊h⌋ and the filter "> ⌈⌊f(∅)⌋⌉" is the floor filter "> ⌊f(∅)⌋"
        empty = Fraction(fraction_floor(self._empty))
        return MonotoneLoss(self._kind, self._n, empty, self._floor, self._floor, profile)

    # --- losses --------------------------------------------------------------
    def loss_at(self, y: int) -> int:
        """``ℓ(x, y)``: the fewest users to remove so that ``f <= y``; ``O(log n)``.

        Raises:
            InvalidArgument: if ``y`` is not an int or ``y < f(∅)`` (infinite loss).
        """
        yy = _int(y, "MonotoneLoss.loss_at", "y")
        if yy < self.min_y:
            raise InvalidArgument("MonotoneLoss.loss_at", "y", yy, f"must be >= f(empty) = {self.min_y}")
        key = yy if self._ceil.dtype == object else min(max(yy, -_CLAMP), _CLAMP)
        return int(self._ceil.size) - int(np.searchsorted(self._ceil, key, side="right"))

    def strict_loss_at(self, y: int) -> int | None:
        """``ℓ̄(x, y)``: the fewest users to remove so that ``f < y``; ``None`` means ``+∞``.

        It is infinite exactly when ``y <= f(∅)``, a public condition. ``O(log n)``.
        """
        yy = _int(y, "MonotoneLoss.strict_loss_at", "y")
        if yy < self.min_strict_y:
            return None
        key = yy if self._floor.dtype == object else min(max(yy, -_CLAMP), _CLAMP)
        return int(self._floor.size) - int(np.searchsorted(self._floor, key, side="left"))

    def losses(
        self, ys: Sequence[int] | npt.NDArray[np.int64] | npt.NDArray[np.object_], *, strict: bool = False
    ) -> npt.NDArray[np.int64]:
        """``ℓ`` (or ``ℓ̄`` with ``strict=True``) at many integer candidates at once.

        Args:
            ys: integer candidates (Python ints of any size, or an int64 array).
            strict: compute ``ℓ̄`` instead of ``ℓ``.

        Raises:
            InvalidArgument: if a candidate has an infinite loss (``y < f(∅)``, or
                ``y <= f(∅)`` when strict).

        Examples:
            >>> MonotoneLoss.user_sum([5.0, 1.0, 3.0]).losses([0, 4, 2**64]).tolist()
            [3, 1, 0]
        """
        arr = np.asarray(ys) if not isinstance(ys, np.ndarray) else ys
        if arr.ndim != 1 or (arr.size and not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == object)):
            raise InvalidArgument("MonotoneLoss.losses", "ys", f"<array {arr.dtype}>", "must be a 1-D sequence of ints")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        lowest = self.min_strict_y if strict else self.min_y
        if int(arr.min()) < lowest:
            raise InvalidArgument("MonotoneLoss.losses", "ys", "<some candidate>", f"must be >= {lowest} (finite loss)")
        thr = self._floor if strict else self._ceil
        keys = _clamp_ys(arr.astype(np.int64) if arr.dtype != object else arr, thr.dtype == object)
        pos = np.searchsorted(thr, keys, side="left" if strict else "right")
        return (int(thr.size) - pos).astype(np.int64)

    def shifted_loss_at(self, y: int, tau: int) -> int:
        """``ℓ*(x, y) = max(ℓ − τ, τ − ℓ̄)`` (seed Eq. B); ``ℓ − τ`` where ``ℓ̄ = +∞``.

        Examples:
            >>> loss = MonotoneLoss.user_sum([5.0, 1.0, 3.0])
            >>> [loss.shifted_loss_at(y, 1) for y in range(10)]
            [2, 1, 1, 1, 0, 0, 0, 0, 0, 0]
        """
        t = _nonneg_int(tau, "MonotoneLoss.shifted_loss_at", "tau")
        base = self.loss_at(y) - t
        strict = self.strict_loss_at(y)
        return base if strict is None else max(base, t - strict)

    def down_sensitivity(self, k: int) -> Fraction:
        """``DS^k_f(x) = h(0) − h(min(k, n))``, exactly (seed Eq. 1).

        Used only in utility statements (seed Theorem 4), never for privacy.
        """
        kk = _nonneg_int(k, "MonotoneLoss.down_sensitivity", "k")
        return self._profile(0) - self._profile(min(kk, self._n))

    def __repr__(self) -> str:  # never shows data
        return f"<MonotoneLoss kind={self._kind!r} empty_value={self._empty}>"


def _csr(indptr: npt.ArrayLike, codes: npt.ArrayLike, owner: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    ptr = np.asarray(indptr, dtype=np.int64)
    cds = np.asarray(codes, dtype=np.int64)
    if (
        ptr.ndim != 1
        or cds.ndim != 1
        or ptr.size < 1
        or int(ptr[0]) != 0
        or int(ptr[-1]) != cds.size
        or bool((np.diff(ptr) < 0).any())
    ):
        raise InvalidArgument(owner, "indptr", f"<array size={ptr.size}>", "must be a CSR index pointer for codes")
    return ptr, cds


@final
@attrs.frozen
class DownSensitivityBounds:
    """Certified bounds ``lower <= DS^k_f(x) <= upper``; ``exact`` when they agree.

    Attributes:
        k: the number of users removed.
        lower: an achievable drop (a witness set of users exists).
        upper: a proven upper bound.
    """

    k: int
    lower: int
    upper: int

    @property
    def exact(self) -> bool:
        """Whether the bounds coincide."""
        return self.lower == self.upper


def down_sensitivity_count_distinct(
    indptr: npt.ArrayLike, codes: npt.ArrayLike, k: int, *, max_subsets: int = 200_000
) -> DownSensitivityBounds:
    """``DS^k`` of the number of distinct values, users given as CSR value sets.

    Removing a set ``R`` of users loses exactly the values all of whose holders
    are in ``R`` (a max-coverage-type problem when values are shared). Cases:

    * disjoint sets: the ``k`` largest sets, exact in ``O(n log n)``;
    * shared values and ``C(n, min(k, n)) <= max_subsets``: exact by enumerating
      every ``R`` of size ``min(k, n)`` (``f`` is monotone, so larger ``R`` is never
      worse);
    * otherwise bounds: ``lower`` = the ``k`` largest counts of values held by a
      single user (removing those users loses at least these), ``upper`` = the
      ``k`` largest ``w_u = Σ_{v ∈ V_u} 1/holders(v)`` summed (a value lost by
      removing ``R`` has all its holders in ``R`` and adds exactly 1 to
      ``Σ_{u ∈ R} w_u``), rounded down after a relative float margin of
      ``1e-9``, and at most the number of distinct values.

    Down sensitivity enters only utility statements; the lower bound is never
    used for privacy.

    Examples:
        >>> down_sensitivity_count_distinct([0, 2, 3, 5], [0, 1, 2, 1, 3], 2)
        DownSensitivityBounds(k=2, lower=3, upper=3)
    """
    owner = "down_sensitivity_count_distinct"
    ptr, cds = _csr(indptr, codes, owner)
    kk = min(_nonneg_int(k, owner, "k"), int(ptr.size) - 1)
    n = int(ptr.size) - 1
    sizes = np.diff(ptr)
    if cds.size == 0 or kk == 0:
        return DownSensitivityBounds(kk, 0, 0)
    holders = np.bincount(cds)
    total = int((holders > 0).sum())
    if int(holders.max()) <= 1:
        top = int(np.sort(sizes)[::-1][:kk].sum())
        return DownSensitivityBounds(kk, top, top)
    owner_of = np.repeat(np.arange(n), sizes)
    if math.comb(n, kk) <= max_subsets:
        best = 0
        for removed in itertools.combinations(range(n), kk):
            in_r = np.isin(owner_of, removed)
            lost = np.bincount(cds[in_r], minlength=holders.size)
            best = max(best, int(((lost == holders) & (holders > 0)).sum()))
        return DownSensitivityBounds(kk, best, best)
    private = np.bincount(owner_of[holders[cds] == 1], minlength=n)
    lower = int(np.sort(private)[::-1][:kk].sum())
    # a lost value has all its h holders in R: it adds h * (1/h) = 1 to Σ_{u∈R} w_u,
    # w_u = Σ_{v ∈ V_u} 1/h(v); the relative margin covers float rounding (< 2**-40 here)
    weight = np.bincount(owner_of, weights=1.0 / holders[cds], minlength=n)
    frac = float(np.sort(weight)[::-1][:kk].sum()) * (1 + 1e-9) + 1e-9
    upper = max(lower, min(total, int(np.sort(sizes)[::-1][:kk].sum()), math.floor(frac)))
    return DownSensitivityBounds(kk, lower, upper)


def check_user_monotone(fn: UserFunction, n_units: int, trials: int = 1000, rng_seed: int = 0) -> bool:
    """Randomised refutation of monotonicity: does removing one user ever increase ``fn``?

    This can refute, never prove: that ``fn`` is monotone on *every* dataset is
    the caller's promise, on which the sensitivity of ``ℓ`` (seed 004,
    Proposition 3) and hence the privacy of the shifted inverse mechanism rest.
    The generator is a seeded test generator, not a privacy source.

    Args:
        fn: ``f`` on a boolean mask of kept users.
        n_units: the number of users.
        trials: random (subset, removed user) pairs to try.
        rng_seed: seed of the test generator.

    Returns:
        ``False`` if a counterexample was found, else ``True``.

    Examples:
        >>> check_user_monotone(lambda m: int(m.sum()), 5, trials=50)
        True
        >>> check_user_monotone(lambda m: 5 - int(m.sum()), 5, trials=50)
        False
    """
    owner = "check_user_monotone"
    n = _nonneg_int(n_units, owner, "n_units")
    t = _nonneg_int(trials, owner, "trials")
    if n == 0:
        return True
    gen = np.random.Generator(np.random.PCG64(_int(rng_seed, owner, "rng_seed")))
    for _ in range(t):
        mask = gen.random(n) < gen.random()  # a random density covers small and large subsets
        kept = np.flatnonzero(mask)
        if kept.size == 0:
            continue
        smaller = mask.copy()
        smaller[int(kept[int(gen.integers(0, kept.size))])] = False
        big = to_fraction(fn(mask), owner=owner, field="fn(mask)")
        small = to_fraction(fn(smaller), owner=owner, field="fn(mask)")
        if small > big:
            return False
    return True


def down_sensitivity_function(fn: UserFunction, n_units: int, k: int, *, max_subsets: int = 1_000_000) -> Fraction:
    """``DS^k`` of a user function, enumerating every removal of at most ``k`` users.

    Exact for any ``fn`` (``max f(x) − f(x̃)`` over ``dist(x, x̃) <= k``, at least 0);
    costs ``Σ_{j<=k} C(n, j)`` calls. For utility statements only.

    Raises:
        InvalidArgument: if that number of calls exceeds ``max_subsets``.

    Examples:
        >>> down_sensitivity_function(lambda m: int(m.sum()) ** 2, 4, 1)
        Fraction(7, 1)
    """
    owner = "down_sensitivity_function"
    n = _nonneg_int(n_units, owner, "n_units")
    kk = min(_nonneg_int(k, owner, "k"), n)
    cost = sum(math.comb(n, j) for j in range(kk + 1))
    if cost > max_subsets:
        raise InvalidArgument(owner, "k", k, f"needs {cost} evaluations > max_subsets={max_subsets}")
    full = np.ones(n, dtype=np.bool_)
    base = to_fraction(fn(full), owner=owner, field="fn(mask)")
    best = Fraction(0)
    for j in range(1, kk + 1):
        for removed in itertools.combinations(range(n), j):
            mask = full.copy()
            mask[list(removed)] = False
            best = max(best, base - to_fraction(fn(mask), owner=owner, field="fn(mask)"))
    return best
