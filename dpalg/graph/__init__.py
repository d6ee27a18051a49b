"""The typed measurement graph, the static accountant and sessions."""

from dpalg.graph._accountant import check, derive, supports
from dpalg.graph._accuracy import Accuracy
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox, compose
from dpalg.graph._derivation import Derivation
from dpalg.graph._ledger import LedgerError
from dpalg.graph._group import GroupPrivacy
from dpalg.graph._groupby import GaussianPartitionSelection, GroupBy, KeySet, MaxGroupsPerUser, PartitionSelection
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive, PrivacyClaim
from dpalg.graph._session import Session
from dpalg.graph._subsample import Subsample
from dpalg.graph._summary import PlanSummary, SummaryRow
from dpalg.graph import _readable  # noqa: F401  -- fills the VALUE_ROWS slot (str(release))

__all__ = [
    "AbstractMeasurement", "AbstractPrimitive", "Accuracy", "Compose", "Derivation", "GaussianPartitionSelection", "GroupBy", "GroupPrivacy", "KeySet", "LedgerError", "MaxGroupsPerUser", "PartitionSelection", "Parallel", "PlanSummary", "PrivacyClaim",
    "PureToApprox", "PureToZCDP", "Session", "Subsample", "SummaryRow", "ZCDPToApprox", "check", "compose", "derive", "supports",
]  # fmt: skip
