"""The data layer: dataset adapter, privacy unit, neighbouring relation and the
per-unit reductions every user-level mechanism reads data through."""

from dpalg.data._dataset import ROW, Dataset, DataLike, Neighbouring, Relation, as_dataset
from dpalg.data._user_units import (
    per_unit_max,
    per_unit_row_counts,
    per_unit_sums,
    per_unit_value_sets,
    unit_count,
    unit_index,
)

__all__ = [
    "ROW", "DataLike", "Dataset", "Neighbouring", "Relation", "as_dataset", "per_unit_max", "per_unit_row_counts",
    "per_unit_sums", "per_unit_value_sets", "unit_count", "unit_index",
]  # fmt: skip
