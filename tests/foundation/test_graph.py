"""The typed graph and the static accountant (contract suite)."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg import (
    ZCDP,
    AbstractMeasurement,
    ApproxDP,
    BudgetExceeded,
    Compose,
    InvalidArgument,
    Neighbouring,
    Parallel,
    PureDP,
    PureToApprox,
    PureToZCDP,
    UncheckedPlan,
    Unsupported,
    ZCDPToApprox,
    compose,
)
from dpalg.graph import derive, supports
from dpalg.graph._testing import Fixed

# --- hypothesis strategies: random plans ---------------------------------------

eps_values = st.fractions(min_value=0, max_value=5, max_denominator=1000)


def pure_plans() -> st.SearchStrategy[AbstractMeasurement[PureDP]]:
    leaves = eps_values.map(lambda e: Fixed(PureDP(e)))
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, min_size=1, max_size=4).map(lambda ks: Compose(*ks)),
            st.lists(kids, min_size=1, max_size=3).map(lambda ks: Parallel("part", {i: k for i, k in enumerate(ks)})),
        ),
        max_leaves=12,
    )


def _leaf_sum(plan: AbstractMeasurement[PureDP]) -> Fraction:
    """Reference: the cost computed by hand from the tree's semantics."""
    if isinstance(plan, Fixed):
        return plan.loss.epsilon  # type: ignore[no-any-return]
    if isinstance(plan, Compose):
        return sum((_leaf_sum(c) for c in plan.children), Fraction(0))
    if isinstance(plan, Parallel):
        return max(_leaf_sum(c) for _, c in plan.parts)
    raise AssertionError(type(plan))


@settings(max_examples=100, deadline=None)
@given(pure_plans())
def test_cost_matches_hand_computation_and_is_nonnegative(plan: AbstractMeasurement[PureDP]) -> None:
    _check_cost(plan)


@pytest.mark.slow  # the same property on the 200 plans it used to draw in the fast suite
@settings(max_examples=200, deadline=None)
@given(pure_plans())
def test_cost_matches_hand_computation_and_is_nonnegative_many_plans(plan: AbstractMeasurement[PureDP]) -> None:
    _check_cost(plan)


def _check_cost(plan: AbstractMeasurement[PureDP]) -> None:
    cost = plan.cost()
    assert cost.epsilon >= 0
    assert cost.epsilon == _leaf_sum(plan)


def _check_composition(plans: list[AbstractMeasurement[PureDP]]) -> None:
    nested = Compose(*plans)
    assert nested.cost().epsilon == sum((p.cost().epsilon for p in plans), Fraction(0))
    assert compose(*plans).cost() == nested.cost()
    assert compose(nested, nested).cost() == Compose(nested, nested).cost()


@settings(max_examples=40, deadline=None)
@given(st.lists(pure_plans(), min_size=1, max_size=5))
def test_composition_adds_exactly_and_flattening_is_neutral(plans: list[AbstractMeasurement[PureDP]]) -> None:
    _check_composition(plans)


@pytest.mark.slow  # the same property on the 200 plans it used to draw in the fast suite
@settings(max_examples=200, deadline=None)
@given(st.lists(pure_plans(), min_size=1, max_size=5))
def test_composition_adds_exactly_and_flattening_is_neutral_many_plans(plans: list[AbstractMeasurement[PureDP]]) -> None:
    _check_composition(plans)


@settings(max_examples=30, deadline=None)  # each ZCDPToApprox cost is an exact numeric minimisation (~20 ms)
@given(pure_plans(), pure_plans())
def test_conversions_are_monotone(a: AbstractMeasurement[PureDP], b: AbstractMeasurement[PureDP]) -> None:
    _check_conversions_are_monotone(a, b)


@pytest.mark.slow  # the same property on the 100 pairs it used to draw in the fast suite
@settings(max_examples=100, deadline=None)
@given(pure_plans(), pure_plans())
def test_conversions_are_monotone_many_plans(a: AbstractMeasurement[PureDP], b: AbstractMeasurement[PureDP]) -> None:
    _check_conversions_are_monotone(a, b)


def _check_conversions_are_monotone(a: AbstractMeasurement[PureDP], b: AbstractMeasurement[PureDP]) -> None:
    lo, hi = sorted((a, b), key=lambda p: p.cost().epsilon)
    # the whole-plan rule is a function of the total eps, monotone in it; the per-part rule depends on the
    # plan's structure (two parts of eps 1 and 2 cost 5/2, one part of eps 3 costs 9/2) and never exceeds it
    assert PureToZCDP(lo, per_part=False).cost().rho <= PureToZCDP(hi, per_part=False).cost().rho
    for p in (lo, hi):
        assert PureToZCDP(p).cost().rho <= PureToZCDP(p, per_part=False).cost().rho
    assert PureToApprox(lo).cost().epsilon <= PureToApprox(hi).cost().epsilon
    d = "1e-6"
    whole_lo, whole_hi = PureToZCDP(lo, per_part=False), PureToZCDP(hi, per_part=False)
    assert ZCDPToApprox(whole_lo, delta=d).cost().epsilon <= ZCDPToApprox(whole_hi, delta=d).cost().epsilon


def test_budget_exceeded_names_first_failing_node() -> None:
    plan = Compose(Fixed(PureDP("0.5")), Compose(Fixed(PureDP("0.3")), Fixed(PureDP("0.4"))), Fixed(PureDP(1)))
    with pytest.raises(BudgetExceeded) as info:
        plan.check(PureDP(1))
    err = info.value
    assert err.path == "Compose/1/Compose/1/Fixed"
    assert err.required == PureDP("0.4")
    assert err.available == PureDP("0.2")
    assert err.derivation is not None and err.derivation.cost == PureDP("2.2")
    assert "0.4" in err.node_repr or "2/5" in err.node_repr


def test_budget_exceeded_in_parallel_and_conversion() -> None:
    par = Parallel("g", {"a": Fixed(PureDP(1)), "b": Fixed(PureDP(3))})
    with pytest.raises(BudgetExceeded) as info:
        par.check(PureDP(2))
    assert info.value.path == "Parallel(by='g')/'b'/Fixed"
    conv = ZCDPToApprox(PureToZCDP(Fixed(PureDP(2))), delta="1e-6")
    with pytest.raises(BudgetExceeded) as info2:
        conv.check(ApproxDP(1, "1e-6"))
    assert info2.value.path == "ZCDPToApprox"


def test_approx_delta_breaks_budget() -> None:
    plan = Compose(Fixed(ApproxDP("0.1", "1e-7")), Fixed(ApproxDP("0.1", "1e-6")))
    with pytest.raises(BudgetExceeded) as info:
        plan.check(ApproxDP(1, "1e-6"))
    assert info.value.path == "Compose/1/Fixed"


def test_check_requires_same_measure() -> None:
    plan = Compose(Fixed(PureDP(1)))
    with pytest.raises(InvalidArgument):
        plan.check(ZCDP(1))  # type: ignore[arg-type]


def test_mixed_measures_rejected_at_runtime_too() -> None:
    with pytest.raises(InvalidArgument, match="same privacy measure"):
        Compose(Fixed(PureDP(1)), Fixed(ZCDP(1)))  # type: ignore[misc]


def test_mixed_neighbouring_rejected() -> None:
    with pytest.raises(InvalidArgument, match="neighbouring"):
        Compose(Fixed(PureDP(1)), Fixed(PureDP(1), unit="uid"))


@attrs.frozen
class _Alien(AbstractMeasurement[PureDP]):
    """A node the accountant does not know."""

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring()


def test_unknown_nodes_are_unsupported_even_nested() -> None:
    plan = Compose(Fixed(PureDP(1)), Compose(Fixed(PureDP(1)), _Alien()))
    assert not supports(plan)
    with pytest.raises(Unsupported, match="_Alien"):
        derive(plan)
    with pytest.raises(Unsupported):
        plan.check(PureDP(100))
    assert supports(Compose(Fixed(PureDP(1))))


def test_run_refused_until_checked() -> None:
    plan = Compose(Fixed(PureDP(1), value=7), Fixed(PureDP(2), value=8))
    with pytest.raises(UncheckedPlan):
        plan.run({"x": [1.0]})
    with pytest.raises(BudgetExceeded):
        plan.check(PureDP(2))
    with pytest.raises(UncheckedPlan):
        plan.run({"x": [1.0]})
    plan.check(PureDP(3))
    release = plan.run({"x": [1.0]}, rng=1)
    assert release.value == (7, 8)
    assert release.certificate["randomness"] == {"kind": "seeded-pcg64(seed=1) NOT SECURE", "secure": False}


@pytest.mark.parametrize(
    ("build", "owner", "field"),
    [
        (lambda: Compose(), "Compose", "children"),
        (lambda: Compose(3), "Compose", "children[0]"),  # type: ignore[arg-type]
        (lambda: Parallel("", {"a": Fixed(PureDP(1))}), "Parallel", "by"),
        (lambda: Parallel("g", {}), "Parallel", "children"),
        (lambda: Parallel("g", {1.5: Fixed(PureDP(1))}), "Parallel", "parts key"),  # type: ignore[arg-type]
        (lambda: ZCDPToApprox(Fixed(ZCDP(1)), delta=0), "ZCDPToApprox", "delta"),
        (lambda: ZCDPToApprox(Fixed(ZCDP(1)), delta="1.5"), "ZCDPToApprox", "delta"),
        (lambda: Neighbouring(relation="swap"), "Neighbouring", "relation"),
        (lambda: Neighbouring(unit=""), "Neighbouring", "unit"),
    ],
)
def test_invalid_graph_arguments(build: object, owner: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        build()  # type: ignore[operator]
    assert info.value.owner == owner and info.value.field == field


def test_reprs_reproduce_construction() -> None:
    import dpalg

    plan = Compose(Fixed(PureDP("0.5")), Parallel("g", {"a": Fixed(PureDP(1))}))
    namespace = {name: getattr(dpalg, name) for name in dpalg.__all__} | {"Fixed": Fixed}
    assert eval(repr(plan), namespace) == plan  # noqa: S307 - test of repr
    conv = ZCDPToApprox(PureToZCDP(Fixed(PureDP(1))), delta="1e-6")
    assert eval(repr(conv), namespace) == conv  # noqa: S307


def test_parallel_user_level_split() -> None:
    plan = Parallel("g", {"a": Fixed(PureDP(1), value=1, unit="uid"), "b": Fixed(PureDP(1), value=2, unit="uid")})
    plan.check(PureDP(1))
    out = plan.run({"g": ["a", "b", "b"], "uid": [1, 1, 2]}, rng=0)
    assert out.value == {"a": 1, "b": 2}
