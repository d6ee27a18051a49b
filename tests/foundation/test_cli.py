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


def test_audit_confirms_and_refutes(tmp_path: Path) -> None:
    from dpalg import Compose
    from dpalg.graph._testing import Fixed

    plan = Compose(Fixed(PureDP("0.5")), Fixed(PureDP("0.25")))
    plan.check(PureDP(1))
    release = plan.run({"x": [1.0, 2.0]})
    cert_path = tmp_path / "cert.json"
    cert_path.write_text(release.certificate_json())
    assert main(["audit", str(cert_path)]) == 0
    cert = json.loads(cert_path.read_text())
    assert cert["randomness"]["secure"] is True

    forged = dict(cert)
    forged["claimed_cost"] = {"measure": "PureDP", "epsilon": "1/2"}  # understated
    cert_path.write_text(json.dumps(forged))
    assert main(["audit", str(cert_path)]) == 1

    tampered = json.loads(release.certificate_json())
    tampered["plan"]["fields"]["children"]["$tuple"][0]["fields"]["loss"]["fields"]["epsilon"] = {"$fraction": "1/100"}
    cert_path.write_text(json.dumps(tampered))
    assert main(["audit", str(cert_path)]) == 1

    evil = json.loads(release.certificate_json())
    evil["plan"] = {"$node": "os:system", "fields": {}}
    cert_path.write_text(json.dumps(evil))
    assert main(["audit", str(cert_path)]) == 2
