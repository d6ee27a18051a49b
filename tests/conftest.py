"""Fixtures shared by the test packages, and the paths of the helper modules of the noise and data tests.

``spark``: one SparkSession for the whole run (local[2], UI off, 4 shuffle
partitions, ANSI mode at its default), with Spark's interpreted evaluation
(whole-stage code generation and expression code generation off) and adaptive
query execution off. Compiling the generated Java of each of the suite's many
small plans took about a third of the Spark step's time, and the interpreted
evaluation is Spark's reference for the same expressions; adaptive execution
runs each shuffle of a plan as a job of its own and re-plans between them
(about 8% of the step's time, measured in runs alternating the setting), and
the releases must not depend on the partitioning either way. Its JVM compiles
with C1 only (``-XX:TieredStopAtLevel=1``): a session's JIT compilation took
about 40% of the JVM's CPU time over the Spark step, which CI runs with two
xdist workers (a JVM each) on two cores; there C1 alone made the step about 8%
faster (276 s against 299 s, one run each, load 2-4), while a single process
was about 5% slower with it. The JIT tier is not meant to change a value
(Java's arithmetic is strict at every tier), and the bit-identity tests pass
under both. ``spark_defaults``
turns Spark's defaults back on (code generation and adaptive execution, what a
user runs) for one test: the bit-identity tests over hypothesis frames and
expressions, the job-count bounds and the scale test use it, and the Spark
example runs in its own process at Spark's defaults. Spark test modules guard their own
imports (``pytestmark = spark_module_marks()`` from ``tests/data/backend_support.py``:
``pytest.importorskip("pyspark")``, or a hard import under ``DPALG_REQUIRE_SPARK=1``)
and carry ``pytest.mark.spark``; this fixture only starts the session, once, when a
test first asks for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# the helper modules (tests/noise/noise_stats_helpers.py, tests/noise/randomness_support.py,
# tests/data/backend_support.py, ...) sit next to the tests that use
# them (importlib mode puts no test directory on sys.path, and test modules cannot import one another);
# one conftest for the whole tree (mypy refuses two modules named conftest)
for _helpers in ("noise", "data"):
    _path = str(Path(__file__).resolve().parent / _helpers)
    if _path not in sys.path:
        sys.path.insert(0, _path)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("dpalg-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


#: the settings the suite's session changes, at Spark's defaults (what ``spark_defaults`` restores for one test)
SPARK_DEFAULTS = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK", "spark.sql.adaptive.enabled": "true"}


@pytest.fixture
def spark_defaults(spark: Any) -> Iterator[Any]:
    """The session at Spark's defaults for one test: code generation (whole-stage, with interpreted fallback) and adaptive execution on."""
    saved = {key: spark.conf.get(key) for key in SPARK_DEFAULTS}
    for key, value in SPARK_DEFAULTS.items():
        spark.conf.set(key, value)
    try:
        yield spark
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
