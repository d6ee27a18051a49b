"""The empirical auditor: Clopper–Pearson bounds, power on correct mechanisms, and
refutation of deliberately broken variants (which live only here, in the tests):

* noise scale halved;
* float Laplace noise added in floating point (Mironov 2012's attack pattern);
* PTR with the seed's too-low threshold ln(2/δ)/(2ε).
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import final

import attrs
import mpmath
import numpy as np
import pytest

from dpalg import BOTTOM, ApproxDP, Clip, PureDP, Query
from dpalg.cli import main
from dpalg.data import Dataset, Neighbouring
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.mechanisms import Laplace, ProposeTest
from dpalg.mechanisms.ptr._propose_test import exact_value
from dpalg.noise import AbstractRandomness, SeededRandomness, discrete_laplace, lattice_noise
from dpalg.release import empirical_epsilon_lower_bound
from dpalg.release._adversary import NeighbourPair, neighbour_candidates
from dpalg.release._auditor import audit_mechanism, format_table
from dpalg.release._empirical import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    draw_samples,
    evaluate_samples,
    granularity,
    plot_audit,
    regularized_beta,
)

# --- deliberately broken mechanisms (never anywhere but in this file) ---------------------------


@final
@attrs.frozen
class HalfNoiseCount(AbstractPrimitive[PureDP]):
    """Broken: claims ε but uses half the required noise scale."""

    epsilon: Fraction

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring()

    def privacy(self) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "broken on purpose: noise scale halved")

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        return data.n_rows + int(discrete_laplace(1 / (2 * self.epsilon), size=1, rng=rng)[0])


@final
@attrs.frozen
class FloatLaplaceSum(AbstractPrimitive[PureDP]):
    """Broken: textbook float Laplace (inverse CDF of a 53-bit uniform) added in float64.

    The scale is right; the set of floats it can output depends on the data
    (Mironov 2012), e.g. f(x) = 0 gives outputs finer than 2^-53, f(x') = 1 never does.
    """

    epsilon: Fraction

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring()

    def privacy(self) -> PrivacyClaim[PureDP]:
        return PrivacyClaim(PureDP(self.epsilon), "broken on purpose: floating-point Laplace")

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        value = float(np.sum(np.clip(data.numeric("x"), 0.0, 1.0)))
        u = (int(rng.uint64(1)[0]) >> 11) * 2.0**-53 - 0.5  # uniform in [-1/2, 1/2)
        noise = -math.copysign(1.0, u) * math.log(1 - 2 * abs(u)) / float(self.epsilon)
        return value + noise


@final
@attrs.frozen
class LowThresholdPTR(AbstractPrimitive[ApproxDP]):
    """Broken: ProposeTest with seed 002's threshold ln(2/δ)/(2ε), too low for (2ε, δ)."""

    inner: ProposeTest

    @property
    def neighbouring(self) -> Neighbouring:
        return self.inner.neighbouring

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        return self.inner.privacy()

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        p = self.inner
        values = p.query.values(data)
        z = int(discrete_laplace(1 / p.eps_test, size=1, rng=rng)[0])
        if p.distance(values) + z <= math.log(2 / float(p.delta)) / (2 * float(p.eps_test)):
            return BOTTOM
        out = lattice_noise(np.array([exact_value(p.query, values)]), k=p.lattice_k(), kind="laplace", scale=p.release_scale(), rng=rng)
        return float(out[0])


X = {"x": np.zeros(10)}
X_PLUS = {"x": np.zeros(11)}
ZERO_VS_ONE = NeighbourPair("sum 0 vs 1", {"x": np.zeros(5)}, {"x": np.array([0.0] * 5 + [1.0])})
broken_half = HalfNoiseCount(Fraction(1))
broken_float = FloatLaplaceSum(Fraction(1))
correct_sum = Laplace(Query.sum("x") | Clip(0, 1), epsilon=1)
pairs = [("count 10 vs 11", X, X_PLUS), ("sum 0 vs 1", ZERO_VS_ONE.data, ZERO_VS_ONE.neighbour)]
PTR = ProposeTest(Query.mean("x") | Clip(0, 100), bound=1, epsilon=1, delta="0.05")
broken_ptr = LowThresholdPTR(PTR)
# both unstable (γ = 0): the means 33.3 and 50 are far apart compared with the noise scale b/ε = 1
PTR_PAIR = NeighbourPair("unstable: [0, 0, 100] vs + 100", {"x": np.array([0.0, 0.0, 100.0])}, {"x": np.array([0.0, 0.0, 100.0, 100.0])})


# --- Clopper–Pearson --------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "x"), [(1, 1, 0.3), (3, 4, 0.3), (30, 40, 0.5), (2.5, 100, 0.01), (100, 2.5, 0.99), (7, 7, 0.9)])
def test_regularized_beta_matches_mpmath(a: float, b: float, x: float) -> None:
    assert regularized_beta(a, b, x) == pytest.approx(float(mpmath.betainc(a, b, 0, x, regularized=True)), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (10, 10), (50, 100), (3, 100_000), (99_999, 100_000), (5_000, 10_000), (200, 1_000_000)])
def test_clopper_pearson_matches_scipy_and_is_conservative(k: int, n: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    alpha = 0.0025
    lo, hi = clopper_pearson_lower(k, n, alpha), clopper_pearson_upper(k, n, alpha)
    ref_lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    ref_hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    assert lo <= ref_lo * (1 + 1e-12) and lo == pytest.approx(ref_lo, rel=1e-7)
    assert hi >= ref_hi * (1 - 1e-12) and hi == pytest.approx(ref_hi, rel=1e-7)
    assert lo <= k / n <= hi


def test_clopper_pearson_coverage() -> None:
    # the one-sided lower bound misses p = 0.3 in at most about alpha of many binomial draws
    gen = np.random.default_rng(5)
    draws = Counter(int(k) for k in gen.binomial(200, 0.3, size=400))  # each distinct k's bound computed once
    misses = sum(times for k, times in draws.items() if clopper_pearson_lower(k, 200, 0.1) > 0.3)
    assert misses <= 0.1 * 400 * 1.6


def test_granularity_feature() -> None:
    assert granularity(np.array([0.75, 8.0, 0.0, -0.5, math.inf])).tolist() == [-2.0, 3.0, math.inf, -1.0, math.inf]
    assert granularity(np.array([2.0**-60 * 3])).tolist() == [-60.0]


# --- correct mechanisms are not refuted; the auditor has power ----------------------------------


# 5,000 trials per dataset give eps_hat about 0.8 (20,000: about 0.95); the halved noise about 1.8 (true eps 2)
AUDIT_TRIALS = [5_000, pytest.param(20_000, marks=pytest.mark.slow)]


@pytest.mark.parametrize("trials", AUDIT_TRIALS)
def test_correct_laplace_is_not_refuted(trials: int) -> None:
    node = Laplace(Query.count(), epsilon=1)
    audit = empirical_epsilon_lower_bound(node, X, X_PLUS, trials=trials, epsilon=1.0, rng=SeededRandomness(0))
    assert audit.epsilon_lower <= 1.0 and (audit.delta_lower or 0.0) == 0.0
    assert audit.epsilon_lower > 0.5  # the auditor has power: Laplace is tight


@pytest.mark.parametrize("trials", [3000, pytest.param(6000, marks=pytest.mark.slow)])
def test_correct_laplace_sum_is_not_refuted_on_the_float_pair(trials: int) -> None:
    audit = audit_mechanism(correct_sum, [ZERO_VS_ONE], trials=trials, rng=SeededRandomness(1))
    assert not audit.violation and audit.epsilon_lower <= 1.0


@pytest.mark.slow  # ProposeTest releases cost milliseconds each (its distance to instability)
def test_correct_ptr_is_not_refuted_on_the_unstable_pair() -> None:
    audit = audit_mechanism(PTR, [PTR_PAIR], trials=6000, rng=SeededRandomness(2))
    assert not audit.violation, (audit.epsilon_lower, audit.delta_lower)


# --- broken variants are refuted ----------------------------------------------------------------


@pytest.mark.parametrize("trials", AUDIT_TRIALS)
def test_halved_noise_is_refuted(trials: int) -> None:
    audit = empirical_epsilon_lower_bound(broken_half, X, X_PLUS, trials=trials, rng=SeededRandomness(0))
    assert audit.epsilon_lower > 1.0


def test_float_laplace_is_refuted_by_its_granularity() -> None:
    audit = audit_mechanism(broken_float, [ZERO_VS_ONE], trials=4000, rng=SeededRandomness(3))
    assert audit.violation and audit.epsilon_lower > 2.0
    worst = audit.worst
    assert worst is not None and worst[1].event.feature == "granularity"


@pytest.mark.slow  # needs ~6000 runs per dataset to separate δ̂ from δ; ProposeTest is slow to run
def test_low_ptr_threshold_is_refuted() -> None:
    audit = audit_mechanism(broken_ptr, [PTR_PAIR], trials=6000, rng=SeededRandomness(4))
    assert audit.violation
    assert audit.delta_lower > float(PTR.delta), (audit.epsilon_lower, audit.delta_lower)


def test_ptr_candidates_include_the_bottom_boundary() -> None:
    labels = [p.label for p in neighbour_candidates(PTR)]
    assert any("⊥ boundary" in label for label in labels) and any("unstable" in label for label in labels)


# --- reporting ----------------------------------------------------------------------------------


def test_table_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    audit = audit_mechanism(broken_float, [ZERO_VS_ONE], trials=1000, rng=SeededRandomness(5))
    table = format_table([audit])
    assert "VIOLATION" in table and "eps_hat" in table
    worst = audit.worst
    assert worst is not None
    out = plot_audit(worst[1], tmp_path / "float.png", title="float Laplace")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    samples = draw_samples(Laplace(Query.histogram("k", keys=("a", "b")), epsilon=1), {"k": ["a", "b"]}, {"k": ["a", "b", "a"]}, trials=300, rng=1, coordinate="a")
    assert plot_audit(evaluate_samples(samples), tmp_path / "hist.png").exists()


def test_progress_bar_when_tqdm_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    audit = empirical_epsilon_lower_bound(Laplace(Query.count(), epsilon=1), X, X_PLUS, trials=200, rng=1, progress=True)
    assert audit.trials == 200
    assert "run" in capsys.readouterr().err


def test_auditor_arguments_are_validated() -> None:
    from dpalg import InvalidArgument

    with pytest.raises(InvalidArgument, match="trials"):
        empirical_epsilon_lower_bound(broken_half, X, X_PLUS, trials=10)
    with pytest.raises(InvalidArgument, match="alpha"):
        empirical_epsilon_lower_bound(broken_half, X, X_PLUS, trials=200, alpha=2)
    with pytest.raises(InvalidArgument, match="primitive"):
        draw_samples(object(), X, X_PLUS, trials=200)  # type: ignore[arg-type]


# --- the command line ---------------------------------------------------------------------------

HERE = Path(__file__).resolve()


def test_cli_flags_the_broken_variants(capsys: pytest.CaptureFixture[str]) -> None:
    # 1000 trials: eps_hat about 1.6-1.9 for the halved noise, about 2.8 for the float Laplace (claimed 1)
    for name in ("broken_half", "broken_float"):
        code = main(["audit", "--empirical", f"{HERE}:{name}", "--neighbours", f"{HERE}:pairs", "--trials", "1000", "--seed", "7", "--no-progress"])
        out = capsys.readouterr().out
        assert code == 1 and "VIOLATION" in out, out


def test_cli_confirms_a_correct_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    # no power needed: a false refutation has probability <= alpha at any number of trials
    code = main(["audit", "--empirical", f"{HERE}:correct_sum", "--trials", "500", "--seed", "7", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "OK: eps_hat <= eps" in out and "dpalg-derived" in out, out


def test_cli_empirical_usage_errors(tmp_path: Path) -> None:
    assert main(["audit", "--empirical"]) == 2
    assert main(["audit", "--empirical", f"{HERE}:correct_sum", "--trials", "10"]) == 2
    assert main(["audit", "--empirical", f"{HERE}:correct_sum", "--neighbours", f"{HERE}:X"]) == 2


@pytest.mark.slow  # the heaviest fast tests (10-40 s each): still run by .ci/run
def test_cli_demo_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    code = main(["audit", "--empirical", "--demo", "--trials", "200", "--seed", "3", "--no-progress", "--plot", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    for mechanism in ("Laplace", "Gaussian", "ExponentialQuantile", "NoisyMax", "KSWRatio", "ProposeTest", "PTRMode", "ShiftedInverse"):
        assert mechanism in out
    assert "VIOLATION" not in out and len(list(tmp_path.glob("*.png"))) >= 10


@pytest.mark.slow
@pytest.mark.timeout(900)  # one process for ~3 min idle (183 s before this session's changes, 203 s after, same machine); hit 300 s under load
def test_cli_demo_table_slow(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--empirical", "--demo", "--trials", "2000", "--seed", "4", "--no-progress"]) == 0
    assert "VIOLATION" not in capsys.readouterr().out
