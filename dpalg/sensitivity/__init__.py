"""The sensitivity layer: local sensitivity at distance k, smooth sensitivity,
down sensitivity and the shifted-inverse loss, and sympy checks of user formulas."""

from dpalg.sensitivity._down_sens import (
    UserLoss,
    check_user_monotone,
    down_sensitivity_count_distinct,
    down_sensitivity_function,
)
from dpalg.sensitivity._shift_runs import shift_tau, shifted_loss_at, shifted_loss_runs

__all__ = [
    "UserLoss", "check_user_monotone", "down_sensitivity_count_distinct", "down_sensitivity_function",
    "shift_tau", "shifted_loss_at", "shifted_loss_runs",
]  # fmt: skip
