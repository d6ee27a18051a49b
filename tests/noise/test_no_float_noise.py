"""No floating-point noise anywhere in dpalg (Mironov 2012): a grep over the package."""

from __future__ import annotations

import re
from pathlib import Path

import dpalg

ROOT = Path(dpalg.__file__).resolve().parent

FORBIDDEN = [
    re.compile(p)
    for p in [
        r"np\.random\.(laplace|normal|standard_normal|exponential|gumbel|uniform|random|rand|randn)\b",
        r"numpy\.random\.(laplace|normal|standard_normal|exponential|gumbel|uniform|random|rand|randn)\b",
        r"\.(laplace|normal|standard_normal|standard_exponential|exponential|gumbel|lognormal)\(",
        r"\brandom\.(gauss|normalvariate|expovariate|random|uniform|lognormvariate)\(",
        r"scipy\.stats\.[A-Za-z_]+\.rvs\b",
        r"\bstats\.[A-Za-z_]+\.rvs\b",
        r"\.rvs\(",
        r"default_rng\(\)\.",
        r"torch\.(normal|randn)",
    ]
]


def find_float_noise(text: str) -> list[str]:
    """Lines of ``text`` that draw floating-point noise (comments are ignored)."""
    hits = []
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if any(p.search(code) for p in FORBIDDEN):
            hits.append(line.strip())
    return hits


def test_scanner_catches_synthetic_offenders() -> None:
    offenders = [
        "x = np.random.laplace(0, 1, 10)",
        "y = rng.normal(size=3)",
        "z = random.gauss(0, 1)",
        "w = scipy.stats.laplace.rvs(size=4)",
        "v = np.random.default_rng().laplace(0, 1)",
        "u = stats.norm.rvs()",
        "t = gen.standard_normal(5)",
    ]
    for line in offenders:
        assert find_float_noise(line) == [line], line
    clean = "x = discrete_laplace(scale, size=n)  # not np.random.laplace\nnp.random.Generator(np.random.PCG64(1))"
    assert find_float_noise(clean) == []


def test_no_float_noise_in_package() -> None:
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        hits = find_float_noise(path.read_text(encoding="utf-8"))
        if hits:
            offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}
