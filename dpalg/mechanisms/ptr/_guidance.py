"""Choosing ProposeTest's bound before running: the smallest bound that makes ⊥ rare.

:class:`~dpalg.mechanisms.ProposeTest` releases ⊥ when ``γ + Z <= M``
(``M = ceil(ln(1/δ)/ε) − 1``, ``Z`` discrete Laplace of scale ``1/ε``), with
``γ = min{k : LS_k(x) > b}`` capped at ``min(n + 2, cap)`` for the proposed
bound ``b``. ``P(⊥ | γ)`` decreases in ``γ``
(:func:`~dpalg.mechanisms._common.ptr_test.ptr_bottom_probability`), so with
``d*`` the smallest distance at which it is at most the target, ⊥ is that rare
as soon as ``LS_k(x) <= b`` for every ``k < d*`` (then ``γ >= d*``). Given a
public profile ``F`` with ``LS_k(x) <= F(k)`` the smallest such ``b`` is::

    b* = max_{k < d*} F(k)

The profile comes from public assumptions only:

* **count**: ``LS_k = 1`` (add/remove; 0 under substitution) for every dataset.
* **mean** of ``n`` values clipped to ``[l, u]`` (pass ``n``, a public lower
  bound on the count): a dataset ``y`` within distance ``k`` has
  ``m >= n − k`` values, and one row moves its mean by at most
  ``(u − l)/max(m, 1)`` (removing ``x_i``: ``|mean − x_i|/(m − 1)`` with
  ``|mean − x_i| <= (u − l)(m − 1)/m``; adding ``z``: ``|z − mean|/(m + 1)``; the
  empty mean is the midpoint). So ``F(k) = (u − l)/max(n − k, 1)`` under
  add/remove and ``(u − l)/n`` under substitution; the first is attained by
  ``n − 1`` values at ``l`` and one at ``u``.
* **order statistics** (median, quantile, max, min) and anything else: the
  local sensitivity reads the gaps between the data's order statistics, which
  no public count bounds; pass ``ls_profile``, your stated bound ``F(k)`` on
  ``LS_k(x)`` for ``k = 0, 1, …`` (e.g. from a previous release or domain
  knowledge: "the 2k + 2 values around the median span at most w_k"). The
  suggestion is then only as good as that assumption, and the result says so.

The distance the node computes is also capped at ``n + 2``: ``d* <= n + 2`` is
needed (checked when ``n`` is given, stated otherwise). The node compares float
profiles with ``b``; the suggestion is ``b*`` times ``1 + 2**-20``, rounded up
to 6 significant digits, so float rounding of the profile cannot lower ``γ``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.data import Relation
from dpalg.mechanisms._common.params import positive_param, relation_param, unit_interval_param
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability, ptr_distance_for
from dpalg.queries import Query

__all__ = ["PTRBoundSuggestion", "mean_ls_upper", "suggest_ptr_bound"]

_OWNER = "suggest_ptr_bound"
_MARGIN = Fraction(1, 2**20)


@final
@attrs.frozen
class PTRBoundSuggestion:
    """The bound :func:`suggest_ptr_bound` suggests, and why.

    Attributes:
        bound: the proposed local-sensitivity bound ``b`` for ``ProposeTest``.
        distance: ``d*``, the distance to instability that ``b`` guarantees under
            the assumption.
        bottom: an upper bound on ``P(⊥)`` at that distance (at most the target).
        assumption: the public assumption the guarantee rests on.
    """

    bound: Fraction
    distance: int
    bottom: Fraction
    assumption: str


def mean_ls_upper(lower: Fraction, upper: Fraction, n: int, k: int, relation: Relation = "add_remove") -> Fraction:
    """A public upper bound on ``LS_k`` of a clipped mean of at least ``n`` values (module docstring).

    Examples:
        >>> mean_ls_upper(Fraction(0), Fraction(1), 10, 3)
        Fraction(1, 7)
    """
    if relation == "substitution":
        return (upper - lower) / max(n, 1)
    return (upper - lower) / max(n - k, 1)


def _profile(
    query: Query, relation: Relation, n: int | None, ls_profile: Sequence[ExactLike] | Callable[[int], ExactLike] | None
) -> tuple[Callable[[int], Fraction], str]:
    if ls_profile is not None:
        if callable(ls_profile):
            fn = ls_profile

            def user(k: int) -> Fraction:
                return to_fraction(fn(k), owner=_OWNER, field=f"ls_profile({k})")
        else:
            seq = tuple(to_fraction(v, owner=_OWNER, field="ls_profile") for v in ls_profile)

            def user(k: int) -> Fraction:
                if k >= len(seq):
                    raise InvalidArgument(_OWNER, "ls_profile", f"{len(seq)} values", f"needs LS_k bounds up to k = {k}")
                return seq[k]

        return user, "your stated bound LS_k(x) <= ls_profile(k)"
    if query.kind == "count":
        one = Fraction(0) if relation == "substitution" else Fraction(1)
        return (lambda k: one), "none (a count's LS_k is public)"
    if query.kind == "mean" and query.user is None:
        if n is None:
            raise InvalidArgument(_OWNER, "n", None, "a mean needs n (a public lower bound on the number of values)")
        lower, upper = query.require_bounds(_OWNER)
        return (lambda k: mean_ls_upper(lower, upper, n, k, relation)), f"at least {n} non-missing values"
    raise InvalidArgument(_OWNER, "ls_profile", None,
                          f"a {query.kind}'s local sensitivity depends on the data's gaps: pass ls_profile (your bound on LS_k)")


def suggest_ptr_bound(
    query: Query,
    *,
    epsilon: ExactLike,
    delta: ExactLike,
    bottom: ExactLike = Fraction(1, 20),
    n: int | None = None,
    ls_profile: Sequence[ExactLike] | Callable[[int], ExactLike] | None = None,
    relation: Relation = "add_remove",
) -> PTRBoundSuggestion:
    """The smallest ``ProposeTest`` bound with ``P(⊥) <= bottom`` under a public assumption.

    Args:
        query: the query ``ProposeTest`` will release (row level).
        epsilon: ProposeTest's ε.
        delta: ProposeTest's δ.
        bottom: the largest acceptable probability of ⊥ (default 5%).
        n: a public lower bound on the number of non-missing values (means;
            also checks ``d* <= n + 2``).
        ls_profile: your bound on ``LS_k(x)`` for ``k = 0, 1, …`` (a sequence or a
            function of k); needed for order statistics, used instead of the
            public profile otherwise.
        relation: ProposeTest's relation.

    Returns:
        A :class:`PTRBoundSuggestion`: ``bound`` (pass it to ``ProposeTest``), the
        guaranteed distance, ``P(⊥)`` there, and the assumption it rests on.

    Raises:
        InvalidArgument: no bound reaches ``bottom`` (the distance needed is beyond
            the cap or ``n + 2``), or a needed assumption is missing.

    Examples:
        >>> from dpalg import Clip, Query
        >>> s = suggest_ptr_bound(Query.mean("age") | Clip(0, 100), epsilon=1, delta="1e-6", n=1000)
        >>> s.bound, s.distance
        (Fraction(101523, 1000000), 16)

    References:
        Dwork, Lei (2009); the PTR test of :func:`~dpalg.mechanisms._common.ptr_test.ptr_test_passes`.
    """
    eps = positive_param(_OWNER, "epsilon", epsilon)
    dlt = unit_interval_param(_OWNER, "delta", delta)
    rel = relation_param(_OWNER, relation)
    target = to_fraction(bottom, owner=_OWNER, field="bottom")
    if not 0 < target < 1:
        raise InvalidArgument(_OWNER, "bottom", target, "must be in (0, 1)")
    if not isinstance(query, Query):
        raise InvalidArgument(_OWNER, "query", type(query).__name__, "must be a dpalg Query")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise InvalidArgument(_OWNER, "n", n, "must be an int >= 0")
    need = ptr_distance_for(eps, dlt, target)
    if need is None:
        raise InvalidArgument(_OWNER, "bottom", target, "is below P(⊥) at the largest distance the test computes")
    if n is not None and need > n + 2:
        raise InvalidArgument(_OWNER, "n", n, f"the test caps the distance at n + 2; P(⊥) <= {target} needs {need}")
    profile, assumption = _profile(query, rel, n, ls_profile)
    exact = max((profile(k) for k in range(need)), default=Fraction(0))
    if exact < 0:
        raise InvalidArgument(_OWNER, "ls_profile", exact, "must be >= 0")
    bound = _round_up(exact * (1 + _MARGIN)) if exact > 0 else Fraction(1)
    if n is None:
        assumption += f"; and n + 2 >= {need}"
    return PTRBoundSuggestion(bound, need, ptr_bottom_probability(eps, dlt, need), assumption)


def _round_up(x: Fraction, digits: int = 6) -> Fraction:
    """``x > 0`` rounded up to ``digits`` significant decimal digits."""
    e = math.floor(math.log10(x.numerator) - math.log10(x.denominator)) - digits + 1
    step = Fraction(10) ** e
    return math.ceil(x / step) * step
