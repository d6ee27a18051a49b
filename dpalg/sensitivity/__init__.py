"""The sensitivity layer: local sensitivity at distance k, smooth sensitivity,
down sensitivity and the shifted-inverse loss, and sympy checks of user formulas.

The formula tools (``parse_formula``, ``check_monotone``, ``require_monotone``,
``MonotoneCheck``) are loaded on first use: ``import dpalg`` does not import sympy.
"""

from typing import TYPE_CHECKING

from dpalg.sensitivity._catalog import (
    CATALOG_KINDS,
    distance_to_instability,
    global_sensitivity,
    local_sensitivity_at_distance,
    ls_profile,
    mode_gap_distance,
)
from dpalg.sensitivity._down_sens import (
    UserLoss,
    check_user_monotone,
    down_sensitivity_count_distinct,
    down_sensitivity_function,
)
from dpalg.sensitivity._shift_runs import shift_tau, shifted_loss_at, shifted_loss_runs
from dpalg.sensitivity._smooth import smooth_sensitivity
from dpalg.sensitivity._smooth_quantile import smooth_sensitivity_quantile

__all__ = [
    "CATALOG_KINDS", "MonotoneCheck", "check_monotone", "distance_to_instability", "global_sensitivity",
    "local_sensitivity_at_distance", "ls_profile", "mode_gap_distance", "parse_formula", "require_monotone",
    "UserLoss", "check_user_monotone", "down_sensitivity_count_distinct", "down_sensitivity_function",
    "shift_tau", "shifted_loss_at", "shifted_loss_runs",
    "smooth_sensitivity", "smooth_sensitivity_quantile",
]  # fmt: skip

if TYPE_CHECKING:
    from dpalg.sensitivity._formula import parse_formula
    from dpalg.sensitivity._sympy_check import MonotoneCheck, check_monotone, require_monotone

_LAZY = {
    "parse_formula": "dpalg.sensitivity._formula",
    "MonotoneCheck": "dpalg.sensitivity._sympy_check",
    "check_monotone": "dpalg.sensitivity._sympy_check",
    "require_monotone": "dpalg.sensitivity._sympy_check",
}


def __getattr__(name: str) -> object:
    """The sympy-backed names, imported on first access (PEP 562)."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpalg.sensitivity' has no attribute {name!r}")
