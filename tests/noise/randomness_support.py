"""Test doubles of a randomness source for the noise tests: the words are seeded, and recorded or scripted."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dpalg.noise import AbstractRandomness, SeededRandomness

__all__ = ["RecordingRandomness", "ScriptedRandomness"]


class ScriptedRandomness(AbstractRandomness):
    """Seeded words; the first ``uint64`` request is answered with ``first`` instead."""

    secure = False

    def __init__(self, seed: int, first: npt.NDArray[np.uint64]) -> None:
        self.inner = SeededRandomness(seed)
        self.kind = "scripted"
        self.first: npt.NDArray[np.uint64] | None = first

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        if self.first is not None:
            out, self.first = self.first, None
            assert out.size == n
            return out
        return self.inner.uint64(n)


class RecordingRandomness(AbstractRandomness):
    """Seeded words, with the size of every request recorded."""

    secure = False

    def __init__(self, seed: int) -> None:
        self.inner = SeededRandomness(seed)
        self.kind = "recording"
        self.calls: list[int] = []

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        self.calls.append(n)
        return self.inner.uint64(n)
