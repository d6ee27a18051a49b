"""Shared helpers for the noise tests: exact pmfs and chi-square goodness of fit."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # the lead registers "slow" in pyproject; registering twice is harmless
    config.addinivalue_line("markers", "slow: long-running statistical tests (CI runs them too)")


import sys
from pathlib import Path

# the helper module noise_stats_helpers.py sits next to the tests (importlib mode
# does not put test directories on sys.path)
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
