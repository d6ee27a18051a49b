"""A user's bound F(k, n) on LS_k, the local sensitivity at distance k (for :class:`ProposeTest`).

The node holds only its parameters; parsing and the sympy proofs live in
:mod:`dpalg.mechanisms._common.ls_formula`, imported when a formula is checked, so
``import dpalg`` does not load sympy.
"""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from collections.abc import Callable
from typing import TYPE_CHECKING, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import to_fraction
from dpalg.data import Relation
from dpalg.mechanisms._common.user_function import describe, is_recorded_stub, quiet, refuse_result, statistic_value, trial_array
from dpalg.queries import Query, clip_inside
from dpalg.sensitivity._catalog import CATALOG_KINDS, distance_to_instability

if TYPE_CHECKING:
    import sympy

    from dpalg.mechanisms._common.ls_formula import Verdict
    from dpalg.sensitivity._ptr_condition import NeighbourCheck
    from dpalg.sensitivity._sympy_check import MonotoneCheck

__all__ = ["BRUTE_GRID", "BRUTE_MAX_K", "BRUTE_MAX_N", "LocalSensAtDistance", "brute_force_datasets", "first_above", "float_at_most"]

#: the public brute-force domain that tries to refute a user function's LS_k promise:
#: every multiset of at most BRUTE_MAX_N values from a BRUTE_GRID-point grid (bounds included), k <= BRUTE_MAX_K
BRUTE_MAX_N = 6
BRUTE_GRID = 5
BRUTE_MAX_K = 3
_REL_TOL = 1e-9  # float rounding of fn and F: a formula is refuted only beyond this relative slack

_FORMULA_SYMBOLS = ("k", "n", "lower", "upper")


def _formula(value: object) -> str:
    if "sympy" in sys.modules:  # a sympy expression can only exist once sympy is imported
        from dpalg.mechanisms._common.ls_formula import formula_text

        text = formula_text(value)
        if text is not None:
            return text
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument("LocalSensAtDistance", "formula", value, "must be a sympy expression or a non-empty string")
    return value.strip()


def _params(value: object) -> tuple[tuple[str, Fraction], ...]:
    if isinstance(value, tuple):
        items = list(value)
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        raise InvalidArgument("LocalSensAtDistance", "params", type(value).__name__, "must be a dict name -> number")
    out: list[tuple[str, Fraction]] = []
    for name, number in items:
        if not isinstance(name, str) or not name.isidentifier() or name in _FORMULA_SYMBOLS:
            raise InvalidArgument("LocalSensAtDistance", "params", name, f"must be identifiers other than {_FORMULA_SYMBOLS}")
        out.append((name, to_fraction(number, owner="LocalSensAtDistance", field=f"params[{name!r}]")))
    return tuple(sorted(out))


def _ls_query(value: Query) -> Query:
    if not isinstance(value, Query):
        raise InvalidArgument("LocalSensAtDistance", "query", type(value).__name__, "must be a dpalg Query")
    return value



def first_above(values: npt.NDArray[np.float64], bound: float, cap: int) -> int:
    """min{k : values[k] > bound} (NaN counts as above: conservative), or cap if none."""
    above = np.flatnonzero(~(values[: cap + 1] <= bound))
    return int(above[0]) if above.size else cap


def float_at_most(value: Fraction) -> float:
    """The largest float <= value (comparisons F > b then never miss an F above b)."""
    out = float(value)
    return math.nextafter(out, -math.inf) if Fraction(out) > value else out


@final
@attrs.frozen
class LocalSensAtDistance:
    """A user-supplied bound F(k, n) on LS_k(x), the local sensitivity at distance k.

    ``formula`` is a sympy expression (or string) in ``k`` and the symbols ``n``
    (number of non-missing values), ``lower``/``upper`` (the clip bounds) and any
    public constants in ``params``. At construction sympy decides, for integers
    k, n ≥ 0, the three properties the PTR proof needs:

    * F ≥ 0 and F non-decreasing in k (:func:`~dpalg.sensitivity.require_monotone`);
    * the **neighbour condition** F(k, n) ≤ F(k + 1, n′) for n′ ∈ {n − 1, n, n + 1}
      (:func:`~dpalg.sensitivity._ptr_condition.check_neighbour_condition`), which
      makes the distance γ_F = min{k : F(k, n) > b} 1-Lipschitz.

    *Refuted* formulas are refused with a counterexample; *unproven* ones are
    refused with ``strict=True`` and otherwise accepted, with the verdict recorded
    in every certificate. A formula whose neighbour condition is unproven is not
    used for a catalog query (the distance is then γ_exact alone): only a proven
    condition makes γ_F, and so min(γ_F, γ_exact), 1-Lipschitz. A formula mentioning a name the query does not define, or
    one dpalg cannot evaluate, is refused.

    At run time F is evaluated in float64 at every k from 0 to the public cap, on
    every run (a non-finite value counts as +inf). For a catalog query (every
    :class:`ProposeTest` target) the distance is min(γ_F, γ_exact), with γ_exact
    from dpalg's exact LS_k profile: a formula below the true LS_k can only make
    the distance larger than γ_exact, which the minimum ignores, so it can
    neither leak nor raise. Without an exact LS_k source, F ≥ LS_k is the user's
    promise and the certificate says so.

    For a user-defined statistic (``Query.function(fn, ...) | Clip(l, u)``) the
    distance is γ_F alone and privacy rests on that promise. Construction then
    requires every sympy proof (unproven is refused, and ``strict=True`` refuses
    the promise itself), tries ``fn`` on public values, and brute-forces LS_k on
    every small public dataset (:func:`brute_force_datasets`), refusing F with the
    counterexample when it is below; ``docs/mechanisms/ptr.md``, "User-defined
    statistics".
    """

    query: Query = attrs.field(converter=_ls_query)
    formula: str = attrs.field(converter=_formula)
    params: tuple[tuple[str, Fraction], ...] = attrs.field(default=(), converter=_params)
    strict: bool = False

    def __attrs_post_init__(self) -> None:
        if self.query.kind == "function":
            self.query.require_bounds("LocalSensAtDistance")  # before sympy: lower/upper are the clip's
        verdict = self._verdict()
        if self.query.kind == "function":
            self._check_user_function(verdict)

    def _check_user_function(self, verdict: Verdict) -> None:
        """A user function: every sympy proof is required, fn is tried, and the promise is brute-forced.

        With no exact LS_k profile γ = γ_F alone, so an unproven neighbour
        condition (γ_F not 1-Lipschitz) or monotonicity is refused whatever
        ``strict`` says; ``strict=True`` refuses the promise itself (it is not proven).
        """
        q = self.query
        lower, upper = q.require_bounds("LocalSensAtDistance")
        if self.strict:
            raise InvalidArgument("LocalSensAtDistance", "strict", True,
                                  f"refuses {q!r}: F >= LS_k of a user function is the user's promise, never proven")
        for what, check in (("monotone/non-negative", verdict.monotone), ("PTR neighbour condition", verdict.neighbour)):
            if check.status != "proven":
                raise InvalidArgument("LocalSensAtDistance", "formula", self.formula,
                                      f"must have a PROVEN {what} for a user function (no exact LS_k backs it up): {check.reason}")
        assert q.fn is not None and q.fallback is not None
        if is_recorded_stub(q.fn):  # rebuilt from a certificate: the code is not there, the promise is as recorded
            return
        trial = np.sort(clip_inside(trial_array(), lower, upper))
        trial.setflags(write=False)
        try:
            with quiet():
                result = q.fn(trial)
        except Exception as exc:  # noqa: BLE001 - user code; only its type is shown
            raise InvalidArgument("Query.function", "fn", describe(q.fn),
                                  f"raised {type(exc).__name__} on the public trial values {trial.tolist()}: "
                                  "it must return a finite number there") from None
        refuse_result("Query.function", "fn", q.fn, result)
        self._refute(lower, upper)

    def _refute(self, lower: Fraction, upper: Fraction) -> None:
        """Brute force on public data: refuse F if F(k, n) < LS_k(x) at some x of :func:`brute_force_datasets`."""
        q = self.query
        assert q.fn is not None and q.fallback is not None
        fn, fallback = q.fn, float(q.fallback)
        seen = [0.0]  # the largest |f̃| met: the float rounding of a difference scales with it

        def value(v: npt.NDArray[np.float64]) -> float:
            out = statistic_value(fn, v, fallback)
            seen[0] = max(seen[0], abs(out))
            return out

        grid, ls = brute_force_datasets(value, lower, upper)
        scale = seen[0]
        bounds = [self.values_at(n, BRUTE_MAX_K) for n in range(BRUTE_MAX_N + 1)]
        for k, table in enumerate(ls):
            for multiset, local in table.items():
                f_k = float(bounds[len(multiset)][k])
                if local > f_k + _REL_TOL * (abs(f_k) + scale + 1e-300):
                    data = [grid[i] for i in multiset]
                    raise InvalidArgument(
                        "LocalSensAtDistance", "formula", self.formula,
                        f"is refuted for {q!r}: on the public dataset {data} (n={len(data)}) LS_{k} of "
                        f"{q.name} under add/remove is at least {local!r} > F({k}, {len(data)}) = {f_k!r} "
                        f"(brute force over values {list(grid)}); F must bound LS_k at every dataset",
                    )  # fmt: skip

    def _verdict(self) -> Verdict:
        from dpalg.mechanisms._common.ls_formula import checked  # sympy: loaded only where a formula is parsed

        q = self.query
        bounds = (q.lower, q.upper) if q.lower is not None and q.upper is not None else None
        return checked(self.formula, self.params, bounds, self.strict)

    def check(self) -> MonotoneCheck:
        """The (cached) sympy verdict on non-negativity and monotonicity in k."""
        return self._verdict().monotone

    def neighbour_check(self) -> NeighbourCheck:
        """The (cached) verdict on the PTR neighbour condition F(k, n) ≤ F(k + 1, n′)."""
        return self._verdict().neighbour

    @property
    def has_exact_ls(self) -> bool:
        """Whether dpalg has an exact LS_k profile of the query (then γ = min(γ_F, γ_exact))."""
        q = self.query
        return q.user is None and q.kind in CATALOG_KINDS and (q.kind in ("count", "count_distinct", "histogram") or q.bounded)

    def notes(self) -> tuple[str, ...]:
        """Certificate notes: each verdict (loudly when unproven), and where the LS_k bound comes from."""
        mono, nb = self.check(), self.neighbour_check()
        out: list[str] = []
        if mono.status == "proven":
            out.append(f"LS_k formula {self.formula!r}: proven non-decreasing and non-negative in k (sympy)")
        else:
            out.append(f"WARNING: LS_k formula {self.formula!r} is UNPROVEN monotone ({mono.reason}); accepted in non-strict mode")
        if nb.status == "proven":
            out.append(f"LS_k formula {self.formula!r}: PTR neighbour condition F(k, n) <= F(k+1, n') for n' in "
                       f"{{n-1, n, n+1}} proven ({nb.reason})")
        elif self.has_exact_ls:
            out.append(f"WARNING: LS_k formula {self.formula!r}: PTR neighbour condition is UNPROVEN ({nb.reason}); "
                       "the formula is NOT used: PTR distance = gamma_exact from dpalg's exact LS_k")
        else:
            out.append(f"WARNING: LS_k formula {self.formula!r}: PTR neighbour condition is UNPROVEN ({nb.reason}); "
                       "accepted in non-strict mode")
        if self.query.kind == "function":
            out.extend(self._promise_notes())
        elif self.has_exact_ls:
            if self.uses_formula:
                out.append("PTR distance = min(gamma_F, gamma_exact): dpalg's exact LS_k of the query bounds it too, "
                           "so a formula below the true LS_k cannot leak")
        else:
            out.append("WARNING: F >= LS_k is not proven: it is the user's promise (dpalg has no exact LS_k for this query)")
        return tuple(out)

    def _promise_notes(self) -> tuple[str, ...]:
        name = self.query.name
        count = sum(math.comb(BRUTE_GRID + s - 1, s) for s in range(BRUTE_MAX_N + 1))
        return (
            f"WARNING: user promise: F(k, n) >= LS_k of {name!r} for every dataset, with F = {self.formula!r} "
            f"(not proven; at construction a brute force over the {count} multisets of at most {BRUTE_MAX_N} values "
            f"on a {BRUTE_GRID}-point grid of the clip range, k <= {BRUTE_MAX_K}, found no counterexample)",
            "PTR distance = gamma_F alone (dpalg has no exact LS_k of a user function): "
            "the (eps, delta) claim holds if the user promise holds",
        )

    def evaluate(self, k: int, n: int) -> sympy.Expr:
        """F_k for a dataset with n values, exactly (sympy)."""
        from dpalg.mechanisms._common.ls_formula import exact_at

        return exact_at(self._verdict().expr, k, n)

    def values_at(self, n: int, cap: int) -> npt.NDArray[np.float64]:
        """[F(0, n), …, F(cap, n)] in float64 (+inf where not finite); the same work for every n, never raises."""
        from dpalg.sensitivity._ptr_condition import evaluate_formula

        return evaluate_formula(self._verdict().expr, n, cap)

    def distance(self, values: npt.NDArray[np.float64], bound: Fraction, relation: Relation, cap: int) -> int:
        """min(γ_F, γ_exact): γ_F = min{k ≤ cap : F_k > bound} (cap if none).

        F is evaluated at every k ≤ cap and, for a catalog query, the exact LS_k
        profile is computed to cap, on every call (no early exit on a private
        quantity); γ_exact = min{k : LS_k > bound} capped at min(n + 2, cap)
        (:func:`~dpalg.sensitivity.distance_to_instability`). Never raises on data.
        """
        n = int(values.size)
        b = float_at_most(bound)
        gamma = first_above(self.values_at(n, cap), b, cap)  # evaluated on every run: constant work
        if self.has_exact_ls:
            if not self.uses_formula:
                gamma = cap  # γ_F may jump by more than 1 between neighbours: only γ_exact is used
            gamma = min(gamma, distance_to_instability(self.query, values, b, relation, cap=cap))
        return gamma

    @property
    def uses_formula(self) -> bool:
        """Whether γ_F enters the distance: only when the neighbour condition is proven.

        An unproven neighbour condition means γ_F may not be 1-Lipschitz, and then
        neither is min(γ_F, γ_exact) (e.g. ``(k + 1)/100 + 1000*floor(n/500)`` gives
        γ_F = 50 at n = 499 and 0 at n = 500, beyond the grid search). For a catalog
        query the formula is then ignored (γ = γ_exact, which is private on its own);
        without an exact LS_k it is the user's promise (``strict=True`` refuses it).
        """
        return self.neighbour_check().status == "proven" or not self.has_exact_ls


def brute_force_datasets(
    value: Callable[[npt.NDArray[np.float64]], float], lower: Fraction, upper: Fraction
) -> tuple[tuple[float, ...], list[dict[tuple[int, ...], float]]]:
    """LS_k under add/remove of a statistic on every small public multiset (a lower bound on the true LS_k).

    The grid is ``BRUTE_GRID`` equally spaced points of [lower, upper] (both
    bounds included); datasets are the multisets of at most ``BRUTE_MAX_N``
    grid points (as index tuples). ``ls[0][x] = max |value(x) − value(x′)|``
    over x′ = x with one value removed or one grid value added;
    ``ls[k][x] = max(ls[k−1][y] : y = x or a neighbour of x)`` for
    ``|x| <= BRUTE_MAX_N − k`` (so every y it reaches has ls[k−1] defined). The
    neighbours x′ range over grid values only, so ls[k] is a lower bound on LS_k.

    Returns:
        the grid and ``[ls[0], …, ls[BRUTE_MAX_K]]``.
    """
    points = sorted({lower + (upper - lower) * Fraction(j, BRUTE_GRID - 1) for j in range(BRUTE_GRID)})
    grid = tuple(dict.fromkeys(float(clip_inside(np.array([float(p)]), lower, upper)[0]) for p in points))
    g = len(grid)
    values: dict[tuple[int, ...], float] = {}
    for size in range(BRUTE_MAX_N + 2):
        for ms in itertools.combinations_with_replacement(range(g), size):
            values[ms] = value(np.array([grid[i] for i in ms], dtype=np.float64))

    def neighbours(ms: tuple[int, ...]) -> list[tuple[int, ...]]:
        removed = [ms[:i] + ms[i + 1 :] for i in range(len(ms)) if i == 0 or ms[i] != ms[i - 1]]
        added = [tuple(sorted((*ms, j))) for j in range(g)]
        return removed + added

    base = {ms: max(abs(v - values[nb]) for nb in neighbours(ms)) for ms, v in values.items() if len(ms) <= BRUTE_MAX_N}
    ls = [base]
    for k in range(1, BRUTE_MAX_K + 1):
        prev = ls[-1]
        ls.append({ms: max([prev[ms], *(prev[nb] for nb in neighbours(ms))])
                   for ms in prev if len(ms) <= BRUTE_MAX_N - k})  # fmt: skip
    return grid, ls
