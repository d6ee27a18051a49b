"""Releases, certificates, audits and the empirical auditor."""

from dpalg.release._audit import AuditReport, audit_certificate
from dpalg.release._certificate import (
    CERTIFICATE_FORMAT,
    SignatureCheck,
    certificate_digest,
    generate_signing_key,
    seal,
    sign_certificate,
    signing_available,
    verify_signature,
)
from dpalg.release._adversary import NeighbourPair, neighbour_candidates
from dpalg.release._auditor import MechanismAudit, audit_mechanism, audit_plan, format_table
from dpalg.release._empirical import EmpiricalAudit, empirical_epsilon_lower_bound, plot_audit
from dpalg.release._release import BOTTOM, Bottom, Release, SessionSpend
from dpalg.release._serialize import CallableStub, CertificateMalformed, UnknownNodeKind, canonical_json, decode, encode

__all__ = [
    "BOTTOM", "AuditReport", "Bottom", "CERTIFICATE_FORMAT", "CallableStub", "CertificateMalformed",
    "EmpiricalAudit", "MechanismAudit", "NeighbourPair", "Release", "SessionSpend", "SignatureCheck", "UnknownNodeKind",
    "audit_certificate", "audit_mechanism", "audit_plan", "canonical_json", "certificate_digest", "decode",
    "empirical_epsilon_lower_bound", "encode", "format_table", "generate_signing_key", "neighbour_candidates",
    "plot_audit", "seal", "sign_certificate", "signing_available", "verify_signature",
]  # fmt: skip
