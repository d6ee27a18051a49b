"""The typed measurement graph, the static accountant and sessions."""

from dpalg.graph._accountant import check, derive, supports
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox, compose
from dpalg.graph._derivation import Derivation
from dpalg.graph._group import GroupPrivacy
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive, PrivacyClaim
from dpalg.graph._session import Session

__all__ = [
    "AbstractMeasurement", "AbstractPrimitive", "Compose", "Derivation", "GroupPrivacy", "Parallel", "PrivacyClaim",
    "PureToApprox", "PureToZCDP", "Session", "ZCDPToApprox", "check", "compose", "derive", "supports",
]  # fmt: skip
