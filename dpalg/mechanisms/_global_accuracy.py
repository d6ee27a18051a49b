"""Accuracy of the global-sensitivity nodes (:class:`Laplace`, :class:`Gaussian`) before running.

Each integer statistic ``v`` is released as ``(v + Z) * 2**k`` with ``Z``
discrete Laplace or discrete Gaussian of a parameter fixed by the node
(:func:`~dpalg.mechanisms._global.noise_terms`, evaluated on an empty dataset:
the parameters never depend on data). The (1 − α) error of a count, sum or
histogram cell is therefore ``m * 2**k`` with ``m`` the exact (1 − α)
quantile of ``|Z|`` (:mod:`dpalg.noise._tails`).

A mean is ``c + S̃/ñ`` where ``S`` is the sum of the values centred on the
lattice midpoint ``c`` (each ``|x - c| <= h``) and ``n`` the count, each with
its own noise. With ``|S̃ - S| <= e_s`` and ``|ñ - n| <= e_c`` (each at α/2,
so both with probability >= 1 − α) and ``n > e_c``::

    |S̃/ñ - S/n| = |a n - b S| / (n (n + b)) <= (e_s + e_c h) / (n - e_c)

(``a = S̃ - S``, ``b = ñ - n``, ``|S| <= n h``); clamping to ``[l, u]`` only
shrinks the error. The bound decreases in ``n``, so it holds for every true
count at least the ``n`` given.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import up_text
from dpalg.noise._tails import gaussian_tail_quantile, laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._global import Gaussian, Laplace
    from dpalg.mechanisms._global_user import NoiseTerm
    from dpalg.mechanisms._per_coordinate import CalibratedGaussianSum, CalibratedLaplaceSum

__all__ = ["global_accuracy", "per_coordinate_accuracy"]


def _terms(node: Laplace | Gaussian) -> list[NoiseTerm]:
    from dpalg.data import as_dataset
    from dpalg.mechanisms._global import noise_terms

    columns = {c: np.zeros(0, dtype=np.float64) for c in (node.query.column, node.query.user) if c is not None}
    return noise_terms(node, as_dataset(columns if columns else {"_": np.zeros(0)}))


def _noise_text(laplace: bool, param: Fraction, k: int) -> str:
    step = Fraction(2) ** k
    if laplace:
        text = f"discrete Laplace, scale {up_text(param * step)}"
    else:
        text = f"discrete Gaussian, sigma {up_text(_sqrt_up(param) * step)}"
    return text + (f" (lattice step 2**{k})" if k != 0 else "")


def _sqrt_up(x: Fraction) -> Fraction:
    """sqrt(x) rounded up to 1e-9 relative (display only)."""
    from math import isqrt

    scale = 10**18
    root = isqrt(-(-x.numerator * scale * scale // x.denominator))
    return Fraction(root + 1, scale)


def _quantile(laplace: bool, param: Fraction, alpha: Fraction) -> tuple[int, bool]:
    if param == 0:
        return 0, True
    return laplace_tail_quantile(param, alpha) if laplace else gaussian_tail_quantile(param, alpha)


def global_accuracy(node: Laplace | Gaussian, alpha: ExactLike, n: int | None = None) -> Accuracy:
    """The (1 − α) accuracy of a :class:`Laplace` or :class:`Gaussian` node (module docstring)."""
    from dpalg.mechanisms._global import Laplace
    from dpalg.mechanisms._global_user import lattice_centre, mean_bounds

    owner = type(node).__name__
    a = alpha_param(f"{owner}.accuracy", alpha)
    laplace = isinstance(node, Laplace)
    terms = _terms(node)
    kind = node.query.kind
    if kind != "mean":
        if n is not None:
            raise InvalidArgument(f"{owner}.accuracy", "n", n, f"applies to means only (this is a {kind})")
        term = terms[0]
        m, tight = _quantile(laplace, term.param, a)
        unit = "absolute, per key" if kind == "histogram" else "absolute"
        notes: tuple[str, ...] = ()
        if kind == "histogram" and len(terms) > 1:
            m_all, _ = _quantile(laplace, term.param, a / len(terms))
            notes = (f"all {len(terms)} keys at once: ±{up_text(m_all * Fraction(2) ** term.k)} (union bound)",)
        return Accuracy(a, m * Fraction(2) ** term.k, unit, _noise_text(laplace, term.param, term.k), tight, None, notes)
    centred, count = terms
    step = Fraction(2) ** centred.k
    m_s, _ = _quantile(laplace, centred.param, a / 2)
    m_c, _ = _quantile(laplace, count.param, a / 2)
    lo, hi, c = lattice_centre(*mean_bounds(node.query), centred.k)
    h = Fraction(max(c - lo, hi - c)) * step
    e_s, e_c = m_s * step, Fraction(m_c)
    noise = f"sum: {_noise_text(laplace, centred.param, centred.k)}; count: {_noise_text(laplace, count.param, 0)}"
    formula = f"error <= ({up_text(e_s)} + {m_c}*{up_text(h)})/(n - {m_c})"
    if n is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true count n > {m_c}", (formula, "pass n= (a public lower bound on n) for a number"))
    if isinstance(n, bool) or not isinstance(n, int) or n <= m_c:
        raise InvalidArgument(f"{owner}.accuracy", "n", n, f"must be an int > {m_c} (the count's noise bound at alpha/2)")
    return Accuracy(a, (e_s + e_c * h) / (n - e_c), "absolute", noise, False, f"the true count is at least {n}", (formula,))


def per_coordinate_accuracy(node: CalibratedGaussianSum | CalibratedLaplaceSum, alpha: ExactLike) -> Accuracy:
    """Per-coordinate (1 − α) errors of a calibrated vector sum: coordinate ``i`` gets its own exact
    noise on its own lattice, so its bound is that noise's exact quantile times ``2**k_i``; ``error`` is
    the largest, and a note gives every coordinate's and the simultaneous bound (α/d each, a union bound)."""
    from dpalg.mechanisms._per_coordinate import CalibratedLaplaceSum

    owner = type(node).__name__
    a = alpha_param(f"{owner}.accuracy", alpha)
    laplace = isinstance(node, CalibratedLaplaceSum)
    ks, _, params = node.lattice()
    units = [v / Fraction(2) ** k if laplace else v / Fraction(4) ** k for k, v in zip(ks, params)]
    each = [_quantile(laplace, u, a)[0] * Fraction(2) ** k for u, k in zip(units, ks)]
    together = [_quantile(laplace, u, a / len(units))[0] * Fraction(2) ** k for u, k in zip(units, ks)]
    name = "discrete Laplace" if laplace else "discrete Gaussian"
    notes = (
        "per coordinate: " + ", ".join(f"±{up_text(e)}" for e in each),
        "all coordinates at once (union bound): " + ", ".join(f"±{up_text(e)}" for e in together),
    )
    tight = len(units) == 1  # one coordinate: its exact quantile; several: the largest of exact per-coordinate quantiles
    return Accuracy(a, max(each), "absolute, largest coordinate", f"{name} per coordinate, calibrated ({node.calibration})", tight, None, notes)
