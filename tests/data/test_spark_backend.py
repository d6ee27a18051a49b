"""The Spark backend of the reductions seam (issue 17, part 1), in local mode.

* conformance: every reduction of :class:`SparkReductions` is bit-identical to
  :class:`NumpyReductions` on the same values in the same row order (NaN, None,
  ±inf, −0.0, duplicates, empty, ties at .5, ±1e308), including the bucketed order
  window (buckets shrunk to 4); on int, bool, string, binary and decimal columns;
* ``repartition(1)``, ``repartition(7)`` and ``repartition(7, "id")`` change no
  answer (up to the sign of a tied zero, which follows the row order, as numpy's);
* Spark's ``rint`` is ties-to-even (its ``round`` is not);
* integration: the schema is read without a job; a missing pyspark names the
  extra; a missing Java is a clear error;
* end to end: a Laplace mean, a SmoothBound median and a Laplace histogram give
  the same release with the same seed on Spark and on a dict.

Every test is ``@pytest.mark.spark`` and is skipped only where pyspark or Java is
absent. One session-scoped SparkSession: ``local[2]``, UI off, 4 shuffle
partitions, ANSI mode at its default.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from backend_support import CLIP_BOUNDS as BOUNDS, INF, KS, NAN, Question, answer, canon, canonical
from backend_support import comparable_release, outcome, people, spark_module_marks

pytestmark = spark_module_marks()  # pyspark, or the module is skipped (under DPALG_REQUIRE_SPARK=1: fails)

from dpalg import ApproxDP, BackendError, Clip, InvalidArgument, PureDP, Query, Unsupported  # noqa: E402
from dpalg.data import Reductions, SumSpec, as_dataset, as_reductions  # noqa: E402
from dpalg.data import _numpy_reductions as nr  # noqa: E402
from dpalg.data._grid_view import BlockedGrid  # noqa: E402
from dpalg.data._spark import SparkSource, java_problem  # noqa: E402
from dpalg.mechanisms import Laplace, SmoothBound  # noqa: E402

# -- questions (compared bit for bit: backend_support.canon) --------------------------------

KEYS: list[Any] = [0, 1, 0.5, True, False, "a", 2.5, -0.0, 1e308, NAN, None, 10**400, 2**53 + 1, b"a", -INF, "b", 3]


def _questions(bounds: list[tuple[Fraction, Fraction]], column: str = "x") -> list[Question]:
    out: list[Question] = [
        ("n_rows", lambda r: r.n_rows),
        ("count", lambda r: r.count(column)),
        ("count_distinct", lambda r: r.count_distinct(column)),
        ("key_histogram", lambda r: r.key_histogram(column)),
        ("key_counts", lambda r: r.key_counts(column, KEYS)),
        ("unit_count", lambda r: r.unit_count(column)),
    ]
    for lower, upper in bounds:
        out += _bounded_questions(column, lower, upper)
    return out


def _bounded_questions(column: str, lower: Fraction, upper: Fraction) -> list[Question]:
    b = f"[{lower}, {upper}]"[:60]
    specs = [SumSpec(column, lower, upper, k) for k in KS]
    out: list[Question] = [
        (f"clipped_sums {b}", lambda r: r.clipped_sums(specs)),
        (f"order_window {b}", lambda r: r.order_window(column, lower, upper, 2, 7)),
        (f"order_window all {b}", lambda r: r.order_window(column, lower, upper, -3, 10**6)),
        (f"extremes {b}", lambda r: r.extremes(column, lower, upper, 3)),
    ]
    if lower < upper:
        out += [(f"grid_counts {b} bits=3", lambda r: r.grid_counts(column, lower, upper, 3))]
        out += [(f"grid_counts {b} bits=16", lambda r: r.grid_counts(column, lower, upper, 16))]
    return out


def _frame(spark: Any, values: list[Any], ddl: str = "double") -> Any:
    return spark.createDataFrame([(i, v) for i, v in enumerate(values)], f"id long, x {ddl}")


def _reference(ds: Any) -> Reductions:
    """The numpy backend on the values of a Spark dataset, in the frame's row order."""
    source = ds.source
    assert isinstance(source, SparkSource)
    return as_reductions(as_dataset({name: ds.column(name) for name in ds.names}))


def _assert_same(reference: Reductions, backend: Reductions, questions: list[Question], *, label: str = "",
                 loose: Reductions | None = None) -> None:  # fmt: skip
    """Every answer of ``backend`` bit-equal to ``reference``'s (and to ``loose``'s up to the sign of a zero)."""
    for name, ask in questions:
        result = outcome(lambda: ask(backend))
        want, got = answer(lambda: ask(reference)), canonical(result)
        assert got == want, f"{label} {name}: spark {got} != numpy {want}"
        if loose is not None:
            want, got = answer(lambda: ask(loose), zeros=False), canonical(result, zeros=False)
            assert got == want, f"{label} {name} (zero signs ignored): spark {got} != numpy {want}"


FLOATS: list[Any] = [
    NAN, None, INF, -INF, -0.0, 0.0, 1e308, -1e308, 0.5, 1.5, 2.5, -0.5, -2.5, 5e-324, 0.1, 10.0, 7.25, 2.5, 2.5, 3.0,
    3.0, 9007199254740993.0, 4503599627370495.5, 2.0**51 + 0.5, -0.0, 0.25, 0.75, 1.25, -1.75, 6.5, None, NAN,
]  # fmt: skip


@pytest.mark.parametrize("buckets", [None, 4])
@pytest.mark.parametrize(
    "values",
    [FLOATS, [], [None, NAN, None], [0.0] * 5 + [-0.0] * 5 + [5.0], [float(i) / 4 for i in range(-44, 44, 3)]],
    ids=["specials", "empty", "missing", "zeros", "quarters"],
)
def test_float_columns_are_bit_identical(spark: Any, values: list[Any], buckets: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if buckets is not None:  # the bucketed order window on short columns, in both backends
        monkeypatch.setattr(nr, "_WINDOW_BUCKETS", buckets)
        monkeypatch.setattr(nr, "BLOCK", 7)
    ds = as_dataset(_frame(spark, values))
    backend = as_reductions(ds)
    assert type(backend).__name__ == "SparkReductions"
    direct = as_reductions(as_dataset({"id": list(range(len(values))), "x": values}))  # the dict, as the user wrote it
    bounds = (BOUNDS if buckets is None else BOUNDS[:2] + BOUNDS[4:6]) if values is FLOATS else BOUNDS[:2]
    _assert_same(direct, backend, _questions(bounds), label="dict")


def test_repartitioning_changes_nothing(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nr, "_WINDOW_BUCKETS", 4)
    values = FLOATS * 3
    frame = _frame(spark, values)
    want = as_reductions(as_dataset({"id": list(range(len(values))), "x": values}))
    questions = _questions(BOUNDS[:2])
    for label, shuffled in (("1", frame.repartition(1)), ("7", frame.repartition(7)), ("7 by id", frame.repartition(7, "id"))):
        ds = as_dataset(shuffled)
        backend = as_reductions(ds)
        # bit for bit the numpy backend on the frame's own row order, and the dict's answers up to the
        # sign of a tied zero (which follows the row order, in numpy as here)
        _assert_same(_reference(ds), backend, questions, label=f"repartition({label})", loose=want)


def test_wide_sums_go_through_decimal_and_stay_exact(spark: Any) -> None:
    """2500 terms of up to 2**52: beyond a long, so the sum is taken in decimal(38,0), exactly."""
    values: list[Any] = [2.0**52 - 0.5, 2.0**52, 1e300, INF, 4503599627370495.5, NAN, None, -0.0] * 500
    spec = SumSpec("x", Fraction(-(2**52)), Fraction(2**52), 0)
    want = as_reductions(as_dataset({"x": values})).clipped_sums([spec])
    got = as_reductions(as_dataset(_frame(spark, values).repartition(5))).clipped_sums([spec])
    assert got == want and want[0].total > 2**63


def test_spark_rint_is_ties_to_even_and_round_is_not(spark: Any) -> None:
    ties = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 4503599627370495.5, 2.0**52 + 1, 1e308, -7.5, 5e-324]
    frame = spark.createDataFrame([(v,) for v in ties], "v double")
    from pyspark.sql import functions as F

    rows = frame.select(F.rint("v"), F.round("v")).collect()
    assert np.array_equal(np.array([r[0] for r in rows]), np.rint(ties))
    assert [r[1] for r in rows][:3] == [1.0, 2.0, 3.0]  # HALF_UP: not usable for the lattice


@pytest.mark.parametrize(
    ("ddl", "values"),
    [
        ("long", [3, None, -(2**63), 2**63 - 1, 2**53 + 1, 2**53, 0, 3, 7, -1]),
        ("long", [1, 2, 3, 4, 5, 6, 1, 2, 0, 0]),
        ("int", [5, -5, None, 2**31 - 1, 0, 5]),
        ("boolean", [True, False, None, True, True]),
        ("float", [0.1, None, float("nan"), -0.0, 2.5, 3.4028234663852886e38, 1.5]),
    ],
)
def test_other_numeric_types_are_bit_identical(spark: Any, ddl: str, values: list[Any]) -> None:
    ds = as_dataset(_frame(spark, values, ddl))
    direct = as_dataset({"x": np.array(values, dtype=np.float32)} if ddl == "float" else {"x": values})
    _assert_same(as_reductions(direct), as_reductions(ds), _questions(BOUNDS[:2] + BOUNDS[5:6]), label=ddl)


@pytest.mark.parametrize(
    ("ddl", "values"),
    [
        ("string", ["a", "b", None, "a", "", "1", "b", "a"]),
        ("binary", [bytearray(b"a"), bytearray(b"b"), None, bytearray(b"a")]),
        ("decimal(10,2)", [Decimal("1.50"), None, Decimal("2.00"), Decimal("1.50"), Decimal("-3.25")]),
    ],
)
def test_key_and_decimal_columns_are_bit_identical(spark: Any, ddl: str, values: list[Any]) -> None:
    ds = as_dataset(_frame(spark, values, ddl))
    plain = [bytes(v) if isinstance(v, bytearray) else v for v in values]
    direct = as_reductions(as_dataset({"x": plain}))
    questions = _questions([]) if ddl != "decimal(10,2)" else _questions(BOUNDS[:2])
    if ddl != "decimal(10,2)":  # numbers of a key column: both refuse with the schema error
        questions = [q for q in questions if q[0] in ("n_rows", "key_histogram", "key_counts", "unit_count")]
    _assert_same(direct, as_reductions(ds), questions, label=ddl)


def test_invalid_questions_raise_what_numpy_raises(spark: Any) -> None:
    import datetime

    frame = spark.createDataFrame([(1.0, "a", datetime.date(2020, 1, 1)), (2.0, "b", datetime.date(2021, 1, 1))], "x double, s string, d date")
    reference = as_reductions(as_dataset({"x": [1.0, 2.0], "s": np.array(["a", "b"]), "d": np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]")}))
    backend = as_reductions(as_dataset(frame))
    asks: list[Callable[[Reductions], object]] = [
        lambda r: r.clipped_sums([SumSpec("x", Fraction(0), Fraction(1), 0), SumSpec("x", Fraction(2), Fraction(1), 0)]),
        lambda r: r.clipped_sums([SumSpec("s", Fraction(2), Fraction(1), 0)]),
        lambda r: r.grid_counts("x", Fraction(0), Fraction(1), 0),
        lambda r: r.grid_counts("x", Fraction(1), Fraction(1), 3),
        lambda r: r.extremes("x", Fraction(0), Fraction(1), -1),
        lambda r: r.order_window("s", Fraction(0), Fraction(1), 0, 1),
        lambda r: r.count("nope"),
        lambda r: r.key_histogram("nope"),
        lambda r: r.unit_count("d"),
    ]
    for ask in asks:
        want, got = answer(lambda: ask(reference)), answer(lambda: ask(backend))
        assert want[0] == "raised"  # type: ignore[index]
        assert got == want or str(got).replace("<U0", "<U1") == str(want), (got, want)


# -- integration ---------------------------------------------------------------------------


def test_schema_is_read_without_a_job_and_columns_are_collected_once(spark: Any) -> None:
    frame = spark.createDataFrame([(1, 2.5, "a", True), (None, None, None, None)], "i long, x double, s string, b boolean")
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("dpalg-schema", "schema only")
    try:
        ds = as_dataset(frame)
        assert ds.names == ("i", "x", "s", "b")
        assert [str(ds.column_dtype(n)) for n in ds.names] == ["int64", "float64", "<U0", "bool"]
        assert list(tracker.getJobIdsForGroup("dpalg-schema")) == []
    finally:
        spark.sparkContext.setJobGroup("dpalg-other", "after")
    assert repr(ds) == "<Dataset columns=['i', 'x', 's', 'b'] source=SparkSource(DataFrame)>"
    assert ds.column("i").dtype == object and ds.column("i").tolist() == [1, None]  # a nullable long stays exact ints
    assert ds.column("x").base is ds.column("x").base  # cached
    assert ds.numeric("b")[0] == 1.0 and math.isnan(ds.numeric("b")[1])
    assert ds.key_index("s")[0] == ("a",)
    with pytest.raises(InvalidArgument, match="string dtype"):
        ds.numeric("s")


def test_missing_pyspark_names_the_extra(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = spark.createDataFrame([(1.0,)], "x double")
    monkeypatch.setitem(sys.modules, "dpalg.data._spark", None)  # as if pyspark could not be imported
    with pytest.raises(Unsupported, match=r"pip install 'dpalg\[spark\]'"):
        as_dataset(frame)


def test_missing_java_is_a_clear_error(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    frame = spark.createDataFrame([(1.0,)], "x double")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert java_problem() is not None
    with pytest.raises(Unsupported, match="Spark needs Java"):
        as_dataset(frame)


# -- end to end ----------------------------------------------------------------------------


def test_seeded_plans_give_the_same_release_on_spark_and_a_dict(spark: Any) -> None:
    x, region, _ = people(70_000, 7)  # synthetic data only; more rows than window buckets: the bucketed order window
    columns = {"x": x, "region": region}
    frame = spark.createDataFrame(list(zip(x, region)), "x double, region string").repartition(3)
    clip = Clip(0, 100)
    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: Laplace(Query.mean("x") | clip, epsilon=1), PureDP(1)),
        (lambda: SmoothBound(Query.median("x") | clip, epsilon=1, delta="1e-6"), ApproxDP(1, "1e-6")),
        (lambda: Laplace(Query.histogram("region", keys=("n", "s", "e", "w", "zz")), epsilon=1), PureDP(1)),
    ]
    for make, budget in plans:
        assert comparable_release(make(), budget, frame) == comparable_release(make(), budget, columns), make()


def _contiguous_span(span: Any, cells: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> tuple[int, int]:
    """Check that ``span`` is the occupied cells ``i0 .. i1 - 1`` of the whole grid (with below, prev and next); ``(i0, i1)``."""
    i0 = int(np.searchsorted(cells, span.cells[0])) if span.cells.size else int(np.searchsorted(cells, (span.prev or -1) + 1))
    i1 = i0 + int(span.cells.size)
    assert span.cells.tolist() == cells[i0:i1].tolist() and span.counts.tolist() == counts[i0:i1].tolist()
    assert span.below == int(counts[:i0].sum()) and span.n == int(counts.sum())
    assert span.prev == (int(cells[i0 - 1]) if i0 else None) and span.next == (int(cells[i1]) if i1 < cells.size else None)
    return i0, i1


@pytest.mark.parametrize(("data", "bits"), [("people", 20), ("dense", 14)])
def test_the_grid_read_in_blocks_is_the_whole_grid_in_parts(spark: Any, data: str, bits: int) -> None:
    """SparkReductions.grid_view (block counts, then a block's cells): each span is a slice of numpy's whole grid.

    The spans hold every cell holding the asked ranks; ``around(p)`` covers ``p``; the
    whole grid is never counted; each block range is fetched once. ``people``: ties
    (rounded to .1), None, NaN, ±inf, ±0, both ends clipped; ``dense``: 4 values per
    cell on average, so nearly every cell (the first and last of a block too) is occupied.
    """
    if data == "people":
        x, _, _ = people(20_000, 11)
        lo, hi = Fraction(20), Fraction(80)
    else:
        x = np.random.default_rng(11).random(4 * 2**bits).tolist()
        lo, hi = Fraction(0), Fraction(1)
    frame = spark.createDataFrame([(v,) for v in x], "x double")
    cells, counts = as_reductions(as_dataset({"x": np.array([np.nan if v is None else v for v in x])})).grid_counts("x", lo, hi, bits)
    view = as_reductions(as_dataset(frame)).grid_view("x", lo, hi, bits)
    assert isinstance(view, BlockedGrid) and view.counted is None and view.n == int(counts.sum())
    upto = np.cumsum(counts)
    for first, last in [(0, 0), (0, 30), (9_000, 9_050), (9_500, 9_500), (view.n // 3, view.n // 3 + 900), (view.n - 1, view.n - 1), (0, view.n - 1)]:
        i0, i1 = _contiguous_span(view.span(first, last), cells, counts)
        holding = np.flatnonzero((upto > first) & (upto - counts <= last))  # the cells holding a rank in first..last
        assert i0 <= holding[0] and holding[-1] < i1
        r_lo, r_hi = view.rank_block(first)
        assert r_lo <= first < r_hi
    for p in [0, 1, 3, 2**bits // 3, 2**bits // 2 + 1, 2**bits - 1, 2**bits]:
        span = view.around(p)
        _contiguous_span(span, cells, counts)
        assert (span.prev if span.prev is not None else -1) < p < (span.next if span.next is not None else 2**bits + 1) or p in span.cells
    assert view.fetches <= 14  # once per distinct block range: never the whole grid


@pytest.mark.parametrize("q", ["1/2", "1/10", "9/10"])
def test_a_seeded_exponential_quantile_is_the_same_on_spark_and_a_dict(spark: Any, q: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The release reads two block passes on Spark (never the whole grid; only a few blocks' cells reach the driver)."""
    from dpalg.data import _spark_collect as spark_collect
    from dpalg.data import _spark_reductions as spark_reductions
    from dpalg.mechanisms import ExponentialQuantile

    x, _, _ = people(30_000, 3)
    columns = {"x": x}
    frame = spark.createDataFrame([(v,) for v in x], "x double").repartition(3)
    collected: list[int] = []
    original = spark_collect.arrow_table

    def counted(table: Any) -> Any:
        got = original(table)
        collected.append(-1 if got is None else int(got.num_rows))
        return got

    monkeypatch.setattr(spark_reductions, "arrow_table", counted)
    monkeypatch.setattr(spark_reductions.SparkReductions, "_grid_counts", None)  # the whole grid: never
    settings: list[tuple[int | str, int]] = [(1, 20), ("0.05", 20), (1, 13)]
    for epsilon, bits in settings:
        def make() -> Any:
            return ExponentialQuantile(Query.quantile("x", Fraction(q)) | Clip(0, 100), epsilon=epsilon, grid_bits=bits)

        collected.clear()
        assert comparable_release(make(), PureDP(epsilon), frame) == comparable_release(make(), PureDP(epsilon), columns), (epsilon, bits)
        assert len(collected) == 2 and collected[0] <= 2**10 + 1 and collected[1] <= 16 * 2**(bits - 10), collected


# -- the run's lifecycle and its jobs --------------------------------------------------------


def _mean() -> Any:
    return Laplace(Query.mean("x") | Clip(0, 100), epsilon=1)


def _mean_plan() -> Any:
    plan = _mean()
    plan.check(PureDP(1))
    return plan


def test_a_run_persists_its_input_and_releases_it_at_the_end(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpalg import Session
    from dpalg.data._spark_reductions import SparkReductions

    original = SparkReductions.clipped_sums
    cached_during: list[bool] = []
    fail = [False]

    def spy(self: SparkReductions, specs: Any) -> Any:
        out = original(self, specs)
        cached_during.append(bool(frame.is_cached))  # persisted on first use, in this run
        if fail[0]:
            raise RuntimeError("a mechanism failed after reading the data")
        return out

    monkeypatch.setattr(SparkReductions, "clipped_sums", spy)
    frame = _frame(spark, [float(i) for i in range(50)])
    _mean_plan().run(frame, rng=1)  # plan.run
    Session(PureDP(1)).run(_mean(), frame, rng=1)  # Session.run
    fail[0] = True
    with pytest.raises(BackendError, match=r"\(RuntimeError; its message is withheld"):  # a run that fails releases the cache too
        _mean_plan().run(frame, rng=1)
    assert cached_during == [True, True, True] and not frame.is_cached

    fail[0] = False
    frame.persist()  # the caller's cache is the caller's
    _mean_plan().run(frame, rng=1)
    assert frame.is_cached
    frame.unpersist()

    ds = as_dataset(frame)  # a dataset the caller built stays open across runs, until the caller closes it
    _mean_plan().run(ds, rng=1)
    assert frame.is_cached
    source = ds.source
    assert isinstance(source, SparkSource)
    source.close()
    source.close()  # idempotent
    assert not frame.is_cached


@pytest.mark.usefixtures("spark_defaults")  # the bounds hold under adaptive execution, Spark's default (a shuffle is a job of its own)
def test_reductions_run_few_jobs(spark: Any) -> None:
    """Once a run's input is cached: clipped_sums is one aggregate, order_window two passes, extremes one collect.

    An aggregate or a group-by is two jobs under adaptive execution (its shuffle is a
    job); the first job of a run also fills the cache (one more job, once).
    """
    from pyspark.sql import functions as F

    rows = 70_000  # beyond the window's buckets: the two-pass order window
    ds = as_dataset(spark.range(0, rows, 1, 2).select((F.col("id") % 1000 / 7.0).alias("x")))
    backend = as_reductions(ds)
    assert backend.n_rows == rows  # the first job: the cache is filled
    reference = as_reductions(as_dataset({"x": ds.column("x")}))
    tracker = spark.sparkContext.statusTracker()
    lo, hi = Fraction(0), Fraction(100)
    budget: list[tuple[str, Callable[[Reductions], object], int]] = [
        ("clipped_sums", lambda r: r.clipped_sums([SumSpec("x", lo, hi, -10), SumSpec("x", lo, hi, 0)]), 2),
        ("order_window", lambda r: r.order_window("x", lo, hi, rows // 2 - 10, rows // 2 + 10), 3),
        ("extremes", lambda r: r.extremes("x", lo, hi, 100), 2),
    ]
    try:
        for name, ask, most in budget:
            spark.sparkContext.setJobGroup(f"dpalg-{name}", name)
            got = ask(backend)
            jobs = len(list(tracker.getJobIdsForGroup(f"dpalg-{name}")))
            assert jobs <= most, f"{name}: {jobs} jobs"
            assert canon(got) == canon(ask(reference)), name
    finally:
        spark.sparkContext.setJobGroup("dpalg-other", "after")
        source = ds.source
        assert isinstance(source, SparkSource)
        source.close()


# -- Spark Connect ---------------------------------------------------------------------------


@pytest.fixture
def connect(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A Spark Connect session served by the test JVM (a Connect server on an ephemeral port of localhost)."""
    try:
        from pyspark.sql.connect.session import SparkSession as RemoteSession
    except ImportError as exc:
        if os.environ.get("DPALG_REQUIRE_SPARK"):  # the spark extra brings pyspark[connect]: in CI its absence fails
            raise
        pytest.skip(f"Spark Connect needs pyspark[connect] (grpcio, grpcio-status, googleapis-common-protos, zstandard): {exc}")
    try:
        service = getattr(getattr(spark._jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"), "MODULE$")
        spark._jsc.sc().conf().set("spark.connect.grpc.binding.port", "0")
        service.start(spark._jsc.sc())
        port = int(service.localPort())
    except Exception as exc:  # noqa: BLE001 -- no Connect server in this pyspark's jars (pyspark < 4)
        pytest.skip(f"cannot start a Spark Connect server in this JVM: {type(exc).__name__}")
    # A Connect client process has this set (SparkSession.builder.remote sets it): pyspark.sql.functions then
    # builds Connect columns. This process also holds the classic session, so it is set for this test only.
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    session = RemoteSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    try:
        yield session
    finally:
        session.stop()
        service.stop(getattr(service, "stop$default$1")(), getattr(service, "stop$default$2")())


def test_a_spark_connect_frame_is_reduced_on_the_server(connect: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nr, "_WINDOW_BUCKETS", 4)  # the two-pass order window on a short column
    values = FLOATS * 2
    frame = _frame(connect, values).repartition(3)
    assert ".connect." in type(frame).__module__
    with monkeypatch.context() as classic_process:  # a process that is no Connect client: refused before any job
        classic_process.delenv("SPARK_CONNECT_MODE_ENABLED")
        with pytest.raises(Unsupported, match="needs a Connect client process"):
            as_dataset(frame)
    ds = as_dataset(frame)
    backend = as_reductions(ds)
    assert type(backend).__name__ == "SparkReductions" and ds.backend.name == "spark-connect"
    _assert_same(_reference(ds), backend, _questions(BOUNDS[:2]), label="connect")
    source = ds.source
    assert isinstance(source, SparkSource)
    source.close()
    assert not frame.is_cached
    clean = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))][:20]
    plain = _frame(connect, clean)
    columns = {"id": list(range(len(clean))), "x": clean}
    assert comparable_release(_mean(), PureDP(1), plain) == comparable_release(_mean(), PureDP(1), columns)
    assert not plain.is_cached


def _generated(spark: Any) -> bool:
    """Whether a small filter-and-project plan runs in whole-stage generated code (``*(n)`` before its operators)."""
    frame = spark.range(10).selectExpr("id * 2 AS y").filter("y > 3")
    return "*(" in str(frame._jdf.queryExecution().executedPlan().toString())


def _adaptive(spark: Any) -> bool:
    """Whether a group-by runs under adaptive query execution (its executed plan is an ``AdaptiveSparkPlan``)."""
    frame = spark.range(10).groupBy("id").count()
    return "AdaptiveSparkPlan" in str(frame._jdf.queryExecution().executedPlan().toString())


def test_the_suite_session_evaluates_without_code_generation_or_adaptive_execution(spark: Any) -> None:
    assert not _generated(spark) and not _adaptive(spark)
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"


@pytest.mark.usefixtures("spark_defaults")
def test_spark_defaults_turns_spark_s_code_generation_and_adaptive_execution_back_on(spark: Any) -> None:
    assert _generated(spark) and _adaptive(spark)
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
