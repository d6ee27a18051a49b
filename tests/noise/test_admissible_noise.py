"""Admissible noise (dpalg.noise._admissible_noise): constants, numerical privacy checks, lattice sampler."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpalg._errors import InvalidArgument
from dpalg.noise._admissible_noise import (
    AbstractAdmissibleNoise,
    ArsinhNormal,
    CauchyAdmissible,
    LaplaceAdmissible,
    LaplaceLogNormal,
    UniformLogNormal,
    laplace_dilation_delta,
    lln_sigma,
    pure_loss_grid,
    renyi_divergence,
)
from dpalg.noise._random import AbstractRandomness, SeededRandomness

pytestmark = pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")


# --------------------------------------------------------------------------- Laplace, (eps, delta)
@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.5, 1e-9), (2.0, 1e-3)])
def test_laplace_constants_pass_and_broken_fail(eps: float, delta: float) -> None:
    c = LaplaceAdmissible().constants(Fraction(eps), Fraction(delta))
    assert c.alpha == Fraction(eps) / 2
    assert float(c.beta) <= eps / (2 * math.log(2 / delta))
    assert float(c.beta) == pytest.approx(eps / (2 * math.log(2 / delta)), rel=1e-15)
    alpha, beta = float(c.alpha), float(c.beta)
    shift, _ = pure_loss_grid(LaplaceAdmissible(), alpha, 0.0)
    assert shift <= eps / 2 + 1e-12
    worst = max(laplace_dilation_delta(lam, eps) for lam in np.linspace(-beta, beta, 201))
    assert worst <= delta / 2
    # broken variants: alpha doubled breaks the shift, beta doubled the dilation
    bad_shift, _ = pure_loss_grid(LaplaceAdmissible(), 2 * alpha, 0.0)
    assert bad_shift > eps / 2
    assert laplace_dilation_delta(-2 * beta, eps) > delta / 2


def test_laplace_dilation_closed_form_matches_integral() -> None:
    from scipy import integrate

    eps, lam = 1.0, -0.2

    def excess(z: float) -> float:
        p = 0.5 * math.exp(-abs(z))
        q = 0.5 * math.exp(-lam) * math.exp(-abs(z) * math.exp(-lam))
        return max(0.0, p - math.exp(eps / 2) * q)

    z0 = (eps / 2 - lam) / math.expm1(-lam)
    numeric = 2 * integrate.quad(excess, z0, np.inf)[0]
    assert laplace_dilation_delta(lam, eps) == pytest.approx(numeric, rel=1e-7)


# --------------------------------------------------------------------------- Cauchy, pure eps
@pytest.mark.parametrize("gamma", [2, 3, Fraction(3, 2), 4])
def test_cauchy_constants_pass_and_broken_fail(gamma: Fraction) -> None:
    eps = 1.0
    noise = CauchyAdmissible(gamma)
    for c in (noise.constants(eps), noise.tight_constants(eps)):
        shift, dil = pure_loss_grid(noise, float(c.alpha), float(c.beta))
        assert shift <= eps / 2 + 1e-9
        assert dil <= eps / 2 + 1e-9
    tight = noise.tight_constants(eps)
    bad_shift, _ = pure_loss_grid(noise, 2 * float(tight.alpha), 0.0)
    assert bad_shift > eps / 2
    _, bad_dil = pure_loss_grid(noise, 0.0, 2 * float(tight.beta))
    assert bad_dil > eps / 2


def test_cauchy_gamma2_is_eps_over_6() -> None:
    c = CauchyAdmissible(2).constants(Fraction(3, 5))
    assert c.alpha == c.beta == Fraction(1, 10)


def test_cauchy_density_normalised_and_cdf() -> None:
    from scipy import integrate

    for g in (2, 3, Fraction(5, 2)):
        noise = CauchyAdmissible(g)
        mass = integrate.quad(lambda z: math.exp(noise.log_density(np.array([z]))[0]), -np.inf, np.inf)[0]
        assert mass == pytest.approx(1.0, rel=1e-8)
        with mpmath.workprec(100):
            f = noise.cdf_mp(mpmath.mpf(1))
        num = 0.5 + integrate.quad(lambda z: math.exp(noise.log_density(np.array([z]))[0]), 0, 1)[0]
        assert float(f) == pytest.approx(num, rel=1e-9)


# --------------------------------------------------------------------------- zCDP noises
ZCDP_GRID = [(0.1, 0.0), (0.0, 0.1), (0.1, 0.1), (-0.1, 0.1), (0.3, 0.3)]


def _worst_ratio(noise: LaplaceLogNormal | UniformLogNormal | ArsinhNormal, s_mult: float, orders: list[float]) -> float:
    worst = 0.0
    for s, t in ZCDP_GRID:
        eps = noise.epsilon(s, t)
        for a in orders:
            for rev in (False, True):
                d = renyi_divergence(noise, a, s_mult * s, t, rev)
                worst = max(worst, d / (a * eps * eps / 2))
    return worst


@pytest.mark.parametrize("noise", [UniformLogNormal(1.0), UniformLogNormal(2.0), ArsinhNormal(1.0), ArsinhNormal(0.5)], ids=repr)
def test_zcdp_renyi_within_claim(noise: UniformLogNormal | ArsinhNormal) -> None:
    assert _worst_ratio(noise, 1.0, [1.5, 3.0, 10.0, 100.0]) <= 1.0


def test_zcdp_broken_constant_is_caught() -> None:
    # the same check with the shift 8x larger than the formula allows must fail
    for noise in (UniformLogNormal(1.0), ArsinhNormal(1.0)):
        assert _worst_ratio(noise, 8.0, [1.5, 3.0, 10.0]) > 1.0


def test_lln_renyi_spot_check_and_broken() -> None:
    noise = LaplaceLogNormal(1.0)
    eps = noise.epsilon(0.1, 0.1)
    d = renyi_divergence(noise, 3.0, 0.1, 0.1)
    assert d <= 3.0 * eps * eps / 2
    bad = renyi_divergence(noise, 3.0, 0.1 * 30, 0.1)
    assert bad > 3.0 * eps * eps / 2


@pytest.mark.slow
@pytest.mark.parametrize("cls", [LaplaceLogNormal, UniformLogNormal, ArsinhNormal])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_zcdp_renyi_grid_slow(cls: type[LaplaceLogNormal], sigma: float) -> None:
    assert _worst_ratio(cls(sigma), 1.0, [1.1, 2.0, 5.0, 20.0, 100.0, 1000.0]) <= 1.0


def test_lln_sigma_root() -> None:
    for eps, t in [(1.0, 0.1), (0.3, 0.05), (5.0, 1.0)]:
        s = lln_sigma(eps, t)
        assert s > t / eps
        assert abs(5 * (eps / t) * s**3 - 5 * s**2 - 1) < 1e-9
        # it minimises e^{5 s^2 / 2} / (eps - t/s)
        def cost(x: float) -> float:
            return math.exp(2.5 * x * x) / (eps - t / x)

        assert cost(s) <= min(cost(s * 0.99), cost(s * 1.01))


def test_zcdp_constants() -> None:
    c = LaplaceLogNormal(1.0).constants(Fraction(1, 2), Fraction(1, 10))
    assert c.beta == Fraction(1, 10)
    assert float(c.alpha) <= (1.0 - 0.1) * math.exp(-1.5)
    assert float(c.alpha) == pytest.approx((1.0 - 0.1) * math.exp(-1.5), rel=1e-15)
    with pytest.raises(InvalidArgument):
        LaplaceLogNormal(1.0).constants(Fraction(1, 2), 2)  # t/sigma >= eps


# --------------------------------------------------------------------------- sampler
SAMPLED: list[AbstractAdmissibleNoise] = [
    LaplaceAdmissible(),
    CauchyAdmissible(2),
    CauchyAdmissible(3),
    ArsinhNormal(1.0),
    UniformLogNormal(0.7),
]


def _float_cdf(noise: AbstractAdmissibleNoise) -> object:
    def cdf(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        with mpmath.workprec(60):
            return np.array([float(noise.cdf_mp(mpmath.mpf(float(v)))) for v in np.atleast_1d(z)])

    return cdf


@pytest.mark.parametrize("noise", SAMPLED, ids=repr)
def test_sampler_ks_against_continuous_cdf(noise: AbstractAdmissibleNoise) -> None:
    x = noise.sample_lattice(1500, -16, SeededRandomness(11), scale=1).astype(np.float64) * 2.0**-16
    p = stats.kstest(x, _float_cdf(noise)).pvalue
    assert p > 1e-3


@pytest.mark.slow
def test_lln_sampler_ks_slow() -> None:
    noise = LaplaceLogNormal(0.8)
    x = noise.sample_lattice(300, -12, SeededRandomness(5)).astype(np.float64) * 2.0**-12
    assert stats.kstest(x, _float_cdf(noise)).pvalue > 1e-3


class _FixedWords(AbstractRandomness):
    kind = "fixed"
    secure = False

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)
        self.calls = 0

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        self.calls += 1
        out, self.words = self.words[:n], self.words[n:]
        return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("noise", [LaplaceAdmissible(), CauchyAdmissible(2), ArsinhNormal(1.0)], ids=repr)
def test_sampler_decides_boundaries_exactly(noise: AbstractAdmissibleNoise) -> None:
    # the boundary between atoms 2 and 3 (k = -3, scale 1) is b = 2.5/8; the U with
    # (U + 1/2)/2^64 just below and just above F(b) must land on either side
    b = mpmath.mpf(5) / 16
    with mpmath.workprec(300):
        fb = noise.cdf_mp(b)
        u_star = int(mpmath.floor(fb * 2**64 - mpmath.mpf(1) / 2))
    got = noise.sample_lattice(2, -3, _FixedWords([u_star, u_star + 1]))
    assert got.tolist() == [2, 3]


def test_sampler_uses_only_uint64_and_clamps() -> None:
    rng = _FixedWords([0, 2**64 - 1])
    out = CauchyAdmissible(2).sample_lattice(2, -40, rng)
    assert rng.calls == 1
    assert out.tolist() == [-(1 << 62), 1 << 62]  # far tails, clamped (post-processing)


def test_tv_bound_values() -> None:
    lap = LaplaceAdmissible().tv_bound(-20, 1)
    assert 0 < lap < 2.0**-30
    assert LaplaceAdmissible().tv_bound(-20, 1, words=2) < 2.0**-60
    # heavy tails need more random bits: the bound says so
    assert CauchyAdmissible(2).tv_bound(-20, 1) > 2.0**-40
    assert CauchyAdmissible(2).tv_bound(-20, 1, words=2) < 2.0**-40


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"size": -1}, "size"), ({"k": 2000}, "k"), ({"words": 0}, "words"), ({"scale": 0}, "scale")],
)
def test_sampler_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"size": 1, "k": 0, "rng": SeededRandomness(0)}
    args.update(kwargs)
    with pytest.raises(InvalidArgument) as err:
        LaplaceAdmissible().sample_lattice(**args)  # type: ignore[arg-type]
    assert err.value.field == field


@pytest.mark.parametrize(("cls", "value"), [(CauchyAdmissible, 1), (LaplaceLogNormal, 0.0), (ArsinhNormal, -1.0)])
def test_invalid_parameters(cls: type, value: object) -> None:
    with pytest.raises(InvalidArgument):
        cls(value)
