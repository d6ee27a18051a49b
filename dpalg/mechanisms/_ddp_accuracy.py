"""Accuracy of the data-dependent mechanisms before running (issue 20 item 2).

Every statement is a function of the node's parameters and, where the error
depends on the data, of a *public assumption* the caller states (a distance to
instability, a smooth-sensitivity bound); it is then given under that
``condition``. Bounds are rounded up: each is proven with mpmath interval
arithmetic, or with a high-precision evaluation widened by a relative slack of
``10**-40`` (as :mod:`dpalg.noise._tails` does for ``erfc``).

**Exponential mechanism** (:class:`ExponentialQuantile`, :class:`NoisyMax`).
Both sample candidate ``c`` with probability ``∝ exp(−γ·s_c)`` for integer
scores ``s_c ≥ 0`` (:func:`~dpalg.noise.sample_exp_runs` weighs a run of
``len`` equal scores by ``len·exp(−γ s)`` and then draws uniformly inside it,
so each candidate still has weight ``exp(−γ s_c)``). With ``s* = min s_c``
attained by ``c*`` and ``B = {c : s_c ≥ s* + t}`` (``t ≥ 1``, so ``c* ∉ B``)::

    P[s_out − s* ≥ t] = Σ_B e^{−γ s_c} / Σ_c e^{−γ s_c} <= (N − 1) e^{−γ(s* + t)} / e^{−γ s*} = (N − 1) e^{−γ t}

(McSherry–Talwar 2007 Thm 8; Dwork–Roth 2014 Thm 3.11 with ``|R|`` replaced by
``N − 1``). With ``t`` the smallest integer ``≥ 1`` making the right side
``<= α``, the score gap is at most ``t − 1`` with probability ``≥ 1 − α``.

* :class:`ExponentialQuantile`: ``N = 2**grid_bits + 1`` grid points, score
  ``den(q)·|(1 − q)·#{x < c} − q·#{x > c}|``, ``γ = ε/(2Δ·den(q))``. The
  "rank" error is the gap of ``|(1 − q)·#{x < c} − q·#{x > c}|`` between the
  output and the best grid point: ``(t − 1)/den(q) ≈ (2Δ/ε)·ln((N − 1)/α)``.
  For an output ``c`` holding ``E`` values with ``L`` below, that quantity is
  ``|L + qE − qn|``, at least the distance from ``qn`` to ``c``'s ranks
  ``[L, L + E]``. The best grid point is within ``max(q, 1 − q)·E*`` of 0
  (``E*`` the ties at the grid point holding the true quantile; below 1 for
  distinct values); snapping the data to the grid comes on top.
* :class:`NoisyMax`: ``N`` keys, score ``max count − count``, ``γ = ε/L∞``
  (add/remove) or ``ε/(2L∞)`` (substitution): the released key's count is
  within ``t − 1`` of the largest count.

**Propose-test-release** (:class:`ProposeTest`). The test releases ⊥ when
``γ + Z <= M`` with ``M = ceil(ln(1/δ)/ε) − 1``, ``Z`` discrete Laplace of scale
``1/ε`` (``q = e^{−ε}``, ``P[Z = z] = (1 − q)/(1 + q)·q^|z|``), and ``γ`` the
node's distance (the distance to instability at the proposed bound, capped at
``min(n + 2, cap)``). Hence exactly::

    P(⊥ | γ) = P[Z <= M − γ] = 1 − q^{t+1}/(1 + q)   (t = M − γ >= 0),   q^{−t}/(1 + q)   (t < 0)

decreasing in ``γ``, so a distance *at least* ``d`` gives ``P(⊥) <=
P(⊥ | min(d, cap))``. When it releases, the value is
``2^k (round(f/2^k) + Z')`` with ``Z'`` discrete Laplace of the public scale
``release_scale()/2^k``, drawn independently of the test: the error given a
release is the exact (1 − α) quantile of ``|Z'|`` (tight).

**Smooth sensitivity** (:class:`SmoothBound`, :class:`SmoothBoundCauchy`). The
output is ``2^k (round(f/2^k) + N)`` with ``N`` the exact law of
``round(b·Z)``, ``b = (Ŝ(x) + 2^k)/(α_c 2^k)``, ``Ŝ`` the node's β-smooth bound
and ``Z`` standard Laplace or generalised Cauchy (NRS07 Lemma 2.6 / 2.9). So
``|N| > m`` iff ``b|Z| >= m + ½`` (ties have probability 0) and::

    Laplace:  P[|N| > m] = exp(−(m + ½)/b)
    Cauchy γ: P[|N| > m] = I_{1/(1 + u^γ)}(1 − 1/γ, 1/γ),   u = (m + ½)/b   (|Z|^γ is beta-prime)

both increasing in ``b``, so a public upper bound ``s >= Ŝ(x)`` gives the
bound ``2^k m`` at ``b = (s + 2^k)/(α_c 2^k)``. Clamping to ``[l, u]`` moves
the output towards ``f(x) ∈ [l, u]`` and never increases the error; with it
the error is always at most ``u − l``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike, to_fraction
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import exp_mech_gap, percent_text, rounded_noise_quantile, up_text
from dpalg.mechanisms._common.ptr_test import ptr_bottom_probability, ptr_distance_for
from dpalg.noise._tails import laplace_tail_quantile

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._exponential import ExponentialQuantile, NoisyMax
    from dpalg.mechanisms._ptr import ProposeTest
    from dpalg.mechanisms._smooth_bound import SmoothBound, SmoothBoundCauchy

__all__ = [
    "exponential_quantile_accuracy",
    "noisy_max_accuracy",
    "ptr_accuracy",
    "smooth_accuracy",
]

# --- the exponential mechanism --------------------------------------------------------


def exponential_quantile_accuracy(node: ExponentialQuantile, alpha: ExactLike) -> Accuracy:
    """The (1 − α) rank error of :class:`ExponentialQuantile` (module docstring).

    N is ``2**grid_bits + 1`` for the grid, ``len(candidates)`` otherwise. For
    ``selection="permute_and_flip"`` the same bound holds, by a union bound
    proven here (McKenna–Sheldon prove only that its *expected* error is no
    worse than the exponential mechanism's, their Theorem 2): the output is
    always a candidate whose coin came up heads, and candidate ``c``'s coin is
    heads with probability ``exp(−γ(s_c − s*))``, so with ``B = {c : s_c ≥ s* + t}``
    (``t ≥ 1``, ``c* ∉ B``, ``|B| ≤ N − 1``)::

        P[s_out − s* ≥ t] <= P[some coin in B is heads] <= Σ_B e^{−γ(s_c − s*)} <= (N − 1) e^{−γ t}

    the same right side as for the exponential mechanism, hence the same ``t``.
    """
    a = alpha_param("ExponentialQuantile.accuracy", alpha)
    den = node.q.denominator
    delta_u = node.sensitivity()
    gamma = node.epsilon / (2 * delta_u * den)  # the release's rate per integer score unit
    candidates = node.n_candidates
    gap = exp_mech_gap(candidates, gamma, a)
    where = "grid points" if node.candidates is None else "public candidates"
    pf = node.selection == "permute_and_flip"
    if pf:
        noise = f"permute-and-flip over {candidates} {where}, coins exp(eps*(u-u*)/(2*Delta)), Delta={up_text(delta_u)}"
    else:
        noise = f"exponential mechanism over {candidates} {where}, exp(eps*u/(2*Delta)), Delta={up_text(delta_u)}"
    best = "grid point's" if node.candidates is None else "candidate's"
    notes = (
        f"rank error: |(1-q)*#{{x<c}} - q*#{{x>c}}| of the output c exceeds the best {best} by at most this "
        f"(q={node.q}); off the data it is |#{{x<c}} - q*n|",
        f"bound: (2*Delta/eps)*ln({candidates - 1}/alpha), rounded to whole scores "
        + ("(union bound over the coins; the same tail as McSherry-Talwar 2007 Thm 8)" if pf else "(McSherry-Talwar 2007 Thm 8)"),
    )
    return Accuracy(a, Fraction(gap, den), "rank", noise, False, None, notes)


def noisy_max_accuracy(node: NoisyMax, alpha: ExactLike) -> Accuracy:
    """The (1 − α) score error of :class:`NoisyMax`: the released key's count is within this of the largest."""
    a = alpha_param("NoisyMax.accuracy", alpha)
    assert node.query.keys is not None
    keys = len(node.query.keys)
    gamma = (node.epsilon if node.relation == "add_remove" else node.epsilon / 2) / node.linf()
    gap = exp_mech_gap(keys, gamma, a)
    factor = "eps*count/Linf" if node.relation == "add_remove" else "eps*count/(2*Linf)"
    noise = f"exponential mechanism over {keys} keys, exp({factor}), Linf={node.linf()}"
    notes = (f"the released key's count is at most this below the largest count (bound: ln({keys - 1}/alpha)/rate)",)
    return Accuracy(a, Fraction(gap), "count below the top key's", noise, False, None, notes)


# --- propose-test-release -------------------------------------------------------------


def ptr_accuracy(node: ProposeTest, alpha: ExactLike, distance: int | None) -> Accuracy:
    """The (1 − α) error of :class:`ProposeTest` when it releases, and ``P(⊥)`` at a stated distance."""
    owner = "ProposeTest.accuracy"
    a = alpha_param(owner, alpha)
    k = node.lattice_k()
    step = Fraction(2) ** k
    units = node.release_scale() / step
    m, tight = laplace_tail_quantile(units, a)
    noise = f"discrete Laplace, scale {up_text(node.release_scale())}" + (f" (lattice step 2**{k})" if k != 0 else "")
    bound = up_text(node.bound)
    if distance is None:
        need = ptr_distance_for(node.eps_test, node.delta, a)
        reach = f"; P(⊥) <= {percent_text(a)} once it is >= {need}" if need is not None else ""
        notes: tuple[str, ...] = (
            f"P(⊥) depends on the data's distance to instability at bound {bound}{reach}; pass distance= for a number",
        )
    else:
        if isinstance(distance, bool) or not isinstance(distance, int) or distance < 0:
            raise InvalidArgument(owner, "distance", distance, "must be an int >= 0 (a public lower bound on the distance)")
        p = ptr_bottom_probability(node.eps_test, node.delta, distance)
        notes = (f"P(⊥) <= {up_text(p)} if the distance to instability at bound {bound} (capped at n + 2) is at least {distance}",)
    return Accuracy(a, m * step, "absolute", noise, tight, "it releases (no ⊥)", notes)


# --- smooth sensitivity ---------------------------------------------------------------


def smooth_accuracy(node: SmoothBound | SmoothBoundCauchy, alpha: ExactLike, smooth_sensitivity: ExactLike | None) -> Accuracy:
    """The (1 − α) error of :class:`SmoothBound` / :class:`SmoothBoundCauchy` given a bound on Ŝ(x)."""
    from dpalg.mechanisms._smooth_bound import SmoothBound

    owner = f"{type(node).__name__}.accuracy"
    a = alpha_param(owner, alpha)
    c = node.constants()
    k = node.lattice_k()
    step = Fraction(2) ** k
    laplace = isinstance(node, SmoothBound)
    gamma = None if isinstance(node, SmoothBound) else node.gamma
    kind = "Laplace" if laplace else f"generalised Cauchy (gamma={gamma})"
    noise = f"{kind}, scale (S + 2**{k})/{up_text(c.alpha)}, S the beta-smooth bound (beta={up_text(c.beta)}), lattice step 2**{k}"
    clamp = node.clamp_range()
    notes: tuple[str, ...] = ()
    if clamp is not None:
        notes = (f"clamped to [{up_text(clamp[0])}, {up_text(clamp[1])}]: always within {up_text(clamp[1] - clamp[0])}",)
    if smooth_sensitivity is None:
        unit_rate = "ln(1/alpha)" if laplace else "(the Cauchy tail quantile)"
        return Accuracy(a, None, "absolute", noise, False, "the node's smooth bound S(x) is at most s",
                        (f"error <= (s + 2**{k})/{up_text(c.alpha)} * {unit_rate} (rounded to the lattice)",
                         "pass smooth_sensitivity=s (a public upper bound on S(x)) for a number", *notes))
    s = to_fraction(smooth_sensitivity, owner=owner, field="smooth_sensitivity")
    if s < 0:
        raise InvalidArgument(owner, "smooth_sensitivity", s, "must be >= 0")
    b = (s + step) / (c.alpha * step)
    m = rounded_noise_quantile(b, a, gamma)
    error = m * step
    if clamp is not None:
        error = min(error, clamp[1] - clamp[0])
    return Accuracy(a, error, "absolute", noise, False, f"the node's smooth bound S(x) is at most {up_text(s)}", notes)
