"""Slots: operations a low module delegates to, filled by a module above it when that module is imported.

The node classes (:mod:`dpalg.graph._node`) and the result of a run
(:mod:`dpalg.graph._result`) sit below the modules that implement some of their
methods (the accountant, the printers, the runner, the certificate's signer), which
import them back; so the low module declares a :class:`Provided` slot and the high
module fills it (dependency inversion, docs/architecture.md, "Slots").
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Provided"]

_F = TypeVar("_F")


class Provided(Generic[_F]):
    """An operation the node classes delegate to, provided by a module above them.

    The accountant, the printers and the runner all import the node classes (they
    dispatch on them), so the node's methods cannot import them back: each of
    those modules hands its function to one of the slots when it is imported
    (dependency inversion). ``import dpalg`` imports every provider, and any
    ``import dpalg.x`` runs ``dpalg/__init__.py`` first, so a slot is filled before
    a plan exists.
    """

    def __init__(self, what: str, provider: str) -> None:
        self._what = what
        self._provider = provider
        self._impl: _F | None = None

    def provide(self, impl: _F) -> None:
        """Install the implementation (called once, by the providing module at its import)."""
        self._impl = impl

    @property
    def impl(self) -> _F:
        """The installed implementation."""
        if self._impl is None:  # pragma: no cover - import dpalg installs every slot
            raise RuntimeError(f"{self._what} is not installed: import {self._provider}")
        return self._impl
