"""The frames :func:`~dpalg.data.as_dataset` adapts in place: polars and Spark, registered here.

Each backend is recognised by the frame's type's module and name, so ``import
dpalg`` never loads polars or pyspark; the backend module (which imports the
frame library, or reaches it on first use) is imported only when
:func:`~dpalg.data.as_dataset` is given such a frame. This module sits above
:mod:`dpalg.data._dataset` and the backends: the dataset layer never imports a
backend (a new backend registers a :class:`~dpalg.data._dataset.FrameBackend`
the same way, see ``docs/architecture.md``).
"""

from __future__ import annotations

from collections.abc import Mapping

from dpalg.data._dataset import Dataset, FrameBackend, register_frame_backend
from dpalg.data._spark_types import is_spark_frame  # no pyspark import

__all__ = ["is_polars_frame"]


def is_polars_frame(data: object) -> bool:
    """A polars DataFrame or LazyFrame, recognised by its type's module: polars is never imported to ask.

    Examples:
        >>> is_polars_frame({"x": [1.0]})
        False
    """
    kind = type(data)
    return kind.__module__.split(".")[0] == "polars" and kind.__name__ in ("DataFrame", "LazyFrame")


def _polars_dataset(frame: object) -> Dataset:
    from dpalg.data._polars import polars_dataset  # imports polars: only for a polars frame

    return polars_dataset(frame)


def _spark_dataset(frame: object) -> Dataset:
    from dpalg.data._spark import spark_dataset  # imports pyspark when it computes: only for a Spark frame

    return spark_dataset(frame)


register_frame_backend(
    FrameBackend(
        recognises=is_polars_frame,
        adapt=_polars_dataset,
        missing=lambda data, exc: (
            f"as_dataset: a polars {type(data).__name__} needs polars >= 1.0 ({exc}); install it with: pip install 'dpalg[polars]'"
        ),
    )
)
register_frame_backend(
    FrameBackend(
        recognises=is_spark_frame,
        adapt=_spark_dataset,
        missing=lambda data, exc: f"as_dataset: a Spark DataFrame needs pyspark ({exc}); install it with: pip install 'dpalg[spark]'",
    )
)


def _tables_dataset(data: object) -> Dataset:
    from dpalg.data._tables import tables_dataset

    assert isinstance(data, Mapping)
    return tables_dataset(data)


def _is_tables(data: object) -> bool:
    from dpalg.data._tables import is_tables

    return is_tables(data)


register_frame_backend(
    FrameBackend(
        recognises=_is_tables,
        adapt=_tables_dataset,
        missing=lambda data, exc: f"as_dataset: a table of this input could not be adapted ({exc})",
    )
)
