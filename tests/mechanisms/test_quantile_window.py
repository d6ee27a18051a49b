"""The exponential quantile's lazy window draws the same candidate as the full list of runs.

:func:`dpalg.mechanisms.selection._exponential.sample_quantile_grid` builds only the runs
near the target rank and looks far runs up when proposed. Compared here with the full path
(:func:`quantile_runs_from_counts`, :func:`dpalg.noise.sample_exp_runs`, then a uniform
candidate of the run) on the same seeded randomness, over many data sets and quantiles --
with the envelope cap lowered so that the far block is proposed often (at the real cap it
practically never is) -- and on a seeded release.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

import dpalg.mechanisms.selection._exponential as quantile_module
import dpalg.noise._exponential as exp_module
from dpalg import Clip, Query
from dpalg.data import as_dataset
from dpalg.mechanisms import ExponentialQuantile
from dpalg.data._grid_view import BlockedGrid
from dpalg.mechanisms.selection._exponential import quantile_runs_from_counts, sample_quantile_grid, sample_quantile_view
from dpalg.noise import SeededRandomness, sample_exp_runs


def _full(occupied: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], size: int, q: Fraction, gamma: Fraction, seed: int) -> int:
    rng = SeededRandomness(seed)
    starts, lengths, scores = quantile_runs_from_counts(occupied, counts, size, q)
    run = sample_exp_runs(scores, gamma, lengths, rng=rng)
    length = int(lengths[run])
    return int(starts[run]) + (rng.big_below(length) if length > 1 else 0)


def _cases(g: np.random.Generator) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]]:
    out = []
    for _ in range(8):
        size = int(g.choice([1, 2, 7, 64, 300]))
        k = int(g.integers(1, size + 2))
        cells = np.sort(g.choice(size + 1, size=min(k, size + 1), replace=False)).astype(np.int64)
        counts = g.integers(1, int(g.choice([2, 5, 50])), size=cells.size).astype(np.int64)
        out.append((cells, counts, size))
    out.append((np.array([0, 5], dtype=np.int64), np.array([3, 1], dtype=np.int64), 5))  # both ends occupied
    out.append((np.array([3], dtype=np.int64), np.array([40], dtype=np.int64), 9))  # one point
    return out


@pytest.mark.parametrize("cap", [1, 4, 256])
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(1, 3)])
def test_the_lazy_window_draws_what_the_full_runs_draw(cap: int, q: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exp_module, "_CAP", cap)  # a low cap: the far block is proposed often
    monkeypatch.setattr(quantile_module, "LAZY_GRID_MIN", 1)
    g = np.random.default_rng(cap * 100 + q.numerator * 10 + q.denominator)
    far = 0
    for cells, counts, size in _cases(g):
        for gamma in (Fraction(1, 4), Fraction(3), Fraction(1, 50)):
            for seed in range(4):
                want = _full(cells, counts, size, q, gamma, seed)
                got = sample_quantile_grid(cells, counts, size, q, gamma, SeededRandomness(seed))
                assert got == want, (cells.tolist(), counts.tolist(), size, gamma, seed)
                far += got != _full(cells, counts, size, q, gamma, seed + 1000)
    assert far  # the draws are not all alike


def test_a_large_window_falls_back_to_the_full_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantile_module, "LAZY_GRID_MIN", 1)
    monkeypatch.setattr(quantile_module, "LAZY_WINDOW_MAX", 2)
    cells = np.arange(0, 400, 3, dtype=np.int64)
    counts = np.ones(cells.size, dtype=np.int64)
    for seed in range(5):
        for gamma in (Fraction(1, 10**6), Fraction(5)):
            assert sample_quantile_grid(cells, counts, 400, Fraction(1, 2), gamma, SeededRandomness(seed)) == _full(cells, counts, 400, Fraction(1, 2), gamma, seed)


def test_a_seeded_median_release_is_pinned() -> None:
    x = np.random.default_rng(0).random(200_000)  # enough occupied points for the lazy path
    node = ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1)
    # recorded with the full runs (before the lazy window)
    assert [node.release(as_dataset({"x": x}), SeededRandomness(s)) for s in (1, 2)] == PINNED_MEDIANS


PINNED_MEDIANS: list[object] = [0.4982004165649414, 0.4981813430786133]


def _blocked(cells: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], shift: int) -> BlockedGrid:
    """The blocked view a two-pass backend builds, over numpy arrays (its fetches slice them)."""
    blocks, first = np.unique(cells >> shift, return_index=True)
    last = np.append(first[1:], cells.size) - 1
    per_block = np.add.reduceat(counts, first) if cells.size else np.zeros(0, dtype=np.int64)

    def fetch(c0: int, c1: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        keep = (cells >= c0) & (cells <= c1)
        return cells[keep], counts[keep]

    return BlockedGrid(
        shift, blocks.astype(np.int64), per_block.astype(np.int64), cells[first], cells[last], fetch, lambda: (cells, counts)
    )  # fmt: skip


@pytest.mark.parametrize("cap", [1, 4, 256])
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(1, 3)])
def test_the_grid_read_in_blocks_draws_what_the_full_runs_draw(cap: int, q: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    """sample_quantile_view on a blocked view (the Spark backend's two passes) draws the full runs' candidate.

    Blocks of 1 to 64 cells, so the near runs cross blocks and spans start and end
    everywhere; a low cap proposes the far block often (its runs are looked up
    around the proposed candidate). The whole grid is never fetched.
    """
    monkeypatch.setattr(exp_module, "_CAP", cap)
    g = np.random.default_rng(cap * 100 + q.numerator * 10 + q.denominator + 7)
    far = 0
    for cells, counts, size in _cases(g):
        for shift in (0, 2, 6):
            for gamma in (Fraction(1, 4), Fraction(3), Fraction(1, 50)):
                for seed in range(3):
                    view = _blocked(cells, counts, shift)
                    want = _full(cells, counts, size, q, gamma, seed)
                    got = sample_quantile_view(view, size, q, gamma, SeededRandomness(seed))
                    assert got == want, (cells.tolist(), counts.tolist(), size, shift, gamma, seed)
                    assert view.fetches == 1 or cap < 256  # one span; a far run's block is fetched only at a low cap
                    far += got != _full(cells, counts, size, q, gamma, seed + 1000)
    assert far


def test_a_blocked_grid_fetches_one_span_near_the_median() -> None:
    """On 10**5 values in a 2**20 grid (about 100 per block of 2**10 cells): one fetch of the blocks within reach of the median."""
    x = np.random.default_rng(3).random(100_000)
    cells, counts = np.unique(np.rint(x * 2**20).astype(np.int64), return_counts=True)
    fetched: list[int] = []
    view = _blocked(cells, counts.astype(np.int64), 10)
    original = view._fetch

    def counting(c0: int, c1: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        fetched.append(c1 - c0 + 1)
        return original(c0, c1)

    view._fetch = counting
    for seed in range(3):
        assert sample_quantile_view(view, 2**20, Fraction(1, 2), Fraction(1, 4), SeededRandomness(seed)) == _full(
            cells, counts.astype(np.int64), 2**20, Fraction(1, 2), Fraction(1, 4), seed
        )
    assert len(fetched) == 1 and fetched[0] <= 16 * 2**10  # cached after the first release; ~900 ranks within reach: ~10 blocks
