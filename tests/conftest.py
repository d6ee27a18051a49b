"""Fixtures shared by the test packages.

``spark``: one SparkSession for the whole run (local[2], UI off, 4 shuffle
partitions, ANSI mode at its default). Spark test modules guard their own
imports (``pytest.importorskip("pyspark")``, or a hard import under
``DPALG_REQUIRE_SPARK=1``) and carry ``pytest.mark.spark``; this fixture only
starts the session, once, when a test first asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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
