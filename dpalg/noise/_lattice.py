"""Release of real values on a power-of-two lattice with exact integer noise.

A real value is rounded to the nearest multiple of ``2**k`` (exact: dividing a
binary float by a power of two only shifts its exponent), exact discrete noise
of the matching integer scale is added, and the result is a multiple of
``2**k``. The rounding changes the sensitivity by at most one lattice step per
coordinate, see :func:`lattice_sensitivity`. This is the approach of OpenDP's
``make_laplace``/``make_gaussian`` on float domains.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg._numbers import nonneg, positive
from dpalg.data._fixed_point import _check_k, round_to_lattice
from dpalg.noise._gaussian import MAX_GAUSSIAN_SIGMA2, gaussian_int
from dpalg.noise._laplace import MAX_LAPLACE_SCALE, laplace_int
from dpalg.noise._random import RngLike, resolve_rng

__all__ = ["choose_granularity", "lattice_noise", "lattice_sensitivity", "round_to_lattice"]

def choose_granularity(scale: object, bits: int = 20) -> int:
    """The lattice exponent ``k`` with ``2**k <= scale * 2**-bits < 2**(k+1)``.

    The granularity is a function of the *public* noise scale only, so it leaks
    nothing. With ``bits = 20`` the rounding error (at most ``2**(k-1)``) is about
    a millionth of the noise scale.

    Args:
        scale: the public noise scale (Laplace scale or Gaussian ``sigma``), ``> 0``.
        bits: how many binary digits finer than ``scale`` the lattice is.

    Returns:
        The exponent ``k`` (the lattice is ``2**k * Z``).

    Raises:
        InvalidArgument: ``scale`` not positive, ``bits`` not an int.

    Examples:
        >>> from dpalg.noise import choose_granularity
        >>> choose_granularity(1, bits=20)
        -20
        >>> choose_granularity("1000", bits=10)
        -1

    References:
        OpenDP, ``make_laplace`` on float domains (granularity from the scale).
    """
    s = positive(scale, owner="choose_granularity", field="scale")
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise InvalidArgument("choose_granularity", "bits", bits, "must be an int")
    e = s.numerator.bit_length() - s.denominator.bit_length()
    if Fraction(2) ** e > s:
        e -= 1
    return e - bits


def _lattice_float(m: int, k: int) -> float:
    """``m * 2**k`` as the nearest float, or ``±inf`` beyond the float range (never raises)."""
    try:
        return float(Fraction(m) * Fraction(2) ** k)
    except OverflowError:
        return math.inf if m > 0 else -math.inf


def lattice_noise(
    values: npt.ArrayLike,
    *,
    k: int,
    kind: Literal["laplace", "gaussian"],
    scale: object,
    rng: RngLike = None,
) -> npt.NDArray[np.float64]:
    """Release real values on the lattice ``2**k Z`` with exact discrete noise.

    Each value is rounded to its nearest lattice point ``m 2**k``; the output is
    ``(m + Z) 2**k`` with ``Z`` exact discrete Laplace of scale ``scale / 2**k``
    or discrete Gaussian of variance ``scale / 4**k``.

    Args:
        values: finite floats.
        k: lattice exponent (see :func:`choose_granularity`).
        kind: ``"laplace"`` or ``"gaussian"``.
        scale: in real units: the Laplace scale, or ``sigma**2`` for ``"gaussian"``.
        rng: ``None`` (secure default), an int seed, or an ``AbstractRandomness``.

    Returns:
        float64 multiples of ``2**k`` (the float conversion of the exact integer
        is post-processing).

    Raises:
        InvalidArgument: bad ``kind``, ``scale``, ``k`` or non-finite values.

    Privacy guarantee:
        Use the sensitivity of the *rounded* query, :func:`lattice_sensitivity`:
        Laplace is ``ε``-DP with ``scale = Δ_1' / ε``; Gaussian is ``ρ``-zCDP
        with ``sigma**2 = Δ_2'**2 / (2 ρ)`` (CKS 2020, Theorems 4 and 14).

    Examples:
        >>> from dpalg.noise import SeededRandomness, lattice_noise
        >>> out = lattice_noise([1.0, 2.0], k=-4, kind="laplace", scale=1, rng=SeededRandomness(0))
        >>> bool(((out * 16) % 1 == 0).all())
        True

    References:
        I. Mironov. On significance of the least significant bits for differential
        privacy. CCS 2012 (snapping). CKS 2020 (discrete noise). OpenDP
        ``make_laplace`` / ``make_gaussian`` on float domains.
    """
    owner = "lattice_noise"
    kk = _check_k(k, owner)
    s = positive(scale, owner=owner, field="scale")
    m = round_to_lattice(values, kk)
    n = m.shape[0]
    source = resolve_rng(rng)
    if kind == "laplace":
        t = s / Fraction(2) ** kk
        if t > MAX_LAPLACE_SCALE:
            raise InvalidArgument(owner, "scale", scale, f"/ 2**{kk} must be <= 2**52 (choose a larger k)")
        noise = laplace_int(t, n, source)
    elif kind == "gaussian":
        t = s / Fraction(4) ** kk
        if t > MAX_GAUSSIAN_SIGMA2:
            raise InvalidArgument(owner, "scale", scale, f"/ 4**{kk} must be <= 2**100 (choose a larger k)")
        noise = gaussian_int(t, n, source)
    else:
        raise InvalidArgument(owner, "kind", kind, "must be 'laplace' or 'gaussian'")
    if m.dtype == np.int64 and n and int(np.max(np.abs(m))) + int(np.max(np.abs(noise))) < (1 << 63):
        total = m + noise
        with np.errstate(over="ignore"):  # beyond the float range: ±inf, never a warning
            return np.ldexp(total.astype(np.float64), kk)
    exact = m.astype(object) + noise.astype(object)
    return np.array([_lattice_float(int(v), kk) for v in exact.tolist()], dtype=np.float64)


def _sqrt_upper(d: int, bits: int = 64) -> Fraction:
    """A rational upper bound of ``sqrt(d)``, exact when ``d`` is a square."""
    r = math.isqrt(d)
    if r * r == d:
        return Fraction(r)
    scaled = d << (2 * bits)
    return Fraction(math.isqrt(scaled) + 1, 1 << bits)


def lattice_sensitivity(
    sensitivity: object,
    k: int,
    dims: int = 1,
    norm: Literal["l1", "l2"] = "l1",
) -> Fraction:
    """Sensitivity of a query after rounding each of its ``dims`` coordinates to ``2**k Z``.

    Proof: rounding moves each coordinate by at most half a step, ``|r(x) - x| <= 2**(k-1)``.
    For neighbouring inputs with outputs ``x, x'`` the rounded outputs satisfy,
    coordinate-wise, ``r(x) - r(x') = (x - x') + e - e'`` with ``|e - e'| <= 2**k``.
    By the triangle inequality ``||r(x) - r(x')||_1 <= Δ_1 + dims * 2**k`` and
    ``||r(x) - r(x')||_2 <= Δ_2 + 2**k sqrt(dims)``. The square root is rounded
    *up* to a rational, so the returned value is a valid upper bound.

    Args:
        sensitivity: the query's sensitivity ``Δ >= 0`` in the chosen norm.
        k: lattice exponent.
        dims: number of coordinates, ``>= 1``.
        norm: ``"l1"`` or ``"l2"``.

    Returns:
        The exact (``l1``) or rounded-up (``l2``) sensitivity of the rounded query.

    Raises:
        InvalidArgument: negative sensitivity, ``dims < 1``, unknown norm.

    Examples:
        >>> from dpalg.noise import lattice_sensitivity
        >>> lattice_sensitivity(1, -2, dims=3, norm="l1")
        Fraction(7, 4)
        >>> lattice_sensitivity(1, 0, dims=4, norm="l2")
        Fraction(3, 1)

    References:
        OpenDP, ``make_laplace``/``make_gaussian`` on float domains (the
        sensitivity is increased by the rounding). Mironov 2012, Section 5.
    """
    owner = "lattice_sensitivity"
    delta = nonneg(sensitivity, owner=owner, field="sensitivity")
    kk = _check_k(k, owner)
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise InvalidArgument(owner, "dims", dims, "must be an int >= 1")
    step = Fraction(2) ** kk
    if norm == "l1":
        return delta + dims * step
    if norm == "l2":
        return delta + step * _sqrt_upper(dims)
    raise InvalidArgument(owner, "norm", norm, "must be 'l1' or 'l2'")
