"""ProposeTest with its ε split between the test and the release (issue 18 item 4): exact privacy, cost, compatibility."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpalg import ApproxDP, Clip, InvalidArgument, Query, Session
from dpalg.mechanisms._ptr import ProposeTest, exact_value
from dpalg.mechanisms._thresholds import ceil_log_inv_delta_over_eps
from dpalg.noise import round_to_lattice
from dpalg.release import audit_certificate

DOMAIN = (0.0, 1.0, 2.0, 3.0)


def _neighbours(max_n: int) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    pairs = []
    for n in range(max_n):
        for x in itertools.combinations_with_replacement(DOMAIN, n):
            for v in DOMAIN:
                y = tuple(sorted(x + (v,)))
                pairs.extend([(x, y), (y, x)])
    return pairs


def _dl_cdf(m: int, eps: float) -> float:
    """P[Z <= m] for Z discrete Laplace with scale 1/eps."""
    p = math.exp(-eps)
    return 1 - p ** (m + 1) / (1 + p) if m >= 0 else p ** (-m) / (1 + p)


def _release_pmf(center: int, t: float, window: np.ndarray) -> np.ndarray:
    q = math.exp(-1 / t)
    out: np.ndarray = (1 - q) / (1 + q) * q ** np.abs(window - center)
    return out


def _delta_needed(node: ProposeTest, x: tuple[float, ...], y: tuple[float, ...], threshold_m: int) -> float:
    """The exact δ with P_x(S) <= e^(ε_t + ε_r) P_y(S) + δ for every event S (⊥ and each lattice point)."""
    eps_t = float(node.eps_test)
    vx, vy = np.array(x), np.array(y)
    ax = _dl_cdf(threshold_m - node.distance(vx), eps_t)
    ay = _dl_cdf(threshold_m - node.distance(vy), eps_t)
    k = node.lattice_k()
    t = float(node.release_scale() / Fraction(2) ** k)
    cx = int(round_to_lattice(np.array([exact_value(node.query, vx)]), k)[0])
    cy = int(round_to_lattice(np.array([exact_value(node.query, vy)]), k)[0])
    window = np.arange(min(cx, cy) - int(80 * t) - 5, max(cx, cy) + int(80 * t) + 6)
    factor = math.exp(float(node.eps_test + node.eps_release))
    released = np.maximum(0.0, (1 - ax) * _release_pmf(cx, t, window) - factor * (1 - ay) * _release_pmf(cy, t, window)).sum()
    return max(0.0, ax - factor * ay) + float(released)


def _split(eps_test: str, eps_release: str) -> ProposeTest:
    return ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", delta="0.01", granularity=-2,
                       epsilon_test=eps_test, epsilon_release=eps_release)  # fmt: skip


@pytest.mark.parametrize("eps_test, eps_release", [("0.3", "1.2"), ("1.2", "0.3")])
def test_split_ptr_exact_privacy_on_all_neighbours(eps_test: str, eps_release: str) -> None:
    node = _split(eps_test, eps_release)
    m = ceil_log_inv_delta_over_eps(node.eps_test, node.delta) - 1
    worst = max(_delta_needed(node, x, y, m) for x, y in _neighbours(4))
    assert worst <= float(node.delta)


def test_a_threshold_from_the_release_epsilon_is_caught() -> None:
    """The broken variant: the test's threshold computed with ε_r (> ε_t) lets unstable data through."""
    node = _split("0.3", "1.2")
    broken_m = ceil_log_inv_delta_over_eps(node.eps_release, node.delta) - 1
    worst = max(_delta_needed(node, x, y, broken_m) for x, y in _neighbours(4))
    assert worst > float(node.delta)


def test_cost_is_the_sum_and_one_epsilon_still_costs_twice() -> None:
    q = Query.mean("x") | Clip(0, 1)
    assert ProposeTest(q, bound=1, delta="1e-6", epsilon_test="0.1", epsilon_release="0.9").cost() == ApproxDP(1, "1e-6")
    one = ProposeTest(q, bound=1, epsilon="0.5", delta="1e-6")
    assert one.cost() == ApproxDP(1, "1e-6") and one.eps_test == one.eps_release == Fraction(1, 2)


@pytest.mark.parametrize("kwargs, field", [
    ({"delta": "1e-6"}, "epsilon"),
    ({"delta": "1e-6", "epsilon_test": "0.1"}, "epsilon"),
    ({"epsilon": 1, "delta": "1e-6", "epsilon_test": "0.1"}, "epsilon_test"),
    ({"epsilon": 1, "delta": "1e-6", "epsilon_release": "0.1"}, "epsilon_release"),
    ({"delta": "1e-6", "epsilon_test": "0", "epsilon_release": "0.1"}, "epsilon_test"),
    ({"delta": "1e-6", "epsilon_test": "0.1", "epsilon_release": "-1"}, "epsilon_release"),
    ({"epsilon": 1}, "delta"),
])  # fmt: skip
def test_invalid_combinations_fail_at_construction(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"ProposeTest: {field}="):
        ProposeTest(Query.mean("x") | Clip(0, 1), 1, **kwargs)  # type: ignore[arg-type]


def test_the_one_epsilon_repr_is_unchanged() -> None:
    """Certificates record repr(plan): a one-epsilon node must read exactly as before the split existed."""
    node = ProposeTest(Query.median("v") | Clip(0, 3), "0.5", "0.25", "0.01")
    assert repr(node) == (
        "ProposeTest(target=Query.median('v') | Clip(0, 3), bound=Fraction(1, 2), epsilon=Fraction(1, 4), "
        "delta=Fraction(1, 100), relation='add_remove', granularity=None)"
    )
    assert "epsilon_test=Fraction(1, 10)" in repr(_split("0.1", "0.9")) and "epsilon=" not in repr(_split("0.1", "0.9"))


def test_split_release_audits_and_the_release_noise_uses_epsilon_release() -> None:
    node = _split("0.2", "0.8")
    assert node.release_scale() == (Fraction(1, 2) + Fraction(1, 4)) / Fraction(4, 5)  # (b + 2^k)/ε_r, k = -2
    release = Session(ApproxDP(2, "0.1")).run(node, {"v": np.array([1.0, 1, 1, 2, 2, 2, 2])}, rng=3)
    report = audit_certificate(release.certificate)
    assert report.status == "cost_confirmed", report.findings
    wider = ProposeTest(Query.median("v") | Clip(0, 3), bound="0.5", epsilon="0.2", delta="0.01", granularity=-2)
    assert node.release_scale() < wider.release_scale()  # more of the budget on the release: less noise
    mine, theirs = node.accuracy().error, wider.accuracy().error
    assert mine is not None and theirs is not None and mine < theirs


def test_a_certificate_made_before_the_split_still_audits() -> None:
    """A demo certificate (ProposeTest and PTRMode nodes with one epsilon) written by dpalg before
    epsilon_test/epsilon_release existed: the plan rebuilds, its repr and derivation re-derive identically."""
    import json
    from pathlib import Path

    cert = json.loads((Path(__file__).parent / "certificates" / "demo_before_ptr_split.json").read_text())
    assert "ProposeTest(target=" in str(cert["plan_repr"]) and "epsilon_test" not in json.dumps(cert)
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed", report.findings
