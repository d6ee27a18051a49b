"""R2T (Dong et al. 2022): the exact output distribution, its privacy ratio, its one-sided accuracy, and the sampler.

For a count (lattice 1, thresholds small enough that no re-rounding happens) the release is an integer
``M = max(0, max_j Q_j + Z_j − s_j)`` with independent discrete Laplace ``Z_j``, so
``P[M <= m] = Π_j P[Z_j <= m − Q_j + s_j]`` for m >= 0: the exact distribution, in mpmath. Then:

* privacy: on neighbouring data (one user added, with the largest total) every probability ratio
  is at most e^ε; a broken variant that forgets the factor L in the noise scale is caught;
* accuracy: ``P[M > Q(I, upper_limit)] <= β`` (the shifts);
* the sampler (seeded releases) follows the exact distribution.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpalg import InvalidArgument, PureDP, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import R2T
from dpalg.mechanisms.r2t import _r2t
from dpalg.noise import SeededRandomness

mpmath.mp.dps = 40


def _cdf(scale: Fraction, z: int) -> mpmath.mpf:
    """P[Z <= z] for the discrete Laplace P[Z = x] ∝ q^|x|, q = e^(−1/scale)."""
    q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
    if z < 0:
        return q ** (-z) / (1 + q)
    return 1 - q ** (z + 1) / (1 + q)


def _pmf(node: R2T, counts: list[int], top_m: int) -> list[mpmath.mpf]:
    totals = np.sort(np.minimum(np.asarray(counts, dtype=np.int64), node.top()))
    levels = node.levels()
    assert all(d == 0 for d, _, _, _ in levels)  # small thresholds: no re-rounding, an integer release
    qs = node.truncated(totals)

    def cdf(m: int) -> mpmath.mpf:
        if m < 0:
            return mpmath.mpf(0)
        out = mpmath.mpf(1)
        for q_j, (_, _, scale, shift) in zip(qs, levels):
            out *= _cdf(scale, m - q_j + shift)
        return out

    return [cdf(m) - cdf(m - 1) for m in range(top_m + 1)]


NODE = R2T(Query.count(user="uid"), epsilon=1, upper_limit=8, thresholds=4, beta=Fraction(1, 10))
#: 30 users at the top: every truncated sum lies far above its shift, so at the output 0 every level sits in its
#: left tail and the ratio of P[M = 0] on neighbours is exactly e^ε (the bound is attained: the test is tight)
DATA = [8] * 30 + [3, 5, 1, 2]


def test_the_exact_distribution_sums_to_one() -> None:
    assert abs(mpmath.fsum(_pmf(NODE, DATA, 4000)) - 1) < mpmath.mpf(10) ** -20


def _max_ratio(node: R2T, a: list[int], b: list[int]) -> float:
    pa, pb = _pmf(node, a, 3000), _pmf(node, b, 3000)
    return float(max(max(x / y, y / x) for x, y in zip(pa, pb) if x > mpmath.mpf(10) ** -30))


@pytest.mark.parametrize("added", [8, 5, 1])
def test_neighbouring_ratios_are_within_e_to_the_epsilon(added: int) -> None:
    ratio = _max_ratio(NODE, DATA, [*DATA, added])
    assert ratio <= float(mpmath.e) * (1 + 1e-9)
    if added == 8:
        assert ratio >= float(mpmath.e) * (1 - 1e-6)  # attained: a looser mechanism would not be caught otherwise


def test_noise_without_the_factor_L_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = R2T.levels

    def broken(self: R2T) -> list[tuple[int, int, Fraction, int]]:
        return [(d, s, scale / len(self.taus()), shift) for d, s, scale, shift in real(self)]

    monkeypatch.setattr(R2T, "levels", broken)
    assert _max_ratio(NODE, DATA, [*DATA, 8]) > float(mpmath.e) * 1.5  # e^(Lε) = e^4 at the output 0


def test_the_release_overshoots_the_clamped_total_with_probability_at_most_beta() -> None:
    pmf = _pmf(NODE, DATA, 4000)
    total = sum(min(c, 8) for c in DATA)
    assert float(mpmath.fsum(pmf[total + 1 :])) <= float(NODE.beta)


def test_the_sampler_follows_the_exact_distribution() -> None:
    rows = {"uid": np.repeat(np.arange(len(DATA)), DATA)}
    data = as_dataset(rows)
    draws = np.array([NODE.release(data, SeededRandomness(s)) for s in range(3000)])
    pmf = _pmf(NODE, DATA, 4000)
    cdf = np.cumsum([float(p) for p in pmf])
    empirical = np.array([(draws <= m).mean() for m in range(len(cdf))])
    assert np.max(np.abs(empirical - cdf)) < 0.03  # Kolmogorov–Smirnov distance; 3000 draws: critical ~0.025 at 5%


def test_parameters_and_cost() -> None:
    assert R2T(Query.sum("x", user="u"), epsilon="1/2").cost() == PureDP(Fraction(1, 2))
    with pytest.raises(InvalidArgument, match="user="):
        R2T(Query.sum("x"), epsilon=1)
    with pytest.raises(InvalidArgument, match="thresholds"):
        R2T(Query.count(user="u"), epsilon=1, thresholds=0)
    from dpalg import ClipPerUser

    with pytest.raises(InvalidArgument, match="drop ClipPerUser"):
        R2T(Query.sum("x", user="u") | ClipPerUser(0, 1), epsilon=1)


def test_a_count_with_no_threshold_of_one_row_is_refused_before_the_charge() -> None:
    # upper_limit < 1: every threshold of a count is below one row, so there is no level to release; without
    # the refusal the plan was accepted and its run raised (ln of L/β with L = 0) after the charge
    for upper in (Fraction(1, 3), Fraction(99, 100)):
        with pytest.raises(InvalidArgument, match="upper_limit"):
            R2T(Query.count(user="u"), epsilon=1, upper_limit=upper)
    # above 2**62 rows the per-user totals seam refused the clamp, again after the charge
    with pytest.raises(InvalidArgument, match="upper_limit"):
        R2T(Query.count(user="u"), epsilon=1, upper_limit=2**62 + 1)
    R2T(Query.count(user="u"), epsilon=1, upper_limit=2**62).totals(as_dataset({"u": np.array([1, 1, 2])}))
    R2T(Query.sum("x", user="u"), epsilon=1, upper_limit=10**300).totals(as_dataset({"x": np.array([1.0]), "u": np.array([1])}))
    assert R2T(Query.count(user="u"), epsilon=1, upper_limit=1).taus() == (1,)
    assert R2T(Query.sum("x", user="u"), epsilon=1, upper_limit=Fraction(1, 3)).taus()[-1] >= 1  # a sum's lattice is finer


def test_a_heavy_tailed_sum_lands_near_the_truth_most_of_the_time() -> None:
    rng = np.random.default_rng(0)
    uid = rng.integers(0, 2000, 20_000)
    x = rng.pareto(1.5, uid.size) * 10
    node = R2T(Query.sum("x", user="uid"), epsilon=1, upper_limit=10**6)
    data = as_dataset({"x": x, "uid": uid})
    truth = float(np.minimum(np.bincount(uid, weights=x), 10**6).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draws = np.array([node.release(data, SeededRandomness(s)) for s in range(60)])
    assert np.median(np.abs(draws - truth)) < 0.5 * truth  # R2T's price: L·ln(L/β)·τ*/ε below the truth
    assert np.mean(draws <= truth) >= 0.8  # one-sided: at most β = 1/10 overshoot, in expectation
    assert _r2t.DEFAULT_UPPER_LIMIT == 2**30
