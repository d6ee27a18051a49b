"""Sample-and-aggregate's partition, the same on every backend: keyed labels of a unit's own content.

* row order and partitioning change nothing: shuffling the rows gives the same
  block multisets and the same seeded release (mean, median, mode; both forms;
  row and user level); a polars frame gives the dict's release;
* adding or removing one row (a copy of an existing one, or a new one) changes
  exactly one block, which gains or loses exactly that row; one user's rows share
  one block, and adding a user changes one block;
* exact brute force over every small multiset of rows, every neighbour (the row
  inserted at every position) and several keys: the vector of block outputs of an
  order-sensitive function differs in at most one coordinate. Broken variants
  (labels from the row position; occurrences counted over part of the content)
  fail the same check, so the check can fail;
* the function sees a canonical block: sorted values, ``-0.0`` as ``0.0``, the
  declared columns only, rows in canonical order;
* ``BoundedLS`` with a Python value function is ``Unsupported`` on a Spark frame
  (a stand-in frame: no pyspark needed), before a row is read.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from fractions import Fraction
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from dpalg import Unsupported
from dpalg.data import Dataset, as_dataset, key_index
from dpalg.data._row_choice import exact_occurrences, keyed_labels
from dpalg.data._spark import SparkSource
from dpalg.mechanisms import BoundedLS, NoisyCount, SampleAggregateMean, SampleAggregateMedian, SampleAggregateMode
from dpalg.mechanisms.sample_aggregate._blocks import block_labels, block_values, blocks_of, canonical_column, content_hashes
from dpalg.noise import SeededRandomness, prf_secret

Labeller = Callable[[Dataset, int], npt.NDArray[np.int64]]


def _data(n: int = 600, seed: int = 0) -> dict[str, npt.NDArray[Any]]:
    gen = np.random.default_rng(seed)
    x = np.round(gen.normal(5, 2, n))  # many duplicates
    x[::37] = np.nan
    x[1], x[2] = -0.0, 0.0
    s = np.empty(n, dtype=object)
    s[:] = [None if v == 0 else "abc"[: int(v)] for v in gen.integers(0, 4, n)]
    return {"uid": gen.integers(0, 80, n), "x": x, "s": s}


def _take(data: dict[str, npt.NDArray[Any]], rows: npt.NDArray[np.intp]) -> dict[str, npt.NDArray[Any]]:
    return {k: v[rows] for k, v in data.items()}


def _rows(block: Dataset) -> list[str]:
    """A block as its multiset of rows (repr: NaN equals NaN, 1 differs from "1")."""
    columns = [block.column(name).tolist() for name in block.names]
    return sorted(repr(row) for row in zip(*columns)) if columns else ["()"] * block.n_rows


def _blocks(data: dict[str, npt.NDArray[Any]], m: int, unit: str | None, reads: tuple[str, ...], seed: int) -> list[list[str]]:
    d = as_dataset(data)
    labels = block_labels(d, m, unit, SeededRandomness(seed), reads=reads)
    return [_rows(b) for b in blocks_of(d, labels, m, reads=reads)]


def _order_sensitive(block: Dataset) -> float:
    """A function that tells every row order and every value apart (a digest of the block as given)."""
    text = repr([block.column(name).tolist() for name in block.names]) + str(block.n_rows)
    return float(int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "little"))


def _column_digest(values: npt.NDArray[np.float64]) -> float:
    return float(int.from_bytes(hashlib.sha256(repr(values.tolist()).encode()).digest()[:6], "little"))


# --- order and partition independence ---------------------------------------------------------


@pytest.mark.parametrize("unit", [None, "uid"])
@pytest.mark.parametrize("reads", [("x",), ("s", "x"), ()])
def test_shuffling_the_rows_changes_no_block(unit: str | None, reads: tuple[str, ...]) -> None:
    data = _data()
    perm = np.random.default_rng(1).permutation(600)
    assert _blocks(data, 8, unit, reads, 3) == _blocks(_take(data, perm), 8, unit, reads, 3)


def _nodes(unit: str | None) -> list[SampleAggregateMean | SampleAggregateMedian | SampleAggregateMode]:
    return [
        SampleAggregateMean(np.median, blocks=8, lower=0, upper=10, epsilon=1, column="x", unit=unit),
        SampleAggregateMedian(_order_sensitive, blocks=8, lower=0, upper=2**48, epsilon=1, delta="1e-6", unit=unit, reads=("x", "s")),
        SampleAggregateMode(lambda b: float(np.sort(b)[: b.size // 2].sum() > 20), blocks=8, epsilon=1, delta="1e-6", column="x", unit=unit),
        SampleAggregateMean(_order_sensitive, blocks=8, lower=0, upper=2**48, epsilon=1, unit=unit, reads=("s",)),
    ]


@pytest.mark.parametrize("unit", [None, "uid"])
def test_shuffling_the_rows_changes_no_seeded_release(unit: str | None) -> None:
    data = _data()
    shuffled = _take(data, np.random.default_rng(2).permutation(600))
    for node in _nodes(unit):
        for seed in (0, 1):
            assert repr(node.release(as_dataset(data), SeededRandomness(seed))) == repr(node.release(as_dataset(shuffled), SeededRandomness(seed)))


def test_a_polars_frame_gives_the_release_of_the_dict() -> None:
    pl = pytest.importorskip("polars")
    data = _data()
    frame = pl.DataFrame({"uid": data["uid"], "x": data["x"], "s": data["s"].tolist()})
    for unit in (None, "uid"):
        for node in _nodes(unit):
            assert repr(node.release(as_dataset(frame), SeededRandomness(4))) == repr(node.release(as_dataset(data), SeededRandomness(4)))


# --- neighbours -------------------------------------------------------------------------------


@pytest.mark.parametrize("reads", [("x",), ("s", "x")])
def test_adding_or_removing_a_row_changes_exactly_that_rows_block(reads: tuple[str, ...]) -> None:
    data = _data()
    for i, row in enumerate([5, 17, 1]):  # copies of existing rows (duplicates: the occurrence matters), and -0.0
        at = [0, 300, 600][i]
        bigger = {k: np.concatenate([v[:at], v[row : row + 1], v[at:]]) for k, v in data.items()}
        before, after = _blocks(data, 8, None, reads, 5), _blocks(bigger, 8, None, reads, 5)
        changed = [b for b in range(8) if before[b] != after[b]]
        assert len(changed) == 1
        gained = list(after[changed[0]])
        for r in before[changed[0]]:
            gained.remove(r)
        assert gained == _rows(blocks_of(as_dataset(_take(data, np.array([row]))), np.zeros(1, dtype=np.int64), 1, reads=reads)[0])


def test_a_users_rows_share_one_block_and_a_new_user_changes_one_block() -> None:
    data = _data()
    d = as_dataset(data)
    labels = block_labels(d, 8, "uid", SeededRandomness(6))
    for uid in np.unique(data["uid"]).tolist():
        assert len(set(labels[data["uid"] == uid].tolist())) == 1
    extra = {k: np.append(v, v[:3]) for k, v in data.items()}
    extra["uid"][-3:] = 10_000
    before, after = _blocks(data, 8, "uid", ("x", "s"), 6), _blocks(extra, 8, "uid", ("x", "s"), 6)
    assert sum(b != a for b, a in zip(before, after)) == 1


def _rows_labeller(m: int, reads: tuple[str, ...]) -> Labeller:
    return lambda data, seed: block_labels(data, m, None, SeededRandomness(seed), reads=reads)


def _position_labeller(m: int) -> Labeller:
    """Broken: a keyed label of the row *position* (what the old per-row draws amounted to for a fixed seed)."""

    def labels(data: Dataset, seed: int) -> npt.NDArray[np.int64]:
        secret = prf_secret(SeededRandomness(seed))
        n = data.n_rows
        return keyed_labels(np.arange(n, dtype=np.uint64), np.zeros(n, dtype=np.int64), secret, m)

    return labels


def _coarse_occurrence_labeller(m: int) -> Labeller:
    """Broken: occurrences counted among rows equal in the first column only (not the whole content)."""

    def labels(data: Dataset, seed: int) -> npt.NDArray[np.int64]:
        secret = prf_secret(SeededRandomness(seed))
        columns = [canonical_column(data.column(name)) for name in data.names]
        occ = exact_occurrences([key_index(columns[0])[1]], data.n_rows)
        return keyed_labels(content_hashes(columns, data.n_rows, secret), occ, secret, m)

    return labels


def _worst_neighbour_change(
    labeller: Labeller, domain: Sequence[tuple[object, ...]], names: tuple[str, ...], m: int, *, order_free: bool = True
) -> int:
    """The most coordinates of the block-output vector that one added row changes (any multiset of <= 3 rows, any
    insertion point); with ``order_free``, also checks that every order of the rows gives the same vector."""
    worst = 0

    def outputs(rows: Sequence[tuple[object, ...]], seed: int) -> npt.NDArray[np.float64]:
        columns: dict[str, npt.NDArray[Any]] = {}
        for j, name in enumerate(names):
            col = np.empty(len(rows), dtype=object)
            col[:] = [r[j] for r in rows]
            columns[name] = col
        data = Dataset(columns) if rows else Dataset({name: np.zeros(0, dtype=object) for name in names})
        return block_values(_order_sensitive, data, labeller(data, seed), m, -1.0, reads=names)

    for size in range(4):
        for base in itertools.combinations_with_replacement(domain, size):
            for seed in range(3):
                reference = outputs(list(base), seed)
                for order in set(itertools.permutations(base)) if order_free else ():  # the row order changes nothing
                    assert np.array_equal(outputs(list(order), seed), reference)
                for new in domain:
                    for at in range(size + 1):
                        rows = list(base)
                        rows.insert(at, new)
                        worst = max(worst, int(np.sum(outputs(rows, seed) != reference)))
    return worst


DOMAIN_1 = [(0.0,), (-0.0,), (1.0,), (math.nan,), (None,)]
DOMAIN_2 = [(0, "a"), (0, "b"), (1.0, "a"), (1, None)]


@pytest.mark.parametrize(("domain", "names"), [(DOMAIN_1, ("x",)), (DOMAIN_2, ("x", "s"))])
def test_brute_force_one_added_row_changes_at_most_one_output(domain: list[tuple[object, ...]], names: tuple[str, ...]) -> None:
    assert _worst_neighbour_change(_rows_labeller(3, names), domain, names, 3) <= 1


@pytest.mark.parametrize("broken", [_position_labeller, _coarse_occurrence_labeller])
def test_brute_force_catches_broken_labels(broken: Callable[[int], Labeller]) -> None:
    assert _worst_neighbour_change(broken(3), DOMAIN_2, ("x", "s"), 3, order_free=False) > 1


def test_brute_force_user_level_one_added_user_changes_at_most_one_output() -> None:
    users = [(1, 0.0), (1, 1.0), (2, 0.0), (2.0, 2.0), ("2", 0.0)]  # 2 and 2.0 are one user, "2" another
    m, worst = 3, 0
    for size in range(5):
        for base in itertools.combinations_with_replacement(users, size):
            for seed in range(2):
                def out(rows: Sequence[tuple[object, float]]) -> npt.NDArray[np.float64]:
                    ids = np.empty(len(rows), dtype=object)
                    ids[:] = [r[0] for r in rows]
                    data = Dataset({"uid": ids, "x": np.array([r[1] for r in rows], dtype=np.float64)})
                    return block_values(_column_digest, data, block_labels(data, m, "uid", SeededRandomness(seed)), m, -1.0, column="x")

                reference = out(list(base))
                assert np.array_equal(out(list(reversed(base))), reference)
                for new_user in ("u", 7):  # one new user with two rows, at the front
                    worst = max(worst, int(np.sum(out([(new_user, 3.0), (new_user, 0.0), *base]) != reference)))
    assert worst <= 1


# --- the canonical block ------------------------------------------------------------------------


def test_the_function_sees_a_canonical_block() -> None:
    seen: list[Any] = []

    def record(block: Dataset) -> float:
        seen.append({name: block.column(name).tolist() for name in block.names})
        return 1.0

    s = np.array(["b", "a", "b", "a"])
    data = as_dataset({"x": np.array([2.0, -0.0, np.nan, 1.0]), "s": s, "other": np.arange(4)})
    block_values(record, data, np.zeros(4, dtype=np.int64), 1, 0.0, reads=("s", "x"))
    assert repr(seen) == repr([{"s": ["a", "a", "b", "b"], "x": [0.0, 1.0, 2.0, math.nan]}])  # rows by (s, x); not "other"
    assert math.copysign(1, seen[0]["x"][0]) == 1  # -0.0 is read as 0.0
    got: list[npt.NDArray[np.float64]] = []

    def values(v: npt.NDArray[np.float64]) -> float:
        got.append(v)
        return 1.0

    block_values(values, data, np.zeros(4, dtype=np.int64), 1, 0.0, column="x")
    assert got[0].tolist() == [0.0, 1.0, 2.0] and math.copysign(1, got[0][0]) == 1
    assert canonical_column(s).dtype == object  # no fixed-width dtype tells the block the longest string elsewhere


def test_a_function_guarded_by_n_rows_is_discovered_to_read_its_column() -> None:
    def guarded(block: Dataset) -> float:
        return float(np.mean(block.numeric("age"))) if block.n_rows else 0.0

    assert SampleAggregateMean(guarded, blocks=4, lower=0, upper=1, epsilon=1).reads == ("age",)
    assert SampleAggregateMode(lambda b: float(b.n_rows), blocks=4, epsilon=1, delta="1e-6").reads == ()


def test_occurrences_and_labels_are_exact_and_keyed() -> None:
    codes = [np.array([0, 1, 0, 0, 1]), np.array([3, 3, 3, 4, 3])]
    assert exact_occurrences(codes, 5).tolist() == [0, 0, 1, 0, 1]
    a = keyed_labels(np.array([7, 7], dtype=np.uint64), np.array([0, 1]), bytes(32), 1 << 20)
    b = keyed_labels(np.array([7, 7], dtype=np.uint64), np.array([0, 1]), bytes(range(32)), 1 << 20)
    assert a[0] != a[1] and not np.array_equal(a, b)


# --- BoundedLS and Spark ----------------------------------------------------------------------------


class _StandInFrame:
    """Enough of a Spark DataFrame for the schema (a schema with no fields); any other use fails the test."""

    class schema:  # noqa: N801 -- mimics the attribute
        fields: list[object] = []

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the frame was read: {name}")


def test_bounded_ls_with_a_python_value_function_is_unsupported_on_spark_before_any_row_is_read() -> None:
    counts = (NoisyCount("a", where="in_a"), NoisyCount("b"))
    node = BoundedLS(lambda d: Fraction(1), "1/(b_lo - 1)", counts, epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
    spark_data = Dataset.from_source(SparkSource(_StandInFrame()))
    with pytest.raises(Unsupported, match="Python function.*Spark"):
        node.release(spark_data, SeededRandomness(0))
    expression = BoundedLS("a/b", "1/(b_lo - 1)", counts, epsilon_bound="0.1", epsilon_release="0.9", delta="1e-6", domain={"b": 2})
    expression.check_backend(spark_data)  # an expression value runs anywhere
    node.check_backend(as_dataset({"in_a": np.ones(3)}))  # a function on local data is fine
