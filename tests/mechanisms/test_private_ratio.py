"""Private ratio: LS brute force, coverage of the private LS bound (and the seed's swap caught), KSW sensitivity, exact privacy."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpalg import ApproxDP, Compose, InvalidArgument, PureDP
from dpalg.data import as_dataset
from dpalg.mechanisms._bounded_local import lattice_terms, tail_margin
from dpalg.mechanisms._private_ratio import (
    RatioKSW,
    RatioLocalSensitivity,
    RatioNaive,
    ratio_counts,
    ratio_local_sensitivity,
    ratio_ls_upper,
)
from dpalg.noise import SeededRandomness, discrete_laplace

ROWS = (1.0, 0.0, math.nan)  # in a, only in b, no value


def _f(a: int, b: int) -> Fraction:
    return Fraction(a, b) if b > 0 else Fraction(0)


def _neighbour_counts(a: int, b: int, relation: str) -> list[tuple[int, int]]:
    """Counts of all neighbours of a dataset with counts (a, b) (plus NaN rows, which never matter)."""
    out = [(a + 1, b + 1), (a, b + 1)]  # add a 1-row, a 0-row
    if a >= 1:
        out.append((a - 1, b - 1))
    if b - a >= 1:
        out.append((a, b - 1))
    if relation == "substitution":
        if a >= 1:
            out.append((a - 1, b))
        if b - a >= 1:
            out.append((a + 1, b))
    return out


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_ls_formula_against_brute_force(relation: str) -> None:
    for b in range(2, 40):
        for a in range(0, b + 1):
            brute = max(abs(_f(a, b) - _f(a2, b2)) for a2, b2 in _neighbour_counts(a, b, relation))
            formula = ratio_local_sensitivity(a, b, relation)  # type: ignore[arg-type]
            assert formula >= brute
            if 0 < a < b:
                assert formula == brute


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_ls_upper_is_the_max_over_the_box(relation: str) -> None:
    for a_lo, a_hi, b_lo, b_hi in [(0, 3, 2, 9), (3, 7, 4, 12), (10, 30, 12, 60), (1, 1, 2, 2), (5, 20, 6, 40)]:
        brute = max(
            ratio_local_sensitivity(a, b, relation)  # type: ignore[arg-type]
            for a in range(a_lo, a_hi + 1)
            for b in range(b_lo, b_hi + 1)
        )
        assert ratio_ls_upper(a_lo, a_hi, b_lo, b_hi, relation) >= brute  # type: ignore[arg-type]


def _swapped_upper(a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> Fraction:
    """The seed's listing: a_lower in the a/(b^2-b) term and a_upper in the (b-a) term."""
    bound_1 = Fraction(a_lo, b_lo * b_lo - b_lo)
    bx = math.sqrt(a_lo * a_lo - a_lo) + a_lo
    cands = [c for c in (b_hi, b_lo, math.ceil(bx), math.floor(bx)) if b_lo <= c <= b_hi]
    bound_2 = max(Fraction(c - a_hi, c * c - c) for c in cands)
    return max(bound_1, bound_2)


def _coverage_failures(node: RatioLocalSensitivity, a: int, b: int, n: int, swapped: bool) -> int:
    rng = SeededRandomness(2024)
    draws = discrete_laplace(node.count_scale(), size=2 * n, rng=rng)
    pairs, counts = np.unique(np.stack([a + draws[:n], b + draws[n:]], axis=1), axis=0, return_counts=True)
    true_ls = ratio_local_sensitivity(a, b)
    failures = 0
    for (ah, bh), c in zip(pairs.tolist(), counts.tolist()):
        a_lo, a_hi, b_lo, b_hi = node.intervals(ah, bh)
        if b_lo <= 1:
            continue  # bail-out: no LS bound is used
        bound = _swapped_upper(a_lo, a_hi, b_lo, b_hi) if swapped else ratio_ls_upper(a_lo, a_hi, b_lo, b_hi)
        failures += c * (bound < true_ls)
    return int(failures)


@pytest.mark.parametrize(("a", "b", "delta"), [(50, 100, "0.2"), (5, 60, "0.05"), (70, 80, "0.1"), (50, 100, "0.001")])
def test_private_ls_bound_coverage(a: int, b: int, delta: str) -> None:
    n = 10**5
    node = RatioLocalSensitivity("m", epsilon_bound=1, epsilon_release=1, delta=delta)
    failures = _coverage_failures(node, a, b, n, swapped=False)
    d = float(Fraction(delta))
    assert failures <= d * n + 4 * math.sqrt(d * n * (1 - d))


def test_seed_swapped_bounds_fail_coverage() -> None:
    # a = b/2: the a/(b^2-b) term dominates and needs the UPPER bound on a.
    n = 10**5
    node = RatioLocalSensitivity("m", epsilon_bound=1, epsilon_release=1, delta="0.001")
    failures = _coverage_failures(node, 50, 100, n, swapped=True)
    assert failures > 0.5 * n  # vs the allowed 100 + margin


def test_tail_margin_is_exact_and_minimal() -> None:
    for t in (Fraction(1), Fraction(2), Fraction(7, 3), Fraction(20)):
        for delta in (Fraction(1, 10), Fraction(1, 1000), Fraction(1, 10**6)):
            w = tail_margin(t, delta)
            p = math.exp(-1 / float(t))
            # P[Z >= m] = p^m / (1 + p)
            assert p ** (w + 1) / (1 + p) <= float(delta) * (1 + 1e-9)
            assert p**w / (1 + p) > float(delta) * (1 - 1e-9)  # minimal (margin for float)


def test_tail_margin_matches_empirical_tail() -> None:
    t, delta = Fraction(3), Fraction(1, 20)
    w = tail_margin(t, delta)
    z = discrete_laplace(t, size=10**5, rng=SeededRandomness(3))
    frac = float(np.mean(z > w))
    assert frac <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / 10**5)
    assert frac > 0.03


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_ksw_sensitivity_by_brute_force(relation: str) -> None:
    worst = 0
    for n in range(0, 4):
        for rows in itertools.product(ROWS, repeat=n):
            a, b = ratio_counts(as_dataset({"m": np.array(rows)}), "m")
            nbrs: list[tuple[float, ...]] = []
            if relation == "add_remove":
                nbrs += [rows + (v,) for v in ROWS] + [rows[:i] + rows[i + 1 :] for i in range(n)]
            else:
                nbrs += [rows[:i] + (v,) + rows[i + 1 :] for i in range(n) for v in ROWS]
            for y in nbrs:
                a2, b2 = ratio_counts(as_dataset({"m": np.array(y, dtype=np.float64)}), "m")
                worst = max(worst, abs(a - a2) + abs((b - a) - (b2 - a2)))
    assert worst == RatioKSW("m", epsilon=1, relation=relation).sensitivity()


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exact_privacy_of_pure_nodes(relation: str) -> None:
    """Integer noise: the worst pmf log-ratio is sum |shift_i| / t_i; check on all neighbour counts."""
    eps = Fraction(7, 10)
    ksw = RatioKSW("m", epsilon=eps, relation=relation)
    naive = RatioNaive("m", epsilon=eps, relation=relation)
    worst_k = worst_n = Fraction(0)
    for b in range(0, 8):
        for a in range(0, b + 1):
            for a2, b2 in _neighbour_counts(a, b, relation):
                worst_k = max(worst_k, (abs(a - a2) + abs((b - a) - (b2 - a2))) / ksw.scale())
                worst_n = max(worst_n, (abs(a - a2) + abs(b - b2)) / (2 / eps))
    assert worst_k == eps and worst_n == eps


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_conditional_release_is_eps2_dp_on_the_good_event(relation: str) -> None:
    """For every noisy (â, b̂) whose box covers (a, b): the lattice integers of a/b and of any
    neighbour's ratio differ by at most t * ε₂ (the pmf ratio of discrete Laplace is e^{|shift|/t})."""
    node = RatioLocalSensitivity("m", epsilon_bound=2, epsilon_release="0.5", delta="0.1", relation=relation)
    w = node.margin()
    checked = 0
    for a, b in [(0, 12), (3, 12), (6, 12), (12, 12), (20, 25), (2, 30)]:
        for ah in range(a - w, a + w + 1):
            for bh in range(b - w, b + w + 1):
                bound = node.ls_bound(ah, bh)
                if bound is None:
                    continue
                m, t, k = lattice_terms(_f(a, b), bound, node.epsilon_release)
                for a2, b2 in _neighbour_counts(a, b, relation):
                    m2, t2, k2 = lattice_terms(_f(a2, b2), bound, node.epsilon_release)
                    assert (t2, k2) == (t, k)
                    assert abs(m - m2) / t <= node.epsilon_release
                    checked += 1
    assert checked > 1000


def _data(a: int, b: int) -> dict[str, np.ndarray]:
    return {"m": np.array([1.0] * a + [0.0] * (b - a) + [math.nan] * 3)}


def test_end_to_end_compose_check_run() -> None:
    plan = Compose(
        RatioLocalSensitivity("m", epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6"),
        RatioLocalSensitivity("m", epsilon_bound="0.5", epsilon_release="0.5", delta="1e-6"),
    )
    plan.check(ApproxDP(2, "2e-6"))
    out = plan.run(_data(300, 1000), rng=0)
    assert out is not None
    pure = Compose(RatioNaive("m", epsilon=1), RatioKSW("m", epsilon=1))
    pure.check(PureDP(2))
    assert pure.run(_data(300, 1000), rng=0) is not None


def test_utility_and_bail_out() -> None:
    rng = SeededRandomness(1)
    ls = RatioLocalSensitivity("m", epsilon_bound="0.5", epsilon_release="0.5", delta="1e-6")
    big = ls.sample(3000, 10000, 2000, rng)
    assert abs(float(np.mean(big)) - 0.3) < 0.001 and float(np.mean(np.abs(big - 0.3))) < 0.002
    small = ls.sample(1, 3, 500, rng)  # b_lo <= 1 almost surely: naive fallback, still in [0, 1]
    assert ((small >= 0) & (small <= 1)).all()
    ksw = RatioKSW("m", epsilon=1).sample(3000, 10000, 2000, rng)
    assert float(np.mean(np.abs(ksw - 0.3))) < 0.001


def test_release_reads_the_column() -> None:
    data = as_dataset(_data(40, 100))
    assert ratio_counts(data, "m") == (40, 100)
    out = RatioKSW("m", epsilon=50).release(data, SeededRandomness(0))
    assert isinstance(out, float) and abs(out - 0.4) < 0.05


INVALID = [
    (lambda: RatioNaive("", epsilon=1), "column"),
    (lambda: RatioNaive("m", epsilon=0), "epsilon"),
    (lambda: RatioNaive("m", epsilon=1, relation="swap"), "relation"),
    (lambda: RatioKSW("m", epsilon="-1"), "epsilon"),
    (lambda: RatioKSW("m", epsilon=1, relation="x"), "relation"),
    (lambda: RatioLocalSensitivity("m", epsilon_bound=0, epsilon_release=1, delta="0.1"), "epsilon_bound"),
    (lambda: RatioLocalSensitivity("m", epsilon_bound=1, epsilon_release="nan", delta="0.1"), "epsilon_release"),
    (lambda: RatioLocalSensitivity("m", epsilon_bound=1, epsilon_release=1, delta=0), "delta"),
    (lambda: RatioLocalSensitivity("m", epsilon_bound=1, epsilon_release=1, delta=1), "delta"),
    (lambda: ratio_ls_upper(0, 1, 1, 5), "bounds"),
    (lambda: tail_margin(1, 2), "delta"),
]


@pytest.mark.parametrize(("make", "field"), INVALID, ids=[f for _, f in INVALID])
def test_invalid_arguments(make: object, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        make()  # type: ignore[operator]
    assert info.value.field == field


def test_example_runs_quick(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "examples" / "private_ratio.py"
    subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)], check=True, timeout=120)
    assert (tmp_path / "private_ratio.png").exists() and (tmp_path / "private_ratio.md").exists()
