"""Numerical checks of the admissibility constants: NRS07's sliding and dilation, Bun–Steinke's Rényi bound.

The constants of :mod:`dpalg.noise._admissible` and :mod:`dpalg.noise._admissible_zcdp`
are proved in ``docs/mechanisms/smooth_sensitivity.md`` §3; these functions check
them independently, by quadrature on fine grids, so that a wrong constant (e.g. a
doubled α or β) fails a test:

* :func:`check_admissible`: NRS07 Def. 2.5 / Lemma 2.6 -- sliding
  ``sup |ln h(z) − ln h(z + Δ)| ≤ ε/2`` for ``|Δ| ≤ α``, and dilation (pure: the
  log-ratio ``≤ ε/2``; approximate: the hockey-stick divergence ``≤ δ/2``) for
  ``|λ| ≤ β``;
* :func:`laplace_dilation_delta`: the Laplace dilation excess in closed form;
* :func:`check_zcdp`: ``D_a(Z ‖ e^{t'}Z + s') ≤ a ε²/2`` (Bun–Steinke 2019, §3) on a
  grid of orders ``a`` and corners ``(s', t')``.

They are for tests and documentation; no release path calls them.

References:
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth Sensitivity and Sampling in
    Private Data Analysis. STOC 2007 (Def. 2.5, Lemma 2.6).
    M. Bun, T. Steinke. Average-Case Averages: Private Algorithms for Smooth
    Sensitivity and Mean Estimation. NeurIPS 2019 (§3).
"""

from __future__ import annotations

import math
from typing import final

import attrs
import numpy as np

from dpalg.noise._admissible import Admissibility, CauchyNoise, LaplaceNoise
from dpalg.noise._admissible_zcdp import _ZCDPNoise

__all__ = ["PrivacyCheck", "check_admissible", "check_zcdp", "laplace_dilation_delta"]


@final
@attrs.frozen
class PrivacyCheck:
    """Result of a numerical privacy check: the worst value found vs. what is allowed."""

    name: str
    worst: float
    allowed: float
    where: str

    @property
    def ok(self) -> bool:
        """Whether ``worst ≤ allowed`` (with a 1e-9 relative numerical tolerance)."""
        return self.worst <= self.allowed * (1 + 1e-9) + 1e-15


def laplace_dilation_delta(lam: float, eps: float) -> float:
    """``sup_E P[Z ∈ E] − e^{ε/2} P[Z ∈ e^λ E]`` for standard Laplace ``Z`` (closed form).

    ``P[Z ∈ e^λ E] = ∫_E e^λ h(e^λ w) dw``; the excess set is where
    ``h(w) > e^{ε/2 + λ} h(e^λ w)``, i.e. ``|w|(e^λ − 1) > ε/2 + λ``: empty for
    ``−ε/2 ≤ λ ≤ 0``; for ``λ > 0`` it is ``|w| > w₀ = (ε/2 + λ)/(e^λ − 1)`` with
    excess ``e^{−w₀} − e^{ε/2} e^{−w₀ e^λ}``; for ``λ < −ε/2`` the set contains a
    neighbourhood of 0 (not admissible: 1 is returned). (Ported from the second
    implementation; tested against the quadrature of :func:`check_admissible`.)

    Examples:
        >>> laplace_dilation_delta(-0.1, 1.0)
        0.0
    """
    if lam <= 0:
        return 0.0 if -lam <= eps / 2 else 1.0
    w0 = (eps / 2 + lam) / math.expm1(lam)
    return max(0.0, math.exp(-w0) - math.exp(eps / 2) * math.exp(-w0 * math.exp(lam)))


def check_admissible(noise: LaplaceNoise | CauchyNoise, c: Admissibility, *, grid: int = 20001, zmax: float = 60.0) -> tuple[PrivacyCheck, PrivacyCheck]:
    """Numerically check NRS07's sliding and dilation properties for constants ``c``.

    * sliding: ``sup_z |ln h(z) − ln h(z + Δ)|`` over a fine grid (plus the analytic
      worst points) for ``Δ = ±α``; allowed ``ε/2`` (the log-ratio bound implies the
      set inequality with δ = 0). For the Laplace the sup is ``|Δ|`` exactly.
    * dilation, pure (Cauchy): ``sup_z |ln h(z) − λ − ln h(e^λ z)|`` for ``λ = ±β`` and
      intermediate values; allowed ``ε/2``.
    * dilation, approximate (Laplace): the hockey-stick divergence
      ``∫ max(0, h(z) − e^{ε/2} e^λ h(e^λ z)) dz`` by :func:`scipy.integrate.quad`,
      which must be ``≤ δ/2``.

    Returns:
        ``(sliding, dilation)`` checks; ``.ok`` says whether each holds.
    """
    from scipy import integrate

    alpha, beta, half = float(c.alpha), float(c.beta), float(c.eps) / 2
    z = np.linspace(-zmax, zmax, grid)
    extra = np.array([0.0, 1.0, -1.0])
    if isinstance(noise, CauchyNoise):
        g = float(noise.gamma)
        t = (g - 1) ** (1 / g)
        extra = np.concatenate([extra, [t, -t, t - alpha / 2, -t + alpha / 2]])
    z = np.concatenate([z, extra])
    slide = 0.0
    for d in (alpha, -alpha):
        slide = max(slide, float(np.max(np.abs(noise.log_density(z) - noise.log_density(z + d)))))
    sliding = PrivacyCheck("sliding", slide, half, f"|Delta| <= {alpha}")
    lambdas = np.linspace(-beta, beta, 9)
    if c.measure == "pure":
        zz = np.concatenate([z, np.geomspace(1, 1e12, 400), -np.geomspace(1, 1e12, 400)])
        worst = 0.0
        for lam in lambdas:
            worst = max(worst, float(np.max(np.abs(noise.log_density(zz) - lam - noise.log_density(np.exp(lam) * zz)))))
        return sliding, PrivacyCheck("dilation", worst, half, f"|lambda| <= {beta}")
    worst = 0.0
    for lam in lambdas:
        def gap(v: float, lam: float = float(lam)) -> float:
            a = math.exp(float(noise.log_density(np.array([v]))[0]))
            b = math.exp(half + lam + float(noise.log_density(np.array([math.exp(lam) * v]))[0]))
            return max(0.0, a - b)

        total = 2 * float(integrate.quad(gap, 0, np.inf, limit=400, epsabs=1e-14, epsrel=1e-10)[0])
        worst = max(worst, total)
    return sliding, PrivacyCheck("dilation (hockey-stick)", worst, float(c.delta) / 2, f"|lambda| <= {beta}")


def _renyi(noise: _ZCDPNoise, a: float, s: float, t: float, reverse: bool) -> float:
    """``D_a(P ‖ Q)`` (or ``D_a(Q ‖ P)``) for ``P = Z``, ``Q = e^t Z + s``, by quad."""
    from scipy import integrate

    def logp(v: float) -> float:
        return float(noise.log_density(np.array([v]))[0])

    def logq(v: float) -> float:
        return -t + logp((v - s) * math.exp(-t))

    def integrand(v: float) -> float:
        lp, lq = logp(v), logq(v)
        if reverse:
            lp, lq = lq, lp
        if lp == -math.inf:
            return 0.0
        return math.exp(min(700.0, a * lp + (1 - a) * lq))

    pts = sorted({-1.0, 0.0, float(s), 1.0})
    total = 0.0
    edges = [-math.inf, *pts, math.inf]
    for lo, hi in zip(edges[:-1], edges[1:]):
        total += float(integrate.quad(integrand, lo, hi, limit=400, epsabs=1e-13, epsrel=1e-10)[0])
    return math.log(total) / (a - 1)


def check_zcdp(noise: _ZCDPNoise, c: Admissibility, *, alphas: tuple[float, ...] = (1.5, 2.0, 4.0)) -> PrivacyCheck:
    """Numerically check ``D_a(Z ‖ e^{t'}Z + s') ≤ a ε²/2`` (both orders) on a grid.

    The Rényi divergence is integrated with :func:`scipy.integrate.quad` for each
    ``a`` in ``alphas`` and ``(s', t')`` in ``{±s, 0} × {±t, 0}`` (the corners carry
    the worst case for these monotone families). The worst ratio
    ``D_a / (a ε²/2)`` must be ``≤ 1``.
    """
    worst, where = 0.0, ""
    sa, tb, eps = float(c.alpha), float(c.beta), float(c.eps)
    for a in alphas:
        for s in (sa, -sa, 0.0):
            for t in (tb, -tb, 0.0):
                if s == 0 and t == 0:
                    continue
                for rev in (False, True):
                    ratio = _renyi(noise, a, s, t, rev) / (a * eps**2 / 2)
                    if ratio > worst:
                        worst, where = ratio, f"a={a}, s={s:.4g}, t={t:.4g}, reverse={rev}"
    return PrivacyCheck("renyi", worst, 1.0, where)
