"""Optimal composition of (ε_j, δ_j)-DP mechanisms, certified by interval arithmetic.

**The theorem.** Kairouz, Oh and Viswanath (ICML 2015, Theorem 3.3) give the exact
privacy region of the k-fold adaptive composition of (ε₀, δ₀)-DP mechanisms;
Murtagh and Vadhan (TCC 2016 / Theory of Computing 14(8), 2018, Theorem 1.5) extend
it to mechanisms with different parameters (ε_1, δ_1), …, (ε_k, δ_k): the
composition is (ε, δ)-DP exactly when

    δ ≥ 1 − Π_j(1−δ_j) · (1 − Σ_{S⊆[k]} max(0, e^{Σ_{j∈S} ε_j} − e^ε · e^{Σ_{j∉S} ε_j}) / Π_j(1+e^{ε_j})),

and the smallest such δ is the hockey-stick divergence of the product of the
worst-case pairs P_j = (δ_j, (1−δ_j)e^{ε_j}/(1+e^{ε_j}), (1−δ_j)/(1+e^{ε_j}), 0)
and their mirrors Q_j (KOV 2015, the dominating mechanism in the proof of Theorem 3.3;
the same pair is dp-accounting's ``from_privacy_parameters``: privacy loss +∞ with
probability δ, ±ε otherwise).

**The form computed here.** Dividing the summand for S by Π_j(1+e^{ε_j}) and writing
L_S = Σ_{j∈S} ε_j − Σ_{j∉S} ε_j, the summand is P[S] · max(0, 1 − e^{ε − L_S}) where
P[S] = Π_{j∈S} e^{ε_j}/(1+e^{ε_j}) · Π_{j∉S} 1/(1+e^{ε_j}). So, with L the privacy
loss under P (each copy of mechanism j contributes +ε_j with probability
e^{ε_j}/(1+e^{ε_j}) and −ε_j otherwise, independently),

    δ(ε) = 1 − Π_j(1−δ_j)^{k_j} · (1 − H_ε),   H_ε = E_P[max(0, 1 − e^{ε−L})].

For k_j copies of (ε_j, δ_j), L = Σ_j ε_j(k_j − 2l_j) with l_j ~ Binomial(k_j,
1/(1+e^{ε_j})) independent. The pair is symmetric (Q is P with every coordinate
mirrored), so both directions of the divergence are equal, and the Q-probability of
loss value L is the P-probability of −L, i.e. P(L)·e^{−L}. With the loss values
L_1 > L_2 > … sorted, on each segment L_{m+1} ≤ ε ≤ L_m

    H_ε = A_m − e^ε · B_m,   A_m = Σ_{i≤m} P(L_i),   B_m = Σ_{i≤m} P(−L_i),

so δ(ε) = target is solved per segment in closed form (ε = ln((A_m − h)/B_m)).

**Certification.** Every irrational quantity is enclosed in an interval:

* e^x by mpmath's directed rounding (x rounded outwards, then ``mpf_exp`` with
  round-floor / round-ceiling) at ``bits + 8 + log2|x|`` bits, then widened by a relative 2^-(bits+4), far more than the
  few-ulp error of the evaluation (the ``exp_upper`` / zCDP-conversion pattern);
* the binomial probabilities of each group as integers scaled by 2^bits relative to
  the probability at (approximately) the mode, filled by the exact ratio recursion
  p(l−1)/p(l) = l·e^{ε_j}/(k−l+1) with floor (lower table) and ceiling (upper table)
  at every step, and normalised by the table sums (Σ_l p(l) = 1), so no binomial
  coefficient or power is ever formed;
* groups with different ε_j are convolved with the same directed rounding;
* Π(1−δ_j)^{k_j} by binary powering with directed rounding.

The result is the upper end of the enclosure of δ(ε), rounded *up* to 64
significant bits; the working precision is doubled (192 → 1536 bits) until the
enclosure is narrower than a relative 2^-80, so the answer is within a relative
2^-63 of the optimum (if 1536 bits do not reach that, as for a δ(ε) below about
2^-1300, the bound is still valid, only looser). For ε ≥ Σ_j k_j ε_j the bound is also capped by basic
composition Σ_j k_j δ_j (which is ≥ 1 − Π(1−δ_j)^{k_j} = δ(ε) there).

The exact computation is #P-complete in general (Murtagh–Vadhan); it is
done here only when the number of loss combinations Π_j (k_j + 1) over distinct ε_j
is at most :data:`MAX_COMBINATIONS` (a public, data-independent cap).

References:
    P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for Differential
    Privacy. ICML 2015, Theorem 3.3.
    J. Murtagh, S. Vadhan. The Complexity of Computing the Optimal Composition of
    Differential Privacy. TCC 2016-A; Theory of Computing 14(8), 2018, Theorem 1.5.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Final, NamedTuple

from dpalg._errors import InvalidArgument, Unsupported
from dpalg._numbers import ExactLike, to_fraction

__all__ = ["MAX_COMBINATIONS", "optimal_delta", "optimal_epsilon"]

#: The largest number of loss combinations Π_j (k_j + 1) (over distinct ε_j > 0)
#: that is enumerated; above it :func:`optimal_epsilon` returns ``None``.
MAX_COMBINATIONS: Final = 2_000_000

_BITS0: Final = 192  # first working precision (table scale, exp enclosures)
_BITS_MAX: Final = 1536
_TIGHT: Final = 80  # the enclosure is accepted when narrower than 2^-_TIGHT relative
_OUT_BITS: Final = 64  # significant bits of a returned rational
_EPS_REL: Final = 40  # optimal_epsilon stops refining at a relative 2^-_EPS_REL

_Key = tuple[tuple[Fraction, Fraction, int], ...]  # merged (ε_j, δ_j, k_j), sorted


def _dyadic(t: tuple[int, int, int, int]) -> Fraction:
    sign, man, exp, _ = t
    value = Fraction(man) * Fraction(2) ** exp if exp >= 0 else Fraction(man, 1 << -exp)
    return -value if sign else value


def _exp_bounds(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """Dyadic rationals lo <= e^x <= hi, within a relative ~2^-bits of each other."""
    if x == 0:
        return Fraction(1), Fraction(1)
    from mpmath.libmp import from_rational, mpf_exp, round_ceiling, round_floor

    prec = bits + 8 + (abs(x.numerator) // x.denominator).bit_length()  # the input's rounding, amplified by |x|
    lo = _dyadic(mpf_exp(from_rational(x.numerator, x.denominator, prec, round_floor), prec, round_floor))
    hi = _dyadic(mpf_exp(from_rational(x.numerator, x.denominator, prec, round_ceiling), prec, round_ceiling))
    margin = Fraction(1, 1 << (bits + 4))
    return lo * (1 - margin), hi * (1 + margin)


def _round_up(x: Fraction, bits: int = _OUT_BITS) -> Fraction:
    """The smallest multiple of 2^(e−bits) that is >= x (x > 0, 2^(e−1) <= x < 2^(e+1)); 0 for x <= 0."""
    if x <= 0:
        return Fraction(0)
    n, d = x.numerator, x.denominator
    shift = bits - (n.bit_length() - d.bit_length())
    if shift >= 0:
        return Fraction(-((-n << shift) // d), 1 << shift)
    return Fraction(-((-n) // (d << -shift)) << -shift)


def _floor_at(x: Fraction, bits: int) -> int:
    return (x.numerator << bits) // x.denominator


def _ceil_at(x: Fraction, bits: int) -> int:
    return -((-x.numerator << bits) // x.denominator)


def _pow_bounds(x: Fraction, k: int, bits: int) -> tuple[Fraction, Fraction]:
    """lo <= x^k <= hi for 0 <= x <= 1, by binary powering in fixed point with directed rounding."""
    if k == 0 or x == 1:
        return Fraction(1), Fraction(1)
    if x == 0:
        return Fraction(0), Fraction(0)
    base_lo, base_hi = _floor_at(x, bits), _ceil_at(x, bits)
    one = 1 << bits
    acc_lo, acc_hi = one, one
    n = k
    while n:
        if n & 1:
            acc_lo = (acc_lo * base_lo) >> bits
            acc_hi = -((-acc_hi * base_hi) >> bits)
        n >>= 1
        if n:
            base_lo = (base_lo * base_lo) >> bits
            base_hi = -((-base_hi * base_hi) >> bits)
    return Fraction(acc_lo, one), Fraction(min(acc_hi, one), one)


def _binomial_table(eps: Fraction, k: int, bits: int) -> tuple[list[int], list[int], int, int]:
    """Integer enclosures of p(l) = P[l minus-steps], l = 0..k, for one group.

    Returns ``(lo, hi, z_lo, z_hi)`` with lo[l]/z_hi <= p(l) <= hi[l]/z_lo, where
    p(l) = C(k, l) e^{ε(k−l)} / (1+e^ε)^k. The tables are p(l)/p(m)·2^bits for an
    approximate mode m, rounded down (lo) and up (hi) at every step of the ratio
    recursion; z = Σ table, since Σ_l p(l) = 1.
    """
    q_lo, q_hi = _exp_bounds(eps, bits)
    ql, qh = _floor_at(q_lo, bits), _ceil_at(q_hi, bits)
    b = 1.0 / (1.0 + math.exp(float(eps))) if eps < 700 else 0.0
    m = min(k, max(0, math.floor((k + 1) * b)))
    lo = [0] * (k + 1)
    hi = [1] * (k + 1)  # 1 ulp: the upper bound of the far tails (filled below otherwise)
    one = 1 << bits
    lo[m] = hi[m] = one
    # Downwards: p(l−1)/p(l) = l·q/(k−l+1), decreasing as l decreases.
    h, w = one, one
    for l in range(m, 0, -1):
        den = (k - l + 1) << bits
        h = -((-h * l * qh) // den)
        w = (w * l * ql) // den
        hi[l - 1], lo[l - 1] = h, w
        if h <= 1 and w == 0 and l * qh <= den:
            break  # every further ratio is <= 1: the rest stays (0, 1)
    # Upwards: p(l+1)/p(l) = (k−l)/((l+1)·q), decreasing as l increases.
    h, w = one, one
    for l in range(m, k):
        num = (k - l) << bits
        h = -((-h * num) // ((l + 1) * ql))
        w = (w * num) // ((l + 1) * qh)
        hi[l + 1], lo[l + 1] = h, w
        if h <= 1 and w == 0 and num <= (l + 1) * ql:
            break
    return lo, hi, sum(lo), sum(hi)


class _Atoms(NamedTuple):
    """The positive part of the loss distribution of P, enclosed at ``bits`` bits."""

    bits: int
    scale: int  # losses are integers in units of 1/scale
    asc: list[int]  # the positive loss values, ascending (for bisection)
    p_lo: list[int]  # prefix sums over the losses in *descending* order, from 0
    p_hi: list[int]
    q_lo: list[int]  # the same for P(−L) = Q(L)
    q_hi: list[int]
    z_lo: Fraction  # probability = table value / z  (z_lo <= z <= z_hi)
    z_hi: Fraction
    pi_lo: Fraction  # Π(1−δ_j)^{k_j}
    pi_hi: Fraction
    top: Fraction  # Σ k_j ε_j: δ(ε) = 1 − Π(1−δ_j)^{k_j} for ε >= top
    union: Fraction  # Σ k_j δ_j


def _merge(parts: Sequence[tuple[ExactLike, ExactLike, int]], owner: str) -> _Key:
    merged: dict[tuple[Fraction, Fraction], int] = {}
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence):
        raise InvalidArgument(owner, "parts", type(parts).__name__, "must be a sequence of (epsilon, delta, count) triples")
    for i, part in enumerate(parts):
        if not isinstance(part, tuple) or len(part) != 3:
            raise InvalidArgument(owner, f"parts[{i}]", type(part).__name__, "must be an (epsilon, delta, count) tuple")
        e_raw, d_raw, k = part
        e = to_fraction(e_raw, owner=owner, field=f"parts[{i}].epsilon")
        d = to_fraction(d_raw, owner=owner, field=f"parts[{i}].delta")
        if e < 0:
            raise InvalidArgument(owner, f"parts[{i}].epsilon", e, "must be >= 0")
        if not 0 <= d <= 1:
            raise InvalidArgument(owner, f"parts[{i}].delta", d, "must be in [0, 1]")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgument(owner, f"parts[{i}].count", k, "must be an int >= 0")
        if k:
            merged[(e, d)] = merged.get((e, d), 0) + k
    return tuple(sorted((e, d, k) for (e, d), k in merged.items()))


def _combinations(key: _Key) -> int:
    counts: dict[Fraction, int] = {}
    for e, _, k in key:
        if e > 0:
            counts[e] = counts.get(e, 0) + k
    total = 1
    for k in counts.values():
        total *= k + 1
        if total > MAX_COMBINATIONS:
            return total
    return total


@lru_cache(maxsize=8)
def _atoms(key: _Key, bits: int) -> _Atoms:
    counts: dict[Fraction, int] = {}
    for e, _, k in key:
        if e > 0:
            counts[e] = counts.get(e, 0) + k
    scale = math.lcm(*(e.denominator for e in counts)) if counts else 1
    dist: dict[int, tuple[int, int]] = {0: (1 << bits, 1 << bits)}  # loss -> (lo, hi)
    z_lo, z_hi = Fraction(1), Fraction(1)
    for n_groups, (e, k) in enumerate(sorted(counts.items())):
        lo, hi, zl, zh = _binomial_table(e, k, bits)
        step = e.numerator * (scale // e.denominator)
        if n_groups == 0:
            dist = {step * (k - 2 * l): (lo[l], hi[l]) for l in range(k + 1)}
            z_lo, z_hi = Fraction(zl), Fraction(zh)
            continue
        new: dict[int, tuple[int, int]] = {}
        for loss, (a_lo, a_hi) in dist.items():
            for l in range(k + 1):
                key_l = loss + step * (k - 2 * l)
                c_lo = (a_lo * lo[l]) >> bits
                c_hi = -((-a_hi * hi[l]) >> bits)
                old = new.get(key_l)
                new[key_l] = (c_lo, c_hi) if old is None else (old[0] + c_lo, old[1] + c_hi)
        dist = new
        z_lo = z_lo * zl / (1 << bits)
        z_hi = z_hi * zh / (1 << bits)
    desc = sorted((loss for loss in dist if loss > 0), reverse=True)
    p_lo, p_hi, q_lo, q_hi = [0], [0], [0], [0]
    for loss in desc:
        a_lo, a_hi = dist[loss]
        b_lo, b_hi = dist[-loss]
        p_lo.append(p_lo[-1] + a_lo)
        p_hi.append(p_hi[-1] + a_hi)
        q_lo.append(q_lo[-1] + b_lo)
        q_hi.append(q_hi[-1] + b_hi)
    pi_lo, pi_hi = Fraction(1), Fraction(1)
    for _, d, k in key:
        lo_j, hi_j = _pow_bounds(1 - d, k, bits + 64)
        pi_lo, pi_hi = pi_lo * lo_j, pi_hi * hi_j
    return _Atoms(
        bits=bits,
        scale=scale,
        asc=desc[::-1],
        p_lo=p_lo,
        p_hi=p_hi,
        q_lo=q_lo,
        q_hi=q_hi,
        z_lo=z_lo,
        z_hi=z_hi,
        pi_lo=_round_down(pi_lo, bits + 64),
        pi_hi=min(Fraction(1), _round_up(pi_hi, bits + 64)),
        top=sum((e * k for e, _, k in key), Fraction(0)),
        union=sum((d * k for _, d, k in key), Fraction(0)),
    )


def _round_down(x: Fraction, bits: int) -> Fraction:
    if x <= 0:
        return Fraction(0)
    n, d = x.numerator, x.denominator
    shift = bits - (n.bit_length() - d.bit_length())
    if shift >= 0:
        return Fraction((n << shift) // d, 1 << shift)
    return Fraction((n // (d << -shift)) << -shift)


def _active(atoms: _Atoms, eps: Fraction) -> int:
    """The number m of loss values L > ε (H_ε = A_m − e^ε B_m)."""
    threshold = (eps.numerator * atoms.scale) // eps.denominator  # L > ε·scale  <=>  L > floor(ε·scale)
    return len(atoms.asc) - bisect_right(atoms.asc, threshold)


def _delta_bounds(atoms: _Atoms, eps: Fraction) -> tuple[Fraction, Fraction]:
    """An enclosure lo <= δ(ε) <= hi, unrounded."""
    m = _active(atoms, eps)
    h_lo, h_hi = Fraction(0), Fraction(0)
    if m:
        e_lo, e_hi = _exp_bounds(eps, atoms.bits)
        h_hi = Fraction(atoms.p_hi[m]) / atoms.z_lo - e_lo * Fraction(atoms.q_lo[m]) / atoms.z_hi
        h_lo = Fraction(atoms.p_lo[m]) / atoms.z_hi - e_hi * Fraction(atoms.q_hi[m]) / atoms.z_lo
        h_hi = min(Fraction(1), max(Fraction(0), h_hi))
        h_lo = min(Fraction(1), max(Fraction(0), h_lo))
    return 1 - atoms.pi_hi * (1 - h_lo), 1 - atoms.pi_lo * (1 - h_hi)


def _certified(key: _Key, eps: Fraction) -> Fraction:
    bits = _BITS0
    while True:
        atoms = _atoms(key, bits)
        lo, hi = _delta_bounds(atoms, eps)
        if hi - lo <= hi / (1 << _TIGHT) or bits >= _BITS_MAX:
            break
        bits *= 2
    result = min(Fraction(1), _round_up(hi))
    if eps >= atoms.top:
        result = min(result, atoms.union)  # basic composition, valid (and >= δ(ε)) here
    return result


def optimal_delta(parts: Sequence[tuple[ExactLike, ExactLike, int]], epsilon: ExactLike) -> Fraction:
    """An exact rational upper bound on the optimal δ(ε) of composing ``parts``.

    Args:
        parts: ``(ε_j, δ_j, k_j)`` triples: k_j mechanisms, each (ε_j, δ_j)-DP
            (ε_j >= 0, δ_j in [0, 1], k_j an int >= 0), composed adaptively.
        epsilon: ε >= 0.

    Returns:
        A rational >= δ(ε) of Kairouz–Oh–Viswanath / Murtagh–Vadhan (see the module
        docstring), within a relative 2^-63 of it, with at most 64 significant bits;
        never above basic composition Σ k_j δ_j when ε >= Σ k_j ε_j.

    Raises:
        InvalidArgument: a malformed part or a negative ε.
        Unsupported: more than :data:`MAX_COMBINATIONS` loss combinations.

    Examples:
        One ε-DP mechanism at ε = 0 is δ = (e−1)/(e+1) (its total variation):

        >>> round(float(optimal_delta([(1, 0, 1)], 0)), 12)
        0.46211715726
        >>> float(optimal_delta([(Fraction(1, 10), 0, 100)], Fraction(4775, 1000))) < 1e-6
        True
        >>> optimal_delta([(Fraction(1, 2), Fraction(1, 10**6), 3)], Fraction(3, 2)) <= Fraction(3, 10**6)
        True
    """
    owner = "optimal_delta"
    key = _merge(parts, owner)
    eps = to_fraction(epsilon, owner=owner, field="epsilon")
    if eps < 0:
        raise InvalidArgument(owner, "epsilon", eps, "must be >= 0")
    combos = _combinations(key)
    if combos > MAX_COMBINATIONS:
        raise Unsupported(f"{owner}: more than {MAX_COMBINATIONS} loss combinations (prod of count+1 over distinct epsilons); use basic composition")
    return _certified(key, eps)


def _float_guess(atoms: _Atoms, h: float) -> float:
    """ε with H_ε ≈ h, by bisection over the segments and the closed form inside one (floats, a guess only)."""
    n = len(atoms.asc)
    log_z = math.log(atoms.z_hi.numerator) - math.log(atoms.z_hi.denominator)

    def sp(m: int) -> float:
        return float(Fraction(atoms.p_hi[m]) / atoms.z_lo)

    def log_sq(m: int) -> float:
        return math.log(atoms.q_lo[m]) - log_z if atoms.q_lo[m] > 0 else -math.inf

    def loss(i: int) -> float:  # i-th largest loss, 1-based
        return float(Fraction(atoms.asc[n - i], atoms.scale))

    def h_at(i: int) -> float:  # H at ε = L_i: the i−1 larger losses are active
        ls = log_sq(i - 1)
        return sp(i - 1) - (math.exp(min(700.0, loss(i) + ls)) if ls > -math.inf else 0.0)

    lo_i, hi_i = 1, n  # h_at(1) = 0 <= h; find the largest i with h_at(i) <= h
    if h_at(n) <= h:
        lo_i = n
    else:
        while hi_i - lo_i > 1:
            mid = (lo_i + hi_i) // 2
            if h_at(mid) <= h:
                lo_i = mid
            else:
                hi_i = mid
    m = lo_i  # ε lies in [L_{m+1}, L_m] with the m largest losses active
    upper = loss(m)
    lower = loss(m + 1) if m < n else 0.0
    a, ls = sp(m), log_sq(m)
    if a <= h or ls == -math.inf:
        return lower
    guess = math.log(a - h) - ls
    return min(upper, max(lower, guess))


def optimal_epsilon(parts: Sequence[tuple[ExactLike, ExactLike, int]], delta: ExactLike) -> Fraction | None:
    """The smallest certified ε (rounded up) with ``optimal_delta(parts, ε) <= delta``.

    Args:
        parts: ``(ε_j, δ_j, k_j)`` triples as in :func:`optimal_delta`.
        delta: the target δ in [0, 1].

    Returns:
        A dyadic rational ε >= the optimum of Kairouz–Oh–Viswanath / Murtagh–Vadhan,
        within a relative 2^-40 (plus the 2^-63 of :func:`optimal_delta`) of it, never
        above Σ k_j ε_j when Σ k_j δ_j <= delta; ``None`` when no ε works
        (1 − Π(1−δ_j)^{k_j} > delta) or when there are more than
        :data:`MAX_COMBINATIONS` loss combinations (the caller falls back to other rules).

    Raises:
        InvalidArgument: a malformed part or δ outside [0, 1].

    Examples:
        >>> eps = optimal_epsilon([(Fraction(1, 10), 0, 100)], Fraction(1, 10**6))
        >>> 4.77456 <= float(eps) <= 4.78  # the exact optimum is 4.7745675881…
        True
        >>> optimal_epsilon([(1, Fraction(1, 100), 2)], Fraction(1, 100)) is None
        True
    """
    owner = "optimal_epsilon"
    key = _merge(parts, owner)
    target = to_fraction(delta, owner=owner, field="delta")
    if not 0 <= target <= 1:
        raise InvalidArgument(owner, "delta", target, "must be in [0, 1]")
    if _combinations(key) > MAX_COMBINATIONS:
        return None
    zero = Fraction(0)
    if _certified(key, zero) <= target:
        return zero
    atoms = _atoms(key, _BITS0)
    top = atoms.top
    if _certified(key, top) > target:
        return None  # δ(ε) is constant for ε >= Σ k_j ε_j
    h = 1 - (1 - target) / atoms.pi_lo
    guess = _float_guess(atoms, float(h)) if h > 0 else float(top)
    fail, step = zero, Fraction(guess) / (1 << 44) + Fraction(1, 1 << 60)
    while True:
        candidate = min(top, _round_up(Fraction(guess) + step))
        if candidate >= top or _certified(key, candidate) <= target:
            break
        fail, step = candidate, step * 8
    passed = candidate
    while passed - fail > passed / (1 << _EPS_REL):
        mid = _round_up((fail + passed) / 2)
        if mid >= passed:
            break
        if _certified(key, mid) <= target:
            passed = mid
        else:
            fail = mid
    return passed
