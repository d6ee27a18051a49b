"""The documentation is complete and its code runs.

* every public name (``__all__`` of ``dpalg`` and its public subpackages) has a
  docstring and appears in ``README.md`` or a page under ``docs/``;
* ``docs/api.md`` names only things that exist;
* every ``>>>`` example in those pages passes (doctest, ELLIPSIS);
* every other fenced ``python`` block runs: the blocks of one page are executed in
  order in one namespace, in a temporary directory. A block whose first line is
  ``# NAME.py ...`` is also written to ``NAME.py`` there, so that later blocks and
  commands can import it. Mark an illustrative fragment with the info string
  ```` ```python fragment ```` (or a long measurement with ```` ```python slow ````)
  to exclude it;
* the commands of ``docs/quickstart.md`` work, with the exit codes it states;
* relative links between the pages point at files that exist.

pytest's own ``--doctest-glob='*.md'`` only collects files under the testpaths
(``tests``, ``dpalg``), so the pages under ``docs/`` are run from here.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
MODULES = [
    "dpalg", "dpalg.mechanisms", "dpalg.sensitivity", "dpalg.noise", "dpalg.data",
    "dpalg.measures", "dpalg.graph", "dpalg.queries", "dpalg.release",
]  # fmt: skip

def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _public() -> Iterator[tuple[str, str, object]]:
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            yield module_name, name, getattr(module, name)


@dataclass(frozen=True)
class Block:
    info: str
    body: str
    line: int

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text (``` fences at column 0)."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(.*)$", lines[i])
        if opening:
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and not re.match(r"^```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            out.append(Block(opening.group(1).strip(), "\n".join(body) + "\n", start + 1))
        i += 1
    return out


def _runnable(block: Block) -> bool:
    marks = set(block.info.split()[1:])
    return block.lang == "python" and not marks & {"fragment", "slow"} and ">>>" not in block.body


# --- completeness --------------------------------------------------------------------


def test_every_public_name_has_a_docstring() -> None:
    missing = [
        f"{m}.{n}" for m, n, obj in _public()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip()
    ]  # fmt: skip
    assert not missing, missing


def test_every_public_name_appears_in_the_docs() -> None:
    text = "\n".join(p.read_text() for p in PAGES)
    missing = sorted({
        f"{m}.{n}" for m, n, _ in _public()
        if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", text)
    })  # fmt: skip
    assert not missing, f"public names not mentioned in README.md or docs/: {missing} (add them to docs/api.md)"


def test_api_index_names_exist() -> None:
    known = {n for _, n, _ in _public()}
    listed: set[str] = set()
    for line in (ROOT / "docs" / "api.md").read_text().splitlines():
        if line.startswith("| `"):
            first_cell = re.split(r"(?<!\\)\|", line)[1]
            listed |= set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", first_cell))
    assert len(listed) > 50
    stale = sorted(listed - known)
    assert not stale, f"docs/api.md lists names that are not public: {stale}"


def test_relative_links_resolve() -> None:
    broken: list[str] = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(ROOT):
                broken.append(f"{_rel(page)} -> {target} (outside the repository)")
            elif not resolved.exists():
                broken.append(f"{_rel(page)} -> {target}")
    assert not broken, broken



def test_pages_cite_what_the_repository_holds() -> None:
    """Prose says what the code does: no issue numbers, no sections of a design file the repository lacks."""
    found = [
        f"{_rel(page)}:{i}: {m.group(0)}"
        for page in PAGES
        for i, line in enumerate(page.read_text().splitlines(), 1)
        for m in re.finditer(r"\b[Ii]ssues? #?\d+|\bDESIGN(?:\.md)? §|\bSTYLE\.md\b", line)
    ]
    assert not found, found


def test_architecture_anchors_exist() -> None:
    headings = {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in (ROOT / "docs" / "architecture.md").read_text().splitlines()
        if line.startswith("#")
    }
    missing = [
        f"{_rel(page)} -> #{anchor}"
        for page in PAGES
        for anchor in re.findall(r"architecture\.md#([\w\-]+)", page.read_text())
        if anchor not in headings
    ]
    assert not missing, missing

# --- code in the pages --------------------------------------------------------------

DOCTEST_PAGES = [p for p in PAGES if ">>>" in p.read_text()]
EXEC_PAGES = [p for p in PAGES if any(_runnable(b) for b in blocks(p.read_text()))]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # modules written by a page (first_plan, ...)
        module = sys.modules.get(name)
        if module is not None and str(getattr(module, "__file__", "") or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.mark.parametrize("page", DOCTEST_PAGES, ids=_rel)
def test_doctests_in_page(page: Path, in_tmp: Path) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(page.read_text(), {"__name__": "__doc__"}, _rel(page), str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, "".join(report)


def _run_page_blocks(page: Path, where: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in blocks(page.read_text()):
        if not _runnable(block):
            continue
        first = block.body.lstrip().splitlines()[0] if block.body.strip() else ""
        named = re.match(r"#\s*([A-Za-z_]\w*\.py)\b", first)
        if named:
            (where / named.group(1)).write_text(block.body)
        code = compile(block.body, f"{_rel(page)}:{block.line}", "exec")
        exec(code, namespace)  # noqa: S102 - the documentation's own examples


@pytest.mark.parametrize("page", EXEC_PAGES, ids=_rel)
def test_python_blocks_in_page_run(page: Path, in_tmp: Path) -> None:
    _run_page_blocks(page, in_tmp)


def _dpalg_command() -> list[str]:
    exe = shutil.which("dpalg", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "dpalg.cli"]


def test_quickstart_commands_work(in_tmp: Path) -> None:
    page = ROOT / "docs" / "quickstart.md"
    _run_page_blocks(page, in_tmp)  # writes first_plan.py, certificate.json, forged.json
    commands = [
        line.strip() for b in blocks(page.read_text()) if b.lang == "bash"
        for line in b.body.splitlines() if line.strip().startswith("dpalg ") and not line.strip().startswith("dpalg demo")
    ]  # fmt: skip
    assert any("check" in c for c in commands) and any("audit" in c for c in commands)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(in_tmp), *sys.path])}
    for command in commands:
        shell, _, comment = command.partition("#")
        expected = int(m.group(1)) if (m := re.search(r"exit (\d)", comment)) else 0
        argv = re.findall(r'"[^"]*"|\S+', shell)[1:]
        result = subprocess.run(
            [*_dpalg_command(), *(a.strip('"') for a in argv)], cwd=in_tmp, env=env, capture_output=True, text=True, timeout=120
        )  # fmt: skip
        assert result.returncode == expected, f"{command!r} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
