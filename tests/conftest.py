"""Fixtures shared by the test packages, and the path of the noise tests' helper module.

``spark``: one SparkSession for the whole run (local[2], UI off, 4 shuffle
partitions, ANSI mode at its default). Spark test modules guard their own
imports (``pytest.importorskip("pyspark")``, or a hard import under
``DPALG_REQUIRE_SPARK=1``) and carry ``pytest.mark.spark``; this fixture only
starts the session, once, when a test first asks for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# tests/noise/noise_stats_helpers.py sits next to the noise tests (importlib mode puts no test
# directory on sys.path); one conftest for the whole tree (mypy refuses two modules named conftest)
_NOISE = str(Path(__file__).resolve().parent / "noise")
if _NOISE not in sys.path:
    sys.path.insert(0, _NOISE)


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
