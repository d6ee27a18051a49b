"""Accuracy of the data-dependent mechanisms before running (issue 20 item 2).

Every statement is a function of the node's parameters and, where the error
depends on the data, of a *public assumption* the caller states (a distance to
instability, a smooth-sensitivity bound); it is then given under that
``condition``. Bounds are rounded up: each is proven with mpmath interval
arithmetic, or with a high-precision evaluation widened by a relative slack of
``10**-40`` (as :mod:`dpalg.noise._tails` does for ``erfc``).

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
from dpalg.mechanisms._common.accuracy import rounded_noise_quantile, up_text

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.mechanisms._smooth_bound import SmoothBound, SmoothBoundCauchy

__all__ = [
    "smooth_accuracy",
]

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
