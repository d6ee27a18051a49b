from dpalg import ZCDP, Compose, PureDP, Session
from dpalg.graph._testing import Fixed

plan = Compose(Fixed(ZCDP("0.5")), Fixed(ZCDP("0.1")))
plan.check(PureDP(1))  # E: Argument 1 to "check" of "AbstractMeasurement" has incompatible type "PureDP"; expected "ZCDP"
session = Session(PureDP(1))
session.run(plan, {})  # E: Argument 1 to "run" of "Session" has incompatible type "Compose[ZCDP]"; expected "AbstractMeasurement[PureDP]"
