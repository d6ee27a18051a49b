"""Every script in examples/ runs to completion in its small setting.

Each example takes ``--small`` (older ones spell it ``--quick``; both are accepted
by those that define both) and ``--out DIR``; the environment variable
``DPALG_EXAMPLES_SMALL=1`` is set too, for scripts that read it. Outputs go to a
temporary directory, never to ``examples/out/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# examples/_support.py (the scripts' shared command line and figure helpers) is not an example
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


def _shared_arguments(source: str) -> bool:
    """The script reads its command line with examples/_support.py: ``--small`` always, ``--out`` unless ``out=False``."""
    return "parse_arguments(" in source


def _takes_out(source: str) -> bool:
    return '"--out"' in source or (_shared_arguments(source) and "out=False" not in source)


def _arguments(source: str, out: Path) -> list[str]:
    args: list[str] = []
    if '"--small"' in source or _shared_arguments(source):
        args.append("--small")
    elif '"--quick"' in source:
        args.append("--quick")
    if _takes_out(source):
        args += ["--out", str(out)]
    return args


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"shifted_vs_clipping.py", "mean_of_ages.py", "median_vs_epsilon.py"} <= names


# What some scripts write, checked on the same run (each script runs once in the fast suite;
# the per-module tests that ran them again, e.g. tests/mechanisms/test_ratio.py, are marked slow)
WRITES: dict[str, Callable[[Path], bool]] = {
    "private_ratio.py": lambda out: (out / "private_ratio.md").read_text().count("|") > 10,
    "per_coordinate.py": lambda out: "measured" in (out / "per_coordinate.md").read_text(),
}


def _needs_spark(script: Path) -> bool:
    return "from pyspark" in script.read_text()


def _spark_ready() -> bool:
    """pyspark importable and Java present (under ``DPALG_REQUIRE_SPARK=1`` their absence fails instead of skipping)."""
    if os.environ.get("DPALG_REQUIRE_SPARK"):
        return True
    from importlib.util import find_spec

    from dpalg.data._spark import java_problem

    return find_spec("pyspark") is not None and java_problem() is None


# Scripts that start Spark run in the Spark step of CI (the spark marker), where the extra is installed
SCRIPTS = [pytest.param(p, marks=[pytest.mark.spark]) if _needs_spark(p) else p for p in EXAMPLES]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs_small(script: Path, tmp_path: Path) -> None:
    source = script.read_text()
    if _needs_spark(script) and not _spark_ready():
        pytest.skip("needs pyspark and Java (pip install 'dpalg[spark]')")
    env = {**os.environ, "DPALG_EXAMPLES_SMALL": "1", "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(script), *_arguments(source, tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300 if _needs_spark(script) else 120,
    )  # fmt: skip
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    if _takes_out(source) and ".png" in source:
        assert list(tmp_path.glob("*.png")), f"{script.name} wrote no PNG into --out"
    check = WRITES.get(script.name)
    assert check is None or check(tmp_path), f"{script.name} wrote unexpected output into --out"


def test_benchmarks_entry_point_starts() -> None:
    """``python -m benchmarks`` is importable and parses its arguments (the run itself is minutes long)."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--full" in result.stdout and "--only" in result.stdout
