"""A grid's counts read in parts: the occupied cells near some ranks, for a backend where the whole grid is costly.

:meth:`~dpalg.data.Reductions.grid_counts` answers every occupied cell of a grid
(up to ``2**20 + 1`` of them). The exponential quantile reads only the cells near
its target rank (its weights fall by ``2**-256`` beyond them), so a backend whose
every answer crosses a network (Spark) can count the grid in two passes instead:
a coarse pass (how many values, and the first and last occupied cell, in each
*block* of consecutive cells), then the exact counts of the cells of the blocks
that hold some ranks. :class:`GridView` is what the quantile asks;

* :class:`CountedGrid` holds the whole grid (the numpy and polars backends, and a
  small grid anywhere): every question is a slice of its arrays;
* :class:`BlockedGrid` holds the coarse pass and fetches the blocks a question
  needs (the backend's second pass), each block once.

Every answer is exact: a :class:`GridSpan` is a run of *consecutive* occupied
cells (no occupied cell between two of them is left out), with the number of
values below its first cell and the occupied cells just outside it, so the
quantile's score runs over the candidates ``prev + 1 .. next - 1`` are those of
the whole grid (``dpalg.mechanisms.selection._exponential.sample_quantile_view``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol, final

import numpy as np
import numpy.typing as npt

__all__ = ["BlockedGrid", "CountedGrid", "GridSpan", "GridView"]

Cells = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]

#: a blocked grid's cells per block: 2**10 (a 2**20 grid has 1025 blocks; a block's cells are one small collect)
BLOCK_BITS: Final = 10


@final
class GridSpan:
    """Consecutive occupied cells of a grid (ascending, with their counts) and what lies just outside them.

    ``below``: how many values lie in cells before ``cells[0]`` (before the span);
    ``prev``/``next``: the occupied cell just before/after the span (``None``: none).
    ``cells`` may be empty (a span between two occupied cells, or of an empty grid).
    """

    __slots__ = ("below", "cells", "counts", "n", "next", "prev")

    def __init__(
        self, n: int, below: int, cells: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], prev: int | None, next: int | None
    ) -> None:
        self.n, self.below, self.cells, self.counts, self.prev, self.next = n, below, cells, counts, prev, next

    def __repr__(self) -> str:  # counts only (no value is printed anyway; the cells are aggregates)
        return f"GridSpan(n={self.n}, below={self.below}, cells={self.cells.size}, prev={self.prev}, next={self.next})"


class GridView(Protocol):
    """A grid's counts, asked in parts (module docstring). Ranks are 0-based among the ``n`` present values."""

    @property
    def n(self) -> int:
        """How many values the grid counts (the present values)."""
        ...

    @property
    def counted(self) -> Cells | None:
        """The whole grid ``(cells, counts)`` when it is at hand already (no further pass), else ``None``."""
        ...

    def rank_block(self, rank: int) -> tuple[int, int]:
        """``(lo, hi)``: the ranks ``lo .. hi - 1`` of the consecutive cells (a block, or one cell) holding ``rank`` (``0 <= rank < n``)."""
        ...

    def span(self, first: int, last: int) -> GridSpan:
        """A span holding every occupied cell that holds a rank in ``first .. last`` (``0 <= first <= last < n``)."""
        ...

    def around(self, cell: int) -> GridSpan:
        """A span whose candidates ``prev + 1 .. next - 1`` hold ``cell``."""
        ...

    def full(self) -> Cells:
        """Every occupied cell (ascending) and its count."""
        ...


def _span_of(cells: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], upto: npt.NDArray[np.int64], i0: int, i1: int) -> GridSpan:
    """The span of the occupied cells ``i0 .. i1 - 1`` of a whole grid (``upto``: the cumulative counts)."""
    m = int(cells.size)
    return GridSpan(
        int(upto[-1]) if m else 0, int(upto[i0 - 1]) if i0 > 0 else 0, cells[i0:i1], counts[i0:i1],
        int(cells[i0 - 1]) if i0 > 0 else None, int(cells[i1]) if i1 < m else None,
    )  # fmt: skip


@final
class CountedGrid:
    """:class:`GridView` over the whole grid's counts (every question a slice)."""

    __slots__ = ("_cells", "_counts", "_upto")

    def __init__(self, cells: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> None:
        self._cells, self._counts = cells, counts
        self._upto = np.cumsum(counts, dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self._upto[-1]) if self._upto.size else 0

    @property
    def counted(self) -> Cells:
        return self._cells, self._counts

    def rank_block(self, rank: int) -> tuple[int, int]:
        i = int(np.searchsorted(self._upto, rank, side="right"))
        return (int(self._upto[i - 1]) if i else 0), int(self._upto[i])

    def span(self, first: int, last: int) -> GridSpan:
        i0 = int(np.searchsorted(self._upto, first, side="right"))
        i1 = int(np.searchsorted(self._upto, last, side="right")) + 1
        return _span_of(self._cells, self._counts, self._upto, i0, i1)

    def around(self, cell: int) -> GridSpan:
        i = int(np.searchsorted(self._cells, cell, side="left"))
        return _span_of(self._cells, self._counts, self._upto, i, i + int(i < self._cells.size and self._cells[i] == cell))

    def full(self) -> Cells:
        return self._cells, self._counts


@final
class BlockedGrid:
    """:class:`GridView` from a coarse pass over blocks of ``2**shift`` cells; the cells of a block are fetched when asked.

    ``blocks`` are the occupied blocks (ascending; block ``k`` holds the cells
    ``k·2**shift .. (k + 1)·2**shift − 1``), with how many values each holds and its
    first and last occupied cell. ``fetch(c0, c1)`` answers the occupied cells in
    ``c0 .. c1`` and their counts (the backend's second pass, ascending), ``full()``
    the whole grid. A fetched range is kept: a question inside it reads no row.
    """

    __slots__ = ("_blocks", "_fetch", "_fetched", "_first", "_full", "_last", "_shift", "_upto", "fetches")

    def __init__(
        self,
        shift: int,
        blocks: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        first: npt.NDArray[np.int64],
        last: npt.NDArray[np.int64],
        fetch: Callable[[int, int], Cells],
        full: Callable[[], Cells],
    ) -> None:
        self._shift = shift
        self._blocks, self._first, self._last = blocks, first, last
        self._upto = np.cumsum(counts, dtype=np.int64)
        self._fetch, self._full = fetch, full
        self._fetched: dict[tuple[int, int], Cells] = {}
        self.fetches = 0  # how many times a backend pass was made (the tests count them)

    @property
    def n(self) -> int:
        return int(self._upto[-1]) if self._upto.size else 0

    @property
    def counted(self) -> None:
        return None

    def rank_block(self, rank: int) -> tuple[int, int]:
        i = int(np.searchsorted(self._upto, rank, side="right"))
        return (int(self._upto[i - 1]) if i else 0), int(self._upto[i])

    def span(self, first: int, last: int) -> GridSpan:
        i0 = int(np.searchsorted(self._upto, first, side="right"))
        i1 = int(np.searchsorted(self._upto, last, side="right"))
        return self._blocks_span(i0, i1 + 1)

    def around(self, cell: int) -> GridSpan:
        i = int(np.searchsorted(self._blocks, cell >> self._shift, side="left"))
        held = i < self._blocks.size and int(self._blocks[i]) == cell >> self._shift
        return self._blocks_span(i, i + int(held))

    def full(self) -> Cells:
        self.fetches += 1
        return self._full()

    def _blocks_span(self, i0: int, i1: int) -> GridSpan:
        """The span of the occupied blocks ``i0 .. i1 - 1`` (their cells fetched once; empty when ``i1 == i0``)."""
        if i1 > i0:
            key = (i0, i1)
            if key not in self._fetched:
                self.fetches += 1
                c0 = int(self._blocks[i0]) << self._shift
                c1 = ((int(self._blocks[i1 - 1]) + 1) << self._shift) - 1
                self._fetched[key] = self._fetch(c0, c1)
            cells, counts = self._fetched[key]
        else:
            cells, counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        m = int(self._blocks.size)
        return GridSpan(
            self.n, int(self._upto[i0 - 1]) if i0 > 0 else 0, cells, counts,
            int(self._last[i0 - 1]) if i0 > 0 else None, int(self._first[i1]) if i1 < m else None,
        )  # fmt: skip
