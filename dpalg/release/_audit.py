"""``dpalg audit``: re-derive a certificate's claim from its plan alone.

The order of the checks matters: first the document's shape, then its digest
(and signature), and only then is the plan rebuilt -- so a tampered document is
reported as such (exit 2) before anything in it is interpreted. A sealed
certificate whose claim does not follow from its plan is *refuted* (exit 1),
with the first node where the recorded derivation and the re-derived one differ.
A plan naming a node kind this version does not know is refuted too: unknown
nodes are never free.

What an audit can and cannot show. The digest only detects accidents: anyone
can edit a certificate and recompute it. What the audit re-derives from the
plan alone holds whoever wrote the document: the plan, its repr, its
neighbouring relation, the derivation, the claimed cost, the symbolic checks,
that the recorded budget covers the cost and that the session's arithmetic
adds up. Every other field -- the released ``value``, the ``randomness`` (and
so whether the release is private at all), the ``budget`` and ``session``
amounts, ``created``, ``dpalg_version``, the ``backend`` that computed the
release and the ``schema`` it read -- is the publisher's *claim*, which
only a valid signature by a key the auditor trusts (``public_key``) can vouch
for. So an audit without such a signature ends ``"cost_confirmed"`` (exit 0)
and lists those fields as unverifiable claims, never plain ``"confirmed"``;
and ``require_secure`` needs the trusted signature (exit 2 without one),
because a relabelled ``randomness`` cannot be detected otherwise.

Format 2 records the public ``schema`` of the columns the plan read and the
choices releases made from it (``resolved``). The schema is a claim, but what
follows from it is not: the audit refutes a schema that does not list exactly
the columns the plan reads, and re-derives every ``resolved`` entry from the
plan and the recorded schema (:meth:`~dpalg.graph.AbstractPrimitive.schema_choice`),
refuting one that differs, is missing or is extra. So a certificate cannot say
``"integers"`` for a quantile whose recorded column is a float, and whoever
edits the schema to match must claim a type the signature (if any) does not
cover. A format 1 certificate has neither field and is audited as before.
"""

from __future__ import annotations

import datetime
import hmac
import json
import re
from collections.abc import Mapping
from typing import Literal, final

import attrs

from dpalg._errors import DPAlgError, InvalidArgument
from dpalg.graph._tight import TIGHT_RULE, tighten
from dpalg.graph._accountant import add_measures, derive, fits
from dpalg.graph._derivation import Derivation, measure_from_json, measure_to_json
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._schema import read_columns, schema_choices
from dpalg.data._expr import legacy_text
from dpalg.data._schema import COLUMN_KINDS
from dpalg.measures import Measure
from dpalg.measures._display import short_measure
from dpalg.release._certificate import (
    CERTIFICATE_FORMAT,
    CERTIFICATE_FORMATS,
    FORMAT_1,
    certificate_digest,
    certificate_warnings,
    derivation_json,
    library_version,
    symbolic_check_records,
    verify_signature,
)
from dpalg.release._serialize import JSON, CertificateMalformed, UnknownNodeKind, decode, stable_repr
from dpalg.release._shown import shown

__all__ = ["AuditReport", "MAX_CERTIFICATE_BYTES", "MAX_JSON_DEPTH", "audit_certificate", "parse_certificate"]

Status = Literal["confirmed", "cost_confirmed", "refuted", "malformed", "unverifiable"]
_EXIT: dict[Status, int] = {"confirmed": 0, "cost_confirmed": 0, "refuted": 1, "malformed": 2, "unverifiable": 2}

MAX_JSON_DEPTH = 64
MAX_CERTIFICATE_BYTES = 16 * 1024 * 1024

# re-derived from the plan: they hold whoever wrote the document
VERIFIED_FIELDS = ("format", "plan", "plan_repr", "neighbouring", "claimed_cost", "derivation", "symbolic_checks", "resolved")
# the publisher's word: only a signature by a trusted key vouches for them
CLAIMED_FIELDS = ("value", "randomness", "budget", "session", "created", "dpalg_version", "warnings", "backend", "schema")
_CLAIMS_TEXT = (
    "value (the released numbers), randomness (its kind and whether it was secure, hence the seeded-randomness warning), "
    "budget (only budget >= cost is checked), session (the spend; only its arithmetic is checked), created, dpalg_version, "
    "backend (when recorded), schema (the column types the plan read, format 2; only that it lists the plan's columns is checked, "
    "and the resolved choices are re-derived from it)"
)

# field -> JSON types it may have (schema v1, docs/certificates.md)
_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (str,), "dpalg_version": (str,), "created": (str,), "plan": (dict,), "plan_repr": (str,),
    "neighbouring": (dict,), "claimed_cost": (dict,), "budget": (dict,), "derivation": (dict,),
    "symbolic_checks": (list,), "randomness": (dict,), "warnings": (list,), "session": (dict, type(None)),
    "value": (dict, list, str, int, float, bool, type(None)), "digest": (dict,),
}  # fmt: skip
# optional: "signature"; "backend" was added to version 1 later, so a certificate made before has none
_OPTIONAL = {"signature": (dict,), "backend": (dict,)}
# format 2: version 1's fields plus these, required
_V2_FIELDS: dict[str, tuple[type, ...]] = {"schema": (list,), "resolved": (list,)}
_MAX_BACKEND_ENTRIES = 16


@final
@attrs.frozen
class AuditReport:
    """The outcome of :func:`audit_certificate`.

    Attributes:
        status: ``"confirmed"`` (exit 0: every re-derivable claim re-derived and
            every other field signed by the trusted key), ``"cost_confirmed"``
            (exit 0: the plan and its cost re-derive, but nothing vouches for
            the fields in ``unverifiable``), ``"refuted"`` (exit 1),
            ``"malformed"`` (exit 2: unreadable, incomplete or tampered) or
            ``"unverifiable"`` (exit 2: ``require_secure`` without a trusted
            signature).
        findings: one line per check, in order; refutations start with ``REFUTED``.
        warnings: loud warnings (seeded randomness, unproven checks, version).
        unverifiable: the fields that are unverifiable claims (empty when a
            trusted signature covers them, or when the audit did not get that far).
        signature: the signature check's status (``"absent"``, ``"valid"``,
            ``"invalid"``, ``"unverifiable"``), or ``None`` before that check.
    """

    status: Status
    findings: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    unverifiable: tuple[str, ...] = ()
    signature: str | None = None

    @property
    def exit_code(self) -> int:
        """0 confirmed (fully or cost only), 1 refuted, 2 malformed, tampered or unverifiable."""
        return _EXIT[self.status]

    @property
    def confirmed(self) -> bool:
        """Whether *every* field was confirmed: re-derived, or signed by the trusted key."""
        return self.status == "confirmed"

    @property
    def passed(self) -> bool:
        """Whether the audit exits 0 (``"confirmed"`` or ``"cost_confirmed"``)."""
        return self.exit_code == 0

    @property
    def verdict(self) -> str:
        """The one-line verdict ``dpalg audit`` prints last, naming what was and was not verified."""
        if self.status == "cost_confirmed":
            return (
                "CONFIRMED (COST ONLY): the plan, its derivation and its cost re-derive, but no trusted signature covers the rest, "
                f"so these fields are UNVERIFIABLE CLAIMS (anyone can edit them and recompute the digest): {_CLAIMS_TEXT}"
            )
        if self.status == "confirmed":
            return "CONFIRMED: the plan and its cost re-derive, and every other field is signed by the trusted key"
        return self.status.upper()

    def to_json(self) -> dict[str, JSON]:
        """A JSON-ready summary."""
        return {
            "status": self.status, "exit_code": self.exit_code, "verdict": self.verdict, "signature": self.signature,
            "verified_fields": list(VERIFIED_FIELDS) if self.passed else [],
            "unverifiable_claims": list(self.unverifiable),
            "findings": list(self.findings), "warnings": list(self.warnings),
        }  # fmt: skip


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[{]+|[\]}]+")


def _text_too_deep(text: str, limit: int) -> bool:
    """Whether JSON text nests more than ``limit`` containers (brackets inside strings do not count)."""
    depth = 0
    for run in _BRACKETS.finditer(_JSON_STRING.sub('""', text)):
        piece = run.group()
        if piece[0] in "[{":
            depth += len(piece)
            if depth > limit:
                return True
        else:
            depth -= len(piece)
    return False


def _object_too_deep(obj: object, limit: int) -> bool:
    """Whether a parsed document nests more than ``limit`` containers (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: list[object] = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple)))
    return False


def _no_constants(name: str) -> object:
    raise CertificateMalformed("certificate", f"{name} is not JSON")


def parse_certificate(data: bytes | str) -> object:
    """Parse a certificate's JSON text, refusing what could exhaust the process first.

    Before :func:`json.loads` runs, a text larger than
    :data:`MAX_CERTIFICATE_BYTES` or nesting more than :data:`MAX_JSON_DEPTH`
    containers is refused (a deep document would otherwise end in a
    ``RecursionError``); ``NaN`` and ``Infinity`` are not JSON and are refused too.

    Raises:
        CertificateMalformed: for all of these and for text that is not JSON.

    Examples:
        >>> parse_certificate('{"a": [1, 2]}')
        {'a': [1, 2]}
        >>> parse_certificate("[" * 100_000 + "]" * 100_000)
        Traceback (most recent call last):
        ...
        dpalg.release._serialize.CertificateMalformed: certificate: JSON nested more than 64 levels deep
    """
    size = len(data)
    if size > MAX_CERTIFICATE_BYTES:
        raise CertificateMalformed("certificate", f"{size} bytes is larger than the limit of {MAX_CERTIFICATE_BYTES}")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CertificateMalformed("certificate", "not UTF-8 text") from None
    else:
        text = data
    if _text_too_deep(text, MAX_JSON_DEPTH):
        raise CertificateMalformed("certificate", f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise CertificateMalformed("certificate", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer literal beyond Python's digit limit
        if isinstance(exc, CertificateMalformed):
            raise
        raise CertificateMalformed("certificate", f"not readable JSON ({type(exc).__name__})") from None


def _clip(text: str, limit: int = 300) -> str:
    """Recorded text quoted in a finding: cut so that a hostile document cannot flood the report, and
    with every non-printable character escaped so that it cannot rewrite the terminal (:func:`shown`)."""
    return shown(text, limit)


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
        return f"node {_clip(where, 200)}: the number of children differs"
    for r, d in zip(rk, dk):
        diff = _first_difference(r, d, where)
        if diff is not None:
            return diff
    for key in ("path", "node", "rule", "inputs", "cost", "notes", "combine"):
        if recorded.get(key) != derived.get(key):
            return (
                f"node {_clip(where, 200)}: {key} differs: recorded {_clip(json.dumps(recorded.get(key), sort_keys=True, ensure_ascii=False))}, "
                f"re-derived {_clip(json.dumps(derived.get(key), sort_keys=True, ensure_ascii=False))}"
            )
    extra = set(recorded) - {"path", "node", "rule", "inputs", "cost", "notes", "combine", "children"}
    if extra:
        return f"node {_clip(where, 200)}: unexpected keys {_clip(repr(sorted(extra)), 200)}"
    return None


def _backend_problem(backend: object) -> str | None:
    """What is wrong with a recorded ``backend`` field (``None``: well formed). Never quotes its content."""
    if not isinstance(backend, dict) or set(backend) != {"name", "versions"}:
        return "must be an object with exactly the fields name and versions"
    name, versions = backend["name"], backend["versions"]
    if not isinstance(name, str) or not name:
        return "name must be a non-empty string"
    if not isinstance(versions, dict) or len(versions) > _MAX_BACKEND_ENTRIES:
        return f"versions must be an object of at most {_MAX_BACKEND_ENTRIES} entries"
    if not all(isinstance(v, str) for v in versions.values()):
        return "versions must map package names to version strings"
    return None


def _describe_backend(backend: Mapping[str, JSON]) -> str:
    versions = backend["versions"]
    assert isinstance(versions, dict)
    listed = ", ".join(f"{_clip(str(k), 40)} {_clip(str(v), 40)}" for k, v in sorted(versions.items()))
    return f"{_clip(str(backend['name']), 40)} ({listed or 'no versions recorded'})"


def _schema_problem(schema: object) -> str | None:
    """What is wrong with a recorded ``schema`` field's shape (``None``: well formed). Never quotes its content."""
    assert isinstance(schema, list)
    names: list[str] = []
    for entry in schema:
        if not isinstance(entry, dict) or set(entry) != {"column", "type"}:
            return "schema must be a list of objects with exactly the fields column and type"
        name, kind = entry["column"], entry["type"]
        if not isinstance(name, str) or not name:
            return "schema: column must be a non-empty string"
        if kind not in COLUMN_KINDS:
            return f"schema: type must be one of {list(COLUMN_KINDS)}"
        names.append(name)
    if any(a >= b for a, b in zip(names, names[1:])):
        return "schema must be sorted by column name, each column once"
    return None


def _resolved_problem(resolved: object) -> str | None:
    """What is wrong with a recorded ``resolved`` field's shape (``None``: well formed). Never quotes its content."""
    assert isinstance(resolved, list)
    for entry in resolved:
        if not isinstance(entry, dict) or set(entry) != {"path", "choice"} or not all(isinstance(v, str) for v in entry.values()):
            return "resolved must be a list of objects with exactly the string fields path and choice"
    return None


def _check_schema(findings: list[str], plan: object, derivation: Derivation, cert: Mapping[str, JSON], trusted: bool) -> list[str]:
    """Format 2: the recorded schema lists exactly the columns the plan reads, and every ``resolved`` entry
    re-derives from the plan and that schema. Returns the refutations; adds a finding per check that passes."""
    schema = cert["schema"]
    assert isinstance(schema, list)
    kinds = {str(e["column"]): str(e["type"]) for e in schema if isinstance(e, dict)}
    reads = read_columns(plan)
    missing = [name for name in reads if name not in kinds]
    extra = sorted(set(kinds) - set(reads))
    refuted: list[str] = []
    if missing:
        refuted.append(f"REFUTED: the schema does not record the type of {_clip(repr(missing), 200)}, which the plan reads")
    if extra:
        refuted.append(f"REFUTED: the schema records {_clip(repr(extra), 200)}, which the plan does not read")
    if refuted:
        return refuted
    shown = ", ".join(f"{_clip(repr(name), 60)} {kind}" for name, kind in sorted(kinds.items()))
    findings.append(f"schema: {shown or 'no column'}{'' if trusted else ' (as claimed)'}; it lists exactly the columns the plan reads")
    derived = schema_choices(derivation, kinds)
    recorded = cert["resolved"]
    assert isinstance(recorded, list)
    recorded_at = {str(e["path"]): str(e["choice"]) for e in recorded if isinstance(e, dict)}
    derived_at = {path: choice for path, choice in derived}
    for path, choice in derived:
        if path not in recorded_at:
            refuted.append(f"REFUTED: resolved has no entry for {_clip(path, 200)}: the plan and the recorded schema give {choice.describe()}")
        elif recorded_at[path] != choice.choice:
            refuted.append(
                f"REFUTED: resolved at {_clip(path, 200)} is {_clip(repr(recorded_at[path]), 80)}, but the plan and the recorded schema give "
                f"{choice.describe()}"
            )
    for path in recorded_at:
        if path not in derived_at:
            refuted.append(f"REFUTED: resolved has an entry for {_clip(path, 200)}, but no node there chooses from the schema")
    if not refuted and recorded != [{"path": path, "choice": choice.choice} for path, choice in derived]:
        refuted.append("REFUTED: resolved lists its entries more than once or out of the derivation's order")
    if not refuted:
        findings.extend(f"resolved at {_clip(path, 200)}: {choice.describe()} (re-derived from the recorded schema)" for path, choice in derived)
    return refuted


def _note_unrecorded_choices(findings: list[str], plan: object, derivation: Derivation) -> None:
    """Format 1 records no schema: name the nodes whose choice from it cannot be re-derived."""
    unknown = {name: "object" for name in read_columns(plan)}  # any type: only which nodes choose matters here
    paths = [path for path, _ in schema_choices(derivation, unknown)]
    if paths:
        findings.append(
            f"format {FORMAT_1!r} records no schema: what {_clip(', '.join(paths), 300)} chose from the column types "
            "(e.g. integer or grid candidates) is not recorded and not re-derived"
        )


def _measure(findings: list[str], cert: Mapping[str, object], field: str) -> Measure | None:
    try:
        return measure_from_json(cert.get(field))
    except InvalidArgument as exc:
        findings.append(f"MALFORMED: {field} is not an encoded privacy measure: {_clip(str(exc), 200)}")
        return None
    except (KeyError, ValueError, ZeroDivisionError):
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
        require_secure: refute a release made with seeded (insecure) randomness,
            and demand a valid signature by ``public_key`` (``"unverifiable"``,
            exit 2, without one): without it the randomness is only a claim.
        public_key: when given (32 raw bytes), require a valid Ed25519 signature
            by it; only then are the fields the plan cannot re-derive vouched for.

    Returns:
        An :class:`AuditReport`; its ``exit_code`` is what ``dpalg audit`` returns.
    """
    findings: list[str] = []
    warnings: list[str] = []
    # 1. shape
    if not isinstance(certificate, Mapping):
        return _malformed(findings, "a certificate is a JSON object")
    if _object_too_deep(certificate, MAX_JSON_DEPTH):
        return _malformed(findings, f"the certificate nests more than {MAX_JSON_DEPTH} levels deep")
    if certificate.get("format") not in CERTIFICATE_FORMATS:
        return _malformed(findings, f"format is {_clip(repr(certificate.get('format')), 80)}; this dpalg reads {' and '.join(map(repr, CERTIFICATE_FORMATS))}")
    version2 = certificate.get("format") == CERTIFICATE_FORMAT
    required = {**_FIELDS, **_V2_FIELDS} if version2 else _FIELDS
    for name, types in required.items():
        if name not in certificate:
            return _malformed(findings, f"missing field {name!r}")
        if not isinstance(certificate[name], types) or (isinstance(certificate[name], bool) and bool not in types and int in types):
            return _malformed(findings, f"field {name!r} has the wrong type {type(certificate[name]).__name__}")
    extra = set(certificate) - set(required) - set(_OPTIONAL)
    if extra:
        return _malformed(findings, f"unknown fields {_clip(repr(sorted(str(k) for k in extra)), 200)}")
    if "backend" in certificate:
        backend_problem = _backend_problem(certificate["backend"])
        if backend_problem is not None:
            return _malformed(findings, f"backend {backend_problem}")
    if version2:
        shape_problem = _schema_problem(certificate["schema"]) or _resolved_problem(certificate["resolved"])
        if shape_problem is not None:
            return _malformed(findings, shape_problem)
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
    trusted = sig.status == "valid" and public_key is not None
    if sig.status == "valid" and not trusted:
        findings.append(
            f"signature: {sig.detail}, but no trusted key was given (--public-key): anyone can sign with a key of their own, "
            "so it vouches for nothing until you check that key"
        )
    else:
        findings.append(f"signature: {sig.detail}")
    if sig.status == "unverifiable":
        warnings.append(sig.detail)
    backend = cert.get("backend")
    if isinstance(backend, dict):
        findings.append(f"backend: {_describe_backend(backend)}{'' if trusted else ' (as claimed)'}")
    try:
        created = datetime.datetime.fromisoformat(str(cert["created"]))
    except ValueError:
        return _malformed(findings, "created is not an ISO 8601 timestamp")
    if created.tzinfo is None:
        return _malformed(findings, "created must carry a time zone")
    if cert["dpalg_version"] != library_version():
        warnings.append(f"certificate made by dpalg {_clip(str(cert['dpalg_version']), 40)}, audited with dpalg {library_version()}")
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
    except DPAlgError as exc:  # Unsupported, or a node whose cost cannot be formed
        findings.append(f"REFUTED: {exc}")
        return AuditReport("refuted", tuple(findings), tuple(warnings))
    recorded = cert["derivation"]
    if isinstance(recorded, dict) and str(recorded.get("rule", "")).startswith(TIGHT_RULE):
        # check() certified the plan by a tighter rule than the sum: re-run the same rules at the recorded budget
        recorded_inputs = recorded.get("inputs")
        with_pld = isinstance(recorded_inputs, list) and any(isinstance(i, list) and i[:1] == ["epsilon_pld"] for i in recorded_inputs)
        with_sampled = isinstance(recorded_inputs, list) and any(isinstance(i, list) and i[:1] == ["pld_sampled"] for i in recorded_inputs)
        # a certificate written before the PLD rule, or before sampled PLDs: the rules it had
        tight = tighten(derivation, budget, pld=with_pld, sampled=with_sampled)
        if tight is None:
            findings.append(f"REFUTED: no composition rule fits the plan within the recorded budget {short_measure(budget, 'down')}")
            return AuditReport("refuted", tuple(findings), tuple(warnings))
        derivation = tight
        findings.append(f"composition re-derived by the tightest rule: {dict(tight.inputs).get('rule', '?')}")
    if stable_repr(repr(plan)) != cert["plan_repr"]:
        with legacy_text():  # a certificate written before expression reprs read back as Python (same plan, older text)
            legacy = stable_repr(repr(plan)) == cert["plan_repr"]
        if legacy:
            findings.append("plan_repr is in the older expression text (a comparison under &/| unparenthesised): the same plan")
        else:
            refuted.append("REFUTED: plan_repr does not describe the plan (it differs from the rebuilt plan's repr)")
    nb = plan.neighbouring
    expected_nb = {"unit": nb.unit, "relation": nb.relation, "description": nb.describe()}
    if cert["neighbouring"] != expected_nb:
        refuted.append(f"REFUTED: neighbouring {_clip(json.dumps(cert['neighbouring']))} differs from the plan's: {json.dumps(expected_nb)}")
    if derivation.cost != claimed or measure_to_json(derivation.cost) != cert["claimed_cost"]:
        refuted.append(f"REFUTED: claimed cost {short_measure(claimed, 'up')}, but the plan costs {short_measure(derivation.cost, 'up')}")
    else:
        findings.append(f"cost re-derived: {short_measure(derivation.cost, 'up')} equals the claim")
    diff = _first_difference(cert["derivation"], derivation_json(derivation))
    if diff is not None:
        refuted.append(f"REFUTED: the recorded derivation differs from the re-derived one at {diff}")
    else:
        findings.append("derivation re-derived node by node: identical")
    if version2:
        refuted.extend(_check_schema(findings, plan, derivation, cert, trusted))
    else:
        _note_unrecorded_choices(findings, plan, derivation)
    if type(claimed) is not type(budget) or not fits(claimed, budget):
        refuted.append(f"REFUTED: claimed cost {short_measure(claimed, 'up')} does not fit the recorded budget {short_measure(budget, 'down')}")
    else:
        findings.append(f"fits the recorded budget {short_measure(budget, 'down')}{'' if trusted else ' (the budget itself is a claim)'}")

    # 5. symbolic checks, re-run by the rebuild above
    checks = symbolic_check_records(derivation)
    if cert["symbolic_checks"] != checks:
        refuted.append("REFUTED: the recorded symbolic checks differ from the re-run ones: "
                       f"recorded {_clip(json.dumps(cert['symbolic_checks']))}, re-run {_clip(json.dumps(checks))}")
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
            refuted.append(
                f"REFUTED: session spent_after {short_measure(after)} != spent_before {short_measure(before)} + cost {short_measure(claimed)}"
            )
        elif not fits(after, total) or total != budget:
            refuted.append(
                f"REFUTED: session spend {short_measure(after)} exceeds its budget {short_measure(total, 'down')} "
                "(or differs from the certificate's budget)"
            )
        else:
            findings.append(f"session: spent {short_measure(before)} -> {short_measure(after)} of {short_measure(total, 'down')}")

    # 7. randomness
    rnd = cert["randomness"]
    assert isinstance(rnd, dict)
    if not isinstance(rnd.get("secure"), bool) or not isinstance(rnd.get("kind"), str):
        return _malformed(findings, "randomness must have a string kind and a boolean secure")
    if set(rnd) != {"kind", "secure"}:
        return _malformed(findings, "randomness must have exactly the fields kind and secure")
    if rnd["secure"] and "NOT SECURE" in str(rnd["kind"]).upper():
        refuted.append(f"REFUTED: randomness {_clip(repr(rnd['kind']), 80)} is marked secure")
    if cert["warnings"] != certificate_warnings(derivation, bool(rnd["secure"])):
        refuted.append("REFUTED: the recorded warnings differ from the ones the plan and its randomness call for")
    if not rnd["secure"]:
        loud = f"!!! INSECURE RANDOMNESS ({_clip(str(rnd['kind']), 80)}): this release is NOT differentially private against anyone who knows the seed !!!"
        warnings.append(loud)
        if require_secure:
            refuted.append("REFUTED (--require-secure): " + loud)
    else:
        findings.append(f"randomness: {_clip(str(rnd['kind']), 80)} (secure{'' if trusted else ', as claimed'})")

    findings.extend(refuted)
    if refuted:
        return AuditReport("refuted", tuple(findings), tuple(warnings), signature=sig.status)
    if trusted:
        return AuditReport("confirmed", tuple(findings), tuple(warnings), signature=sig.status)
    claims = tuple(name for name in CLAIMED_FIELDS if name in cert)
    if require_secure:
        findings.append(
            "UNVERIFIABLE (--require-secure): without a valid signature by a trusted key (--public-key) the randomness "
            f"{_clip(repr(rnd['kind']), 80)} is only a claim; anyone can relabel a seeded run as secure and recompute the digest"
        )
        return AuditReport("unverifiable", tuple(findings), tuple(warnings), claims, sig.status)
    return AuditReport("cost_confirmed", tuple(findings), tuple(warnings), claims, sig.status)
