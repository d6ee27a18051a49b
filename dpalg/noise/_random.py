"""Sources of uniform random bits: the only entry point of randomness in dpalg.

Two sources exist:

* :class:`SecureRandomness` (the default) reads the operating system's CSPRNG
  (``os.urandom``, i.e. ``getrandom(2)`` on Linux) in large buffered blocks.
  We chose the OS generator over a user-space ChaCha bit generator because it
  needs no extra dependency, is reseeded by the kernel, and survives ``fork``
  without two processes sharing a stream (the buffer is dropped in the child).
* :class:`SeededRandomness` wraps numpy's PCG64 for reproducible tests and
  examples. It is **not** cryptographically secure and every certificate made
  with it says so.

Both hand out only uniform integers; every distribution is built from them by
the exact samplers in :mod:`dpalg.noise`.
"""

from __future__ import annotations

import abc
import os
import threading
from typing import Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = ["AbstractRandomness", "SecureRandomness", "SeededRandomness", "RngLike", "prf_secret", "resolve_rng"]

_BLOCK: Final = 1 << 16  # uint64 words per OS read (512 KiB)


class AbstractRandomness(abc.ABC):
    """A source of independent uniform 64-bit words."""

    #: recorded in every certificate, e.g. ``"os-csprng"`` or ``"seeded-pcg64(seed=7)"``
    kind: str
    #: whether the source is cryptographically secure
    secure: bool

    @abc.abstractmethod
    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        """Return ``n`` independent uniform 64-bit words."""

    def bits(self, n: int, width: int) -> npt.NDArray[np.uint64]:
        """``n`` uniform integers in ``[0, 2**width)`` for ``0 <= width <= 64``."""
        words = self.uint64(n)
        if width >= 64:
            return words
        return words >> np.uint64(64 - width)

    def below(self, bound: int, n: int) -> npt.NDArray[np.int64]:
        """``n`` uniform integers in ``[0, bound)`` for ``1 <= bound <= 2**62``.

        Vectorised rejection sampling on ``ceil(log2 bound)`` bits: each round
        keeps the accepted entries and redraws only the pending ones.
        """
        if bound < 1 or bound > (1 << 62):
            raise InvalidArgument("below", "bound", bound, "must be in [1, 2**62]")
        out = np.empty(n, dtype=np.int64)
        if bound == 1:
            out[:] = 0
            return out
        width = (bound - 1).bit_length()
        pending = np.arange(n)
        while pending.size:
            draw = self.bits(pending.size, width).astype(np.int64)
            ok = draw < bound
            out[pending[ok]] = draw[ok]
            pending = pending[~ok]
        return out

    def big_below(self, bound: int) -> int:
        """One uniform Python integer in ``[0, bound)``, for any ``bound >= 1``."""
        if bound < 1:
            raise InvalidArgument("big_below", "bound", bound, "must be >= 1")
        width = (bound - 1).bit_length()
        words = (width + 63) // 64
        while True:
            raw = 0
            for w in self.uint64(max(words, 1)).tolist():
                raw = (raw << 64) | int(w)
            raw >>= words * 64 - width
            if raw < bound:
                return raw


@final
class SecureRandomness(AbstractRandomness):
    """The operating system's CSPRNG, read in 512 KiB blocks (thread-safe)."""

    kind = "os-csprng"
    secure = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffer = np.empty(0, dtype=np.uint64)
        self._pos = 0
        self._pid = os.getpid()

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        if n < 0:
            raise InvalidArgument("SecureRandomness.uint64", "n", n, "must be >= 0")
        if n >= _BLOCK:
            return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()
        with self._lock:
            if os.getpid() != self._pid:  # forked child: never reuse the parent's bytes
                self._buffer = np.empty(0, dtype=np.uint64)
                self._pos = 0
                self._pid = os.getpid()
            if self._pos + n > self._buffer.size:
                self._buffer = np.frombuffer(os.urandom(8 * _BLOCK), dtype=np.uint64)
                self._pos = 0
            out = self._buffer[self._pos : self._pos + n].copy()
            self._pos += n
            return out

    def __repr__(self) -> str:
        return "SecureRandomness()"


@final
class SeededRandomness(AbstractRandomness):
    """numpy PCG64 with a fixed seed. For tests and examples only: NOT secure."""

    secure = False

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidArgument("SeededRandomness", "seed", seed, "must be an int >= 0")
        self.seed = seed
        self.kind = f"seeded-pcg64(seed={seed}) NOT SECURE"
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self._lock = threading.Lock()

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        if n < 0:
            raise InvalidArgument("SeededRandomness.uint64", "n", n, "must be >= 0")
        with self._lock:
            return self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)

    def __repr__(self) -> str:
        return f"SeededRandomness({self.seed})"


RngLike = AbstractRandomness | int | None

_DEFAULT: SecureRandomness | None = None
_DEFAULT_LOCK = threading.Lock()


def resolve_rng(rng: RngLike) -> AbstractRandomness:
    """``None`` -> the shared secure source; ``int`` -> a seeded source; else itself."""
    global _DEFAULT
    if rng is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = SecureRandomness()
            return _DEFAULT
    if isinstance(rng, AbstractRandomness):
        return rng
    if isinstance(rng, int) and not isinstance(rng, bool):
        return SeededRandomness(rng)
    raise InvalidArgument("resolve_rng", "rng", type(rng).__name__, "must be None, an int seed or an AbstractRandomness")


def prf_secret(rng: AbstractRandomness) -> bytes:
    """A fresh 256-bit key for the keyed hashes that choose which rows a user keeps.

    Drawn from ``rng`` like any noise, so a secure run gets an unpredictable key and a
    seeded run a reproducible one. Privacy never depends on the key (a contribution
    bound holds for any key); the key only keeps the choice of rows unpredictable.

    Examples:
        >>> len(prf_secret(SeededRandomness(1)))
        32
    """
    return rng.uint64(4).tobytes()
