"""Certified privacy-loss-distribution (PLD) composition of discrete Laplace and discrete Gaussian mechanisms.

**The mechanisms.** A part is ``(kind, param, sensitivity)``: an integer query of
sensitivity Δ (``|f(x) − f(x')| <= Δ``, an integer) released as ``f(x) + Z`` with
``Z`` a discrete Laplace of scale t (``P[Z = z] ∝ e^{−|z|/t}``, ``kind="laplace"``,
``param=t``) or a discrete Gaussian of variance parameter σ² (``P[Z = z] ∝
e^{−z²/(2σ²)}``, ``kind="gaussian"``, ``param=σ²``; Canonne–Kamath–Steinke 2020).

**The dominating pair.** Both noises are symmetric and log-concave on the integers,
so the shifts ``{Z + d}`` have a monotone likelihood ratio; the most powerful test of
``Z`` against ``Z + d`` is then a threshold test whose power grows with ``d``
(Lehmann–Romano, *Testing Statistical Hypotheses*, Thm 3.4.1), so the trade-off
function of ``(Z, Z + d)`` is pointwise >= that of ``(Z, Z + Δ)`` for ``0 <= d <= Δ``
(the argument of Dong–Roth–Su 2022, JRSS-B, for log-concave noise), and a negative
shift is its mirror image. So ``(P, Q) = (Z, Z + Δ)`` dominates every neighbouring
pair, in both directions, for add/remove and substitution alike (the relation only
sets Δ). The pair is symmetric (``z ↦ Δ − z`` maps P to Q and Q to P), so its two
hockey-stick divergences are equal: one direction is computed. This is the pair of
dp-accounting's ``from_laplace_mechanism`` / ``from_discrete_gaussian``-style
constructions (Koskela–Jälkö–Honkela 2020; Sommer–Meiser–Mohammadi 2019, "Privacy
loss classes"). Its privacy loss ``L(z) = ln P(z)/Q(z)`` is ``(|z − Δ| − |z|)/t``
(Laplace: ``Δ/t`` for z <= 0, ``−Δ/t`` for z >= Δ, ``(Δ − 2z)/t`` between) and
``(Δ² − 2Δz)/(2σ²)`` (Gaussian; CKS 2020 §2, the normalisers cancel).

**Composition.** Adaptive composition of parts each dominated by its pair is
dominated by the product of the pairs (Dong–Roth–Su 2022 Thm 3.2 / Zhu–Dong–Wang
2022 Thm 10); the PLD of a product is the convolution of the PLDs, and
``δ(ε) = P[L = +∞] + Σ_{L > ε} p(L)(1 − e^{ε − L})`` (Sommer et al. 2019 Thm 1).

**Poisson-subsampled parts.** A part run on a Poisson sample of the units at rate q
(add/remove neighbours; :class:`dpalg.Subsample`) is dominated, when the unit u is
removed, by the pair ``((1 − q)P + qQ, P)`` and, when it is added, by ``(P, (1 − q)P +
qQ)``, with ``(P, Q) = (M(x), M(x ∪ u))`` the part's pair (Zhu–Dong–Wang 2022, Thm 11;
the pair is attained by x = ∅ and a counting query). The two are not symmetric, so a
composition with sampled parts is computed in each direction -- every part of a
composition sees the same direction for a given pair of neighbours -- and δ(ε) is the
larger of the two. An output group of base loss L has the sampled loss ±ln(1 − q +
q·e^{−L}), placed on the grid with certified exp bounds and split as below (any grid
interval that contains the loss may be used).

**Discretisation (pessimistic).** On the grid ``g·Z`` (``g = 2^-m``) every atom of loss
L in ``((j−1)g, jg]`` is split between ``(j−1)g`` and ``jg`` keeping its P- and Q-mass
("connect the dots", Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022): ``p_{j−1} =
(Q e^{jg} − P)/(e^g − 1)``, ``p_j = (P e^g − Q e^{jg})/(e^g − 1)``. The new pair
dominates the old one for every α in both directions, since ``(a + b)_+ <= a_+ + b_+``
(each atom's ``(P − αQ)_+`` and ``(Q − αP)_+`` can only grow), and the formula is
linear, so splitting a bin's total P- and Q-mass equals splitting each atom. Mass
that is dropped from a range moves to a loss that is pessimistic: the Gaussian's
outputs ``|z| > T`` (P-mass at most ``2·tail/N``) go to +∞; after a convolution the
highest losses (mass <= 2^-70) go to +∞ and the lowest are rounded *up* to the
lowest kept loss (both only increase ``(1 − e^{ε−L})_+``, a nondecreasing function
of L).

**Certification.** Per part, the bin masses are enclosed in exact dyadic intervals
(e^x by :func:`dpalg.measures._optimal._exp_bounds`; geometric sums of the discrete
Laplace in closed form; the Gaussian's normaliser between its truncated sum and that
plus the geometric tail bound ``w(T+1)/(1 − e^{−(2T+3)/(2σ²)})`` per side), and the
split masses' upper ends rounded up to floats. Convolutions are float64 ``np.convolve``
(a direct sum of products, no FFT) of nonnegative vectors, whose computed value ``ĉ``
satisfies ``c <= (ĉ + n·2^-1073)/(1 − γ_n)``, ``γ_n = nu/(1 − nu)``, ``u = 2^-53``, for
any order of summation (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed., §3.1 eq. (3.5), with the underflow term of §2.1); every array carries an exact
``(R, A)`` with ``true <= R·computed + A`` elementwise. The final δ(ε) is summed in
exact integer arithmetic with e^{−jg} bounded below, and rounded up.

References:
    C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. NeurIPS 2020.
    D. Sommer, S. Meiser, E. Mohammadi. Privacy Loss Classes. PoPETs 2019.
    A. Koskela, J. Jälkö, A. Honkela. Computing Tight Differential Privacy Guarantees Using FFT. AISTATS 2020.
    V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi. Connect the Dots. PoPETs 2022.
    J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022.
    Y. Zhu, J. Dong, Y.-X. Wang. Optimal Accounting of Differential Privacy via Characteristic Function. AISTATS 2022.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Final, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.measures._optimal import _exp_bounds, _round_down, _round_up

__all__ = ["PLDKind", "PLDPart", "PLDSampled", "pld_delta", "pld_epsilon"]

PLDKind = Literal["laplace", "gaussian"]
#: ``(kind, param, sensitivity)``: discrete Laplace scale t or discrete Gaussian σ², integer sensitivity Δ >= 1
PLDPart = tuple[PLDKind, Fraction, int]
#: a part run on a Poisson sample of the units at rate q in (0, 1]: ``(part, q)``
PLDSampled = tuple[PLDPart, Fraction]
_Key = tuple[tuple[tuple[PLDPart, Fraction], int], ...]

_BITS: Final = 160  # precision of the per-part enclosures
_FIX: Final = 128  # fixed-point bits of e^{-jg} in the final sum
_U: Final = Fraction(1, 1 << 53)
_TINY: Final = Fraction(1, 1 << 1073)
_TAIL_EXP: Final = 56  # Gaussian truncation: e^{-T²/(2σ²)} <= e^{-56} (about 2^-80.8)
_MAX_OUTPUTS: Final = 1 << 15  # a Gaussian with more outputs in [-T, T] is not handled (None)
#: the float mass moved to +∞ (top) or rounded up (bottom) after a convolution: 2^-70, or, for
#: :func:`pld_epsilon`, up to 2^-24·δ over the number of convolutions (the moved mass adds at most
#: that to δ; soundness never depends on it: the moved mass is bounded exactly and charged)
_TRIM: Final = 2.0**-70
_MAX_POINTS: Final = 1 << 15  # target grid points of the composed PLD (time only, not soundness)
_M_RANGE: Final = (2, 11)  # grid g = 2^-m with m in this range
_EPS_REL: Final = 40


class _Dist(NamedTuple):
    """A sub-probability on the losses (lo + i)·g, i < len(arr): true mass <= r·arr[i] + a; ``inf`` >= P[+∞]."""

    lo: int
    arr: npt.NDArray[np.float64]
    r: Fraction
    a: Fraction
    inf: Fraction


def _float_up(x: Fraction) -> float:
    if x <= 0:
        return 0.0
    f = float(x)  # correctly rounded
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _iv_mul(a: tuple[Fraction, Fraction], b: tuple[Fraction, Fraction]) -> tuple[Fraction, Fraction]:
    """Product of two nonnegative intervals, rounded outward."""
    return _round_down(a[0] * b[0], _BITS), _round_up(a[1] * b[1], _BITS)


def _exp_iv(x: Fraction) -> tuple[Fraction, Fraction]:
    return _exp_bounds(x, _BITS)


#: a group of outputs whose losses L = ln P/Q all lie in [L_lo, L_hi], with enclosures of its P- and Q-mass
_Atom = tuple[Fraction, Fraction, tuple[Fraction, Fraction], tuple[Fraction, Fraction]]


def _laplace_atoms(t: Fraction, delta: int, g: Fraction) -> list[_Atom]:
    """The discrete Laplace pair's outputs in groups: z <= 0, z >= Δ, and the z in between whose loss falls in one bin of g."""
    q = _exp_iv(-1 / t)
    inv = (1 / (1 + q[1]), 1 / (1 + q[0]))  # 1/(1+q)

    def qpow(n: int) -> tuple[Fraction, Fraction]:
        return _exp_iv(Fraction(-n) / t)

    def bin_of(loss: Fraction) -> int:
        return -((-loss) // g)  # ceil(loss/g)

    eps0 = Fraction(delta) / t
    qd = _iv_mul(qpow(delta), inv)
    atoms: list[_Atom] = [(eps0, eps0, inv, qd), (-eps0, -eps0, qd, inv)]  # z <= 0: P = 1/(1+q), Q = q^Δ/(1+q); z >= Δ: mirror
    if delta > 1:
        for j in range(bin_of(Fraction(2 - delta) / t), bin_of(Fraction(delta - 2) / t) + 1):
            # (j−1)g < (Δ − 2z)/t <= jg  <=>  (Δ − jgt)/2 <= z < (Δ − (j−1)gt)/2
            z1 = max(1, -((-(delta - j * g * t)) // 2))
            z2 = min(delta - 1, -((-(delta - (j - 1) * g * t)) // 2) - 1)
            if z1 > z2:
                continue
            a, b = qpow(z1), qpow(z2 + 1)  # P_bin = (q^{z1} − q^{z2+1})/(1+q)
            c, d = qpow(delta - z2), qpow(delta - z1 + 1)  # Q_bin = (q^{Δ−z2} − q^{Δ−z1+1})/(1+q)
            p_iv = _iv_mul((max(Fraction(0), a[0] - b[1]), a[1] - b[0]), inv)
            q_iv = _iv_mul((max(Fraction(0), c[0] - d[1]), c[1] - d[0]), inv)
            atoms.append((Fraction(delta - 2 * z2) / t, Fraction(delta - 2 * z1) / t, p_iv, q_iv))
    return atoms


def _gaussian_atoms(sigma2: Fraction, delta: int, upper: int) -> tuple[list[_Atom], Fraction] | None:
    """The discrete Gaussian pair's outputs z in [−T, T + ``upper``], one atom each, and a bound on the mass of the others.

    The bound holds for the P-mass of the outputs left out and, when ``upper = Δ``, for their Q-mass too
    (``P[Z ∉ [−T, T]]`` and ``P[Z + Δ ∉ [−T, T + Δ]]`` are both at most ``2·tail/N``).
    """
    t_out = math.isqrt(int(math.ceil(2 * _TAIL_EXP * sigma2))) + 1  # T² >= 2·56·σ²
    if 2 * t_out + delta + upper + 1 > _MAX_OUTPUTS:
        return None
    w: dict[int, tuple[Fraction, Fraction]] = {
        z: _exp_iv(-Fraction(z * z) / (2 * sigma2)) for z in range(-t_out - delta, t_out + upper + 1)
    }
    n_lo = sum((w[z][0] for z in range(-t_out, t_out + 1)), Fraction(0))
    r = _exp_iv(-Fraction(2 * t_out + 3) / (2 * sigma2))[1]
    tail = _round_up(_exp_iv(-Fraction((t_out + 1) ** 2) / (2 * sigma2))[1] / (1 - r), _BITS)  # Σ_{z > T} w(z)
    n_hi = sum((w[z][1] for z in range(-t_out, t_out + 1)), Fraction(0)) + 2 * tail
    inv = (_round_down(1 / n_hi, _BITS), _round_up(1 / n_lo, _BITS))
    atoms: list[_Atom] = []
    for z in range(-t_out, t_out + upper + 1):
        loss = Fraction(delta * delta - 2 * delta * z) / (2 * sigma2)
        atoms.append((loss, loss, _iv_mul(w[z], inv), _iv_mul(w[z - delta], inv)))
    return atoms, _round_up(2 * tail * inv[1], _BITS)


def _bins(atoms: list[_Atom], g: Fraction) -> dict[int, list[Fraction]]:
    """Bin j (losses in ((j−1)g, jg]) -> [P_lo, P_hi, Q_lo, Q_hi]; each atom's losses lie in one bin by construction."""
    bins: dict[int, list[Fraction]] = {}
    for _, hi, p, qq in atoms:
        cur = bins.setdefault(-((-hi) // g), [Fraction(0)] * 4)
        cur[0] += max(Fraction(0), p[0])
        cur[1] += p[1]
        cur[2] += max(Fraction(0), qq[0])
        cur[3] += qq[1]
    return bins


def _split(bins: dict[int, list[Fraction]], inf: Fraction, m: int) -> _Dist:
    """Connect the dots: each bin's P- and Q-mass onto its two grid ends (module docstring), upper bounds as floats."""
    g = Fraction(1, 1 << m)
    eg = _exp_iv(g)
    den = eg[0] - 1  # e^g − 1, lower end
    lo_j, hi_j = min(bins) - 1, max(bins)
    arr = np.zeros(hi_j - lo_j + 1, dtype=np.float64)
    up: dict[int, Fraction] = {}
    for j, (p_lo, p_hi, q_lo, q_hi) in bins.items():
        ej = _exp_iv(j * g)
        left = (_round_up(q_hi * ej[1], _BITS) - p_lo) / den
        right = (_round_up(p_hi * eg[1], _BITS) - _round_down(q_lo * ej[0], _BITS)) / den
        up[j - 1] = up.get(j - 1, Fraction(0)) + max(Fraction(0), left)
        up[j] = up.get(j, Fraction(0)) + max(Fraction(0), right)
    for j, v in up.items():
        arr[j - lo_j] = _float_up(v)
    return _Dist(lo_j, arr, Fraction(1), Fraction(0), inf)


def _loss_grid(lo: Fraction, hi: Fraction, m: int) -> tuple[int, int]:
    """Grid indices a <= b with a·g <= ln(lo) and ln(hi) <= b·g (0 < lo <= hi; certified by exp bounds)."""
    # ln of the numerator and denominator (math.log takes any int): float(lo) or float(hi) would overflow
    # for a loss beyond ~709 (a discrete Laplace of Δ/t > 709) and underflow to 0 for a rate within 1e-308 of 1
    a = math.floor((math.log(lo.numerator) - math.log(lo.denominator)) * (1 << m)) if lo > 0 else 0
    while _exp_iv(Fraction(a, 1 << m))[1] > lo:
        a -= 1
    b = math.ceil((math.log(hi.numerator) - math.log(hi.denominator)) * (1 << m))
    while _exp_iv(Fraction(b, 1 << m))[0] < hi:
        b += 1
    while b > a and _exp_iv(Fraction(b - 1, 1 << m))[0] >= hi:  # the float guess may be a step high
        b -= 1
    while a < b and _exp_iv(Fraction(a + 1, 1 << m))[1] <= lo:
        a += 1
    return a, b


def _subsampled_dist(atoms: list[_Atom], inf: Fraction, rate: Fraction, m: int, remove: bool) -> _Dist:
    """The pair of the part run on a Poisson sample at ``rate``, one direction, split onto the grid (connect the dots).

    With (P, Q) = (M(x), M(x ∪ u)) the part's pair and q the rate, the sampled mechanism's pair is
    ``((1 − q)P + qQ, P)`` when the unit u is removed (``remove``) and ``(P, (1 − q)P + qQ)`` when it is
    added (Zhu–Dong–Wang 2022, Thm 11). An atom of base loss L = ln P/Q then has the loss
    ``ln(1 − q + q·e^{−L})`` (removal) or its negative (addition), a monotone function of L, so a group of
    atoms with L in [L_lo, L_hi] has its losses in an interval [a·g, b·g] on the grid, found with certified
    exp bounds (:func:`_loss_grid`); its first- and second-distribution masses F and S are split onto the
    interval's ends, ``p_a = (S·e^{bg} − F)/(e^{(b−a)g} − 1)`` and ``p_b = (F·e^{(b−a)g} − S·e^{bg})/(e^{(b−a)g} − 1)``,
    which keeps both masses and dominates the atom for every α (Doroshenko et al. 2022, for any interval
    containing the loss). Mass outside the enumerated outputs (at most ``inf`` under P and under Q) goes
    to +∞.
    """
    one = Fraction(1)
    up: dict[int, Fraction] = {}
    for l_lo, l_hi, p, qq in atoms:
        mix = (_round_down((1 - rate) * p[0] + rate * qq[0], _BITS), _round_up((1 - rate) * p[1] + rate * qq[1], _BITS))
        # u(L) = 1 − q + q·e^{−L} is decreasing in L: enclose it over [L_lo, L_hi]
        u_lo = _round_down(1 - rate + rate * _exp_iv(-l_hi)[0], _BITS)
        u_hi = _round_up(1 - rate + rate * _exp_iv(-l_lo)[1], _BITS)
        if remove:  # loss ln u, first = mix, second = P
            a, b = _loss_grid(u_lo, u_hi, m)
            first, second = mix, p
        else:  # loss −ln u, first = P, second = mix
            na, nb = _loss_grid(u_lo, u_hi, m)
            a, b = -nb, -na
            first, second = p, mix
        if a == b:  # the loss is exactly a·g: no split
            up[a] = up.get(a, Fraction(0)) + first[1]
            continue
        ew = _exp_iv(Fraction(b - a, 1 << m))
        eb = _exp_iv(Fraction(b, 1 << m))
        den = ew[0] - 1
        left = (_round_up(second[1] * eb[1], _BITS) - max(Fraction(0), first[0])) / den
        right = (_round_up(first[1] * ew[1], _BITS) - _round_down(max(Fraction(0), second[0]) * eb[0], _BITS)) / den
        up[a] = up.get(a, Fraction(0)) + max(Fraction(0), left)
        up[b] = up.get(b, Fraction(0)) + max(Fraction(0), right)
    lo_j, hi_j = min(up), max(up)
    arr = np.zeros(hi_j - lo_j + 1, dtype=np.float64)
    for j, v in up.items():
        arr[j - lo_j] = _float_up(v)
    return _Dist(lo_j, arr, one, Fraction(0), inf)  # (1 − q)·inf + q·inf under the mixture, inf under P


@lru_cache(maxsize=64)
def _part_dist(part: PLDPart, m: int) -> _Dist | None:
    kind, param, delta = part
    g = Fraction(1, 1 << m)
    if kind == "laplace":
        return _split(_bins(_laplace_atoms(param, delta, g), g), Fraction(0), m)
    made = _gaussian_atoms(param, delta, 0)
    return None if made is None else _split(_bins(made[0], g), made[1], m)


@lru_cache(maxsize=64)
def _sampled_dist(part: PLDPart, rate: Fraction, m: int, remove: bool) -> _Dist | None:
    kind, param, delta = part
    if kind == "laplace":
        return _subsampled_dist(_laplace_atoms(param, delta, Fraction(1, 1 << m)), Fraction(0), rate, m, remove)
    made = _gaussian_atoms(param, delta, delta)  # outputs [−T, T + Δ]: the Q-mass left out is bounded too
    return None if made is None else _subsampled_dist(made[0], made[1], rate, m, remove)


def _sum_up(x: npt.NDArray[np.float64]) -> Fraction:
    return Fraction(math.fsum(x.tolist())) * (1 + 4 * _U) if len(x) else Fraction(0)


def _bound(x: Fraction) -> Fraction:
    """``x`` rounded *up* to ``_BITS`` significant bits: the error terms stay upper bounds, and their
    denominators stay small (exact products over many convolutions would grow without bound)."""
    return _round_up(x, _BITS) if x > 0 else x


def _trim(d: _Dist, tau: float) -> _Dist:
    """Move the top tail (float mass <= ``tau``) to +∞ and round the bottom tail (the same) up to the lowest kept loss."""
    arr = d.arr
    n = len(arr)
    if n <= 2:
        return d
    top = np.cumsum(arr[::-1])
    k_top = int(np.searchsorted(top, tau, side="right"))  # entries from the top with cumulative mass <= tau
    bottom = np.cumsum(arr)
    k_bot = int(np.searchsorted(bottom, tau, side="right"))
    k_top, k_bot = min(k_top, n - 2), min(k_bot, n - 2 - min(k_top, n - 2))
    inf = d.inf
    if k_top:
        inf += d.r * _sum_up(arr[n - k_top :]) + k_top * d.a
        arr = arr[: n - k_top]
    a = d.a
    lo = d.lo
    if k_bot:
        merged = math.fsum(arr[: k_bot + 1].tolist())
        arr = arr[k_bot:].copy()
        arr[0] = math.nextafter(merged, math.inf)  # >= the exact sum of the merged floats
        a = a * (k_bot + 1)  # the merged entry carries k_bot + 1 absolute errors
        lo += k_bot
    return _Dist(lo, arr, _bound(d.r), _bound(a), _bound(inf))


def _convolve(x: _Dist, y: _Dist, tau: float) -> _Dist:
    z = np.convolve(x.arr, y.arr)
    n = min(len(x.arr), len(y.arr))
    gamma = n * _U / (1 - n * _U)
    rr = x.r * y.r
    r = rr / (1 - gamma)
    a = rr * n * _TINY / (1 - gamma) + x.r * y.a * _sum_up(x.arr) + x.a * y.r * _sum_up(y.arr) + n * x.a * y.a
    return _trim(_Dist(x.lo + y.lo, z, r, a, x.inf + y.inf), tau)


def _power(d: _Dist, k: int, tau: float) -> _Dist:
    result: _Dist | None = None
    base = d
    while k:
        if k & 1:
            result = base if result is None else _convolve(result, base, tau)
        k >>= 1
        if k:
            base = _convolve(base, base, tau)
    assert result is not None
    return result


def _moments(item: tuple[PLDPart, Fraction]) -> tuple[float, float, float]:
    """(mean, variance, max |loss|) of the part's loss, roughly (to choose the grid only)."""
    (kind, param, delta), rate = item
    if kind == "laplace":
        e0 = float(delta / param)
        mean, var, top = e0 * e0 / 2, e0 * e0, e0
    else:
        mu2 = float(delta * delta / param)
        mean, var, top = mu2 / 2, mu2, mu2 / 2 + delta * math.sqrt(2 * _TAIL_EXP / float(param))
    if rate == 1:
        return mean, var, top
    q = float(rate)  # a sampled loss is about q times the part's, and at most ln(1 + q(e^top − 1)) in size
    return q * q * mean, q * q * var, math.log1p(q * math.expm1(min(top, 700.0)))


def _grid(key: _Key) -> int:
    mean = sum(_moments(p)[0] * k for p, k in key)
    var = sum(_moments(p)[1] * k for p, k in key)
    width = min(sum(2 * _moments(p)[2] * k for p, k in key), 2 * mean + 16 * math.sqrt(var) + 2 * max(_moments(p)[2] for p, _ in key))
    m = math.floor(math.log2(_MAX_POINTS / max(width, 1e-9)))
    return min(_M_RANGE[1], max(_M_RANGE[0], m))


class _Tail(NamedTuple):
    """The composed PLD's positive losses, ready for δ(ε): j·g, prefix sums from the top (exact integers)."""

    m: int
    js: list[int]  # positive grid indices, ascending
    sa: list[int]  # Σ of the top i masses, scaled by 2^1074
    sb: list[int]  # Σ of the top i masses · e^{−jg} (lower bound), scaled by 2^(1074 + _FIX)
    r: Fraction
    a: Fraction
    inf: Fraction


@lru_cache(maxsize=16)
def _composed(key: _Key, tau: float) -> tuple[_Tail, ...] | None:
    """The composed PLD, one per direction: one when no part is sampled (every pair is symmetric), else two.

    For a given pair of neighbours every part sees the same direction (the unit is added, or removed), so the
    composition of each direction is the convolution of that direction's PLDs, and δ(ε) is the larger of the
    two (Zhu–Dong–Wang 2022, Thm 10 for each direction). A part that is not sampled has one PLD for both
    (its pair is symmetric, module docstring).
    """
    m = _grid(key)
    sampled = any(rate != 1 for (_, rate), _ in key)
    tails: list[_Tail] = []
    for remove in (True, False) if sampled else (True,):
        total: _Dist | None = None
        for (part, rate), k in key:
            d = _part_dist(part, m) if rate == 1 else _sampled_dist(part, rate, m, remove)
            if d is None:
                return None
            p = _power(d, k, tau)
            total = p if total is None else _convolve(total, p, tau)
        assert total is not None
        tails.append(_tail(total, m))
    return tuple(tails)


def _tail(total: _Dist, m: int) -> _Tail:
    g = Fraction(1, 1 << m)
    first = max(1, total.lo)
    js = list(range(first, total.lo + len(total.arr)))
    e1 = (_exp_bounds(-g, _FIX)[0].numerator << _FIX) // _exp_bounds(-g, _FIX)[0].denominator
    e = (_exp_bounds(-first * g, _FIX)[0].numerator << _FIX) // _exp_bounds(-first * g, _FIX)[0].denominator
    ints: list[int] = []
    exps: list[int] = []
    for j in js:
        num, den = float(total.arr[j - total.lo]).as_integer_ratio()
        ints.append(num * ((1 << 1074) // den))  # exact: den is a power of two <= 2^1074
        exps.append(e)
        e = (e * e1) >> _FIX
    sa, sb = [0], [0]
    for x, ex in zip(reversed(ints), reversed(exps)):
        sa.append(sa[-1] + x)
        sb.append(sb[-1] + x * ex)
    return _Tail(m, js, sa, sb, total.r, total.a, total.inf)


def _delta_up(tail: _Tail, eps: Fraction) -> Fraction:
    """δ(ε) <= P[+∞] + Σ_{jg > ε} (r·p̂_j + a)(1 − e^{ε − jg}), with e^{−jg} and e^ε bounded below."""
    threshold = (eps.numerator << tail.m) // eps.denominator  # jg > ε  <=>  j > floor(ε·2^m)
    count = len(tail.js) - bisect_right(tail.js, threshold)
    e_lo = _exp_bounds(eps, _FIX)[0]
    e_fix = (e_lo.numerator << _FIX) // e_lo.denominator  # <= e^ε·2^_FIX
    body = max(0, (tail.sa[count] << (2 * _FIX)) - e_fix * tail.sb[count])  # scaled by 2^(1074 + 2·_FIX)
    value = tail.inf + tail.r * Fraction(body, 1 << (1074 + 2 * _FIX)) + tail.a * count
    return min(Fraction(1), _round_up(value))


def _key(parts: Sequence[tuple[PLDPart | PLDSampled, int]], owner: str) -> _Key:
    merged: dict[tuple[PLDPart, Fraction], int] = {}
    for i, item in enumerate(parts):
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], tuple) or len(item[0]) not in (2, 3):
            raise InvalidArgument(
                owner, f"parts[{i}]", type(item).__name__, "must be ((kind, param, sensitivity), count) or (((kind, param, sensitivity), rate), count)",
            )
        head, k = item
        rate = Fraction(1)
        if len(head) == 2:
            base, raw_rate = head
            rate = to_fraction(raw_rate, owner=owner, field=f"parts[{i}].rate")
            if not 0 < rate <= 1:
                raise InvalidArgument(owner, f"parts[{i}].rate", rate, "must be in (0, 1]")
            if not isinstance(base, tuple) or len(base) != 3:
                raise InvalidArgument(owner, f"parts[{i}]", type(base).__name__, "must hold (kind, param, sensitivity) and a rate")
        else:
            base = head
        kind, raw, delta = base
        if kind not in ("laplace", "gaussian"):
            raise InvalidArgument(owner, f"parts[{i}].kind", kind, "must be 'laplace' or 'gaussian'")
        param = to_fraction(raw, owner=owner, field=f"parts[{i}].param")
        if param <= 0:
            raise InvalidArgument(owner, f"parts[{i}].param", param, "must be > 0")
        if isinstance(delta, bool) or not isinstance(delta, int) or delta < 1:
            raise InvalidArgument(owner, f"parts[{i}].sensitivity", delta, "must be an int >= 1")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgument(owner, f"parts[{i}].count", k, "must be an int >= 0")
        if k:
            p: tuple[PLDPart, Fraction] = ((kind, param, delta), rate)
            merged[p] = merged.get(p, 0) + k
    if not merged:
        raise InvalidArgument(owner, "parts", len(parts), "must contain at least one part with count >= 1")
    return tuple(sorted(merged.items()))


def _delta_max(tails: tuple[_Tail, ...], eps: Fraction) -> Fraction:
    return max(_delta_up(t, eps) for t in tails)


def pld_delta(parts: Sequence[tuple[PLDPart | PLDSampled, int]], epsilon: ExactLike) -> Fraction | None:
    """A certified upper bound on δ(ε) of composing ``parts``.

    Each item is ``((kind, param, Δ), count)``, or ``(((kind, param, Δ), q), count)`` for the part run on a
    Poisson sample of the units at rate q (add/remove neighbours). ``None`` when a discrete Gaussian has more
    than 2^15 outputs in its truncated range.

    Examples:
        >>> d = pld_delta([(("laplace", Fraction(10), 1), 100)], Fraction(4775, 1000))
        >>> d is not None and 0 < d <= Fraction(1, 10**6)
        True
        >>> s = pld_delta([((("laplace", Fraction(10), 1), Fraction(1, 10)), 100)], Fraction(1, 2))
        >>> s is not None and s < d
        True
    """
    owner = "pld_delta"
    key = _key(parts, owner)
    eps = to_fraction(epsilon, owner=owner, field="epsilon")
    if eps < 0:
        raise InvalidArgument(owner, "epsilon", eps, "must be >= 0")
    tails = _composed(key, _TRIM)
    return None if tails is None else _delta_max(tails, eps)


def pld_epsilon(parts: Sequence[tuple[PLDPart | PLDSampled, int]], delta: ExactLike) -> Fraction | None:
    """The smallest certified ε (dyadic, rounded up, within a relative 2^-40) with :func:`pld_delta` <= ``delta``.

    ``None`` when no ε works (the +∞ mass exceeds ``delta``) or the parts are not handled.

    Examples:
        >>> eps = pld_epsilon([(("laplace", Fraction(10), 1), 100)], Fraction(1, 10**6))
        >>> 4.7745 <= float(eps) <= 4.78  # KOV's exact optimum for 100 x 0.1-DP is 4.77456...
        True
    """
    owner = "pld_epsilon"
    key = _key(parts, owner)
    target = to_fraction(delta, owner=owner, field="delta")
    if not 0 <= target <= 1:
        raise InvalidArgument(owner, "delta", target, "must be in [0, 1]")
    tails = _composed(key, max(_TRIM, float(target) * 2.0**-24 / (4 * sum(k.bit_length() for _, k in key) + 4)))
    if tails is None:
        return None
    zero = Fraction(0)
    if _delta_max(tails, zero) <= target:
        return zero
    top = max((Fraction(t.js[-1] + 1, 1 << t.m) if t.js else zero) for t in tails)
    if _delta_max(tails, top) > target:
        return None
    fail, passed = zero, top
    while passed - fail > passed / (1 << _EPS_REL):
        mid = _round_up((fail + passed) / 2)
        if mid >= passed or mid <= fail:
            break
        if _delta_max(tails, mid) <= target:
            passed = mid
        else:
            fail = mid
    return passed
