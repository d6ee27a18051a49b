"""Per-coordinate (Lebeda–Pagh) versus isotropic noise for a vector sum, Δ_i = 2^-i, d = 10.

Run: ``python examples/per_coordinate.py [--quick] [--out DIR]``. Writes
``per_coordinate.png``, ``per_coordinate.md`` and ``per_coordinate.csv`` into
``examples/out/`` (git-ignored). Both calibrations have exactly the same
privacy (ρ = 1/2 for Gaussian, ε = 1 for Laplace); the error E||noise||_p^p is
measured over many trials with exact discrete noise (SeededRandomness, NOT secure)
and compared with the derived ratio.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dpalg import Clip, Query  # noqa: E402
from dpalg.mechanisms.global_noise._per_coordinate import CalibratedGaussianSum, CalibratedLaplaceSum, derived_error_ratio  # noqa: E402
from dpalg.noise import SeededRandomness  # noqa: E402
from _support import label_panel, parse_arguments, save, write_csv  # noqa: E402

D = 10
DELTAS = [Fraction(1, 2**i) for i in range(1, D + 1)]
QUERIES = [Query.sum(f"x{i}") | Clip(0, DELTAS[i - 1]) for i in range(1, D + 1)]


def main() -> None:
    args = parse_arguments(__doc__, "fewer trials (for the test suite)")
    trials = 1000 if args.small else 100_000
    ps = [Fraction(2)] if args.small else [Fraction(1), Fraction(2), Fraction(4)]
    rng = SeededRandomness(7)
    start = time.time()
    rows: list[dict[str, str | float]] = []
    per_coord_rms: dict[str, tuple[list[float], list[float]]] = {}
    for kind in ("gaussian", "laplace"):
        for p in ps:
            if kind == "gaussian":
                per: CalibratedGaussianSum | CalibratedLaplaceSum = CalibratedGaussianSum(QUERIES, "0.5", p=p)
                iso: CalibratedGaussianSum | CalibratedLaplaceSum = CalibratedGaussianSum(QUERIES, "0.5", p=p, calibration="isotropic")
            else:
                per = CalibratedLaplaceSum(QUERIES, 1, p=p)
                iso = CalibratedLaplaceSum(QUERIES, 1, p=p, calibration="isotropic")
            assert per.cost() == iso.cost()
            noise_per = per.simulate_noise(trials, rng)
            noise_iso = iso.simulate_noise(trials, rng)
            e_per = (np.abs(noise_per) ** float(p)).sum(axis=1)
            e_iso = (np.abs(noise_iso) ** float(p)).sum(axis=1)
            m1, m2 = float(e_per.mean()), float(e_iso.mean())
            ratio = m1 / m2
            se = ratio * math.sqrt(float(e_per.var()) / (trials * m1**2) + float(e_iso.var()) / (trials * m2**2))
            derived = derived_error_ratio(DELTAS, p, kind)
            rows.append({
                "noise": kind, "p": str(p), "derived ratio": derived,
                "ratio of chosen parameters": per.expected_error() / iso.expected_error(),
                "measured ratio": ratio, "standard error": se,
                "measured per-coordinate": m1, "measured isotropic": m2,
            })
            if p == 2:
                per_coord_rms[kind] = (
                    [float(v) for v in np.sqrt((noise_per**2).mean(axis=0))],
                    [float(v) for v in np.sqrt((noise_iso**2).mean(axis=0))],
                )
    args.out.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    labels = [f"{r['noise']}, p={r['p']}" for r in rows]
    x = np.arange(len(rows))
    axes[0].bar(x - 0.2, [float(r["derived ratio"]) for r in rows], 0.4, label="derived")
    axes[0].bar(x + 0.2, [float(r["measured ratio"]) for r in rows], 0.4,
                yerr=[2 * float(r["standard error"]) for r in rows], label="measured (±2 SE)")
    axes[0].set_xticks(x, labels, rotation=30, fontsize=7)
    axes[0].set_ylabel("E||error||_p^p: per-coordinate / isotropic")
    axes[0].set_title(f"d = {D}, Δ_i = 2^-i, {trials} trials")
    axes[0].legend(fontsize=7)
    for ax, kind in zip(axes[1:], ("gaussian", "laplace")):
        per_rms, iso_rms = per_coord_rms[kind]
        idx = np.arange(1, D + 1)
        ax.semilogy(idx, per_rms, marker="o", label="per-coordinate")
        ax.semilogy(idx, iso_rms, marker="s", label="isotropic")
        ax.semilogy(idx, [float(d) for d in DELTAS], "k:", label="Δ_i")
        label_panel(ax, f"{kind}, p = 2 ({'ρ = 1/2' if kind == 'gaussian' else 'ε = 1'})", "coordinate i", "RMS noise")
    save(fig, args.out / "per_coordinate.png")

    write_csv(args.out / "per_coordinate.csv", rows)
    lines = [f"# Per-coordinate vs isotropic noise, d = {D}, Δ_i = 2^-i, {trials} trials (measured ratio ± SE)", ""]
    lines.append("| noise | p | derived ratio | ratio of chosen parameters | measured ratio | SE |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        lines.append(
            f"| {r['noise']} | {r['p']} | {float(r['derived ratio']):.4f} | {float(r['ratio of chosen parameters']):.4f} "
            f"| {float(r['measured ratio']):.4f} | {float(r['standard error']):.4f} |"
        )
    lines += ["", f"runtime {time.time() - start:.1f} s; exact discrete noise, SeededRandomness(7)"]
    (args.out / "per_coordinate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
