"""SmoothBound over the clipped trimmed mean, add/remove (``dpalg.mechanisms.smooth._trimmed``).

Brute force on a small integer domain (every dataset within distance k), an exact
rational enumeration of every configuration, the old O(K³) profile, β-smoothness on
every neighbouring pair, broken variants caught, the exact privacy of the release, the
seam path against the in-memory path, and the public run time.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import cache

import attrs
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import Clip, InvalidArgument, Query
from dpalg.data import as_dataset
from dpalg.mechanisms.smooth._profile import _SLACK, truncated_smooth_bound
from dpalg.mechanisms.smooth._trimmed import (
    MAX_LEVELS,
    TRIM_ERR_REL,
    TrimmedSummary,
    trimmed_center_and_scale,
    trimmed_center_and_scale_values,
    trimmed_horizon,
    trimmed_lattice_exponent,
    trimmed_levels,
    trimmed_profile,
    trimmed_radius,
    trimmed_smooth_bound,
    trimmed_summary,
    trimmed_summary_from_terms,
    trimmed_summary_from_values,
    trimmed_value,
)
from dpalg.noise._admissible import Admissibility, LaplaceNoise
from dpalg.queries import evaluate_values
from dpalg.sensitivity._ls_trimmed import _tm_ar_profile
from dpalg.sensitivity._smooth import _beta0

Data = tuple[int, ...]
H = 4  # values and terms in {0, …, 4}: the clip range is [0, H], so an optimal y only adds 0s and 4s
DOMAIN = range(H + 1)
TRIMS = (Fraction(1, 10), Fraction(1, 4), Fraction(1, 3))
LEVELS = 3
N_MAX = 5


def drop(trim: Fraction, m: int) -> int:
    return (trim.numerator * m) // trim.denominator


def regimes(trim: Fraction, m: int) -> list[tuple[int, int]]:
    """The (window width, values dropped above it) of the two regimes a neighbour of size m ± 1 can reach."""
    t = drop(trim, m)
    c = m - 2 * t
    out = []
    if (drop(trim, m - 1) == t or drop(trim, m + 1) == t + 1) and c >= 2:
        out.append((c - 1, t))
    if drop(trim, m - 1) == t - 1 or drop(trim, m + 1) == t:
        out.append((c, t - 1))
    return out


def tmean(y: Data, trim: Fraction) -> Fraction:
    if not y:
        return Fraction(H, 2)
    t = drop(trim, len(y))
    return Fraction(sum(y[t : len(y) - t]), len(y) - 2 * t)


def add_remove(y: Data) -> Iterator[Data]:
    for v in DOMAIN:
        yield tuple(sorted((*y, v)))
    for i in range(len(y)):
        yield y[:i] + y[i + 1 :]


@cache
def local_sensitivity(y: Data, trim: Fraction) -> Fraction:
    f = tmean(y, trim)
    return max(abs(f - tmean(z, trim)) for z in add_remove(y))


@cache
def ls_at_distance(x: Data, trim: Fraction, k: int) -> Fraction:
    """max of LS over the add/remove ball of radius k (breadth-first, exact)."""
    seen, frontier = {x}, {x}
    for _ in range(k):
        frontier = {y for z in frontier for y in add_remove(z)} - seen
        seen |= frontier
    return max(local_sensitivity(y, trim) for y in seen)


def datasets(n_max: int = N_MAX) -> Iterator[Data]:
    for n in range(n_max + 1):
        yield from itertools.combinations_with_replacement(DOMAIN, n)


def pairs(n_max: int = N_MAX) -> Iterator[tuple[Data, Data]]:
    for x in datasets(n_max):
        for v in DOMAIN:
            yield x, tuple(sorted((*x, v)))


def summary(x: Data | npt.NDArray[np.int64], trim: Fraction, h: int = H) -> TrimmedSummary:
    return trimmed_summary_from_terms(np.asarray(x, dtype=np.int64), 0, h, trim)


Pad = Callable[[int, int, Callable[[int], int]], Fraction]


def config_profile(x: Data, trim: Fraction, kmax: int, h: int = H, pad: Pad | None = None) -> list[Fraction]:
    """Exact reference: every configuration of the module docstring (all window shifts i), as rationals.

    ``max over configurations of cost ≤ k`` of ``min((top − mean(window) + pad)/(w + 1), H/2)``,
    both sides, both regimes, plus the sizes 0 and 1; ``pad(w, lo, z)`` for the window
    ``[lo, lo + w)`` of the side's padded data ``z`` (``None``: no pad, the LS_k profile).
    """
    n, xs = len(x), sorted(x)
    best = [Fraction(-1)] * (kmax + 1)

    def put(k: int, v: Fraction) -> None:
        if k <= kmax:
            best[k] = max(best[k], v)

    for zs in (xs, [h - v for v in reversed(xs)]):

        def z(r: int, zs: list[int] = zs) -> int:
            return 0 if r < 0 else (h if r >= n else zs[r])

        for m in range(max(2, n - kmax), n + kmax + 1):
            t = drop(trim, m)
            for w, above in regimes(trim, m):
                for i in range(t + w + 1):
                    lo, hi = t - i, t - i + w
                    if hi > n:
                        continue
                    mean = Fraction(sum(z(r) for r in range(lo, hi)), w)
                    p_w = Fraction(0) if pad is None else pad(w, lo, z)
                    for j in range(max(0, above + 1 - n), above + 2):
                        e, cost = n - above - 1 + j, n - m + 2 * (i + j)
                        if e >= hi and cost <= kmax:
                            put(cost, min((z(e) - mean + p_w) / (w + 1), Fraction(h, 2)))
    if n <= kmax:
        put(n, Fraction(h, 2))
    if n >= 1:
        for end in (xs[0], xs[-1]):
            put(n - 1, max(abs(end - Fraction(h, 2)), Fraction(max(end, h - end), 2)))
    out: list[Fraction] = []
    run = Fraction(0)
    for level in best:
        run = level if level > run else run
        out.append(run)
    return out


def potential(beta: float, h: int = H) -> Pad:
    """Φ of the module docstring, independently: Σ_{s ≤ S} q^{2s}(z(lo + w − s) − z(lo − s))/w + tail."""
    b0, horizon = _beta0(beta, _SLACK), trimmed_horizon(beta)
    assert horizon > 0

    def pad(w: int, lo: int, z: Callable[[int], int]) -> Fraction:
        last = min(horizon, lo + w)  # z = 0 below rank 0: later gaps vanish
        gains = [math.exp(-2 * b0 * s) * (z(lo + w - s) - z(lo - s)) for s in range(1, last + 1)]
        tail = math.exp(-2 * b0 * (horizon + 1)) * h / (w * -math.expm1(-2 * b0))
        return Fraction(math.fsum(gains) / w + tail)

    return pad


def truncated(profile: list[Fraction] | npt.NDArray[np.float64], beta: float, h: int = H) -> float:
    return truncated_smooth_bound(np.array([float(v) for v in profile]), beta, h / 2, TRIM_ERR_REL * h)


def brute_bound(x: Data, trim: Fraction, beta: float) -> float:
    """max(max_{k ≤ K} e^{−kβ} LS_k, e^{−(K+1)β}·GS): the exact truncated bound (≥ S*_β) from brute force."""
    terms = [math.exp(-k * beta) * float(ls_at_distance(x, trim, k)) for k in range(LEVELS + 1)]
    return max(*terms, math.exp(-(LEVELS + 1) * beta) * H / 2)


@cache
def node_bound(x: Data, trim: Fraction, beta: float, levels: int = LEVELS) -> float:
    return trimmed_smooth_bound(summary(x, trim), beta, levels)


# --- (a) the configurations, the fast profile and the old profile against brute force -----------


@pytest.mark.parametrize("trim", TRIMS)
def test_configurations_and_fast_profile_equal_brute_force_ls_k(trim: Fraction) -> None:
    for x in datasets(4):
        want = [ls_at_distance(x, trim, k) for k in range(LEVELS + 1)]
        assert config_profile(x, trim, LEVELS) == want, x  # the shape lemma, exactly
        fast = trimmed_profile(summary(x, trim), LEVELS, None)  # non-dominated configurations only, no pad
        np.testing.assert_allclose(fast, [float(v) for v in want], rtol=0, atol=1e-12, err_msg=str(x))
        old = _tm_ar_profile(np.array(x, dtype=np.float64), 0.0, float(H), trim, LEVELS)
        np.testing.assert_allclose(old, [float(v) for v in want], rtol=0, atol=1e-12, err_msg=str(x))


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.integers(0, 1000), max_size=90),
    trim=st.fractions(0, Fraction(33, 67), max_denominator=67),
    kmax=st.integers(0, 30),
)
def test_fast_unpadded_profile_equals_the_old_exact_profile(data: list[int], trim: Fraction, kmax: int) -> None:
    """The non-dominated configurations have reproduced the exact LS_k in every test (not relied on)."""
    x = np.sort(np.array(data, dtype=np.int64))
    old = _tm_ar_profile(x.astype(np.float64), 0.0, 1000.0, trim, kmax)
    np.testing.assert_allclose(trimmed_profile(summary(x, trim, 1000), kmax, None), old, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize(("beta", "n_max"), [(0.7, 4), pytest.param(0.7, N_MAX, marks=pytest.mark.slow), pytest.param(0.05, N_MAX, marks=pytest.mark.slow)])
def test_fast_bound_equals_the_exact_bound_over_every_configuration(beta: float, n_max: int) -> None:
    """The domination: dropping the window shifts i > i*(j) leaves the weighted maximum unchanged."""
    for trim in TRIMS:
        for x in datasets(n_max):
            ref = truncated(config_profile(x, trim, LEVELS + 1, pad=potential(beta)), beta)
            got = node_bound(x, trim, beta, LEVELS + 1)
            assert got == pytest.approx(ref, rel=1e-12), x


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.integers(0, 30), min_size=2, max_size=14),
    trim=st.sampled_from(TRIMS),
    kmax=st.integers(1, 7),
    beta=st.sampled_from([0.01, 0.05, 0.5]),
)
def test_fast_bound_equals_the_exact_bound_on_random_data(data: list[int], trim: Fraction, kmax: int, beta: float) -> None:
    x = tuple(sorted(data))
    ref = truncated(config_profile(x, trim, kmax, h=30, pad=potential(beta, 30)), beta, 30)
    got = trimmed_smooth_bound(summary(x, trim, 30), beta, kmax)
    assert got == pytest.approx(ref, rel=1e-12)


# --- (b) an upper bound, β-smooth on every neighbouring pair ------------------------------------


@pytest.mark.parametrize("trim", TRIMS)
@pytest.mark.parametrize("beta", [0.5, pytest.param(0.1, marks=pytest.mark.slow), pytest.param(1.0, marks=pytest.mark.slow)])
def test_bound_is_an_upper_bound_and_beta_smooth(trim: Fraction, beta: float) -> None:
    for x in datasets(N_MAX + 1):
        got = node_bound(x, trim, beta)
        assert got >= float(local_sensitivity(x, trim))
        if len(x) <= 4:
            assert got >= brute_bound(x, trim, beta)  # at least the exact truncated smooth sensitivity
    for x, y in pairs():
        sx, sy = node_bound(x, trim, beta), node_bound(y, trim, beta)
        assert sx <= math.exp(beta) * sy and sy <= math.exp(beta) * sx, (x, y)


@cache
def padded_g(y: Data, trim: Fraction, beta: float, h: int = H) -> float:
    """g(y) of the module docstring, from its definition: the largest active term with the potential Φ."""
    m = len(y)
    if m <= 1:
        return h / 2 if m == 0 else max(abs(y[0] - h / 2), max(y[0], h - y[0]) / 2)
    b0, horizon = _beta0(beta, _SLACK), trimmed_horizon(beta)
    best = 0.0
    for ys in (sorted(y), sorted(h - v for v in y)):

        def z(r: int, ys: list[int] = ys) -> int:
            return 0 if r < 0 else (h if r >= m else ys[r])

        for w, above in regimes(trim, m):
            hi = m - above - 1  # the top's rank; the window is [hi − w, hi)
            num = z(hi) - sum(z(r) for r in range(hi - w, hi)) / w
            best = max(best, min((num + float(potential(beta, h)(w, hi - w, z))) / (w + 1), h / 2))
    return best


def ball(x: Data, k: int) -> dict[Data, int]:
    """Every dataset within add/remove distance k of x, with its distance."""
    dist, frontier = {x: 0}, [x]
    for d in range(1, k + 1):
        reached = []
        for y in frontier:
            for z in add_remove(y):
                if z not in dist:
                    dist[z] = d
                    reached.append(z)
        frontier = reached
    return dist


@pytest.mark.parametrize("beta", [0.3, pytest.param(0.05, marks=pytest.mark.slow), pytest.param(1.5, marks=pytest.mark.slow)])
def test_bound_is_the_truncated_bound_of_g_over_every_dataset_in_the_ball(beta: float) -> None:
    """T(x) = max over all y with d(x, y) ≤ K of e^{−β₀d}(g(y) + E), by brute force: T ≤ Ŝ ≤ e^{2^-16}T."""
    b0, pad = _beta0(beta, _SLACK), 2.0**20 * TRIM_ERR_REL * H
    for trim in TRIMS:
        for x in datasets(4):
            want = max(
                math.exp(-(LEVELS + 1) * b0) * (H / 2 + pad),
                *(math.exp(-b0 * d) * (padded_g(y, trim, beta) + pad) for y, d in ball(x, LEVELS).items()),
            )
            got = node_bound(x, trim, beta)
            assert want * (1 - 1e-12) <= got <= want * math.exp(2.0**-16) * (1 + 1e-12), (trim, x)


# --- (c) the checks can fail ----------------------------------------------------------------------


def _violations(bound: Callable[[Data], float], beta: float) -> int:
    return sum(bound(y) > math.exp(beta) * bound(x) or bound(x) > math.exp(beta) * bound(y) for x, y in pairs())


@pytest.mark.parametrize("trim", [Fraction(1, 4), *(pytest.param(t, marks=pytest.mark.slow) for t in TRIMS if t != Fraction(1, 4))])
def test_broken_variants_are_caught(trim: Fraction) -> None:
    beta = 0.5
    # 1. LS_0 only (no k-dependence): not β-smooth
    assert _violations(lambda x: float(local_sensitivity(x, trim)), beta) > 0
    # 2. the real code path at a larger β than the release assumes: not β-smooth
    assert _violations(lambda x: node_bound(x, trim, 8 * beta), beta) > 0

    # 3. a truncation level chosen from the data (LS_0), no tail constant (DESIGN §5)
    def data_level(x: Data) -> float:
        levels = 0 if local_sensitivity(x, trim) <= Fraction(1, 2) else LEVELS
        return max(math.exp(-k * beta) * float(ls_at_distance(x, trim, k)) for k in range(levels + 1))

    assert _violations(data_level, beta) > 0
    # 4. the profile one level short (LS_{k−1} at level k): below the exact bound somewhere
    assert any(
        max(math.exp(-k * beta) * float(ls_at_distance(x, trim, max(k - 1, 0))) for k in range(LEVELS + 1))
        < brute_bound(x, trim, beta)
        for x in datasets(4)
    )
    # the real bound passes the same check
    assert _violations(lambda x: node_bound(x, trim, beta), beta) == 0


# --- the windows, the seam and the value -----------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 400),
    kmax=st.integers(0, 50),
    trim=st.fractions(0, Fraction(50, 101), max_denominator=101),
    seed=st.integers(0, 2**32 - 1),
)
def test_order_windows_hold_every_rank_read(n: int, kmax: int, trim: Fraction, seed: int) -> None:
    """The windowed summary (public width) gives the same profile as the whole sorted column."""
    x = np.sort(np.random.default_rng(seed).integers(0, 2**45, n))
    for beta in (None, 0.07, 0.9):
        radius = kmax + 4 if beta is None else trimmed_radius(beta, kmax)
        windowed = trimmed_summary_from_terms(x, 0, 2**45, trim, radius)
        assert windowed.ranks.size <= 2 * (2 * radius + 5)
        whole = TrimmedSummary(n, trim, 0, 2**45, windowed.mid_total, np.arange(n, dtype=np.int64), x.astype(np.int64))
        np.testing.assert_array_equal(trimmed_profile(windowed, kmax, beta), trimmed_profile(whole, kmax, beta))


@pytest.mark.parametrize(
    ("n", "lower", "upper"),
    [(0, 0, 100), (1, 0, 100), (7, "-0.3", "7/3"), (1000, 0, 100), (70_000, "1e6", "1000001"), (70_000, "-0.3", "7/3")],
)
def test_seam_summary_equals_the_in_memory_summary(n: int, lower: str | int, upper: str | int) -> None:
    lo, hi = Fraction(lower), Fraction(upper)
    rng = np.random.default_rng(n)
    x = rng.normal(float(lo + hi) / 2, float(hi - lo) / 3, n)
    x[: min(n, 3)] = [np.nan, np.inf, -np.inf][: min(n, 3)]
    for trim, kmax in ((Fraction(0), 5), (Fraction(1, 10), 40), (Fraction(9, 20), 17)):
        a = trimmed_summary(as_dataset({"x": x}), "x", lo, hi, trim, kmax)
        b = trimmed_summary_from_values(x, lo, hi, trim, kmax)
        assert (a.n, a.lo_u, a.hi_u, a.mid_total) == (b.n, b.lo_u, b.hi_u, b.mid_total)
        np.testing.assert_array_equal(a.ranks, b.ranks)
        np.testing.assert_array_equal(a.terms, b.terms)


@pytest.mark.parametrize("trim", [Fraction(0), Fraction(1, 10), Fraction(1, 3), Fraction(49, 100)])
def test_value_is_the_exact_trimmed_mean_of_the_terms(trim: Fraction) -> None:
    rng = np.random.default_rng(3)
    unit = Fraction(2) ** trimmed_lattice_exponent(Fraction(0), Fraction(100))
    query = Query.trimmed_mean("x", trim) | Clip(0, 100)
    for n in (0, 1, 2, 5, 33, 500):
        x = np.sort(rng.integers(0, 101, n))  # integers: every term is exact
        t = drop(trim, n)
        want = Fraction(int(x[t : n - t].sum()), n - 2 * t) if n else Fraction(50)
        s = trimmed_summary_from_values(x.astype(np.float64), Fraction(0), Fraction(100), trim, 10)
        assert trimmed_value(s) * unit == want
        assert float(want) == pytest.approx(evaluate_values(query, x.astype(np.float64)), rel=1e-12)


def test_agrees_with_the_catalog_profile_on_larger_data() -> None:
    """Ŝ ≥ the truncated bound of the old exact O(K³) profile, and above it by at most the pad ``H/(2β₀w(w + 1))``."""
    rng = np.random.default_rng(11)
    for n, trim, beta in ((300, Fraction(1, 10), 1.0), (500, Fraction(1, 4), 0.5), (250, Fraction(2, 5), 0.7)):
        x = np.sort(np.round(rng.uniform(0, 1, n) ** 3 * 1000)).astype(np.int64)
        kmax = math.ceil(30 / beta)
        ref = truncated_smooth_bound(_tm_ar_profile(x.astype(np.float64), 0, 1000.0, trim, kmax), beta, 500.0, TRIM_ERR_REL * 1000)
        got = trimmed_smooth_bound(summary(x, trim, 1000), beta, kmax)
        w_min = min(m - 2 * drop(trim, m) - 1 for m in range(n - kmax, n + kmax + 1))
        pad = 1000 / (2 * _beta0(beta, _SLACK) * w_min * (w_min + 1))
        assert ref <= got <= ref * (1 + 2.0**-15) + pad


# --- (d) the release is (ε, δ)-DP, exactly, on a tiny domain ----------------------------------------

LOWER, UPPER, K = 0, 4, -3


def laplace_cdf(z: float) -> float:
    return 0.5 * math.exp(z) if z < 0 else 1 - 0.5 * math.exp(-z)


def output_pmf(x: Data, trim: Fraction, c: Admissibility) -> npt.NDArray[np.float64]:
    """P[release = j·2^K] on [LOWER, UPPER] (clamped) from the node's own centre and scale."""
    a, scale = trimmed_center_and_scale_values(np.array(x, dtype=np.float64), Fraction(LOWER), Fraction(UPPER), trim, c, K)
    b = float(scale * 2**-K)
    lo, hi = LOWER * 2**-K, UPPER * 2**-K
    p = np.array([laplace_cdf((j - a + 0.5) / b) - laplace_cdf((j - a - 0.5) / b) for j in range(lo, hi + 1)])
    p[0] = laplace_cdf((lo - a + 0.5) / b)
    p[-1] = 1 - laplace_cdf((hi - a - 0.5) / b)
    return p


def worst_hockey(trim: Fraction, c: Admissibility, n_max: int = 3) -> float:
    domain = range(LOWER, UPPER + 1)
    pmfs = {x: output_pmf(x, trim, c) for n in range(n_max + 2) for x in itertools.combinations_with_replacement(domain, n)}
    worst = 0.0
    for x in (x for x in pmfs if len(x) <= n_max):
        for v in domain:
            y = tuple(sorted((*x, v)))
            for p1, p2 in ((pmfs[x], pmfs[y]), (pmfs[y], pmfs[x])):
                worst = max(worst, float(np.sum(np.maximum(0.0, p1 - math.exp(float(c.eps)) * p2))))
    return worst


@pytest.mark.parametrize("trim", [Fraction(1, 4), Fraction(1, 3)])
def test_release_is_eps_delta_dp_exactly_on_a_tiny_domain(trim: Fraction) -> None:
    c = LaplaceNoise().constants(1, "0.001")
    assert worst_hockey(trim, c) <= float(c.delta)


def test_release_with_local_sensitivity_is_caught() -> None:
    c = LaplaceNoise().constants(1, "0.001")
    broken = attrs.evolve(c, beta=Fraction(20))  # the noise follows the local sensitivity
    assert worst_hockey(Fraction(1, 4), broken) > 10 * float(c.delta)


# --- the entry point, arguments, run time ----------------------------------------------------------


def test_center_and_scale_through_the_seam() -> None:
    c = LaplaceNoise().constants(1, "1e-6")
    x = np.random.default_rng(5).uniform(0, 100, 3000)
    query = Query.trimmed_mean("x", "0.1") | Clip(0, 100)
    a, scale = trimmed_center_and_scale(query, as_dataset({"x": x}), c, -34)
    assert (a, scale) == trimmed_center_and_scale_values(x, Fraction(0), Fraction(100), Fraction(1, 10), c, -34)
    assert abs(a * 2.0**-34 - evaluate_values(query, x)) < 1e-6
    ls0 = float(_tm_ar_profile(np.sort(x), 0.0, 100.0, Fraction(1, 10), 0)[0])
    assert ls0 <= float(scale * c.alpha) <= 1.5 * ls0  # S' ≥ LS, and close to it on smooth data


@pytest.mark.parametrize(
    "call",
    [
        lambda: trimmed_center_and_scale(Query.mean("x") | Clip(0, 1), {"x": [1.0]}, LaplaceNoise().constants(1, "1e-6"), -40),  # type: ignore[arg-type]
        lambda: trimmed_center_and_scale(Query.trimmed_mean("x", "0.1") | Clip(1, 1), as_dataset({"x": [1.0]}), LaplaceNoise().constants(1, "1e-6"), -40),
        lambda: trimmed_summary_from_terms([5], 0, 4, Fraction(1, 10)),
        lambda: trimmed_summary_from_terms([1], 0, 2**46, Fraction(1, 10)),
        lambda: trimmed_summary_from_terms([1], 0, 4, Fraction(1, 2)),
        lambda: trimmed_profile(summary((1, 2), Fraction(1, 10)), MAX_LEVELS + 1, None),
        lambda: trimmed_profile(summary((1, 2), Fraction(1, 10)), 3, 0.0),
        lambda: trimmed_profile(trimmed_summary_from_terms(list(range(100)), 0, 100, Fraction(1, 4), 5), 5, 0.5),
    ],
)
def test_invalid_arguments(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidArgument):
        call()


def test_levels_are_public_and_capped() -> None:
    c = LaplaceNoise().constants(1, "1e-6")
    k = -34
    assert trimmed_levels(float(c.beta), Fraction(0), Fraction(100), k) == math.ceil(2 * math.log(100 / 2.0**k) / float(c.beta))
    assert trimmed_levels(1e-6, Fraction(0), Fraction(100), k) == MAX_LEVELS


@pytest.mark.slow
def test_run_time_k_2000_n_one_million() -> None:
    """K = 2000, n = 10^6: the O(K²) bound takes about a second (loose limit for loaded machines)."""
    x = np.sort(np.random.default_rng(0).integers(0, 2**45, 10**6))
    s = trimmed_summary_from_terms(x, 0, 2**45, Fraction(1, 10), trimmed_radius(0.0345, 2000))
    start = time.perf_counter()
    trimmed_smooth_bound(s, 0.0345, 2000)
    assert time.perf_counter() - start < 15
