"""Releases are total at scale on Spark: every exported mechanism completes on a frame larger than ``spark.driver.maxResultSize``.

A column collected to the driver in one job fails once its result passes the
driver's cap, after the charge. The columns the mechanisms still collect are
collected in jobs under the cap (:mod:`dpalg.data._spark_collect`), and the
others are reduced on the executors. The test runs the catalog of
``scale_spark_run.py`` in the suite's session at Spark's defaults, with the cap
lowered to the smallest Spark allows (``1m``) for the test: a task set reads the
cap from the context's live configuration when it starts, so the cap set there
is the one Spark enforces (and the one dpalg reads to size its jobs). On a frame
of 150 000 rows made on the executors, it checks first that one of its columns
cannot be collected in one job; then every plan of the catalog, one or more per
exported mechanism, must release. Slow: about 30 plans, many small jobs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from backend_support import spark_module_marks

pytestmark = [*spark_module_marks(), pytest.mark.slow]

import dpalg.mechanisms as mechanisms  # noqa: E402

SCRIPT = Path(__file__).with_name("scale_spark_run.py")
# exported names that are not mechanisms themselves (run inside the plans named), and those that release nothing
HELPERS = {"NoisyCount": "BoundedLS-ratio", "PrivateRatio": "NaiveRatio-c", "LocalSensAtDistance": "SmoothBound-function"}
NOT_MECHANISMS = {"PTRBoundSuggestion", "ptr_bottom_probability", "suggest_ptr_bound"}


def _runner() -> ModuleType:
    """``scale_spark_run.py`` as a module (it imports dpalg and numpy; pyspark only inside its functions)."""
    spec = importlib.util.spec_from_file_location("scale_spark_run", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plans() -> list[str]:
    """The catalog's names."""
    return sorted(_runner().PLANS)


def test_the_catalog_covers_every_exported_mechanism() -> None:
    covered = {name.split("-", 1)[0] for name in _plans()} | set(HELPERS) | NOT_MECHANISMS
    assert set(mechanisms.__all__) <= covered, sorted(set(mechanisms.__all__) - covered)


@contextmanager
def result_cap(spark: Any, cap: str) -> Iterator[None]:
    """``spark.driver.maxResultSize`` set to ``cap`` in the context's live configuration (what each new task set reads), restored after."""
    conf = spark.sparkContext._jsc.sc().conf()
    key = "spark.driver.maxResultSize"
    saved = conf.get(key) if conf.contains(key) else None
    conf.set(key, cap)
    try:
        yield
    finally:
        if saved is None:
            conf.remove(key)
        else:
            conf.set(key, saved)


@pytest.mark.usefixtures("spark_defaults")  # what a user runs: code generation and adaptive execution on
@pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")  # the seeded generator: a test's runs, not releases
@pytest.mark.timeout(900)  # about 30 plans, many small jobs: half a minute idle, a few minutes on a loaded 2-core machine
def test_every_mechanism_completes_on_a_frame_larger_than_the_driver_result_cap(spark: Any) -> None:
    runner = _runner()
    frame = runner._frame(spark, runner.ROWS).persist()  # the caller's cache: each run collects afresh, none recomputes the rows
    try:
        frame.count()
        with result_cap(spark, runner.CAP):
            arrow, rows = runner.one_shot(frame)
            runs = list(runner.run_plans(frame, []))
        after = runner.one_shot(frame.limit(10))
    finally:
        frame.unpersist()
    for how, record in (("toArrow", arrow), ("collect", rows)):  # the cap is effective
        assert record == {"name": f"(one-shot {how})", "outcome": "failed", "error": "Py4JJavaError"}
    assert [r["outcome"] for r in after] == ["collected", "collected"]  # and lifted after the test
    assert sorted(r["name"] for r in runs) == sorted(_plans())
    not_released = [r for r in runs if r["outcome"] != "released"]
    assert not not_released, not_released
