"""ExponentialQuantile's default candidates="auto": the integers of [l, u] on an integer-typed column.

The candidate set is a function of the public parameters and the column's declared
type (the schema); the tests check the output law over a tiny domain against the
exponential mechanism's exact weights (brute force from the definition), that the
step-1 grid path equals the exact candidate-list path, and that certificates audit.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from dpalg import Clip, ClipPerUser, InvalidArgument, MaxRowsPerUser, PureDP, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms.selection._exponential import ExponentialQuantile, candidate_scores, integer_range
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate

MED = Query.median("v") | Clip(0, 4)
INTS = np.array([0, 1, 1, 3, 4, 4, 4], dtype=np.int64)


def _brute_scores(values: list[float], c: int, q: Fraction) -> int:
    """den(q)·|(1 − q)·#{x < c} − q·#{x > c}|, from the definition."""
    less = sum(x < c for x in values)
    greater = sum(x > c for x in values)
    return abs((q.denominator - q.numerator) * less - q.numerator * greater)


def test_integer_column_gives_integer_output_by_default_and_float_column_the_grid() -> None:
    node = ExponentialQuantile(Query.median("p") | Clip(0, 20000), epsilon=1)
    assert node.candidates == "auto"
    ints = as_dataset({"p": np.arange(10_000, dtype=np.int64) % 3000})
    floats = as_dataset({"p": (np.arange(10_000) % 3000).astype(np.float64)})
    assert node.uses_integers(ints) and not node.uses_integers(floats)
    outs = [node.release(ints, SeededRandomness(s)) for s in range(20)]
    assert all(isinstance(v, float) and v == int(v) for v in outs)
    grid = ExponentialQuantile(Query.median("p") | Clip(0, 20000), epsilon=1, candidates=None)
    assert [node.release(floats, SeededRandomness(s)) for s in range(5)] == [grid.release(floats, SeededRandomness(s)) for s in range(5)]
    assert any(not float(v).is_integer() for v in (grid.release(ints, SeededRandomness(s)) for s in range(5)))  # type: ignore[arg-type]  # the grid is not integral


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(3, 10)])
def test_integer_runs_give_every_candidate_its_exact_score(q: Fraction) -> None:
    """The step-1 runs assign each integer c the brute-force score: the weights exp(-γ s_c) of the law."""
    query = (Query.quantile("v", q) if q != Fraction(1, 2) else Query.median("v")) | Clip(0, 4)
    node = ExponentialQuantile(query, epsilon=1)
    a, (starts, lengths, scores) = node.integer_runs(as_dataset({"v": INTS}), SeededRandomness(0))
    per_candidate = np.repeat(scores, lengths).tolist()
    values = [float(x) for x in INTS]
    assert a == 0 and per_candidate == [_brute_scores(values, c, q) for c in range(5)]
    assert per_candidate == candidate_scores(np.asarray(values), tuple(Fraction(c) for c in range(5)), q).tolist()


def test_the_output_law_over_a_tiny_domain_matches_the_exact_weights() -> None:
    """Frequencies of 4000 releases against P[c] ∝ exp(−ε·s_c/(2Δ·den)) computed by brute force."""
    node = ExponentialQuantile(MED, epsilon="0.8")
    data = as_dataset({"v": INTS})
    values = [float(x) for x in INTS]
    gamma = 0.8 / (2 * 0.5 * 2)
    weights = [math.exp(-gamma * _brute_scores(values, c, Fraction(1, 2))) for c in range(5)]
    probs = [w / sum(weights) for w in weights]
    trials = 4000
    counts = Counter(node.release(data, SeededRandomness(s)) for s in range(trials))
    assert set(counts) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    for c, p in enumerate(probs):
        sd = math.sqrt(p * (1 - p) / trials)
        assert abs(counts.get(float(c), 0) / trials - p) < 5 * sd + 1e-9, (c, counts, probs)


def test_permute_and_flip_integers_equal_the_exact_candidate_list_draw_for_draw() -> None:
    """The same score vector goes to the same sampler: identical draws with the same randomness."""
    fast = ExponentialQuantile(MED, epsilon=1, selection="permute_and_flip")
    exact = ExponentialQuantile(MED, epsilon=1, candidates=range(5), selection="permute_and_flip")
    data = as_dataset({"v": INTS})
    assert [fast.release(data, SeededRandomness(s)) for s in range(200)] == [exact.release(data, SeededRandomness(s)) for s in range(200)]


def test_user_level_forms_on_integer_columns() -> None:
    data = as_dataset({"v": np.array([1, 2, 2, 3, 9, 9], dtype=np.int64), "u": np.array([1, 1, 2, 2, 3, 3])})
    for query in (Query.median("v", user="u") | ClipPerUser(0, 20), Query.median("v", user="u") | Clip(0, 10) | MaxRowsPerUser(2)):
        node = ExponentialQuantile(query, epsilon=2)
        assert node.uses_integers(data)
        assert all(float(v).is_integer() for v in (node.release(data, SeededRandomness(s)) for s in range(10)))  # type: ignore[arg-type]


def test_fractional_bounds_and_explicit_integers_use_the_exact_comparisons() -> None:
    node = ExponentialQuantile(Query.median("v") | Clip("0.5", "3.5"), epsilon=1, candidates="integers")
    assert integer_range(node.query) == (1, 3) and node.n_candidates == 3
    floats = as_dataset({"v": np.array([0.2, 1.7, 2.2, 9.0])})
    assert all(v in (1.0, 2.0, 3.0) for v in (node.release(floats, SeededRandomness(s)) for s in range(20)))
    with pytest.raises(InvalidArgument, match="candidates='integers' needs 1 to 2"):
        ExponentialQuantile(Query.median("v") | Clip("0.2", "0.8"), epsilon=1, candidates="integers")
    with pytest.raises(InvalidArgument, match="candidates='integers' needs 1 to 2"):
        ExponentialQuantile(Query.median("v") | Clip(0, 2**17), epsilon=1, candidates="integers")
    auto_wide = ExponentialQuantile(Query.median("v") | Clip(0, 2**17), epsilon=1)  # too many integers: the grid
    assert not auto_wide.uses_integers(as_dataset({"v": np.array([1, 2], dtype=np.int64)}))


def test_both_forms_cost_the_same_and_the_accuracy_bound_covers_both() -> None:
    auto = ExponentialQuantile(Query.median("p") | Clip(0, 1000), epsilon="0.5", grid_bits=4)
    grid = ExponentialQuantile(Query.median("p") | Clip(0, 1000), epsilon="0.5", grid_bits=4, candidates=None)
    ints = ExponentialQuantile(Query.median("p") | Clip(0, 1000), epsilon="0.5", candidates="integers")
    assert auto.cost() == grid.cost() == ints.cost() == PureDP("0.5")
    assert auto.n_candidates == max(grid.n_candidates, ints.n_candidates) == 1001
    a, g, i = (n.accuracy().error for n in (auto, grid, ints))
    assert a is not None and g is not None and i is not None and a >= max(g, i)


@pytest.mark.parametrize("candidates", ["auto", "integers", None])
def test_certificates_audit(candidates: str | None) -> None:
    node = ExponentialQuantile(MED, epsilon=1, candidates=candidates)
    release = Session(PureDP(1)).run(node, {"v": INTS}, rng=SeededRandomness(0))
    cert = json.loads(release.certificate_json())
    assert cert["plan"]["fields"]["candidates"] == candidates
    assert audit_certificate(cert).status == "cost_confirmed"
    if candidates is not None:
        assert float(release.value).is_integer()  # type: ignore[arg-type]
