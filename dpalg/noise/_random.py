"""Sources of uniform random bits: the only entry point of randomness in dpalg.

Two sources exist:

* :class:`SecureRandomness` (the default). With ``cryptography`` installed (a
  runtime dependency; see ``docs/randomness.md``) it is the AES-256-CTR keystream
  of OpenSSL, **re-keyed from the operating system's CSPRNG (``os.urandom``) for
  every block of 2**16 words** (512 KiB): a fresh 256-bit key and 128-bit nonce per
  block, so a block's words are as unpredictable as AES-256 is a pseudorandom
  permutation, and no key outlives its block. It is about 20x faster than reading
  ``os.urandom`` itself (``python -m benchmarks --only noise``). Without
  ``cryptography`` (or with ``SecureRandomness("os")``) the words are read from
  ``os.urandom`` directly. Either way the certificate names the generator.
  After ``fork`` the child discards the parent's buffer and re-keys
  (``os.register_at_fork``, with a pid check as a second guard), so the two
  processes never share a word. Buffer tails are served, not dropped.
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
import weakref
from collections.abc import Callable
from typing import Final, Literal, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument

__all__ = ["AbstractRandomness", "GeneratorRandomness", "SecureRandomness", "SeededRandomness", "RngLike", "prf_secret", "resolve_rng"]

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


Generator = Literal["auto", "aes-ctr", "os"]

#: every live secure source, re-keyed in a forked child (``os.register_at_fork``)
_LIVE: weakref.WeakSet[SecureRandomness] = weakref.WeakSet()


def _aes_ctr_factory() -> tuple[Callable[[npt.NDArray[np.uint64]], None], str] | None:
    """A filler of uint64 buffers with fresh AES-256-CTR keystream, or None without ``cryptography``.

    Each call draws a new 256-bit key and 128-bit initial counter from
    ``os.urandom`` and encrypts zeros: the output is the keystream itself.
    """
    try:
        import cryptography
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        return None
    zeros = bytes(8 * _BLOCK)

    def fill(out: npt.NDArray[np.uint64]) -> None:
        seed = os.urandom(48)
        encryptor = Cipher(algorithms.AES(seed[:32]), modes.CTR(seed[32:])).encryptor()
        nbytes = 8 * out.size
        out.view(np.uint8)[:] = np.frombuffer(encryptor.update(zeros[:nbytes]), dtype=np.uint8)

    return fill, f"aes256-ctr(cryptography {cryptography.__version__}; re-keyed from os.urandom every {_BLOCK} words)"


def _os_fill(out: npt.NDArray[np.uint64]) -> None:
    out.view(np.uint8)[:] = np.frombuffer(os.urandom(8 * out.size), dtype=np.uint8)


@final
class SecureRandomness(AbstractRandomness):
    """The default secure source: AES-256-CTR re-keyed from ``os.urandom``, or ``os.urandom`` itself.

    Args:
        generator: ``"auto"`` (AES-256-CTR when ``cryptography`` imports, else
            the OS), ``"aes-ctr"`` (refuse to run without ``cryptography``) or
            ``"os"`` (``os.urandom`` only).

    Thread-safe; fork-safe (a forked child re-keys and drops the parent's buffer).

    Examples:
        >>> SecureRandomness("os").kind
        'os-csprng'
        >>> SecureRandomness("os").uint64(3).dtype
        dtype('uint64')
    """

    secure = True

    def __init__(self, generator: Generator = "auto") -> None:
        if generator not in ("auto", "aes-ctr", "os"):
            raise InvalidArgument("SecureRandomness", "generator", generator, "must be 'auto', 'aes-ctr' or 'os'")
        made = None if generator == "os" else _aes_ctr_factory()
        if made is None and generator == "aes-ctr":
            raise InvalidArgument("SecureRandomness", "generator", generator,
                                  "needs the 'cryptography' package (pip install cryptography)")
        self._fill: Callable[[npt.NDArray[np.uint64]], None] = _os_fill if made is None else made[0]
        self.kind = "os-csprng" if made is None else made[1]
        self.generator: Literal["aes-ctr", "os"] = "os" if made is None else "aes-ctr"
        self._lock = threading.Lock()
        self._buffer = np.empty(_BLOCK, dtype=np.uint64)
        self._pos = _BLOCK  # empty
        self._pid = os.getpid()
        _LIVE.add(self)

    def _forget(self) -> None:
        """Drop every buffered word (called in a forked child)."""
        self._pos = _BLOCK
        self._pid = os.getpid()

    def _after_fork(self) -> None:
        """In a forked child: a new lock (a thread of the parent may have held the old one) and no buffer."""
        self._lock = threading.Lock()
        self._forget()

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        if n < 0:
            raise InvalidArgument("SecureRandomness.uint64", "n", n, "must be >= 0")
        out = np.empty(n, dtype=np.uint64)
        with self._lock:
            if os.getpid() != self._pid:  # forked child: never reuse the parent's words
                self._forget()
            done = min(n, _BLOCK - self._pos)  # serve the buffer's tail first
            out[:done] = self._buffer[self._pos : self._pos + done]
            self._pos += done
            whole = (n - done) // _BLOCK * _BLOCK
            for start in range(done, done + whole, _BLOCK):  # whole blocks straight into the output
                self._fill(out[start : start + _BLOCK])
            rest = n - done - whole
            if rest:
                self._fill(self._buffer)
                out[n - rest :] = self._buffer[:rest]
                self._pos = rest
        return out

    def __repr__(self) -> str:
        return "SecureRandomness()" if self.generator == "aes-ctr" else "SecureRandomness('os')"


def _rekey_after_fork() -> None:
    for source in list(_LIVE):
        source._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_rekey_after_fork)


def _generator_words(owner: str, gen: np.random.Generator, lock: threading.Lock, n: int) -> npt.NDArray[np.uint64]:
    """``n`` uniform 64-bit words from a numpy generator, one caller at a time (a Generator is not thread-safe)."""
    if n < 0:
        raise InvalidArgument(owner, "n", n, "must be >= 0")
    with lock:
        return gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


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
        return _generator_words("SeededRandomness.uint64", self._gen, self._lock, n)

    def __repr__(self) -> str:
        return f"SeededRandomness({self.seed})"


@final
class GeneratorRandomness(AbstractRandomness):
    """A caller's numpy ``Generator`` as a source of words. NOT secure.

    Accepted so that code already holding a ``np.random.Generator`` can pass
    it as ``rng``; the words come from its bit generator, whose state anyone
    holding it (or its seed) can replay, so the release is recorded as
    insecure, exactly as an ``int`` seed is.
    """

    secure = False

    def __init__(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise InvalidArgument("GeneratorRandomness", "generator", type(generator).__name__, "must be a numpy Generator")
        self._gen = generator
        self.kind = f"numpy-generator({type(generator.bit_generator).__name__}) NOT SECURE"
        self._lock = threading.Lock()

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        return _generator_words("GeneratorRandomness.uint64", self._gen, self._lock, n)

    def __repr__(self) -> str:
        return f"GeneratorRandomness({self._gen!r})"


RngLike = AbstractRandomness | int | np.random.Generator | None

_DEFAULT: SecureRandomness | None = None
_DEFAULT_LOCK = threading.Lock()


def resolve_rng(rng: RngLike) -> AbstractRandomness:
    """``None`` -> the shared secure source; ``int`` -> a seeded source; a numpy
    ``Generator`` -> :class:`GeneratorRandomness` (insecure); else itself."""
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
    if isinstance(rng, np.random.Generator):
        return GeneratorRandomness(rng)
    raise InvalidArgument(
        "resolve_rng", "rng", type(rng).__name__, "must be None, an int seed, a numpy Generator or an AbstractRandomness"
    )


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
