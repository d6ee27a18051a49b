"""``dpalg audit``: re-derive a certificate's claim from its plan alone.

The order of the checks matters: first the document's shape, then its digest
(and signature), and only then is the plan rebuilt -- so a tampered document is
reported as such (exit 2) before anything in it is interpreted. A sealed
certificate whose claim does not follow from its plan is *refuted* (exit 1),
with the first node where the recorded derivation and the re-derived one differ.
A plan naming a node kind this version does not know is refuted too: unknown
nodes are never free.
"""

from __future__ import annotations

import datetime
import hmac
import json
from collections.abc import Mapping
from typing import Literal, final

import attrs

from dpalg._errors import DPAlgError, InvalidArgument, Unsupported
from dpalg.graph._accountant import add_measures, derive, fits
from dpalg.graph._derivation import measure_from_json, measure_to_json
from dpalg.graph._node import AbstractMeasurement
from dpalg.measures import Measure
from dpalg.release._certificate import (
    CERTIFICATE_FORMAT,
    certificate_digest,
    certificate_warnings,
    derivation_json,
    library_version,
    symbolic_check_records,
    verify_signature,
)
from dpalg.release._serialize import JSON, CertificateMalformed, UnknownNodeKind, decode, stable_repr

__all__ = ["AuditReport", "audit_certificate"]

Status = Literal["confirmed", "refuted", "malformed"]

# field -> JSON types it may have (schema v1, docs/certificates.md)
_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (str,), "dpalg_version": (str,), "created": (str,), "plan": (dict,), "plan_repr": (str,),
    "neighbouring": (dict,), "claimed_cost": (dict,), "budget": (dict,), "derivation": (dict,),
    "symbolic_checks": (list,), "randomness": (dict,), "warnings": (list,), "session": (dict, type(None)),
    "value": (dict, list, str, int, float, bool, type(None)), "digest": (dict,),
}  # fmt: skip
_OPTIONAL = {"signature": (dict,)}


@final
@attrs.frozen
class AuditReport:
    """The outcome of :func:`audit_certificate`.

    Attributes:
        status: ``"confirmed"`` (exit 0), ``"refuted"`` (exit 1) or
            ``"malformed"`` (exit 2: unreadable, incomplete or tampered).
        findings: one line per check, in order; refutations start with ``REFUTED``.
        warnings: loud warnings (seeded randomness, unproven checks, version).
    """

    status: Status
    findings: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 confirmed, 1 refuted, 2 malformed or tampered."""
        return {"confirmed": 0, "refuted": 1, "malformed": 2}[self.status]

    @property
    def confirmed(self) -> bool:
        """Whether the claim was confirmed."""
        return self.status == "confirmed"

    def to_json(self) -> dict[str, JSON]:
        """A JSON-ready summary."""
        return {"status": self.status, "exit_code": self.exit_code, "findings": list(self.findings), "warnings": list(self.warnings)}


def _malformed(findings: list[str], message: str) -> AuditReport:
    return AuditReport("malformed", (*findings, f"MALFORMED: {message}"))


def _first_difference(recorded: JSON, derived: JSON, path: str = "") -> str | None:
    """The deepest first node where two derivation trees differ, described.

    Children are compared before their parent, so a changed leaf is named
    rather than every composition above it (whose totals change with it).
    """
    if not isinstance(recorded, dict) or not isinstance(derived, dict):
        return f"{path or '<root>'}: the recorded derivation node is not an object"
    where = str(derived.get("path") or path or "<root>")
    rk, dk = recorded.get("children"), derived.get("children")
    if not isinstance(rk, list) or not isinstance(dk, list) or len(rk) != len(dk):
        return f"node {where}: the number of children differs"
    for r, d in zip(rk, dk):
        diff = _first_difference(r, d, where)
        if diff is not None:
            return diff
    for key in ("path", "node", "rule", "inputs", "cost", "notes", "combine"):
        if recorded.get(key) != derived.get(key):
            return (
                f"node {where}: {key} differs: recorded {json.dumps(recorded.get(key), sort_keys=True, ensure_ascii=False)}, "
                f"re-derived {json.dumps(derived.get(key), sort_keys=True, ensure_ascii=False)}"
            )
    extra = set(recorded) - {"path", "node", "rule", "inputs", "cost", "notes", "combine", "children"}
    if extra:
        return f"node {where}: unexpected keys {sorted(extra)}"
    return None


def _measure(findings: list[str], cert: Mapping[str, object], field: str) -> Measure | None:
    try:
        return measure_from_json(cert.get(field))
    except (InvalidArgument, KeyError, ValueError, ZeroDivisionError):
        findings.append(f"MALFORMED: {field} is not an encoded privacy measure")
        return None


def audit_certificate(
    certificate: Mapping[str, object],
    *,
    strict: bool = False,
    require_secure: bool = False,
    public_key: bytes | None = None,
) -> AuditReport:
    """Re-derive a certificate's claim from its plan alone, with this dpalg version.

    Args:
        certificate: the parsed certificate JSON.
        strict: refute a certificate whose plan relies on an unproven symbolic check.
        require_secure: refute a release made with seeded (insecure) randomness.
        public_key: when given (32 raw bytes), require a valid Ed25519 signature by it.

    Returns:
        An :class:`AuditReport`; its ``exit_code`` is what ``dpalg audit`` returns.
    """
    findings: list[str] = []
    warnings: list[str] = []
    # 1. shape
    if not isinstance(certificate, Mapping):
        return _malformed(findings, "a certificate is a JSON object")
    if certificate.get("format") != CERTIFICATE_FORMAT:
        return _malformed(findings, f"format is {certificate.get('format')!r}; this dpalg reads {CERTIFICATE_FORMAT!r}")
    for name, types in _FIELDS.items():
        if name not in certificate:
            return _malformed(findings, f"missing field {name!r}")
        if not isinstance(certificate[name], types) or (isinstance(certificate[name], bool) and bool not in types and int in types):
            return _malformed(findings, f"field {name!r} has the wrong type {type(certificate[name]).__name__}")
    extra = set(certificate) - set(_FIELDS) - set(_OPTIONAL)
    if extra:
        return _malformed(findings, f"unknown fields {sorted(extra)}")
    cert: dict[str, JSON] = dict(certificate)  # type: ignore[arg-type]  # checked field by field above
    # 2. integrity: digest, then signature
    digest = cert["digest"]
    assert isinstance(digest, dict)
    if digest.get("algorithm") != "sha256" or not isinstance(digest.get("value"), str):
        return _malformed(findings, "digest must be {'algorithm': 'sha256', 'value': hex}")
    try:
        actual = certificate_digest(cert)
    except (TypeError, ValueError):
        return _malformed(findings, "the certificate cannot be serialised canonically (NaN or a non-JSON value)")
    if not hmac.compare_digest(str(digest["value"]).lower(), actual):
        return _malformed(findings, "TAMPERED: the SHA-256 digest does not match the certificate's content")
    findings.append(f"digest ok (sha256 {actual[:16]}...)")
    sig = verify_signature(cert, public_key)
    if sig.status == "invalid" or (public_key is not None and sig.status != "valid"):
        return _malformed(findings, f"signature: {sig.detail}")
    findings.append(f"signature: {sig.detail}")
    if sig.status == "unverifiable":
        warnings.append(sig.detail)
    try:
        created = datetime.datetime.fromisoformat(str(cert["created"]))
    except ValueError:
        return _malformed(findings, "created is not an ISO 8601 timestamp")
    if created.tzinfo is None:
        return _malformed(findings, "created must carry a time zone")
    if cert["dpalg_version"] != library_version():
        warnings.append(f"certificate made by dpalg {cert['dpalg_version']}, audited with dpalg {library_version()}")
    claimed = _measure(findings, cert, "claimed_cost")
    budget = _measure(findings, cert, "budget")
    if claimed is None or budget is None:
        return AuditReport("malformed", tuple(findings), tuple(warnings))

    # 3. rebuild the plan (this re-runs every constructor check, including sympy's)
    refuted: list[str] = []
    try:
        plan = decode(cert["plan"])
    except CertificateMalformed as exc:
        return _malformed(findings, f"the plan cannot be read: {exc}")
    except UnknownNodeKind as exc:
        findings.append(f"REFUTED: {exc}")
        return AuditReport("refuted", tuple(findings), tuple(warnings))
    except DPAlgError as exc:
        findings.append(f"REFUTED: this dpalg version refuses to rebuild the plan: {exc}")
        return AuditReport("refuted", tuple(findings), tuple(warnings))
    if not isinstance(plan, AbstractMeasurement):
        return _malformed(findings, "the certificate's plan is not a dpalg plan")
    findings.append("plan rebuilt from its parameters (every constructor check re-run)")

    # 4. re-derive
    try:
        derivation = derive(plan)
    except Unsupported as exc:
        findings.append(f"REFUTED: {exc}")
        return AuditReport("refuted", tuple(findings), tuple(warnings))
    if stable_repr(repr(plan)) != cert["plan_repr"]:
        refuted.append("REFUTED: plan_repr does not describe the plan (it differs from the rebuilt plan's repr)")
    nb = plan.neighbouring
    expected_nb = {"unit": nb.unit, "relation": nb.relation, "description": nb.describe()}
    if cert["neighbouring"] != expected_nb:
        refuted.append(f"REFUTED: neighbouring {json.dumps(cert['neighbouring'])} differs from the plan's: {json.dumps(expected_nb)}")
    if derivation.cost != claimed or measure_to_json(derivation.cost) != cert["claimed_cost"]:
        refuted.append(f"REFUTED: claimed cost {claimed!r}, but the plan costs {derivation.cost!r}")
    else:
        findings.append(f"cost re-derived: {derivation.cost!r} equals the claim")
    diff = _first_difference(cert["derivation"], derivation_json(derivation))
    if diff is not None:
        refuted.append(f"REFUTED: the recorded derivation differs from the re-derived one at {diff}")
    else:
        findings.append("derivation re-derived node by node: identical")
    if type(claimed) is not type(budget) or not fits(claimed, budget):
        refuted.append(f"REFUTED: claimed cost {claimed!r} does not fit the recorded budget {budget!r}")
    else:
        findings.append(f"fits the recorded budget {budget!r}")

    # 5. symbolic checks, re-run by the rebuild above
    checks = symbolic_check_records(derivation)
    if cert["symbolic_checks"] != checks:
        refuted.append("REFUTED: the recorded symbolic checks differ from the re-run ones: "
                       f"recorded {json.dumps(cert['symbolic_checks'])}, re-run {json.dumps(checks)}")
    for rec in checks:
        assert isinstance(rec, dict)
        status, detail, where = rec["status"], rec["detail"], rec["path"]
        if status in ("unproven", "refuted"):
            line = f"symbolic check at {where} is {str(status).upper()}: {detail}"
            if strict or status == "refuted":
                refuted.append(f"REFUTED ({'strict' if status == 'unproven' else 'refuted check'}): {line}")
            else:
                warnings.append(line + " (accepted in non-strict mode; --strict refuses it)")
        elif status == "proven":
            findings.append(f"symbolic check at {where}: proven")

    # 6. session spend
    session = cert["session"]
    if session is not None:
        assert isinstance(session, dict)
        try:
            total = measure_from_json(session.get("budget"))
            before = measure_from_json(session.get("spent_before"))
            after = measure_from_json(session.get("spent_after"))
        except (InvalidArgument, KeyError, ValueError, ZeroDivisionError):
            return _malformed(findings, "session must hold budget, spent_before and spent_after as encoded measures")
        if not (type(total) is type(before) is type(after) is type(claimed)):
            refuted.append("REFUTED: the session's measures differ from the plan's")
        elif add_measures(before, claimed) != after:
            refuted.append(f"REFUTED: session spent_after {after!r} != spent_before {before!r} + cost {claimed!r}")
        elif not fits(after, total) or total != budget:
            refuted.append(f"REFUTED: session spend {after!r} exceeds its budget {total!r} (or differs from the certificate's budget)")
        else:
            findings.append(f"session: spent {before!r} -> {after!r} of {total!r}")

    # 7. randomness
    rnd = cert["randomness"]
    assert isinstance(rnd, dict)
    if not isinstance(rnd.get("secure"), bool) or not isinstance(rnd.get("kind"), str):
        return _malformed(findings, "randomness must have a string kind and a boolean secure")
    if set(rnd) != {"kind", "secure"}:
        return _malformed(findings, "randomness must have exactly the fields kind and secure")
    if rnd["secure"] and "NOT SECURE" in str(rnd["kind"]).upper():
        refuted.append(f"REFUTED: randomness {rnd['kind']!r} is marked secure")
    if cert["warnings"] != certificate_warnings(derivation, bool(rnd["secure"])):
        refuted.append("REFUTED: the recorded warnings differ from the ones the plan and its randomness call for")
    if not rnd["secure"]:
        loud = f"!!! INSECURE RANDOMNESS ({rnd['kind']}): this release is NOT differentially private against anyone who knows the seed !!!"
        warnings.append(loud)
        if require_secure:
            refuted.append("REFUTED (--require-secure): " + loud)
    else:
        findings.append(f"randomness: {rnd['kind']} (secure)")

    findings.extend(refuted)
    return AuditReport("refuted" if refuted else "confirmed", tuple(findings), tuple(warnings))
