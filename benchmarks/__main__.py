"""``python -m benchmarks``: run every figure and print one table (see ``benchmarks/__init__.py``)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks import figures, utility
from benchmarks._common import Row, render

GROUPS = [*figures.GROUPS, "utility"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="dpalg benchmarks: one table, baselines from the same run")
    parser.add_argument("--full", action="store_true", help="large sizes and 100 releases for every library (slow)")
    parser.add_argument("--only", action="append", choices=GROUPS, help="run only this group (repeatable)")
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    groups = args.only or GROUPS
    rows: list[Row] = []
    start = time.perf_counter()
    for group in groups:
        if group == "utility":
            rows += utility.rows(full=args.full, log=log)
        else:
            rows += figures.GROUPS[group](full=args.full, log=log)
    mode = "full" if args.full else "quick"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    header = (
        f"dpalg benchmarks ({mode} mode, {time.perf_counter() - start:.0f} s; Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, load average at the end {load}); "
        f"ratio = dpalg / baseline, 'better' says which direction is good"
    )
    print(header)
    print(render(rows))
    if args.markdown is not None:
        args.markdown.write_text(header + "\n\n" + render(rows, markdown=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
