"""Table-driven tests of the sympy monotonicity checker and the LS_k spot check."""

from __future__ import annotations

import pytest
import sympy

from dpalg._errors import InvalidArgument
from dpalg.sensitivity._sympy_check import check_monotone, require_monotone

N_INT = {"n": {"integer": True, "positive": True}}


@pytest.mark.parametrize(
    "formula",
    ["k + 1", "2**k", "(k+1)*b", "b*Min(k+1, n)", "Max(k - 3, 0)", "sqrt(k) + 1", "(k+1)/(k+2)", "ceiling(k/2)", "exp(k/b)",
     "100/Max(n - k, 1)", "b/Min(Max(n - k, 1), 7)"],
)
def test_proven(formula: str) -> None:
    result = check_monotone(formula, assumptions=N_INT, symbols=("b",))
    assert result.status == "proven", result
    assert result.counterexample is None
    assert require_monotone(formula, strict=True, assumptions=N_INT, symbols=("b",)).status == "proven"


def test_proven_sympy_expression() -> None:
    k, b = sympy.symbols("k b")
    assert check_monotone((k + 1) * b).status == "proven"


@pytest.mark.parametrize(
    ("formula", "kind"),
    [("5 - k", 2), ("(k-3)**2", 4), ("k**2 - 3*k + 3", 4), ("n - k", 2), ("b/(k+1)", 4), ("100/Max(n + k, 1)", 4), ("1/Min(n - k, 1)", 2)],
)
def test_refuted_with_counterexample(formula: str, kind: int) -> None:
    result = check_monotone(formula, assumptions=N_INT, symbols=("b",))
    assert result.status == "refuted"
    assert result.counterexample is not None
    cex = result.counterexample
    if kind == 2:
        k0, v = cex[0], cex[1]
        assert isinstance(v, float) and v < 0
        assert isinstance(k0, (int, float)) and k0 >= 0
    else:
        k1, k2, f1, f2 = cex[:4]
        assert isinstance(k1, (int, float)) and isinstance(k2, (int, float))
        assert isinstance(f1, float) and isinstance(f2, float)
        assert 0 <= k1 < k2 and f1 > f2
    with pytest.raises(InvalidArgument, match="counterexample"):
        require_monotone(formula, assumptions=N_INT, symbols=("b",))


def test_refuted_counterexample_is_real() -> None:
    result = check_monotone("(k-3)**2")
    assert result.counterexample is not None
    k1, k2, f1, f2 = result.counterexample[:4]
    assert isinstance(k1, float) and isinstance(k2, float)
    assert f1 == pytest.approx((k1 - 3) ** 2) and f2 == pytest.approx((k2 - 3) ** 2)


@pytest.mark.parametrize("formula", ["exp(k) - 1", "k + sin(k)"])
def test_honest_unproven(formula: str) -> None:
    """Both are non-negative and non-decreasing on k >= 0, but sympy cannot show it.

    ``exp(k) - 1``: the assumptions system does not derive ``exp(k) >= 1`` from
    ``k >= 0`` (``(exp(k) - 1).is_nonnegative`` is None), and the structural rules
    do not cover a subtracted constant. ``k + sin(k)``: the derivative
    ``1 + cos(k)`` is >= 0 but sympy's assumptions only bound ``cos`` when
    asked through inequalities, so ``is_nonnegative`` is None. No grid point
    refutes either, so the verdict is *unproven*: accepted non-strictly, refused strictly.
    """
    result = check_monotone(formula)
    assert result.status == "unproven"
    assert require_monotone(formula).status == "unproven"
    with pytest.raises(InvalidArgument, match="strict"):
        require_monotone(formula, strict=True)


def test_integer_step_rule() -> None:
    # floor(k/2) is non-decreasing; with integer k the difference rule applies or structure does
    assert check_monotone("k*(k+1)/2", assumptions={"k": {"integer": True}}).status == "proven"


@pytest.mark.parametrize(
    "formula",
    ["__import__('os')", "k.func", "lambda k: k", "import os", "k; k", "(k).args", "k.__class__"],
)
def test_unsafe_strings_rejected(formula: str) -> None:
    with pytest.raises(InvalidArgument):
        check_monotone(formula)


def test_decimal_numbers_allowed() -> None:
    assert check_monotone("0.5*k + 1.5").status == "proven"


def test_reciprocal_of_a_possibly_zero_denominator_is_not_proven() -> None:
    """1/Max(n - k, 0) is undefined at k = n: the positivity rule must not fire."""
    assert check_monotone("1/Max(n - k, 0)", assumptions=N_INT).status != "proven"


@pytest.mark.parametrize("text", ["exec(chr(49))", "open('x')", "eval('1')", "getattr(k, 'x')", "globals()"])
def test_formulas_cannot_run_python(text: str) -> None:
    """Every identifier is a Symbol or an allowed sympy function: builtins are unreachable."""
    from dpalg.mechanisms import BoundedLS  # noqa: F401  (its parser is the same safe_parse)
    from dpalg.mechanisms.bounded_ls._bounded_ls import parse_expression
    from dpalg.sensitivity._sympy_check import safe_parse

    with pytest.raises(InvalidArgument):
        safe_parse(text, {}, "t", "formula")
    with pytest.raises(InvalidArgument):
        parse_expression(text, ["a", "b"], "BoundedLS", "bound")


def test_undeclared_symbols_are_refused() -> None:
    """A name that is neither var, an assumption key nor in ``symbols`` is refused at once.

    Before, ``c`` became a positive Symbol, the formula was "proven", and the
    mechanism failed later (at release time, with data in the message)."""
    with pytest.raises(InvalidArgument, match="undeclared symbol 'c'"):
        check_monotone("c*k")
    with pytest.raises(InvalidArgument, match="undeclared symbol 'c'"):
        require_monotone("c*k", assumptions=N_INT)
    assert check_monotone("c*k", symbols=("c",)).status == "proven"
    assert check_monotone("n*k", assumptions=N_INT).status == "proven"


@pytest.mark.parametrize(
    ("formula", "symbols"),
    [("sqrt(a**2 - a)*k", ("a",)), ("sqrt(a**2 - a)", ("a",)), ("k + sqrt(a**2 - a)", ("a",)), ("sqrt(k**2 - k)", ())],
)
def test_square_root_of_a_possibly_negative_value_fails_closed(formula: str, symbols: tuple[str, ...]) -> None:
    result = check_monotone(formula, symbols=symbols)
    assert result.status in ("unproven", "refuted")


def test_a_sympy_exception_inside_the_check_is_unproven(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever sympy raises while deciding ("nan is not comparable", ...) fails closed."""
    import dpalg.sensitivity._sympy_check as module

    def boom(*args: object) -> bool:
        raise ValueError("nan is not comparable")

    monkeypatch.setattr(module, "_structural", boom)
    result = check_monotone("k + 1")
    assert result.status == "unproven"
    assert "ValueError" in result.reason
    with pytest.raises(InvalidArgument, match="strict"):
        require_monotone("k + 1", strict=True)


def test_large_formula_skips_simplify() -> None:
    """sympy.simplify took 24 s on this 460-character formula; above MAX_SIMPLIFY_OPS it is skipped."""
    import time

    formula = " + ".join(f"(k + {i})/(k + {i + 1})" for i in range(1, 25))
    start = time.perf_counter()
    result = check_monotone(formula)
    assert time.perf_counter() - start < 5
    assert result.status == "unproven"
    assert "too large" in result.reason


def test_symbols_keyword_passes_through_require_monotone() -> None:
    assert require_monotone("b*Min(k + 1, n)", symbols=("b", "n"), strict=True).status == "proven"
    with pytest.raises(InvalidArgument, match="identifiers"):
        check_monotone("k", symbols=("not a name",))
