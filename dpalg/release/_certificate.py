"""Release certificates: building, sealing (SHA-256 digest) and optional Ed25519 signing.

The schema is documented field by field in ``docs/certificates.md``; its
version is the ``format`` field. New releases write ``"dpalg-certificate/2"``:
version 1 plus the public ``schema`` of the columns the plan read (recorded
before the charge) and the choices a release made from it (``resolved``), so
that an audit can re-derive which mechanism ran; the audit reads both. A digest only
detects accidental or naive edits (anyone can recompute it). ``dpalg audit``
re-derives what the plan determines (its cost, derivation, symbolic checks);
the other fields (the value, the randomness, the budget and session amounts,
the timestamp) are the publisher's claims, which only a signature by a key the
auditor trusts vouches for (:func:`sign_certificate`; see
:mod:`dpalg.release._audit`).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib
import re
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Literal, Protocol, cast, final

import attrs

from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data._dataset import BackendInfo
from dpalg.graph._derivation import Derivation, measure_to_json
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._schema import schema_choices
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.release._serialize import JSON, canonical_json, encode, stable_repr

__all__ = [
    "CERTIFICATE_FORMAT", "CERTIFICATE_FORMATS", "FORMAT_1", "CheckStatus", "resolved_json", "schema_json", "SignatureCheck", "backend_json", "build_certificate", "certificate_digest", "signing_available",
    "certificate_warnings", "classify_note", "derivation_json", "generate_signing_key", "library_version", "seal", "sign_certificate",
    "symbolic_check_records", "verify_signature",
]  # fmt: skip

#: version 1: no schema recorded (still read by the audit)
FORMAT_1 = "dpalg-certificate/1"
#: the format new releases write: version 1 plus ``schema`` and ``resolved``
CERTIFICATE_FORMAT = "dpalg-certificate/2"
#: every format this dpalg reads
CERTIFICATE_FORMATS = (FORMAT_1, CERTIFICATE_FORMAT)
CheckStatus = Literal["proven", "unproven", "refuted", "note"]
SEEDED_WARNING = (
    "NOT SECURE: this release used a seeded pseudo-random generator (for tests and examples only); "
    "anyone who knows or guesses the seed can remove the noise, so it is NOT differentially private"
)
_UNSIGNED = ("digest", "signature")


@functools.cache
def library_version() -> str:
    """The installed dpalg version (recorded in certificates; read once: parsing the metadata costs ~0.4 ms)."""
    try:
        return version("dpalg")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def classify_note(note: str) -> CheckStatus:
    """The status of a derivation note: a symbolic check's verdict, or a plain note.

    Fails closed: a note that says ``unproven`` is ``"unproven"`` and one that
    says ``refuted`` is ``"refuted"``, whatever else it says; only a note that
    says ``proven`` and neither of those is ``"proven"``.

    Examples:
        >>> classify_note("LS_k formula 'k': proven non-decreasing and non-negative in k (sympy)")
        'proven'
        >>> classify_note("WARNING: LS_k formula 'x' is UNPROVEN monotone (...)")
        'unproven'
    """
    low = note.lower()
    if "unproven" in low or "not proven" in low:
        return "unproven"
    if "refuted" in low:
        return "refuted"
    if "proven" in low:
        return "proven"
    return "note"


def derivation_json(derivation: Derivation) -> dict[str, JSON]:
    """The derivation as recorded in certificates: :meth:`Derivation.to_json` with stable reprs."""
    return _stable(derivation.to_json())


def _stable(node: dict[str, JSON]) -> dict[str, JSON]:
    children = node.get("children")
    return {
        **node,
        "node": stable_repr(str(node["node"])),
        "children": [_stable(c) for c in children if isinstance(c, dict)] if isinstance(children, list) else children,
    }


def symbolic_check_records(derivation: Derivation) -> list[JSON]:
    """One record per derivation note: ``{"path", "status", "detail"}`` in pre-order."""
    return [
        {"path": d.path, "status": classify_note(note), "detail": note}
        for d in derivation.walk()
        for note in d.notes
    ]


def certificate_warnings(derivation: Derivation, secure: bool) -> list[JSON]:
    """The loud warnings of a release: seeded randomness first, then unproven symbolic checks."""
    out: list[JSON] = [] if secure else [SEEDED_WARNING]
    for rec in symbolic_check_records(derivation):
        assert isinstance(rec, dict)
        if rec["status"] in ("unproven", "refuted"):
            out.append(f"symbolic check at {rec['path']} is {str(rec['status']).upper()}: {rec['detail']}")
    return out


def backend_json(backend: BackendInfo) -> dict[str, JSON]:
    """The certificate's ``backend`` field: ``{"name": ..., "versions": {package: version}}``.

    Examples:
        >>> backend_json(BackendInfo("polars", {"polars": "1.2.3", "numpy": "2.0.0"}))
        {'name': 'polars', 'versions': {'numpy': '2.0.0', 'polars': '1.2.3'}}
    """
    return {"name": backend.name, "versions": {package: v for package, v in backend.versions}}


def schema_json(schema: tuple[tuple[str, str], ...]) -> list[JSON]:
    """The certificate's ``schema`` field: ``[{"column": name, "type": kind}, ...]`` sorted by column name.

    Examples:
        >>> schema_json((("price", "int"), ("city", "str")))
        [{'column': 'city', 'type': 'str'}, {'column': 'price', 'type': 'int'}]
    """
    return [{"column": name, "type": kind} for name, kind in sorted(schema)]


def resolved_json(derivation: Derivation, kinds: Mapping[str, str]) -> list[JSON]:
    """The certificate's ``resolved`` field: ``[{"path": ..., "choice": ...}, ...]`` in derivation pre-order.

    One entry per primitive whose release chooses from the schema
    (:meth:`~dpalg.graph.AbstractPrimitive.schema_choice`), for ``kinds`` the
    recorded schema; ``dpalg audit`` re-derives the list the same way.
    """
    return [{"path": path, "choice": choice.choice} for path, choice in schema_choices(derivation, kinds)]


def build_certificate(
    plan: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP],
    derivation: Derivation,
    budget: Measure,
    *,
    kind: str,
    secure: bool,
    session: tuple[Measure, Measure, Measure] | None,
    value: JSON,
    backend: BackendInfo,
    schema: tuple[tuple[str, str], ...],
) -> dict[str, JSON]:
    """The sealed certificate of one release (see ``docs/certificates.md``).

    ``backend`` is the data's backend (:attr:`dpalg.data.Dataset.backend`): a
    fact of the release, so it is part of the digest, and a claim that only a
    signature vouches for (the audit checks its shape only). ``schema`` is the
    public schema of the columns the plan read, taken before the charge
    (:func:`dpalg.graph._schema.plan_schema`); it is recorded, and so are the
    choices the release made from it (``resolved``).
    """
    nb = plan.neighbouring
    session_json: JSON = None
    if session is not None:
        total, before, after = session
        session_json = {
            "budget": measure_to_json(total),
            "spent_before": measure_to_json(before),
            "spent_after": measure_to_json(after),
        }
    certificate: dict[str, JSON] = {
        "format": CERTIFICATE_FORMAT,
        "dpalg_version": library_version(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "plan": encode(plan),
        "plan_repr": stable_repr(repr(plan)),
        "neighbouring": {"unit": nb.unit, "relation": nb.relation, "description": nb.describe()},
        "claimed_cost": measure_to_json(derivation.cost),
        "budget": measure_to_json(budget),
        "derivation": derivation_json(derivation),
        "symbolic_checks": symbolic_check_records(derivation),
        "randomness": {"kind": kind, "secure": secure},
        "backend": backend_json(backend),
        "schema": schema_json(schema),
        "resolved": resolved_json(derivation, dict(schema)),
        "warnings": certificate_warnings(derivation, secure),
        "session": session_json,
        "value": value,
    }
    return seal(certificate)


def _unsigned_body(certificate: Mapping[str, JSON]) -> dict[str, JSON]:
    return {k: v for k, v in certificate.items() if k not in _UNSIGNED}


def certificate_digest(certificate: Mapping[str, JSON]) -> str:
    """SHA-256 (hex) of the canonical JSON of every field except ``digest`` and ``signature``."""
    return hashlib.sha256(canonical_json(_unsigned_body(certificate))).hexdigest()


def seal(certificate: Mapping[str, JSON]) -> dict[str, JSON]:
    """A copy of ``certificate`` with its ``digest`` (re)computed; drops any signature."""
    body = _unsigned_body(certificate)
    body["digest"] = {"algorithm": "sha256", "value": certificate_digest(body)}
    return body


def _signed_message(certificate: Mapping[str, JSON]) -> bytes:
    # the digest is part of what is signed; the signature itself is not. The prefix is the certificate's own
    # format (a version 1 certificate was signed under "dpalg-certificate/1"); anything else reads as the current one
    recorded = certificate.get("format")
    prefix = recorded if isinstance(recorded, str) and recorded in CERTIFICATE_FORMATS else CERTIFICATE_FORMAT
    return prefix.encode() + b"\n" + canonical_json({k: v for k, v in certificate.items() if k != "signature"})


class _PrivateKey(Protocol):
    def sign(self, data: bytes) -> bytes: ...

    def public_key(self) -> _PublicKey: ...

    def private_bytes_raw(self) -> bytes: ...


class _PublicKey(Protocol):
    def verify(self, signature: bytes, data: bytes) -> None: ...

    def public_bytes_raw(self) -> bytes: ...


class _Ed25519Module(Protocol):
    class Ed25519PrivateKey(Protocol):
        @classmethod
        def from_private_bytes(cls, data: bytes) -> _PrivateKey: ...

        @classmethod
        def generate(cls) -> _PrivateKey: ...

    class Ed25519PublicKey(Protocol):
        @classmethod
        def from_public_bytes(cls, data: bytes) -> _PublicKey: ...


def _ed25519() -> _Ed25519Module:
    """The optional ``cryptography`` backend (imported lazily; an extra: ``dpalg[sign]``)."""
    try:
        module = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ed25519")
    except ImportError:
        raise Unsupported("certificate signing needs the optional 'cryptography' package: pip install 'dpalg[sign]'") from None
    return cast(_Ed25519Module, module)


def signing_available() -> bool:
    """Whether the optional ``cryptography`` package is installed."""
    try:
        _ed25519()
    except Unsupported:
        return False
    return True


def generate_signing_key() -> tuple[bytes, bytes]:
    """A fresh Ed25519 key pair ``(private, public)``, 32 raw bytes each.

    Raises:
        Unsupported: without the optional ``cryptography`` package.
    """
    key = _ed25519().Ed25519PrivateKey.generate()
    return key.private_bytes_raw(), key.public_key().public_bytes_raw()


def _key_bytes(owner: str, field: str, key: bytes, size: int = 32) -> bytes:
    if not isinstance(key, bytes) or len(key) != size:
        raise InvalidArgument(owner, field, f"<{type(key).__name__} of length {len(key) if isinstance(key, bytes) else '?'}>", f"must be {size} raw bytes")
    return key


def sign_certificate(certificate: Mapping[str, JSON], private_key: bytes) -> dict[str, JSON]:
    """A copy of the (re-sealed) certificate with an Ed25519 ``signature`` field.

    The signature covers the canonical JSON of every field but ``signature``
    (so it covers the digest too) and records the public key.

    Raises:
        Unsupported: without the optional ``cryptography`` package.
        InvalidArgument: when the key is not 32 raw bytes.
    """
    key = _ed25519().Ed25519PrivateKey.from_private_bytes(_key_bytes("sign_certificate", "private_key", private_key))
    sealed = seal(certificate)
    signature = key.sign(_signed_message(sealed))
    sealed["signature"] = {
        "algorithm": "ed25519",
        "public_key": key.public_key().public_bytes_raw().hex(),
        "value": signature.hex(),
    }
    return sealed


@final
@attrs.frozen
class SignatureCheck:
    """The outcome of :func:`verify_signature`.

    Attributes:
        status: ``"absent"``, ``"valid"``, ``"invalid"`` or ``"unverifiable"``
            (``cryptography`` is not installed).
        public_key: the signer's public key (hex) as recorded, if any.
        detail: a sentence for the audit report.
    """

    status: Literal["absent", "valid", "invalid", "unverifiable"]
    public_key: str | None
    detail: str


def verify_signature(certificate: Mapping[str, JSON], public_key: bytes | None = None) -> SignatureCheck:
    """Check the certificate's Ed25519 signature, against ``public_key`` when given.

    A signature by another key than the expected one is ``"invalid"``; so is a
    missing signature when a key is expected.
    """
    sig = certificate.get("signature")
    expected = None if public_key is None else _key_bytes("verify_signature", "public_key", public_key).hex()
    if sig is None:
        if expected is not None:
            return SignatureCheck("invalid", None, "a signature by the expected key is required but the certificate is unsigned")
        return SignatureCheck("absent", None, "unsigned (the digest alone does not show who published it)")
    if not isinstance(sig, dict) or sig.get("algorithm") != "ed25519" or not isinstance(sig.get("public_key"), str) or not isinstance(sig.get("value"), str):
        return SignatureCheck("invalid", None, "the signature field is malformed (expected ed25519 with public_key and value in hex)")
    recorded = cast(str, sig["public_key"])
    if not re.fullmatch(r"[0-9a-f]{64}", recorded) or not re.fullmatch(r"[0-9a-f]{128}", cast(str, sig["value"])):
        return SignatureCheck("invalid", None, "the signature field is malformed (lowercase hex: a 32-byte key and a 64-byte signature)")
    if expected is not None and recorded.lower() != expected:
        return SignatureCheck("invalid", recorded, f"signed by key {recorded}, not by the expected key {expected}")
    try:
        backend = _ed25519()
    except Unsupported:
        return SignatureCheck("unverifiable", recorded, "signed, but 'cryptography' is not installed: pip install 'dpalg[sign]' to verify")
    try:
        key = backend.Ed25519PublicKey.from_public_bytes(bytes.fromhex(recorded))
        key.verify(bytes.fromhex(cast(str, sig["value"])), _signed_message(certificate))
    except Exception:  # noqa: BLE001 - cryptography raises InvalidSignature / ValueError
        return SignatureCheck("invalid", recorded, "the Ed25519 signature does not match the certificate: tampered")
    return SignatureCheck("valid", recorded, f"Ed25519 signature valid (public key {recorded})")
