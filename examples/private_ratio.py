"""Mean absolute error of the private ratio a/b versus b: naive, bounded LS, KSW, and an LS oracle.

Run: ``python examples/private_ratio.py [--quick] [--out DIR]``. Writes
``private_ratio.png``, ``private_ratio.md`` and ``private_ratio.csv`` into
``examples/out/`` (git-ignored). Every mechanism uses exact discrete noise from
:mod:`dpalg.noise` and the seeded generator (reproducible, NOT secure).

The "LS oracle" is the non-private baseline of seed 000: noise scaled to the
*true* local sensitivity LS(a/b)/ε. It is not differentially private (the scale
reveals b); it shows what bounding LS privately costs.
"""

from __future__ import annotations

import time
from fractions import Fraction

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from dpalg.mechanisms.bounded_ls._bounded_ls import lattice_release  # noqa: E402
from dpalg.mechanisms.bounded_ls._ratio import PrivateRatio  # noqa: E402
from dpalg.mechanisms.bounded_ls._ratio_sensitivity import ratio_local_sensitivity
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import label_panel, parse_arguments, save, write_csv  # noqa: E402

FRACTION_IN_A = Fraction(3, 10)
DELTA = "1e-6"


def oracle(a: int, b: int, epsilon: Fraction, trials: int, rng: SeededRandomness) -> npt.NDArray[np.float64]:
    """Non-private baseline: a/b with lattice discrete Laplace scaled to the true LS / ε."""
    ls = ratio_local_sensitivity(a, b)
    out = lattice_release([Fraction(a, b)] * trials, [ls] * trials, epsilon, rng)
    return np.clip(np.array([float(v) for v in out], dtype=np.float64), 0.0, 1.0)


def main() -> None:
    args = parse_arguments(__doc__, "few trials and settings (for the test suite)")
    trials = 200 if args.small else 3000
    bs = [10, 100, 1000] if args.small else [10, 30, 100, 300, 1000, 3000, 10_000, 30_000]
    epsilons = ["1"] if args.small else ["0.5", "1", "2"]
    splits = ["0.1", "0.3"]
    ratio = PrivateRatio("in_a")
    rng = SeededRandomness(20240601)
    start = time.time()
    rows: list[dict[str, str | int | float]] = []
    for eps_text in epsilons:
        eps = Fraction(eps_text)
        for b in bs:
            a = int(FRACTION_IN_A * b)
            truth = a / b
            outputs = {
                "naive": ratio.naive(eps).simulate(a, b, trials, rng),
                "KSW": ratio.ksw(eps).simulate(a, b, trials, rng),
                "LS oracle (non-private)": oracle(a, b, eps, trials, rng),
            }
            for split in splits:
                eps1 = eps * Fraction(split)
                node = ratio.bounded_ls(eps1, eps - eps1, DELTA)
                outputs[f"bounded LS (eps1 = {split} eps)"] = node.simulate(a, b, trials, rng)
            for name, out in outputs.items():
                rows.append({"epsilon": eps_text, "b": b, "mechanism": name, "mae": float(np.mean(np.abs(out - truth)))})
    names = list(dict.fromkeys(str(r["mechanism"]) for r in rows))
    args.out.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.5 * len(epsilons), 4.2), squeeze=False)
    for ax, eps_text in zip(axes[0], epsilons):
        for name in names:
            pts = [(int(r["b"]), float(r["mae"])) for r in rows if r["epsilon"] == eps_text and r["mechanism"] == name]
            style = "--" if "oracle" in name else "-"
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=name)
        label_panel(ax, f"a/b = {FRACTION_IN_A}, eps = {eps_text}, delta = {DELTA} (bounded LS)", "b", f"mean absolute error over {trials} trials")
    save(fig, args.out / "private_ratio.png")

    write_csv(args.out / "private_ratio.csv", rows, ["epsilon", "b", "mechanism", "mae"])

    lines = [f"# Private ratio a/b = {FRACTION_IN_A}: mean absolute error over {trials} trials", ""]
    lines.append("| eps | b | " + " | ".join(names) + " | best private |")
    lines.append("|---|---|" + "---|" * (len(names) + 1))
    for eps_text in epsilons:
        for b in bs:
            cells = {str(r["mechanism"]): float(r["mae"]) for r in rows if r["epsilon"] == eps_text and r["b"] == b}
            private = {k: v for k, v in cells.items() if "oracle" not in k}
            best = min(private, key=lambda k: private[k])
            lines.append(f"| {eps_text} | {b} | " + " | ".join(f"{cells[n]:.3g}" for n in names) + f" | {best} |")
    lines += ["", f"runtime {time.time() - start:.1f} s; exact discrete noise, SeededRandomness(20240601)"]
    (args.out / "private_ratio.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
