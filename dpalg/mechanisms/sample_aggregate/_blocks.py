"""Sample-and-aggregate: the unit-local partition into blocks and the block outputs.

The partition and the policy for the user's block function are described in
:mod:`dpalg.mechanisms.sample_aggregate._aggregate`; this module holds the data path
(labels, canonical blocks, the guarded calls) shared by the numpy backend and,
run on the executors, the Spark backend (:mod:`._spark`); the
aggregators hold the privacy.

**The canonical form of a block** (what the user function receives, on every
backend). A block's rows are read in their canonical form: float columns with
``-0.0`` as ``0.0`` and every NaN as ``nan``; ``object`` columns as the keys of
the key policy (:func:`~dpalg.data.normalise_key`: ``1.0`` is ``1``, a value that
does not fit is ``None``); str and bytes columns as ``object`` arrays of Python
str and bytes (so no fixed-width dtype tells the function the longest value in
the *whole* data); int and bool columns as they are. Two rows equal under the key
policy are then indistinguishable. The column form receives the block's present
values sorted ascending; the Dataset form receives the declared columns
(``reads``) only, rows sorted lexicographically by them in ``reads`` order, each
column ascending in its natural order (object columns in key order), missing
values last. The order is exact (no hash), so the argument is a function of the
block's *multiset* of rows: the same whatever the row order or the partitioning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import final

import attrs

import numpy as np
import numpy.typing as npt

from dpalg.data import Dataset, key_index, keyed_hashes, row_hashes
from dpalg.data._row_choice import exact_occurrences, keyed_labels
from dpalg._errors import InvalidArgument
from dpalg.mechanisms._common.user_function import TRIAL_VALUES, as_real, call_quietly, discover_columns, quiet, statistic_value
from dpalg.noise import AbstractRandomness, prf_secret
from dpalg.queries import Query
from dpalg.queries._query import clip_inside

__all__ = [
    "BlockFunction", "ColumnFunction", "QueryStatistic", "block_labels", "block_outputs", "block_values", "blocks_of",
    "call_block", "canonical_column", "canonical_order", "content_hashes", "content_labels", "discover_block_reads", "labels_with_key",
    "unit_labels",
]  # fmt: skip

#: a function of one block as a Dataset (the default form)
BlockFunction = Callable[[Dataset], object]
#: a function of one block's values in ``column`` (the column form), e.g. ``np.median``
ColumnFunction = Callable[[npt.NDArray[np.float64]], object]


@final
@attrs.frozen
class QueryStatistic:
    """A ``Query.function(fn, column=...) | Clip(l, u)`` as a block function of that column.

    Called on a block's non-missing values, it returns f̃ of the block: ``fn`` of
    the values clipped to ``[l, u]`` and sorted, or the query's public fallback
    when ``fn`` fails (:func:`~dpalg.mechanisms._common.user_function.statistic_value`), so
    a block's output is the same statistic :class:`~dpalg.mechanisms.ProposeTest`
    and :class:`~dpalg.mechanisms.SmoothBound` release for the whole data.
    """

    query: Query

    def __call__(self, values: npt.NDArray[np.float64]) -> float:
        q = self.query
        assert q.fn is not None and q.lower is not None and q.upper is not None
        return statistic_value(q.fn, clip_inside(np.asarray(values, dtype=np.float64), q.lower, q.upper), float(q.fallback or 0))

    @property
    def __name__(self) -> str:  # the name certificates and messages show
        return str(self.query.name)


# --- canonical rows ----------------------------------------------------------------------------


def canonical_column(values: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """A column in its canonical form (module docstring): rows equal under the key policy become identical.

    Examples:
        >>> canonical_column(np.array([-0.0, 1.5])).tolist()
        [0.0, 1.5]
        >>> canonical_column(np.array([1.0, 2, None, 3j, "a"], dtype=object)).tolist()
        [1, 2, None, None, 'a']
    """
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind == "f":
        with np.errstate(all="ignore"):
            out: npt.NDArray[np.generic] = np.where(np.isnan(arr), np.nan, arr + 0.0).astype(arr.dtype, copy=False)
        return out
    if kind == "O":
        keys, codes = key_index(arr, owner="sample-and-aggregate")
        table = np.empty(len(keys) + 1, dtype=object)
        table[: len(keys)] = keys
        table[-1] = None  # code -1: missing
        return table[codes]
    if kind in "US":
        return arr.astype(object)
    return arr


def _sort_key(values: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """A key whose ascending order is the column's canonical order (missing last)."""
    if values.dtype == object:
        keys, codes = key_index(values, owner="sample-and-aggregate")
        return np.where(codes < 0, len(keys), codes)
    return values  # numbers: NaN sorts last; bools, and other dtypes of a direct call, in numpy's order


def canonical_order(columns: Sequence[npt.NDArray[np.generic]]) -> npt.NDArray[np.intp]:
    """The permutation sorting rows lexicographically by ``columns`` (the first primary); ties are identical rows.

    Examples:
        >>> canonical_order([np.array([2.0, 1.0, 2.0]), np.array([1, 5, 0])]).tolist()
        [1, 2, 0]
    """
    if not columns:
        return np.zeros(0, dtype=np.intp)
    return np.lexsort(tuple(_sort_key(c) for c in reversed(columns))).astype(np.intp)


def _rows_only(n_rows: int) -> Dataset:
    """A block with ``n_rows`` rows and no column (for a function that reads none)."""
    block = Dataset({})
    block._n = n_rows  # the data layer has no public constructor for a dataset without columns
    return block


def call_block(
    fn: BlockFunction | ColumnFunction, columns: Mapping[str, npt.NDArray[np.generic]], n_rows: int, failure: float,
    *, column_form: bool,
) -> float:  # fmt: skip
    """The guarded output of one non-empty block given its canonical columns, in any row order.

    Column form: ``columns`` holds the block's present values (one array); the
    function gets them sorted. Dataset form: the function gets the columns as a
    :class:`~dpalg.data.Dataset`, rows in canonical order. A raise, a non-number
    or NaN gives ``failure`` (:func:`~dpalg.mechanisms._common.user_function.call_quietly`,
    :func:`~dpalg.mechanisms._common.user_function.as_real`); call inside ``quiet()``.
    The numpy backend and the Spark executors both call this.
    """
    call: Callable[[object], object] = fn  # type: ignore[assignment]  # the form decides the argument
    if column_form:
        (values,) = columns.values()
        arg: object = np.sort(np.asarray(values, dtype=np.float64))
    elif columns:
        perm = canonical_order(list(columns.values()))
        arg = Dataset({name: values[perm] for name, values in columns.items()})
    else:
        arg = _rows_only(n_rows)
    real = as_real(call_quietly(call, arg))
    return failure if real is None else real


def discover_block_reads(fn: BlockFunction, declared: Sequence[str], owner: str, hint: str) -> tuple[tuple[str, ...], object]:
    """The columns a Dataset-form block function reads, and its result on the public trial block.

    :func:`~dpalg.mechanisms._common.user_function.discover_columns`, made to see past
    an empty-block guard: a function that reads nothing on the trial block
    without columns (which has no rows: ``if block.n_rows: ...``) is asked again
    on a public block of eight rows and no column, and a column it asks for there
    starts the discovery. The block function sees only these columns at release.
    """
    read, result = discover_columns(fn, declared, owner, "block_fn", type_hint=hint)
    if declared or read:
        return read, result
    try:
        with quiet():
            fn(_rows_only(len(TRIAL_VALUES)))
    except InvalidArgument as exc:
        if exc.owner == "Dataset" and exc.field == "column" and isinstance(exc.value, str):  # it reads this column
            more, result = discover_columns(fn, (), owner, "block_fn", fixed=(exc.value,), type_hint=hint)
            return (exc.value, *more), result
    except Exception:  # noqa: BLE001 -- user code; a failure on this extra probe is judged by the trial above
        pass
    return read, result


# --- labels --------------------------------------------------------------------------------


def content_hashes(columns: Sequence[npt.NDArray[np.generic]], n_rows: int, secret: bytes) -> npt.NDArray[np.uint64]:
    """A keyed hash of each row's canonical content (:func:`~dpalg.data.row_hashes`; no column: 0)."""
    if not columns:
        return np.zeros(n_rows, dtype=np.uint64)
    data = Dataset({f"c{j}": c for j, c in enumerate(columns)})
    return row_hashes(data, data.names, secret)


def content_labels(columns: Sequence[npt.NDArray[np.generic]], n_rows: int, secret: bytes, m: int) -> npt.NDArray[np.int64]:
    """Row-level labels from canonical columns: ``PRF(key, content, occurrence) mod m``.

    The occurrence is the row's rank among the rows identical to it, computed
    exactly (key codes, no hash: :func:`~dpalg.data._row_choice.exact_occurrences`);
    on Spark a window ``row_number()`` over the same equality computes it.
    """
    occurrences = exact_occurrences([key_index(c, owner="sample-and-aggregate")[1] for c in columns], n_rows)
    return keyed_labels(content_hashes(columns, n_rows, secret), occurrences, secret, m)


def unit_labels(ids: npt.NDArray[np.generic], secret: bytes, m: int) -> npt.NDArray[np.int64]:
    """User-level labels ``PRF(key, id) mod m`` (ids by the key policy); ``-1`` for a missing id (no block)."""
    arr = np.asarray(ids)
    if arr.dtype.kind in "iuf":  # numbers: hashed vectorised (1 and 1.0 alike, as the key policy)
        hashes = keyed_hashes(arr, secret)
        missing = np.isnan(arr) if arr.dtype.kind == "f" else np.zeros(arr.shape[0], dtype=np.bool_)
    else:  # each distinct key hashed once
        keys, codes = key_index(arr, owner="sample-and-aggregate")
        distinct = np.empty(len(keys), dtype=object)
        distinct[:] = keys
        hashes = np.append(keyed_hashes(distinct, secret), np.uint64(0))[codes]
        missing = codes < 0
    labels = keyed_labels(hashes, np.zeros(arr.shape[0], dtype=np.int64), secret, m)
    labels[missing] = -1
    return labels


def _content(data: Dataset, column: str | None, reads: Sequence[str] | None) -> list[npt.NDArray[np.generic]]:
    """The canonical columns a row's content is read from: the values of ``column``, or the ``reads`` columns."""
    if column is not None:
        return [canonical_column(data.numeric(column))]
    names = data.names if reads is None else tuple(reads)
    return [canonical_column(data.column(name)) for name in names]


def labels_with_key(
    data: Dataset, m: int, unit: str | None, secret: bytes, column: str | None, reads: Sequence[str] | None
) -> npt.NDArray[np.int64]:
    """Each row's block under the key ``secret``: users by :func:`unit_labels`, rows by :func:`content_labels`."""
    if unit is not None:
        return unit_labels(data.column(unit), secret, m)
    return content_labels(_content(data, column, reads), data.n_rows, secret, m)


def block_labels(
    data: Dataset, m: int, unit: str | None, rng: AbstractRandomness,
    *, column: str | None = None, reads: Sequence[str] | None = None,
) -> npt.NDArray[np.int64]:  # fmt: skip
    """Each row's block in [0, m), from a fresh key drawn from ``rng``; -1: no unit.

    Rows: ``PRF(key, content, occurrence) mod m``, the content being the value of
    ``column`` (the column form) or the canonical row over ``reads`` (default:
    every column), the occurrence its rank among the identical rows. Users:
    ``PRF(key, id) mod m``, ids read by the key policy (``1`` and ``1.0`` are one
    user, ``1``, ``"1"`` and ``True`` three), a missing id -1. The key is the
    release's first draw (:func:`~dpalg.noise.prf_secret`), so these are the
    labels a release with the same ``rng`` uses.
    """
    return labels_with_key(data, m, unit, prf_secret(rng), column, reads)


def _cuts(labels: npt.NDArray[np.int64], m: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    order = np.argsort(labels, kind="stable")
    cuts = np.searchsorted(labels[order], np.arange(m + 1))  # rows labelled -1 sort before block 0
    return order, cuts


def blocks_of(data: Dataset, labels: npt.NDArray[np.int64], m: int, *, reads: Sequence[str] | None = None) -> list[Dataset]:
    """The m blocks as the Dataset form sees them: canonical columns (``reads``, default all), canonical row order."""
    names = data.names if reads is None else tuple(reads)
    columns = {name: canonical_column(data.column(name)) for name in names}
    order, cuts = _cuts(labels, m)
    out = []
    for b in range(m):
        rows = order[cuts[b] : cuts[b + 1]]
        block = {name: values[rows] for name, values in columns.items()}
        perm = canonical_order(list(block.values()))
        out.append(Dataset({name: values[perm] for name, values in block.items()}) if block else _rows_only(rows.size))
    return out


def block_values(
    fn: BlockFunction | ColumnFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, failure: float,
    *, column: str | None = None, reads: Sequence[str] | None = None,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """Run the user function on each non-empty block; an empty or failing block yields ``failure``.

    A block fails when the function raises an :class:`Exception` or returns
    something that is not a real number (a str, None, NaN); ``±inf`` is kept.
    Each output is a deterministic function of its block's multiset of canonical
    rows alone (never of the others, never of the row order), which is all the
    aggregators' proofs use. The Dataset form gets the ``reads`` columns
    (default: every column).
    """
    out = np.full(m, failure, dtype=np.float64)
    order, cuts = _cuts(labels, m)
    content = _content(data, column, reads)
    names = (column,) if column is not None else (data.names if reads is None else tuple(reads))
    with quiet():
        for b in range(m):
            rows = order[cuts[b] : cuts[b + 1]]
            block = {name: values[rows] for name, values in zip(names, content)}
            if column is not None:
                (values,) = block.values()
                block = {column: values[~np.isnan(values)]}  # missing values are dropped (the data policy)
                if block[column].size == 0:
                    continue
            elif rows.size == 0:
                continue
            out[b] = call_block(fn, block, int(rows.size), failure, column_form=column is not None)
    return out


def block_outputs(
    fn: BlockFunction | ColumnFunction, data: Dataset, labels: npt.NDArray[np.int64], m: int, lower: float, upper: float,
    *, column: str | None = None, reads: Sequence[str] | None = None,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """The block outputs clipped to ``[lower, upper]``; an empty or failing block yields the midpoint.

    The midpoint is public and inside the range, so the clipped output of each
    block stays a function of that block alone with values in ``[lower, upper]``.
    """
    out = block_values(fn, data, labels, m, lower / 2 + upper / 2, column=column, reads=reads)
    return np.clip(out, lower, upper)
