"""Counts released by Laplace/Gaussian are clamped to >= 0 by default (free post-processing).

For a true count c >= 0, |max(0, Y) - c| <= |Y - c| pointwise, and max(0, ·) is a
function of the DP output only (Dwork–Roth Prop. 2.1): the cost is unchanged. The
tests check that the clamped release is exactly the pushforward of the unclamped one
(draw for draw under the same seeded randomness), that sums/means are never clamped,
and that certificates (with and without the option, and old ones) audit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpalg import Clip, ClipPerUser, InvalidArgument, MaxRowsPerUser, PureDP, Query, Session
from dpalg.data import as_dataset
from dpalg.mechanisms import Gaussian, Laplace
from dpalg.mechanisms.global_noise._laplace_gaussian import counts_nonnegative
from dpalg.measures import ZCDP
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate

SEEDS = range(200)
_DATA = {"x": np.array([1.0, 2.0, 2.0]), "k": np.array(["a", "a", "b"]), "uid": np.array([1, 1, 2])}

COUNT_QUERIES = [
    Query.count(),
    Query.count_distinct("x"),
    Query.count_users(user="uid"),
    Query.histogram("k", keys=("a", "b", "c")),
    Query.count(user="uid") | MaxRowsPerUser(2),
    Query.count(user="uid") | ClipPerUser(0, 3),
]


def _pair(query: Query, gaussian: bool) -> tuple[Laplace | Gaussian, Laplace | Gaussian]:
    if gaussian:
        return Gaussian(query, rho="0.02"), Gaussian(query, rho="0.02", nonnegative=False)
    return Laplace(query, epsilon="0.2"), Laplace(query, epsilon="0.2", nonnegative=False)


@pytest.mark.parametrize("gaussian", [False, True])
@pytest.mark.parametrize("query", COUNT_QUERIES, ids=repr)
def test_clamped_release_is_the_pushforward_draw_for_draw(query: Query, gaussian: bool) -> None:
    """Same randomness: the default release is max(0, ·) of the unclamped one, so its law is the pushforward."""
    on, off = _pair(query, gaussian)
    assert on.cost() == off.cost() and on.privacy().inputs == off.privacy().inputs
    assert counts_nonnegative(query)
    data = as_dataset(_DATA)
    negative = 0
    for s in SEEDS:
        a, b = on.release(data, SeededRandomness(s)), off.release(data, SeededRandomness(s))
        if isinstance(b, dict):
            assert isinstance(a, dict) and a == {key: max(0, v) for key, v in b.items()}
            negative += any(v < 0 for v in b.values())
        else:
            assert isinstance(a, int) and isinstance(b, int)
            assert a == max(0, b)
            negative += b < 0
    assert negative > 0  # the case that matters occurred (the comparison is not vacuous)


def test_a_count_on_empty_data_is_never_negative_and_the_option_off_gives_the_unclamped_value() -> None:
    data = as_dataset({"x": np.zeros(0)})
    on = [Laplace(Query.count(), epsilon="0.1").release(data, SeededRandomness(s)) for s in SEEDS]
    off = [Laplace(Query.count(), epsilon="0.1", nonnegative=False).release(data, SeededRandomness(s)) for s in SEEDS]
    assert all(isinstance(v, int) and v >= 0 for v in on)
    assert min(v for v in off if isinstance(v, int)) < -5  # the unclamped release goes well below 0 (the reported -8)
    assert sum(v == 0 for v in on) == sum(isinstance(v, int) and v <= 0 for v in off)


@pytest.mark.parametrize(
    "query",
    [Query.sum("x") | Clip(-10, -1), Query.mean("x") | Clip(-10, -1), Query.sum("x", user="uid") | ClipPerUser(-3, -1)],
    ids=repr,
)
def test_sums_and_means_are_not_clamped(query: Query) -> None:
    assert not counts_nonnegative(query)
    on, off = Laplace(query, epsilon=1), Laplace(query, epsilon=1, nonnegative=False)
    data = as_dataset(_DATA)
    outs = [on.release(data, SeededRandomness(s)) for s in range(20)]
    assert outs == [off.release(data, SeededRandomness(s)) for s in range(20)]
    assert any(isinstance(v, (int, float)) and v < 0 for v in outs)  # a negative value is released as is


def test_the_option_is_validated_and_shown_in_the_repr_only_when_off() -> None:
    with pytest.raises(InvalidArgument, match="nonnegative"):
        Laplace(Query.count(), epsilon=1, nonnegative=1)  # type: ignore[arg-type]
    assert repr(Laplace(Query.count(), epsilon="0.1")) == (
        "Laplace(query=Query.count(), epsilon=Fraction(1, 10), relation='add_remove', granularity=None)"
    )  # as certificates written before the option recorded it
    assert repr(Gaussian(Query.count(), rho=1, nonnegative=False)).endswith("granularity=None, nonnegative=False)")


@pytest.mark.parametrize("nonnegative", [True, False])
def test_certificates_record_the_option_and_audit(nonnegative: bool) -> None:
    node = Gaussian(Query.count(), rho="0.5", nonnegative=nonnegative)
    release = Session(ZCDP(1)).run(node, {"x": np.zeros(0)}, rng=3)
    assert release.certificate["plan"]["fields"]["nonnegative"] is nonnegative  # type: ignore[index, call-overload]
    report = audit_certificate(release.certificate)
    assert report.status == "cost_confirmed", report.findings


def test_an_old_certificate_without_the_field_audits_with_the_same_cost() -> None:
    cert = json.loads((Path(__file__).parent / "certificates" / "demo_before_ptr_split.json").read_text())
    assert "nonnegative" not in json.dumps(cert) and "Laplace(query=Query.count()" in json.dumps(cert)
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings


def test_session_release_of_an_empty_count_is_zero_or_more() -> None:
    """End to end, through a Session (the public path)."""
    session = Session(PureDP(10))
    values = [session.run(Laplace(Query.count(), epsilon="0.1"), {"x": np.zeros(0)}, rng=s).value for s in range(20)]
    assert all(isinstance(v, int) and v >= 0 for v in values) and any(v == 0 for v in values)


def test_the_plan_tree_shows_the_option_only_when_it_is_off() -> None:
    assert "nonnegative" not in str(Laplace(Query.count(), epsilon=1))
    assert "nonnegative=False" in str(Laplace(Query.count(), epsilon=1, nonnegative=False))
