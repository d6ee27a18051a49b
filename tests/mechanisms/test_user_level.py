"""User-level queries in Laplace, Gaussian, the exponential quantile, noisy max and stable histograms.

The privacy claim is checked independently of the code that states it: on many
random user datasets D and D + one extreme user (many rows, huge or non-finite
values, ids of several types), every integer statistic moves by at most the
sensitivity its noise is calibrated to. Discrete Laplace/Gaussian noise with that
calibration is then ε-DP / ρ-zCDP exactly (tests/mechanisms/test_global.py checks
the noise part on exact pmfs). Broken variants (a cap ignored, the wrong L∞) are
shown to exceed the bound, so these tests can fail.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpalg import Clip, ClipPerUser, InvalidArgument, MaxKeysPerUser, MaxRowsPerUser, PureDP, Query
from dpalg.data import Dataset, as_dataset
from dpalg.mechanisms import ExponentialQuantile, Gaussian, Laplace, NoisyMax, StableHistogram
from dpalg.mechanisms.global_noise._laplace_gaussian import noise_terms
from dpalg.mechanisms._common.user_level import histogram_sensitivity, kept_rows
from dpalg.noise import SeededRandomness

SECRET = bytes(range(32))
KEYS = ("a", "b", "c", "d")

UserRows = list[tuple[object, float, str]]

_value = st.one_of(
    st.floats(min_value=-50, max_value=200, allow_nan=False),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 0.0]),
)
_rows = st.lists(
    st.tuples(st.sampled_from(["u1", "u2", 3, 4.0, None]), _value, st.sampled_from(KEYS + ("zz",))), max_size=25
)
_extreme = st.lists(st.tuples(st.just("new"), _value, st.sampled_from(KEYS)), min_size=1, max_size=40)


def _dataset(rows: UserRows) -> Dataset:
    ids = np.array([r[0] for r in rows], dtype=object)
    vals = np.array([r[1] for r in rows], dtype=np.float64)
    keys = np.array([r[2] for r in rows], dtype=object)
    return as_dataset({"uid": ids, "x": vals, "k": keys})


QUERIES = [
    Query.count(user="uid") | MaxRowsPerUser(3),
    Query.count("x", user="uid") | MaxRowsPerUser(2),
    Query.count(user="uid") | ClipPerUser(0, 4),
    Query.count(user="uid") | MaxRowsPerUser(2) | ClipPerUser(0, 5),
    Query.sum("x", user="uid") | Clip(-5, 10) | MaxRowsPerUser(3),
    Query.sum("x", user="uid") | ClipPerUser(-20, 100),
    Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(2) | ClipPerUser(0, 100),
    Query.mean("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(4),
    Query.mean("x", user="uid") | ClipPerUser(0, 50),
    Query.histogram("k", keys=KEYS, user="uid") | MaxKeysPerUser(2),
    Query.histogram("k", keys=KEYS, user="uid") | MaxKeysPerUser(2, rows_per_key=3),
    Query.histogram("k", keys=KEYS, user="uid") | MaxRowsPerUser(3),
    Query.histogram("k", keys=KEYS, user="uid") | MaxRowsPerUser(5) | MaxKeysPerUser(3, rows_per_key=2),
]


def _moves(node: Laplace | Gaussian, small: Dataset, big: Dataset) -> list[tuple[int, int, Fraction]]:
    a = noise_terms(node, small, SECRET)
    b = noise_terms(node, big, SECRET)
    assert [t.param for t in a] == [t.param for t in b]  # parameters never depend on data
    return [(ta.value, tb.value, ta.sensitivity) for ta, tb in zip(a, b)]


@pytest.mark.parametrize("query", QUERIES, ids=repr)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows, extra=_extreme)
def test_adding_one_user_moves_each_statistic_within_its_sensitivity(query: Query, rows: UserRows, extra: UserRows) -> None:
    _check_adding_one_user(query, rows, extra)


@pytest.mark.slow  # the same property on the 60 examples per query it used to draw in the fast suite
@pytest.mark.parametrize("query", QUERIES, ids=repr)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows, extra=_extreme)
def test_adding_one_user_moves_each_statistic_within_its_sensitivity_many_examples(query: Query, rows: UserRows, extra: UserRows) -> None:
    _check_adding_one_user(query, rows, extra)


def _check_adding_one_user(query: Query, rows: UserRows, extra: UserRows) -> None:
    small, big = _dataset(rows), _dataset(rows + extra)
    lap = Laplace(query, epsilon=1)
    moves = _moves(lap, small, big)
    if query.kind == "histogram":  # a vector: L1 (Laplace) and L2² (Gaussian) of the whole change
        l1, l2sq, linf = histogram_sensitivity(query)
        diffs = [abs(b - a) for a, b, _ in moves]
        assert sum(diffs) <= l1 and sum(d * d for d in diffs) <= l2sq and max(diffs) <= linf
        assert moves[0][2] == l1
        gauss = _moves(Gaussian(query, rho=1), small, big)
        assert gauss[0][2] == l2sq
        return
    for a, b, sens in moves:
        assert abs(b - a) <= sens, (query, a, b, sens)
    for a, b, sens in _moves(Gaussian(query, rho=1), small, big):
        assert (b - a) ** 2 <= sens


@settings(max_examples=40, deadline=None)
@given(rows=_rows, perm_seed=st.integers(0, 2**32 - 1))
def test_row_order_never_changes_a_user_level_statistic(rows: UserRows, perm_seed: int) -> None:
    order = np.random.default_rng(perm_seed).permutation(len(rows))
    shuffled = [rows[i] for i in order]
    for query in QUERIES:
        node = Laplace(query, epsilon=1)
        a = [t.value for t in noise_terms(node, _dataset(rows), SECRET)]
        b = [t.value for t in noise_terms(node, _dataset(shuffled), SECRET)]
        assert a == b, query


def test_a_broken_row_cap_is_caught() -> None:
    """The move check fails when the cap is dropped but the sensitivity kept (the check can fail)."""
    query = Query.count(user="uid") | MaxRowsPerUser(3)
    rows: UserRows = [("u1", 1.0, "a")]
    extra: UserRows = [("new", 1.0, "a")] * 10
    honest = _moves(Laplace(query, epsilon=1), _dataset(rows), _dataset(rows + extra))
    assert all(abs(b - a) <= s for a, b, s in honest)
    uncapped = Query.count(user="uid") | ClipPerUser(0, 10**6)  # the cap "forgotten": totals up to 10**6
    a = noise_terms(Laplace(uncapped, epsilon=1), _dataset(rows), SECRET)[0].value
    b = noise_terms(Laplace(uncapped, epsilon=1), _dataset(rows + extra), SECRET)[0].value
    assert abs(b - a) > honest[0][2]  # 10 rows moved the count by 10 > 3


def test_missing_ids_are_nobodys_rows() -> None:
    rows: UserRows = [("u1", 2.0, "a"), (None, 5.0, "a"), (float("nan"), 7.0, "b")]
    terms = noise_terms(Laplace(Query.count(user="uid") | MaxRowsPerUser(5), epsilon=1), _dataset(rows), SECRET)
    assert terms[0].value == 1


def test_kept_rows_respect_the_cap_and_drop_missing_values() -> None:
    rows: UserRows = [("u1", float(i), "a") for i in range(10)]
    rows += [("u2", float("nan"), "a"), ("u2", 3.0, "b")]
    n_units, codes, keep = kept_rows(Query.sum("x", user="uid") | Clip(0, 10) | MaxRowsPerUser(4), _dataset(rows), SECRET)
    assert n_units == 2
    assert int(np.count_nonzero(keep & (codes == 0))) == 4
    assert keep.tolist()[-2:] == [False, True]  # the NaN row never uses u2's quota


def test_sensitivities_in_the_certificate_inputs() -> None:
    node = NoisyMax(Query.histogram("k", keys=KEYS, user="uid") | MaxKeysPerUser(2, rows_per_key=3), epsilon=1)
    assert dict(node.privacy().inputs)["Linf"] == "3"
    sh = StableHistogram(Query.histogram("k", user="uid") | MaxKeysPerUser(2), epsilon=1, delta="1e-6")
    assert dict(sh.privacy().inputs)["L1"] == "2"
    # row level keeps its old threshold: ceil(ln(1/delta)/eps) + 1
    assert StableHistogram(Query.histogram("k"), epsilon=1, delta="1e-6").threshold() == 15


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: Laplace(Query.sum("x", user="uid") | Clip(0, 1), epsilon=1), "contribution bound"),
        (lambda: Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 1), epsilon=1, relation="substitution"), "add_remove"),
        (lambda: Laplace(Query.sum("x", user="uid") | MaxRowsPerUser(2), epsilon=1), "Clip"),
        (lambda: Gaussian(Query.histogram("k", keys=KEYS, user="uid") | ClipPerUser(0, 1), rho=1), "ClipPerUser"),
        (lambda: NoisyMax(Query.histogram("k", keys=KEYS, user="uid"), epsilon=1), "contribution bound"),
        (lambda: StableHistogram(Query.histogram("k", user="uid"), epsilon=1, delta="1e-6"), "contribution bound"),
        (lambda: ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 1), epsilon=1), "contribution bound"),
        (lambda: Query.sum("x") | ClipPerUser(0, 1), "user"),
        (lambda: Query.max("x", ) | Clip(0, 1) | MaxRowsPerUser(1), "user"),
        (lambda: Query.count(user="uid") | ClipPerUser(-1, 3), ">= 0"),
        (lambda: MaxRowsPerUser(0), "[1, 1000000]"),
        (lambda: MaxKeysPerUser(True), "[1, 1000000]"),
        (lambda: ClipPerUser(3, 1), "<= upper"),
    ],
)
def test_invalid_user_level_plans_fail_at_construction(build: object, needle: str) -> None:
    with pytest.raises(InvalidArgument, match=None) as info:
        build()  # type: ignore[operator]
    assert needle in str(info.value)


def test_quantile_of_user_totals_and_of_capped_rows() -> None:
    totals = ExponentialQuantile(Query.median("x", user="uid") | ClipPerUser(0, 100), epsilon=1)
    rows = ExponentialQuantile(Query.median("x", user="uid") | Clip(0, 100) | MaxRowsPerUser(4), epsilon=1)
    assert totals.sensitivity() == Fraction(1, 2) and rows.sensitivity() == 2
    data = _dataset([("u1", 10.0, "a"), ("u1", 20.0, "a"), ("u2", 70.0, "a"), (3, 90.0, "b")])
    # the users' totals are 30, 70, 90: a near-noiseless release lands on the median total, 70
    sharp = ExponentialQuantile(Query.median("x", user="uid") | ClipPerUser(0, 100), epsilon=10**4, grid_bits=10)
    released = sharp.release(data, SeededRandomness(3))
    assert isinstance(released, float) and abs(released - 70.0) < 0.2


def test_user_level_release_runs_end_to_end() -> None:
    data = {"uid": np.array(["a", "a", "b", "c"] * 50, dtype=object), "x": np.arange(200, dtype=np.float64)}
    node = Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 10**5), epsilon=1)
    node.check(PureDP(1))
    release = node.run(data, rng=7)
    assert isinstance(release.value, float)
    assert node.neighbouring.unit == "uid"


# --- local-sensitivity mechanisms over users' clipped totals ---------------------------------

from dpalg.mechanisms import ProposeTest, SmoothBound, SmoothBoundCauchy  # noqa: E402
from dpalg.mechanisms._common.user_level import unit_values  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(rows=_rows, extra=_extreme)
def test_adding_a_user_adds_exactly_one_total(rows: UserRows, extra: UserRows) -> None:
    """The row-level proofs apply to the totals because a user adds exactly one value in [L, U]."""
    query = Query.median("x", user="uid") | Clip(-5, 60) | ClipPerUser(0, 100)
    small = unit_values(query, _dataset(rows), SeededRandomness(1))
    big = unit_values(query, _dataset(rows + extra), SeededRandomness(1))
    assert big.size == small.size + 1
    assert np.all((big >= 0) & (big <= 100))
    remaining = list(np.sort(big))
    for v in np.sort(small).tolist():
        remaining.remove(v)  # every old total is still there, bit for bit
    assert len(remaining) == 1


def test_a_user_level_ptr_release_is_the_row_level_release_over_the_totals() -> None:
    rows: UserRows = [(str(f"u{i % 40}"), float(i % 7), "a") for i in range(400)]
    data = _dataset(rows)
    user_q = Query.median("x", user="uid") | ClipPerUser(0, 100)
    totals = unit_values(user_q, data, SeededRandomness(0))
    row_data = as_dataset({"t": totals})
    row_q = Query.median("t") | Clip(0, 100)
    for make in (
        lambda q: ProposeTest(q, bound=5, epsilon=1, delta="1e-6"),
        lambda q: SmoothBound(q, epsilon=1, delta="1e-6"),
        lambda q: SmoothBoundCauchy(q, epsilon=1),
    ):
        user_node, row_node = make(user_q), make(row_q)
        assert user_node.neighbouring.unit == "uid" and row_node.neighbouring.unit is None
        assert user_node.cost() == row_node.cost()
        for seed in range(5):
            assert user_node.release(data, SeededRandomness(seed)) == row_node.release(row_data, SeededRandomness(seed))


@pytest.mark.parametrize(
    "build",
    [
        lambda: ProposeTest(Query.median("x", user="uid") | Clip(0, 9) | MaxRowsPerUser(3), bound=1, epsilon=1, delta="1e-6"),
        lambda: SmoothBound(Query.median("x", user="uid") | Clip(0, 9), epsilon=1, delta="1e-6"),
        lambda: ProposeTest(Query.median("x", user="uid") | ClipPerUser(0, 9), bound=1, epsilon=1, delta="1e-6", relation="substitution"),
    ],
)
def test_local_sensitivity_nodes_refuse_what_their_profiles_do_not_cover(build: object) -> None:
    with pytest.raises(InvalidArgument):
        build()  # type: ignore[operator]


def test_a_user_level_certificate_is_re_derived_by_the_audit() -> None:
    import json

    from dpalg import Compose
    from dpalg.release import audit_certificate

    plan = Compose(
        Laplace(Query.count_users(user="uid"), epsilon="0.1"),
        Laplace(Query.sum("x", user="uid") | Clip(0, 9) | MaxRowsPerUser(3) | ClipPerUser(0, 20), epsilon="0.2"),
        NoisyMax(Query.histogram("k", keys=KEYS, user="uid") | MaxKeysPerUser(2, rows_per_key=2), epsilon="0.2"),
        ExponentialQuantile(Query.median("x", user="uid") | ClipPerUser(0, 100), epsilon="0.2"),
    )
    plan.check(PureDP(1))
    data = _dataset([("u1", 1.0, "a"), ("u1", 2.0, "b"), ("u2", 3.0, "c"), (3, 4.0, "a")])
    cert = json.loads(plan.run({c: data.column(c) for c in data.names}, rng=4).certificate_json())
    assert "ClipPerUser(0, 20)" in json.dumps(cert) or "user_upper" in json.dumps(cert)
    report = audit_certificate(cert)
    assert report.exit_code == 0 and report.status == "cost_confirmed", report.findings
    # a certificate whose cap was edited no longer matches its plan digest
    tampered = json.loads(json.dumps(cert).replace('"max_rows": 3', '"max_rows": 300'))
    assert tampered != cert
    assert audit_certificate(tampered).exit_code != 0


def _small_worlds(second_user_rows: int = 2) -> list[UserRows]:
    """Every dataset of at most two users over a tiny domain (ids of two types): the first user has
    at most two rows, the second at most ``second_user_rows``."""
    import itertools

    items = ((0.0, "a"), (7.0, "b"), (7.0, "a"))

    def per_user(most: int) -> list[tuple[tuple[float, str], ...]]:
        return [()] + [tuple(c) for n in range(1, most + 1) for c in itertools.combinations_with_replacement(items, n)]

    worlds: list[UserRows] = []
    for first, second in itertools.product(per_user(2), per_user(second_user_rows)):
        worlds.append([("u1", v, k) for v, k in first] + [(2, v, k) for v, k in second])
    return worlds


def _newcomers() -> list[UserRows]:
    import itertools

    out: list[UserRows] = []
    for n in (1, 3, 6):
        for v, k in itertools.product((0.0, 7.0, float("inf"), 1e300), ("a", "b")):
            out.append([("new", v, k)] * n)
    out.append([("new", 1e300, "a"), ("new", -1e300, "b"), ("new", float("nan"), "a"), ("new", 7.0, "b")] * 2)
    return out


def _check_every_world_and_newcomer(query: Query, worlds: list[UserRows]) -> None:
    """D ranges over ``worlds``, D' = D + each extreme newcomer: every statistic moves within its sensitivity."""
    lap = Laplace(query, epsilon=1)
    newcomers = _newcomers()
    for rows in worlds:
        small = noise_terms(lap, _dataset(rows), SECRET)  # once per world, not once per newcomer
        for extra in newcomers:
            big = noise_terms(lap, _dataset(rows + extra), SECRET)
            assert [t.param for t in small] == [t.param for t in big]  # parameters never depend on data
            moves = [(ta.value, tb.value, ta.sensitivity) for ta, tb in zip(small, big)]
            if query.kind == "histogram":
                l1, l2sq, linf = histogram_sensitivity(query)
                diffs = [abs(b - a) for a, b, _ in moves]
                assert sum(diffs) <= l1 and sum(d * d for d in diffs) <= l2sq and max(diffs) <= linf
            else:
                assert all(abs(b - a) <= s for a, b, s in moves), (query, rows, extra)


@pytest.mark.parametrize("query", QUERIES, ids=repr)
def test_brute_force_small_worlds_and_every_extreme_newcomer(query: Query) -> None:
    """The fast variant of the test below: the second user has at most one row (40 worlds, not 100)."""
    worlds = _small_worlds(second_user_rows=1)
    assert len(worlds) == 40 and len(_newcomers()) == 25
    _check_every_world_and_newcomer(query, worlds)


@pytest.mark.slow  # 100 worlds x 25 newcomers x 13 queries: ~25 s in all
@pytest.mark.parametrize("query", QUERIES, ids=repr)
def test_brute_force_every_small_world_and_every_extreme_newcomer(query: Query) -> None:
    """Exhaustive over a small domain: D ranges over every world, D' = D + each extreme user."""
    worlds = _small_worlds()
    assert len(worlds) == 100
    _check_every_world_and_newcomer(query, worlds)
