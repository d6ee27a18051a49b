"""dpalg's own formula parser: formula strings are data, never code.

A formula (an LS_k bound for :class:`~dpalg.mechanisms.LocalSensAtDistance`, a
:class:`~dpalg.mechanisms.BoundedLS` bound or value, the argument of
:func:`~dpalg.sensitivity.check_monotone`) is parsed by :func:`parse_formula`:
Python's :mod:`ast` reads the text (``mode="eval"``, nothing is compiled or run) and
a whitelist walks the tree, building sympy objects *directly*. No string ever
reaches ``eval``, ``exec``, ``sympify`` or ``parse_expr``, and no sympy function is
ever handed a string.

Grammar (everything else is refused)::

    formula  := expr
    expr     := expr ('+' | '-' | '*' | '/') expr | '-' expr | '+' expr | '(' expr ')'
              | base '**' exponent | call | NAME | NUMBER
    exponent := expr                                      (a constant of absolute value <= 64,
                                                           or NAME / '-' NAME after a constant base)
    call     := FUNC '(' expr (',' expr)* ')'             (positional arguments only)
    FUNC     := Min | Max                                 (one or more arguments)
              | Abs | floor | ceiling | log | exp | sqrt | sin | cos   (exactly one)
    NAME     := a declared symbol, or pi (when not declared)
    NUMBER   := decimal integer or decimal fraction, optionally with an exponent:
                12, 0.1, .5, 1e-3, 2.5E+4                 (at most 30 digits, |exponent| <= 4000)

* A decimal is exact: ``0.1`` is ``Rational(1, 10)``, never a float.
* A NAME that is not declared is refused at once ("undeclared symbol 'c'"), so a
  formula is checked against exactly the symbols its mechanism will substitute.
* String and bytes literals, attributes, subscripts, lambdas, comprehensions,
  conditionals, comparisons, boolean operators, f-strings, ``:=``, tuples, lists,
  keyword and starred arguments, and calls of anything outside the table are refused.

Limits (each refusal is :class:`~dpalg.InvalidArgument`, raised in milliseconds):

* at most :data:`MAX_LENGTH` (2,000) characters and nesting depth at most
  :data:`MAX_DEPTH` (64), counting brackets in the text and levels of the tree (a
  run of ``+``/``-`` or ``*``/``/`` counts as one level);
* at most :data:`MAX_EXTREMA_ARGS` (16) arguments to ``Min`` and ``Max`` in all:
  sympy compares them pairwise under assumptions, which takes seconds for a few
  dozen;
* a ``**`` exponent is a constant with ``|e| <= 64`` (``k**(1/2)``), or a declared
  symbol whose base is a constant number (``2**k``); after sympy combines powers (``(x**64)**64``,
  ``x**40 * x**40``) no power of the result may exceed 64 either;
* the base of ``**``, and the argument of a function, when it contains no symbol,
  must be a plain rational number (``sqrt(2)``, ``log(1/10)``; ``sin``/``cos`` also
  take a rational multiple of ``pi``): sympy decides ``floor``, ``Max``, ``Abs`` of
  an irrational constant numerically, at a cost no bound controls;
* every constant part of the formula is a finite real number of absolute value at
  most :data:`MAX_CONSTANT` (10**40), and every exact number sympy builds has a
  numerator and a denominator of at most :data:`MAX_BITS` (13,300) bits (about
  10**4000); powers of numbers are estimated before they are computed, so
  ``10**10**10`` or ``2**2**2**2**2**2`` never start.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Final, NoReturn

import sympy

from dpalg._errors import InvalidArgument

__all__ = [
    "FUNCTIONS", "MAX_BITS", "MAX_CONSTANT", "MAX_DEPTH", "MAX_DIGITS", "MAX_EXTREMA_ARGS", "MAX_LENGTH", "MAX_POWER",
    "parse_formula",
]  # fmt: skip

MAX_LENGTH: Final = 2000
MAX_DEPTH: Final = 64
MAX_DIGITS: Final = 30
MAX_LITERAL_EXPONENT: Final = 4000
MAX_POWER: Final = 64
MAX_BITS: Final = 13_300
MAX_CONSTANT: Final = 10**40
#: arguments of all Min and Max calls together: sympy compares them pairwise, with assumptions
MAX_EXTREMA_ARGS: Final = 16
_MAX_NODES: Final = 20_000  # sympy nodes in one result (the text limit keeps real formulas far below)

#: the callable functions: name -> (sympy function, minimum and maximum argument count)
FUNCTIONS: Final[Mapping[str, tuple[Callable[..., sympy.Expr], int, int]]] = {
    "Min": (sympy.Min, 1, MAX_LENGTH), "Max": (sympy.Max, 1, MAX_LENGTH), "Abs": (sympy.Abs, 1, 1),
    "floor": (sympy.floor, 1, 1), "ceiling": (sympy.ceiling, 1, 1), "log": (sympy.log, 1, 1),
    "exp": (sympy.exp, 1, 1), "sqrt": (sympy.sqrt, 1, 1), "sin": (sympy.sin, 1, 1), "cos": (sympy.cos, 1, 1),
}  # fmt: skip
_FLOAT_FUNCTIONS: Final[Mapping[str, Callable[[float], float]]] = {
    "Abs": abs, "floor": math.floor, "ceiling": math.ceil, "log": math.log, "exp": math.exp, "sqrt": math.sqrt,
    "sin": math.sin, "cos": math.cos,
}  # fmt: skip
_CONSTANTS: Final[Mapping[str, tuple[sympy.Expr, float]]] = {"pi": (sympy.pi, math.pi)}
_DECIMAL = re.compile(r"(?P<int>[0-9_]*)(?:\.(?P<frac>[0-9_]*))?(?:[eE](?P<exp>[+-]?[0-9_]+))?")
_BAD_ATOMS: Final = (sympy.zoo, sympy.oo, -sympy.oo, sympy.nan, sympy.I)
_FAMILY: Final[Mapping[type[ast.operator], str]] = {ast.Add: "+", ast.Sub: "+", ast.Mult: "*", ast.Div: "*"}
_OPEN, _CLOSE = "([{", ")]}"

# A built node: the sympy expression and, for a constant (symbol-free) node, its float value.
_Built = tuple[sympy.Expr, "float | None"]


def _shown(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


class _Parser:
    def __init__(self, text: str, symbols: Mapping[str, object], owner: str, field: str) -> None:
        self.text = text
        self.symbols = symbols
        self.owner = owner
        self.field = field

    def refuse(self, constraint: str) -> NoReturn:
        raise InvalidArgument(self.owner, self.field, _shown(self.text), constraint)

    # --- limits checked before any sympy object exists -------------------------------

    def check_text(self) -> ast.expr:
        text = self.text
        if len(text) > MAX_LENGTH:
            self.refuse(f"is longer than {MAX_LENGTH} characters ({len(text)})")
        if not text.strip():
            self.refuse("must be a non-empty formula")
        depth = 0
        for ch in text:
            if ch in _OPEN:
                depth += 1
                if depth > MAX_DEPTH:
                    self.refuse(f"nests brackets deeper than {MAX_DEPTH} levels")
            elif ch in _CLOSE:
                depth -= 1
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
            self.refuse(f"is not a formula ({type(exc).__name__})")
        self.check_depth(tree.body)
        return tree.body

    def check_depth(self, root: ast.expr) -> None:
        """Iterative: the depth of the tree, a same-family left operand counting as the same level."""
        stack: list[tuple[ast.AST, int]] = [(root, 1)]
        extrema = 0
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                self.refuse(f"nests deeper than {MAX_DEPTH} levels")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Min", "Max"):
                extrema += len(node.args)
                if extrema > MAX_EXTREMA_ARGS:
                    self.refuse(f"passes more than {MAX_EXTREMA_ARGS} arguments to Min and Max in all")
            if isinstance(node, ast.BinOp):
                family = _FAMILY.get(type(node.op))
                left = node.left
                same = family is not None and isinstance(left, ast.BinOp) and _FAMILY.get(type(left.op)) == family
                stack.append((left, depth if same else depth + 1))
                stack.append((node.right, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))

    # --- checks of built sympy objects ------------------------------------------------

    def vet(self, expr: sympy.Expr) -> sympy.Expr:
        """Exact numbers of at most MAX_BITS bits, powers at most MAX_POWER, nothing infinite or complex."""
        stack: list[sympy.Basic] = [expr]
        count = 0
        while stack:
            node = stack.pop()
            count += 1
            if count > _MAX_NODES:
                self.refuse(f"is too large once built (more than {_MAX_NODES} sympy nodes)")
            if any(node == bad for bad in _BAD_ATOMS) or isinstance(node, sympy.Float):
                self.refuse("is not a finite real formula (division by zero, log(0), a square root of a negative number, ...)")
            if isinstance(node, sympy.Rational):
                if int(node.p).bit_length() > MAX_BITS or int(node.q).bit_length() > MAX_BITS:
                    self.refuse(f"builds a number of more than {MAX_BITS} bits")
                continue
            if isinstance(node, sympy.Pow):
                e = node.args[1]
                if isinstance(e, sympy.Rational) and abs(e) > MAX_POWER:
                    self.refuse(f"builds a power with exponent {_short_number(e)}, beyond {MAX_POWER}")
            stack.extend(node.args)
        return expr

    def constant(self, value: float | None) -> float | None:
        if value is None:
            return None
        if isinstance(value, complex) or math.isnan(value):
            self.refuse("has a constant part that is not a finite real number")
        if not abs(value) <= MAX_CONSTANT:
            self.refuse(f"has a constant part beyond 1e{len(str(MAX_CONSTANT)) - 1} in absolute value")
        return value

    # --- the tree walk ------------------------------------------------------------------

    def build(self, node: ast.expr) -> _Built:
        try:
            if isinstance(node, ast.Constant):
                return self.literal(node)
            if isinstance(node, ast.Name):
                return self.name(node)
            if isinstance(node, ast.UnaryOp):
                return self.unary(node)
            if isinstance(node, ast.BinOp):
                if isinstance(node.op, ast.Pow):
                    return self.power(node)
                if type(node.op) in _FAMILY:
                    return self.chain(node)
                self.refuse(f"uses the operator {type(node.op).__name__}; only + - * / ** are allowed")
            if isinstance(node, ast.Call):
                return self.call(node)
        except InvalidArgument:
            raise
        except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError) as exc:  # sympy's own refusals
            self.refuse(f"is not a valid formula ({type(exc).__name__})")
        self.refuse(f"contains {_describe(node)}, which a formula may not contain")

    def literal(self, node: ast.Constant) -> _Built:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.refuse(f"contains the literal {_shown(repr(value))}; only numbers are allowed")
        segment = ast.get_source_segment(self.text.strip(), node)
        match = _DECIMAL.fullmatch(segment or "")
        if segment is None or match is None or not (match["int"] or match["frac"]):
            self.refuse(f"contains the number {_shown(segment or '?')}; write numbers in decimal")
        whole, frac = match["int"].replace("_", ""), (match["frac"] or "").replace("_", "")
        digits = (whole + frac).lstrip("0")
        if len(digits) > MAX_DIGITS:
            self.refuse(f"contains a number with more than {MAX_DIGITS} digits")
        exp_text = (match["exp"] or "0").replace("_", "")
        if len(exp_text.lstrip("+-").lstrip("0")) > 5 or abs(int(exp_text)) > MAX_LITERAL_EXPONENT:
            self.refuse(f"contains a number with an exponent beyond {MAX_LITERAL_EXPONENT}")
        exact = Fraction(int(whole + frac or "0"), 10 ** len(frac)) * Fraction(10) ** int(exp_text)
        shadow = self.constant(float(exact) if exact <= MAX_CONSTANT else math.inf)
        return self.vet(sympy.Rational(exact.numerator, exact.denominator)), shadow

    def name(self, node: ast.Name) -> _Built:
        if node.id in self.symbols:
            bound = self.symbols[node.id]
            if isinstance(bound, sympy.Rational):
                return self.vet(bound), self.constant(_float(bound))
            if isinstance(bound, sympy.Expr) and bound.free_symbols:
                return self.vet(bound), None
            self.refuse(f"declares {node.id!r} as {type(bound).__name__}; a symbol must be a sympy Symbol or a rational number")
        if node.id in _CONSTANTS:
            expr, value = _CONSTANTS[node.id]
            return expr, value
        declared = ", ".join(sorted(self.symbols)) or "none"
        self.refuse(f"uses the undeclared symbol {_shown(node.id)!r}; declared: {declared}")

    def unary(self, node: ast.UnaryOp) -> _Built:
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            self.refuse(f"uses the operator {type(node.op).__name__}; only unary - and + are allowed")
        expr, value = self.build(node.operand)
        if isinstance(node.op, ast.UAdd):
            return expr, value
        return self.vet(-expr), None if value is None else -value

    def chain(self, node: ast.BinOp) -> _Built:
        """A run of + and - (or * and /) is built at once: sympy flattens it anyway."""
        family = _FAMILY[type(node.op)]
        operands: list[tuple[ast.operator, ast.expr]] = []
        current: ast.expr = node
        while isinstance(current, ast.BinOp) and _FAMILY.get(type(current.op)) == family:
            operands.append((current.op, current.right))
            current = current.left
        first, first_value = self.build(current)
        terms, values = [first], [first_value]
        for op, operand in reversed(operands):
            expr, value = self.build(operand)
            if isinstance(op, ast.Sub):
                expr, value = -expr, None if value is None else -value
            elif isinstance(op, ast.Div):
                if expr == 0:
                    self.refuse("divides by zero")
                expr, value = sympy.Pow(expr, -1), None if value is None else (math.inf if value == 0 else 1 / value)
            terms.append(expr)
            values.append(value)
        shadow: float | None = None
        if all(v is not None for v in values):
            floats = [float(v) for v in values if v is not None]
            shadow = math.fsum(floats) if family == "+" else math.prod(floats)
        shadow = self.constant(shadow)
        return self.vet(sympy.Add(*terms) if family == "+" else sympy.Mul(*terms)), shadow

    def power(self, node: ast.BinOp) -> _Built:
        base, base_value = self.build(node.left)
        exp, exp_value = self.build(node.right)
        if exp_value is None:  # a symbol: the base must be a number
            right = node.right.operand if isinstance(node.right, ast.UnaryOp) else node.right
            if not isinstance(right, ast.Name):
                self.refuse("raises to a power that is neither a number nor a declared symbol")
            if not isinstance(base, sympy.Rational):
                self.refuse("raises a non-constant base to a symbolic power; only a number may be raised to a symbol (2**k)")
            return self.vet(sympy.Pow(base, exp)), None
        if not isinstance(exp, sympy.Rational) or abs(exp) > MAX_POWER:
            self.refuse(f"raises to the power {_shown(str(exp))}; powers are limited to |exponent| <= {MAX_POWER}")
        if base_value is not None and not isinstance(base, sympy.Rational):
            self.refuse("raises an irrational constant to a power; only a number or an expression in the symbols may be")
        if _max_bits(base) * abs(float(exp)) > MAX_BITS:
            self.refuse(f"builds a number of more than {MAX_BITS} bits")
        shadow: float | None = None
        if base_value is not None:
            try:
                raw = float(base_value) ** float(exp)
            except (OverflowError, ZeroDivisionError):
                raw = math.inf
            shadow = self.constant(raw if not isinstance(raw, complex) else math.nan)
        return self.vet(sympy.Pow(base, exp)), shadow

    def call(self, node: ast.Call) -> _Built:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else _describe(node.func)
            self.refuse(f"calls {_shown(what)!r}; the functions are {', '.join(FUNCTIONS)}")
        name = node.func.id
        function, low, high = FUNCTIONS[name]
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.refuse(f"passes keyword or starred arguments to {name}; arguments are positional")
        if not low <= len(node.args) <= high:
            self.refuse(f"calls {name} with {len(node.args)} arguments; it takes {low if low == high else f'at least {low}'}")
        built = [self.build(a) for a in node.args]
        for expr, value in built:
            if value is not None and not isinstance(expr, sympy.Rational) and not (
                name in ("sin", "cos") and isinstance(expr / sympy.pi, sympy.Rational)
            ):
                self.refuse(f"applies {name} to an irrational constant; a constant argument must be a plain number")
        values = [v for _, v in built]
        shadow: float | None = None
        if all(v is not None for v in values):
            floats = [float(v) for v in values if v is not None]
            if name in ("Min", "Max"):
                shadow = min(floats) if name == "Min" else max(floats)
            else:
                try:
                    shadow = float(_FLOAT_FUNCTIONS[name](floats[0]))
                except (ValueError, OverflowError):
                    shadow = math.nan if name != "exp" else math.inf
        shadow = self.constant(shadow)
        return self.vet(function(*(e for e, _ in built))), shadow


def _float(value: sympy.Rational) -> float:
    try:
        return int(value.p) / int(value.q)
    except OverflowError:
        return math.inf


def _max_bits(expr: sympy.Expr) -> int:
    """The largest numerator or denominator, in bits, among the exact numbers in ``expr``."""
    best = 1
    stack: list[sympy.Basic] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, sympy.Rational):
            best = max(best, int(node.p).bit_length(), int(node.q).bit_length())
        else:
            stack.extend(node.args)
    return best


def _short_number(value: sympy.Rational) -> str:
    text = str(value)
    return text if len(text) <= 20 else text[:17] + "..."


def _describe(node: ast.AST) -> str:
    names = {
        ast.Attribute: "an attribute access", ast.Subscript: "a subscript", ast.Lambda: "a lambda",
        ast.ListComp: "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
        ast.GeneratorExp: "a comprehension", ast.JoinedStr: "an f-string", ast.NamedExpr: "an assignment (:=)",
        ast.Compare: "a comparison", ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional",
        ast.Tuple: "a tuple", ast.List: "a list", ast.Set: "a set", ast.Dict: "a dict", ast.Starred: "a starred expression",
        ast.Await: "an await", ast.Yield: "a yield", ast.YieldFrom: "a yield", ast.Slice: "a slice",
    }  # fmt: skip
    return names.get(type(node), f"a {type(node).__name__} expression")


def parse_formula(text: str, symbols: Mapping[str, sympy.Expr], *, owner: str, field: str) -> sympy.Expr:
    """Parse a formula string into a sympy expression, without running any code.

    The grammar and the limits are in the module docstring: numbers, the declared
    ``symbols``, ``+ - * / **``, and calls of ``Min``, ``Max``, ``Abs``, ``floor``,
    ``ceiling``, ``log``, ``exp``, ``sqrt``, ``sin``, ``cos``; at most 2,000
    characters, nesting depth 64, powers up to 64.

    Args:
        text: the formula.
        symbols: every name the formula may use, mapped to its sympy ``Symbol`` (or
            to a rational number, for a public constant substituted at parse time).
        owner: the class or function named in an error.
        field: the parameter named in an error.

    Returns:
        The sympy expression.

    Raises:
        InvalidArgument: anything outside the grammar or the limits, an undeclared
            name, or a formula sympy cannot build (division by zero, ...).

    Examples:
        >>> import sympy
        >>> k, n = sympy.symbols("k n")
        >>> parse_formula("0.1*Min(k + 1, n)", {"k": k, "n": n}, owner="demo", field="formula")
        Min(n, k + 1)/10
        >>> parse_formula("k + c", {"k": k}, owner="demo", field="formula")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: demo: formula='k + c' uses the undeclared symbol 'c'; declared: k
        >>> parse_formula("k + 9**9**9", {"k": k}, owner="demo", field="formula")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: demo: formula='k + 9**9**9' raises to the power 387420489; powers are limited to |exponent| <= 64

    References:
        docs/architecture.md, "Invariants" ("formulas are data, never code").
    """
    if not isinstance(text, str):
        raise InvalidArgument(owner, field, type(text).__name__, "must be a formula string")
    parser = _Parser(text, symbols, owner, field)
    body = parser.check_text()
    expr, _ = parser.build(body)
    if not isinstance(expr, sympy.Expr):  # pragma: no cover - every branch builds an Expr
        parser.refuse("is not an arithmetic expression")
    return expr
