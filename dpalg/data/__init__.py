"""The data layer: dataset adapter, privacy unit, neighbouring relation, the
data policy (numbers, keys, ids), the reductions seam every mechanism reads data
through (:class:`Reductions`, :class:`NumpyReductions`, and ``PolarsReductions``
for a polars frame) and the per-unit reductions of the user-level mechanisms.

``PolarsReductions`` and ``SparkReductions`` are imported on first access (PEP 562),
so ``import dpalg`` never loads polars or pyspark."""

from collections.abc import Callable

from dpalg.data._column_type import ColumnType
from dpalg.data._dataset import ROW, ColumnSource, Dataset, DataLike, Neighbouring, Relation, as_dataset
from dpalg.data._keys import Key, key_codes, key_counts, key_index, key_order, normalise_key
from dpalg.data._lattice_sums import exact_int_total, per_unit_lattice_sums
from dpalg.data._row_choice import keyed_hashes, row_hashes, select_keys, select_rows
from dpalg.data._numeric import to_float
from dpalg.data._reductions import LatticeSum, OrderWindow, Reductions, SumSpec
from dpalg.data._numpy_reductions import NumpyReductions, as_reductions
from dpalg.data import _frames  # noqa: F401 -- registers the polars and Spark frames with as_dataset
from dpalg.data._schema import ColumnRole, ColumnUse, check_columns
from dpalg.data._user_units import (
    per_unit_max,
    per_unit_row_counts,
    per_unit_sums,
    per_unit_value_sets,
    unit_count,
    unit_index,
)

__all__ = [
    "ROW", "ColumnRole", "ColumnSource", "ColumnType", "LatticeSum", "NumpyReductions", "OrderWindow", "PolarsReductions", "Reductions", "SumSpec",
    "as_reductions", "ColumnUse", "DataLike", "Dataset", "Key", "Neighbouring", "Relation", "as_dataset",
    "check_columns", "exact_int_total", "key_codes", "key_counts", "key_index", "key_order", "keyed_hashes",
    "normalise_key", "per_unit_lattice_sums", "per_unit_max", "per_unit_row_counts", "per_unit_sums",
    "per_unit_value_sets", "row_hashes", "select_keys", "select_rows", "to_float", "unit_count", "unit_index",
]  # fmt: skip


def _load_polars() -> object:
    from dpalg.data._polars_reductions import PolarsReductions

    return PolarsReductions


def _load_spark() -> object:
    import pyspark  # noqa: F401 -- the module itself imports pyspark only when it computes

    from dpalg.data._spark_reductions import SparkReductions

    return SparkReductions


# name: (its import, the package it needs, the extra that installs that package)
_LAZY: dict[str, tuple[Callable[[], object], str, str]] = {
    "PolarsReductions": (_load_polars, "polars", "polars"),
    "SparkReductions": (_load_spark, "pyspark", "spark"),
}


def __getattr__(name: str) -> object:
    """``PolarsReductions`` and ``SparkReductions``, imported on first access (they import polars, pyspark)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dpalg.data' has no attribute {name!r}")
    load, package, extra = _LAZY[name]
    try:
        value = load()
    except ImportError as exc:
        from dpalg._errors import Unsupported

        raise Unsupported(f"dpalg.data.{name} needs {package} ({exc}); install it with: pip install 'dpalg[{extra}]'") from exc
    globals()[name] = value
    return value
