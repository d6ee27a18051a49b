"""Which backend computes a dataset's answers and the package versions it runs on (for certificates).

Split from :mod:`dpalg.data._dataset` (which re-exports every name here). Versions
are read from installed metadata: no package is imported to ask.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import final

import attrs
import numpy as np  # noqa: F401  (the doctest of package_version compares with np.__version__)

from dpalg._errors import InvalidArgument, name_param

__all__ = ["BackendInfo", "package_version"]


@functools.cache
def package_version(distribution: str) -> str:
    """The installed version of ``distribution``, read from its metadata: the package is never imported to ask.

    When no distribution of that name is installed but a module of that name is
    imported already (``polars-lts-cpu`` installs the module ``polars``), its
    ``__version__``; otherwise ``"unknown"``. Read once per process.

    Examples:
        >>> package_version("numpy") == np.__version__
        True
        >>> package_version("no-such-distribution-here")
        'unknown'
    """
    try:
        return version(distribution)
    except PackageNotFoundError:
        found = getattr(sys.modules.get(distribution), "__version__", None)
        return found if isinstance(found, str) else "unknown"


def _version_pairs(pairs: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    out = tuple(sorted((str(k), str(v)) for k, v in items))
    if len({k for k, _ in out}) != len(out):
        raise InvalidArgument("BackendInfo", "versions", [k for k, _ in out], "must name each package once")
    return out


def _backend_name(value: str) -> str:
    return name_param("BackendInfo", "name", value, "must be a non-empty string")


@final
@attrs.frozen
class BackendInfo:
    """Which backend computes a dataset's answers, and the versions it runs on (recorded in a release's certificate).

    Attributes:
        name: ``"numpy"`` (numpy columns: a mapping of arrays or lists, or a
            pandas DataFrame), ``"polars"`` (a polars DataFrame or LazyFrame),
            ``"spark"`` (a classic pyspark DataFrame) or ``"spark-connect"``
            (a Spark Connect DataFrame).
        versions: ``(package, version)`` pairs sorted by package; a mapping is
            accepted. Besides installed packages, ``"spark"`` is the Spark
            version of the frame's session.

    Examples:
        >>> BackendInfo("polars", {"polars": "1.2.3", "numpy": "2.0.0"})
        BackendInfo(name='polars', versions=(('numpy', '2.0.0'), ('polars', '1.2.3')))
        >>> BackendInfo.installed("numpy", ["numpy"]).name
        'numpy'
    """

    name: str = attrs.field(converter=_backend_name)
    versions: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_version_pairs)

    @classmethod
    def installed(cls, name: str, packages: Sequence[str], extra: Mapping[str, str] | None = None) -> BackendInfo:
        """The backend ``name`` with the installed versions of ``packages`` (metadata only, see :func:`package_version`) and ``extra``."""
        return cls(name, {**{p: package_version(p) for p in packages}, **(extra or {})})
