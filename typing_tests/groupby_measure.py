"""GroupBy is typed by its aggregates' measure; private keys (PartitionSelection) need (eps, delta) aggregates."""

from dpalg import ApproxDP, GroupBy, KeySet, PartitionSelection, PureDP, PureToApprox, Query
from dpalg.mechanisms import Laplace

count = Laplace(Query.count(), epsilon=1)

public = GroupBy("dept", keys=KeySet(["a", "b"]), aggregates={"n": count})
reveal_type(public)  # R: GroupBy[dpalg.measures._measures.PureDP]
public.check(PureDP(1))
public.check(ApproxDP(1, "1e-6"))  # E: incompatible type

private = GroupBy("dept", keys=PartitionSelection(epsilon=1, delta="1e-6"), aggregates={"n": PureToApprox(count)})
reveal_type(private)  # R: GroupBy[dpalg.measures._measures.ApproxDP]

GroupBy("dept", keys=PartitionSelection(epsilon=1, delta="1e-6"), aggregates={"n": count})  # E: Dict entry 0 has incompatible type

from dpalg import GaussianPartitionSelection, ZCDP  # noqa: E402
from dpalg.mechanisms import Gaussian  # noqa: E402

zcdp = GroupBy("dept", keys=GaussianPartitionSelection(rho="0.1", delta="1e-6", conversion_delta="1e-6"), aggregates={"n": Gaussian(Query.count(), rho="0.1")})
reveal_type(zcdp)  # R: GroupBy[dpalg.measures._measures.ApproxDP]
zcdp.check(ZCDP("0.5"))  # E: incompatible type
