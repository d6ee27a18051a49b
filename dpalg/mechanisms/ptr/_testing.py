"""Exact privacy checks shared by the mechanism tests (not used in releases).

Propose-test-release. A :class:`~dpalg.mechanisms.ptr._propose_test.ProposeTest`
release on values ``x`` is ⊥ with probability ``P[γ(x) + Z <= M]`` (``Z``
discrete Laplace of scale ``1/ε_test``, ``M = ceil(ln(1/δ)/ε_test) − 1``), else
the value rounded to the lattice ``2^k`` plus discrete Laplace noise of scale
``release_scale / 2^k`` lattice steps. The smallest δ with
``P_x(S) <= e^(ε_test + ε_release) P_y(S) + δ`` over every event ``S`` (⊥ and each
lattice point) is then a finite sum, computed here in floats over a window of ±80
noise scales (the tails beyond it are below e^-80).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpalg.mechanisms.ptr._propose_test import ProposeTest, exact_value
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.mechanisms._common.testing import Values
from dpalg.noise import round_to_lattice

__all__ = ["bottom_probability", "ptr_hockey_stick", "ptr_threshold", "worst_ptr_delta"]


def bottom_probability(gamma: int, eps: float, threshold_m: int) -> float:
    """``P[γ + Z <= M]`` for ``Z`` discrete Laplace of scale ``1/eps``: PTR's chance of ⊥ at distance γ.

    Examples:
        >>> round(bottom_probability(0, 1.0, 0), 4)  # P[Z <= 0] = 1/(1 + e^-1)
        0.7311
        >>> bottom_probability(5, 1.0, 0) < bottom_probability(1, 1.0, 0)
        True
    """
    p, j = math.exp(-eps), threshold_m - gamma
    return 1 - p ** (j + 1) / (1 + p) if j >= 0 else p ** (-j) / (1 + p)


def ptr_threshold(node: ProposeTest) -> int:
    """The test's integer threshold ``M = ceil(ln(1/δ)/ε_test) − 1`` (⊥ iff ``γ + Z <= M``)."""
    return ceil_log_inv_delta_over_eps(node.eps_test, node.delta) - 1


def _laplace_pmf(center: int, t: float, window: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    q = math.exp(-1 / t)
    out: npt.NDArray[np.float64] = (1 - q) / (1 + q) * q ** np.abs(window - center)
    return out


def _outcome(node: ProposeTest, x: Values, threshold_m: int) -> tuple[float, int]:
    """P(⊥) on ``x`` and the lattice point the release noise is centred on."""
    values = np.array(x, dtype=np.float64)
    bottom = bottom_probability(node.distance(values), float(node.eps_test), threshold_m)
    center = int(round_to_lattice(np.array([exact_value(node.stat_query, values)]), node.lattice_k())[0])
    return bottom, center


def _delta_between(node: ProposeTest, ox: tuple[float, int], oy: tuple[float, int]) -> float:
    (ax, cx), (ay, cy) = ox, oy
    t = float(node.release_scale() / Fraction(2) ** node.lattice_k())
    window = np.arange(min(cx, cy) - int(80 * t) - 5, max(cx, cy) + int(80 * t) + 6)
    e_total = math.exp(float(node.eps_test + node.eps_release))
    rel = np.maximum(0.0, (1 - ax) * _laplace_pmf(cx, t, window) - e_total * (1 - ay) * _laplace_pmf(cy, t, window)).sum()
    return max(0.0, ax - e_total * ay) + float(rel)


def ptr_hockey_stick(node: ProposeTest, x: Values, y: Values, threshold_m: int | None = None) -> float:
    """The exact δ with ``P_x(S) <= e^(ε_test + ε_release) P_y(S) + δ`` over all events (⊥ and each lattice point).

    ``x`` and ``y`` hold values inside the query's clipping range. ``threshold_m``
    replaces the node's ``M`` (:func:`ptr_threshold`) to model a broken test.
    With one ε the factor is ``e^(2ε)``.
    """
    m = ptr_threshold(node) if threshold_m is None else threshold_m
    return _delta_between(node, _outcome(node, x, m), _outcome(node, y, m))


def worst_ptr_delta(node: ProposeTest, pairs: Iterable[tuple[Values, Values]], threshold_m: int | None = None) -> float:
    """The largest :func:`ptr_hockey_stick` over ``pairs``; each dataset's γ and value are computed once.

    Examples:
        >>> from dpalg import Clip, Query
        >>> from dpalg.mechanisms._common.testing import multiset_neighbours
        >>> node = ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", epsilon="0.5", delta="0.01", granularity=-2)
        >>> worst_ptr_delta(node, multiset_neighbours((0.0, 3.0), 3)) <= 0.01
        True
    """
    m = ptr_threshold(node) if threshold_m is None else threshold_m
    cache: dict[Values, tuple[float, int]] = {}

    def outcome(x: Values) -> tuple[float, int]:
        if x not in cache:
            cache[x] = _outcome(node, x, m)
        return cache[x]

    return max((_delta_between(node, outcome(x), outcome(y)) for x, y in pairs), default=0.0)
