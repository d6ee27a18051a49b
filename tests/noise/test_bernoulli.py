"""Bernoulli(p) and Bernoulli(exp(-gamma)): frequencies, bounds, slow paths, int64 boundary."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest

from dpalg import InvalidArgument
from dpalg._numbers import to_fraction
from dpalg.noise import AbstractRandomness, SeededRandomness, bernoulli, bernoulli_exp
from dpalg.noise._bernoulli import FRAC_BITS, accept_exp, bernoulli_exp_rational, exact_bernoulli_exp
from dpalg.noise._exact import LazyUniform, exp_bounds_of, exp_neg_bounds, ln2_bounds, rational_bounds


def _in_band(successes: int, n: int, p: float, z: float = 5.0) -> bool:
    sd = math.sqrt(n * p * (1 - p))
    return abs(successes - n * p) <= z * sd + 1


@pytest.mark.parametrize(
    "gamma", [0, Fraction(1, 3), 1, Fraction(5, 2), 20, "0.1", Fraction(7, 3), Fraction(99, 100), 3, "1e-9"]
)
def test_bernoulli_exp_frequency(gamma: object) -> None:
    n = 400_000
    g = to_fraction(gamma, owner="test", field="gamma")
    x = bernoulli_exp(gamma, size=n, rng=SeededRandomness(11))
    p = math.exp(-float(g))
    assert x.dtype == np.bool_ and x.shape == (n,)
    assert _in_band(int(x.sum()), n, p)


def test_bernoulli_exp_extremes() -> None:
    assert bernoulli_exp(0, size=1000, rng=SeededRandomness(0)).all()
    assert not bernoulli_exp(10**6, size=1000, rng=SeededRandomness(0)).any()
    assert not bernoulli_exp(Fraction(10**40, 3), size=10, rng=SeededRandomness(0)).any()


@pytest.mark.parametrize("p", [0, 1, Fraction(1, 3), "0.999", Fraction(1, 2**70), Fraction(2**70 - 1, 2**70)])
def test_bernoulli_frequency(p: object) -> None:
    n = 200_000
    q = float(to_fraction(p, owner="test", field="p"))
    assert _in_band(int(bernoulli(p, size=n, rng=SeededRandomness(3)).sum()), n, q)


def test_exp_bounds_are_rigorous() -> None:
    mpmath.mp.prec = 600
    for c in [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(20), Fraction(10**6, 7), Fraction(3, 10**12)]:
        for prec in [8, 64, 200]:
            lo, hi = exp_neg_bounds(c, prec)
            exact = mpmath.exp(-mpmath.mpf(c.numerator) / c.denominator) * mpmath.mpf(2) ** prec
            assert lo <= exact <= hi
            assert hi - lo <= 4
    for prec in [10, 64, 300]:
        lo, hi = ln2_bounds(prec)
        assert lo <= mpmath.log(2) * mpmath.mpf(2) ** prec <= hi
        assert hi - lo <= 2
    mpmath.mp.prec = 53


def test_lazy_uniform_against_irrational() -> None:
    # P[R < exp(-1)] with fresh R: the slow path on its own
    rng = SeededRandomness(5)
    n = 20_000
    hits = sum(LazyUniform(0, 0, rng).less_than(exp_bounds_of(Fraction(1))) for _ in range(n))
    assert _in_band(hits, n, math.exp(-1))
    # a prefix that pins R decides without drawing
    assert LazyUniform(0, 1, rng).less_than(rational_bounds(Fraction(3, 4)))  # R < 1/2 < 3/4
    assert not LazyUniform(1, 1, rng).less_than(rational_bounds(Fraction(1, 2)))  # R >= 1/2


@pytest.mark.parametrize("gamma", [Fraction(1, 3), Fraction(9, 10), Fraction(0)])
def test_accept_exp_slow_path_is_exact(gamma: Fraction) -> None:
    # an uninformative bracket [0, 2**56] sends every Algorithm-1 step to the exact path
    n = 6000
    zeros = np.zeros(n, dtype=np.int64)
    full = np.full(n, 1 << FRAC_BITS, dtype=np.int64)
    out = accept_exp(zeros, zeros, full, SeededRandomness(2), lambda i: gamma)
    assert _in_band(int(out.sum()), n, math.exp(-float(gamma)))


def test_exact_bernoulli_exp() -> None:
    rng = SeededRandomness(8)
    n = 5000
    hits = sum(exact_bernoulli_exp(Fraction(3, 2), rng) for _ in range(n))
    assert _in_band(hits, n, math.exp(-1.5))


@pytest.mark.parametrize("den", [3, (1 << 49) - 1, 1 << 49, (1 << 62) + 5, 10**30])
def test_bernoulli_exp_rational_int64_boundary(den: int) -> None:
    # gammas 1/3 and 7/4 expressed with a denominator on both sides of 2**49
    n = 60_000
    rng = SeededRandomness(4)
    g1, g2 = Fraction(1, 3), Fraction(7, 4)
    if den % 3:
        g1 = Fraction(den // 3, den)
    nums = [int(g1 * den), int(g2 * den)]
    if den < 2**62:
        num = np.array(nums * (n // 2), dtype=np.int64)
        d: npt.NDArray[np.int64] | int = np.full(n, den, dtype=np.int64)
    else:
        num = np.array(nums * (n // 2), dtype=object)
        d = den
    out = bernoulli_exp_rational(num, d, rng)
    for j, gj in enumerate([Fraction(nums[0], den), Fraction(nums[1], den)]):
        sub = out[j::2]
        assert _in_band(int(sub.sum()), sub.size, math.exp(-float(gj)))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: bernoulli_exp(-1), "gamma"),
        (lambda: bernoulli_exp("x"), "gamma"),
        (lambda: bernoulli_exp(float("nan")), "gamma"),
        (lambda: bernoulli_exp(1, size=-1), "size"),
        (lambda: bernoulli_exp(1, size=True), "size"),
        (lambda: bernoulli("1.5"), "p"),
        (lambda: bernoulli(-0.1), "p"),
        (lambda: bernoulli(True), "p"),
    ],
)
def test_invalid_arguments(call: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()  # type: ignore[operator]
    assert info.value.field == field


# --- accept_exp_float (issue 19): one word per entry, float-guarded, exact ----------
# Sample size: 2*10**5 draws per gamma give a 5-sigma band of at most
# 5 * sqrt(0.25 / 2e5) = 0.0056 around exp(-gamma); the broken variant below is
# off by 0.06, ten times that band.
_FLOAT_N = 200_000


def _float_freq(gamma: Fraction, seed: int) -> float:
    from dpalg.noise._bernoulli import accept_exp_float

    g = np.full(_FLOAT_N, float(gamma))
    out = accept_exp_float(g, SeededRandomness(seed), lambda i: gamma)
    return float(out.mean())


@pytest.mark.parametrize(
    "gamma",
    [Fraction(0), Fraction(1, 10**9), Fraction(1, 16), Fraction(1, 3), Fraction(1), Fraction(7, 4),
     Fraction(63, 16), Fraction(40), Fraction(64), Fraction(65), Fraction(10**6)],
)  # fmt: skip
def test_accept_exp_float_frequency(gamma: Fraction) -> None:
    p = math.exp(-float(gamma))
    assert _in_band(round(_float_freq(gamma, 31) * _FLOAT_N), _FLOAT_N, p)


def test_accept_exp_float_guard_is_sound_on_every_table_point() -> None:
    """At every m/16 (the table's grid, where r = 0) and next to it, a decided entry agrees with exact bounds."""
    from dpalg.noise import _bernoulli

    words = np.random.default_rng(5).integers(0, 2**64, size=64, dtype=np.uint64)
    for m in range(0, 1025, 7):
        for gamma in (Fraction(m, 16), Fraction(m, 16) + Fraction(1, 2**40), Fraction(max(m * 2**36 - 1, 0), 2**40)):
            g = np.full(words.size, float(gamma))

            class Fixed(AbstractRandomness):
                kind, secure = "fixed words (test)", False
                tail = SeededRandomness(0)

                def uint64(self, n: int) -> npt.NDArray[np.uint64]:
                    return words[:n].copy() if n == words.size else self.tail.uint64(n)

            out = _bernoulli.accept_exp_float(g, Fixed(), lambda i: gamma)
            lo, hi = exp_neg_bounds(gamma, 200)
            for w, got in zip(words.tolist(), out.tolist()):
                # R in [w, w + 1) / 2**64: decided whenever the interval is on one side of exp(-gamma)
                if (w + 1) << 136 <= lo:
                    assert got
                elif w << 136 >= hi:
                    assert not got


def test_accept_exp_float_uncertain_zone_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge guard sends most entries to the exact comparison of the same R: frequencies stay exact."""
    from dpalg.noise import _bernoulli

    monkeypatch.setattr(_bernoulli, "_GUARD", 0.5)
    for gamma in (Fraction(1, 2), Fraction(3)):
        assert _in_band(round(_float_freq(gamma, 32) * _FLOAT_N), _FLOAT_N, math.exp(-float(gamma)))


def test_accept_exp_float_broken_fallback_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: finishing an uncertain entry with FRESH randomness (not the same R) is biased."""
    from dpalg.noise import _bernoulli

    monkeypatch.setattr(_bernoulli, "_GUARD", 0.5)

    class Fresh:
        def __init__(self, prefix: int, nbits: int, rng: object) -> None:
            self.rng = rng

        def less_than(self, bounds: object) -> bool:
            word = int(self.rng.uint64(1)[0])  # type: ignore[attr-defined]
            return word < int(math.exp(-0.5) * 2**64)  # fresh bits: Bernoulli(~exp(-1/2)) independent of R

    monkeypatch.setattr(_bernoulli, "LazyUniform", Fresh)
    freq = _float_freq(Fraction(1, 2), 33)
    assert not _in_band(round(freq * _FLOAT_N), _FLOAT_N, math.exp(-0.5))


def test_the_table_check_catches_a_shifted_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: exp(-(m+1)/16) in place of exp(-m/16) is refuted by the soundness check above."""
    from dpalg.noise import _bernoulli

    shifted = np.append(_bernoulli.exp_sixteenths()[1:], 0.0)
    monkeypatch.setattr(_bernoulli, "exp_sixteenths", lambda: shifted)
    with pytest.raises(AssertionError):
        test_accept_exp_float_guard_is_sound_on_every_table_point()
