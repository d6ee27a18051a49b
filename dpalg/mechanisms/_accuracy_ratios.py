"""Accuracy before running of the shifted inverse, the ratios and privately bounded sensitivity (issue 20 item 2).

Every statement is a function of the node's parameters and, where the error
depends on the data, of a *public assumption* the caller passes as a keyword;
it is then given under that ``condition``. Bounds are rounded up (exact
quantiles from :mod:`dpalg.noise._tails`, mpmath interval arithmetic
elsewhere). ``Q_t(a)`` below is the exact smallest integer ``m`` with
``P[|Z| > m] <= a`` for ``Z`` discrete Laplace of scale ``t``
(:func:`~dpalg.noise._tails.laplace_tail_quantile`), ``G_{σ²}(a)`` the same for
the discrete Gaussian.

**Shifted inverse** (seed 004 = Fang, Dong, Yi, CCS 2022; ``docs/mechanisms/shifted_inverse.md``).
All three forms work with the floored monotone query ``⌊f⌋`` and its losses
``ℓ(y) = min{k : ⌊h(k)⌋ <= y}`` and ``ℓ̄(y) = min{k : ⌊h(k)⌋ < y}``, where
``h(k) = f(x) − DS^k_f(x)`` is ``f`` after removing the ``k`` most influential
users. ``ℓ(M) <= K`` gives ``M >= ⌊h(K)⌋``; ``ℓ̄(M) >= 1`` gives ``M <= ⌊f(x)⌋``.
The statement at ``α`` is::

    ⌊f(x)⌋ >= M >= ⌊h(K)⌋ = ⌊f(x)⌋ − DS^K_{⌊f⌋}(x)        with probability >= 1 − α

for a ``K`` computed below; with a public ``D >= DS^K_f(x)`` (keyword
``down_sensitivity=``), ``h(K) >= f − D`` so ``f(x) − M <= f − ⌊f − D⌋ < D + 1``
(``<= ⌈D⌉`` for the integer-valued counts), and ``M <= f(x)``: the error is
one-sided. The node's ``τ`` is fixed by its ``beta``; only ``K`` depends on ``α``.

* :class:`ShiftedInverse` samples ``y ∈ Y`` with probability ``∝ exp(−(ε/2)·ℓ*(y))``,
  ``ℓ* = max(ℓ − τ, τ − ℓ̄)`` integer. If some ``ŷ ∈ Y`` has ``ℓ*(ŷ) <= 0``,
  the exponential mechanism's bound (McSherry–Talwar 2007 Thm 8; as
  :func:`~dpalg.mechanisms._common.accuracy.exp_mech_gap`) gives
  ``P[ℓ*(M) >= g + 1] <= (|Y| − 1)·e^{−(ε/2)(g+1)}``; with ``g`` the smallest
  integer making this ``<= α`` and ``g < τ``: ``ℓ(M) <= τ + g`` and
  ``ℓ̄(M) >= τ − g >= 1``, so ``K = τ + g`` (at ``α = β``, ``K <= 2τ − 1``:
  seed 004 Thm 4's ``DS^{2τ}``). If ``g >= τ`` nothing bounds ``P[M > f(x)]``
  below ``(|Y| − 1)e^{−ετ/2}`` and there is no statement at that ``α``.
  ``ŷ`` exists iff an integer of ``[⌊h(τ)⌋, ⌊h(τ − 1)⌋]`` lies in ``Y``: always
  when ``⌊f(x)⌋ <= y_hi`` and ``y_lo <= f(∅)`` (``f(∅) = 0`` for sums and
  counts, ``y_lo`` for maxima); for ``y_lo > f(∅)`` it also needs
  ``h(τ − 1) >= y_lo`` (removing any ``τ − 1`` users leaves ``f >= y_lo``).
  Without it the statement fails: one user holding 100 with ``Y = [100, 200]``,
  ``ε = 1`` gives ``ℓ* = 9`` at 100 and ``τ`` above it, and ``M > f(x)`` with
  probability 0.98 (a test shows it).
* :class:`ShiftedInverseSearch` / :class:`ShiftedInverseSearchZCDP` (seed 004,
  "binary search"; Theorem 5 with Gaussian noise) use at most
  ``I = ⌈log2 |Y|⌉`` noises ``Z_i`` (the first ``I`` of the drawn pool). If
  every used ``Z_i <= τ`` then each move ``i_min ← mid`` had ``ℓ(mid) > 0``;
  if every used ``Z_i >= −c`` each move ``i_max ← mid`` had ``ℓ(mid) <= τ + c``.
  With ``y_lo <= ⌊f(x)⌋ <= y_hi`` both invariants hold at the start (the
  virtual ``i_min = y_lo − 1`` has ``ℓ > 0``, ``ℓ(y_hi) = 0``), and at the end
  ``M = i_max = i_min + 1 <= ⌊f(x)⌋`` and ``ℓ(M) <= τ + c``: ``K = τ + c``.
  By the union bound the failure probability is at most ``I·(p + P[Z < −c])``
  with ``p >= P[Z > τ]``: ``p = q^{τ+1}/(1 + q)``, ``q = e^{−1/σ}`` (discrete
  Laplace, exact); ``p = e^{−(τ+1)²/(2σ²)}`` (discrete Gaussian: sub-Gaussian
  with variance proxy σ², Canonne–Kamath–Steinke 2020). ``P[Z < −c] =
  P[|Z| > c]/2`` by symmetry, so ``c = Q_σ(2r/I)`` (``G_{σ²}(2r/I)``) with
  ``r = α − I·p > 0`` (else no statement at ``α``).

**Ratios** (``docs/mechanisms/ratio.md``), conditional on a public lower bound
``n <= b`` on the denominator (keyword ``denominator=``). The truth
``a/b ∈ [0, 1]`` and the clamp to ``[0, 1]`` only moves the output towards it.

* :class:`NaiveRatio`: ``â = a + Z_a``, ``b̂ = b + Z_b``, discrete Laplace of
  scale ``2/ε``. With ``|Z_a|, |Z_b| <= e = Q_{2/ε}(α/2)`` (each fails with
  probability ``<= α/2``) and ``b > e``::

      |â/b̂ − a/b| = |b Z_a − a Z_b| / (b (b + Z_b)) <= (e + (a/b) e)/(b − e) <= 2e/(n − e).

* :class:`KSWRatio`: ``A = max(a + U, 0)``, ``C = max(c + V, 0)`` (``c = b − a``),
  scale ``Δ/ε``; ``|A − a| <= |U|``, ``|C − c| <= |V|``. With ``u = A − a``,
  ``v = C − c``, ``T = A + C``: ``A/T − a/b = (u c − a v)/(T b)``, so with
  ``|U|, |V| <= e = Q_{Δ/ε}(α/2)`` and ``b > 2e``: ``|error| <= e(a + c)/(T b) = e/T <= e/(n − 2e)``.
* :class:`BoundedLSRatio`: with ``|Z_b| <= e₁ = Q_{2/ε₁}(α/2)`` the intervals
  give ``b_lo >= b − e₁ − w =: L`` and ``b_hi <= b + e₁ + w`` (``w`` the
  node's margin), and since ``a_lo >= 0``, ``a_hi <= b_hi`` every term of
  :func:`~dpalg.mechanisms._ratio.ratio_ls_bound` is at most
  ``b_hi/(b_lo(b_lo − 1))`` (``(b' − a_lo)/(b'² − b') <= 1/(b' − 1) <= 1/(b_lo − 1)``;
  also ``>= 1/b_lo``, the substitution term), so ``ĝ <= G = (n + e₁ + w)/(L(L − 1))``,
  ``L = n − e₁ − w >= 2`` (decreasing in ``n``: with ``y = b − e₁ − w`` the
  derivative's sign is ``−y² − 4(e₁ + w)y + 2(e₁ + w) < 0``). The release
  (α/2) is bounded as for :class:`BoundedLS` below at ``G``. ``b_lo >= L >= 2``
  rules out the first bail-out; ``ĝ·b_lo <= b_hi/(b_lo − 1) <= (b_lo + 2w)/(b_lo − 1) < 2``
  once ``L > 2w + 2`` rules out the adaptive one. Otherwise the naive branch
  (fresh noise, ε₂, α/4 per count) may run and the bound is the larger of the
  two.

**Privately bounded sensitivity** (:class:`BoundedLS`; seed 000 Thm 1). Given
the step-1 bound ``ĝ`` (a function of the noisy counts), the release is
``(m + Z)·2^k`` with ``g = round_up_bits(ĝ + slack)``, ``k = ⌊log2(g/ε₂)⌋ − 20``,
``m = round(f/2^k)`` and ``Z`` discrete Laplace of scale ``t = (g/2^k + 1)/ε₂``
(:func:`~dpalg.mechanisms._bounded_ls_lattice.lattice_terms`). So
``2^k <= g/(ε₂ 2^20)``, ``t > 2^20``, and with ``q = e^{−1/t}``::

    P[2^k|Z| > x] = 2 q^{⌊x/2^k⌋+1}/(1 + q) <= (1 + 2^-20)·e^{−x/s},   s = 2^k t <= (g/ε₂)(1 + 2^-20/ε₂)

(``2/(1 + q) <= 1/(1 − 1/(2t)) <= 1 + 1/t``). Both ``s`` and ``2^{k−1}`` grow
with ``g`` and ``round_up_bits`` is monotone, so for every ``ĝ <= G`` (keyword
``ls_bound=``, or the public ``global_sensitivity``, which caps ``ĝ``) with
``Ĝ = round_up_bits(G + slack)``::

    |out − f(x)| <= (Ĝ/ε₂)(1 + 2^-20/ε₂)·ln((1 + 2^-20)/α) + Ĝ/(ε₂ 2^21) (+ 10^-60 for an irrational f).

``ĝ <= G`` can itself be obtained from public bounds on the counts: each
noisy count is within ``Q_{J/ε₁}(α'/J)`` of its count with probability
``>= 1 − α'``, and ``ĝ`` is monotone in the interval ends.

**AutoClipSum** (issue 15). Given the released clip ``C`` (drawn before the
sum's noise, which is independent of it), the sum is ``(S + Z)·2^{k₂}`` with
``S`` the clipped lattice sum ``Σ_u min(T_u, ⌊C/2^k⌋)`` re-rounded half-even to
``2^{k₂}`` (at most ``2^{k₂−1}`` off when ``k₂ > k``) and ``Z`` discrete
Laplace of scale ``max(Δ, 1)/ε₂`` fixed by ``C``
(:meth:`~dpalg.mechanisms.AutoClipSum.clipped_sum`): the error to the clipped
sum is ``Q_{Δ/ε₂}(α)·2^{k₂}`` (+ the rounding), exact given ``C``. The
largest over the ``J + 1`` public candidates holds whichever clip is drawn.
The clipping bias ``Σ_u (T_u − C)₊`` comes on top (the clip aims to leave
``r`` users above it).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import DPS, exp_mech_gap, int_param, laplace_q, mpf_fraction_nearest53, up_text
from dpalg.noise._tails import _iv_dps, gaussian_tail_quantile, laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._auto_clip import AutoClipSum
    from dpalg.mechanisms._bounded_ls import BoundedLS
    from dpalg.mechanisms._ratio import BoundedLSRatio, KSWRatio, NaiveRatio
    from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP

__all__ = [
    "auto_clip_accuracy",
    "bounded_ls_accuracy",
    "bounded_ls_ratio_accuracy",
    "lattice_release_error",
    "ratio_accuracy",
    "shifted_inverse_accuracy",
    "shifted_inverse_removals",
]

_EXCESS = Fraction(1, 2**20)  # 2**-20: the lattice is 2**-20 of the noise scale
_ROUND_BITS = 64  # a failure budget is rounded down to a multiple of 2**-64


def _floor_dyadic(x: Fraction) -> Fraction:
    """``x`` rounded down to a multiple of ``2**-64`` (a smaller failure budget is always valid)."""
    return Fraction(math.floor(x * 2**_ROUND_BITS), 2**_ROUND_BITS)


# --- the shifted inverse -----------------------------------------------------------------


def _upper_tail(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> Fraction:
    """An upper bound on the probability that the node releases above ⌊f(x)⌋ (module docstring)."""
    from mpmath import iv

    from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, search_steps

    tau = node.tau()
    with _iv_dps(DPS):
        if isinstance(node, ShiftedInverse):
            size = node.domain[1] - node.domain[0] + 1
            eps = iv.mpf(node.epsilon.numerator) / node.epsilon.denominator
            p = (size - 1) * iv.exp(-eps * tau / 2)
        else:
            steps = search_steps(node.domain)
            if isinstance(node, ShiftedInverseSearch):
                sigma = node.sigma()
                q = iv.exp(-iv.mpf(sigma.denominator) / sigma.numerator)
                p = steps * q ** (tau + 1) / (1 + q)
            else:
                s2 = node.sigma2()
                p = steps * iv.exp(-iv.mpf((tau + 1) ** 2) * s2.denominator / (2 * s2.numerator))
        return min(Fraction(1), mpf_fraction_nearest53(iv.mpf(p).b))


def shifted_inverse_removals(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP, alpha: ExactLike) -> int | None:
    """``K``: with probability ``>= 1 − α``, ``⌊f(x)⌋ >= M >= ⌊f(x)⌋ − DS^K_{⌊f⌋}(x)``; None: no statement at ``α``.

    Under the condition of :func:`shifted_inverse_accuracy` (module docstring).

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import ShiftedInverse, ShiftedInverseSearch
        >>> em = ShiftedInverse(Query.user_count(user="u"), domain=(0, 2**32 - 1), epsilon=1)
        >>> em.tau(), shifted_inverse_removals(em, Fraction(1, 20))  # tau + g, g <= tau - 1
        (51, 101)
        >>> shifted_inverse_removals(em, Fraction(1, 10**6)) is None  # beyond what tau (beta = 1/20) allows
        True
    """
    from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, search_steps

    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    tau = node.tau()
    if isinstance(node, ShiftedInverse):
        size = node.domain[1] - node.domain[0] + 1
        g = exp_mech_gap(size, node.epsilon / 2, a)
        return tau + g if g < tau else None
    steps = search_steps(node.domain)
    rest = _floor_dyadic(a - _upper_tail(node))
    if rest <= 0:
        return None
    share = 2 * rest / steps  # P[|Z| > c] <= 2r/I, so I·P[Z < -c] <= r
    if isinstance(node, ShiftedInverseSearch):
        c = laplace_q(node.sigma(), share)
    else:
        c = 0 if share >= 1 else gaussian_tail_quantile(node.sigma2(), share)[0]
    return tau + c


def _si_floor(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> int:
    """``⌈f(∅)⌉``: ``y_lo`` for maxima (f = max(y_lo, ...)), 0 otherwise."""
    return node.domain[0] if node.query.kind == "user_max" else 0


def shifted_inverse_accuracy(
    node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP, alpha: ExactLike, down_sensitivity: ExactLike | None
) -> Accuracy:
    """The (1 − α) statement of a shifted-inverse node, one-sided (module docstring)."""
    from dpalg.mechanisms._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, search_steps

    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    lo, hi = node.domain
    tau = node.tau()
    if isinstance(node, ShiftedInverse):
        noise = f"exponential mechanism on l* over {hi - lo + 1} candidates, exp(-eps*l*/2), tau={tau}"
    elif isinstance(node, ShiftedInverseSearch):
        noise = f"noisy binary search, {search_steps(node.domain)} steps, discrete Laplace scale {up_text(node.sigma())}, tau={tau}"
    else:
        noise = f"noisy binary search, {search_steps(node.domain)} steps, discrete Gaussian sigma2 {up_text(node.sigma2())}, tau={tau}"
    parts = [f"f(x) < {hi + 1}"]
    if lo > _si_floor(node):
        if isinstance(node, ShiftedInverse):
            parts.append(f"removing any {tau - 1} users leaves f(x) >= {lo}")
        else:
            parts.append(f"f(x) >= {lo}")
    unit = "absolute, below f(x)"
    k = shifted_inverse_removals(node, a)
    if k is None:
        p = _upper_tail(node)
        return Accuracy(a, None, unit, noise, False, " and ".join(parts), (
            f"no statement at alpha={up_text(a)}: the node's tau={tau} (beta={up_text(node.beta)}) bounds P[M > f(x)] only by "
            f"{up_text(p)}; use a larger alpha or construct the node with a smaller beta",
        ))  # fmt: skip
    shape = (
        f"floor(f(x)) >= M >= floor(f(x)) - DS^{k}(x): never above f(x), at most the drop from removing the {k} "
        "most influential users below it (seed 004 Thm 4 / binary search)"
    )
    if down_sensitivity is None:
        return Accuracy(a, None, unit, noise, False, " and ".join(parts), (
            shape, f"pass down_sensitivity=D (a public bound on the drop of f from removing any {k} users) for a number",
        ))  # fmt: skip
    d = to_fraction(down_sensitivity, owner=owner, field="down_sensitivity")
    if d < 0:
        raise InvalidArgument(owner, "down_sensitivity", d, "must be >= 0")
    integral = node.query.kind in ("user_count", "count")
    error = Fraction(math.ceil(d)) if integral else d + 1  # f - floor(f - D) <= ceil(D) (integer f), < D + 1
    error = min(error, Fraction(hi + 1 - lo))  # M >= y_lo and f < y_hi + 1
    parts.append(f"removing any {k} users lowers f(x) by at most {up_text(d)}")
    return Accuracy(a, error, unit, noise, False, " and ".join(parts), (shape,))


# --- ratios ------------------------------------------------------------------------------


def _denominator(owner: str, value: object, above: int) -> int:
    return int_param(owner, "denominator", value, above + 1, f"a public lower bound on the denominator b, above {above}")


def ratio_accuracy(node: NaiveRatio | KSWRatio, alpha: ExactLike, denominator: int | None) -> Accuracy:
    """The (1 − α) error of :class:`NaiveRatio` / :class:`KSWRatio` given ``b >= denominator`` (module docstring)."""
    from dpalg.mechanisms._ratio import NaiveRatio

    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    scale, _ = node.noise_scales()
    e = laplace_tail_quantile(scale, a / 2)[0]
    naive = isinstance(node, NaiveRatio)
    need = e if naive else 2 * e  # b must exceed this for the noisy denominator to stay positive
    pair = "a and b" if naive else "a and b - a"
    noise = f"discrete Laplace, scale {up_text(scale)}, on {pair} each"
    formula = f"error <= 2*{e}/(n - {e})" if naive else f"error <= {e}/(n - {2 * e})"
    if denominator is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true denominator b > {need}",
                        (formula, "pass denominator=n (a public lower bound on b) for a number"))
    n = _denominator(owner, denominator, need)
    error = Fraction(2 * e, n - e) if naive else Fraction(e, n - 2 * e)
    return Accuracy(a, min(error, Fraction(1)), "absolute", noise, False, f"the true denominator b is at least {n}", (formula,))


def lattice_release_error(bound: Fraction, epsilon: Fraction, alpha: Fraction) -> Fraction:
    """An upper bound (1 − α) on ``|out − v|`` of :func:`lattice_release` for every ``ĝ <= bound`` (module docstring).

    Examples:
        >>> round(float(lattice_release_error(Fraction(1, 10), Fraction(1), Fraction(1, 20))), 4)  # about 0.1 * ln 20, the bound rounded up to 8 bits
        0.2999
    """
    from mpmath import iv

    from dpalg.mechanisms._bounded_ls_lattice import round_up_bits

    g = round_up_bits(bound)
    if g == 0:  # f is released on 2**-60 with discrete Laplace of scale 1/eps lattice units
        k = Fraction(2) ** -60
        return (laplace_q(1 / epsilon, alpha) + Fraction(1, 2)) * k
    s = g / epsilon * (1 + _EXCESS / epsilon)
    with _iv_dps(DPS):
        log = iv.log((1 + iv.mpf(_EXCESS.numerator) / _EXCESS.denominator) * alpha.denominator / alpha.numerator)
        ln = mpf_fraction_nearest53(iv.mpf(log).b)
    return s * ln + g / (epsilon * 2**21)


def bounded_ls_ratio_accuracy(node: BoundedLSRatio, alpha: ExactLike, denominator: int | None) -> Accuracy:
    """The (1 − α) error of :class:`BoundedLSRatio` given ``b >= denominator`` (module docstring)."""
    owner = "BoundedLSRatio.accuracy"
    a = alpha_param(owner, alpha)
    w = node.margin()
    e1 = laplace_tail_quantile(node.noise_scale(), a / 2)[0]
    e2 = laplace_tail_quantile(2 / node.epsilon_release, a / 4)[0]
    reach = e1 + w
    noise = (f"bounds: discrete Laplace, scale {up_text(node.noise_scale())}, margin {w}; release: discrete Laplace scaled to "
             f"the bound / {up_text(node.epsilon_release)} (lattice 2**-20 of it), or naive with scale {up_text(2 / node.epsilon_release)}")
    formula = f"g^ <= (n + {reach})/((n - {reach})(n - {reach + 1})); error <= (g^/eps2)*ln(2/alpha) (+2**-20 relative)"
    if denominator is None:
        return Accuracy(a, None, "absolute", noise, False, f"the true denominator b >= {reach + 2}",
                        (formula, "pass denominator=n (a public lower bound on b) for a number"))
    n = int_param(owner, "denominator", denominator, reach + 2, f"a public lower bound on b, at least {reach + 2}")
    low = n - reach
    bound = Fraction(n + reach, low * (low - 1))
    error = lattice_release_error(bound, node.epsilon_release, a / 2)
    notes = [formula]
    if node.adaptive and low <= 2 * w + 2:  # the naive branch may run (module docstring)
        naive = Fraction(2 * e2, n - e2) if n > e2 else Fraction(1)
        error = max(error, naive)
        notes.append(f"the naive bail-out may run (b - {reach} <= {2 * w + 2}): its bound 2*{e2}/(n - {e2}) is included")
    return Accuracy(a, min(error, Fraction(1)), "absolute", noise, False, f"the true denominator b is at least {n}", tuple(notes))


# --- privately bounded sensitivity -------------------------------------------------------


def bounded_ls_accuracy(node: BoundedLS, alpha: ExactLike, ls_bound: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`BoundedLS` given its private bound ĝ <= ``ls_bound`` (module docstring)."""
    from dpalg.mechanisms._bounded_ls_monotone import _VALUE_SLACK

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


# --- AutoClipSum -------------------------------------------------------------------------


def _clip_error(node: AutoClipSum, clip: Fraction, alpha: Fraction) -> tuple[Fraction, bool]:
    """The exact (1 − α) error of the sum given ``clip`` and whether it is tight (no re-rounding)."""
    import numpy as np

    _, sensitivity, k2 = node.clipped_sum(np.zeros(0, dtype=np.int64), clip)  # Δ and k₂ depend on the clip only
    scale = Fraction(max(sensitivity, 1)) / node.epsilon_sum
    m, tight = laplace_tail_quantile(scale, alpha)
    step = Fraction(2) ** k2
    rounded = k2 != node.lattice_k()
    return m * step + (step / 2 if rounded else 0), tight and not rounded


def auto_clip_accuracy(node: AutoClipSum, alpha: ExactLike, clip: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`AutoClipSum`'s sum to the clipped sum at the released clip (module docstring)."""
    owner = "AutoClipSum.accuracy"
    a = alpha_param(owner, alpha)
    candidates = node.candidates()
    noise = f"discrete Laplace, scale clip/{up_text(node.epsilon_sum)} (lattice about 2**-20 of it), after an exponential-mechanism clip"
    bias = "clipping bias sum_u (T_u - C)+ comes on top (the clip aims to leave r users above it)"
    if clip is None:
        errors = [_clip_error(node, c, a)[0] for c in candidates]
        worst = max(errors)
        return Accuracy(a, worst, "absolute, to the clipped sum", noise, False, None, (
            f"whichever clip C is drawn; given C: ±{up_text(errors[-1])} at C={up_text(candidates[-1])} ... ±{up_text(errors[0])} "
            f"at C={up_text(candidates[0])} (pass clip=C for its figure)", bias,
        ))  # fmt: skip
    c = to_fraction(clip, owner=owner, field="clip")
    if c not in candidates:
        raise InvalidArgument(owner, "clip", c, f"must be one of the node's candidates upper_limit*2**-j, j = 0..{node.grid_steps}")
    error, tight = _clip_error(node, c, a)
    return Accuracy(a, error, "absolute, to the clipped sum", noise, tight, f"the released clip is {up_text(c)}", (bias,))
