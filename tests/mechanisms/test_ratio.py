"""The private ratio: LS brute force, coverage (and the seed listing's swap caught), KSW sensitivity, exact privacy."""

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
from dpalg.data import Relation, as_dataset
from dpalg.graph import PureToApprox
from dpalg.mechanisms.bounded_ls._bounded_ls import lattice_terms
from dpalg.mechanisms.bounded_ls._ratio import BoundedLSRatio, KSWRatio, NaiveRatio, PrivateRatio
from dpalg.mechanisms.bounded_ls._ratio_sensitivity import ratio_local_sensitivity, ratio_ls_bound
from dpalg.noise import SeededRandomness, discrete_laplace

RATIO = PrivateRatio("in_a")
VALUES = (1.0, 0.0, math.nan)  # in a, only in b, missing


def _dataset(a: int, b: int, missing: int = 1) -> list[float]:
    return [1.0] * a + [0.0] * (b - a) + [math.nan] * missing


def _counts(rows: list[float]) -> tuple[int, int]:
    return RATIO.counts(as_dataset({"in_a": np.array(rows)}))


def _neighbours(rows: list[float], relation: str) -> list[list[float]]:
    out: list[list[float]] = []
    if relation == "add_remove":
        out += [rows[:i] + rows[i + 1 :] for i in range(len(rows))]
        out += [rows + [v] for v in VALUES]
    else:
        out += [rows[:i] + [v] + rows[i + 1 :] for i in range(len(rows)) for v in VALUES]
    return out


def _value(a: int, b: int) -> Fraction:
    return Fraction(a, b) if b else Fraction(1, 2)


# --- local sensitivity ----------------------------------------------------------------------


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_ls_formula_against_brute_force(relation: str) -> None:
    for b in range(2, 13):
        for a in range(0, b + 1):
            rows = _dataset(a, b)
            assert _counts(rows) == (a, b)
            brute = max(abs(_value(*_counts(n)) - Fraction(a, b)) for n in _neighbours(rows, relation))
            formula = ratio_local_sensitivity(a, b, relation)  # type: ignore[arg-type]
            assert formula >= brute
            if 1 <= a <= b - 1:
                assert formula == brute, (a, b, relation)


def test_ls_bound_is_the_maximum_over_the_box() -> None:
    for a_lo, a_w, b_lo, b_w in itertools.product(range(0, 8), range(0, 4), range(2, 12), range(0, 6)):
        a_hi, b_hi = a_lo + a_w, b_lo + b_w
        feasible = [(a, b) for a in range(a_lo, a_hi + 1) for b in range(b_lo, b_hi + 1) if a <= b]
        if not feasible:
            continue
        relation: Relation
        for relation in ("add_remove", "substitution"):
            g = ratio_ls_bound(a_lo, a_hi, b_lo, b_hi, relation)
            brute = max(ratio_local_sensitivity(a, b, relation) for a, b in feasible)
            assert g >= brute
            if a_hi <= b_lo:  # every corner feasible: the bound is attained
                assert g == brute


# --- coverage: the private bound is below LS in at most a δ fraction --------------------------


def _seed_listing_bound(node: BoundedLSRatio, a_noisy: int, b_noisy: int) -> Fraction | None:
    """The seed's code listing with only the exact margin changed: a_lower/a_upper swapped."""
    w = node.margin()
    a_upper, a_lower = a_noisy + w, max(0, a_noisy - w)
    b_upper, b_lower = b_noisy + w, b_noisy - w
    if b_lower <= 1:
        return None
    bound_1 = Fraction(a_lower, b_lower**2 - b_lower)
    bx = math.isqrt(a_lower**2 - a_lower) + a_lower if a_lower >= 1 else 0
    candidates = [bi for bi in (b_upper, b_lower, bx, bx + 1) if b_lower <= bi <= b_upper]
    bound_2 = max(Fraction(bi - a_upper, bi * bi - bi) for bi in candidates)
    return max(bound_1, bound_2)


def _failures(node: BoundedLSRatio, a: int, b: int, n: int, seed: int, swapped: bool = False) -> int:
    """In how many of ``n`` runs the bound in use is below LS(a/b) (bail-outs use no bound).

    Runs are grouped by their noisy pair (â, b̂): the bound is a function of it.
    """
    rng = SeededRandomness(seed)
    t = node.noise_scale()
    noisy = np.stack([a + discrete_laplace(t, size=n, rng=rng), b + discrete_laplace(t, size=n, rng=rng)], axis=1)
    pairs, counts = np.unique(noisy, axis=0, return_counts=True)
    ls = ratio_local_sensitivity(a, b, node.relation)
    fails = 0
    for (an, bn), c in zip(pairs.tolist(), counts.tolist()):
        g = _seed_listing_bound(node, an, bn) if swapped else node.ls_bound(an, bn)
        fails += c * (g is not None and g < ls)
    return int(fails)


def _binomial_limit(n: int, delta: float) -> float:
    return n * delta + 4 * math.sqrt(n * delta * (1 - delta))


@pytest.mark.parametrize(
    ("a", "b", "delta", "relation"),
    [
        (0, 100, "0.05", "add_remove"),
        (50, 100, "0.05", "add_remove"),
        (100, 100, "0.05", "substitution"),
        (5, 60, "0.05", "add_remove"),
        (70, 80, "0.1", "add_remove"),
        (50, 100, "0.001", "add_remove"),
    ],
)
def test_coverage(a: int, b: int, delta: str, relation: str) -> None:
    """Over 10**5 runs the private bound is below the true LS in at most a δ fraction (binomial margin)."""
    node = RATIO.bounded_ls(1, 1, delta, relation=relation)
    n = 100_000
    assert _failures(node, a, b, n, seed=a + b) <= _binomial_limit(n, float(Fraction(delta)))


@pytest.mark.parametrize(("a", "b", "delta"), [(50, 100, "0.05"), (50, 100, "0.001")])
def test_seed_listing_swap_is_caught(a: int, b: int, delta: str) -> None:
    """The same 10**5-run coverage test refutes the seed listing's swapped bound.

    At a = b/2 the true LS is (b - a)/(b² - b); the swapped second term uses a_upper
    and undercovers whenever â is high (measured: more than half of the runs).
    """
    node = RATIO.bounded_ls(1, 1, delta)
    n = 100_000
    limit = _binomial_limit(n, float(Fraction(delta)))
    assert _failures(node, a, b, n, seed=1) <= limit
    swapped = _failures(node, a, b, n, seed=1, swapped=True)
    assert swapped > 0.4 * n > 5 * limit, swapped


@pytest.mark.parametrize(("a", "b"), [(0, 1000), (30, 1000), (500, 1000), (1000, 1000)])
def test_coverage_small_epsilon(a: int, b: int) -> None:
    node = RATIO.bounded_ls("0.1", "0.9", "0.01")
    n = 100_000
    assert _failures(node, a, b, n, seed=b - a) <= _binomial_limit(n, 0.01)
    assert _failures(node, a, b, 20_000, seed=7, swapped=True) > _binomial_limit(20_000, 0.01)


# --- KSW and naive sensitivities, exact privacy ---------------------------------------------


@pytest.mark.parametrize(("relation", "expected"), [("add_remove", 1), ("substitution", 2)])
def test_ksw_sensitivity_brute_force(relation: str, expected: int) -> None:
    worst = 0
    worst_naive = 0
    for b in range(0, 7):
        for a in range(0, b + 1):
            for missing in (0, 1):
                rows = _dataset(a, b, missing)
                a0, b0 = _counts(rows)
                for n in _neighbours(rows, relation):
                    a1, b1 = _counts(n)
                    worst = max(worst, abs(a1 - a0) + abs((b1 - a1) - (b0 - a0)))
                    worst_naive = max(worst_naive, abs(a1 - a0), abs(b1 - b0))
    assert worst == expected == RATIO.ksw(1, relation=relation).sensitivity()
    assert worst_naive == 1


def _max_loss(scales: tuple[Fraction, Fraction], v: tuple[int, int], v2: tuple[int, int]) -> Fraction:
    """max over outputs o of log P[o | v] - log P[o | v2] for independent discrete Laplace
    (p = e^{-1/t}: the log pmf ratio is sum_j (|o_j - v2_j| - |o_j - v_j|)/t_j, exact)."""
    best = Fraction(-(10**9))
    for o in itertools.product(range(-4, 12), repeat=2):
        loss = sum((Fraction(abs(o[j] - v2[j]) - abs(o[j] - v[j])) / scales[j] for j in range(2)), Fraction(0))
        best = max(best, loss)
    return best


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exact_privacy_of_the_pure_mechanisms(relation: str) -> None:
    eps = Fraction(7, 10)
    naive, ksw = RATIO.naive(eps, relation=relation), RATIO.ksw(eps, relation=relation)
    worst_naive, worst_ksw = Fraction(0), Fraction(0)
    for a, b in [(0, 0), (0, 1), (1, 1), (2, 5), (3, 3)]:
        rows = _dataset(a, b)
        for n in _neighbours(rows, relation):
            a1, b1 = _counts(n)
            worst_naive = max(worst_naive, _max_loss(naive.noise_scales(), (a, b), (a1, b1)))
            worst_ksw = max(worst_ksw, _max_loss(ksw.noise_scales(), (a, b - a), (a1, b1 - a1)))
    assert worst_ksw == eps  # tight
    assert worst_naive <= eps
    assert naive.cost() == ksw.cost() == PureDP(eps)


def _neighbour_counts(a: int, b: int, relation: str) -> list[tuple[int, int]]:
    """The counts of every neighbour of a dataset with counts (a, b) (missing rows never matter)."""
    out = [(a + 1, b + 1), (a, b + 1)]
    if a >= 1:
        out.append((a - 1, b - 1))
    if b - a >= 1:
        out.append((a, b - 1))
    if relation == "substitution":
        out += [(a - 1, b)] if a >= 1 else []
        out += [(a + 1, b)] if b - a >= 1 else []
    return out


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exact_privacy_of_the_release_step_given_coverage(relation: str) -> None:
    """For every noisy (â, b̂) whose intervals cover (a, b) and that uses the LS branch, the
    lattice integers of a/b and of every neighbour's ratio differ by at most t·ε₂ (the
    discrete Laplace pmf ratio is e^{|shift|/t}), on the same lattice and scale."""
    node = RATIO.bounded_ls(2, Fraction(1, 2), "0.1", relation=relation)
    w = node.margin()
    checked = 0
    for a, b in [(0, 12), (3, 12), (6, 12), (12, 12), (20, 25), (2, 30), (7, 1000)]:
        for a_noisy in range(a - w, a + w + 1):
            for b_noisy in range(b - w, b + w + 1):
                g = node.ls_bound(a_noisy, b_noisy)
                if g is None:
                    continue
                m, k, t = lattice_terms(Fraction(a, b), g, node.epsilon_release)
                for a1, b1 in _neighbour_counts(a, b, relation):
                    m1, k1, t1 = lattice_terms(_value(a1, b1), g, node.epsilon_release)
                    assert (k1, t1) == (k, t)
                    assert Fraction(abs(m - m1)) / t <= node.epsilon_release
                    checked += 1
    assert checked > 1000


# --- interface, invalid arguments, end to end, statistics --------------------------------------


def test_counts_and_value() -> None:
    data = as_dataset({"in_a": np.array([1, 0, 1, 1, 0, np.nan, 2.0])})
    assert RATIO.counts(data) == (4, 6)
    assert RATIO.value(data) == Fraction(2, 3)
    assert RATIO.value(as_dataset({"in_a": np.array([], dtype=float)})) == Fraction(1, 2)


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: PrivateRatio(""), "PrivateRatio", "numerator"),
        (lambda: NaiveRatio(RATIO, 0), "NaiveRatio", "epsilon"),
        (lambda: NaiveRatio("in_a", 1), "NaiveRatio", "ratio"),  # type: ignore[arg-type]
        (lambda: NaiveRatio(RATIO, 1, "both"), "NaiveRatio", "relation"),
        (lambda: KSWRatio(RATIO, "-1"), "KSWRatio", "epsilon"),
        (lambda: KSWRatio(RATIO, 1, "x"), "KSWRatio", "relation"),
        (lambda: BoundedLSRatio(RATIO, 0, 1, "0.1"), "BoundedLSRatio", "epsilon_bound"),
        (lambda: BoundedLSRatio(RATIO, 1, 0, "0.1"), "BoundedLSRatio", "epsilon_release"),
        (lambda: BoundedLSRatio(RATIO, 1, 1, 0), "BoundedLSRatio", "delta"),
        (lambda: BoundedLSRatio(RATIO, 1, 1, 1), "BoundedLSRatio", "delta"),
        (lambda: BoundedLSRatio(RATIO, 1, 1, "0.1", "x"), "BoundedLSRatio", "relation"),
        (lambda: RATIO.ksw(1).simulate(3, 2, 10, SeededRandomness(0)), "KSWRatio", "(a, b)"),
        (lambda: RATIO.naive(1).simulate(1, 2, 0, SeededRandomness(0)), "NaiveRatio", "trials"),
        (lambda: ratio_local_sensitivity(1, 1), "ratio_local_sensitivity", "(a, b)"),
        (lambda: ratio_ls_bound(0, 1, 1, 3), "ratio_ls_bound", "bounds"),
    ],
)
def test_invalid_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert (info.value.owner, info.value.field) == (owner, field)


def test_repr_reproduces_construction() -> None:
    from fractions import Fraction  # noqa: F401  (used by eval)

    for node in (RATIO.naive("0.5"), RATIO.ksw(1, relation="substitution"), RATIO.bounded_ls("0.1", "0.9", "1e-6")):
        assert eval(repr(node)) == node  # noqa: S307


def test_end_to_end() -> None:
    plan = Compose(PureToApprox(RATIO.naive(1)), PureToApprox(RATIO.ksw(1)), RATIO.bounded_ls("0.1", "0.9", "1e-6"))
    assert plan.cost() == ApproxDP(3, "1e-6")
    plan.check(ApproxDP(3, "1e-6"))
    data = {"in_a": np.r_[np.ones(2000), np.zeros(8000)]}
    values = plan.run(data, rng=SeededRandomness(0)).value
    assert isinstance(values, tuple)
    assert all(isinstance(v, float) and abs(v - 0.2) < 0.02 for v in values)
    with pytest.raises(InvalidArgument):
        Compose(RATIO.naive(1), RATIO.bounded_ls(1, 1, "0.1"))  # type: ignore[misc]  # mixed measures


def test_errors_ordering_at_large_b() -> None:
    """At b = 10**4, ε = 1: KSW < bounded LS < naive in mean absolute error (seed 000's figures)."""
    rng = SeededRandomness(42)
    a, b, n = 3000, 10_000, 4000
    nodes: dict[str, NaiveRatio | KSWRatio | BoundedLSRatio] = {
        "naive": RATIO.naive(1), "ksw": RATIO.ksw(1), "ls": RATIO.bounded_ls("0.1", "0.9", "1e-6"),
    }
    mae = {name: float(np.mean(np.abs(node.simulate(a, b, n, rng) - a / b))) for name, node in nodes.items()}
    assert mae["ksw"] < mae["ls"] < mae["naive"], mae
    # the naive MAE is close to its prediction: |Z_a - r Z_b| / b with Z ~ discrete Laplace(2)
    assert 0.8 * 2.6 / b < mae["naive"] < 1.2 * 2.6 / b


def test_bail_out_when_b_is_small() -> None:
    node = RATIO.bounded_ls(1, 1, "1e-6")
    assert node.ls_bound(1, 3) is None
    out = node.simulate(1, 3, 500, SeededRandomness(0))
    assert out.shape == (500,) and np.all((out >= 0) & (out <= 1))


@pytest.mark.slow  # the same run (and checks) as tests/test_examples.py::test_example_runs_small[private_ratio.py]
def test_example_runs_quick(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "examples" / "private_ratio.py"
    subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)], check=True, timeout=120)
    assert (tmp_path / "private_ratio.png").stat().st_size > 0
    assert (tmp_path / "private_ratio.md").read_text().count("|") > 10


def test_the_counts_through_the_reductions_seam_are_the_counts_of_the_numbers() -> None:
    """(a, b) from ``count`` and the rows keyed 0/False equal the count of present and of non-zero numbers."""
    rng = np.random.default_rng(11)
    pool = (0.0, -0.0, 1.0, 0.5, -2.0, math.inf, -math.inf, math.nan, 5e-324, 1e308)
    for trial in range(400):
        n = int(rng.integers(0, 10))
        column: np.ndarray
        match trial % 3:
            case 0:
                column = np.array(rng.choice(pool, n), dtype=np.float64)
            case 1:
                column = rng.integers(-2, 3, n)
            case _:
                column = rng.integers(0, 2, n).astype(bool)
        numbers = np.asarray(column, dtype=np.float64)
        present = ~np.isnan(numbers)
        expected = int(np.count_nonzero(present & (numbers != 0))), int(np.count_nonzero(present))
        assert PrivateRatio("c").counts(as_dataset({"c": column})) == expected, column
