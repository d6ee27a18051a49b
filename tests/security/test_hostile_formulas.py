"""Formula strings are data, never code: hostile formulas are refused fast, through every entry.

Each hostile string below either ran code, hung the process (> 30 s) or was
accepted before dpalg parsed formulas with its own whitelist over :mod:`ast`
(``dpalg/sensitivity/_formula.py``). Every one must now raise
:class:`dpalg.InvalidArgument` in under a second through each public entry that
takes a formula: ``parse_formula``, ``safe_parse``, ``check_monotone``,
``require_monotone``, ``LocalSensAtDistance`` and ``BoundedLS`` (bound and value).
Strings that would create a canary file if any part of them ran are checked to
leave no file behind.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from dpalg._errors import InvalidArgument
from dpalg.mechanisms import BoundedLS, LocalSensAtDistance, NoisyCount
from dpalg.queries import Clip, Query
from dpalg.sensitivity import check_monotone, require_monotone
from dpalg.sensitivity._formula import MAX_EXTREMA_ARGS, MAX_LENGTH, parse_formula
from dpalg.sensitivity._sympy_check import safe_parse

K, N = sympy.Symbol("k"), sympy.Symbol("n")
SYMBOLS: dict[str, sympy.Expr] = {"k": K, "n": N}
LIMIT = 1.0  # seconds

# The payload, with the backslash-x escapes reaching the parser intact.
ESCAPED_IMPORT = r"log('\x5f\x5fimp\x6frt\x5f\x5f(\x27os\x27)\x2esystem(\x27id\x27)')"

HOSTILE: list[str] = [
    ESCAPED_IMPORT,
    r"exp('\x5f\x5fimport\x5f\x5f')",
    r"Min(k, '\x5f\x5fimp\x6frt\x5f\x5f(\x27os\x27)')",
    "log('__import__(\"os\").system(\"id\")')",
    "floor('1')",
    "Abs(b'k')",
    "__import__('os').system('id')",
    "k.__class__",
    "k.func",
    "(k).args",
    "().__class__.__bases__[0].__subclasses__()",
    "k.__class__.__mro__",
    "lambda: k",
    "(lambda x: x)(k)",
    "[x for x in (k, n)]",
    "{x: x for x in (k,)}",
    "sum(x for x in (k, n))",
    "(k, n)[0]",
    "k[0]",
    "f'{k}'",
    "(x := k)",
    "k if n else 1",
    "k < n",
    "k and n",
    "not k",
    "'k'",
    "2**2**2**2**2**2",
    "k + 9**9**9",
    "10**10**10",
    "k + 0*len('a'*10**9)",
    "((10**30)**64)**64",
    "((k + 1)**64)**64",
    "k**40 * k**40",
    "(10**30*k)**64**2",
    "9" * 31,
    "9" * 31 + "*k",
    "1e999999999",
    "1e-999999999*k",
    "k*1e99999",
    "(" * 100 + "k" + ")" * 100,
    "(" * 100000 + "k" + ")" * 100000,
    "-" * 200 + "k",
    "k" + "+k" * (MAX_LENGTH // 2),
    " " * (MAX_LENGTH + 1),
    "sin(k) + exec('1')",
    "exec('1')",
    "eval('k')",
    "open('/etc/passwd')",
    "chr(49)",
    "getattr(k, 'func')",
    "globals()",
    "sympify('k')",
    "Rational(1, 2)*k",
    "E*k",
    "c*k",
    "k + undeclared_name",
    "Min(k, n, key=k)",
    "Max(*(k, n))",
    "Max(**{})",
    "floor()",
    "log(k, 2)",
    "floor(exp(10**30))",
    "exp(exp(exp(10)))",
    "floor(log(2) + log(3) - log(6))",
    "0x10*k",
    "1j*k",
    "True + k",
    "None",
    "k % 2",
    "k // 2",
    "k @ n",
    "~k",
    "k; k",
    "k\nk",
    "k\x00",
    "1/0",
    "sqrt(-1)*k",
    "log(0) + k",
    "k**k",
    "2**(k + 10**30)",
    "Max(" + ", ".join(f"{i}*k - {i * i}" for i in range(1, 100)) + ")",
    "Max(" + ", ".join(f"Min(k, {i})" for i in range(1, 20)) + ")",
]

# Payloads that would create the canary file if any of their text were executed.
CANARY_TEMPLATES: list[str] = [
    "log('__import__(\"os\").system(\"touch {canary}\")')",
    "exp('__import__(\"os\").system(\"touch {canary}\")')",
    "Min(k, '__import__(\"os\").system(\"touch {canary}\")')",
    "Max('__import__(\"os\").system(\"touch {canary}\")', k)",
    "floor('__import__(\"os\").system(\"touch {canary}\")')",
    "Abs('__import__(\"os\").system(\"touch {canary}\")')",
    "__import__('os').system('touch {canary}')",
    "(lambda: __import__('os').system('touch {canary}'))()",
    "k + 0*__import__('os').system('touch {canary}')",
    "[__import__('os').system('touch {canary}') for _ in (1,)]",
    "open('{canary}', 'w')",
    "exec('open(\"{canary}\", \"w\")')",
    "sympify('__import__(\"os\").system(\"touch {canary}\")')",
]


def _hex_escaped(text: str) -> str:
    """Every character of ``text`` as a ``\\xNN`` escape inside a quoted literal."""
    return "log('" + "".join(f"\\x{ord(c):02x}" for c in text) + "')"


def _rename(text: str, k: str, n: str) -> str:
    """The hostile text with k, n renamed to names BoundedLS declares (interval ends
    for the bound, count names for the value), so that the refusal is caused by the
    hostile part, not by an undeclared symbol."""
    return re.sub(r"\bn\b", n, re.sub(r"\bk\b", k, text))


def _counts() -> tuple[NoisyCount, ...]:
    return (NoisyCount("a", where="in_a"), NoisyCount("b"))


ENTRIES: dict[str, Callable[[str], object]] = {
    "parse_formula": lambda t: parse_formula(t, SYMBOLS, owner="test", field="formula"),
    "safe_parse": lambda t: safe_parse(t, SYMBOLS, "test", "formula"),
    "check_monotone": lambda t: check_monotone(t, symbols=("n",)),
    "require_monotone": lambda t: require_monotone(t, symbols=("n",)),
    "LocalSensAtDistance": lambda t: LocalSensAtDistance(Query.median("x") | Clip(0, 1), t),
    "BoundedLS.bound": lambda t: BoundedLS("a/b", _rename(t, "b_lo", "b_hi"), _counts(), epsilon_bound=1, epsilon_release=1,
                                           delta="1e-3", domain={"b": 2}),
    "BoundedLS.value": lambda t: BoundedLS(_rename(t, "a", "b"), "1/(b_lo - 1)", _counts(), epsilon_bound=1, epsilon_release=1,
                                           delta="1e-3", domain={"b": 2}),
}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _warm_up() -> None:
    """Import-time and first-call costs (sympy's caches) are not part of the measured refusal."""
    for entry in ENTRIES.values():
        try:
            entry("k + 1")
        except InvalidArgument:
            pass


def _refused_fast(entry: Callable[[str], object], text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(InvalidArgument):
        entry(text)
    elapsed = time.perf_counter() - start
    assert elapsed < LIMIT, f"refusal took {elapsed:.3f} s"


def test_the_suite_is_large_enough() -> None:
    assert len(HOSTILE) + len(CANARY_TEMPLATES) >= 40
    assert ESCAPED_IMPORT.count("\\x") == 10 and "_" not in ESCAPED_IMPORT  # the escapes reach the parser as text, not as characters


@pytest.mark.parametrize("entry", list(ENTRIES), ids=list(ENTRIES))
@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t[:30]) for t in HOSTILE])
def test_hostile_formula_refused_fast(entry: str, text: str) -> None:
    _refused_fast(ENTRIES[entry], text)


@pytest.mark.parametrize("entry", list(ENTRIES), ids=list(ENTRIES))
def test_canary_never_appears(entry: str, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    payloads = [t.format(canary=canary) for t in CANARY_TEMPLATES]
    payloads.append(_hex_escaped(f"__import__('os').system('touch {canary}')"))
    for text in payloads:
        _refused_fast(ENTRIES[entry], text)
        assert not canary.exists(), text


def test_refusal_message_is_short_and_named() -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_formula("k + " + "1+" * 900 + "c", SYMBOLS, owner="LocalSensAtDistance", field="formula")
    err = info.value
    assert err.owner == "LocalSensAtDistance" and err.field == "formula"
    assert isinstance(err.value, str) and len(err.value) <= 80
    assert "undeclared symbol 'c'; declared: k, n" in str(err)


# --- legitimate formulas still parse to the right sympy expression -----------------------

LOWER, UPPER = sympy.Symbol("lower"), sympy.Symbol("upper")
LEGIT: list[tuple[str, sympy.Expr]] = [
    ("0.1*k", sympy.Rational(1, 10) * K),
    ("Min(k+1, n)/n", sympy.Min(K + 1, N) / N),
    ("2**k", 2**K),
    ("2**-k", sympy.Integer(2) ** -K),
    ("exp(-k)", sympy.exp(-K)),
    ("(upper-lower)/(n+1)", (UPPER - LOWER) / (N + 1)),
    ("1e-3*k + 2.5E+2", K / 1000 + 250),
    (".5*k + 5.", K / 2 + 5),
    ("1_000*k", 1000 * K),
    ("k**(1/2) + k**0.5", 2 * sympy.sqrt(K)),
    ("Max(k - 3, 0) + Abs(n - k)", sympy.Max(K - 3, 0) + sympy.Abs(N - K)),
    ("ceiling(k/2) + floor(k/3)", sympy.ceiling(K / 2) + sympy.floor(K / 3)),
    ("log(k + 1) + sqrt(2)*k", sympy.log(K + 1) + sympy.sqrt(2) * K),
    ("100/Max(n - k, 1)", 100 / sympy.Max(N - K, 1)),
    ("k**64", K**64),
    ("(k + 1)**64", (K + 1) ** 64),
    ("-(-k)", K),
    ("sin(pi/6)*k + cos(k)", K / 2 + sympy.cos(K)),
    ("999999999999999999999999999999*k", 999999999999999999999999999999 * K),
    ("k" + " + k" * 300, 301 * K),
]


@pytest.mark.parametrize(("text", "expected"), LEGIT, ids=[t[:30] for t, _ in LEGIT])
def test_legitimate_formulas_parse_exactly(text: str, expected: sympy.Expr) -> None:
    symbols = dict(SYMBOLS) | {"lower": LOWER, "upper": UPPER}
    got = parse_formula(text, symbols, owner="test", field="formula")
    assert sympy.simplify(got - expected) == 0, got
    assert not got.atoms(sympy.Float)  # decimals are exact rationals


def test_decimal_is_exact() -> None:
    assert parse_formula("0.1*k", SYMBOLS, owner="t", field="f") == sympy.Rational(1, 10) * K
    assert parse_formula("0.1", SYMBOLS, owner="t", field="f") == sympy.Rational(1, 10)


def test_bound_params_are_constants() -> None:
    assert safe_parse("c*k", {"k": K, "c": sympy.Rational(3, 7)}, "t", "f") == sympy.Rational(3, 7) * K


@settings(max_examples=60, deadline=None)
@given(st.decimals(min_value=-(10**12), max_value=10**12, allow_nan=False, allow_infinity=False, places=12))
def test_decimal_literals_property(value: object) -> None:
    from decimal import Decimal
    from fractions import Fraction

    assert isinstance(value, Decimal)
    text = f"({value})*k"
    exact = Fraction(value)
    assert parse_formula(text, SYMBOLS, owner="t", field="f") == sympy.Rational(exact.numerator, exact.denominator) * K


_LEAVES = st.sampled_from([("k", K), ("n", N), ("1", sympy.Integer(1)), ("2", sympy.Integer(2)), ("7", sympy.Integer(7))])


def _combine(children: st.SearchStrategy[tuple[str, sympy.Expr]]) -> st.SearchStrategy[tuple[str, sympy.Expr]]:
    binary = st.tuples(st.sampled_from(["+", "-", "*"]), children, children).map(
        lambda t: (f"({t[1][0]} {t[0]} {t[2][0]})",
                   t[1][1] + t[2][1] if t[0] == "+" else t[1][1] - t[2][1] if t[0] == "-" else t[1][1] * t[2][1]))
    calls = st.tuples(st.sampled_from(["Min", "Max"]), children, children).map(
        lambda t: (f"{t[0]}({t[1][0]}, {t[2][0]})", (sympy.Min if t[0] == "Min" else sympy.Max)(t[1][1], t[2][1])))
    unary = st.tuples(st.sampled_from(["exp", "floor", "Abs"]), children).map(
        lambda t: (f"{t[0]}({t[1][0]})", {"exp": sympy.exp, "floor": sympy.floor, "Abs": sympy.Abs}[t[0]](t[1][1])))
    return binary | calls | unary


@settings(max_examples=60, deadline=None)
@given(st.recursive(_LEAVES, _combine, max_leaves=12))
def test_random_expressions_parse_to_the_same_sympy_object(case: tuple[str, sympy.Expr]) -> None:
    text, expected = case
    try:
        got = parse_formula(text, SYMBOLS, owner="t", field="f")
    except InvalidArgument:  # only the documented limits may refuse a grammatical formula
        extrema = 2 * (text.count("Min(") + text.count("Max("))
        assert extrema > MAX_EXTREMA_ARGS or "exp(" in text or "floor(" in text or "Abs(" in text
        return
    assert got == expected
