"""A column collected in jobs under ``spark.driver.maxResultSize`` (``dpalg.data._spark_collect``), on the shared local session.

The session's cap is fixed when it starts, so the cap the slicing reads is
replaced by a small one: the column is then collected in many jobs, and must be
the same values in the same order as one job collects them (a shuffled frame
included: its order is the persisted frame's). A grouped result of several
columns (a GroupBy's distinct private keys of two columns, one number per
user) is cut the same way, every job under the target, nothing lost. PTRMode
and the private ratio read nothing column by column: their Spark releases equal
numpy's, seed for seed, with collection forbidden.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from backend_support import spark_module_marks

pytestmark = [*spark_module_marks(), pytest.mark.filterwarnings("ignore::dpalg.InsecureRandomnessWarning")]

from dpalg import Clip, Query, Session  # noqa: E402
from dpalg.data import _spark_collect as sc  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.mechanisms import KSWRatio, NaiveRatio, PrivateRatio, PTRMode  # noqa: E402

ROWS = 3000


def _frame(spark: Any, rows: int = ROWS) -> Any:
    from pyspark.sql import functions as F

    i = F.col("id")
    frame = spark.range(rows, numPartitions=3).select(
        i.alias("i"), F.when(i % 7 == 0, None).otherwise(i * 0.5).alias("x"),
        F.when(i % 11 == 0, None).otherwise(F.repeat(F.lit("ab"), (i % 13).cast("int"))).alias("s"),
    )  # fmt: skip
    return frame.repartition(5)  # shuffled: a row order exists only once persisted


def test_the_parse_of_spark_sizes() -> None:
    assert [sc.parse_bytes(t) for t in ("1g", "1m", "0", "4096", "2k", "3kb", "x1")] == [2**30, 2**20, 0, 4096, 2048, 3072, None]


# the tiniest cap slices a column into runs of about 21 rows (one Spark job each): fewer rows keep it at about 15 jobs a column
@pytest.mark.parametrize(("cap", "rows"), [(None, ROWS), (2**16, ROWS), (2**12, 300)])
def test_a_column_collected_in_slices_is_the_column_in_row_order(spark: Any, monkeypatch: pytest.MonkeyPatch, cap: int | None, rows: int) -> None:
    jobs: list[int] = []
    slices = sc._slices

    def counted(*args: Any, **kwargs: Any) -> Any:
        ranges = slices(*args, **kwargs)
        jobs.append(0 if ranges is None else len(ranges))
        return ranges

    monkeypatch.setattr(sc, "result_cap", lambda frame: cap)
    monkeypatch.setattr(sc, "_slices", counted)
    source = SparkSource(_frame(spark, rows))
    try:
        ids, xs, ss = source.values("i"), source.values("x", as_double=True), source.values("s")
        assert sorted(ids) == list(range(rows)) and ids != sorted(ids)  # every row once, in the shuffled order
        assert xs == [None if i % 7 == 0 else i * 0.5 for i in ids]  # the same order in every column
        assert ss == [None if i % 11 == 0 else "ab" * (i % 13) for i in ids]
    finally:
        source.close()
    if cap is None:
        assert jobs == []  # unlimited: one job, no planning
    else:
        assert len(jobs) == 3 and min(jobs) >= (2 if cap == 2**16 else 10), jobs  # several jobs per column


def test_every_slice_is_bounded_by_the_target(spark: Any) -> None:
    frame = _frame(spark, 1000).persist()  # about 12 slices a column: one job each, and one more to size each
    try:
        from pyspark.sql import functions as F

        target = 2**13
        for value, fixed in ((F.col("x"), 0), (F.col("s"), None)):
            ranges = sc._slices(frame, None if fixed is not None else F.octet_length(value), 8 if fixed is None else fixed, target)
            assert ranges is not None and len(ranges) > 1
            width = F.lit(sc.ROW_BYTES) if fixed is not None else F.lit(sc.ROW_BYTES + 8) + F.coalesce(F.octet_length(value), F.lit(0))
            numbered = frame.select(F.monotonically_increasing_id().alias("id"), width.alias("w"))
            sizes = [numbered.where((F.col("id") >= lo) & (F.col("id") < hi)).agg(F.sum("w")).collect()[0][0] for lo, hi in ranges]
            allowed = max(target - sc.TASK_BYTES * 5, target // 4)
            assert max(sizes) <= allowed and sum(sizes) == numbered.agg(F.sum("w")).collect()[0][0]
    finally:
        frame.unpersist()


def _no_column(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a column was collected")


@pytest.mark.parametrize(
    "plan",
    [
        PTRMode(Query.mode("m"), epsilon="0.5", delta="0.01"), PTRMode(Query.mode("x") | Clip(0, 100), epsilon=1, delta="0.01"),
        NaiveRatio(PrivateRatio("c"), 1), KSWRatio(PrivateRatio("b"), 1),
    ],
    ids=repr,
)  # fmt: skip
def test_mode_and_ratio_read_no_column_and_release_as_numpy(spark: Any, monkeypatch: pytest.MonkeyPatch, plan: Any) -> None:
    rng = np.random.default_rng(3)
    n = 400
    m = [None if v == 9 else float(v) for v in rng.integers(0, 10, n)]
    x = [float(v) for v in rng.normal(50, 80, n).round()]
    c = [None if v == 3 else int(v % 2) for v in rng.integers(0, 4, n)]
    b = [bool(v) for v in rng.integers(0, 2, n)]
    local = {"m": np.array([np.nan if v is None else v for v in m]), "x": np.array(x), "c": np.array(c, dtype=object), "b": np.array(b)}
    frame = spark.createDataFrame(list(zip(m, x, c, b)), "m double, x double, c int, b boolean")
    monkeypatch.setattr(SparkSource, "values", _no_column)
    for seed in range(4):
        on_spark = Session(plan.cost()).run(plan, frame, rng=seed).value
        assert on_spark == Session(plan.cost()).run(plan, as_dataset(local), rng=seed).value


@pytest.mark.parametrize("ddl", ["double", "bigint", "boolean"])
def test_an_unclipped_mode_reads_only_the_two_largest_counts(spark: Any, monkeypatch: pytest.MonkeyPatch, ddl: str) -> None:
    """``PTRMode`` without a clip asks Spark for the two keys with the largest counts (``top_key_counts``), never the
    whole histogram; the release is the numpy backend's (ties between counts, ``-0.0`` and ``0.0``, NaN, nulls)."""
    from dpalg.data._spark_reductions import SparkReductions

    rng = np.random.default_rng(5)
    for trial in range(6):
        pools: dict[str, list[Any]] = {"double": [-0.0, 0.0, 1.5, -2.0, float("nan"), None, 7.0], "bigint": [0, 1, -3, 2**40, None],
                                       "boolean": [True, False, None]}  # fmt: skip
        pool = pools[ddl]
        values = [pool[int(i)] for i in rng.integers(0, len(pool), 60 + 7 * trial)]
        if ddl == "double":
            local = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        else:
            local = np.array(values, dtype=object)
        frame = spark.createDataFrame([(v,) for v in values], f"m {ddl}")
        plan = PTRMode(Query.mode("m"), epsilon=2, delta="0.2")
        want = [Session(plan.cost()).run(plan, as_dataset({"m": local}), rng=seed).value for seed in range(3)]
        with monkeypatch.context() as patch:
            patch.setattr(SparkSource, "values", _no_column)
            patch.setattr(SparkReductions, "key_histogram", _no_column)
            got = [Session(plan.cost()).run(plan, frame, rng=seed).value for seed in range(3)]
        assert repr(got) == repr(want), (ddl, trial)


def test_an_unclipped_mode_breaks_count_ties_by_the_smaller_key(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts 3, 5, 3 (keys 1 < 2 < 3): the two largest counts are keys 1 and 2, the tie between 1 and 3 broken by
    the smaller key, as the numpy backend's histogram orders them; the seeded releases (some released, some ⊥) are numpy's.

    The reduction is asked directly (one job; a tie broken by the larger key, checked by hand, fails there), and the
    mechanism end to end for a few seeds (a column collected fails)."""
    from dpalg.data import as_reductions
    from dpalg.data._spark_reductions import SparkReductions

    values = [1.0] * 3 + [2.0] * 5 + [3.0] * 3 + [-0.0, 0.0] + [None]
    local = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    frame = spark.createDataFrame([(v,) for v in values], "m double").repartition(3)
    reductions = as_reductions(as_dataset(frame))
    assert isinstance(reductions, SparkReductions)
    top = reductions.top_key_counts("m", 2)
    assert top is not None and top[0] == (1.0, 2.0) and top[1].tolist() == [3, 5]
    plan = PTRMode(Query.mode("m"), epsilon=1, delta="0.2")
    want = [Session(plan.cost()).run(plan, as_dataset({"m": local}), rng=seed).value for seed in range(8)]
    assert len({repr(v) for v in want}) == 2  # released for some seeds, ⊥ for others
    monkeypatch.setattr(SparkSource, "values", _no_column)
    got = [Session(plan.cost()).run(plan, frame, rng=seed).value for seed in range(8)]
    assert repr(got) == repr(want)


def test_unordered_parts_bound_every_job_and_lose_no_row(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of several columns (a string, a long, a decimal): each part's rows under the target by the schema's bound."""
    from pyspark.sql import functions as F

    n = 1000  # many parts at this cap (two jobs each here: its size, its rows); 3000 rows tripled the parts, not the check
    frame = _frame(spark, n).select(F.col("s"), F.col("i"), F.col("i").cast("decimal(38,0)").alias("d"))
    cap = 2**14
    monkeypatch.setattr(sc, "result_cap", lambda frame: cap)
    width = F.lit(sc.ROW_BYTES + 3 * 8 + 16 + 8) + F.coalesce(F.octet_length(F.col("s")), F.lit(0))
    rows: list[tuple[Any, ...]] = []
    sizes: list[int] = []
    for part in sc.unordered_parts(frame, variable_key=True):
        sizes.append(int(part.agg(F.sum(width)).collect()[0][0] or 0))
        rows.extend(tuple(r) for r in part.collect())
    allowed = max(cap // sc.SHARE - sc.TASK_BYTES * 5, cap // sc.SHARE // 4)  # 5 partitions
    assert len(sizes) > 2 and max(sizes) <= allowed
    assert sorted(r[1] for r in rows) == list(range(n))


@pytest.mark.parametrize("by", ["k", "k2"])
def test_private_group_keys_and_per_unit_numbers_are_collected_in_slices(spark: Any, monkeypatch: pytest.MonkeyPatch, by: str) -> None:
    """A GroupBy's private keys (one or two columns) and the per-user numbers of the shifted inverse come through
    ``unordered_parts`` (a cap small enough for several jobs): the same release as numpy's, and more than one job."""
    from dpalg import GroupBy, PartitionSelection, PureDP, PureToApprox
    from dpalg.mechanisms import Laplace
    from dpalg.mechanisms.shifted_inverse._shifted_inverse import ShiftedInverse
    from backend_support import seeded_release

    gen = np.random.default_rng(3)
    n = 4000
    columns: dict[str, list[Any]] = {
        "k": [f"key{int(v)}" for v in gen.integers(0, 900, n)], "j": [int(v) for v in gen.integers(0, 3, n)],
        "uid": [int(v) for v in gen.integers(0, 1500, n)], "x": [float(v) for v in gen.integers(0, 40, n)],
    }  # fmt: skip
    keys = ("k",) if by == "k" else ("k", "j")
    group_by = keys[0] if len(keys) == 1 else keys
    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: GroupBy(group_by, keys=PartitionSelection(epsilon=1, delta="1e-5"), aggregates={"n": PureToApprox(Laplace(Query.count(), epsilon=1))}), None),
        (lambda: ShiftedInverse(Query.user_sum("x", user="uid") | Clip(0, 100), domain=(0, 2**20), epsilon=1), PureDP(1)),
    ]
    frame = spark.createDataFrame(list(zip(*columns.values())), "k string, j long, uid long, x double").repartition(4)
    parts: list[int] = []
    unordered = sc.unordered_parts

    def counted(*args: Any, **kwargs: Any) -> Any:
        parts.append(0)
        for part in unordered(*args, **kwargs):  # consumed lazily: the cache lives until the last part is collected
            parts[-1] += 1
            yield part

    monkeypatch.setattr(sc, "result_cap", lambda frame: 2**15)
    for module in ("dpalg.data._spark_grouping", "dpalg.data._spark_units"):
        monkeypatch.setattr(f"{module}.unordered_parts", counted)
    for make, budget in plans:
        plan = make()
        cost = budget if budget is not None else plan.cost()
        want = seeded_release(make(), cost, columns)[0]
        parts.clear()
        assert seeded_release(plan, cost, frame)[0] == want
        assert parts and max(parts) > 1, parts


def _watch_results(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every result a DataFrame returns to the driver (``collect``, ``toArrow``), as its bound in bytes by
    :mod:`~dpalg.data._spark_collect`'s estimate (a row's framing and slots, each string's bytes)."""
    from pyspark.sql.classic.dataframe import DataFrame

    sizes: list[int] = []

    def bound(rows: list[tuple[Any, ...]], width: int) -> int:
        text = sum(len(v.encode() if isinstance(v, str) else v) for r in rows for v in r if isinstance(v, (str, bytes, bytearray)))
        return len(rows) * (sc.ROW_BYTES + 8 * width) + text

    collect, to_arrow = DataFrame.collect, DataFrame.toArrow

    def collected(self: Any) -> Any:
        rows = collect(self)
        sizes.append(bound([tuple(r) for r in rows], len(self.columns)))
        return rows

    def arrowed(self: Any) -> Any:
        table = to_arrow(self)
        sizes.append(bound(list(zip(*(table.column(j).to_pylist() for j in range(table.num_columns)))), table.num_columns))
        return table

    monkeypatch.setattr(DataFrame, "collect", collected)
    monkeypatch.setattr(DataFrame, "toArrow", arrowed)
    return sizes


def test_grouped_results_of_many_groups_are_collected_in_jobs_under_the_cap(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user-level histogram over private keys (one count per key) and a GroupBy's grouped records (one per group),
    about 900 of each under a 32 KiB cap: no result returned to the driver exceeds half the cap, several jobs are
    used, and the seeded releases equal numpy's. Collected in one job (as before), each exceeds it."""
    from dpalg import ApproxDP, GroupBy, MaxKeysPerUser, PartitionSelection, PureToApprox
    from dpalg.mechanisms import Laplace, StableHistogram
    from backend_support import seeded_release

    gen = np.random.default_rng(4)
    n = 6000
    columns: dict[str, list[Any]] = {"k": [f"key{int(v)}" for v in gen.integers(0, 900, n)], "uid": [int(v) for v in gen.integers(0, 2500, n)]}
    plans: list[tuple[Callable[[], Any], Any]] = [
        (lambda: StableHistogram(Query.histogram("k", user="uid") | MaxKeysPerUser(2), epsilon=10, delta="0.1"), ApproxDP(10, "0.1")),
        (lambda: GroupBy("k", keys=PartitionSelection(epsilon=10, delta="0.1"), aggregates={"n": PureToApprox(Laplace(Query.count(), epsilon=1))}), None),
    ]
    frame = spark.createDataFrame(list(zip(*columns.values())), "k string, uid long").repartition(4)
    cap = 2**15
    monkeypatch.setattr(sc, "result_cap", lambda frame: cap)
    for make, budget in plans:
        plan = make()
        cost = budget if budget is not None else plan.cost()
        want = seeded_release(make(), cost, columns)[0]
        with monkeypatch.context() as patch:
            sizes = _watch_results(patch)
            got = seeded_release(plan, cost, frame)[0]
        assert got == want
        assert want.count("key") > 100  # many keys released: the grouped results are large
        assert len(sizes) > 3 and max(sizes) <= cap // sc.SHARE, (repr(plan)[:40], max(sizes), len(sizes))


def test_grid_counts_of_many_cells_are_collected_in_jobs_under_the_cap(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row-level exponential quantile reads the grid's occupied cells (one count per cell): about 1800 of
    2**14 by permute-and-flip (the whole grid counted) and about 1600 of 2**12 by the exponential mechanism
    (a small grid, counted whole) under a 32 KiB cap: no result returned to the driver exceeds half the cap,
    several jobs are used, and the seeded releases equal numpy's. Collected in one job (as before), each exceeds it."""
    from dpalg import PureDP
    from dpalg.mechanisms import ExponentialQuantile
    from backend_support import seeded_release

    gen = np.random.default_rng(5)
    columns: dict[str, list[Any]] = {"x": [float(v) for v in gen.uniform(0, 100, 2000)]}
    columns["x"][::97] = [None] * len(columns["x"][::97])  # missing values: the null group, dropped
    plans: list[Callable[[], Any]] = [
        lambda: ExponentialQuantile(Query.median("x") | Clip(0, 100), epsilon=1, grid_bits=14, selection="permute_and_flip"),
        lambda: ExponentialQuantile(Query.quantile("x", "1/3") | Clip(0, 100), epsilon=1, grid_bits=12),
    ]
    frame = spark.createDataFrame([(v,) for v in columns["x"]], "x double").repartition(4)
    cap = 2**15
    monkeypatch.setattr(sc, "result_cap", lambda frame: cap)
    for make in plans:
        want = seeded_release(make(), PureDP(1), columns)[0]
        with monkeypatch.context() as patch:
            sizes = _watch_results(patch)
            got = seeded_release(make(), PureDP(1), frame)[0]
        assert got == want
        assert len(sizes) > 3 and max(sizes) <= cap // sc.SHARE, (repr(make())[:40], max(sizes), len(sizes))
