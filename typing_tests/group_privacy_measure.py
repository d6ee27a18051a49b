from dpalg import ZCDP, Compose, GroupPrivacy, PureDP
from dpalg.graph._testing import Fixed

group = GroupPrivacy(Fixed(ZCDP("0.1")), unit="uid", max_rows=3)
reveal_type(group)  # R: dpalg.graph._group.GroupPrivacy[dpalg.measures._measures.ZCDP]
group.check(PureDP(1))  # E: Argument 1 to "check" of "AbstractMeasurement" has incompatible type "PureDP"; expected "ZCDP"
mixed = Compose(group, Fixed(PureDP(1)))  # E: Cannot infer value of type parameter "M" of "Compose"
