"""Fixtures shared by the test packages, and the paths of the helper modules of the noise and data tests.

``spark``: one SparkSession for the whole run (local[2], UI off, 4 shuffle
partitions, ANSI mode at its default). Spark test modules guard their own
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
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
