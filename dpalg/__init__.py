"""dpalg: differential privacy beyond global sensitivity.

Declare a release as a typed graph of nodes, prove its cost statically, run it
and keep the certificate::

    >>> from dpalg import Compose, PureDP
    >>> from dpalg.graph._testing import Fixed
    >>> plan = Compose(Fixed(PureDP("0.5")), Fixed(PureDP("0.25")))
    >>> plan.cost()
    PureDP('3/4')
"""

from dpalg._errors import BackendError, DPAlgError, InsecureRandomnessWarning, InvalidArgument, UncheckedPlan, Unsupported
from dpalg.data import Neighbouring
from dpalg.data._expr import Expr, col, lit, maximum, minimum
from dpalg.data._tables import From, Join
from dpalg.graph import (
    AbstractMeasurement,
    AbstractPrimitive,
    Compose,
    Derivation,
    GaussianPartitionSelection,
    GroupBy,
    GroupPrivacy,
    KeySet,
    MaxGroupsPerUser,
    Parallel,
    PartitionSelection,
    PrivacyClaim,
    PureToApprox,
    PureToZCDP,
    Session,
    Subsample,
    ZCDPToApprox,
    compose,
)
from dpalg.graph._derivation import BudgetExceeded
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.queries import Clip, ClipPerUser, JoinPublic, MaxKeysPerUser, MaxRowsPerUser, Query, Where
from dpalg.release import BOTTOM, Bottom, Release

__version__ = "0.1.0"

__all__ = [
    "BOTTOM", "AbstractMeasurement", "AbstractPrimitive", "ApproxDP", "BackendError", "Bottom", "BudgetExceeded", "Clip", "ClipPerUser", "MaxKeysPerUser", "MaxRowsPerUser",
    "Compose", "DPAlgError", "Derivation", "GaussianPartitionSelection", "GroupBy", "GroupPrivacy", "InsecureRandomnessWarning", "InvalidArgument", "KeySet", "MaxGroupsPerUser", "Neighbouring", "Parallel", "PartitionSelection", "PrivacyClaim",
    "PureDP", "PureToApprox", "PureToZCDP", "Query", "Release", "Session", "Subsample", "UncheckedPlan", "Unsupported",
    "From", "Join", "JoinPublic", "Where", "ZCDP", "ZCDPToApprox", "Expr", "col", "compose", "lit", "maximum", "minimum",
]  # fmt: skip
