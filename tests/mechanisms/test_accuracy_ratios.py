"""Accuracy statements of the shifted inverse, the ratios, BoundedLS and AutoClipSum (issue 20 item 2).

Each statement is checked empirically: the mechanism's ``release`` runs many
times with seeded randomness, and the number of releases outside the stated
error must be at most the exact one-sided binomial bound at 1e-6 for
Binomial(trials, alpha). A deliberately understated variant must fail the
same check (so the check can fail). Proofs: dpalg/mechanisms/bounded_ls/_accuracy.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

import numpy as np
import pytest

from dpalg import InvalidArgument, Query
from dpalg.data import as_dataset
from dpalg.graph._accuracy import Accuracy
from dpalg.mechanisms.shifted_inverse._shifted_inverse import shifted_inverse_removals
from dpalg.mechanisms.auto_clip._auto_clip import AutoClipSum
from dpalg.mechanisms.bounded_ls._bounded_ls import BoundedLS, NoisyCount
from dpalg.mechanisms.bounded_ls._ratio import BoundedLSRatio, KSWRatio, NaiveRatio, PrivateRatio
from dpalg.mechanisms.shifted_inverse._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP
from dpalg.noise import SeededRandomness

ALPHA = Fraction(1, 10)
LEVEL = Fraction(1, 10**6)


def allowed(trials: int, alpha: Fraction, level: Fraction = LEVEL) -> int:
    """The smallest c with P[Binomial(trials, alpha) > c] <= level, exactly (integer arithmetic)."""
    p, q = alpha.numerator, alpha.denominator
    total = q**trials
    tail = 0  # P[X > c] * q**trials
    for c in range(trials, -1, -1):
        # tail currently holds P[X > c]; adding the mass at c gives P[X > c - 1]
        if tail * level.denominator > total * level.numerator:
            return c + 1
        tail += math.comb(trials, c) * p**c * (q - p) ** (trials - c)
    return 0


def test_allowed_is_the_exact_binomial_bound() -> None:
    assert allowed(10, Fraction(1, 2), Fraction(1, 1024)) == 9  # P[X > 9] = 1/1024, P[X > 8] = 11/1024
    assert allowed(100, Fraction(1, 10)) > 10
    assert allowed(1000, Fraction(1, 10)) < 160


def as_int(value: object) -> int:
    assert isinstance(value, (int, np.integer))
    return int(value)


def as_float(value: object) -> float:
    assert isinstance(value, (float, int, np.floating))
    return float(value)


def exceed(errors: list[float], bound: Fraction) -> int:
    return sum(1 for e in errors if e > bound)


# --- shifted inverse ------------------------------------------------------------------

SI_NODES: list[ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP] = [
    ShiftedInverse(Query.user_count(user="u"), domain=(0, 255), epsilon=4),
    ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 255), epsilon=4),
    ShiftedInverseSearchZCDP(Query.user_count(user="u"), domain=(0, 255), rho=2),
]


@pytest.mark.parametrize("node", SI_NODES, ids=lambda n: type(n).__name__)
def test_shifted_inverse_counts(node: ShiftedInverse | ShiftedInverseSearch | ShiftedInverseSearchZCDP) -> None:
    users, trials = 40, 200
    data = as_dataset({"u": np.arange(users)})
    k = shifted_inverse_removals(node, ALPHA)
    assert k is not None and node.tau() < k < users
    acc = node.accuracy(ALPHA, down_sensitivity=k)  # DS^k of a user count is k
    assert acc.error == k and f"removing any {k} users" in (acc.condition or "")
    outs = [as_int(node.release(data, SeededRandomness(s))) for s in range(trials)]
    # one-sided: above f(x) counts as an error of +inf
    errors = [math.inf if m > users else float(users - m) for m in outs]
    assert exceed(errors, acc.error) <= allowed(trials, ALPHA)
    broken = node.accuracy(ALPHA, down_sensitivity=k // 2).error  # half the users removed
    assert broken is not None and exceed(errors, broken) > allowed(trials, ALPHA)


def test_shifted_inverse_fractional_sums() -> None:
    node = ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 1023), epsilon=2)
    rng = np.random.default_rng(5)
    totals = rng.integers(1, 40, size=60) / 4  # exact quarter values: f is fractional
    data = as_dataset({"u": np.arange(60), "v": totals})
    f = Fraction(sum(Fraction(t) for t in totals))
    k = shifted_inverse_removals(node, ALPHA)
    assert k is not None
    top = sorted((Fraction(t) for t in totals), reverse=True)
    d = sum(top[:k])  # DS^k of an additive sum: its k largest totals
    acc = node.accuracy(ALPHA, down_sensitivity=d)
    assert acc.error == d + 1
    trials = 150
    outs = [as_int(node.release(data, SeededRandomness(s))) for s in range(trials)]
    errors = [math.inf if m > f else float(f - m) for m in outs]
    assert exceed(errors, acc.error) <= allowed(trials, ALPHA)
    half = node.accuracy(ALPHA, down_sensitivity=sum(top[: k // 2])).error
    assert half is not None and exceed(errors, half) > allowed(trials, ALPHA)


def test_shifted_inverse_em_needs_its_condition_when_y_lo_exceeds_f_of_empty() -> None:
    """One user holding 100, Y = [100, 200]: floor(f) is in Y but no y has l* <= 0; the EM lands above f."""
    node = ShiftedInverse(Query.user_sum("v", user="u"), domain=(100, 200), epsilon=1)
    acc = node.accuracy(ALPHA)
    assert acc.condition is not None and f"removing any {node.tau() - 1} users leaves f(x) >= 100" in acc.condition
    data = as_dataset({"u": np.array([0]), "v": np.array([100.0])})
    above = sum(1 for s in range(60) if as_int(node.release(data, SeededRandomness(s))) > 100)
    assert above > 30  # the condition fails here, and so does the statement
    assert "f(x) >= 100" in (ShiftedInverseSearch(node.query, domain=(100, 200), epsilon=1).accuracy(ALPHA).condition or "")


def test_shifted_inverse_statement_shapes() -> None:
    em = ShiftedInverse(Query.user_count(user="u"), domain=(0, 2**32 - 1), epsilon=1)
    plain = em.accuracy()
    assert plain.error is None and "DS^101" in plain.notes[0]
    assert shifted_inverse_removals(em, Fraction(1, 20)) == 2 * em.tau() - 1
    none = em.accuracy("0.001", down_sensitivity=5)
    assert none.error is None and "no statement" in none.notes[0]
    search = ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 2**32 - 1), epsilon=1)
    small, large = shifted_inverse_removals(search, "0.05"), shifted_inverse_removals(search, "0.2")
    assert small is not None and large is not None and large < small
    assert em.accuracy(down_sensitivity=10**12).error == 2**32  # never more than the domain


# --- ratios -----------------------------------------------------------------------------


def ratio_rows(a: int, b: int) -> Mapping[str, object]:
    return {"c": np.array([1.0] * a + [0.0] * (b - a))}


RATIO_NODES: list[NaiveRatio | KSWRatio | BoundedLSRatio] = [
    PrivateRatio("c").naive(1),
    PrivateRatio("c").ksw(1),
    PrivateRatio("c").bounded_ls(1, 1, "1e-3"),
]


@pytest.mark.parametrize("node", RATIO_NODES, ids=lambda n: type(n).__name__)
def test_ratio_statement(node: NaiveRatio | KSWRatio | BoundedLSRatio) -> None:
    a, b, trials = 190, 200, 800
    data = as_dataset(ratio_rows(a, b))
    acc = node.accuracy(ALPHA, denominator=b)
    assert acc.error is not None and acc.condition == f"the true denominator b is at least {b}"
    errors = [abs(as_float(node.release(data, SeededRandomness(s))) - a / b) for s in range(trials)]
    assert exceed(errors, acc.error) <= allowed(trials, ALPHA)
    # the bound is conservative (union bound, a/b <= 1, worst-case denominator): a third of it fails
    assert exceed(errors, acc.error / 3) > allowed(trials, ALPHA)


def test_ratio_formulas() -> None:
    naive, ksw = PrivateRatio("c").naive(1), PrivateRatio("c").ksw(1)
    assert naive.accuracy(denominator=1000).error == Fraction(14, 993)  # e = Q_2(1/40) = 7
    assert ksw.accuracy(denominator=1000).error == Fraction(4, 992)  # e = Q_1(1/40) = 4
    assert naive.accuracy().condition == "the true denominator b > 7"
    assert ksw.accuracy(denominator=9).error == 1  # 4/(9 - 8) capped at 1: both lie in [0, 1]
    blsr = PrivateRatio("c").bounded_ls("0.1", "0.9", "1e-6")
    err = blsr.accuracy(denominator=100_000).error
    assert err is not None and err < Fraction(1, 10**4)
    assert blsr.accuracy(denominator=1000).error is not None


# --- BoundedLS ----------------------------------------------------------------------------


def _one(_: Mapping[str, Fraction]) -> Fraction:
    return Fraction(1)


def test_bounded_ls_given_the_bound() -> None:
    node = BoundedLS("a", _one, (NoisyCount("a", where="c"),), epsilon_bound=1, epsilon_release=1, delta="1e-3")
    acc = node.accuracy(ALPHA, ls_bound=1)
    assert acc.error is not None and "g^ is at most 1" in (acc.condition or "")
    data = as_dataset(ratio_rows(30, 50))
    trials = 400
    errors = [abs(as_float(node.release(data, SeededRandomness(s))) - 30) for s in range(trials)]
    assert exceed(errors, acc.error) <= allowed(trials, ALPHA)
    assert exceed(errors, acc.error / 2) > allowed(trials, ALPHA)


def test_bounded_ls_global_sensitivity_and_conditional() -> None:
    counts = (NoisyCount("a", where="in_a"), NoisyCount("b"))
    plain = BoundedLS("a/b", "1/(b_lo - 1)", counts, epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
    assert plain.accuracy().error is None and "ls_bound=G" in " ".join(plain.accuracy().notes)
    capped = BoundedLS("a/b", "1/(b_lo - 1)", counts, epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2},
                       global_sensitivity=1)
    assert capped.accuracy().condition is None
    assert capped.accuracy(ls_bound=5).error == capped.accuracy().error  # the GS caps the bound
    small = capped.accuracy(ls_bound="0.001").error
    assert small is not None and small < Fraction(1, 100)


# --- AutoClipSum ---------------------------------------------------------------------------


def test_auto_clip_given_the_clip() -> None:
    node = AutoClipSum(Query.sum("v", user="u"), epsilon=2, upper_limit=64, grid_steps=6)
    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(30), 2)
    values = rng.integers(0, 40, size=60).astype(np.float64)
    data = as_dataset({"u": users, "v": values})
    totals = [Fraction(int(values[2 * i] + values[2 * i + 1])) for i in range(30)]
    trials = 400
    errors: list[float] = []
    halves: list[bool] = []
    worst = node.accuracy(ALPHA).error
    assert worst is not None
    for s in range(trials):
        out = node.release(data, SeededRandomness(s))
        assert isinstance(out, dict)
        clip = Fraction(out["clip"])
        truth = sum(min(t, min(clip, Fraction(64))) for t in totals)
        acc = node.accuracy(ALPHA, clip=clip)
        assert acc.error is not None and acc.error <= worst
        err = abs(Fraction(out["sum"]) - truth)
        errors.append(float(err / acc.error))  # in units of the stated error at the released clip
        halves.append(err > acc.error / 2)
    assert exceed(errors, Fraction(1)) <= allowed(trials, ALPHA)
    assert sum(halves) > allowed(trials, ALPHA)


# --- validation -------------------------------------------------------------------------------

Call = Callable[[], Accuracy]
INVALID: list[tuple[str, Call]] = [
    ("denominator", lambda: PrivateRatio("c").naive(1).accuracy(denominator=7)),
    ("denominator", lambda: PrivateRatio("c").ksw(1).accuracy(denominator=True)),
    ("denominator", lambda: PrivateRatio("c").bounded_ls(1, 1, "1e-3").accuracy(denominator=3)),
    ("alpha", lambda: PrivateRatio("c").naive(1).accuracy(1)),
    ("down_sensitivity", lambda: SI_NODES[0].accuracy(down_sensitivity=-1)),
    ("alpha", lambda: SI_NODES[1].accuracy(0)),
    ("clip", lambda: AutoClipSum(Query.sum("v", user="u"), epsilon=1, upper_limit=64).accuracy(clip=3)),
    ("ls_bound", lambda: BoundedLS("a", _one, (NoisyCount("a"),), epsilon_bound=1, epsilon_release=1, delta="1e-3").accuracy(ls_bound=-1)),
]


@pytest.mark.parametrize(("field", "call"), INVALID)
def test_invalid_arguments(field: str, call: Call) -> None:
    with pytest.raises(InvalidArgument, match=field):
        call()


def test_summary_shows_every_statement() -> None:
    from dpalg import Compose

    plan = Compose(ShiftedInverse(Query.user_count(user="u"), domain=(0, 255), epsilon=4),
                   ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 255), epsilon=4))
    text = str(plan.summary("0.001"))  # below the nodes' beta: no statement, but no error either
    assert text.count("no statement at alpha") == 2
    assert "denominator" in str(RATIO_NODES[0].summary())
