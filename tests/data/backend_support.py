"""Helpers shared by the backend test modules of ``tests/data`` (numpy, pandas, polars, Spark).

Test modules cannot import one another under ``--import-mode=importlib``;
``tests/conftest.py`` puts this folder on ``sys.path``, so they import this plain
module instead. It imports neither pyspark nor polars (the fast suite runs without
pyspark): what needs them imports them inside a function.

* the guard and marks of a Spark test module (:func:`spark_module_marks`);
* bit identity: :func:`canon`, :func:`outcome`, :func:`canonical`, :func:`answer`,
  and :func:`window_buckets` (the bucketed order window on short columns);
* the adversarial values, bounds and hypothesis strategies of the conformance suites;
* synthetic data for the end-to-end releases (:func:`people`, :func:`synthetic_users`);
* seeded releases and the part of a certificate every backend agrees on
  (:func:`seeded_release`, :func:`comparable`, :func:`comparable_release`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import strategies as st

from dpalg import ZCDP, ApproxDP, Clip, Compose, InvalidArgument, PureDP, PureToApprox, Query
from dpalg.data import LatticeSum, OrderWindow, Reductions, SumSpec
from dpalg.data._fixed_point import lattice_bounds
from dpalg.data._unit_spec import UnitTotalSpec
from dpalg.data import _numpy_reductions as nr
from dpalg.mechanisms import Laplace, SmoothBound
from dpalg.mechanisms.shifted_inverse._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP

NAN, INF = math.nan, math.inf
Question = tuple[str, Callable[[Reductions], object]]

# -- a Spark test module -------------------------------------------------------------------


def spark_module_marks() -> list[pytest.MarkDecorator]:
    """Called at a Spark test module's top (``pytestmark = spark_module_marks()``), before it imports pyspark.

    Skips the module where pyspark is missing; under ``DPALG_REQUIRE_SPARK=1`` (.ci/run installs
    the extra) a missing pyspark or Java fails instead. Returns the module's marks: ``spark``, the
    pandas-support warning ignored, and a skip where Java is missing.
    """
    required = bool(os.environ.get("DPALG_REQUIRE_SPARK"))
    if required:
        import pyspark  # noqa: F401
    else:
        pytest.importorskip("pyspark")
    from dpalg.data._spark import java_problem

    return [
        pytest.mark.spark,
        pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
        pytest.mark.skipif(java_problem() is not None and not required, reason="Spark needs Java"),
    ]


# -- comparing answers bit for bit --------------------------------------------------------


def canon(x: object, *, zeros: bool = True) -> object:
    """A value whose equality is bit identity: arrays by dtype, shape and bytes; floats by hex; keys with their type.

    ``zeros=False``: the sign of a zero is ignored.
    """
    if isinstance(x, np.ndarray):
        if not zeros and x.dtype.kind == "f":
            x = x + 0.0
        return ("array", str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, OrderWindow):
        return ("window", x.n, x.first, canon(x.values, zeros=zeros))
    if isinstance(x, LatticeSum):
        return ("sum", x.total, x.count, x.k)
    if isinstance(x, float):
        return ("float", (x if zeros else x + 0.0).hex())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [canon(v, zeros=zeros) for v in x])
    if isinstance(x, dict):
        return ("dict", sorted(((repr(canon(k)), canon(v)) for k, v in x.items()), key=lambda kv: kv[0]))
    return (type(x).__name__, x)


def outcome(ask: Callable[[], object]) -> tuple[object, Exception | None]:
    """The answer, or the error when the call raises (so a slow backend is asked each question once)."""
    try:
        return ask(), None
    except (InvalidArgument, OverflowError, ValueError) as exc:
        return None, exc


def canonical(result: tuple[object, Exception | None], *, zeros: bool = True) -> object:
    """The canonical form of an :func:`outcome`: :func:`canon` of the answer, or the error's type and message."""
    value, exc = result
    if exc is not None:
        return ("raised", type(exc).__name__, str(exc))
    return canon(value, zeros=zeros)


def answer(ask: Callable[[], object], *, zeros: bool = True) -> object:
    """The canonical answer, or the error (type and message) when the call raises."""
    return canonical(outcome(ask), zeros=zeros)


@contextmanager
def window_buckets(buckets: int | None) -> Iterator[None]:
    """With ``buckets``: the bucketed order window on short columns (in every backend), for the block."""
    with pytest.MonkeyPatch.context() as mp:
        if buckets is not None:
            mp.setattr(nr, "_WINDOW_BUCKETS", buckets)
            mp.setattr(nr, "BLOCK", 7)
        yield


# -- values and questions ---------------------------------------------------------------------

#: the schema table (docs/data_policy.md): the kinds of column each role accepts, on every backend
ACCEPTS: dict[str, frozenset[str]] = {
    "numeric": frozenset({"bool", "int", "float", "object"}),
    "key": frozenset({"bool", "int", "float", "str", "bytes", "object"}),
    "int-keys": frozenset({"int", "float", "object"}),
    "str-keys": frozenset({"str", "object"}),
    "id": frozenset({"int", "float", "str", "bytes", "object"}),
}

SPECIAL_FLOATS: list[Any] = [
    NAN, None, INF, -INF, -0.0, 0.0, 1e308, -1e308, 0.5, 1.5, 2.5, -0.5, -2.5, 5e-324, 9007199254740993.0,
    4503599627370495.5, 2.0**51 + 0.5, 0.1, 10.0, 7.25,
]  # fmt: skip
INTS: list[Any] = [None, 0, 1, -1, 2, 3, 7, 10, -3, 2**53, 2**53 + 1, 2**62, -(2**63), 2**63 - 1]
float_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(SPECIAL_FLOATS),
    st.integers(-44, 44).map(lambda i: i / 4),  # ties on the lattices 2**-1 and 2**0, and on grid points
    st.floats(allow_nan=False, width=64),
)
int_values: st.SearchStrategy[Any] = st.one_of(st.sampled_from(INTS), st.integers(-(2**63), 2**63 - 1))
bool_values: st.SearchStrategy[Any] = st.sampled_from([True, False, None])
# id columns by kind, few distinct values: users with several rows
ID_VALUES: dict[str, list[Any]] = {
    "int": [None, 0, 1, 2, 3, -1, 2**53, 2**53 + 1, 2**63 - 1],
    "float": [None, NAN, 0.0, -0.0, 1.0, 0.5, 2.5, INF, -INF, 2.0**53, 1e308],
    "bool": [True, False, None],
    "str": [None, "a", "b", "", "1", "ä", "a "],
}

CLIP_BOUNDS = [
    (Fraction(0), Fraction(10)),
    (Fraction(-5, 2), Fraction(29, 4)),
    (Fraction(1, 10), Fraction(1, 2)),
    (Fraction(-1, 3), Fraction(-1, 3)),
    (Fraction(1e308) * -1, Fraction(1e308)),
    (Fraction(-(10**400)), Fraction(10**400)),
    (Fraction(-(10**15)), Fraction(10**15)),
]
INT64_BOUNDS = (Fraction(-(2**63)), Fraction(2**63))
KS = [-1, 0, 2, -20, -45, -1074, 1100]
# the conformance suites' keys: every kind of key, and values no column holds
KEYS: list[Any] = [0, 1, 0.5, True, False, "a", "", 2.5, -0.0, 1e308, NAN, None, 10**400, 2**53, 2**53 + 1, b"a", -INF, 2**63 - 1]


@attrs.frozen
class Ask:
    """The public parameters of one round of questions (drawn by hypothesis)."""

    bounds: tuple[Fraction, Fraction]
    ks: list[int]
    bits: int
    first: int
    width: int
    k: int
    unit_bounds: tuple[float | None, float | None] = (None, None)
    unit_k: int = -20


def ask_strategy(
    bounds: list[tuple[Fraction, Fraction]], denominators: list[int], unit_bounds: list[tuple[float | None, float | None]]
) -> st.SearchStrategy[Ask]:
    """Rounds of questions: clip bounds from ``bounds`` or ``lower``, ``lower + width`` on small lattices
    (``lower``'s denominator from ``denominators``), per-unit bounds from ``unit_bounds``."""
    lattice = st.tuples(st.integers(-40, 40), st.sampled_from(denominators), st.integers(0, 80), st.sampled_from([1, 2, 4]))
    return st.builds(
        Ask,
        st.one_of(st.sampled_from(bounds), lattice.map(lambda t: (Fraction(t[0], t[1]), Fraction(t[0], t[1]) + Fraction(t[2], t[3])))),
        st.lists(st.one_of(st.sampled_from([-1074, -45, -20, 0, 60, 1100]), st.integers(-8, 4)), min_size=1, max_size=4),
        st.sampled_from([1, 3, 16]), st.integers(-2, 30), st.integers(0, 6), st.sampled_from([0, 1, 3, 40]),
        st.sampled_from(unit_bounds), st.one_of(st.sampled_from([-1000, -45, -20, 0, 60, 900]), st.integers(-8, 4)),
    )  # fmt: skip


def square_specs(column: str, lower: Fraction, upper: Fraction, ks: list[int]) -> list[SumSpec]:
    """Square-term specs (``SumSpec(centre=, shift=)``) for the conformance suites: for each ``k``, centred on the
    lattice midpoint with shifts 0 and 3, and off-centre (a term far from the centre takes the exact path)."""
    specs: list[SumSpec] = []
    for k in ks:
        try:
            lo_u, hi_u = lattice_bounds(lower, upper, k, "test")
        except InvalidArgument:
            continue  # k outside the lattice range: the plain specs carry the refusal
        c = (lo_u + hi_u) // 2
        specs += [SumSpec(column, lower, upper, k, centre=c), SumSpec(column, lower, upper, k, centre=c, shift=3)]
        specs.append(SumSpec(column, lower, upper, k, centre=hi_u + (1 << 27), shift=1))
    return specs


def unit_sums(unit: str, column: str, lower: float | None, upper: float | None, k: int) -> Callable[[Reductions], object]:
    return lambda r: r.per_unit_sums(unit, column, lower, upper, k)


def unit_max(unit: str, column: str, lower: float | None, upper: float | None) -> Callable[[Reductions], object]:
    return lambda r: r.per_unit_max(unit, column, lower, upper)


# the value column of the per-unit suites: specials, ties at .5, 2**62 (a long total overflows), repeats
UNIT_FLOATS: list[Any] = [
    NAN, None, INF, -INF, -0.0, 0.0, 1e308, -1e308, 0.5, 1.5, 2.5, -0.5, -2.5, 5e-324, 0.1, 10.0, 7.25, 2.5, 2.0**62,
    2.0**62, 9007199254740993.0, 4503599627370495.5, -0.0, 0.25, 0.75, -1.75, 6.5, None, NAN, 3.0,
]  # fmt: skip


# -- synthetic data (only) for the end-to-end releases -------------------------------------------


def people(rows: int, seed: int, labels: tuple[str, str, str, str] = ("n", "s", "e", "w")) -> tuple[list[Any], list[Any], list[Any]]:
    """``x`` (normal, rounded to .1, with None, NaN, ±inf and ±0), a label column with one None, and user ids.

    The labels are drawn with probabilities .4, .3, .2, .1; the ids (one None) after them, so the first two
    columns do not depend on whether the ids are used.
    """
    gen = np.random.default_rng(seed)
    x: list[Any] = np.round(gen.normal(50, 15, rows), 1).tolist()
    label: list[Any] = np.array(labels)[gen.choice(4, rows, p=[0.4, 0.3, 0.2, 0.1])].tolist()
    uid: list[Any] = gen.integers(0, max(rows // 4, 1), rows).tolist()
    for i in range(0, rows, 97):
        x[i] = None
    for i in range(5, rows, 101):
        x[i] = NAN
    for i, value in enumerate([INF, -INF, -0.0, 0.0][: max(rows - 1, 0)]):
        x[i + 1] = value
    if rows > 6:
        label[4] = uid[6] = None
    return x, label, uid


def synthetic_users(rows: int = 3000) -> dict[str, list[Any]]:
    """``uid`` (Zipf-distributed strings, some None) and ``v`` (exponential, with None, NaN, inf, −0.0 and a tie)."""
    gen = np.random.default_rng(11)
    uid: list[Any] = [f"user{int(u)}" for u in gen.zipf(1.6, rows) % 400]
    v: list[Any] = np.round(gen.exponential(20, rows), 2).tolist()
    for i in range(0, rows, 53):
        v[i] = None
    for i in range(7, rows, 61):
        v[i] = NAN
    for i in range(3, rows, 211):
        uid[i] = None
    v[1:4] = [INF, -0.0, 2.5]
    return {"uid": uid, "v": v}


# -- seeded releases ---------------------------------------------------------------------------

SEED = 20240917  # seeded runs warn (InsecureRandomnessWarning), ignored by the suite's configuration
COMPOSE_BUDGET = ApproxDP(4, "1e-6")


def compose_plan(id_keys: tuple[Any, ...] | None) -> Compose[ApproxDP]:
    """A Laplace sum and variance and a SmoothBound median of ``x``, and a Laplace histogram of ``id`` over ``id_keys``.

    ``id_keys=None`` (a bool ``id``, which no public key matches): a Laplace count of the present ``id`` values instead.
    """
    clip = Clip(0, 100)
    third = Query.count("id") if id_keys is None else Query.histogram("id", keys=id_keys)
    return Compose(
        PureToApprox(Laplace(Query.sum("x") | clip, epsilon=1)),
        SmoothBound(Query.median("x") | clip, epsilon=1, delta="1e-6"),
        PureToApprox(Laplace(third, epsilon=1)),
        PureToApprox(Laplace(Query.variance("x") | clip, epsilon=1)),  # a count, a sum and a sum of squares
    )


def shifted_plans(*, huge_clip: bool = True) -> list[tuple[Callable[[], Any], Any]]:
    """One plan per shifted-inverse form and query kind (a maker: a checked plan runs once), with its budget.

    ``huge_clip``: with the user sum clipped at 10**400 too.
    """
    clip = Clip(0, 100)
    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: ShiftedInverse(Query.user_sum("v", user="uid") | clip, domain=(0, 2**20), epsilon=1), PureDP(1)),
        (lambda: ShiftedInverse(Query.user_sum("v", user="uid"), domain=(0, 2**40 - 1), epsilon=1), PureDP(1)),
        (lambda: ShiftedInverse(Query.user_sum("v", user="uid") | Clip(0, 10**400), domain=(0, 2**20), epsilon=1), PureDP(1)),
        (lambda: ShiftedInverseSearch(Query.user_max("v", user="uid") | clip, domain=(0, 127), epsilon=1), PureDP(1)),
        (lambda: ShiftedInverseSearchZCDP(Query.count("v", user="uid"), domain=(0, 4095), rho="0.5"), ZCDP("0.5")),
        (lambda: ShiftedInverse(Query.user_count(user="uid"), domain=(0, 1023), epsilon=1), PureDP(1)),
    ]
    return plans if huge_clip else plans[:2] + plans[3:]


#: ids for the users' totals: above 2**53 (distinct as ints, one as floats), repeated, missing
UNIT_IDS: list[Any] = [2**53, 2**53 + 1, None, 7, 7, 2**53, 1, 7, None, 2**62] * 3


def unit_total_specs() -> list[UnitTotalSpec]:
    """The users' totals questions every backend must answer as numpy does (every exact-sum and fallback path)."""
    return [
        UnitTotalSpec("id", "x", "sum", 0, 0, 2**62),  # no row clip: rows clamped at 2**61, totals at 2**62
        UnitTotalSpec("id", "x", "sum", -1, -3, 9, Fraction(-1, 3), Fraction(7, 2)),  # ties at .5, a bound no float holds
        UnitTotalSpec("id", "x", "sum", -1000, -1, 1),
        UnitTotalSpec("id", "x", "sum", 900, -(2**62), 2**62, Fraction(-(10**300)), Fraction(10**300)),
        UnitTotalSpec("id", "x", "sum", -999, -(2**62), 2**62, Fraction(-(10**300)), Fraction(10**300)),  # a clip beyond 2**61 steps
        UnitTotalSpec("id", None, "count", 0, 1, 2),  # a user without a present value still counts (clamped up to 1)
        UnitTotalSpec("id", "x", "count", 0, 0, 10, max_rows=2),
        UnitTotalSpec("id", "x", "count", 0, -5, 3),
        UnitTotalSpec("id", "x", "sum", -2, -(2**40), 2**40, Fraction(-4), Fraction(10), max_rows=2),  # a row cap on a sum
        UnitTotalSpec("id", "x", "sum", 0, 0, 2**62, max_rows=1),
    ]


#: the partition layouts of the user-level Spark tests (the last holds whole users per partition)
USER_LAYOUTS = ("repartition(1)", "repartition(7)", "repartition(7, uid)")


def user_layout(frame: Any, layout: str) -> Any:
    """``frame`` in one of :data:`USER_LAYOUTS`."""
    if layout == "repartition(1)":
        return frame.repartition(1)
    if layout == "repartition(7)":
        return frame.repartition(7)
    return frame.repartition(7, "uid")


def seeded_release(plan: Any, budget: Any, data: object) -> tuple[str, dict[str, Any]]:
    """The checked plan run on ``data`` with the seed: the value's repr and the certificate (as JSON)."""
    plan.check(budget)
    release = plan.run(data, rng=SEED)
    return repr(release.value), json.loads(release.certificate_json())


def comparable(certificate: dict[str, Any]) -> dict[str, Any]:
    """The certificate without what must differ between backends and runs: ``backend`` (where recorded), ``schema``
    (where recorded), ``created`` and the digest."""
    rest = dict(certificate)
    del rest["created"], rest["digest"]  # a hash over the certificate, timestamp included
    rest.pop("backend", None)  # the one field that names the backend and its versions
    # the declared types, which backends name differently: a pandas object column of str is "object" where polars'
    # String is "str", and an empty list has no type ("object") where a typed empty column has its own
    rest.pop("schema", None)
    return rest


def comparable_release(plan: Any, budget: Any, data: object) -> tuple[str, dict[str, Any]]:
    """:func:`seeded_release` with the certificate :func:`comparable` across backends."""
    value, certificate = seeded_release(plan, budget, data)
    return value, comparable(certificate)


def backend_name(certificate: dict[str, Any]) -> str | None:
    """The backend a certificate names, or None where it records none."""
    backend = certificate.get("backend")
    return None if backend is None else backend.get("name")


# -- lazy inputs that fail on one value (evaluated before the charge) ----------------------------

#: the private value a failing lazy input chokes on: no message, warning or log line may show it
SECRET = "SECRET-4711"
#: the raw strings of a lazy input's failing column ``x``, one of them the secret; ``u`` the ids
LAZY_RAW = ("3", "1", SECRET, "2", "5", "4")
LAZY_IDS = (1, 2, 3, 1, 2, 3)


def parse_or_quote(value: str) -> int:
    """A user function that fails on a value the way user code does: quoting it."""
    if not value.isdigit():
        raise ValueError(f"not a number: {value!r}")
    return int(value)


def lazy_plans() -> dict[str, Callable[[], Any]]:
    """Fresh (ε, δ) plans (one :data:`LAZY_BUDGET` session runs them all) reading the failing column ``x`` as a
    number, as a key, at user level, and in a Compose."""
    from dpalg import ClipPerUser
    from dpalg.mechanisms import StableHistogram

    return {
        "sum": lambda: PureToApprox(Laplace(Query.sum("x") | Clip(0, 10), epsilon=1)),
        "median": lambda: SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
        "keys": lambda: StableHistogram(Query.histogram("x"), epsilon=1, delta="0.05"),
        "user-sum": lambda: PureToApprox(Laplace(Query.sum("x", user="u") | ClipPerUser(0, 20), epsilon=1)),
        "compose": lambda: PureToApprox(
            Compose(Laplace(Query.count(), epsilon=1), Laplace(Query.mean("x") | Clip(0, 10), epsilon=1))
        ),
    }


#: a session budget every plan of :func:`lazy_plans` fits, several times
LAZY_BUDGET = ApproxDP(10, "0.5")


#: the backends' own loggers: py4j traces every command (the test's own filter literal among them) and pyspark
#: logs a failed job's error, value included, at ERROR when it raises it; neither is dpalg's to silence
BACKEND_LOGGERS = ("py4j", "pyspark", "DataFrameQueryContextLogger")


@contextmanager
def no_secret_shown(caplog: pytest.LogCaptureFixture) -> Iterator[list[BaseException]]:
    """Collect what the block raises (append it to the yielded list), its warnings and the log records of every
    logger but the backends' own (:data:`BACKEND_LOGGERS`); none may show :data:`SECRET`.

    The raised exception is checked with its whole chain as a traceback prints it
    (``__cause__``, ``__context__``), and must chain nothing (the backend's exception
    is not kept).
    """
    import logging
    import traceback
    import warnings

    raised: list[BaseException] = []
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield raised
    ours = [r for r in caplog.records if not r.name.startswith(BACKEND_LOGGERS)]
    shown = [str(w.message) for w in caught] + [r.getMessage() for r in ours]
    for exc in raised:
        shown.append("".join(traceback.format_exception(exc)))
        assert exc.__cause__ is None and exc.__context__ is None, repr(exc)
    assert not any(SECRET in text for text in shown), [t for t in shown if SECRET in t]
