"""Fixtures shared by the test packages, and the paths of the helper modules of the noise and data tests.

``spark``: one SparkSession for the whole run (local[2], UI off, 4 shuffle
partitions, ANSI mode at its default), with Spark's interpreted evaluation
(whole-stage code generation and expression code generation off): compiling the
generated Java of each of the suite's many small plans took about a third of the
Spark step's time, and the interpreted evaluation is Spark's reference for the
same expressions. ``spark_codegen`` turns code generation back on (Spark's
default, what a user runs) for one test: the bit-identity tests over hypothesis
frames and expressions use it, and ``tests/totality/scale_spark_run.py`` runs
every mechanism in its own session at Spark's defaults. Spark test modules guard their own
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
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def spark_codegen(spark: Any) -> Iterator[Any]:
    """The session with Spark's code generation on (its defaults: whole-stage codegen, codegen with interpreted fallback) for one test."""
    saved = {key: spark.conf.get(key) for key in ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")}
    spark.conf.set("spark.sql.codegen.wholeStage", "true")
    spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK")
    try:
        yield spark
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
