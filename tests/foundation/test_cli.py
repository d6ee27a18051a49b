"""The dpalg command line: exit codes of check and audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpalg.cli import main, parse_budget
from dpalg import ApproxDP, PureDP, ZCDP

PLAN = """
from dpalg import Compose, PureDP, ZCDP, PureToZCDP
from dpalg.graph._testing import Fixed

plan = Compose(Fixed(PureDP("0.5")), Fixed(PureDP("0.25")))
zplan = Compose(PureToZCDP(plan), Fixed(ZCDP("0.1")))

def make_plan():
    return plan

not_a_plan = 42
"""


@pytest.fixture()
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "myplan.py"
    path.write_text(PLAN)
    return path


def test_budget_parsing() -> None:
    assert parse_budget("eps=1") == PureDP(1)
    assert parse_budget("eps=1,delta=1e-6") == ApproxDP(1, "0.000001")
    assert parse_budget("rho=0.5") == ZCDP("1/2")


def test_check_within_budget(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", f"{plan_file}:plan", "--budget", "eps=1"]) == 0
    out = capsys.readouterr().out
    assert "sequential composition" in out and "OK" in out
    assert main(["check", f"{plan_file}:make_plan", "--budget", "eps=0.75"]) == 0
    assert main(["check", f"{plan_file}:zplan", "--budget", "rho=1"]) == 0


def test_check_over_budget(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", f"{plan_file}:plan", "--budget", "eps=0.6"]) == 1
    out = capsys.readouterr().out
    assert "OVER BUDGET" in out and "Compose/1/Fixed" in out and "1/4" in out and "1/10" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "nope.py:plan", "--budget", "eps=1"],
        ["check", "PLACEHOLDER:missing", "--budget", "eps=1"],
        ["check", "PLACEHOLDER:not_a_plan", "--budget", "eps=1"],
        ["check", "PLACEHOLDER:plan", "--budget", "eps=-1"],
        ["check", "PLACEHOLDER:plan", "--budget", "delta=1"],
        ["check", "PLACEHOLDER:plan", "--budget", "rho=1"],  # measure mismatch
        ["check", "PLACEHOLDER", "--budget", "eps=1"],
        ["check", "PLACEHOLDER:plan"],
        ["frobnicate"],
        ["audit", "/nonexistent/cert.json"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], plan_file: Path) -> None:
    argv = [a.replace("PLACEHOLDER", str(plan_file)) for a in argv]
    assert main(argv) == 2


def test_module_spec() -> None:
    assert main(["check", "dpalg._demo:demo_plan", "--budget", "eps=3,delta=1e-6"]) == 0
    assert main(["check", "dpalg._demo:demo_plan", "--budget", "eps=2,delta=1e-6"]) == 1  # over budget at the PTR part


def _certificate(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    from dpalg import Compose
    from dpalg.graph._testing import Fixed

    plan = Compose(Fixed(PureDP("0.5")), Fixed(PureDP("0.25")))
    plan.check(PureDP(1))
    release = plan.run({"x": [1.0, 2.0]})
    cert_path = tmp_path / "cert.json"
    cert_path.write_text(release.certificate_json())
    return cert_path, json.loads(release.certificate_json())


def _write(path: Path, cert: dict[str, object], *, reseal: bool) -> None:
    from dpalg.release import seal

    path.write_text(json.dumps(seal(cert) if reseal else cert))  # type: ignore[arg-type]


def test_audit_confirms_and_refutes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert_path, cert = _certificate(tmp_path)
    assert main(["audit", str(cert_path)]) == 0
    assert cert["randomness"]["secure"] is True  # type: ignore[index]

    forged = dict(cert)
    forged["claimed_cost"] = {"measure": "PureDP", "epsilon": "1/2"}  # understated
    _write(cert_path, forged, reseal=False)
    assert main(["audit", str(cert_path)]) == 2  # the digest no longer matches: tampered
    assert "TAMPERED" in capsys.readouterr().out
    _write(cert_path, forged, reseal=True)  # a forger who recomputes the digest
    assert main(["audit", str(cert_path)]) == 1
    assert "REFUTED: claimed cost PureDP('1/2'), but the plan costs PureDP('3/4')" in capsys.readouterr().out

    tampered = json.loads(json.dumps(cert))
    tampered["plan"]["fields"]["children"]["$tuple"][1]["fields"]["loss"]["fields"]["epsilon"] = {"$fraction": "1/100"}
    _write(cert_path, tampered, reseal=True)
    assert main(["audit", str(cert_path)]) == 1
    out = capsys.readouterr().out
    assert "node Compose/1/Fixed" in out and "1/100" in out  # names the node that differs

    evil = json.loads(json.dumps(cert))
    evil["plan"] = {"$node": "os:system", "fields": {}}
    _write(cert_path, evil, reseal=True)
    assert main(["audit", str(cert_path)]) == 2

    cert_path.write_text("{not json")
    assert main(["audit", str(cert_path)]) == 2


def test_audit_refutes_unknown_node_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert_path, cert = _certificate(tmp_path)
    unknown = json.loads(json.dumps(cert))
    unknown["plan"]["fields"]["children"]["$tuple"][0]["$node"] = "dpalg.mechanisms._future:FreeLunch"
    _write(cert_path, unknown, reseal=True)
    assert main(["audit", str(cert_path)]) == 1
    out = capsys.readouterr().out
    assert "FreeLunch" in out and "never free" in out and "plan.Compose.children[0]" in out


def test_audit_json_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpalg import ApproxDP, Clip, Query
    from dpalg.mechanisms import LocalSensAtDistance, ProposeTest

    plan = ProposeTest(LocalSensAtDistance(Query.median("x") | Clip(0, 100), "k + sin(k) + 100"), bound=200, epsilon=1, delta="1e-6")
    plan.check(ApproxDP(2, "1e-6"))
    release = plan.run({"x": [1.0, 2.0, 3.0]}, rng=3)
    path = tmp_path / "ptr.json"
    path.write_text(release.certificate_json())
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert "UNPROVEN" in out and "INSECURE RANDOMNESS" in out
    assert main(["audit", str(path), "--strict"]) == 1
    assert main(["audit", str(path), "--require-secure"]) == 1
    capsys.readouterr()
    assert main(["audit", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert any("UNPROVEN" in w for w in report["warnings"]) and any("INSECURE" in w for w in report["warnings"])


def test_audit_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert_path, _ = _certificate(tmp_path)
    assert main(["audit", str(cert_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "cost_confirmed" and report["exit_code"] == 0  # unsigned: the cost only
    assert report["signature"] == "absent" and "UNVERIFIABLE CLAIMS" in report["verdict"]
    assert {"value", "randomness", "budget", "session", "created"} <= set(report["unverifiable_claims"])
    assert {"plan", "claimed_cost", "derivation"} <= set(report["verified_fields"])


STRICT_PLAN = """
from dpalg import Clip, Query
from dpalg.mechanisms import LocalSensAtDistance, ProposeTest

unproven = ProposeTest(LocalSensAtDistance(Query.median("x") | Clip(0, 100), "k + sin(k) + 100"), bound=200, epsilon=1, delta="1e-6")
proven = ProposeTest(LocalSensAtDistance(Query.median("x") | Clip(0, 100), "(upper - lower) / Max(n - k, 1)"), bound=200, epsilon=1, delta="1e-6")
"""


def test_check_strict_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "strictplan.py"
    path.write_text(STRICT_PLAN)
    assert main(["check", f"{path}:unproven", "--budget", "eps=2,delta=1e-6"]) == 0
    assert "WARNING: unproven symbolic check" in capsys.readouterr().out
    assert main(["check", f"{path}:unproven", "--budget", "eps=2,delta=1e-6", "--strict"]) == 1
    assert "REFUSED (--strict)" in capsys.readouterr().out
    assert main(["check", f"{path}:proven", "--budget", "eps=2,delta=1e-6", "--strict"]) == 0
    capsys.readouterr()

    assert main(["check", f"{path}:unproven", "--budget", "eps=2,delta=1e-6", "--strict", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "unproven" and doc["fits"] is True
    assert doc["symbolic_checks"][0]["status"] == "unproven"
    assert doc["derivation"]["rule"].startswith("propose-test-release")
    assert main(["check", f"{path}:proven", "--budget", "eps=1,delta=1e-6", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "over_budget" and doc["fits"] is False
    assert doc["failing_node"]["path"] == "ProposeTest" and doc["failing_node"]["required"]["epsilon"] == "2"
    assert main(["check", f"{path}:proven", "--budget", "eps=2,delta=1e-6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"] == {"measure": "ApproxDP", "epsilon": "2", "delta": "1/1000000"}


def test_signed_certificate_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cryptography")
    from dpalg.release import generate_signing_key, sign_certificate

    cert_path, cert = _certificate(tmp_path)
    private, public = generate_signing_key()
    signed = sign_certificate(cert, private)  # type: ignore[arg-type]
    cert_path.write_text(json.dumps(signed))
    assert main(["audit", str(cert_path), "--public-key", public.hex()]) == 0
    _, other = generate_signing_key()
    assert main(["audit", str(cert_path), "--public-key", other.hex()]) == 2
    signed["created"] = "2000-01-01T00:00:00+00:00"
    cert_path.write_text(json.dumps(signed))
    assert main(["audit", str(cert_path)]) == 2  # digest mismatch
    from dpalg.release import seal

    resealed = seal(signed)
    resealed["signature"] = json.loads(json.dumps(sign_certificate(cert, private)["signature"]))  # type: ignore[arg-type]
    cert_path.write_text(json.dumps(resealed))
    assert main(["audit", str(cert_path)]) == 2  # the old signature does not cover the new content
    assert "signature" in capsys.readouterr().out


def test_a_huge_exponent_budget_is_refused_fast(tmp_path: Path) -> None:
    # issue 14 §2: "1e999999999" used to hang (Fraction builds 10**999999999); the bound is in to_fraction
    import subprocess
    import sys
    import time

    path = tmp_path / "myplan.py"
    path.write_text(PLAN)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dpalg.cli", "check", f"{path}:plan", "--budget", "eps=1e999999999"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - start < 20  # interpreter start-up included
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--budget" in done.stderr, done.stderr


def test_budget_json_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``dpalg budget LEDGER --json | head`` stops without a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    from dpalg import Session

    ledger = tmp_path / "budget.db"
    session = Session.open(str(ledger), PureDP(1000))
    for i in range(40):  # more output than a pipe holds (64 KiB), so the reader closes it before dpalg is done
        session.charge(PureDP(1), label=f"charge {i} " + "x" * 4000)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = f'"{sys.executable}" -m dpalg.cli budget "{ledger}" --json | head -c 20'
    done = subprocess.run(command, shell=True, capture_output=True, text=True, env=env, timeout=120)
    assert len(done.stdout) == 20
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr[-500:]


def test_demo_prints_the_plan_as_a_tree_and_explains_the_shifted_inverse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--rows", "300", "--seed", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    plan_section = out.split("== plan ==", 1)[1].split("== derivation", 1)[0]
    lines = [line for line in plan_section.splitlines() if line.strip()]
    assert len(lines) > 10 and max(map(len, lines)) < 300  # an indented tree, not a 1,400-character repr
    assert lines[0].startswith("Compose") and lines[1].startswith("  0: ")
    assert "errs downwards by design" in out
