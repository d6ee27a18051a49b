"""Releases, certificates and audits."""

from dpalg.release._empirical import EmpiricalAudit, empirical_epsilon_lower_bound
from dpalg.release._release import BOTTOM, Bottom, Release

__all__ = ["BOTTOM", "Bottom", "EmpiricalAudit", "Release", "empirical_epsilon_lower_bound"]
