"""ExponentialQuantile over public candidates, and permute-and-flip selection (issue 18 item 3).

Exact output distributions on every neighbouring pair of a small domain (both
relations), deliberately broken variants caught, sampled outputs against the exact
law, the default grid node unchanged (repr, cost, seeded outputs, old certificates).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpalg import Clip, ClipPerUser, Compose, InvalidArgument, MaxRowsPerUser, PureDP, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms import ExponentialQuantile
from dpalg.mechanisms.selection._exponential import MAX_CANDIDATES, candidate_scores
from dpalg.mechanisms._common.testing import multiset_neighbours
from dpalg.noise import SeededRandomness
from dpalg.noise._permute_flip import permute_flip_probabilities, sample_permute_flip
from dpalg.release import audit_certificate, decode, encode
from dpalg.release._serialize import stable_repr

DOMAIN = (0.0, 0.5, 1.0, 2.0)
#: inside Clip(0, 2): data values, a non-dyadic one (exact float comparison path) and a gap
CANDIDATES = (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(3, 2), Fraction(2))
Dist = Callable[[ExponentialQuantile, tuple[float, ...]], list[float]]


def _scores(node: ExponentialQuantile, x: tuple[float, ...]) -> list[int]:
    assert isinstance(node.candidates, tuple)
    scores: list[int] = candidate_scores(np.array(x, dtype=np.float64), node.candidates, node.q).tolist()
    return scores


def _gamma(node: ExponentialQuantile) -> Fraction:
    """The release's rate per integer score unit (what ``release`` uses)."""
    return node.epsilon / (2 * node.sensitivity() * node.q.denominator)


def em_distribution(node: ExponentialQuantile, x: tuple[float, ...]) -> list[float]:
    """The exact law of the exponential mechanism over the candidates, from its weights."""
    s = _scores(node, x)
    w = [math.exp(-float(_gamma(node)) * (v - min(s))) for v in s]
    return [v / sum(w) for v in w]


def pf_distribution_by_permutations(scores: list[int], gamma: Fraction) -> list[float]:
    """Permute-and-flip's law by enumerating every permutation (McKenna-Sheldon Algorithm 1)."""
    p = [math.exp(-float(gamma) * (v - min(scores))) for v in scores]
    out = [0.0] * len(p)
    perms = list(itertools.permutations(range(len(p))))
    for perm in perms:
        reach = 1.0  # probability that every coin before this position was tails
        for j in perm:
            out[j] += reach * p[j] / len(perms)
            reach *= 1 - p[j]
    return out


def pf_distribution(node: ExponentialQuantile, x: tuple[float, ...]) -> list[float]:
    return pf_distribution_by_permutations(_scores(node, x), _gamma(node))


def _worst_ratio(node: ExponentialQuantile, relation: str, dist: Dist) -> float:
    worst = 0.0
    cache: dict[tuple[float, ...], list[float]] = {}
    for x, y in multiset_neighbours(DOMAIN, 3, relation):
        px = cache.setdefault(x, dist(node, x))
        py = cache.setdefault(y, dist(node, y))
        worst = max(worst, max(a / b for a, b in zip(px, py)))
    return worst


# --- scores are exact -------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 3), Fraction(9, 10)])
def test_scores_match_a_naive_exact_count(q: Fraction) -> None:
    cands = (Fraction(0), Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(1))
    gen = np.random.default_rng(3)
    for _ in range(50):
        x = gen.choice(np.array([0.0, 0.1, 1 / 3, 0.5, 2 / 3, 1.0, 0.25]), size=int(gen.integers(0, 9)))
        got = candidate_scores(x, cands, q).tolist()
        want = []
        for c in cands:
            less = sum(Fraction(v) < c for v in x.tolist())
            greater = sum(Fraction(v) > c for v in x.tolist())
            want.append(abs((q.denominator - q.numerator) * less - q.numerator * greater))
        assert got == want


# --- privacy: exact laws on every neighbouring pair ---------------------------------------------------


@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", ["1/2", "1/3"])
def test_exact_privacy_on_all_neighbours(selection: str, relation: str, q: str) -> None:
    cands = CANDIDATES if selection == "exponential" else CANDIDATES[:4]  # <= 4: permutations enumerated
    node = ExponentialQuantile(Query.quantile("x", q) | Clip(0, 2), epsilon="0.8", relation=relation, candidates=cands, selection=selection)
    dist = em_distribution if selection == "exponential" else pf_distribution
    worst = _worst_ratio(node, relation, dist)
    assert worst <= math.exp(0.8) * (1 + 1e-12)
    assert worst > math.exp(0.1)  # not vacuous


@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
def test_halved_sensitivity_is_caught(selection: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken variant (Δ halved, i.e. the rate doubled) exceeds e^ε on some neighbouring pair."""
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon="0.8", candidates=CANDIDATES[:4], selection=selection)
    honest = node.sensitivity()
    monkeypatch.setattr(ExponentialQuantile, "sensitivity", lambda self: honest / 2)
    dist = em_distribution if selection == "exponential" else pf_distribution
    assert _worst_ratio(node, "add_remove", dist) > math.exp(0.8) * 1.01


def _random_cases(seed: int, cases: int, max_score: int, max_size: int, max_gamma_quarters: int) -> Iterator[tuple[list[int], Fraction]]:
    """``cases`` random (scores in [0, max_score], 1 <= len < max_size; γ = j/4 with 1 <= j < max_gamma_quarters)."""
    gen = np.random.default_rng(seed)
    for _ in range(cases):
        scores = gen.integers(0, max_score + 1, size=int(gen.integers(1, max_size))).tolist()
        yield scores, Fraction(int(gen.integers(1, max_gamma_quarters)), 4)


def test_permute_and_flip_closed_form_matches_the_permutations() -> None:
    for scores, gamma in _random_cases(0, 30, max_score=5, max_size=5, max_gamma_quarters=9):
        by_perm = pf_distribution_by_permutations(scores, gamma)
        assert permute_flip_probabilities(scores, gamma) == pytest.approx(by_perm, abs=1e-12)
        assert sum(by_perm) == pytest.approx(1)


def test_permute_and_flip_expected_score_never_exceeds_the_exponential_mechanism() -> None:
    """McKenna-Sheldon Theorem 2 on the exact laws, including ties."""
    for scores, gamma in _random_cases(1, 100, max_score=4, max_size=8, max_gamma_quarters=12):
        pf = permute_flip_probabilities(scores, gamma)
        w = [math.exp(-float(gamma) * v) for v in scores]
        em = [v / sum(w) for v in w]
        assert sum(p * s for p, s in zip(pf, scores)) <= sum(p * s for p, s in zip(em, scores)) + 1e-12


# --- sampled outputs follow the exact law -----------------------------------------------------------


def _chi2_pvalue(observed: Counter[float], values: list[float], probs: list[float], draws: int) -> float:
    obs = [observed.get(v, 0) for v in values]
    assert sum(obs) == draws  # nothing outside the candidates
    keep = [i for i, p in enumerate(probs) if p * draws >= 5]
    rest_p = 1 - sum(probs[i] for i in keep)
    f_obs = [obs[i] for i in keep] + ([draws - sum(obs[i] for i in keep)] if rest_p * draws >= 5 else [])
    f_exp = [probs[i] * draws for i in keep] + ([rest_p * draws] if rest_p * draws >= 5 else [])
    scale = sum(f_obs) / sum(f_exp)
    return float(stats.chisquare(f_obs, [v * scale for v in f_exp]).pvalue)


@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
def test_sampled_outputs_follow_the_exact_law(selection: str) -> None:
    cands = CANDIDATES[:4] if selection == "permute_and_flip" else CANDIDATES
    node = ExponentialQuantile(Query.median("x") | Clip(0, 2), epsilon="1.5", candidates=cands, selection=selection)
    x = (0.0, 0.5, 0.5, 1.0, 2.0)
    probs = (em_distribution if selection == "exponential" else pf_distribution)(node, x)
    ds = as_dataset({"x": np.array(x)})
    draws = 3000
    out = Counter(float(node.release(ds, SeededRandomness(s))) for s in range(draws))  # type: ignore[arg-type]
    assert _chi2_pvalue(out, [float(c) for c in cands], probs, draws) > 1e-4


def test_the_permute_and_flip_sampler_follows_its_closed_form() -> None:
    scores = np.array([0, 1, 1, 3], dtype=np.int64)
    gamma = Fraction(3, 4)
    probs = permute_flip_probabilities(scores.tolist(), gamma)
    draws = 4000
    got = Counter(sample_permute_flip(scores, gamma, SeededRandomness(s)) for s in range(draws))
    assert _chi2_pvalue(Counter({float(k): v for k, v in got.items()}), [0.0, 1.0, 2.0, 3.0], probs, draws) > 1e-4
    # large rates and huge Fractions take the exact Python-integer path: same law
    big = Fraction(3 * 2**70 + 1, 2**72)
    assert sample_permute_flip(np.array([0, 10**9]), big, SeededRandomness(0)) == 0


# --- utility: integer candidates and ties -----------------------------------------------------------


def test_integer_candidates_release_the_median_of_integer_prices() -> None:
    gen = np.random.default_rng(7)
    prices = np.round(gen.lognormal(3.0, 0.6, 2001))
    true = float(np.median(prices))
    for selection in ("exponential", "permute_and_flip"):
        node = ExponentialQuantile(Query.median("p") | Clip(0, 200), epsilon=1, candidates=range(201), selection=selection)
        outs = [float(node.release(as_dataset({"p": prices}), SeededRandomness(s))) for s in range(40)]  # type: ignore[arg-type]
        assert all(o == int(o) for o in outs)
        assert sum(o == true for o in outs) >= 30, (selection, outs)


def test_tied_data_release_the_tie_not_a_point_beside_it() -> None:
    x = np.array([3.0] * 100 + [4.0] * 5)
    node = ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1, candidates=(0, 2.5, 3, 3.5, 10))
    outs = {float(node.release(as_dataset({"x": x}), SeededRandomness(s))) for s in range(50)}  # type: ignore[arg-type]
    assert outs == {3.0}


# --- construction, repr, cost, accuracy --------------------------------------------------------------

MED = Query.median("x") | Clip(0, 10)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, 1, 2)), "candidates[1]=1 must be > candidates[0]=1"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(3, 2)), "strictly increasing"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, float("nan"))), "candidates[1]=nan must be finite"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, float("inf"))), "must be finite"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(-1, 2)), "candidates[0]=-1 must lie inside the clip range [0, 10]"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, 11)), "candidates[1]=11 must lie inside"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=()), "1 to 2**16"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=range(MAX_CANDIDATES + 1)), "65537 values>' must hold 1 to 2**16"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates="123"), "candidates='123' must be 'auto', 'integers', None"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates={1, 2}), "candidates='set'"),  # type: ignore[arg-type]
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=np.zeros((2, 2))), "one-dimensional"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(True, 2)), "not a bool"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, "x")), "candidates[1]='x'"),
        (lambda: ExponentialQuantile(MED, epsilon=1, candidates=(1, 2), grid_bits=8), "grid_bits=8 is unused with candidates"),
        (lambda: ExponentialQuantile(MED, epsilon=1, selection="gumbel"), "selection='gumbel' must be"),
        (lambda: ExponentialQuantile(MED, epsilon=1, grid_bits=21, selection="permute_and_flip"), "grid_bits <= 20 or candidates"),
        (lambda: ExponentialQuantile(Query.median("s", user="u") | ClipPerUser(0, 5), epsilon=1, candidates=(1, 6)), "[0, 5]"),
    ],
)
def test_invalid_arguments_fail_at_construction(make: Callable[[], object], needle: str) -> None:
    with pytest.raises(InvalidArgument, match="ExponentialQuantile") as info:
        make()
    assert needle in str(info.value)


def test_candidates_are_stored_exactly_and_hashable() -> None:
    node = ExponentialQuantile(MED, epsilon=1, candidates=np.array([0.1, 2.0, 3.5]))
    assert node.candidates == (Fraction(0.1), Fraction(2), Fraction(7, 2))
    assert hash(node) == hash(ExponentialQuantile(MED, epsilon=1, candidates=[0.1, 2, "3.5"]))
    assert node == ExponentialQuantile(MED, epsilon=1, candidates=[0.1, 2, "3.5"])
    with pytest.raises(AttributeError):
        node.candidates = None  # type: ignore[misc]


@pytest.mark.parametrize(
    "node",
    [
        ExponentialQuantile(MED, epsilon=1, candidates=(0, Fraction(1, 3), 10)),
        ExponentialQuantile(MED, epsilon=1, candidates=(5,), selection="permute_and_flip"),
        ExponentialQuantile(MED, epsilon=1, grid_bits=6, selection="permute_and_flip"),
    ],
)
def test_repr_reproduces_construction(node: ExponentialQuantile) -> None:
    from dpalg.mechanisms import ExponentialQuantile as _E  # noqa: F401  (names the repr uses)

    namespace = {"ExponentialQuantile": ExponentialQuantile, "Query": Query, "Clip": Clip, "Fraction": Fraction}
    assert eval(repr(node), namespace) == node  # noqa: S307 - a test of our own repr


def test_cost_and_claim() -> None:
    node = ExponentialQuantile(MED, epsilon="0.5", candidates=range(11), selection="permute_and_flip")
    assert node.cost() == PureDP("0.5")
    claim = node.privacy()
    assert "McKenna-Sheldon 2020 Thm 1" in claim.rule and ("candidates", "11") in claim.inputs


def test_accuracy_counts_the_candidates() -> None:
    wide = Query.median("x") | Clip(0, 16)
    grid = ExponentialQuantile(wide, epsilon=1, grid_bits=4).accuracy()
    cands = ExponentialQuantile(wide, epsilon=1, candidates=range(17)).accuracy()  # N = 17 = 2**4 + 1
    pf = ExponentialQuantile(wide, epsilon=1, candidates=range(17), selection="permute_and_flip").accuracy()
    assert grid.error == cands.error == pf.error
    small = ExponentialQuantile(wide, epsilon=1, candidates=range(3)).accuracy()
    assert small.error is not None and cands.error is not None and small.error < cands.error
    assert "over 3 public candidates" in small.noise and "permute-and-flip" in pf.noise


def test_user_level_forms_accept_candidates() -> None:
    gen = np.random.default_rng(2)
    data = {"s": gen.integers(0, 4, 400).astype(float), "u": gen.integers(0, 100, 400)}
    totals = ExponentialQuantile(Query.median("s", user="u") | ClipPerUser(0, 20), epsilon=2, candidates=range(21))
    rows = ExponentialQuantile(Query.median("s", user="u") | Clip(0, 3) | MaxRowsPerUser(2), epsilon=2, candidates=range(4))
    assert rows.sensitivity() == 1  # 2 rows x 1/2
    for node in (totals, rows):
        out = float(node.release(as_dataset(data), SeededRandomness(0)))  # type: ignore[arg-type]
        assert out == int(out) and node.candidates is not None and Fraction(out) in node.candidates


# --- the default node is unchanged -------------------------------------------------------------------


def _golden_data() -> dict[str, np.ndarray]:
    gen = np.random.default_rng(5)
    return {"x": np.round(gen.gamma(4.0, 10.0, 300), 2), "u": gen.integers(0, 40, 300)}


#: recorded with the code before candidates existed (same data, seeds 0-4); the default is now
#: candidates="auto" (shown in the repr), which on these float columns is the same grid: the same outputs
GOLDEN = [
    (ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=1),
     "ExponentialQuantile(query=Query.median('x') | Clip(0, 100), epsilon=Fraction(1, 1), relation='add_remove', grid_bits=20, candidates='auto')",
     [37.127113342285156, 37.5514030456543, 37.363433837890625, 37.17927932739258, 37.35942840576172]),
    (ExponentialQuantile(Query.quantile("x", "0.9") | Clip(0, 100), epsilon="0.5", relation="substitution", grid_bits=8),
     "ExponentialQuantile(query=Query.quantile('x', '9/10') | Clip(0, 100), epsilon=Fraction(1, 2), relation='substitution', grid_bits=8, candidates='auto')",
     [58.203125, 65.234375, 65.625, 69.921875, 67.96875]),
    (ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=2, grid_bits=30),
     "ExponentialQuantile(query=Query.median('x') | Clip(0, 100), epsilon=Fraction(2, 1), relation='add_remove', grid_bits=30, candidates='auto')",
     [37.50235354527831, 37.455361895263195, 37.36339891329408, 37.19712942838669, 37.476388085633516]),
    (ExponentialQuantile(Query.median("x", user="u") | ClipPerUser(0, 500), epsilon=1),
     "ExponentialQuantile(query=Query.median('x', user='u') | ClipPerUser(0, 500), epsilon=Fraction(1, 1), relation='add_remove', grid_bits=20, candidates='auto')",
     [307.81030654907227, 305.7537078857422, 305.2663803100586, 300.8856773376465, 303.09152603149414]),
]  # fmt: skip


@pytest.mark.parametrize(("node", "text", "outputs"), GOLDEN)
def test_default_node_is_unchanged(node: ExponentialQuantile, text: str, outputs: list[float]) -> None:
    assert repr(node) == text
    assert node.candidates == "auto" and node.selection == "exponential"
    ds = as_dataset(_golden_data())
    assert [node.release(ds, SeededRandomness(s)) for s in range(5)] == outputs
    assert node.privacy().rule == "exponential mechanism, exp(eps*u/(2*Delta)) (McSherry-Talwar 2007 Thm 6)"
    assert [k for k, _ in node.privacy().inputs] == ["epsilon", "Delta", "candidates", "integers", "grid"]


def test_a_certificate_written_before_candidates_still_rebuilds_the_same_plan() -> None:
    # an older dpalg always used the grid: its certificates, lacking the field, mean candidates=None
    # (not the new default "auto"), so the rebuilt plan is the grid node with the old repr
    plan = Compose(ExponentialQuantile(MED, epsilon=1, grid_bits=8, candidates=None))
    assert "candidates" not in repr(plan)
    encoded = json.loads(json.dumps(encode(plan)))
    fields = encoded["$node"] and encoded["fields"]["children"]["$tuple"][0]["fields"]
    old = {k: v for k, v in fields.items() if k not in ("candidates", "selection")}  # as an older dpalg wrote it
    encoded["fields"]["children"]["$tuple"][0]["fields"] = old
    rebuilt = decode(encoded)
    assert rebuilt == plan and stable_repr(repr(rebuilt)) == stable_repr(repr(plan))


def test_a_release_over_candidates_audits() -> None:
    plan = Compose(ExponentialQuantile(MED, epsilon=1, candidates=(0, Fraction(1, 3), 5, 10), selection="permute_and_flip"))
    assert decode(json.loads(json.dumps(encode(plan)))) == plan
    release = Session(PureDP(1)).run(plan, {"x": [1.0, 5.0, 5.0, 7.0]}, rng=SeededRandomness(0))
    assert release.value[0] in (0.0, 1 / 3, 5.0, 10.0)  # type: ignore[index]
    assert audit_certificate(json.loads(release.certificate_json())).status == "cost_confirmed"
