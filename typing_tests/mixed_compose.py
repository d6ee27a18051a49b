from dpalg import ZCDP, Compose, PureDP
from dpalg.graph._testing import Fixed

pure = Fixed(PureDP(1))
zcdp = Fixed(ZCDP("0.5"))
plan = Compose(pure, zcdp)  # E: Cannot infer value of type parameter "M" of "Compose"
