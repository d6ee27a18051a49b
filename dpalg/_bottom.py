"""The ⊥ release value, shared by every layer that can decline to release."""

from __future__ import annotations

from typing import Final, final

__all__ = ["BOTTOM", "Bottom"]


@final
class Bottom:
    """The ⊥ output: a mechanism declined to release (e.g. PTR's test failed).

    ⊥ is a first-class release value, not an exception; it is the singleton
    :data:`BOTTOM` and prints as ``⊥``.
    """

    _instance: Bottom | None = None

    def __new__(cls) -> Bottom:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "BOTTOM"

    def __str__(self) -> str:
        return "⊥"

    def __bool__(self) -> bool:
        return False


BOTTOM: Final = Bottom()
