"""Lattice rounding exactness and the rounded-sensitivity formula by brute force."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from dpalg import InvalidArgument
from dpalg.noise import (
    SeededRandomness,
    choose_granularity,
    lattice_noise,
    lattice_sensitivity,
    round_to_lattice,
)


def _nearest(x: float, k: int) -> int:
    """Nearest integer to x / 2**k, ties to even, in exact rationals."""
    q = Fraction(x) / Fraction(2) ** k
    return round(q)  # Fraction.__round__ rounds half to even


def test_round_to_lattice_is_exact() -> None:
    rnd = random.Random(1)
    for k in [-40, -20, -3, 0, 1, 7, 30]:
        xs = [rnd.uniform(-1e6, 1e6) for _ in range(300)] + [0.5 * 2.0**k, 1.5 * 2.0**k, -2.5 * 2.0**k, 5e-324]
        got = round_to_lattice(xs, k).tolist()
        assert got == [_nearest(x, k) for x in xs]


def test_round_to_lattice_object_fallback() -> None:
    xs = [1e300, -3.0, 2.0**62, 2.0**61]
    out = round_to_lattice(xs, 0)
    assert out.dtype == object
    assert out.tolist() == [int(Fraction(x)) for x in xs]
    assert round_to_lattice([2.0**61], 0).dtype == np.int64
    with pytest.raises(InvalidArgument):
        round_to_lattice([float("nan")], 0)
    assert round_to_lattice([1e300], -100).tolist() == [int(Fraction(1e300) * 2**100)]  # exact, not an error


def test_choose_granularity() -> None:
    assert choose_granularity(1) == -20
    assert choose_granularity(Fraction(3, 2), bits=0) == 0
    assert choose_granularity(Fraction(1, 3), bits=2) == -4
    for s in [Fraction(7, 3), Fraction(10**9), Fraction(1, 10**9)]:
        k = choose_granularity(s, bits=5)
        assert Fraction(2) ** k <= s / 32 < Fraction(2) ** (k + 1)


@pytest.mark.parametrize(("dims", "k", "norm"), list(itertools.product([1, 2, 3], [-1, 0, 1], ["l1", "l2"])))
def test_lattice_sensitivity_brute_force(dims: int, k: int, norm: str) -> None:
    delta = Fraction(1)
    bound = lattice_sensitivity(delta, k, dims=dims, norm=norm)  # type: ignore[arg-type]
    grid = [i / 8 for i in range(-24, 25)]
    rnd = random.Random(dims * 10 + k)
    worst = Fraction(0)
    for _ in range(3000):
        x = [rnd.choice(grid) for _ in range(dims)]
        # a neighbour within distance delta (on the grid)
        step = [rnd.choice(grid) / 3 for _ in range(dims)]
        size = sum(abs(s) for s in step) if norm == "l1" else math.sqrt(sum(s * s for s in step))
        if size == 0:
            continue
        y = [xi + si * float(delta) / size for xi, si in zip(x, step)]
        rx = round_to_lattice(x, k).tolist()
        ry = round_to_lattice(y, k).tolist()
        diff = [Fraction(a - b) * Fraction(2) ** k for a, b in zip(rx, ry)]
        d = sum((abs(v) for v in diff), Fraction(0)) if norm == "l1" else Fraction(math.sqrt(sum(v * v for v in diff)))
        worst = max(worst, d)
        assert d <= bound + Fraction(1, 10**9)
    # the bound is not vacuous: rounding really can add close to a full step
    assert worst >= delta


def test_lattice_noise_outputs_lattice_points() -> None:
    vals = np.array([0.1, 1000.3, -7.77])
    out = lattice_noise(vals, k=-3, kind="laplace", scale=Fraction(1, 2), rng=SeededRandomness(5))
    assert out.dtype == np.float64
    assert np.all(np.ldexp(out, 3) == np.rint(np.ldexp(out, 3)))
    g = lattice_noise(np.zeros(200_000), k=-2, kind="gaussian", scale=Fraction(1), rng=SeededRandomness(6))
    assert abs(float(g.var()) - 1.0) < 0.02
    big = lattice_noise([1e300], k=0, kind="laplace", scale=1, rng=SeededRandomness(7))
    assert big[0] == 1e300
    with pytest.raises(InvalidArgument):
        lattice_noise([1.0], k=0, kind="uniform", scale=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        lattice_noise([1.0], k=-60, kind="laplace", scale=1)


def test_lattice_sensitivity_invalid() -> None:
    with pytest.raises(InvalidArgument):
        lattice_sensitivity(-1, 0)
    with pytest.raises(InvalidArgument):
        lattice_sensitivity(1, 0, dims=0)
    with pytest.raises(InvalidArgument):
        lattice_sensitivity(1, 0, norm="linf")  # type: ignore[arg-type]
    assert lattice_sensitivity(1, 0, dims=2, norm="l2") > 1 + Fraction(14142, 10000)


def test_rounding_a_value_beyond_float_range_after_scaling_is_exact_not_an_error() -> None:
    # 1e308 / 2**-4 overflows float64; the release must not fail because of that value
    from fractions import Fraction as _F

    from dpalg.noise import round_to_lattice as _round

    out = _round([1e308, -1e308, 0.25], -4)
    assert [int(v) for v in out.tolist()] == [int(_F(1e308) * 16), -int(_F(1e308) * 16), 4]
    halves = _round([0.5, 1.5, 2.5, -0.5], 0)  # ties to even, like rint
    assert [int(v) for v in halves.tolist()] == [0, 2, 2, 0]


def test_lattice_noise_beyond_float_range_is_infinite_not_an_error() -> None:
    import warnings

    from dpalg.noise import SeededRandomness, lattice_noise as _noise

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _noise([1.7e308, -1.7e308], k=-4, kind="laplace", scale=1, rng=SeededRandomness(1))
    assert out.shape == (2,)
    assert not np.isnan(out).any()
    assert out[0] > 1e308 and out[1] < -1e308
