"""Global-sensitivity mechanisms: Laplace (pure DP) and Gaussian (zCDP) nodes.

Both release integers or lattice points with *exact* discrete noise
(Canonne–Kamath–Steinke 2020); real statistics are computed in fixed point on a
lattice of multiples of ``2**k`` so that the declared sensitivity holds exactly
(Casacuberta et al. 2022), and then released as lattice points (Mironov 2012).

**Variance and standard deviation** (``Query.variance`` / ``Query.stdev``, row
level, ``| Clip(l, u)``). Three integer statistics, each with its own noise and a
third of the budget (ε/3 each for :class:`Laplace`, ρ/3 each for :class:`Gaussian`):

=================  ==========================================  ==============  ==============
term               value (lattice units)                       add/remove      substitution
=================  ==========================================  ==============  ==============
``count``          n, the present values                       1               1
``centred_sum``    S1 = Σ (t − c), units ``2**k``               H               U − L
``centred_squares``S2 = Σ round((t − c)²/2**s), ``2**(2k+s)``  Q               Q
=================  ==========================================  ==============  ==============

where ``t = round(clip(x)/2**k)`` in ``[L, U] = [floor(l/2**k), ceil(u/2**k)]`` is the
value's lattice term, ``c = floor((L + U)/2)`` the lattice midpoint, ``H = max(c − L,
U − c)`` and ``Q = round(H²/2**s)`` the largest square term (:mod:`dpalg.data._fixed_point`:
the square is of the integer ``t − c``, exact, and the rounding is monotone, so
every square term lies in ``[0, Q]`` for every value). Adding or removing a row
adds or removes one ``t − c`` and one square term (a missing value adds neither and
the count ignores it); substitution replaces them (or drops them, for a value that
becomes missing: ``|t − c| <= H <= U − L``, a square term in ``[0, Q]`` against 0),
so the bounds above hold for every dataset. Centring on ``c`` makes the square
term's bound about ``((u − l)/2)²`` rather than ``max(l², u²)``.

Privacy: :class:`Laplace` adds discrete Laplace noise of scale Δ/(ε/3) to each
term, ε/3-DP each (Canonne–Kamath–Steinke 2020; the discrete analogue of
Dwork–Roth 2014 Thm 3.6), ε-DP together by basic composition (Dwork–Roth Thm 3.16).
:class:`Gaussian` adds discrete Gaussian noise of variance parameter σ² =
Δ²/(2ρ/3) to each, (ρ/3)-zCDP each (Canonne–Kamath–Steinke 2020 Thm 4 / Thm 14),
ρ-zCDP together (Bun–Steinke 2016 Lemma 2.3). The rest is post-processing
(Dwork–Roth Prop. 2.1): with ñ the noisy count, ``var = S̃2·2**(2k+s)/ñ −
(S̃1·2**k/ñ)²`` clamped to ``[0, ((u − l)/2)²]`` (Popoviciu's bound on the variance
of values in ``[l, u]``), ``stdev = sqrt(var)``; a noisy count ``ñ <= 0`` releases
0 (the value of empty data). The exponents: ``k`` as for a mean, from ``(u − l)/2``
and ε/3 (or ``granularity``); ``s >= 0`` puts the square lattice ``2**(2k+s)`` about
``2**-20`` of the squares' noise scale ``((u − l)/2)²/(ε/3)``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal, final

import math

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, LatticeSum, Neighbouring, Reductions, Relation, SumSpec, as_dataset, as_reductions
from dpalg.data._grouping import ReleasedGroups
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._node import QUIET_DEFAULT, AbstractPrimitive, PrivacyClaim
from dpalg.measures import ZCDP, PLDPart, PureDP
from dpalg.mechanisms._common.accuracy import up_text
from dpalg.mechanisms._common.params import floor_log2, granularity_param, positive_param, relation_param
from dpalg.mechanisms._common.user_level import check_user_level
from dpalg.mechanisms.global_noise._accuracy import noise_quantile, noise_text, sqrt_up as _sqrt_up
from dpalg.mechanisms.global_noise._grouped import grouped_release, supports_grouped
from dpalg.mechanisms.global_noise._user import NoiseTerm, auto_k as _auto_k, lattice_centre, mean_bounds, user_noise_terms
from dpalg.noise._fixed_point import square_term_bound
from dpalg.noise._gaussian import MAX_GAUSSIAN_SIGMA2
from dpalg.noise._laplace import MAX_LAPLACE_SCALE
from dpalg.noise import (
    AbstractRandomness,
    clipped_sum_sensitivity,
    prf_secret,
    discrete_gaussian,
    discrete_laplace,
)
from dpalg.queries import Query
from dpalg.queries._query import refuse_user_function

__all__ = ["Gaussian", "Laplace", "NoiseTerm", "SUPPORTED_GLOBAL", "counts_nonnegative", "noise_terms", "pld_part"]

SUPPORTED_GLOBAL = ("count", "sum", "mean", "histogram", "count_distinct", "user_count", "variance", "stdev")
#: kinds released from a noisy count, centred sum and centred sum of squares (row level)
MOMENT_KINDS = ("variance", "stdev")
#: kinds released at user level (with a contribution bound per user)
USER_LEVEL_GLOBAL = ("count", "sum", "mean", "histogram")


def _check_query(owner: str, query: Query) -> Query:
    if not isinstance(query, Query):
        raise InvalidArgument(owner, "query", type(query).__name__, "must be a dpalg Query")
    refuse_user_function(owner, query)
    if query.kind not in SUPPORTED_GLOBAL:
        raise InvalidArgument(
            owner, "query", query, f"kind {query.kind!r} has no useful global sensitivity; supported: {SUPPORTED_GLOBAL} "
            "(use ProposeTest, SmoothBound, ExponentialQuantile or ShiftedInverse)",
        )
    if query.kind in ("sum", "mean") and not query.per_user_totals:
        query.require_bounds(owner)
    if query.kind in MOMENT_KINDS:
        query.require_bounds(owner)
    if query.kind == "histogram" and query.keys is None:
        raise InvalidArgument(owner, "query", query, "needs public keys; for an unknown key set use StableHistogram")
    if query.kind in ("sum", "mean") and query.user is not None and query.user_bounded and not query.per_user_totals:
        query.require_bounds(owner)  # k rows per user, each clipped: the row clip is what bounds them
    return query


def _integer_sensitivity(query: Query, relation: Relation) -> tuple[Fraction, Fraction]:
    """(L1, L2²) sensitivity of the integer-valued queries (counts, histograms)."""
    if query.kind == "histogram" and relation == "substitution":
        return Fraction(2), Fraction(2)  # one row moves between two keys
    return Fraction(1), Fraction(1)


def _integer_value(query: Query, data: Reductions) -> int | dict[str | int, int]:
    match query.kind:
        case "count":
            return data.count(query.column) if query.column is not None else data.n_rows
        case "count_distinct":
            assert query.column is not None
            return data.count_distinct(query.column)
        case "user_count":
            assert query.user is not None
            return data.unit_count(query.user)  # missing ids are no user (the data policy)
        case "histogram":
            assert query.column is not None and query.keys is not None
            counts = data.key_counts(query.column, query.keys).tolist()  # missing or unlisted keys count nowhere
            return {k: int(c) for k, c in zip(query.keys, counts)}
        case _:
            raise AssertionError(query.kind)


def _lattice_sum(query: Query, data: Reductions, k: int) -> LatticeSum:
    lower, upper = query.require_bounds("sum")
    assert query.column is not None
    return data.clipped_sums([SumSpec(query.column, lower, upper, k)])[0]


def _sum_sensitivity(query: Query, relation: Relation, k: int) -> Fraction:
    """Sensitivity of the fixed-point sum in lattice units (an exact integer).

    ``clipped_sum_sensitivity`` is in real units (a multiple of ``2**k``).
    """
    lower, upper = query.require_bounds("sum")
    lattice = clipped_sum_sensitivity(lower, upper, k, relation) / Fraction(2) ** k
    assert lattice.denominator == 1
    return lattice


def _real_sensitivity(query: Query, relation: Relation) -> Fraction:
    lower, upper = query.require_bounds("sum")
    # substitution can also swap a value for a missing one (a 0 term): max(u, 0) - min(l, 0)
    zero = Fraction(0)
    return max(upper, zero) - min(lower, zero) if relation == "substitution" else max(abs(lower), abs(upper))


def _noise(kind: Literal["laplace", "gaussian"], param: Fraction, size: int, rng: AbstractRandomness) -> list[int]:
    if param == 0:
        return [0] * size
    draw = discrete_laplace(param, size=size, rng=rng) if kind == "laplace" else discrete_gaussian(param, size=size, rng=rng)
    return [int(v) for v in draw.tolist()]


def noise_terms(node: Laplace | Gaussian, data: Dataset, secret: bytes = bytes(32)) -> list[NoiseTerm]:
    """The integer statistics of ``node`` on ``data`` and their noise parameters.

    ``secret`` keys the choice of rows under ``MaxRowsPerUser``/``MaxKeysPerUser``
    (a fresh one per release; the parameters never depend on it).
    """
    query, relation = node.query, node.relation
    if query.user is not None and query.kind != "user_count":
        laplace_node = isinstance(node, Laplace)
        return user_noise_terms(query, laplace_node, node.epsilon if isinstance(node, Laplace) else node.rho, node.granularity, data, secret)
    reductions = as_reductions(data)  # row level: one exact pass through the reductions seam
    laplace = isinstance(node, Laplace)
    budget = node.epsilon if isinstance(node, Laplace) else node.rho

    def param_for(l1: Fraction, l2sq: Fraction, share: Fraction) -> Fraction:
        # Laplace: scale t = Δ1/ε (the discrete Laplace mechanism is Δ1/t-DP).
        # Gaussian: σ² = Δ2²/(2ρ) (CKS 2020 Thm 14).
        if laplace:
            return l1 / (budget * share)
        return l2sq / (2 * budget * share)

    if query.kind in ("count", "count_distinct", "user_count", "histogram"):
        l1, l2sq = _integer_sensitivity(query, relation)
        value = _integer_value(query, reductions)
        p = param_for(l1, l2sq, Fraction(1))
        sens = l1 if laplace else l2sq
        if isinstance(value, dict):
            return [NoiseTerm(str(key), v, p, 0, sens) for key, v in value.items()]
        return [NoiseTerm(query.kind, value, p, 0, sens)]

    if query.kind in MOMENT_KINDS:
        return _moment_terms(query, relation, reductions, laplace, budget, node.granularity)
    share = Fraction(1) if query.kind == "sum" else Fraction(1, 2)
    real = _real_sensitivity(query, relation)
    k = node.granularity if node.granularity is not None else _auto_k(max(real, Fraction(1, 2**60)) / (budget * share))
    if query.kind == "sum":
        lat = _sum_sensitivity(query, relation, k)
        return [NoiseTerm("sum", _lattice_sum(query, reductions, k).total, param_for(lat, lat * lat, share), k, lat if laplace else lat * lat)]
    # mean: the sum of the terms centred on the lattice midpoint c of [L, U]. Each
    # centred term lies in [L - c, U - c]: adding or removing a row (or a value
    # becoming missing) moves the sum by at most max(c - L, U - c) ≈ (U - L)/2,
    # a value-to-value substitution by at most U - L. The count is private too
    # (an added row or a NaN changes it), each half of the budget.
    lo_u, hi_u, centre = lattice_centre(*query.require_bounds("mean"), k)
    total = _lattice_sum(query, reductions, k)  # the sum and the count in one pass
    n = total.count
    lat = Fraction(hi_u - lo_u) if relation == "substitution" else Fraction(max(centre - lo_u, hi_u - centre))
    centred = total.total - n * centre
    return [
        NoiseTerm("centred_sum", centred, param_for(lat, lat * lat, share), k, lat if laplace else lat * lat),
        NoiseTerm("count", n, param_for(Fraction(1), Fraction(1), share), 0, Fraction(1)),
    ]


#: the budget share of each of the three moment terms (count, centred sum, centred squares)
MOMENT_SHARE = Fraction(1, 3)


def moment_lattice(query: Query, budget: Fraction, granularity: int | None) -> tuple[int, int]:
    """The exponents ``(k, s)`` of a variance's terms, from public quantities only.

    ``k`` (the values' lattice) puts ``2**k`` about ``2**-20`` of the centred sum's
    noise scale ``((u − l)/2)/(budget/3)``, unless ``granularity`` fixes it; ``s >= 0``
    puts the squares' lattice ``2**(2k + s)`` about ``2**-20`` of their noise scale
    ``((u − l)/2)²/(budget/3)`` (``s = 0`` when ``2**(2k)`` is already coarser).
    """
    lower, upper = query.require_bounds(query.kind)
    half = max((upper - lower) / 2, Fraction(1, 2**60))
    k = granularity if granularity is not None else _auto_k(half / (budget * MOMENT_SHARE))
    k2 = _auto_k(half * half / (budget * MOMENT_SHARE))
    return k, min(max(k2 - 2 * k, 0), 62)


def _moment_terms(query: Query, relation: Relation, data: Reductions, laplace: bool, budget: Fraction, granularity: int | None) -> list[NoiseTerm]:
    """The centred sum, centred sum of squares and count of a variance (module docstring: the table).

    Each term's parameter is that of a third of the budget: Laplace scale Δ/(ε/3),
    Gaussian σ² = Δ²/(2ρ/3), with Δ the term's sensitivity under ``relation``.
    """
    lower, upper = query.require_bounds(query.kind)
    assert query.column is not None
    k, s = moment_lattice(query, budget, granularity)
    lo_u, hi_u, centre = lattice_centre(lower, upper, k)
    plain, squares = data.clipped_sums([SumSpec(query.column, lower, upper, k), SumSpec(query.column, lower, upper, k, centre=centre, shift=s)])
    n = plain.count
    h = Fraction(hi_u - lo_u) if relation == "substitution" else Fraction(max(centre - lo_u, hi_u - centre))
    q = Fraction(square_term_bound(lo_u, hi_u, centre, s))

    def term(label: str, value: int, delta: Fraction, kk: int) -> NoiseTerm:
        share = budget * MOMENT_SHARE
        param = delta / share if laplace else delta * delta / (2 * share)
        return NoiseTerm(label, value, param, kk, delta if laplace else delta * delta)

    return [
        term("centred_sum", plain.total - n * centre, h, k),
        term("centred_squares", squares.total, q, 2 * k + s),
        term("count", n, Fraction(1), 0),
    ]


def moment_value(query: Query, noisy_sum: int, noisy_squares: int, noisy_count: int, k: int, s: int) -> float:
    """The released variance or standard deviation from the three noisy terms (post-processing only).

    ``var = S̃2·2**(2k+s)/ñ − (S̃1·2**k/ñ)²`` in exact arithmetic, clamped to
    ``[0, ((u − l)/2)²]``; ``ñ <= 0`` gives 0 (the value of empty data).

    Examples:
        >>> from dpalg import Clip
        >>> q = Query.variance("x") | Clip(0, 4)
        >>> moment_value(q, 2, 20, 4, 0, 0)  # 20/4 - (2/4)**2 = 4.75, clamped to ((4 - 0)/2)**2
        4.0
        >>> moment_value(q, 0, 3, 4, 0, 0), moment_value(q, 5, 5, -1, 0, 0)
        (0.75, 0.0)
    """
    lower, upper = query.require_bounds(query.kind)
    if noisy_count <= 0:
        return 0.0
    m1 = Fraction(noisy_sum, noisy_count) * Fraction(2) ** k
    m2 = Fraction(noisy_squares, noisy_count) * Fraction(2) ** (2 * k + s)
    cap = ((upper - lower) / 2) ** 2
    var = min(max(m2 - m1 * m1, Fraction(0)), cap)
    if query.kind == "variance":
        return float(var)
    return min(math.sqrt(float(var)), float((upper - lower) / 2))


def _release(node: Laplace | Gaussian, data: Dataset, rng: AbstractRandomness) -> object:
    kind: Literal["laplace", "gaussian"] = "laplace" if isinstance(node, Laplace) else "gaussian"
    secret = prf_secret(rng) if node.query.max_rows is not None or node.query.max_keys is not None else bytes(32)
    terms = noise_terms(node, data, secret)
    if all(t.param == terms[0].param for t in terms):  # histograms: one vectorised draw
        noise = _noise(kind, terms[0].param, len(terms), rng)
    else:
        noise = [_noise(kind, t.param, 1, rng)[0] for t in terms]
    noisy = [t.value + z for t, z in zip(terms, noise)]
    query = node.query
    if node.nonnegative and counts_nonnegative(query):
        noisy = [max(0, v) for v in noisy]  # post-processing (Dwork–Roth Prop. 2.1); see counts_nonnegative
    if query.kind == "histogram":
        assert query.keys is not None
        return dict(zip(query.keys, noisy))
    if query.kind in ("count", "count_distinct", "user_count"):
        return noisy[0]
    if query.kind in MOMENT_KINDS:
        k = terms[0].k
        return moment_value(query, noisy[0], noisy[1], noisy[2], k, terms[1].k - 2 * k)
    step = Fraction(2) ** terms[0].k
    if query.kind == "sum":
        return float(noisy[0] * step)
    lower, upper = mean_bounds(query)
    if noisy[1] <= 0:
        return float((lower + upper) / 2)
    centre = lattice_centre(lower, upper, terms[0].k)[2]
    return float(min(max((Fraction(noisy[0]) / noisy[1] + centre) * step, lower), upper))


def counts_nonnegative(query: Query) -> bool:
    """Whether the released statistic is a count whose true value is ``>= 0`` on every dataset.

    Row counts, ``count_distinct``, ``user_count`` and histogram cells (row or
    user level) are; a user-level ``count | ClipPerUser(L, U)`` is a sum of
    ``clamp(rows_u, L, U)`` with ``0 <= L`` (the query refuses a negative ``L``
    for a count), so it is too. Sums and means are not counts (a clipped sum can
    be negative) and are never clamped.

    For such a count ``c >= 0`` and any noisy value ``Y``, ``|max(0, Y) − c| <= |Y − c|``
    (if ``Y >= 0`` nothing changes; if ``Y < 0`` then ``|0 − c| = c < c − Y``), so
    releasing ``max(0, Y)`` is free post-processing (Dwork–Roth 2014, Prop. 2.1: the
    privacy guarantee is unchanged) and every accuracy statement about ``Y`` holds
    for it too, pointwise.
    """
    if query.kind == "count" and query.per_user_totals:
        assert query.user_lower is not None and query.user_lower >= 0  # Query refuses L < 0 for a count
    return query.kind in ("count", "count_distinct", "user_count", "histogram")


def _nonnegative(owner: str, value: bool) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(owner, "nonnegative", value, "must be True or False")
    return value


def _lap_nonneg(value: bool) -> bool:
    return _nonnegative("Laplace", value)


def _gauss_nonneg(value: bool) -> bool:
    return _nonnegative("Gaussian", value)


def _check_noise_range(node: Laplace | Gaussian) -> None:
    """Fail at construction when a noise parameter is beyond the exact samplers' range.

    The parameters depend only on the node (never on data), so they are computed
    on an empty dataset with the query's columns.
    """
    owner, limit, what = (
        ("Laplace", MAX_LAPLACE_SCALE, "scale") if isinstance(node, Laplace) else ("Gaussian", MAX_GAUSSIAN_SIGMA2, "sigma^2")
    )
    field, budget = ("epsilon", node.epsilon) if isinstance(node, Laplace) else ("rho", node.rho)
    try:
        terms = public_noise_terms(node)
    except InvalidArgument as exc:
        if exc.field != "k" or node.granularity is not None:
            raise
        # the automatic lattice step follows the noise scale (about 2**-20 of it): a budget so large
        # (or so small) that the step leaves the lattice's range is the budget's problem, not k's
        raise InvalidArgument(
            owner, field, budget,
            "puts the noise scale (and the automatic lattice step, 2**-20 of it) outside the supported range "
            "(steps 2**-1000 to 2**1000) for this clip range: choose a budget nearer 1, or pass granularity=",
        ) from None
    for term in terms:
        if term.param > limit:
            raise InvalidArgument(
                owner, field, budget,
                f"gives a noise {what} of about 2**{floor_log2(term.param)} lattice units for {term.label!r} "
                f"(at most 2**{floor_log2(limit)}); "
                "raise the budget, narrow the clip or coarsen the granularity",
            )


def _eps(value: ExactLike) -> Fraction:
    return positive_param("Laplace", "epsilon", value)


def _rho(value: ExactLike) -> Fraction:
    return positive_param("Gaussian", "rho", value)


def _lap_relation(value: str) -> Relation:
    return relation_param("Laplace", value)


def _gauss_relation(value: str) -> Relation:
    return relation_param("Gaussian", value)


def _lap_k(value: int | None) -> int | None:
    return granularity_param("Laplace", value)


def _gauss_k(value: int | None) -> int | None:
    return granularity_param("Gaussian", value)


def _lap_query(value: Query) -> Query:
    return _check_query("Laplace", value)


def _gauss_query(value: Query) -> Query:
    return _check_query("Gaussian", value)


class _GlobalNoise:
    """What :class:`Laplace` and :class:`Gaussian` share (a mixin, not a node): they differ only in the noise."""

    query: Query
    relation: Relation
    granularity: int | None
    nonnegative: bool

    def __repr__(self) -> str:
        # the attrs repr, with ``nonnegative`` only when it is off: plans (and the plan_repr of
        # certificates) written before the option existed read exactly as before
        budget = f"epsilon={self.epsilon!r}" if isinstance(self, Laplace) else f"rho={self.rho!r}" if isinstance(self, Gaussian) else ""
        text = (
            f"{type(self).__name__}(query={self.query!r}, {budget}, "
            f"relation={self.relation!r}, granularity={self.granularity!r}"
        )
        return text + (")" if self.nonnegative else ", nonnegative=False)")

    def __attrs_post_init__(self) -> None:
        assert isinstance(self, (Laplace, Gaussian))
        check_user_level(type(self).__name__, self.query, self.relation, USER_LEVEL_GLOBAL)
        _check_noise_range(self)

    @property
    def neighbouring(self) -> Neighbouring:
        """The query's unit under ``relation``."""
        return self.query.neighbouring(self.relation)

    def accuracy(self, alpha: ExactLike = Fraction(1, 20), *, n: int | None = None) -> Accuracy:
        """The (1 − ``alpha``) error of the release, from the parameters only (no data touched).

        Counts, sums and histogram cells: the exact (1 − α) quantile of the
        noise (``tight``). Means, variances and standard deviations: conditional
        on the true count, pass ``n`` (a public lower bound on it) for a number
        (an upper bound, not tight). See ``docs/accuracy.md``.
        """
        assert isinstance(self, (Laplace, Gaussian))
        return global_accuracy(self, alpha, n)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """The noisy value (int, float, or dict for histograms).

        A count (row count, ``count_distinct``, ``user_count``, a histogram cell)
        is released as ``max(0, c + Z)`` unless ``nonnegative=False``
        (:func:`counts_nonnegative`: free post-processing that never increases the error).
        """
        assert isinstance(self, (Laplace, Gaussian))
        return _release(self, data, rng)

    def release_groups(self, groups: ReleasedGroups, rng: AbstractRandomness) -> list[object] | None:
        """Row-level counts, sums and means of every group at once (:func:`grouped_release`); else ``None``."""
        assert isinstance(self, (Laplace, Gaussian))
        if not supports_grouped(self.query):
            return None
        kind: Literal["laplace", "gaussian"] = "laplace" if isinstance(self, Laplace) else "gaussian"
        clamp = self.nonnegative and counts_nonnegative(self.query)
        return grouped_release(self.query, public_noise_terms(self), kind, clamp, groups, rng)


@final
@attrs.frozen(repr=False)
class Laplace(_GlobalNoise, AbstractPrimitive[PureDP]):
    """The Laplace mechanism with exact discrete Laplace noise on a lattice.

    Supports counts, ``count_distinct``, ``user_count``, histograms over public
    keys (vector, L1 sensitivity), clipped sums and clipped means (the mean is
    the midpoint plus a noisy *centred* sum / noisy count, ε split in halves, so the
    count is private too; centring on the clip midpoint halves the sum's
    add/remove sensitivity to about (u − l)/2), and clipped population variances
    and standard deviations (``Query.variance`` / ``Query.stdev``, row level: a
    noisy count, centred sum and centred sum of squares, ε/3 each; module
    docstring).

    Args:
        query: a :class:`~dpalg.Query` (sums and means need ``| Clip(l, u)``).
        epsilon: ε > 0.
        relation: ``"add_remove"`` (default) or ``"substitution"``.
        granularity: release multiples of ``2**granularity`` for real-valued
            queries; ``None`` picks ``2**(floor(log2(scale)) - 20)``.
        nonnegative: release a count (row count, ``count_distinct``,
            ``user_count``, each histogram cell) as ``max(0, c + Z)`` (default
            ``True``); ``False`` releases ``c + Z``, possibly negative. Sums and
            means are never clamped. Free post-processing (Dwork–Roth Prop. 2.1)
            that can only reduce the error: the cost and every accuracy bound
            are the same either way (:func:`counts_nonnegative`).

    Privacy guarantee:
        ε-DP under the stated relation for one row (one user for
        ``user_count``). For an integer-valued query with L1 sensitivity Δ, adding
        discrete Laplace noise of scale Δ/ε is ε-DP (Canonne–Kamath–Steinke 2020,
        the discrete analogue of Dwork et al. 2006; the pmf ratio of shifts by
        at most Δ is bounded by e^{Δ/t}). Sums are computed exactly in fixed point
        after clipping and rounding each value to the lattice (bounds rounded
        outward), so Δ holds exactly in lattice units (Casacuberta et al. 2022).
        Sensitivities: count 1; histogram 1 (add/remove) or 2 (substitution);
        clipped sum max(|l|, |u|) (add/remove) or u − l (substitution).
        Variance/stdev: three terms at ε/3 each (Dwork–Roth Thm 3.6 per term,
        basic composition Thm 3.16): count 1; centred sum H (add/remove) or
        U − L (substitution); centred squares Q (both), in lattice units (module
        docstring).

    Examples:
        >>> from dpalg import Query, Clip, PureDP
        >>> node = Laplace(Query.sum("x") | Clip(0, 10), epsilon="0.5")
        >>> node.cost()
        PureDP('1/2')
    """

    query: Query = attrs.field(converter=_lap_query)
    epsilon: Fraction = attrs.field(converter=_eps)
    relation: Relation = attrs.field(default="add_remove", converter=_lap_relation)
    granularity: int | None = attrs.field(default=None, converter=_lap_k)
    nonnegative: bool = attrs.field(default=True, converter=_lap_nonneg, metadata={QUIET_DEFAULT: True})

    def privacy(self) -> PrivacyClaim[PureDP]:
        """ε, from the parameters only."""
        return PrivacyClaim(
            PureDP(self.epsilon),
            "discrete Laplace mechanism, scale = sensitivity/eps (Canonne-Kamath-Steinke 2020; Dwork et al. 2006)",
            (("epsilon", str(self.epsilon)), ("relation", self.relation)),
            pld=pld_part(self),
        )


@final
@attrs.frozen(repr=False)
class Gaussian(_GlobalNoise, AbstractPrimitive[ZCDP]):
    """The Gaussian mechanism with exact discrete Gaussian noise, ρ-zCDP.

    Same queries as :class:`Laplace`. For (ε, δ)-DP wrap it:
    ``ZCDPToApprox(Gaussian(...), delta=...)``.

    Args:
        query: the query (sums and means need a clip).
        rho: ρ > 0.
        relation: ``"add_remove"`` (default) or ``"substitution"``.
        granularity: lattice exponent for real-valued queries (``None``: automatic).
        nonnegative: counts released as ``max(0, c + Z)`` (default ``True``), as for :class:`Laplace`.

    Privacy guarantee:
        ρ-zCDP under the stated relation: adding discrete Gaussian noise of
        variance parameter σ² = Δ₂²/(2ρ) to an integer-valued query of L2
        sensitivity Δ₂ is (Δ₂²/(2σ²))-zCDP (Canonne–Kamath–Steinke 2020,
        Theorem 14). Histograms: Δ₂² = 1 (add/remove) or 2 (substitution); sums
        on the lattice as for :class:`Laplace`. Variance/stdev: three terms at
        ρ/3 each (CKS 2020 Thm 4 / Thm 14 per term, zCDP composition Bun–Steinke
        2016 Lemma 2.3) with Δ₂ = the :class:`Laplace` table's sensitivities.
    """

    query: Query = attrs.field(converter=_gauss_query)
    rho: Fraction = attrs.field(converter=_rho)
    relation: Relation = attrs.field(default="add_remove", converter=_gauss_relation)
    granularity: int | None = attrs.field(default=None, converter=_gauss_k)
    nonnegative: bool = attrs.field(default=True, converter=_gauss_nonneg, metadata={QUIET_DEFAULT: True})

    def privacy(self) -> PrivacyClaim[ZCDP]:
        """ρ, from the parameters only."""
        return PrivacyClaim(
            ZCDP(self.rho),
            "discrete Gaussian mechanism, sigma^2 = sensitivity^2/(2 rho) (Canonne-Kamath-Steinke 2020 Thm 14)",
            (("rho", str(self.rho)), ("relation", self.relation)),
            pld=pld_part(self),
        )


#: kinds released as one integer query plus one noise draw (at row level; ``user_count`` counts users)
_PLD_KINDS = ("count", "count_distinct", "user_count", "sum")


def pld_part(node: Laplace | Gaussian) -> PLDPart | None:
    """The node's noise as ``(kind, param, Δ)`` for the accountant's PLD rule, or ``None``.

    Only releases that are one integer query plus one noise draw: row-level counts,
    ``count_distinct``, ``user_count`` and clipped sums, and add/remove histograms (a
    row changes one cell by 1, the other cells' pairs are identical, so the vector's
    privacy loss is that of one cell). ``param`` and Δ are exactly those of
    :func:`noise_terms` (Laplace: scale and L1 sensitivity; Gaussian: σ² and
    sqrt(L2²), an integer for a scalar). Means, variances, user-level releases and
    substitution histograms (two cells change) give ``None``: the other rules apply.
    """
    query = node.query
    if query.user is not None and query.kind != "user_count":
        return None
    if not (query.kind in _PLD_KINDS or query.kind == "histogram" and node.relation == "add_remove"):
        return None
    laplace = isinstance(node, Laplace)
    if query.kind == "sum":
        term = public_noise_terms(node)[0]
        param, sens = term.param, term.sensitivity
    else:
        budget = node.epsilon if isinstance(node, Laplace) else node.rho
        param, sens = (Fraction(1) / budget, Fraction(1)) if laplace else (Fraction(1) / (2 * budget), Fraction(1))
    if laplace:
        delta = sens
    else:
        root = math.isqrt(sens.numerator)
        if sens.denominator != 1 or root * root != sens.numerator:
            return None
        delta = Fraction(root)
    if delta.denominator != 1 or delta < 1:
        return None
    return ("laplace" if laplace else "gaussian", param, int(delta))


def public_noise_terms(node: Laplace | Gaussian) -> list[NoiseTerm]:
    """The node's noise terms on an empty dataset with the query's columns: their parameters never depend on data."""
    columns = {c: np.zeros(0, dtype=np.float64) for c in (node.query.column, node.query.user) if c is not None}
    return noise_terms(node, as_dataset(columns if columns else {"_": np.zeros(0)}))


def global_accuracy(node: Laplace | Gaussian, alpha: ExactLike, n: int | None = None) -> Accuracy:
    """The (1 − α) accuracy of a :class:`Laplace` or :class:`Gaussian` node (proof: :mod:`dpalg.mechanisms.global_noise._accuracy`)."""
    owner = type(node).__name__
    a = alpha_param(f"{owner}.accuracy", alpha)
    laplace = isinstance(node, Laplace)
    terms = public_noise_terms(node)
    kind = node.query.kind
    if kind in MOMENT_KINDS:
        return _moment_accuracy(node, a, n)
    if kind != "mean":
        if n is not None:
            raise InvalidArgument(f"{owner}.accuracy", "n", n, f"applies to means, variances and stdevs only (this is a {kind})")
        term = terms[0]
        m, tight = noise_quantile(laplace, term.param, a)
        unit = "absolute, per key" if kind == "histogram" else "absolute"
        notes: tuple[str, ...] = ()
        if kind == "histogram" and len(terms) > 1:
            m_all, _ = noise_quantile(laplace, term.param, a / len(terms))
            notes = (f"all {len(terms)} keys at once: ±{up_text(m_all * Fraction(2) ** term.k)} (union bound)",)
        return Accuracy(a, m * Fraction(2) ** term.k, unit, noise_text(laplace, term.param, term.k), tight, None, notes, lattice_k=term.k)
    centred, count = terms
    step = Fraction(2) ** centred.k
    m_s, _ = noise_quantile(laplace, centred.param, a / 2)
    m_c, _ = noise_quantile(laplace, count.param, a / 2)
    lo, hi, c = lattice_centre(*mean_bounds(node.query), centred.k)
    h = Fraction(max(c - lo, hi - c)) * step
    e_s, e_c = m_s * step, Fraction(m_c)
    noise = f"sum: {noise_text(laplace, centred.param, centred.k)}; count: {noise_text(laplace, count.param, 0)}"
    formula = f"error <= ({up_text(e_s)} + {m_c}*{up_text(h)})/(n - {m_c})"
    if n is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true count n > {m_c}", (formula, "pass n= (a public lower bound on n) for a number"), lattice_k=centred.k)
    if isinstance(n, bool) or not isinstance(n, int) or n <= m_c:
        raise InvalidArgument(f"{owner}.accuracy", "n", n, f"must be an int > {m_c} (the count's noise bound at alpha/2)")
    return Accuracy(a, (e_s + e_c * h) / (n - e_c), "absolute", noise, False, f"the true count is at least {n}", (formula,), lattice_k=centred.k)


def _moment_accuracy(node: Laplace | Gaussian, alpha: Fraction, n: int | None) -> Accuracy:
    """The (1 − α) accuracy of a variance or standard deviation, given a public lower bound ``n`` on the count.

    Proof (:mod:`dpalg.mechanisms.global_noise._accuracy`, "Variance"): each term's
    noise within its exact (1 − α/3) quantile, all three with probability >= 1 − α.
    """
    owner = type(node).__name__
    laplace = isinstance(node, Laplace)
    centred, squares, count = public_noise_terms(node)
    lower, upper = node.query.require_bounds(node.query.kind)
    step1, step2 = Fraction(2) ** centred.k, Fraction(2) ** squares.k
    k, s = centred.k, squares.k - 2 * centred.k
    lo_u, hi_u, c = lattice_centre(lower, upper, k)
    h1 = Fraction(max(c - lo_u, hi_u - c)) * step1
    h2 = Fraction(square_term_bound(lo_u, hi_u, c, s)) * step2
    m1, _ = noise_quantile(laplace, centred.param, alpha / 3)
    m2, _ = noise_quantile(laplace, squares.param, alpha / 3)
    mc, _ = noise_quantile(laplace, count.param, alpha / 3)
    e1, e2 = m1 * step1, m2 * step2
    half = (upper - lower) / 2
    rounding = step2 / 2 + step1 / 2 * (2 * half + step1 / 2)  # the lattices' rounding of the values and of their squares
    noise = (
        f"sum: {noise_text(laplace, centred.param, centred.k)}; squares: {noise_text(laplace, squares.param, squares.k)}; "
        f"count: {noise_text(laplace, count.param, 0)}"
    )
    dm = f"d = ({up_text(e1)} + {mc}*{up_text(h1)})/(n - {mc})"
    var_formula = f"variance error <= ({up_text(e2)} + {mc}*{up_text(h2)})/(n - {mc}) + d*(2*{up_text(h1)} + d) + {up_text(rounding)}, {dm}"
    notes: tuple[str, ...] = (var_formula,) if node.query.kind == "variance" else (var_formula, "stdev error <= sqrt(variance error)")
    if n is None:
        return Accuracy(alpha, None, "absolute", noise, False, f"the true count n > {mc}", (*notes, "pass n= (a public lower bound on n) for a number"), lattice_k=None)
    if isinstance(n, bool) or not isinstance(n, int) or n <= mc:
        raise InvalidArgument(f"{owner}.accuracy", "n", n, f"must be an int > {mc} (the count's noise bound at alpha/3)")
    d = (e1 + mc * h1) / (n - mc)
    err = (e2 + mc * h2) / (n - mc) + d * (2 * h1 + d) + rounding
    err = min(err, half * half)  # both the release and the truth lie in [0, ((u - l)/2)**2]
    if node.query.kind == "stdev":
        err = min(_sqrt_up(err), half)  # |sqrt(a) - sqrt(b)| <= sqrt(|a - b|)
    return Accuracy(alpha, err, "absolute", noise, False, f"the true count is at least {n}", notes, lattice_k=None)
