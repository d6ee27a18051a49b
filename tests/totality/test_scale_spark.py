"""Releases are total at scale on Spark: every exported mechanism completes on a frame larger than ``spark.driver.maxResultSize``.

A column collected to the driver in one job fails once its result passes the
driver's cap, after the charge. The columns the mechanisms still collect are
collected in jobs under the cap (:mod:`dpalg.data._spark_collect`), and the
others are reduced on the executors. ``scale_spark_run.py`` runs in its own
process (its own SparkSession: the cap is fixed when a SparkContext starts) with
the smallest cap Spark allows (``1m``) and a frame of 150 000 rows made on the
executors, and checks first that one of its columns cannot be collected in one
job; then every plan of its catalog, one or more per exported mechanism, must
release. Slow: a few minutes (a JVM, about 30 plans, many small jobs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from backend_support import spark_module_marks

pytestmark = [*spark_module_marks(), pytest.mark.slow]

import dpalg.mechanisms as mechanisms  # noqa: E402

SCRIPT = Path(__file__).with_name("scale_spark_run.py")
# exported names that are not mechanisms themselves (run inside the plans named), and those that release nothing
HELPERS = {"NoisyCount": "BoundedLS-ratio", "PrivateRatio": "NaiveRatio-c", "LocalSensAtDistance": "SmoothBound-function"}
NOT_MECHANISMS = {"PTRBoundSuggestion", "ptr_bottom_probability", "suggest_ptr_bound"}


def _plans() -> list[str]:
    """The catalog's names, read from the script's source (importing it here would need its imports only)."""
    text = SCRIPT.read_text(encoding="utf-8")
    start = text.index("PLANS: dict[str, Callable[[], Any]] = {")
    body = text[start : text.index("}  # fmt: skip", start)]
    return [line.split('"')[1] for line in body.splitlines()[1:] if line.startswith('    "')]


def test_the_catalog_covers_every_exported_mechanism() -> None:
    covered = {name.split("-", 1)[0] for name in _plans()} | set(HELPERS) | NOT_MECHANISMS
    assert set(mechanisms.__all__) <= covered, sorted(set(mechanisms.__all__) - covered)


@pytest.mark.timeout(1200)  # 3-5 min on a loaded 2-core machine (a JVM, about 30 plans, many small jobs)
def test_every_mechanism_completes_on_a_frame_larger_than_the_driver_result_cap() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=900, env=env, check=False)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    arrow, rows, *runs = records
    for how, record in (("toArrow", arrow), ("collect", rows)):  # the cap is effective
        assert record == {"name": f"(one-shot {how})", "outcome": "failed", "error": "Py4JJavaError"}
    assert sorted(r["name"] for r in runs) == sorted(_plans())
    not_released = [r for r in runs if r["outcome"] != "released"]
    assert not not_released, not_released
