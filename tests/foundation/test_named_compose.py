"""Compose with keyword children: a dict release value and names in every path, at no cost change."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpalg import Clip, Compose, InvalidArgument, PureDP, Query, Session
from dpalg.graph import compose
from dpalg.graph._accountant import derive
from dpalg.graph._testing import Fixed
from dpalg.mechanisms import Laplace
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate
from dpalg.release._serialize import CertificateMalformed, decode, encode

DATA = {"x": np.arange(100.0)}


def _pair() -> tuple[Laplace, Laplace]:
    return Laplace(Query.count(), epsilon=Fraction(1, 2)), Laplace(Query.sum("x") | Clip(0, 10), epsilon=Fraction(1, 3))


def test_the_release_value_is_a_dict_in_the_given_order_and_names_replace_indices() -> None:
    count, total = _pair()
    plan = Compose(total=total, count=count)
    release = Session(PureDP(1)).run(plan, DATA, rng=SeededRandomness(1))
    assert isinstance(release.value, dict) and list(release.value) == ["total", "count"]
    positional = Session(PureDP(1)).run(Compose(total, count), DATA, rng=SeededRandomness(1))
    assert isinstance(positional.value, tuple) and tuple(release.value.values()) == positional.value
    assert [d.path for d in derive(plan).walk()] == ["Compose", "Compose/total/Laplace", "Compose/count/Laplace"]
    text = str(release)
    assert "Compose/total/Laplace" in text and "Compose/count/Laplace" in text and "Compose/0" not in text
    summary = str(plan.summary())
    assert "Compose/total" in summary and "Compose/count" in summary and "Compose/0" not in summary
    tree = str(plan)
    assert "\n  total: Laplace(" in tree and "\n  count: Laplace(" in tree and "names=" not in tree
    assert repr(plan).startswith("Compose(total=Laplace(")


def test_names_are_neutral_to_the_accountant() -> None:
    leaves = [Fixed(PureDP(Fraction(1, k))) for k in range(2, 9)]
    positional = derive(Compose(*leaves))
    named = derive(Compose(**{f"c{i}": leaf for i, leaf in enumerate(leaves)}))
    assert named.cost == positional.cost == PureDP(sum((Fraction(1, k) for k in range(2, 9)), Fraction(0)))
    assert [(d.rule, d.inputs, d.cost) for d in named.walk()] == [(d.rule, d.inputs, d.cost) for d in positional.walk()]
    nested = compose(Compose(a=leaves[0], b=leaves[1]), Compose(*leaves[2:]))
    assert nested.names == () and len(nested.children) == 6  # the named Compose stays one child
    assert isinstance(nested.children[0], Compose) and nested.children[0].names == ("a", "b")
    assert derive(nested).cost == positional.cost
    inner = derive(Compose(inner=Compose(leaves[0]), leaf=leaves[1]))
    assert [d.path for d in inner.walk()] == ["Compose", "Compose/inner/Compose", "Compose/inner/Compose/0/Fixed", "Compose/leaf/Fixed"]


@pytest.mark.parametrize(
    "build",
    [
        lambda a, b: Compose(a, b=b),  # mixed
        lambda a, b: Compose(**{"not an identifier": a}),
        lambda a, b: Compose(**{"1st": a}),
    ],
)
def test_bad_names_are_refused_at_construction(build: object) -> None:
    a, b = Fixed(PureDP(1)), Fixed(PureDP(1))
    with pytest.raises(InvalidArgument, match="Compose"):
        build(a, b)  # type: ignore[operator]


@pytest.mark.parametrize("names", [("a",), ("a", "a"), ("a", "b c"), (1, 2)])
def test_bad_names_in_a_certificate_are_refused(names: tuple[object, ...]) -> None:
    encoded = encode(Compose(a=Fixed(PureDP(1)), b=Fixed(PureDP(1))))
    assert isinstance(encoded, dict) and isinstance(encoded["fields"], dict)
    encoded["fields"]["names"] = encode(names)
    with pytest.raises((InvalidArgument, CertificateMalformed), match="names"):
        decode(encoded)


def test_a_named_certificate_round_trips_and_audits() -> None:
    count, total = _pair()
    plan = Compose(count=count, total=total)
    assert decode(encode(plan)) == plan and decode(encode(Compose(count, total))) == Compose(count, total)
    assert decode(encode(plan)) != Compose(count, total)
    release = Session(PureDP(1)).run(plan, DATA, rng=SeededRandomness(1))
    cert = json.loads(json.dumps(release.certificate))
    assert audit_certificate(cert).status in {"confirmed", "cost_confirmed"}, audit_certificate(cert).findings


def test_an_old_certificate_without_names_decodes_to_the_same_plan() -> None:
    cert = json.loads((Path(__file__).parents[1] / "mechanisms" / "certificates" / "demo_before_ptr_split.json").read_text())
    assert '"names"' not in json.dumps(cert["plan"])  # written before Compose had names
    assert decode(cert["plan"]) == decode(json.loads(json.dumps(encode(decode(cert["plan"])))))
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings
