from dpalg import ZCDP, ApproxDP, Compose, PureDP, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._testing import Fixed

pure = Compose(Fixed(PureDP(1)), Fixed(PureDP("0.5")))
reveal_type(pure)  # R: dpalg.graph._compose.Compose[dpalg.measures._measures.PureDP]
mixed = Compose(ZCDPToApprox(Compose(PureToZCDP(pure), Fixed(ZCDP("0.1"))), delta="1e-6"), PureToApprox(pure))
reveal_type(mixed)  # R: Compose[dpalg.measures._measures.ApproxDP]
reveal_type(mixed.cost())  # R: dpalg.measures._measures.ApproxDP
mixed.check(ApproxDP(10, "1e-5"))
