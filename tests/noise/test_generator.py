"""The secure generator (issue 19): AES-256-CTR keystream, re-keyed per block, fork-safe, tails served."""

from __future__ import annotations

import os
import select
import signal
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

from dpalg import InvalidArgument
from dpalg.noise import SecureRandomness, resolve_rng
from dpalg.noise import _random

pytest.importorskip("cryptography")

# NIST SP 800-38A, F.5.5 CTR-AES256.Encrypt: key, initial counter block, first
# plaintext and ciphertext blocks; the keystream is their XOR.
_KEY = bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
_CTR = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
_KEYSTREAM_BLOCK_1 = bytes.fromhex("0bdf7df1591716335e9a8b15c860c502")


def test_the_keystream_is_aes256_ctr(monkeypatch: pytest.MonkeyPatch) -> None:
    """With os.urandom pinned to the NIST key and counter, the first words are the NIST keystream."""
    monkeypatch.setattr(os, "urandom", lambda n: (_KEY + _CTR)[:n] if n == 48 else b"\0" * n)
    words = SecureRandomness("aes-ctr").uint64(2)
    assert words.tobytes() == _KEYSTREAM_BLOCK_1


def test_every_block_has_a_fresh_key(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.urandom

    def counting(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    source = SecureRandomness("aes-ctr")
    source.uint64(3 * _random._BLOCK + 5)
    assert calls == [48] * 4  # three whole blocks and one buffered block, each keyed from the OS


def test_kind_names_the_generator() -> None:
    assert SecureRandomness("os").kind == "os-csprng"
    aes = SecureRandomness("aes-ctr")
    assert aes.kind.startswith("aes256-ctr(cryptography ") and "os.urandom" in aes.kind
    assert aes.secure and SecureRandomness("os").secure
    assert resolve_rng(None).kind == aes.kind  # the default is the AES generator when cryptography is installed
    with pytest.raises(InvalidArgument, match="generator"):
        SecureRandomness("chacha")  # type: ignore[arg-type]


def test_without_cryptography_the_os_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # import fails
    assert SecureRandomness().kind == "os-csprng"
    with pytest.raises(InvalidArgument, match="cryptography"):
        SecureRandomness("aes-ctr")


@pytest.mark.parametrize("generator", ["aes-ctr", "os"])
def test_buffer_tails_are_served(generator: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Words produced = words served, up to one buffered block (no tail is thrown away)."""
    source = SecureRandomness(generator)  # type: ignore[arg-type]
    produced = [0]
    fill = source._fill

    def counting(out: np.ndarray) -> None:
        produced[0] += out.size
        fill(out)

    monkeypatch.setattr(source, "_fill", counting)
    sizes = np.random.default_rng(0).integers(0, 70_000, size=40).tolist() + [1, 0, 65535, 65536, 65537]
    served = 0
    for n in sizes:
        out = source.uint64(int(n))
        assert out.shape == (n,) and out.dtype == np.uint64
        served += int(n)
    assert served <= produced[0] <= served + _random._BLOCK


@pytest.mark.parametrize("generator", ["aes-ctr", "os"])
def test_words_look_uniform(generator: str) -> None:
    words = SecureRandomness(generator).uint64(200_000)  # type: ignore[arg-type]
    byte_counts = np.bincount(words.view(np.uint8), minlength=256)
    assert stats.chisquare(byte_counts).pvalue > 1e-6
    assert np.unique(words).size == words.size  # 2**-28 chance of a collision


def _child_words(source: _random.SecureRandomness, timeout: float = 30.0) -> bytes:
    """Fork; the child's next 8 words (b"" if the child has not answered within ``timeout``: killed)."""
    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns about fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.write(write, source.uint64(8).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    child = b""
    while len(child) < 64 and select.select([read], [], [], timeout)[0]:
        chunk = os.read(read, 64 - len(child))
        if not chunk:
            break
        child += chunk
    if len(child) < 64:
        os.kill(pid, signal.SIGKILL)
    os.close(read)
    os.waitpid(pid, 0)
    return child


def _child_and_parent_words(source: _random.SecureRandomness) -> tuple[bytes, bytes]:
    """Fork with words buffered; the child's next 8 words and the parent's next 8 words."""
    source.uint64(3)  # the buffer now holds the rest of a block
    return _child_words(source), source.uint64(8).tobytes()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("generator", ["aes-ctr", "os"])
def test_forked_child_never_shares_the_parents_words(generator: str) -> None:
    child, parent = _child_and_parent_words(SecureRandomness(generator))  # type: ignore[arg-type]
    assert len(child) == 64
    assert child != parent


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_fork_test_catches_a_source_that_keeps_its_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken variant: no re-key and no pid check -- the child repeats the parent's words."""
    source = SecureRandomness("aes-ctr")
    monkeypatch.setattr(_random.SecureRandomness, "_forget", lambda self: None)
    monkeypatch.setattr(os, "getpid", lambda: source._pid)
    child, parent = _child_and_parent_words(source)
    assert child == parent


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_a_thread_holds_the_lock_still_draws() -> None:
    """The parent's lock is copied locked into the child; the child must get a fresh one, not hang."""
    source = SecureRandomness("aes-ctr")
    source.uint64(1)
    source._lock.acquire()  # as if another thread were inside uint64() at the fork
    try:
        got = _child_words(source)
    finally:
        source._lock.release()
    assert len(got) == 64, "the forked child hung on the parent's lock"
