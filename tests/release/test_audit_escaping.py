"""``dpalg audit`` and ``dpalg report`` show every claimed string escaped.

A certificate is a document anyone can write, and its digest anyone can
recompute. A resealed, unsigned certificate whose claimed strings (the backend
name and versions, the randomness kind, the dpalg version) carry terminal
escape sequences must not be able to rewrite what the audit prints: erase its
real lines, move the cursor onto them, fake a "signature ... VALID" line, or
reorder text with bidirectional overrides. Every non-printable character reaches
the terminal as ``\\uXXXX``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from dpalg import Clip, Compose, PureDP, Query
from dpalg.cli import main
from dpalg.mechanisms import Laplace
from dpalg.release import audit_certificate
from dpalg.release._shown import shown

#: what a forger puts in a claimed string: cursor up, erase line, carriage return, a C1 CSI, a
#: right-to-left override, a line separator, and a newline that would start a fake line
_HOSTILE = "\u202e\x9b2K\u2028\x1b[2A\x1b[2K\r\nCONFIRMED signature: ed25519 VALID, signed by the trusted key"
_RAW = ("\x1b", "\x9b", "\u202e", "\u2028", "\r")


def _reseal(cert: dict[str, object]) -> dict[str, object]:
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return {**body, "digest": {"algorithm": "sha256", "value": hashlib.sha256(canonical).hexdigest()}}


def _hostile_certificate() -> dict[str, object]:
    plan = Compose(Laplace(Query.count(), epsilon="1/2"), Laplace(Query.mean("x") | Clip(0, 10), epsilon="1/4"))
    plan.check(PureDP(1))
    cert: dict[str, object] = json.loads(plan.run({"x": np.arange(20.0)}).certificate_json())
    cert["backend"] = {"name": _HOSTILE, "versions": {"numpy" + _HOSTILE: _HOSTILE}}
    cert["randomness"] = {"kind": "os-csprng" + _HOSTILE, "secure": True}
    cert["dpalg_version"] = "0.1.0" + _HOSTILE
    return _reseal(cert)


def _audit_output(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(_hostile_certificate()))
    capsys.readouterr()
    code = main(["audit", str(path), *args])
    return code, capsys.readouterr().out


def test_the_audit_text_output_escapes_every_claimed_string(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _audit_output(tmp_path, capsys)
    assert code == 0  # the cost still re-derives; the claims stay claims
    for raw in _RAW:
        assert raw not in out, repr(raw)
    lines = out.splitlines()
    # no claimed newline starts a line of its own: every line that mentions the forged text is one of the
    # audit's own lines, which quote it escaped
    assert not any(line.startswith("CONFIRMED") for line in lines[:-1])
    assert lines[-1].startswith("CONFIRMED (COST ONLY)")
    assert "\\u001b[2A" in out and "\\u202e" in out and "\\u000a" in out


def test_the_audit_json_output_is_ascii(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _audit_output(tmp_path, capsys, "--json")
    assert code == 0 and out.isascii()
    assert json.loads(out)["status"] == "cost_confirmed"


def test_the_report_findings_are_escaped_too() -> None:
    report = audit_certificate(_hostile_certificate())
    for line in (*report.findings, *report.warnings, report.verdict):
        assert line.isprintable(), repr(line)


def test_report_command_escapes_claimed_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(_hostile_certificate()))
    capsys.readouterr()
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    for raw in _RAW:
        assert raw not in out, repr(raw)


@pytest.mark.parametrize("text", ["plain", "Zürich ε̂ ⟂", "", "a\tb"])
def test_shown_leaves_printable_text_alone_and_escapes_the_rest(text: str) -> None:
    out = shown(text, None)
    assert out.isprintable()
    if text.isprintable():
        assert out == text
    else:
        assert out == text.replace("\t", "\\u0009")
