"""Down sensitivity and the inverse-sensitivity loss of monotone user-level queries.

Setting: a dataset is a multiset of units (users, each with all their rows);
neighbours differ by adding or removing one user with all their rows. ``f`` is
*monotone*: removing users never increases it (seed 004, Eq. 3). For an integer
candidate ``y``:

* ``ℓ(x, y) = min{dist(x, x̃) : x̃ ⊆ x, f(x̃) <= y}`` (seed Eq. 4), the number of
  users to delete so that ``f <= y``;
* ``ℓ̄(x, y)`` is the same with ``f(x̃) < y`` (seed footnote 4, Eq. A);
* ``DS^k_f(x) = max{f(x) − f(x̃) : x̃ ⊆ x, dist(x, x̃) <= k}`` (seed Eq. 1).

Everything here is computed from the *deletion profile*
``g(k) = min{f(x̃) : x̃ ⊆ x, |x \\ x̃| = k}`` (``k = 0..n``), which is
non-increasing for monotone ``f``. Then ``ℓ(y) = min{k : g(k) <= y}``,
``ℓ̄(y) = min{k : g(k) < y}`` and ``DS^k = g(0) − g(min(k, n))``. For integer
``y`` the comparisons only need two integer *threshold* lists (``k < n``):
``ℓ(y) = #{k : ⌈g(k)⌉ > y}`` and ``ℓ̄(y) = #{k : ⌊g(k)⌋ >= y}`` (and
``ℓ̄(y) = +∞`` when ``y <= f(∅)``: no subset goes below the empty dataset). These
identities hold because ``g > y ⟺ ⌈g⌉ > y`` and ``g >= y ⟺ ⌊g⌋ >= y`` for integer
``y``. All thresholds are exact integers: no float comparison decides a loss.

Profiles per query kind (``c_u`` from :mod:`dpalg.data._user_units`):

* user sum / row count / count distinct with disjoint value sets: ``f = Σ c_u``,
  removing the ``k`` largest contributions is optimal, so ``g(k) = Σ c − top_k``.
  The float contributions are converted to exact integers (a common power of two),
  so ``g`` is the exact sum of the float64 values, not a rounded one;
* max over users: ``g(k) = max(floor, (k+1)-th largest user maximum)``;
* count distinct with values shared between users: ``ℓ`` is a set-cover problem.
  It is *not supported* (:class:`InvalidArgument`); no approximate loss with
  unproven sensitivity is offered. Note that the check itself looks at the data,
  so a mechanism should only reach it when the schema guarantees disjointness
  (e.g. the value column is a (user, item) pair);
* a user function on boolean masks: brute force over all ``2**n`` subsets
  (``n <= 16``), for tests and tiny data.

**Integer output domains need** ``⌊f⌋`` (:meth:`UserLoss.floored`). Theorem 4
of seed 004 assumes ``f`` maps *into* ``Y``; its utility proof needs a
candidate ``ŷ = min{f(x̃) : dist(x, x̃) <= τ}`` in ``Y`` with ``ℓ*(x, ŷ) <= 0``.
With an integer ``Y`` and a fractional ``f`` (float sums, real maxima) there
may be none: 5000 users contributing ``0.01`` each (``f`` just above 50) have
``ℓ* >= 40`` on all of ``Y = [0, 2**40)`` for ``τ = 61``, and the exponential
mechanism then puts almost all its mass far above ``f``. ``⌊f⌋`` is monotone and integer-valued, its profile is ``⌊h⌋``, so
Proposition 3 (privacy) still applies and the utility proof goes through for
``⌊f⌋``. Privacy never needed the floor: ``ℓ`` and ``ℓ̄`` of a real-valued
monotone ``f`` have sensitivity 1 too; only utility does.

Down sensitivity is used only in *utility* statements (Theorem 4 of seed 004);
no privacy guarantee ever depends on it, so exact values where tractable and
brute force in tests are enough.

References:
    J. Fang, W. Dong, K. Yi. Shifted Inverse: A General Mechanism for Monotonic
    Functions under User Differential Privacy. CCS 2022.
    T. Steinke. Beyond Local Sensitivity via Down Sensitivity.
    DifferentialPrivacy.org, 2023 (seed 004: Eq. 1, 3, 4, A; Prop. 3; Thm. 4).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Final, Literal, Union, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, fraction_ceil, fraction_floor, to_fraction

__all__ = [
    "IntArray",
    "MaskQuery",
    "UserLoss",
    "check_user_monotone",
    "down_sensitivity_count_distinct",
    "down_sensitivity_function",
]

#: an integer array: int64 when every entry fits comfortably, else Python ints (object)
IntArray = Union[npt.NDArray[np.int64], npt.NDArray[np.object_]]
#: a user-supplied query on a boolean mask of kept users; must return an exact number
MaskQuery = Callable[[npt.NDArray[np.bool_]], ExactLike]

_SMALL: Final = 1 << 61  # int64 fast path: |threshold| <= 2**61 so t + 1 and differences fit
_CLAMP: Final = 1 << 62  # queries y are clamped here; order with every threshold is preserved
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


def _int_array(values: list[int] | IntArray, above: int) -> IntArray:
    """Ascending integer thresholds ``> above``: int64 when small, else Python ints (read-only)."""
    out: IntArray
    if isinstance(values, np.ndarray) and values.dtype == np.int64:
        # int64 inputs are within ±2**61, so clamping ``above`` keeps every comparison
        out = values[values > min(max(above, -_CLAMP), _CLAMP)]
    else:
        kept = [int(v) for v in values if v > above]
        small = not kept or (-_SMALL <= kept[0] and kept[-1] <= _SMALL)
        out = np.array(kept, dtype=np.int64) if small else np.array(kept, dtype=object)
    out.flags.writeable = False
    return out


def _float_scaled(values: npt.NDArray[np.float64]) -> tuple[list[int], int]:
    """Exact integers ``m_i`` and a shift ``s`` with ``values[i] == m_i / 2**s``."""
    ratios = [float(v).as_integer_ratio() for v in values]
    s = max((d.bit_length() - 1 for _, d in ratios), default=0)
    return [n << (s - (d.bit_length() - 1)) for n, d in ratios], s


@final
class UserLoss:
    """The loss ``ℓ``, the strict loss ``ℓ̄`` and ``DS^k`` of one monotone query on one dataset.

    Build it with a classmethod from per-unit reductions (never from raw rows).
    Neighbouring relation: add or remove one user with all their rows. After
    one sort, ``loss(y)`` and ``loss_strict(y)`` cost ``O(log n)``;
    ``losses(ys)`` is vectorised; :meth:`breakpoints` feeds the run computation
    of :func:`dpalg.sensitivity._shift_runs.shifted_loss_runs`.

    Privacy guarantee:
        Not a mechanism. For every fixed ``y``, ``ℓ(·, y)`` and ``ℓ̄(·, y)`` have
        global sensitivity 1 under add/remove of one user, *provided* ``f`` is
        monotone (seed 004, Proposition 3 and footnote 4). For the built-in
        kinds monotonicity holds by construction (non-negative contributions,
        max, disjoint distinct counts); for :meth:`from_function` it is the
        caller's promise. On an integer output domain use :meth:`floored`
        (the loss of ``⌊f⌋``), which the mechanisms do.

    Examples:
        >>> loss = UserLoss.user_sum([5.0, 1.0, 3.0])
        >>> loss.value(), loss.loss(9), loss.loss(8), loss.loss(3), loss.loss(0)
        (Fraction(9, 1), 0, 1, 2, 3)
        >>> loss.loss_strict(9), loss.loss_strict(4), loss.loss_strict(0) is None
        (1, 2, True)
        >>> loss.down_sensitivity(2)
        Fraction(8, 1)

    References:
        Fang, Dong, Yi, CCS 2022; seed 004 Eq. 1, 4 and A.
    """

    __slots__ = ("_kind", "_n", "_floor", "_thr", "_thr_lo", "_g", "_floored")

    def __init__(
        self,
        kind: str,
        n_units: int,
        floor: Fraction,
        ceil_asc: list[int] | IntArray,
        floor_asc: list[int] | IntArray,
        profile: Callable[[int], Fraction],
        *,
        floored: bool = False,
    ) -> None:
        """Private: use the classmethods.

        ``ceil_asc`` holds ``⌈g(k)⌉`` and ``floor_asc`` holds ``⌊g(k)⌋`` for
        ``k < n``, ascending; entries that can never count (``⌈g⌉ <= ⌈f(∅)⌉``,
        ``⌊g⌋ <= ⌊f(∅)⌋``) are dropped.
        """
        self._kind = kind
        self._n = n_units
        self._floor = floor
        lo_y, lo_strict = fraction_ceil(floor), fraction_floor(floor)
        self._thr = _int_array(ceil_asc, lo_y)
        self._thr_lo = _int_array(floor_asc, lo_strict)
        self._g = profile
        self._floored = floored

    # --- constructors -----------------------------------------------------
    @classmethod
    def user_sum(cls, contributions: npt.ArrayLike) -> UserLoss:
        """``f = Σ_u c_u`` with non-negative finite per-user totals (``per_unit_sums``).

        Args:
            contributions: one non-negative finite number per user.

        Raises:
            InvalidArgument: if a contribution is negative, NaN or infinite
                (:func:`per_unit_sums` never produces one).
        """
        c = np.asarray(contributions, dtype=np.float64)
        if c.ndim != 1:
            raise InvalidArgument("UserLoss.user_sum", "contributions", f"ndim={c.ndim}", "must be 1-D")
        if c.size and not (bool(np.isfinite(c).all()) and float(c.min()) >= 0.0):
            raise InvalidArgument("UserLoss.user_sum", "contributions", "(some entry)", "must be finite and >= 0")
        return cls._additive("user_sum", c)

    @classmethod
    def row_count(cls, counts: npt.ArrayLike) -> UserLoss:
        """``f`` = number of rows, from per-user row counts (``per_unit_row_counts``)."""
        c = np.asarray(counts)
        if c.ndim != 1 or (c.size and not np.issubdtype(c.dtype, np.integer)):
            raise InvalidArgument("UserLoss.row_count", "counts", f"dtype={c.dtype}, ndim={c.ndim}", "must be a 1-D integer array")
        if c.size and int(c.min()) < 0:
            raise InvalidArgument("UserLoss.row_count", "counts", "(some entry)", "must be >= 0")
        return cls._additive("row_count", c.astype(np.float64) if c.size else np.zeros(0))

    @classmethod
    def count_distinct(cls, indptr: npt.ArrayLike, codes: npt.ArrayLike) -> UserLoss:
        """``f`` = number of distinct values, when no value is held by two users.

        Args:
            indptr, codes: the CSR value sets of ``per_unit_value_sets``.

        Raises:
            InvalidArgument: if some value is held by two users: then ``ℓ`` is a
                set-cover problem and no exact, sensitivity-1 loss is available.
        """
        ptr = np.asarray(indptr, dtype=np.int64)
        cds = np.asarray(codes, dtype=np.int64)
        if ptr.ndim != 1 or ptr.size < 1 or int(ptr[0]) != 0 or int(ptr[-1]) != cds.size or bool((np.diff(ptr) < 0).any()):
            raise InvalidArgument("UserLoss.count_distinct", "indptr", f"size={ptr.size}", "must be a CSR index pointer for codes")
        if np.unique(cds).size != cds.size:
            raise InvalidArgument(
                "UserLoss.count_distinct",
                "codes",
                "(shared values)",
                "must be disjoint between users: with shared values the loss is a set-cover "
                "problem; use a (user, value) key or a different query",
            )
        return cls._additive("count_distinct", np.diff(ptr).astype(np.float64))

    @classmethod
    def user_max(cls, maxima: npt.ArrayLike, *, floor: ExactLike) -> UserLoss:
        """``f = max(floor, largest value over users)`` from ``per_unit_max``.

        Args:
            maxima: one float per user (``-inf`` for a user without values).
            floor: ``f`` of the empty dataset, a public constant (the clip
                lower bound, or the lowest candidate of the output domain).
        """
        fl = to_fraction(floor, owner="UserLoss.user_max", field="floor")
        m = np.asarray(maxima, dtype=np.float64)
        if m.ndim != 1 or bool(np.isnan(m).any()) or bool(np.isposinf(m).any()):
            raise InvalidArgument("UserLoss.user_max", "maxima", "(some entry)", "must be 1-D, not NaN and not +inf")
        desc = np.sort(m)[::-1]
        n = int(desc.size)
        asc = desc[::-1]
        # ⌈max(floor, m)⌉ > ⌈floor⌉ iff m > ⌈floor⌉; ⌊max(floor, m)⌋ > ⌊floor⌋ iff m >= ⌊floor⌋ + 1
        # (exact: integers up to 2**1024 are floats, and a float compares exactly with them)
        ceil_asc = _float_to_ints(np.ceil(asc[asc > fraction_ceil(fl)]))
        floor_asc = _float_to_ints(np.floor(asc[asc >= fraction_floor(fl) + 1]))

        def profile(k: int) -> Fraction:
            v = float(desc[k]) if k < n else -math.inf
            return max(fl, Fraction(v)) if math.isfinite(v) else fl

        return cls("user_max", n, fl, ceil_asc, floor_asc, profile)

    @classmethod
    def from_function(cls, fn: MaskQuery, n_units: int) -> UserLoss:
        """Brute force over all subsets of ``n_units <= 16`` users (tests, tiny data).

        ``fn(mask)`` is ``f`` on the users where ``mask`` is true; it must return
        an exact number (int, Fraction, decimal string). The running minimum of
        the profile makes ``ℓ`` exact even for a non-monotone ``fn``, but its
        sensitivity-1 guarantee needs monotonicity, which is the caller's
        promise (see :func:`check_user_monotone`).
        """
        n = _nonneg_int(n_units, "UserLoss.from_function", "n_units")
        if n > _MAX_BRUTE_UNITS:
            raise InvalidArgument("UserLoss.from_function", "n_units", n, f"must be <= {_MAX_BRUTE_UNITS} (brute force)")
        best = [Fraction(0)] * (n + 1)
        seen = [False] * (n + 1)
        for bits in range(1 << n):
            mask = np.array([(bits >> i) & 1 == 1 for i in range(n)], dtype=np.bool_)
            removed = n - int(mask.sum())
            v = to_fraction(fn(mask), owner="UserLoss.from_function", field="fn(mask)")
            if not seen[removed] or v < best[removed]:
                best[removed], seen[removed] = v, True
        prof = list(itertools.accumulate(best, min))  # min over removing at most k
        floor = prof[n]
        ceil_asc = sorted(fraction_ceil(g) for g in prof[:n])
        floor_asc = sorted(fraction_floor(g) for g in prof[:n])
        return cls("function", n, floor, ceil_asc, floor_asc, prof.__getitem__)

    @classmethod
    def _additive(cls, kind: str, c: npt.NDArray[np.float64]) -> UserLoss:
        n = int(c.size)
        pos = np.sort(c[c > 0])  # zero contributions never change f
        with np.errstate(over="ignore"):  # totals near the float maximum sum to inf: then the exact path runs
            total_f = float(pos.sum()) if pos.size else 0.0
        if bool((pos == np.floor(pos)).all()) and total_f < float(_SMALL) / 2:
            ints = pos.astype(np.int64)
            suffix = np.cumsum(ints)  # suffix[j] = sum of the j+1 smallest = g(m-1-j)
            m = int(ints.size)  # suffix is ascending; g is an integer, so ⌈g⌉ = ⌊g⌋ = g

            def profile_fast(k: int) -> Fraction:
                j = m - 1 - k
                return Fraction(int(suffix[j])) if j >= 0 else Fraction(0)

            return cls(kind, n, Fraction(0), suffix, suffix, profile_fast)
        scaled, s = _float_scaled(pos)
        sums = list(itertools.accumulate(scaled))  # ascending partial sums = g(m-1-j) * 2**s
        ceil_asc = [-((-v) >> s) for v in sums]
        floor_asc = [v >> s for v in sums]
        m_slow = len(sums)

        def profile_slow(k: int) -> Fraction:
            j = m_slow - 1 - k
            return Fraction(sums[j], 1 << s) if j >= 0 else Fraction(0)

        return cls(kind, n, Fraction(0), ceil_asc, floor_asc, profile_slow)

    # --- the loss -----------------------------------------------------------
    @property
    def kind(self) -> str:
        """Which query: ``user_sum``, ``row_count``, ``count_distinct``, ``user_max`` or ``function``."""
        return self._kind

    @property
    def n_units(self) -> int:
        """Number of users (private: never print it in a release)."""
        return self._n

    @property
    def floor(self) -> Fraction:
        """``f(∅)``, a public constant: ``ℓ(y)`` is finite iff ``y >= floor``."""
        return self._floor

    @property
    def min_y(self) -> int:
        """The smallest integer ``y`` with a finite loss, ``⌈floor⌉``."""
        return fraction_ceil(self._floor)

    @property
    def is_floored(self) -> bool:
        """Whether this is the loss of ``⌊f⌋`` (see :meth:`floored`)."""
        return self._floored

    def value(self) -> Fraction:
        """``f(x)`` exactly (``⌊f(x)⌋`` for a floored loss)."""
        return self._g(0)

    def floored(self) -> UserLoss:
        """The losses of the integer-valued query ``⌊f⌋``: use this on an integer output domain.

        ``⌊f⌋`` is monotone whenever ``f`` is, so Proposition 3 (sensitivity 1
        under add/remove of one user) still holds. Its deletion profile is
        ``⌊h(k)⌋``, so ``ℓ_⌊f⌋(y) = #{k : ⌊h(k)⌋ > y}`` and ``ℓ̄_⌊f⌋(y) =
        #{k : ⌊h(k)⌋ >= y}``: both read the floor thresholds, and
        ``ℓ_⌊f⌋(y) = ℓ̄_f(y + 1)``, ``ℓ̄_⌊f⌋(y) = ℓ̄_f(y)``. Because ``⌊f⌋`` maps
        into the integers, the candidate ``ŷ = ⌊h(τ)⌋`` of Theorem 4's proof has
        ``ℓ*(x, ŷ) <= 0`` (when ``ŷ`` lies in ``Y``), and the mechanisms
        guarantee ``⌊f(x)⌋ >= M >= ⌊f(x)⌋ − DS^{2τ}_{⌊f⌋}(x)``, hence
        ``f(x) >= M > f(x) − DS^{2τ}_f(x) − 1``. For integer-valued ``f``
        (counts, integer sums, an integer ``floor``) nothing changes.
        Idempotent. ``O(n)``.

        Examples:
            >>> loss = UserLoss.user_sum([0.5, 2.75]).floored()
            >>> loss.value(), loss.loss(2), loss.loss(3), loss.loss_strict(3)
            (Fraction(3, 1), 1, 0, 1)
            >>> UserLoss.user_sum([0.5, 2.75]).loss(3)  # f = 3.25 > 3: one user must go
            1

        References:
            Seed 004, Theorem 4 and footnote 4 (``f : X* → Y``).
        """
        if self._floored:
            return self
        prof = self._g

        def profile(k: int) -> Fraction:
            return Fraction(fraction_floor(prof(k)))

        # for ⌊f⌋, ⌈⌊h⌋⌉ = ⌊h⌋ and the filter "> ⌈⌊f(∅)⌋⌉" equals the floor filter "> ⌊f(∅)⌋"
        fl = Fraction(fraction_floor(self._floor))
        return UserLoss(self._kind, self._n, fl, self._thr_lo, self._thr_lo, profile, floored=True)

    def _check_y(self, y: object, where: str) -> int:
        yi = _int(y, where, "y")
        if yi < self.min_y:
            raise InvalidArgument(where, "y", yi, f"must be >= {self.min_y}: below f(empty) the loss is infinite")
        return yi

    @staticmethod
    def _key(arr: IntArray, y: int) -> int:
        if arr.dtype == object:
            return y
        return min(max(y, -_CLAMP), _CLAMP)

    def loss(self, y: int) -> int:
        """``ℓ(x, y)``: fewest users to remove so that ``f <= y`` (O(log n))."""
        yi = self._check_y(y, "UserLoss.loss")
        return int(self._thr.size - np.searchsorted(self._thr, self._key(self._thr, yi), side="right"))

    def loss_strict(self, y: int) -> int | None:
        """``ℓ̄(x, y)``: fewest users to remove so that ``f < y``; ``None`` means ``+∞`` (``y <= floor``)."""
        yi = _int(y, "UserLoss.loss_strict", "y")
        if yi <= fraction_floor(self._floor):
            return None
        return int(self._thr_lo.size - np.searchsorted(self._thr_lo, self._key(self._thr_lo, yi), side="left"))

    def losses(self, ys: npt.ArrayLike, *, strict: bool = False) -> npt.NDArray[np.int64]:
        """Vectorised ``ℓ`` (or ``ℓ̄`` with ``strict=True``) at integer candidates ``ys``.

        ``ys`` is an int64 array, or an object array of Python ints for huge candidates.

        Raises:
            InvalidArgument: if some ``y`` is below :attr:`min_y` (strict: at most
                ``floor``), where the loss is infinite.
        """
        y = np.asarray(ys)
        if y.dtype != object:
            y = y.astype(np.int64)
        if y.size:
            low = int(y.min())
            bound = self.min_y if not strict else fraction_floor(self._floor) + 1
            if low < bound:
                raise InvalidArgument("UserLoss.losses", "ys", low, f"must all be >= {bound}: the loss is infinite there")
        arr = self._thr_lo if strict else self._thr
        key: npt.NDArray[np.int64] | npt.NDArray[np.object_] = y
        if arr.dtype == object:
            key = y.astype(object)
        elif y.dtype == object:  # big candidates against int64 thresholds: clamping keeps the order
            key = np.array([min(max(int(v), -_CLAMP), _CLAMP) for v in y.tolist()], dtype=np.int64)
        side: Literal["left", "right"] = "left" if strict else "right"
        return (arr.size - np.searchsorted(arr, key, side=side)).astype(np.int64)

    def breakpoints(self) -> tuple[IntArray, IntArray]:
        """The ascending integer thresholds ``(t, s)`` of ``ℓ`` and ``ℓ̄`` (read-only, with repeats).

        ``ℓ(y) = #{t > y}`` for ``y >= min_y`` and ``ℓ̄(y) = #{s >= y}`` for
        ``y > floor``: ``ℓ`` changes only between ``t − 1`` and ``t``, ``ℓ̄``
        only between ``s`` and ``s + 1``. Each has at most ``n_units`` entries.
        """
        return self._thr, self._thr_lo

    def down_sensitivity(self, k: int) -> Fraction:
        """``DS^k_f(x)``: the largest drop of ``f`` from removing at most ``k`` users (exact).

        For monotone ``f`` the drop is largest when exactly ``min(k, n)`` users
        go, so ``DS^k = g(0) − g(min(k, n))``. Utility statements only.

        References:
            Seed 004, Eq. 1; Cummings and Durfee 2020 (the name).
        """
        kk = _nonneg_int(k, "UserLoss.down_sensitivity", "k")
        return self._g(0) - self._g(min(kk, self._n))

    def __repr__(self) -> str:  # never prints data
        tail = " floored" if self._floored else ""
        return f"<UserLoss kind={self._kind!r} floor={self._floor}{tail}>"


def _float_to_ints(values: npt.NDArray[np.float64]) -> IntArray:
    """Integral finite floats as exact integers (int64 when small)."""
    if values.size == 0 or float(np.abs(values).max()) <= float(_SMALL):
        return values.astype(np.int64)
    return np.array([int(v) for v in values.tolist()], dtype=object)


def check_user_monotone(fn: MaskQuery, n_units: int, trials: int = 1000, seed: int = 0) -> bool:
    """Randomised check that removing one user never increases ``fn``.

    This can refute, never prove: monotonicity over *all* datasets is the
    caller's promise, on which the privacy of the shifted inverse mechanism
    (seed 004, Prop. 3) rests. The randomness is a seeded test generator, not
    a privacy source.

    Args:
        fn: ``f`` on a boolean mask of kept users.
        n_units: number of users.
        trials: random (mask, removed user) pairs to try.
        seed: generator seed.

    Returns:
        ``False`` if a counterexample was found, else ``True``.

    Examples:
        >>> check_user_monotone(lambda m: int(m.sum()), 5, trials=50)
        True
        >>> check_user_monotone(lambda m: 5 - int(m.sum()), 5, trials=50)
        False
    """
    n = _nonneg_int(n_units, "check_user_monotone", "n_units")
    t = _nonneg_int(trials, "check_user_monotone", "trials")
    if n == 0:
        return True
    gen = np.random.Generator(np.random.PCG64(_int(seed, "check_user_monotone", "seed")))
    for _ in range(t):
        # a random density per trial reaches small and large subsets (density 1/2
        # alone almost never tests masks with nearly all users kept)
        mask = gen.random(n) < gen.random()
        kept = np.flatnonzero(mask)
        if kept.size == 0:
            continue
        smaller = mask.copy()
        smaller[int(kept[int(gen.integers(0, kept.size))])] = False
        big = to_fraction(fn(mask), owner="check_user_monotone", field="fn(mask)")
        small = to_fraction(fn(smaller), owner="check_user_monotone", field="fn(mask)")
        if small > big:
            return False
    return True


def down_sensitivity_function(fn: MaskQuery, n_units: int, k: int, *, max_subsets: int = 1_000_000) -> Fraction:
    """``DS^k`` of a user function by enumerating every removal of at most ``k`` users.

    Exact for any ``fn``: ``max{f(x) − f(x̃) : dist(x, x̃) <= k}`` (seed Eq. 1; at
    least 0, from ``x̃ = x``); cost ``Σ_{j<=k} C(n, j)`` calls. Utility
    statements only.

    Raises:
        InvalidArgument: if that exceeds ``max_subsets``.

    Examples:
        >>> down_sensitivity_function(lambda m: int(m.sum()) ** 2, 4, 1)
        Fraction(7, 1)
    """
    n = _nonneg_int(n_units, "down_sensitivity_function", "n_units")
    kk = min(_nonneg_int(k, "down_sensitivity_function", "k"), n)
    cost = sum(math.comb(n, j) for j in range(kk + 1))
    if cost > max_subsets:
        raise InvalidArgument("down_sensitivity_function", "k", k, f"needs {cost} subsets > max_subsets={max_subsets}")
    full = np.ones(n, dtype=np.bool_)
    base = to_fraction(fn(full), owner="down_sensitivity_function", field="fn(mask)")
    best = Fraction(0)
    for j in range(1, kk + 1):
        for removed in itertools.combinations(range(n), j):
            mask = full.copy()
            mask[list(removed)] = False
            v = to_fraction(fn(mask), owner="down_sensitivity_function", field="fn(mask)")
            best = max(best, base - v)
    return best


def down_sensitivity_count_distinct(
    indptr: npt.ArrayLike, codes: npt.ArrayLike, k: int, *, max_subsets: int = 200_000
) -> int:
    """``DS^k`` of the number of distinct values, users given as CSR value sets.

    Disjoint sets: the ``k`` largest sets (exact, ``O(n log n)``). Shared
    values: removing users ``R`` loses the values held *only* by ``R``, a
    max-coverage-type problem; solved by enumerating every ``R`` of size
    ``min(k, n)`` (monotone ``f``), which is for tests and tiny data only.

    Raises:
        InvalidArgument: if sets overlap and ``C(n, k) > max_subsets``.

    Examples:
        >>> down_sensitivity_count_distinct([0, 2, 3, 5], [0, 1, 2, 1, 3], 1)
        1
        >>> down_sensitivity_count_distinct([0, 2, 3, 5], [0, 1, 2, 1, 3], 2)
        3
    """
    ptr = np.asarray(indptr, dtype=np.int64)
    cds = np.asarray(codes, dtype=np.int64)
    kk = _nonneg_int(k, "down_sensitivity_count_distinct", "k")
    n = int(ptr.size) - 1
    if n < 0:
        raise InvalidArgument("down_sensitivity_count_distinct", "indptr", "(empty)", "must have n_units + 1 entries")
    kk = min(kk, n)
    sizes = np.diff(ptr)
    if np.unique(cds).size == cds.size:
        return int(np.sort(sizes)[::-1][:kk].sum())
    if math.comb(n, kk) > max_subsets:
        raise InvalidArgument("down_sensitivity_count_distinct", "k", k, f"needs C(n, k) > max_subsets={max_subsets} subsets")
    owner = np.repeat(np.arange(n), sizes)
    holders = np.bincount(cds, minlength=int(cds.max()) + 1 if cds.size else 0)
    best = 0
    for removed in itertools.combinations(range(n), kk):
        in_r = np.isin(owner, removed)
        lost_counts = np.bincount(cds[in_r], minlength=holders.size)
        best = max(best, int(((lost_counts == holders) & (holders > 0)).sum()))
    return best
