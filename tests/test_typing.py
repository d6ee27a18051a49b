"""typing_tests/: snippets mypy --strict must reject (and clean ones it must accept)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted((ROOT / "typing_tests").glob("*.py"))
_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<msg>.*)$")


def _expectations(path: Path) -> tuple[dict[int, str], dict[int, str]]:
    errors: dict[int, str] = {}
    reveals: dict[int, str] = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if "# E: " in text:
            errors[number] = text.split("# E: ", 1)[1].strip()
        if "# R: " in text:
            reveals[number] = text.split("# R: ", 1)[1].strip()
    return errors, reveals


def test_there_are_cases() -> None:
    assert len(CASES) >= 4
    assert any(not p.name.startswith("clean") for p in CASES)


@pytest.fixture(scope="module")
def mypy_output() -> tuple[str, str]:
    stdout, stderr, _ = api.run(["--strict", "--show-error-codes", "--no-error-summary", *map(str, CASES)])
    return stdout, stderr


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_typing_case(path: Path, mypy_output: tuple[str, str]) -> None:
    stdout, stderr = mypy_output
    found: dict[int, list[str]] = {}
    for raw in stdout.splitlines():
        match = _LINE.match(raw)
        if match and Path(match["file"]).name == path.name:
            found.setdefault(int(match["line"]), []).append(f"{match['kind']}: {match['msg']}")
    errors, reveals = _expectations(path)
    if path.name.startswith("clean"):
        assert not errors
    else:
        assert errors, f"{path.name} has no '# E:' expectations"
    for line, expected in errors.items():
        messages = found.get(line) or []
        assert any(m.startswith("error:") and expected in m for m in messages), f"{path.name}:{line}: expected {expected!r}, got {messages}"
    for line, expected in reveals.items():
        messages = found.get(line) or []
        assert any("Revealed type" in m and expected in m for m in messages), f"{path.name}:{line}: expected {expected!r}, got {messages}"
    unexpected = [
        (line, m) for line, ms in found.items() for m in ms if m.startswith("error:") and line not in errors
    ]
    assert not unexpected, f"unexpected errors in {path.name}: {unexpected}\n{stderr}"
