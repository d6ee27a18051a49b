"""Laplace and Gaussian counts, sums and means for every group of a GROUP BY at once.

:func:`grouped_release` is what :meth:`Laplace.release_groups
<dpalg.mechanisms.Laplace.release_groups>` and ``Gaussian.release_groups`` run
for a row-level ``count``, ``sum`` or ``mean``. For every released group it
computes the integer statistics that
:func:`~dpalg.mechanisms.global_noise._laplace_gaussian.noise_terms` computes on
that group's rows (:class:`~dpalg.data._grouped.GroupedRows`: the same lattice
terms, summed exactly), with the node's noise parameters, which are public and
the same for every group (they depend on the node only:
``public_noise_terms``). It then draws, per term kind (the sum, or the centred
sum then the count of a mean), one vector of independent noises, one per group,
from the same exact sampler and parameter, and post-processes each group as the
per-group release does (a count clamped at 0 under ``nonnegative``; a sum times
``2**k``; a mean as the clamped ratio, or the midpoint on a non-positive noisy
count).

Privacy: for each group the output is the per-group release's output
distribution (the same statistic plus noise of the same distribution), and the
groups' noises are independent, exactly as when each group draws its own. The
joint distribution of the release is therefore that of the per-group path, so
the GroupBy cost rule (parallel composition over disjoint groups) applies
unchanged; only the order in which the random stream is consumed differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Final, Literal

import attrs

from dpalg.data import SumSpec
from dpalg.data._grouping import ReleasedGroups
from dpalg.mechanisms.global_noise._user import NoiseTerm, lattice_centre, mean_bounds
from dpalg.noise import AbstractRandomness, discrete_gaussian, discrete_laplace
from dpalg.queries import Query

__all__ = ["GROUPED_KINDS", "GroupedTerm", "grouped_release", "grouped_terms", "supports_grouped"]

#: the row-level query kinds released for all groups at once
GROUPED_KINDS: Final = ("count", "sum", "mean")


@attrs.frozen
class GroupedTerm:
    """One integer statistic for every released group, and the noise each receives (the same for all).

    ``values[i]`` is the statistic of the ``i``-th group; the other fields are
    those of :class:`~dpalg.mechanisms.global_noise._user.NoiseTerm`.
    """

    label: str
    values: tuple[int, ...]
    param: Fraction
    k: int
    sensitivity: Fraction

    def of_group(self, i: int) -> NoiseTerm:
        """The ``i``-th group's term, as ``noise_terms`` states it."""
        return NoiseTerm(self.label, self.values[i], self.param, self.k, self.sensitivity)


def supports_grouped(query: Query) -> bool:
    """Whether a query is released by :func:`grouped_release`: a row-level count, sum or mean."""
    return query.user is None and query.kind in GROUPED_KINDS


def grouped_terms(query: Query, public: Sequence[NoiseTerm], groups: ReleasedGroups) -> list[GroupedTerm]:
    """The integer statistics of every released group, with the node's public noise terms ``public``.

    ``public`` is ``public_noise_terms(node)``: its parameters, lattice steps and
    sensitivities are the node's (data-independent); its values are ignored.
    """
    assert supports_grouped(query)
    if query.kind == "count":
        (term,) = public
        values = groups.row_counts() if query.column is None else groups.present_counts(query.column)
        return [GroupedTerm(term.label, tuple(int(v) for v in values.tolist()), term.param, term.k, term.sensitivity)]
    assert query.column is not None
    k = public[0].k
    lower, upper = query.require_bounds("sum")
    sums = groups.clipped_sums(SumSpec(query.column, lower, upper, k))
    if query.kind == "sum":
        (term,) = public
        return [GroupedTerm(term.label, tuple(s.total for s in sums), term.param, term.k, term.sensitivity)]
    centred, count = public
    centre = lattice_centre(*query.require_bounds("mean"), k)[2]
    return [
        GroupedTerm(centred.label, tuple(s.total - s.count * centre for s in sums), centred.param, centred.k, centred.sensitivity),
        GroupedTerm(count.label, tuple(s.count for s in sums), count.param, count.k, count.sensitivity),
    ]


def _draw(kind: Literal["laplace", "gaussian"], param: Fraction, size: int, rng: AbstractRandomness) -> list[int]:
    """``size`` independent noises of one parameter (zeros, and no draw, for a zero parameter or no group)."""
    if param == 0 or size == 0:
        return [0] * size
    draw = discrete_laplace(param, size=size, rng=rng) if kind == "laplace" else discrete_gaussian(param, size=size, rng=rng)
    return [int(v) for v in draw.tolist()]


def _lattice_float(value: int, k: int) -> float:
    """``float(value * 2**k)``, correctly rounded (int true division, as ``float(Fraction)``)."""
    return float(value << k) if k >= 0 else value / (1 << -k)


def _mean_value(s: int, n: int, centre: int, k: int, lower: Fraction, upper: Fraction) -> float:
    """``float(min(max((s/n + centre)·2**k, lower), upper))`` for ``n > 0``, in integers.

    The ratio is ``num/den`` with ``den > 0``; it is compared with the bounds by
    cross-multiplication and converted by int true division, which is correctly
    rounded, as ``float(Fraction)`` is: the same float as the per-group formula.
    """
    num, den = (s + centre * n) << max(k, 0), n << max(-k, 0)
    if num * lower.denominator < lower.numerator * den:
        return float(lower)
    if num * upper.denominator > upper.numerator * den:
        return float(upper)
    return num / den


def grouped_release(
    query: Query,
    public: Sequence[NoiseTerm],
    kind: Literal["laplace", "gaussian"],
    clamp_counts: bool,
    groups: ReleasedGroups,
    rng: AbstractRandomness,
) -> list[object]:
    """Every released group's noisy count, sum or mean (module docstring).

    Args:
        query: a row-level count, sum or mean (:func:`supports_grouped`).
        public: the node's ``public_noise_terms``.
        kind: the noise.
        clamp_counts: release a count as ``max(0, c + Z)`` (``nonnegative`` and
            ``counts_nonnegative(query)``).
        groups: the released groups.
        rng: the randomness; one draw of ``groups.n_groups`` noises per term, in term order.

    Returns:
        One value per released group, as the per-group release returns it.
    """
    terms = grouped_terms(query, public, groups)
    size = groups.n_groups
    noisy = [[v + z for v, z in zip(t.values, _draw(kind, t.param, size, rng))] for t in terms]
    if query.kind == "count":
        return [max(0, v) for v in noisy[0]] if clamp_counts else list(noisy[0])
    k = terms[0].k
    if query.kind == "sum":
        return [_lattice_float(v, k) for v in noisy[0]]
    lower, upper = mean_bounds(query)
    fallback = float((lower + upper) / 2)
    centre = lattice_centre(lower, upper, k)[2]
    return [fallback if n <= 0 else _mean_value(s, n, centre, k, lower, upper) for s, n in zip(noisy[0], noisy[1])]
