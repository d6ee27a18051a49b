"""Certificate format 2: the public schema the plan read, and what releases chose from it.

``ExponentialQuantile(candidates="auto")`` releases over the integers of the clip
range when the column's declared type is an integer, else over the grid. A
format 2 certificate records the schema (before the charge) and that choice
(``resolved``); ``dpalg audit`` re-derives the choice from the plan and the
recorded schema, and refutes a certificate whose choice, or whose schema's
coverage, does not follow. Format 1 certificates still audit as before.

Each refutation test below fails when the audit check it targets is disabled
(checked by hand: the resolved comparison, the coverage check).
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpalg import Clip, Compose, PureDP, Query, Session
from dpalg.mechanisms import ExponentialQuantile, Laplace
from dpalg.release import audit_certificate
from dpalg.release._certificate import CERTIFICATE_FORMAT, FORMAT_1
from dpalg.release._report import render_html, render_text

INT_PATH = "Compose/0/ExponentialQuantile"
FLOAT_PATH = "Compose/1/ExponentialQuantile"


def _reseal(cert: dict[str, Any]) -> dict[str, Any]:
    """Recompute the digest, as anyone can (the same canonical JSON as the certificate writer)."""
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return {**body, "digest": {"algorithm": "sha256", "value": hashlib.sha256(canonical).hexdigest()}}


def _plan() -> Compose[PureDP]:
    # grid_bits=3: the grid of [0, 100] is the multiples of 12.5, so an output shows which candidate set ran
    return Compose(
        ExponentialQuantile(Query.median("price") | Clip(0, 100), epsilon=2, grid_bits=3),
        ExponentialQuantile(Query.median("weight") | Clip(0, 100), epsilon=2, grid_bits=3),
        Laplace(Query.histogram("city", keys=("a", "b")), epsilon=1),
    )


def _data() -> dict[str, object]:
    rng = np.random.default_rng(0)
    price = rng.integers(30, 45, size=400)
    return {"price": price.astype(np.int64), "weight": price.astype(np.float64) + 0.25, "city": ["a", "b"] * 200, "unused": [1.5] * 400}


def _certificate(seed: int = 0) -> dict[str, Any]:
    plan = _plan()
    plan.check(PureDP(5))
    release = plan.run(_data(), rng=seed)
    cert: dict[str, Any] = json.loads(release.certificate_json())
    return cert


def test_round_trip_records_the_schema_and_the_candidate_set_that_ran() -> None:
    cert = _certificate()
    assert cert["format"] == CERTIFICATE_FORMAT == "dpalg-certificate/2"
    assert cert["schema"] == [{"column": "city", "type": "str"}, {"column": "price", "type": "int"}, {"column": "weight", "type": "float"}]
    assert cert["resolved"] == [{"path": INT_PATH, "choice": "integers"}, {"path": FLOAT_PATH, "choice": "grid"}]
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings
    assert "schema" in report.unverifiable  # a claim, like backend
    text = "\n".join(report.findings)
    assert f"resolved at {INT_PATH}: candidates: integers (column 'price' is int)" in text
    assert f"resolved at {FLOAT_PATH}: candidates: grid (column 'weight' is float: 2**3 grid points)" in text
    # the recorded choice is the candidate set that ran: the integer median is off the 12.5 grid, the float one on it
    values = [(cert["value"][0], cert["value"][1]) for cert in (_certificate(seed) for seed in range(4))]
    assert all(float(p).is_integer() for p, _ in values) and any(float(p) % 12.5 for p, _ in values)
    assert all(float(w) % 12.5 == 0 for _, w in values)


def test_a_session_release_records_the_schema_too() -> None:
    session = Session(PureDP(10))
    plan = ExponentialQuantile(Query.median("price") | Clip(0, 100), epsilon=1)
    cert = session.run(plan, _data(), rng=1).certificate
    assert cert["schema"] == [{"column": "price", "type": "int"}]
    assert cert["resolved"] == [{"path": "ExponentialQuantile", "choice": "integers"}]
    assert audit_certificate(cert).status == "cost_confirmed"


def test_a_node_that_does_not_choose_from_the_schema_has_no_resolved_entry() -> None:
    plan = ExponentialQuantile(Query.median("price") | Clip(0, 100), epsilon=1, candidates=None)
    plan.check(PureDP(1))
    cert = plan.run(_data(), rng=1).certificate
    assert cert["resolved"] == [] and cert["schema"] == [{"column": "price", "type": "int"}]
    assert audit_certificate(cert).status == "cost_confirmed"


@pytest.mark.parametrize(("path", "forged"), [(INT_PATH, "grid"), (FLOAT_PATH, "integers")])
def test_a_swapped_candidate_set_is_refuted(path: str, forged: str) -> None:
    cert = _certificate()
    cert["resolved"] = [{"path": e["path"], "choice": forged if e["path"] == path else e["choice"]} for e in cert["resolved"]]
    report = audit_certificate(_reseal(cert))
    assert report.status == "refuted" and report.exit_code == 1
    assert f"REFUTED: resolved at {path} is '{forged}', but the plan and the recorded schema give candidates:" in "\n".join(report.findings)


def test_a_schema_type_that_contradicts_the_recorded_choice_is_refuted() -> None:
    cert = _certificate()
    cert["schema"] = [{**e, "type": "float"} if e["column"] == "price" else e for e in cert["schema"]]
    report = audit_certificate(_reseal(cert))
    assert report.status == "refuted"
    assert f"REFUTED: resolved at {INT_PATH} is 'integers', but the plan and the recorded schema give candidates: grid (column 'price' is float" in "\n".join(report.findings)


def test_a_consistent_forgery_of_schema_and_choice_is_only_a_claim() -> None:
    """Editing the type *and* the choice together re-derives: the schema is a claim only a signature vouches for."""
    cert = _certificate()
    cert["schema"] = [{**e, "type": "float"} if e["column"] == "price" else e for e in cert["schema"]]
    cert["resolved"] = [{"path": INT_PATH, "choice": "grid"}, {"path": FLOAT_PATH, "choice": "grid"}]
    report = audit_certificate(_reseal(cert))
    assert report.status == "cost_confirmed" and "schema" in report.unverifiable


@pytest.mark.parametrize("column", ["city", "price"])
def test_a_schema_missing_a_read_column_is_refuted(column: str) -> None:
    cert = _certificate()
    cert["schema"] = [e for e in cert["schema"] if e["column"] != column]
    report = audit_certificate(_reseal(cert))
    assert report.status == "refuted"
    assert f"REFUTED: the schema does not record the type of ['{column}'], which the plan reads" in "\n".join(report.findings)


def test_a_schema_with_a_column_the_plan_does_not_read_is_refuted() -> None:
    cert = _certificate()
    cert["schema"] = sorted([*cert["schema"], {"column": "unused", "type": "float"}], key=lambda e: e["column"])
    report = audit_certificate(_reseal(cert))
    assert report.status == "refuted"
    assert "REFUTED: the schema records ['unused'], which the plan does not read" in "\n".join(report.findings)


def test_a_missing_or_extra_resolved_entry_is_refuted() -> None:
    cert = _certificate()
    resolved = cert["resolved"]
    assert isinstance(resolved, list)
    missing = audit_certificate(_reseal({**cert, "resolved": resolved[:1]}))
    assert missing.status == "refuted"
    assert f"REFUTED: resolved has no entry for {FLOAT_PATH}: the plan and the recorded schema give candidates: grid" in "\n".join(missing.findings)
    extra = audit_certificate(_reseal({**cert, "resolved": [*resolved, {"path": "Compose/2/Laplace", "choice": "integers"}]}))
    assert extra.status == "refuted"
    assert "REFUTED: resolved has an entry for Compose/2/Laplace, but no node there chooses from the schema" in "\n".join(extra.findings)
    twice = audit_certificate(_reseal({**cert, "resolved": [resolved[1], resolved[0]]}))
    assert twice.status == "refuted" and "out of the derivation's order" in "\n".join(twice.findings)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([{"column": "price", "type": "decimal"}], "schema: type must be one of"),
        ([{"column": "price", "type": "int"}, {"column": "city", "type": "str"}], "schema must be sorted by column name"),
        ([{"column": "price"}], "exactly the fields column and type"),
        ([{"column": "", "type": "int"}], "column must be a non-empty string"),
    ],
)
def test_a_misshapen_schema_is_malformed(schema: list[dict[str, str]], message: str) -> None:
    report = audit_certificate(_reseal({**_certificate(), "schema": schema}))
    assert report.status == "malformed" and message in report.findings[-1]


def test_version_2_requires_its_fields_and_version_1_refuses_them() -> None:
    cert = _certificate()
    for field in ("schema", "resolved"):
        without = _reseal({k: v for k, v in cert.items() if k != field})
        assert audit_certificate(without).findings[-1] == f"MALFORMED: missing field {field!r}"
    as_v1 = _reseal({**cert, "format": FORMAT_1})
    assert "unknown fields ['resolved', 'schema']" in audit_certificate(as_v1).findings[-1]


def _as_format_1(cert: dict[str, Any]) -> dict[str, Any]:
    """The certificate as this dpalg wrote it before format 2: no schema, no resolved."""
    return _reseal({**{k: v for k, v in cert.items() if k not in ("schema", "resolved")}, "format": FORMAT_1})


def test_a_version_1_certificate_still_audits() -> None:
    report = audit_certificate(_as_format_1(_certificate()))
    assert report.status == "cost_confirmed", report.findings
    assert "schema" not in report.unverifiable
    assert f"format 'dpalg-certificate/1' records no schema: what {INT_PATH}, {FLOAT_PATH} chose from the column types" in "\n".join(report.findings)
    text = render_text(_as_format_1(_certificate()))
    assert "schema        not recorded (format 1)" in text and "VERDICT: CONFIRMED (COST ONLY)" in text


def test_a_version_1_signature_still_verifies() -> None:
    """Format 1 signatures cover b"dpalg-certificate/1\\n" + the canonical JSON: they keep verifying."""
    ed25519 = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")
    key = ed25519.Ed25519PrivateKey.generate()
    cert = _as_format_1(_certificate())
    canonical = json.dumps(cert, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    public = key.public_key().public_bytes_raw()
    cert["signature"] = {"algorithm": "ed25519", "public_key": public.hex(), "value": key.sign(b"dpalg-certificate/1\n" + canonical).hex()}
    assert audit_certificate(cert, public_key=public).status == "confirmed"
    # the prefix is the certificate's own format: the same body signed under format 2's prefix does not verify
    cert["signature"] = {**cert["signature"], "value": key.sign(b"dpalg-certificate/2\n" + canonical).hex()}
    forged = audit_certificate(cert, public_key=public)
    assert forged.status == "malformed" and "does not match the certificate" in forged.findings[-1]


def test_the_report_shows_the_choice_per_node() -> None:
    cert = _certificate()
    text = render_text(cert)
    assert f"at {INT_PATH}  <- exponential mechanism" in text
    assert "[candidates: integers (column 'price' is int)]" in text
    assert "[candidates: grid (column 'weight' is float: 2**3 grid points)]" in text
    assert "schema        'city' str, 'price' int, 'weight' float (as claimed)" in text
    html = render_html(cert)
    assert '<span class="resolved">candidates: integers (column &#x27;price&#x27; is int)</span>' in html
    forged = render_text(_reseal({**cert, "resolved": [{"path": INT_PATH, "choice": "grid"}, {"path": FLOAT_PATH, "choice": "grid"}]}))
    assert forged.startswith("VERDICT: REFUTED")
    assert "[candidates: grid (recorded, but the plan and the recorded schema give integers)]" in forged


def test_the_choice_follows_the_declared_type_not_the_values() -> None:
    """An int column's choice is "integers" whatever its values; a float column holding only integers is "grid"."""
    for upper, data, choice in (
        (100, {"price": np.array([1.0, 2.0])}, "grid"),
        (100, {"price": np.array([], dtype=np.int64)}, "integers"),
        (Fraction(201, 2), {"price": np.array([3], dtype=np.uint8)}, "integers"),  # a fractional bound: still integers
    ):
        node = ExponentialQuantile(Query.median("price") | Clip(0, upper), epsilon=1)
        node.check(PureDP(1))
        cert = node.run(data, rng=0).certificate
        assert cert["resolved"] == [{"path": "ExponentialQuantile", "choice": choice}]
        assert audit_certificate(cert).status == "cost_confirmed"
