"""The grouping seam on Spark: a GROUP BY's codes, per-user bound and grouped reductions on the executors.

:class:`SparkCoding` answers the questions of :mod:`dpalg.data._grouping` for a
Spark frame, bit for bit as :class:`~dpalg.data._grouping.NumpyCoding` does on the
same values, whatever the row order or the partitioning. Only small records reach
the driver: one per group (or per distinct present key), never a column, in jobs
under the driver's result cap (:func:`~dpalg.data._spark_collect.unordered_parts`).

* **One key column** (public or private keys): the rows are grouped by the key
  itself, normalised as the key policy reads it (floats as double, NaN as null,
  ``-0.0`` as ``0.0``: one Spark value is then one key). Public keys: a row whose
  key equals a listed key's exact Spark value (``isin``; a value is taken only when
  :func:`~dpalg.data.normalise_key` reads it as that key, so a rounded float never
  stands for a large int) keeps its key; with an "other" group, every other
  present key is one flag, so "other" is a single group on the executors too.
  Integer keys spanning a short range (public: at most 8 values per listed key,
  plus 1024) are selected by the range instead (``isin`` on a large list costs a
  boxed hash lookup per row); each unlisted value of the range is a record of its
  own, which the driver sends to "other" or to no group.
  Private keys: one job collects the distinct present keys (one record per key),
  which the driver normalises and sorts in key order: the labels. Each grouped
  record comes back with its key, which the driver turns into the group's code.
* **Several key columns, and the per-user bound**: each row's code is computed on
  the executors by the numpy code itself (``mapInArrow``:
  :func:`~dpalg.data._grouped.public_int_codes` or
  :func:`~dpalg.data._groups.group_index` on each Arrow batch, against the public
  keys or the labels, so a row's code depends on its own key only). For the bound
  the same pass computes each row's priority ``mix(keyed_hash(id), label_hash,
  words[2])`` (:func:`~dpalg.data._groups.bound_groups`' priority, a function of
  the user and the group only) and the group's label hash; a window partitioned
  by the user ranks the user's groups by (priority, label hash, code)
  (``dense_rank``: the rank of the group among the user's distinct groups,
  :func:`~dpalg.data._groups.bound_groups`' order) and keeps the first ``m``.
  The coded frame (the columns the plan reads and the code) is persisted once
  and released by :meth:`SparkCoding.close`.
* **Grouped reductions** (:class:`SparkGroups`): one ``groupBy`` aggregate per
  question. Fixed-point sums use the lattice terms of
  :meth:`~dpalg.data._spark_reductions.SparkReductions.clipped_sums` (the same
  :class:`~dpalg.data._source_reductions.SumPlan`, ``rint`` ties to even, ``long``
  terms summed with ``try_sum``; ``decimal(38,0)`` again when a ``long`` sum
  overflows), so each group's sum is the exact integer numpy computes.
* **One group's rows** (for aggregates without a grouped release): the frame
  filtered to that group, as a dataset of its own Spark source (the cached input
  or the persisted coded frame is read, nothing is persisted again), so its
  reductions run on the executors too.

* **Parallel's split by key** (:func:`spark_parts`): one filtered frame per
  listed key (at user level, each user in the part of its smallest listed key: a
  window partitioned by the user), each a dataset of its own Spark source.

**Decimal and null keys and ids.** A ``DecimalType(p, s)`` key or id column is
grouped as it is: Spark compares decimals exactly, and one column has one scale, so
two rows hold equal decimals exactly when their values are equal, which is when
:func:`~dpalg.data.normalise_key` gives them one key (it maps a value to its exact
canonical number, ``Decimal('1.00')`` to ``1``, ``Decimal('0.50')`` to ``0.5``,
``Decimal('0.10')`` to ``Fraction(1, 10)``: injective on values; a ``decimal(38, s)``
value is far inside its ``DECIMAL_DIGITS_LIMIT``; Spark has no negative zero, NaN or
infinity in a decimal). The canonical key is applied in the driver, once per
grouped record; a public key selects the one ``Decimal`` of the column's scale equal
to it (:func:`~dpalg.data._spark_units.decimal_candidates`; ``isin`` compares exactly),
and the per-row codes and the per-user priority read a batch's decimals as the
``Decimal`` objects the numpy backend reads from the collected column
(:func:`~dpalg.data._spark_types.arrow_to_numpy`). A ``NullType`` column holds only
missing values: no group, no user, no listed key matches.

A ``DecimalType`` value column read beside the keys is read as the double the
numpy policy reads (:func:`~dpalg.data._spark_reductions.decimal_double`) in the
grouped reductions. Key or id columns the executors do not group (a string with a
non-binary collation, which a user's frame never holds here:
:func:`~dpalg.data._spark.binary_strings` re-reads it in the binary collation) and
value columns of other types send the whole GROUP BY to the numpy answers
(:func:`spark_coding` returns ``None``): the columns are then collected to the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import numpy as np
import numpy.typing as npt

from dpalg.data._dataset import ColumnSource, Dataset
from dpalg.data._grouped import public_int_codes
from dpalg.data._groups import GroupKey, _tagged, group_index, group_key_order, label_hashes, normalise_group_key
from dpalg.data._keys import Key, key_order, normalise_key
from dpalg.data._numpy_reductions import as_reductions
from dpalg.data._reductions import LatticeSum, SumSpec
from dpalg.data._row_choice import _mix, _words, keyed_hashes
from dpalg.data._source_reductions import SumPlan, key_candidates
from dpalg.data._spark_collect import arrow_table, unordered_parts
from dpalg.data._spark_reductions import _INT_TYPES, SparkFrameSource, _clip, decimal_double
from dpalg.data._spark_types import arrow_to_numpy, executor_kind, quoted
from dpalg.data._spark_units import decimal_candidates, unit_key, unit_key_kind
from dpalg.data._user_units import unit_index

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
else:
    from dpalg.data._spark_types import F  # the lazy proxy: pyspark is imported on first use

__all__ = ["SparkCoding", "SparkGroups", "SparkParts", "spark_coding", "spark_parts"]

#: the key kinds grouped on the executors (one Spark value is one key under the key policy)
_KEY_KINDS: Final = ("float", "int", "bool", "str", "bytes")
_SIGN: Final = np.uint64(1 << 63)
_CODE: Final = "code"
#: integer public keys are selected by a range when it holds at most this many values per listed key (plus 1024)
_RANGE_RECORDS: Final = 8

#: what makes a dataset of a filtered frame (the Spark source, given by :class:`~dpalg.data._spark.SparkSource`)
SourceOf = Callable[[Any], ColumnSource]


def _normalised(column: str, kind: str) -> Column:
    """A key column as one Spark value per key: floats as double, NaN as null, ``-0.0`` as ``0.0``."""
    col = F.col(quoted(column))
    if kind == "float":
        x = col.cast("double")
        return F.when(~F.isnan(x), x) + F.lit(0.0)
    return col


def _exact_candidates(kind: str, spark_type: Any, keys: Sequence[Key]) -> list[object]:
    """The Spark values that are exactly these keys under the key policy (a rounded float is left out).

    A decimal column's values are :func:`~dpalg.data._spark_units.decimal_candidates` (one
    ``Decimal`` of the column's scale per key it can hold); a null column has none.
    """
    int_dtype = _INT_TYPES.get(type(spark_type).__name__)
    out: list[object] = []
    for key in keys:
        found_values: list[object] = (
            list(decimal_candidates(spark_type, [key])) if kind == "decimal" else key_candidates(kind, int_dtype, [key], as_bytes=bytearray)
        )
        for value in found_values:
            found = normalise_key(bytes(value) if isinstance(value, bytearray) else value)
            if found is not None and _tagged(found) == _tagged(key):
                out.append(value)
    return out


def _isin(x: Column, values: Sequence[object]) -> Column:
    return x.isin(list(values)) if values else F.lit(False)


@final
class _RowCodes:
    """Executors (``mapInArrow``): each row's group code, and with a bound its priority and label hash.

    The batch holds the read columns ``c0, c1, …``; the key columns are ``by`` (their
    positions), the id column ``unit`` (its position, for the bound).
    """

    def __init__(
        self, by: Sequence[int], names: Sequence[str], types: Sequence[Any], keys: Sequence[GroupKey], other: bool,
        unit: int | None, secret: bytes | None, hashes: npt.NDArray[np.uint64] | None,
    ) -> None:  # fmt: skip
        self.by, self.names, self.types, self.keys, self.other = tuple(by), tuple(names), tuple(types), tuple(keys), other
        self.unit, self.secret, self.hashes = unit, secret, hashes

    def codes(self, batch: Any) -> npt.NDArray[np.intp]:
        columns = {self.names[j]: arrow_to_numpy(batch.column(j), self.types[j]) for j in self.by}
        if len(self.by) == 1:
            fast = public_int_codes(columns[self.names[self.by[0]]], self.keys, other=self.other)
            if fast is not None:
                return fast
        return group_index(Dataset(columns), [self.names[j] for j in self.by], self.keys, other=self.other)[1]

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        for batch in batches:
            codes = np.array(self.codes(batch), dtype=np.int64)
            arrays = [batch.column(j) for j in range(batch.num_columns)]
            names = [f"c{j}" for j in range(batch.num_columns)]
            if self.unit is not None and self.secret is not None and self.hashes is not None:
                ids = arrow_to_numpy(batch.column(self.unit), self.types[self.unit])
                codes[unit_index(ids)[1] < 0] = -1  # a row with a missing id belongs to no user: no group
                group_hash = self.hashes[np.maximum(codes, 0)] if self.hashes.size else np.zeros(codes.size, dtype=np.uint64)
                priority = _mix(keyed_hashes(ids, self.secret), group_hash, _words(self.secret)[2])
                # as signed longs whose order is the unsigned order (the sign bit flipped)
                arrays += [pa.array((priority ^ _SIGN).view(np.int64)), pa.array((group_hash ^ _SIGN).view(np.int64))]
                names += ["p", "h"]
            yield pa.RecordBatch.from_arrays([*arrays, pa.array(codes)], names=[*names, _CODE])


def _user_window(column: str, kind: str) -> Any:
    """One user's coded rows (a window partitioned by the user: the rank depends on that user's rows only), in
    :func:`~dpalg.data._groups.bound_groups`' order of the user's groups: priority, label hash, code."""
    from pyspark.sql import Window

    return Window.partitionBy(unit_key(column, kind), F.col(_CODE) >= 0).orderBy("p", "h", _CODE)


@final
class SparkCoding:
    """Every row's group on the executors (module docstring); answers :class:`~dpalg.data._grouping.GroupCoding`.

    The groups are the values of ``groups`` (expressions over ``frame``, for rows
    passing ``where``); ``code_of`` turns the values of one grouped record into the
    group's code (``-1``: in no group); ``condition(code)`` selects a group's rows.
    ``most`` bounds the grouped records (public: the labels, the listed values or the
    range of integer keys), so a small grouped result is collected without a planning job.
    """

    __slots__ = (
        "_by", "_code_of", "_condition", "_frame", "_groups", "_kinds", "_labels", "_most", "_other", "_owner", "_persisted",
        "_reads", "_source", "_source_of", "_where", "_index_keys", "_renamed",
    )  # fmt: skip

    def __init__(
        self, source: SparkFrameSource, source_of: SourceOf, by: tuple[str, ...], reads: tuple[str, ...], labels: tuple[GroupKey, ...],
        index_keys: tuple[GroupKey, ...], other: bool, owner: str, *, frame: Any, groups: list[Column], where: Column | None,
        code_of: Callable[[tuple[Any, ...]], int], condition: Callable[[int], Column], renamed: bool, most: int, persisted: Any = None,
    ) -> None:  # fmt: skip
        self._source, self._source_of, self._by, self._reads, self._labels = source, source_of, by, reads, labels
        self._index_keys, self._other, self._owner = index_keys, other, owner
        self._kinds = {name: executor_kind(source.spark_dtype(name)) for name in reads}
        self._frame, self._groups, self._where, self._code_of, self._condition = frame, groups, where, code_of, condition
        self._renamed, self._persisted, self._most = renamed, persisted, most

    # -- building --------------------------------------------------------------------------

    @classmethod
    def build(
        cls, source: SparkFrameSource, source_of: SourceOf, by: tuple[str, ...], keys: tuple[GroupKey, ...] | None, *,
        other: bool, labels: Sequence[GroupKey] | None, reads: tuple[str, ...], owner: str,
    ) -> SparkCoding:  # fmt: skip
        """The coding of the input frame: grouped by the key itself (one column) or coded per row (several)."""
        frame = source.frame
        kinds = [unit_key_kind(source.spark_dtype(name)) or "int" for name in by]  # spark_coding checked: none is None
        keyed = [_normalised(name, kind) for name, kind in zip(by, kinds)]
        if keys is None:  # private keys: the distinct present keys, one record each, sorted in key order
            present = frame.select(*(k.alias(f"k{j}") for j, k in enumerate(keyed)))
            for j in range(len(by)):
                present = present.where(F.col(f"k{j}").isNotNull())
            found: dict[object, GroupKey] = {}
            variable = any(kind in ("str", "bytes") for kind in kinds)
            for row in _distinct_rows(present, len(by), variable=variable, most=source.known_rows):  # distinct keys <= rows
                key = normalise_group_key(tuple(_py(v) for v in row) if len(by) > 1 else _py(row[0]), len(by))
                if key is not None:
                    found.setdefault(_tagged(key), key)
            index_keys = tuple(sorted(found.values(), key=group_key_order))
            all_labels = index_keys
            other = False
        else:
            index_keys = keys
            all_labels = tuple(labels) if labels is not None else keys
        if len(by) > 1:
            return cls(
                source, source_of, by, reads, all_labels, index_keys, other, owner,
                frame=frame, groups=[], where=None, code_of=lambda v: -1, condition=lambda c: F.lit(False), renamed=False, most=0,
            )._coded(None, None)  # fmt: skip
        k, kind, spark_type = keyed[0], kinds[0], source.spark_dtype(by[0])
        wanted = {_tagged(key): i for i, key in enumerate(index_keys)}
        exact = {i: _exact_candidates(kind, spark_type, [key]) for i, key in enumerate(index_keys)}  # type: ignore[list-item]  # one column: plain keys
        listed = [v for i in range(len(index_keys)) for v in exact[i]]
        unlisted = len(index_keys) if other else -1

        def code(values: tuple[Any, ...]) -> int:
            value, flag = values if other else (values[0], 0)
            if flag is None or (flag == 0 and value is None):
                return -1
            if flag == 1:
                return unlisted
            key = normalise_key(_py(value))
            return -1 if key is None else wanted.get(_tagged(key), unlisted)

        def condition(c: int) -> Column:
            if other and c == unlisted:
                return k.isNotNull() & ~_isin(k, listed)
            return _isin(k, exact.get(c, []))

        inside: Column | None = None
        # the grouped records: one per label (private keys: one Spark value is one key), per listed value, or per
        # integer of the range; with "other", one more for every unlisted key and one for a missing key
        records = len(index_keys) if keys is None else len(listed)
        if kind == "int" and listed:
            # integer keys: a range test is far cheaper than a hash-set lookup per row (Spark's InSet boxes each
            # value); the integers in [lo, hi] that are not listed come back as records of their own and the
            # driver sends them to "other" (or to no group): at most hi - lo + 1 records, a public bound
            lo, hi = min(int(v) for v in listed), max(int(v) for v in listed)  # type: ignore[call-overload]  # ints
            if hi - lo < _RANGE_RECORDS * len(listed) + 1024:
                inside = (k >= F.lit(lo)) & (k <= F.lit(hi))
                records = hi - lo + 1
        if inside is None and keys is not None:  # (built only when used: each listed value is one call to the JVM)
            inside = _isin(k, listed)
        if keys is None:  # every present key is a label
            groups, where = [k], k.isNotNull()
        elif other:
            assert inside is not None
            groups, where = [F.when(inside, k), F.when(inside, F.lit(0)).when(k.isNotNull(), F.lit(1))], None
        else:
            groups, where = [k], inside
        return cls(
            source, source_of, by, reads, all_labels, index_keys, other, owner,
            frame=frame, groups=groups, where=where, code_of=code, condition=condition, renamed=False, most=records + 2,
        )  # fmt: skip

    def _coded(self, unit: str | None, bound: tuple[int, bytes] | None) -> SparkCoding:
        """The rows' codes computed per row on the executors (with ``bound``: then cut to ``m`` groups per user), persisted."""
        from pyspark.sql.types import LongType, StructField, StructType

        base = self._source.frame
        selected = base.select(*(F.col(quoted(name)).alias(f"c{j}") for j, name in enumerate(self._reads)))
        types = [selected.schema[f"c{j}"].dataType for j in range(len(self._reads))]
        by = [self._reads.index(name) for name in self._by]
        extra: list[Any] = []
        position: int | None = None
        secret: bytes | None = None
        hashes: npt.NDArray[np.uint64] | None = None
        if bound is not None:
            assert unit is not None
            position, secret = self._reads.index(unit), bound[1]
            hashes = label_hashes(self._labels, secret)
            extra = [StructField("p", LongType(), False), StructField("h", LongType(), False)]
        schema = StructType([*selected.schema.fields, *extra, StructField(_CODE, LongType(), False)])
        coder = _RowCodes(by, self._reads, types, self._index_keys, self._other, position, secret, hashes)
        coded = selected.mapInArrow(coder, schema)
        if bound is not None and position is not None:
            m = bound[0]
            ranked = F.dense_rank().over(_user_window(f"c{position}", unit_key_kind(types[position]) or "int"))
            coded = coded.select(
                *(f"c{j}" for j in range(len(self._reads))), F.when((F.col(_CODE) >= 0) & (ranked <= m), F.col(_CODE)).otherwise(-1).alias(_CODE),
            )  # fmt: skip
        coded = coded.persist()
        code = F.col(_CODE)
        return SparkCoding(
            self._source, self._source_of, self._by, self._reads, self._labels, self._index_keys, self._other, self._owner,
            frame=coded, groups=[code], where=code >= 0, code_of=lambda v: -1 if v[0] is None else int(v[0]),
            condition=lambda c: code == c, renamed=True, most=max(len(self._labels), len(self._index_keys)) + 1, persisted=coded,
        )  # fmt: skip

    # -- the questions -----------------------------------------------------------------------

    @property
    def labels(self) -> tuple[GroupKey, ...]:
        return self._labels

    def bounded(self, unit: str, max_groups: int, secret: bytes) -> SparkCoding:
        from dpalg._errors import InvalidArgument

        if max_groups < 1:
            raise InvalidArgument(self._owner, "max_groups", max_groups, "must be >= 1")
        return self._coded(unit, (max_groups, secret))

    def records(self, *aggregates: Column) -> dict[int, list[tuple[Any, ...]]]:
        """The grouped aggregates, one record per executor group, gathered by code (rows in no group left out).

        As many records as groups: collected in jobs under the result cap
        (:func:`~dpalg.data._spark_collect.unordered_parts`), in any order (a
        group's records are added up by the callers, or, several for one group,
        send :meth:`distinct_units` to the coded frame).
        """
        frame = self._frame if self._where is None else self._frame.where(self._where)
        width = len(self._groups)
        grouped = frame.groupBy(*(g.alias(f"g{j}") for j, g in enumerate(self._groups))).agg(*(a.alias(f"a{j}") for j, a in enumerate(aggregates)))
        rows: list[tuple[Any, ...]] = []
        for part in unordered_parts(grouped, variable_key=False, most=self._most):  # the schema says which keys are strings
            table = arrow_table(part)
            if table is not None:
                rows.extend(zip(*(table.column(j).to_pylist() for j in range(table.num_columns))))
            else:
                rows.extend(tuple(r) for r in part.collect())
        out: dict[int, list[tuple[Any, ...]]] = {}
        for row in rows:
            c = self._code_of(tuple(row[:width]))
            if c >= 0:
                out.setdefault(c, []).append(tuple(row[width:]))
        return out

    def distinct_units(self, unit: str | None) -> npt.NDArray[np.int64]:
        n = len(self._labels)
        out = np.zeros(n, dtype=np.int64)
        if unit is None:
            aggregate = F.count(F.lit(1))
        else:
            column = f"c{self._reads.index(unit)}" if self._renamed else unit
            kind = unit_key_kind(self._source.spark_dtype(unit))
            aggregate = F.countDistinct(unit_key(column, kind or "int"))
        for c, found in self.records(aggregate).items():
            if unit is not None and len(found) > 1:  # one group, several records: distinct counts do not add up
                coded = self._coded(None, None)
                try:
                    return coded.distinct_units(unit)
                finally:
                    coded.close()
            out[c] = sum(int(r[0]) for r in found)
        return out

    def released(self, groups: Sequence[int]) -> SparkGroups:
        return SparkGroups(self, groups)

    def rows(self, code: int) -> Dataset:
        """The rows of one group, as a dataset of a Spark source over the filtered frame (nothing collected)."""
        frame = self._frame.where(self._condition(code))
        if self._renamed:
            frame = frame.select(*(F.col(f"c{j}").alias(name) for j, name in enumerate(self._reads)))
        return Dataset.from_source(self._source_of(frame))

    def value(self, column: str) -> tuple[Column, str]:
        """A read column over this coding's frame, and its kind."""
        name = f"c{self._reads.index(column)}" if self._renamed else column
        return F.col(quoted(name)), self._kinds.get(column) or executor_kind(self._source.spark_dtype(column))

    def close(self) -> None:
        persisted, self._persisted = self._persisted, None
        _unpersist(persisted)

    def __repr__(self) -> str:  # never prints values
        return f"SparkCoding({len(self._labels)} groups)"


def _unpersist(frame: Any) -> None:
    """Release a frame this module persisted (``None``: nothing); never raises (the session may be gone already)."""
    if frame is not None:
        try:
            frame.unpersist()
        except Exception:  # noqa: BLE001 -- the session may be gone already
            pass


def _py(value: Any) -> Any:
    """A collected value as the key policy reads the collected column (binary as bytes)."""
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


@final
class SparkGroups:
    """The released groups' reductions on the executors (:class:`~dpalg.data._grouping.ReleasedGroups`)."""

    __slots__ = ("_coding", "_counts", "_groups")

    def __init__(self, coding: SparkCoding, groups: Sequence[int]) -> None:
        self._coding = coding
        self._groups = [int(g) for g in groups]
        self._counts: npt.NDArray[np.int64] | None = None

    @property
    def n_groups(self) -> int:
        return len(self._groups)

    def __repr__(self) -> str:  # never prints values
        return f"SparkGroups({self.n_groups} groups)"

    def _per_group(self, found: dict[int, list[tuple[Any, ...]]], j: int) -> npt.NDArray[np.int64]:
        return np.array([sum(int(r[j]) for r in found.get(g, [])) for g in self._groups], dtype=np.int64)

    def row_counts(self) -> npt.NDArray[np.int64]:
        if self._counts is None:
            self._counts = self._per_group(self._coding.records(F.count(F.lit(1))), 0)
        return self._counts

    def _present(self, column: str) -> tuple[Column, bool]:
        x, kind = self._coding.value(column)
        x = decimal_double(x) if kind == "decimal" else x.cast("double")  # a decimal: the double numpy reads
        return (F.when(~F.isnan(x), x) if kind == "float" else x), kind in ("float", "int", "bool", "null", "decimal")

    def present_counts(self, column: str) -> npt.NDArray[np.int64]:
        x, native = self._present(column)
        if not native:  # a type the executors do not read as numbers: each group's own reductions answer
            return np.array([as_reductions(self.rows(i)).count(column) for i in range(self.n_groups)], dtype=np.int64)
        return self._per_group(self._coding.records(F.count(x)), 0)

    def clipped_sums(self, spec: SumSpec) -> list[LatticeSum]:
        x, native = self._present(spec.column)
        (plan,) = SumPlan.for_specs([spec], lambda column: native)
        if plan is None:  # bounds beyond the fast path: each group's own reductions answer (as SparkReductions does)
            return [as_reductions(self.rows(i)).clipped_sums([spec])[0] for i in range(self.n_groups)]
        t = F.rint(_clip(x * F.lit(plan.scale), plan.a, plan.b))
        if plan.centre is not None:  # exact in double: |t - centre| <= 2**26 (SumPlan)
            d = t - F.lit(float(plan.centre))
            t = F.rint((d * d) * F.lit(plan.square_scale))
        term = t.cast("long")
        found = self._coding.records(F.try_sum(term), F.count(x))  # try_sum: null on overflow
        if any(r[0] is None and int(r[1]) for records in found.values() for r in records):
            found = self._coding.records(F.sum(term.cast("decimal(38,0)")), F.count(x))  # exact again, in decimal (rare)
        return [
            LatticeSum(sum(int(r[0] or 0) for r in found.get(g, [])), sum(int(r[1]) for r in found.get(g, [])), spec.k) for g in self._groups
        ]

    def rows(self, i: int) -> Dataset:
        from dpalg._errors import InvalidArgument

        if not 0 <= i < self.n_groups:
            raise InvalidArgument("SparkGroups", "i", i, f"must be in [0, {self.n_groups})")
        return self._coding.rows(self._groups[i])


def spark_coding(
    data: Dataset, source: SparkFrameSource, source_of: SourceOf, by: tuple[str, ...], keys: tuple[GroupKey, ...] | None, *,
    other: bool, labels: Sequence[GroupKey] | None, unit: str | None, reads: tuple[str, ...], owner: str,
) -> SparkCoding | None:  # fmt: skip
    """The Spark coding of a GROUP BY, or ``None`` when a column's type sends it to the numpy answers (module docstring)."""
    for name in (*by, *reads, *((unit,) if unit is not None else ())):
        data.column_dtype(name)  # an unknown column raises the dataset's error (the schema check did, before the charge)
    if any(unit_key_kind(source.spark_dtype(name)) is None for name in by):
        return None
    if unit is not None and unit_key_kind(source.spark_dtype(unit)) is None:
        return None
    keyed = {*by, *((unit,) if unit is not None else ())}  # grouped as keys (decimal and null included): checked above
    if any(executor_kind(source.spark_dtype(name)) not in (*_KEY_KINDS, "decimal") for name in reads if name not in keyed):
        return None
    names = tuple(dict.fromkeys((*by, *((unit,) if unit is not None else ()), *reads)))
    return SparkCoding.build(source, source_of, by, keys, other=other, labels=labels, reads=names, owner=owner)


#: the working columns of a user-level split (a frame that already holds one is split in the driver)
_PART: Final = "__dpalg_part"
_LEAST: Final = "__dpalg_least"


@final
class SparkParts:
    """The parts of ``Parallel(by=..., parts=...)`` on the executors: one filtered frame per listed key.

    Row level: part ``i`` is the frame filtered to the rows whose key is ``keys[i]``
    under the key policy (the exact Spark values :func:`~dpalg.data.normalise_key`
    reads as that key, ``isin``; floats as double, NaN as null, ``-0.0`` as ``0.0``),
    what :func:`~dpalg.data.key_codes` selects. User level: each row's part rank
    (the listed key's rank in key order, null for a missing or unlisted key), the
    least rank among the rows of its user (a window partitioned by the user: a
    function of that user's rows only), and part ``i`` is the rows whose id is
    present, whose rank is part ``i``'s and equals their user's least: the numpy
    split's rule, each user in the part of the smallest listed key among their
    rows. That frame is persisted once and released by :meth:`close`. Nothing is
    collected: each part is a dataset of its own Spark source.
    """

    __slots__ = ("_persisted", "datasets")

    def __init__(self, datasets: list[Dataset], persisted: Any) -> None:
        self.datasets, self._persisted = datasets, persisted

    def close(self) -> None:
        persisted, self._persisted = self._persisted, None
        _unpersist(persisted)

    def __repr__(self) -> str:  # never prints values
        return f"SparkParts({len(self.datasets)} parts)"


def spark_parts(
    data: Dataset, source: SparkFrameSource, source_of: SourceOf, by: str, keys: tuple[Key, ...], *, unit: str | None,
) -> SparkParts | None:
    """The parts of a split by key (:class:`SparkParts`), or ``None`` when a column's type sends it to the numpy split."""
    data.column_dtype(by)  # an unknown column raises the dataset's error (the schema check did, before the charge)
    if unit is not None:
        data.column_dtype(unit)
    kind = unit_key_kind(source.spark_dtype(by))
    unit_kind = None if unit is None else unit_key_kind(source.spark_dtype(unit))
    if kind is None or (unit is not None and unit_kind is None):
        return None
    frame = source.frame
    k = _normalised(by, kind)
    spark_type = source.spark_dtype(by)
    exact = [_exact_candidates(kind, spark_type, [key]) for key in keys]
    if unit is None:
        return SparkParts([Dataset.from_source(source_of(frame.where(_isin(k, values)))) for values in exact], None)
    if {_PART, _LEAST} & {name.lower() for name in frame.columns}:
        return None
    from pyspark.sql import Window

    order = sorted(range(len(keys)), key=lambda j: key_order(keys[j]))
    rank_of = {j: rank for rank, j in enumerate(order)}
    rank: Column = F.lit(None).cast("long")
    for j in reversed(range(len(keys))):  # CASE WHEN in listing order (the keys are distinct, so at most one matches)
        rank = F.when(_isin(k, exact[j]), F.lit(rank_of[j])).otherwise(rank)
    user = unit_key(unit, unit_kind or "int")
    ranked = frame.where(user.isNotNull()).withColumn(_PART, rank)
    least = F.min(F.col(_PART)).over(Window.partitionBy(user))
    kept = ranked.withColumn(_LEAST, least).where(F.col(_PART).isNotNull() & (F.col(_PART) == F.col(_LEAST))).persist()
    names = [F.col(quoted(name)) for name in frame.columns]
    parts = [Dataset.from_source(source_of(kept.where(F.col(_PART) == F.lit(rank_of[j])).select(*names))) for j in range(len(keys))]
    return SparkParts(parts, kept)


def _distinct_rows(present: Any, width: int, *, variable: bool, most: int | None) -> Iterator[tuple[Any, ...]]:
    """The distinct rows of ``present`` (``width`` key columns), in jobs under the result cap
    (:func:`~dpalg.data._spark_collect.unordered_parts`): as many as the rows at worst, one record per distinct key."""
    for part in unordered_parts(present.distinct(), variable_key=variable, most=most):
        table = arrow_table(part)
        if table is not None:
            yield from zip(*(table.column(j).to_pylist() for j in range(width)))
        else:
            yield from (tuple(r) for r in part.collect())
