"""Privately bounded local sensitivity (seed 000, Theorem 1) as a general node.

An ε₁-DP step releases noisy counts; from them a bound ĝ on LS(f, x) is built
that holds with probability ≥ 1 − δ; f(x) is then released on a lattice with
exact discrete Laplace noise scaled to ĝ/ε₂. The whole is (ε₁ + ε₂, δ)-DP.
The proof is in ``docs/mechanisms/bounded_ls.md``.

How ĝ is stated. Every private count ``name`` yields two *bound symbols*,
``name_lo`` and ``name_hi``, with ``name_lo <= name <= name_hi`` except with a
probability accounted in δ. The user writes ĝ as a sympy expression (or a
Python function) of these symbols such that

1. at ``name_lo = name_hi = name`` (the true counts) it is ``>= LS(f, x)``
   (the user's claim, documented in the node's repr and certificate), and
2. it is non-decreasing in every ``_hi`` symbol and non-increasing in every
   ``_lo`` symbol on the stated domain: then plugging covering bounds in can only
   increase it. :func:`check_monotone` proves (2) with sympy where it can, and
   searches a grid for a counterexample; refuted expressions are refused,
   unproven ones are recorded as a note of the privacy claim (and refused with
   ``strict=True``).

The seed's code draws float Laplace noise (Mironov 2012 applies) and uses the
tail ``P[|Z| >= T] = e^{-T a}``, which is not the discrete Laplace tail. Here the
width of each interval comes from the exact tail ``P[Z >= m] = p^m / (1 + p)``,
``p = e^{-1/t}``, evaluated at a rigorous rational upper bound of ``p``
(:func:`tail_margin`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument, Unsupported, optional_name_param
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import ColumnUse, Dataset, Neighbouring, Relation
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import laplace_q, up_text
from dpalg.mechanisms.bounded_ls._accuracy import lattice_release_error
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms.bounded_ls._lattice import exp_neg_upper, lattice_release, lattice_terms, round_up_bits, tail_margin
from dpalg.mechanisms.bounded_ls._monotone import (
    _VALUE_SLACK,
    BoundFunction,
    MonotoneCheck,
    _approximate,
    _check_expr,
    _evaluate,
    check_monotone,
    is_expression,
    parse_expression,
)
from dpalg.mechanisms._common.params import positive_param, relation_param, unit_interval_param
from dpalg.mechanisms._common.user_function import (
    FAILED,
    as_exact,
    call_quietly,
    describe,
    discover_columns,
    is_recorded_stub,
    quiet,
    refuse_result,
)
from dpalg.noise import AbstractRandomness, discrete_laplace


if TYPE_CHECKING:  # sympy is imported only where a string expression is parsed (cold start)
    import sympy

__all__ = [
    "BoundFunction",
    "BoundedLS",
    "MonotoneCheck",
    "NoisyCount",
    "ValueFunction",
    "check_monotone",
    "exp_neg_upper",
    "lattice_release",
    "lattice_terms",
    "parse_expression",
    "round_up_bits",
    "tail_margin",
]

ValueFunction = Callable[[Dataset], Fraction]


# --- the private counts -------------------------------------------------------------


def _name(owner: str, field: str, value: object) -> str:
    if not isinstance(value, str) or not value.isidentifier() or value.endswith(("_lo", "_hi")):
        raise InvalidArgument(owner, field, value, "must be a Python identifier not ending in _lo/_hi")
    return value


def _count_name(value: str) -> str:
    return _name("NoisyCount", "name", value)


def _count_where(value: str | None) -> str | None:
    return optional_name_param("NoisyCount", "where", value, "must be None (all rows) or a column name")


@final
@attrs.frozen
class NoisyCount:
    """A count released with discrete Laplace noise as input to a local-sensitivity bound.

    Args:
        name: the count's name; the bound expression uses ``name_lo`` and ``name_hi``.
        where: ``None`` counts all rows; a column name counts the rows whose value
            there is non-zero and not missing (NaN/None rows are not counted).

    The count has sensitivity 1 under add/remove and under substitution of one row.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> NoisyCount("a", where="clicked").value(as_dataset({"clicked": [1, 0, 1]}))
        2
    """

    name: str = attrs.field(converter=_count_name)
    where: str | None = attrs.field(default=None, converter=_count_where)

    def columns(self) -> tuple[ColumnUse, ...]:
        """The column the count reads (the public schema), if any."""
        return () if self.where is None else (ColumnUse(self.where, "numeric"),)

    def value(self, data: Dataset) -> int:
        """The exact count (private: used only inside a release)."""
        if self.where is None:
            return data.n_rows
        column = data.numeric(self.where)
        return int(np.count_nonzero(~np.isnan(column) & (column != 0)))


# --- the node -----------------------------------------------------------------------


def _counts(value: Sequence[NoisyCount]) -> tuple[NoisyCount, ...]:
    counts = tuple(value)
    if not counts:
        raise InvalidArgument("BoundedLS", "counts", counts, "must contain at least one NoisyCount")
    for i, c in enumerate(counts):
        if not isinstance(c, NoisyCount):
            raise InvalidArgument("BoundedLS", f"counts[{i}]", type(c).__name__, "must be a NoisyCount")
    names = [c.name for c in counts]
    if len(set(names)) != len(names):
        raise InvalidArgument("BoundedLS", "counts", names, "must have distinct names")
    return counts


def _domain(value: Mapping[str, int] | tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    items = tuple(value.items()) if isinstance(value, Mapping) else tuple(value)
    for name, limit in items:
        if not isinstance(name, str) or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgument("BoundedLS", "domain", (name, limit), "must map count names to int lower limits >= 0")
    return tuple(sorted(items))


def _bl_eps1(value: ExactLike) -> Fraction:
    return positive_param("BoundedLS", "epsilon_bound", value)


def _bl_eps2(value: ExactLike) -> Fraction:
    return positive_param("BoundedLS", "epsilon_release", value)


def _bl_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("BoundedLS", "delta", value)


def _bl_gs(value: ExactLike | None) -> Fraction | None:
    return None if value is None else positive_param("BoundedLS", "global_sensitivity", value)


def _bl_relation(value: str) -> Relation:
    return relation_param("BoundedLS", value)


def _bl_strict(value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument("BoundedLS", "strict", value, "must be a bool")
    return value


@functools.lru_cache(maxsize=256)
def _margin_cached(scale: Fraction, delta: Fraction) -> int:
    return tail_margin(scale, delta)


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str, names: tuple[str, ...], field: str) -> sympy.Expr:
    return parse_expression(text, names, "BoundedLS", field)


@functools.lru_cache(maxsize=256)
def _check_cached(
    bound: str | BoundFunction, used: tuple[str, ...], lower: tuple[tuple[str, int], ...], allowed: tuple[str, ...]
) -> MonotoneCheck:
    expr = parse_expression(bound, allowed, "BoundedLS", "bound") if isinstance(bound, str) else bound
    return _check_expr(expr, used, dict(lower))


def _bl_value(value: str | ValueFunction) -> str | ValueFunction:
    if isinstance(value, str):
        return value.strip()
    if not callable(value):
        raise InvalidArgument("BoundedLS", "value", type(value).__name__, "must be an expression string in the count names or a function Dataset -> Fraction")
    return value


def _bl_value_reads(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not all(isinstance(c, str) and c for c in value):
        raise InvalidArgument("BoundedLS", "value_reads", value, "must be a tuple of column names (the columns the value function reads)")
    return tuple(dict.fromkeys(value))


def _float(x: Fraction) -> float:
    """``x`` as a float; beyond the float range ``±inf`` (post-processing, never an OverflowError)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _bl_bound(value: str | BoundFunction) -> str | BoundFunction:
    if isinstance(value, str):
        return value.strip()
    if not callable(value):
        raise InvalidArgument("BoundedLS", "bound", type(value).__name__, "must be an expression string in <count>_lo/<count>_hi or a function of them")
    return value


@final
@attrs.frozen
class BoundedLS(AbstractPrimitive[ApproxDP]):
    """Release f(x) with noise scaled to a privately computed bound ĝ ≥ LS(f, x).

    Step 1 (ε₁ = ``epsilon_bound``): each of the J ``counts`` is released with
    discrete Laplace noise of scale ``J/ε₁``; its interval is ``noisy ± w`` with
    ``w = tail_margin(J/ε₁, δ/S)`` where S is the number of interval ends in use
    (the symbols of ``bound`` plus the lower end of every count in ``domain``),
    then clamped to ``[0, ∞)``. Step 2: if every count's lower end meets its
    ``domain`` limit, ĝ = ``bound`` at the interval ends (capped by
    ``global_sensitivity``); otherwise ĝ = ``global_sensitivity`` (bail out), or
    the output is ``BOTTOM`` when none is given. Step 3 (ε₂ = ``epsilon_release``):
    f(x) is released by :func:`lattice_release` for sensitivity ĝ (plus
    :meth:`value_slack` when f may be irrational).

    Args:
        value: f, a sympy expression in the count names (evaluated exactly on the
            true counts; an irrational value within ``10**-60``, covered by
            :meth:`value_slack`) or a function ``Dataset -> Fraction`` computing f
            exactly. Where f is undefined (``a/b`` at ``b = 0``; an evaluation
            that overflows; a function that raises any :class:`Exception` or
            returns something that is not a finite number) the value is 0; the
            user's LS claim (and ``global_sensitivity``) must cover that
            convention. A function is tried at construction on a public trial
            dataset and refused if it fails there.
        bound: ĝ, a sympy expression (or a function of a mapping) in the symbols
            ``<count>_lo`` and ``<count>_hi``. The user's claim: at the true counts
            (``_lo = _hi = count``) it is at least LS(f, x) whenever every count
            meets its domain limit.
        counts: the :class:`NoisyCount` inputs.
        epsilon_bound: ε₁ > 0 for the counts.
        epsilon_release: ε₂ > 0 for the release of f.
        delta: δ in (0, 1): the probability that some interval misses its count.
        domain: lower limits of counts (``{"b": 2}``) under which ``bound`` is valid.
        global_sensitivity: a public GS of f, used to cap ĝ and on bail-out.
        strict: refuse a bound whose monotonicity sympy cannot prove.
        relation: ``"add_remove"`` (default) or ``"substitution"`` (LS and the
            counts' sensitivity 1 refer to this relation).
        value_reads: the columns a value *function* reads besides the counts'
            (checked before the charge); default: those it asks for on the
            public trial dataset.

    Raises:
        InvalidArgument: a parameter is invalid, ``bound`` uses an unknown symbol,
            its monotonicity is refuted (with a counterexample), or it is
            unproven under ``strict=True``; a value or bound function raises or
            does not return a finite number on its public trial input.

    Privacy guarantee:
        (ε₁ + ε₂, δ)-DP under ``relation`` for one row (seed 000, Theorem 1).
        The counts compose to ε₁-DP (discrete Laplace, sensitivity 1, scale
        J/ε₁). With probability ≥ 1 − δ every interval end in use covers its
        count (exact discrete Laplace tail, union bound); then monotonicity and
        the user's claim give ĝ ≥ LS(f, x), and the lattice release is ε₂-DP for
        every neighbour x'. Exact cost: ``ApproxDP(ε₁ + ε₂, δ)``.

    Examples:
        >>> node = BoundedLS("a/b", "1/(b_lo - 1)", (NoisyCount("a", where="in_a"), NoisyCount("b")),
        ...                  epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
        >>> node.cost()
        ApproxDP(1, '1/1000000')
        >>> node.privacy().notes[0]
        'monotonicity of the LS bound: proven: non-increasing in b_lo: proven'
    """

    value: str | ValueFunction = attrs.field(converter=_bl_value)
    bound: str | BoundFunction = attrs.field(converter=_bl_bound)
    counts: tuple[NoisyCount, ...] = attrs.field(converter=_counts)
    epsilon_bound: Fraction = attrs.field(converter=_bl_eps1)
    epsilon_release: Fraction = attrs.field(converter=_bl_eps2)
    delta: Fraction = attrs.field(converter=_bl_delta)
    domain: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=_domain)
    global_sensitivity: Fraction | None = attrs.field(default=None, converter=_bl_gs)
    strict: bool = attrs.field(default=False, converter=_bl_strict)
    relation: Relation = attrs.field(default="add_remove", converter=_bl_relation)
    value_reads: tuple[str, ...] = attrs.field(default=(), converter=_bl_value_reads)

    def __attrs_post_init__(self) -> None:
        names = tuple(c.name for c in self.counts)
        for name, _ in self.domain:
            if name not in names:
                raise InvalidArgument("BoundedLS", "domain", name, f"must name a count; counts: {sorted(names)}")
        self._value_expr()
        self._try_functions()
        result = self._monotone()
        if result.status == "refuted":
            raise InvalidArgument("BoundedLS", "bound", self.bound, f"is not monotone as required; counterexample: {result.counterexample}")
        if result.status == "unproven" and self.strict:
            raise InvalidArgument("BoundedLS", "bound", self.bound, f"monotonicity is unproven and strict=True: {result.note()}")

    def _try_functions(self) -> None:
        """Try a value or bound *function* on public synthetic input; refuse it if it fails there."""
        if isinstance(self.value, str):
            if self.value_reads:
                raise InvalidArgument("BoundedLS", "value_reads", self.value_reads, "must be empty for an expression value")
        elif not is_recorded_stub(self.value):
            fixed = [c.where for c in self.counts if c.where is not None]
            read, result = discover_columns(self.value, self.value_reads, "BoundedLS", "value", fixed)
            refuse_result("BoundedLS", "value", self.value, result)
            object.__setattr__(self, "value_reads", read)  # checked before the charge
        if not isinstance(self.bound, str) and not is_recorded_stub(self.bound):
            limits = dict(self.domain)
            point: dict[str, Fraction] = {}
            for c in self.counts:  # a public point inside the domain with lo < hi
                point[f"{c.name}_lo"] = Fraction(limits.get(c.name, 0) + 4)
                point[f"{c.name}_hi"] = Fraction(limits.get(c.name, 0) + 12)
            try:
                with quiet():
                    result = self.bound(point)
            except Exception as exc:  # noqa: BLE001 - user code; only its type is shown
                raise InvalidArgument(
                    "BoundedLS", "bound", describe(self.bound),
                    f"raised {type(exc).__name__} at the public trial point {{{', '.join(f'{k}: {v}' for k, v in point.items())}}}: "
                    "it must return a finite number there",
                ) from None  # fmt: skip
            refuse_result("BoundedLS", "bound", self.bound, result)

    def columns(self) -> tuple[ColumnUse, ...]:
        """The public schema: the counts' columns (numeric) and the value function's reads."""
        uses = [use for c in self.counts for use in c.columns()] + [ColumnUse(r, "key") for r in self.value_reads]
        return tuple(dict.fromkeys(uses))

    # parsed expressions and the check are cached by value (the node holds only its parameters)
    def _value_expr(self) -> sympy.Expr | None:
        if not isinstance(self.value, str):
            return None
        return _parse_cached(self.value, tuple(c.name for c in self.counts), "value")

    def _bound_expr(self) -> sympy.Expr | BoundFunction:
        if not isinstance(self.bound, str):
            return self.bound
        return _parse_cached(self.bound, tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi")), "bound")

    def _monotone(self) -> MonotoneCheck:
        limits = dict(self.domain)
        used = self.symbols_used()
        return _check_cached(self.bound if isinstance(self.bound, str) else self._bound_expr(), used,
                             tuple((s, limits.get(s[:-3], 0)) for s in used),
                             tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi")))

    def symbols_used(self) -> tuple[str, ...]:
        """The bound symbols ĝ depends on (all of them for a Python function)."""
        expr = self._bound_expr()
        if isinstance(self.bound, str):
            assert is_expression(expr)
            return tuple(sorted(str(sym) for sym in expr.free_symbols))
        return tuple(f"{c.name}_{side}" for c in self.counts for side in ("lo", "hi"))

    def interval_ends(self) -> tuple[str, ...]:
        """The interval ends whose coverage δ pays for (bound symbols and domain lower ends)."""
        ends = set(self.symbols_used()) | {f"{name}_lo" for name, _ in self.domain}
        return tuple(sorted(ends))

    def noise_scale(self) -> Fraction:
        """The discrete Laplace scale of each count, J/ε₁."""
        return len(self.counts) / self.epsilon_bound

    def margin(self) -> int:
        """The half-width w of each interval (exact tail, δ split over the ends in use)."""
        return _margin_cached(self.noise_scale(), self.delta / max(1, len(self.interval_ends())))

    @property
    def neighbouring(self) -> Neighbouring:
        """One row under ``relation``."""
        return Neighbouring(None, self.relation)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε₁ + ε₂, δ), from the parameters only; the monotonicity check is a note."""
        return PrivacyClaim(
            ApproxDP(self.epsilon_bound + self.epsilon_release, self.delta),
            "privately bounded local sensitivity (seed 000 Thm 1): eps1-DP discrete Laplace counts, "
            "exact-tail intervals (union bound, delta), discrete Laplace on a lattice scaled to the bound / eps2",
            (
                ("epsilon_bound", str(self.epsilon_bound)),
                ("epsilon_release", str(self.epsilon_release)),
                ("delta", str(self.delta)),
                ("counts", ", ".join(c.name for c in self.counts)),
                ("interval_ends", ", ".join(self.interval_ends())),
                ("margin", str(self.margin())),
                ("relation", self.relation),
            ),
            (self._monotone().note(),),
        )

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, ls_bound: ExactLike | None = None) -> Accuracy:
        """The (1 − ``alpha``) error of the release given its private bound ĝ ≤ G, from the parameters only.

        G is ``ls_bound`` (a public bound on the step-1 bound ĝ) or the
        ``global_sensitivity`` (which caps ĝ); the error is then at most
        (Ĝ/ε₂)(1 + 2^-20/ε₂)·ln((1 + 2^-20)/α) + Ĝ/(ε₂·2^21), Ĝ = G rounded up
        to 8 bits: the discrete Laplace lattice release of seed 000 Thm 1.
        Proof in :mod:`dpalg.mechanisms.bounded_ls._accuracy`. Without either the
        statement is conditional (``error`` None); without a global
        sensitivity it holds when the node releases (no ⊥).
        """
        return bounded_ls_accuracy(self, alpha, ls_bound)

    def bound_from_noisy(self, noisy: Mapping[str, int]) -> Fraction | None:
        """ĝ from the noisy counts (post-processing of the ε₁ step); None: nothing may be released.

        Intervals are ``noisy ± w`` clamped to ``[0, ∞)``; if a count's lower end
        misses its domain limit, or ĝ is undefined, the global sensitivity is used.
        """
        w = self.margin()
        ends: dict[str, Fraction] = {}
        for c in self.counts:
            ends[f"{c.name}_lo"] = Fraction(max(noisy[c.name] - w, 0))
            ends[f"{c.name}_hi"] = Fraction(max(noisy[c.name] + w, 0))
        g: Fraction | None = None
        if all(ends[f"{name}_lo"] >= limit for name, limit in self.domain):
            g = _evaluate(self._bound_expr(), {s: ends[s] for s in self.symbols_used()})
        if g is None or g < 0:
            return self.global_sensitivity
        if self.global_sensitivity is not None:
            return min(g, self.global_sensitivity)
        return g

    def _f(self, data: Dataset, counts: Mapping[str, int]) -> Fraction:
        """f(x), total: where f is undefined or fails, the public value 0 (the documented convention)."""
        expr = self._value_expr()
        if expr is not None:
            import sympy

            try:
                value = expr.subs({sympy.Symbol(k): sympy.Integer(v) for k, v in counts.items()})
                if not value.is_finite or not value.is_real:
                    return Fraction(0)  # f undefined (e.g. a zero count): a fixed public value
                return _approximate(value)  # exact, or within _VALUE_SLACK (see value_slack)
            except Exception:  # noqa: BLE001 - an evaluation that overflows: undefined, the same convention
                return Fraction(0)
        assert not isinstance(self.value, str)
        with quiet():
            result = call_quietly(self.value, data)  # type: ignore[arg-type]
        exact = None if result is FAILED else as_exact(result)
        return Fraction(0) if exact is None else exact

    def check_backend(self, data: Dataset) -> None:
        """Refuse a Python ``value`` function on a Spark DataFrame (it reads the type of ``data`` only, never a row).

        A function of the whole :class:`~dpalg.data.Dataset` would pull every
        column it reads to the driver, which a plan on Spark must not do; an
        expression ``value`` (a formula in the counts) runs on the executors.
        The runner calls it before the charge (with the schema check); the
        release calls it again, and it depends on the data's type alone.

        Raises:
            Unsupported: naming the node, the function and the alternatives.
        """
        from dpalg.data._spark import SparkSource  # imports no pyspark

        if not isinstance(self.value, str) and isinstance(data.source, SparkSource):
            raise Unsupported(
                f"BoundedLS: value={describe(self.value)!r} is a Python function, which is not supported on a Spark "
                "DataFrame (it would collect the data to the driver): give value as an expression in the counts, "
                "or run on local data (e.g. df.toPandas())"
            )

    def value_slack(self) -> Fraction:
        """How much the release widens ĝ to cover the numerical evaluation of f.

        0 when f is a Python function (exact by contract) or a rational function
        of the counts (always evaluated exactly); otherwise f(x) may be irrational
        and is evaluated within ``10**-60`` on every dataset, so two neighbours'
        evaluated values differ by at most ``ĝ + 2·10**-60``. The slack depends on
        the expression only, never on the data.
        """
        expr = self._value_expr()
        if expr is None or expr.is_rational_function(*sorted(expr.free_symbols, key=str)):
            return Fraction(0)
        return 2 * _VALUE_SLACK

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy f(x) as a float (lattice point), or ``BOTTOM`` on bail-out without GS.

        Raises:
            Unsupported: ``value`` is a Python function and ``data`` a Spark
                DataFrame (before any row is read; see :meth:`check_backend`).
        """
        self.check_backend(data)
        true = {c.name: c.value(data) for c in self.counts}
        noise = discrete_laplace(self.noise_scale(), size=len(self.counts), rng=rng).tolist()
        g = self.bound_from_noisy({c.name: true[c.name] + int(z) for c, z in zip(self.counts, noise)})
        if g is None:
            from dpalg._bottom import BOTTOM

            return BOTTOM
        (out,) = lattice_release([self._f(data, true)], [g + self.value_slack()], self.epsilon_release, rng)
        return _float(out)


def bounded_ls_accuracy(node: BoundedLS, alpha: ExactLike, ls_bound: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`BoundedLS` given its private bound ĝ <= ``ls_bound`` (proof: :mod:`dpalg.mechanisms.bounded_ls._accuracy`)."""
    owner = "BoundedLS.accuracy"
    a = alpha_param(owner, alpha)
    eps2 = node.epsilon_release
    noise = f"discrete Laplace scaled to the private bound g^ / {up_text(eps2)} (lattice 2**-20 of it)"
    gs = node.global_sensitivity
    given: Fraction | None = None
    if ls_bound is not None:
        given = to_fraction(ls_bound, owner=owner, field="ls_bound")
        if given < 0:
            raise InvalidArgument(owner, "ls_bound", given, "must be >= 0")
    cap = given if gs is None else (gs if given is None else min(given, gs))
    count = len(node.counts)
    e = laplace_q(node.noise_scale(), a / (2 * count))
    how = (f"each noisy count is within {e} of its count w.p. >= 1 - alpha/2, so g^ <= bound at count_lo - {e + node.margin()}, "
           f"count_hi + {e + node.margin()} (monotone); use accuracy(alpha/2, ls_bound=that) for 1 - alpha in all")
    conditions: list[str] = []
    notes: list[str] = ["error <= (G/eps2)*ln(1/alpha) (+2**-20 relative) for g^ <= G, on top of rounding to 2**-21 G/eps2"]
    if gs is None:
        conditions.append("it releases (no ⊥)")
        notes.append("⊥ when a count's lower end misses its domain limit or the bound is undefined")
    if cap is None:
        return Accuracy(a, None, "absolute", noise, False, " and ".join(["the private bound g^ is at most G", *conditions]),
                        (*notes, "pass ls_bound=G for a number", how))
    if given is not None and (gs is None or given < gs):
        conditions.insert(0, f"the private bound g^ is at most {up_text(given)}")
        notes.append(how)
    slack = node.value_slack()
    error = lattice_release_error(cap + slack, eps2, a) + (_VALUE_SLACK if slack else 0)
    return Accuracy(a, error, "absolute", noise, False, " and ".join(conditions) or None, tuple(notes))
