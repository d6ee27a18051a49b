"""Released values for people: ``format_value`` (table-driven), ``str(release)`` and the report's value table.

The error bar comes from the node's own ``accuracy(alpha)`` (the report's from
the plan it rebuilt, never from the certificate), rounded up to its leading
digit; the value is rounded to the same place and never past the lattice step.
"""

from __future__ import annotations

import re
from fractions import Fraction as F

import numpy as np
import pytest

from dpalg import BOTTOM, ApproxDP, Clip, Compose, PureToApprox, Query, Session
from dpalg.graph import Accuracy
from dpalg.graph._readable import format_value, value_rows
from dpalg.mechanisms import Laplace, LocalSensAtDistance, ProposeTest
from dpalg.release import seal
from dpalg.release._report import render_html, render_text

A = F(1, 20)


def acc(
    error: F | None, unit: str = "absolute", noise: str = "discrete Laplace, scale 1", condition: str | None = None, lattice_k: int | None = None
) -> Accuracy:
    return Accuracy(A, error, unit, noise, condition=condition, lattice_k=lattice_k)


@pytest.mark.parametrize(
    ("value", "accuracy", "text"),
    [
        (40.52718, acc(F("0.05")), "40.53 ± 0.05"),  # to the error's leading digit
        (40.52718, acc(F("0.0412")), "40.53 ± 0.05"),  # the bar rounded up, never understated
        (40.52718, acc(F("0.12")), "40.53 ± 0.12"),  # leading digit 1: one more digit
        (100003, acc(F("3.2")), "100003 ± 4"),  # an integer (exact count) as an integer
        (100003.4, acc(F(3)), "100003 ± 3"),
        (51.4247, acc(F("368.9")), "51 ± 369"),  # never rounded left of the units
        (2.5, acc(F(3)), "2 ± 3"),  # half-even
        (-0.3, acc(F(3)), "0 ± 3"),
        (40.52718, acc(F("0.0001"), noise="discrete Laplace, scale 1 (lattice step 2**-3)", lattice_k=-3), "40.5 ± 0.1"),  # not past the step
        (51.42472491878094, acc(None, condition="the true count n > 7; error <= ..."), "51.4247 (error conditional: the true count n > 7)"),
        (51.42472491878094, acc(None, noise="x (lattice step 2**-7)", lattice_k=-7), "51.425 (error conditional)"),  # step 0.0078: 3 places
        (51.42472491878094, None, "51.4247"),  # no statement: 6 significant digits
        (BOTTOM, acc(F(3)), "⊥"),
        ({1984: 60, 1985: 40}, acc(F(3), "absolute, per key"), "{1984: 60, 1985: 40} ± 3 each"),
        ({"1984": 60}, acc(F(3), "absolute, per key"), "{'1984': 60} ± 3 each"),  # a str key stays a str
        (np.array([1.25, 2.5]), acc(F("0.5")), "[1.2, 2.5] ± 0.5 each"),
        ("b", acc(F(3), "rank"), "'b' (± 3 rank)"),  # a rank is not in the value's units: no digits from it
        (2.9, acc(F(3), condition="it releases (no ⊥)"), "3 ± 3 (if it releases (no ⊥))"),
        (float("inf"), acc(F(3)), "inf ± 3"),
    ],
)
def test_format_value(value: object, accuracy: Accuracy | None, text: str) -> None:
    assert format_value(value, accuracy) == text


def test_a_huge_value_is_clipped() -> None:
    text = format_value([[float(i)] * 60 for i in range(100)], None)
    assert len(text) < 2100 and text.endswith("…") and "…]" in text


def plan() -> Compose[ApproxDP]:
    ls = LocalSensAtDistance(Query.median("x") | Clip(0, 100), "(upper - lower) / Max(n - k, 1)")
    return Compose(
        PureToApprox(Compose(
            Laplace(Query.count(), epsilon=1), Laplace(Query.mean("x") | Clip(0, 100), epsilon=1),
            Laplace(Query.histogram("y", keys=(1984, 1985)), epsilon=1),
        )),
        ProposeTest(ls, bound="0.5", epsilon="0.5", delta="1e-6"),
    )  # fmt: skip


DATA = {"x": np.arange(100.0), "y": np.array([1984] * 60 + [1985] * 40)}


@pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")
def test_str_of_a_seeded_release_is_a_short_table() -> None:
    release = Session(ApproxDP(5, "1e-5")).run(plan(), DATA, rng=1)
    assert release.value == ((100, pytest.approx(51.42, abs=0.01), {1984: 60, 1985: 40}), BOTTOM)
    assert str(release).splitlines() == [
        "path                                      value ± error                                      confidence",
        "Compose/0/PureToApprox/Compose/0/Laplace  100 ± 3                                            95%",
        "Compose/0/PureToApprox/Compose/1/Laplace  51.4247 (error conditional: the true count n > 7)  95%",
        "Compose/0/PureToApprox/Compose/2/Laplace  {1984: 60, 1985: 40} ± 3 each                      95%",
        "Compose/1/ProposeTest                     ⊥",
        "NOT SECURE: seeded randomness, not differentially private",
    ]
    assert repr(release).startswith("Release(value=((100, 51.4")  # repr unchanged: construction style


@pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")
def test_the_report_shows_error_bars_re_derived_from_the_plan_and_no_long_floats() -> None:
    release = Session(ApproxDP(5, "1e-5")).run(plan(), DATA, rng=1)
    page, text = render_html(release.certificate), render_text(release.certificate)
    rows = [(r.path, r.text) for r in value_rows(release.plan, release.value)]
    for path, shown in rows:  # the same formatter as str(release); int histogram keys restored from the plan
        assert f"  {path}: {shown}" in text
    assert "{1984: 60, 1985: 40} ± 3 each" in page and "100 ± 3" in page
    assert not re.search(r"\d\.\d{7,}", page.split("<h2>Budget</h2>")[0])  # no 16-digit float in the values
    # a claimed error bar in the certificate is never read: an edited value keeps the plan's bar
    doc = release.certificate
    doc["value"] = [[7, {"$float": (1.0 / 3).hex()}, {"1984": 1}], 12.0]
    edited = render_text(seal(doc))
    assert "Compose/0/PureToApprox/Compose/0/Laplace: 7 ± 3  (95%)" in edited
    assert "Compose/1/ProposeTest: 12 ± 3 (if it releases (no ⊥))  (95%)" in edited


@pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")
@pytest.mark.parametrize("sealed", [True, False], ids=["digest recomputed", "digest stale"])
def test_hostile_values_that_fit_the_plan_are_still_escaped(sealed: bool) -> None:
    """Strings in a value of the plan's shape go through the per-node formatter (and the key restorer): still inert."""
    doc = Session(ApproxDP(5, "1e-5")).run(plan(), DATA, rng=1).certificate
    doc["value"] = [[
        "<script>alert(1)</script>", {"$float": "0x1.8p+1"},
        {"1984": "\x1b[2J", '"><img src=x onerror=alert(2)>': "\u202eevil"},
    ], "</td></tr><svg onload=alert(4)>"]  # fmt: skip
    doc = seal(doc) if sealed else doc
    page, text = render_html(doc), render_text(doc)
    assert not re.search(r"<\s*(script|img|svg)", page, re.IGNORECASE)
    assert "&lt;script&gt;" in page and "&lt;svg onload=alert(4)&gt;" in page
    for out in (page, text):
        assert "\x1b" not in out and "\u202e" not in out and "\\x1b[2J" in out  # shown as its repr: inert
    assert "Compose/0/PureToApprox/Compose/1/Laplace: 3.0000 (error conditional: the true count n > 7)" in text


def test_every_lattice_statement_gives_its_step_as_a_field() -> None:
    """The display reads the step from Accuracy.lattice_k, which each lattice mechanism sets (never parsed from text)."""
    from dpalg import Clip, Query
    from dpalg.mechanisms import Laplace, ProposeTest, SampleAggregateMean, SmoothBound

    from dpalg.graph._accuracy import Accuracy as _Accuracy

    nodes: list[Laplace | SmoothBound | ProposeTest | SampleAggregateMean] = [
        Laplace(Query.sum("x") | Clip(0, 10), epsilon=1),
        Laplace(Query.mean("x") | Clip(0, 10), epsilon=1),
        SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="1e-6"),
        ProposeTest(Query.mean("x") | Clip(0, 10), bound="0.01", epsilon=1, delta="1e-6"),
        SampleAggregateMean(lambda d: 0.0, blocks=10, lower=0, upper=1, epsilon=1),
    ]
    for node in nodes:
        statement: _Accuracy = node.accuracy()
        assert statement.lattice_k is not None and f"2**{statement.lattice_k}" in statement.noise, node
