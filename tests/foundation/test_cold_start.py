"""Cold start (issue 19): ``import dpalg``, ``dpalg --help``, ``dpalg audit`` and ``dpalg check``
of a plan without formulas never import sympy; a formula still loads it where it is parsed.

Each case runs in a fresh interpreter (``sys.modules`` of the test process is shared
by every test), and asserts on the module table, not on a stopwatch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sympy", "mpmath", "scipy", "pandas", "polars", "matplotlib", "pyspark", "cryptography")


def _modules_after(code: str, cwd: Path) -> set[str]:
    """Run ``code`` in a fresh interpreter and return the top-level modules it ended with."""
    probe = code + "\nimport sys, json\nprint('@@' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("@@"))
    return set(json.loads(line[2:]))


def test_import_dpalg_loads_no_heavy_module(tmp_path: Path) -> None:
    loaded = _modules_after("import dpalg, dpalg.mechanisms, dpalg.sensitivity, dpalg.noise, dpalg.release", tmp_path)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_cli_help_check_and_audit_do_not_import_sympy(tmp_path: Path) -> None:
    plan = tmp_path / "plan_nf.py"
    plan.write_text(
        "from dpalg import Clip, Compose, Query\n"
        "from dpalg.mechanisms import ExponentialQuantile, Laplace, ProposeTest\n"
        "plan = Compose(Laplace(Query.count(), epsilon=1), ProposeTest(Query.median('x') | Clip(0, 10), bound=1,"
        " epsilon=1, delta='1e-6'), ExponentialQuantile(Query.median('x') | Clip(0, 10), epsilon=1))\n"
    )
    cert = tmp_path / "cert.json"
    make = (
        "import numpy as np\n"
        "from dpalg import Clip, Compose, PureDP, Query\n"
        "from dpalg.mechanisms import ExponentialQuantile, Laplace\n"
        "plan = Compose(Laplace(Query.count(), epsilon=1), ExponentialQuantile(Query.median('x') | Clip(0, 9), epsilon=1))\n"
        "plan.check(PureDP(2))\n"
        f"open({str(cert)!r}, 'w').write(plan.run({{'x': np.arange(5.0)}}, rng=3).certificate_json())\n"
    )
    subprocess.run([sys.executable, "-c", make], cwd=tmp_path, check=True, timeout=120)
    for argv in (["--help"], ["check", "plan_nf:plan", "--budget", "eps=5,delta=1e-5"], ["audit", str(cert)]):
        code = f"from dpalg.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        loaded = _modules_after(code, tmp_path)
        assert "sympy" not in loaded, argv
        assert "mpmath" not in loaded, argv


def test_a_formula_still_loads_sympy_where_it_is_parsed(tmp_path: Path) -> None:
    loaded = _modules_after(
        "from dpalg import Clip, Query\nfrom dpalg.mechanisms import LocalSensAtDistance\n"
        "LocalSensAtDistance(Query.mean('x') | Clip(0, 1), 'k + 1')",
        tmp_path,
    )
    assert "sympy" in loaded


@pytest.mark.parametrize("name", ["parse_formula", "check_monotone", "require_monotone", "MonotoneCheck"])
def test_lazy_sensitivity_names_resolve(name: str) -> None:
    import dpalg.sensitivity as sens

    assert getattr(sens, name).__name__ == name
    with pytest.raises(AttributeError):
        getattr(sens, "no_such_name")
