from dpalg import ApproxDP, PureDP, PureToZCDP, ZCDPToApprox
from dpalg.graph._testing import Fixed

approx = Fixed(ApproxDP(1, "1e-6"))
PureToZCDP(approx)  # E: Argument 1 to "PureToZCDP" has incompatible type "Fixed[ApproxDP]"; expected "AbstractMeasurement[PureDP]"
pure = Fixed(PureDP(1))
ZCDPToApprox(pure, delta="1e-6")  # E: Argument 1 to "ZCDPToApprox" has incompatible type "Fixed[PureDP]"; expected "AbstractMeasurement[ZCDP]"
PureDP(1).fits_within(ApproxDP(1, 0))  # E: Argument 1 to "fits_within" of "PureDP" has incompatible type "ApproxDP"; expected "PureDP"
PureDP(1) + ApproxDP(1, 0)  # E: Unsupported operand types for + ("PureDP" and "ApproxDP")
