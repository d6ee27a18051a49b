"""BoundedLocalSensitivity: monotonicity check (proven / unproven / refuted), coverage, validation, end to end."""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping

import numpy as np
import pytest
import sympy

from dpalg import ApproxDP, Compose, InvalidArgument
from dpalg.mechanisms._bounded_local import BoundedLocalSensitivity, PrivateCount, check_monotone
from dpalg.mechanisms._private_ratio import ratio_local_sensitivity
from dpalg.noise import SeededRandomness, discrete_laplace

COUNTS = (PrivateCount("a", where="m"), PrivateCount("b"))
GOOD = "Max(a_hi, b_hi - a_lo)/(b_lo**2 - b_lo)"


def _node(**kw: object) -> BoundedLocalSensitivity:
    args: dict[str, object] = dict(counts=COUNTS, value="a/b", ls_bound=GOOD, epsilon_bound="0.5", epsilon_release="0.5",
                                   delta="0.01", minimums=(("b_lo", 2),), global_sensitivity=1)  # fmt: skip
    args.update(kw)
    return BoundedLocalSensitivity(**args)  # type: ignore[arg-type]


def test_monotone_proven_and_noted() -> None:
    node = _node()
    assert node.monotonicity.status == "proven"
    assert "proven" in node.privacy().notes[0]


def test_refuted_expression_is_refused_with_counterexample() -> None:
    with pytest.raises(InvalidArgument, match="not monotone"):
        _node(ls_bound="Max(a_lo, b_hi - a_hi)/(b_lo**2 - b_lo)")  # the seed listing's swap
    res = check_monotone(sympy.sympify("a_lo/b_lo"), {"a_lo": "lower", "b_lo": "lower"}, {"b_lo": 1})
    assert res.status == "refuted" and res.counterexample


def test_function_is_unproven_and_strict_refuses() -> None:
    def fn(env: Mapping[str, int]) -> Fraction:
        return Fraction(max(env["a_hi"], env["b_hi"] - env["a_lo"]), env["b_lo"] ** 2 - env["b_lo"])

    node = _node(ls_bound=fn)
    assert node.monotonicity.status == "unproven" and "unproven" in node.privacy().notes[0]
    with pytest.raises(InvalidArgument, match="strict"):
        _node(ls_bound=fn, strict=True)


def test_bound_covers_true_ls_with_probability_delta() -> None:
    node = _node(delta="0.05")
    a, b, n = 30, 60, 20_000
    draws = discrete_laplace(node.count_scale(), size=2 * n, rng=SeededRandomness(5))
    pairs, counts = np.unique(np.stack([a + draws[:n], b + draws[n:]], axis=1), axis=0, return_counts=True)
    true_ls = ratio_local_sensitivity(a, b)
    fails = 0
    for (ah, bh), c in zip(pairs.tolist(), counts.tolist()):
        g = node.bound_from_noisy({"a": ah, "b": bh})
        fails += c * (g is None or g < true_ls)
    assert fails <= 0.05 * n


def test_end_to_end() -> None:
    node = _node()
    plan = Compose(node)
    plan.check(ApproxDP(1, "0.01"))
    data = {"m": np.array([1.0] * 300 + [0.0] * 700)}
    assert plan.run(data, rng=0) is not None
    from dpalg.data import as_dataset

    outs = [node.release(as_dataset(data), SeededRandomness(s)) for s in range(20)]
    assert all(isinstance(o, float) and abs(o - 0.3) < 0.05 for o in outs)


INVALID = [
    (dict(counts=()), "counts"),
    (dict(counts=(PrivateCount("a"), PrivateCount("a"))), "counts"),
    (dict(value="c/b"), "value"),
    (dict(ls_bound="c_hi"), "ls_bound"),
    (dict(ls_bound=3), "ls_bound"),
    (dict(epsilon_bound=0), "epsilon_bound"),
    (dict(epsilon_release="-1"), "epsilon_release"),
    (dict(delta=0), "delta"),
    (dict(minimums=(("zz", 1),)), "minimums"),
    (dict(minimums=[("b_lo", 2)]), "minimums"),
    (dict(global_sensitivity=0), "global_sensitivity"),
    (dict(relation="x"), "relation"),
    (dict(strict="yes"), "strict"),
]


@pytest.mark.parametrize(("kw", "field"), INVALID, ids=[f"{i}-{f}" for i, (_, f) in enumerate(INVALID)])
def test_invalid_arguments(kw: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        _node(**kw)
    assert info.value.field == field


def test_private_count_validation() -> None:
    with pytest.raises(InvalidArgument):
        PrivateCount("1x")
    with pytest.raises(InvalidArgument):
        PrivateCount("a", where="")
