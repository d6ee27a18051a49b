"""dpalg benchmarks: one entry point, one table.

``python -m benchmarks`` (from the repository root) runs every figure in a quick
mode and prints one table: each dpalg figure next to its baseline *measured in
the same run* (numpy, or a peer library with its version), with the ratio
dpalg / baseline.

* ``python -m benchmarks`` -- quick mode (a few minutes on 2 cores);
* ``python -m benchmarks --full`` -- 100 releases for every library and the
  large sizes of the standalone scripts;
* ``python -m benchmarks --only utility`` -- one group (``accountant``, ``noise``,
  ``ls``, ``smooth``, ``shifted``, ``utility``);
* ``python -m benchmarks --markdown out.md`` -- also write the table as Markdown.

Peer libraries (OpenDP, diffprivlib, python-dp, PipelineDP) come from the
optional ``compare`` extra (``pip install -e '.[compare]'``); a peer that is not
installed, or fails to import, is skipped with a note. The standalone scripts
``benchmarks/bench_*.py`` print more detail for one figure each.
"""
