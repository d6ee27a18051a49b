"""What the command-line commands share, below :mod:`dpalg.cli` and :mod:`dpalg._demo`.

The usage error (exit code 2) and the audit of a certificate as the lines the
commands print; ``dpalg demo`` audits the certificate it writes exactly as
``dpalg audit`` does.
"""

from __future__ import annotations

from dpalg.release._audit import audit_certificate as _audit

__all__ = ["UsageError", "audit_certificate"]


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


def audit_certificate(cert: dict[str, object]) -> tuple[bool, list[str]]:
    """Re-derive a certificate's claim from its plan alone (see :func:`dpalg.release.audit_certificate`).

    Returns:
        ``(passed, findings)``: whether the audit exits 0 (``"confirmed"`` or,
        unsigned, ``"cost_confirmed"``), and the findings with the warnings and
        the verdict line (which names the unverifiable claims) at the end.
    """
    report = _audit(cert)
    return report.passed, [*report.findings, *(f"WARNING: {w}" for w in report.warnings), report.verdict]
