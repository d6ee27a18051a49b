"""Number strings are bounded: a hostile exponent or length is refused at once.

``Fraction("1e999999999")`` computes ``10**999999999`` and never finishes; before
the bounds in :func:`dpalg._numbers.to_fraction` an ε given that way hung the API,
``dpalg check --budget`` and certificate parsing. Each input here must be refused
with dpalg's error in under a second.
"""

from __future__ import annotations

import subprocess
import sys
import time
from decimal import Decimal
from fractions import Fraction

import pytest

from dpalg._errors import InvalidArgument
from dpalg._numbers import MAX_BITS, MAX_DIGITS, to_fraction
from dpalg.measures import ZCDP, ApproxDP, PureDP

LIMIT = 1.0  # seconds

HUGE: list[object] = [
    "1e999999999",
    "1e-999999999",
    "-1E+999999999",
    "0.5e99999",
    "1e4001",
    "1e00000000000000000000004001",
    Decimal("1e999999999"),
    Decimal("1e-999999999"),
    Decimal("9" * (MAX_DIGITS + 1)),
    "9" * 100_000,
    "1/" + "9" * 100_000,
    "0." + "0" * 5000 + "1",
    10**5000,
    -(10**5000),
    "99999e4000",
]


def _refused_fast(call: object, *args: object) -> None:
    assert callable(call)
    start = time.perf_counter()
    with pytest.raises(InvalidArgument):
        call(*args)
    elapsed = time.perf_counter() - start
    assert elapsed < LIMIT, f"refusal took {elapsed:.3f} s"


@pytest.mark.parametrize("value", HUGE, ids=[f"{type(v).__name__}:{str(v)[:20] if not isinstance(v, int) else 'int'}" for v in HUGE])
def test_to_fraction_refuses_huge_numbers_fast(value: object) -> None:
    _refused_fast(lambda v: to_fraction(v, owner="test", field="x"), value)


@pytest.mark.parametrize("value", HUGE[:9], ids=[str(v)[:20] for v in HUGE[:9]])
def test_measures_refuse_huge_numbers_fast(value: object) -> None:
    _refused_fast(PureDP, value)
    _refused_fast(ApproxDP, 1, value)
    _refused_fast(ApproxDP, value, Fraction(1, 10**6))
    _refused_fast(ZCDP, value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e4000", Fraction(10**4000)),
        ("1e-4000", Fraction(1, 10**4000)),
        ("0.1", Fraction(1, 10)),
        (" 1.5e3 ", Fraction(1500)),
        ("-2.5E-3", Fraction(-1, 400)),
        ("1_000", Fraction(1000)),
        (".5", Fraction(1, 2)),
        ("3/7", Fraction(3, 7)),
        ("9" * MAX_DIGITS + "/7", Fraction(int("9" * MAX_DIGITS), 7)),
        (Decimal("1e-4000"), Fraction(1, 10**4000)),
        (Decimal("0.001"), Fraction(1, 1000)),
        (10**4000, Fraction(10**4000)),
        (0.5, Fraction(1, 2)),
    ],
)
def test_in_range_numbers_still_convert_exactly(value: object, expected: Fraction) -> None:
    assert to_fraction(value, owner="test", field="x") == expected


def test_bit_bound_is_about_ten_to_the_4000() -> None:
    assert (10**4000).bit_length() <= MAX_BITS < (10**4010).bit_length()


@pytest.mark.parametrize(
    "budget", ["eps=1e999999999", "eps=1,delta=1e-999999999", "rho=1e999999999", "eps=" + "9" * 100_000]
)
def test_cli_check_refuses_a_huge_budget(budget: str) -> None:
    """``dpalg check --budget`` goes through to_fraction: exit 2 (usage error), promptly."""
    code = "import sys; from dpalg.cli import main; raise SystemExit(main(sys.argv[1:]))"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, "check", "dpalg._demo:demo_plan", "--budget", budget],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert done.returncode == 2, done.stderr[-500:]
    assert "--budget" in done.stderr and "Traceback" not in done.stderr
    assert elapsed < 30  # includes the interpreter's start and the imports
