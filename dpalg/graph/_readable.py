"""Released values for people: each value with its (1 − α) error bar, rounded to what the noise makes meaningful.

One formatter, :func:`format_value`, serves ``str(release)`` and ``dpalg report``
(text and HTML), so both show the same digits. The error bar is the node's own
:meth:`~dpalg.AbstractMeasurement.accuracy` (the statement ``plan.summary()``
shows), computed from the plan's public parameters; the report re-derives it
from the plan it rebuilt from the certificate and never reads a claimed bar.

Rounding (a value is never shown with more digits than the noise or the lattice
carry):

* an absolute error ``e`` is shown to its leading digit (two digits when that
  digit is 1, as in ``0.12``), **rounded up** (a bound is never understated),
  and the value is rounded half-even to the same decimal place, never to a
  place left of the units: ``40.53 ± 0.05``, ``100003 ± 3``, ``51 ± 30``;
* when the statement gives its lattice step ``2**k`` (:attr:`Accuracy.lattice_k`),
  no decimal beyond the step's leading digit is shown;
* integers (exact counts) are shown as integers, ⊥ as ``⊥``, histogram keys
  with their type (``1984`` for an int key, ``'1984'`` for a str key);
* a conditional statement (``error is None``) shows the value with
  ``(error conditional: ...)``; a value without any statement is shown with at
  most 6 significant digits (or the lattice step's digits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import final

import attrs
import numpy as np

from dpalg._bottom import Bottom
from dpalg._errors import DPAlgError
from dpalg.graph._accuracy import Accuracy, _percent
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._group import GroupPrivacy
from dpalg.graph._subsample import Subsample
from dpalg.graph._groupby import GroupBy, KeySet
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._result import VALUE_ROWS
from dpalg.queries import Query

__all__ = ["GroupTable", "ValueRow", "format_value", "group_tables", "value_rows"]

_ITEMS = 50  # elements of one array or dict shown before "…"
_LIMIT = 2000  # characters of one formatted value before "…" (a hostile certificate's value can be large)
_CONDITION = 80  # characters of a condition's short text


@final
@attrs.frozen
class ValueRow:
    """One released part: where it sits in the plan, its value as text and the statement's confidence.

    Attributes:
        path: the node's path, as in the certificate's derivation (``Compose/0/Laplace``).
        text: :func:`format_value` of the value with the node's accuracy.
        confidence: ``"95%"`` (1 − α), or ``""`` when the node gives no statement.
    """

    path: str
    text: str
    confidence: str


def _decade(x: Fraction) -> int:
    """The exponent ``p`` with ``10**p <= x < 10**(p+1)`` (``x > 0``), exactly."""
    p = math.floor(math.log10(x.numerator) - math.log10(x.denominator))
    while Fraction(10) ** p > x:
        p -= 1
    while Fraction(10) ** (p + 1) <= x:
        p += 1
    return p


def _decimals_of_error(error: Fraction) -> int:
    """Decimal places that show ``error`` to its leading digit (two digits when it is 1); at least 0."""
    p = _decade(error)
    leading = math.floor(error / Fraction(10) ** p)
    return max(-p + (1 if leading == 1 else 0), 0)


def _step_decimals(accuracy: Accuracy | None) -> int | None:
    """Decimal places of the lattice step's leading digit, when the statement gives the step ``2**lattice_k``."""
    if accuracy is None or accuracy.lattice_k is None:
        return None
    return max(-_decade(Fraction(2) ** accuracy.lattice_k), 0)


def _fixed(x: Fraction, decimals: int, up: bool = False) -> str:
    """``x`` with ``decimals`` places: rounded half-even, or up (towards +∞) when ``up``."""
    scaled = x * 10**decimals
    n = math.ceil(scaled) if up else round(scaled)
    sign = "-" if n < 0 else ""
    digits = str(abs(n)).rjust(decimals + 1, "0")
    return sign + (f"{digits[:-decimals]}.{digits[-decimals:]}" if decimals else digits)


def _number(x: object) -> Fraction | None:
    """A finite float, numpy float or Fraction as an exact Fraction (ints and bools are not: they are shown exactly)."""
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and math.isfinite(x):
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    return None


class _Writer:
    """Text with a length budget: a hostile value stops at ``_LIMIT`` characters."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.used = 0

    def put(self, s: str) -> bool:
        self.parts.append(s)
        self.used += len(s)
        return self.used <= _LIMIT


def _scalar(x: object, decimals: int | None) -> str:
    if isinstance(x, Bottom):
        return "⊥"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    exact = _number(x)
    if exact is not None:
        return _fixed(exact, decimals) if decimals is not None else f"{float(exact):.6g}"
    if isinstance(x, float):  # inf, nan
        return repr(x)
    if x is None:
        return "null"
    return repr(x) if isinstance(x, str) else repr(x)


def _walk(x: object, decimals: int | None, out: _Writer, depth: int = 0) -> bool:
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, (list, tuple, Mapping)) and depth > 20:
        return out.put("…")
    if isinstance(x, Mapping):
        items: list[tuple[object, object]] = list(x.items())
        if not out.put("{"):
            return False
        for i, (k, v) in enumerate(items):
            if i == _ITEMS:
                return out.put(", …}")
            if (i and not out.put(", ")) or not out.put(f"{_scalar(k, None)}: ") or not _walk(v, decimals, out, depth + 1):
                return False
        return out.put("}")
    if isinstance(x, (list, tuple)):
        if not out.put("["):
            return False
        for i, v in enumerate(x):
            if i == _ITEMS:
                return out.put(", …]")
            if (i and not out.put(", ")) or not _walk(v, decimals, out, depth + 1):
                return False
        return out.put("]")
    return out.put(_scalar(x, decimals))


def _short_condition(condition: str | None) -> str:
    text = (condition or "").split(";")[0].strip()
    return text if len(text) <= _CONDITION else text[: _CONDITION - 1] + "…"


def format_value(value: object, accuracy: Accuracy | None) -> str:
    """A released value with its error bar, rounded to what the error and the lattice make meaningful.

    Args:
        value: a released value (a number, ⊥, an array, a dict key -> number).
        accuracy: the node's (1 − α) statement (:meth:`~dpalg.AbstractMeasurement.accuracy`),
            or ``None`` when the node gives none. The confidence itself is not
            in the text (see :class:`ValueRow`).

    Examples:
        >>> from fractions import Fraction as F
        >>> bar = Accuracy(F(1, 20), F("0.032"), "absolute", "discrete Laplace, scale 0.01 (lattice step 2**-20)", lattice_k=-20)
        >>> format_value(40.52718, bar)
        '40.53 ± 0.04'
        >>> format_value(100003, Accuracy(F(1, 20), F(3), "absolute", "discrete Laplace, scale 1"))
        '100003 ± 3'
        >>> format_value({1984: 60, "1984": 41}, Accuracy(F(1, 20), F(3), "absolute, per key", "discrete Laplace, scale 1"))
        "{1984: 60, '1984': 41} ± 3 each"
        >>> format_value(51.42472491878094, Accuracy(F(1, 20), None, "absolute", "…", condition="the true count n > 7; error <= …"))
        '51.4247 (error conditional: the true count n > 7)'
    """
    if isinstance(value, Bottom):
        return "⊥"
    error = accuracy.error if accuracy is not None else None
    absolute = accuracy is not None and accuracy.unit.startswith("absolute")
    step = _step_decimals(accuracy)
    decimals: int | None = step
    if error is not None and error > 0 and absolute:
        decimals = _decimals_of_error(error) if step is None else min(_decimals_of_error(error), step)
    out = _Writer()
    complete = _walk(value, decimals, out)
    text = "".join(out.parts) if complete else "".join(out.parts)[:_LIMIT] + " …"
    if accuracy is None:
        return text
    if error is None:
        condition = _short_condition(accuracy.condition)
        return f"{text} (error conditional{': ' + condition if condition else ''})"
    many = isinstance(value, (list, tuple, Mapping, np.ndarray))
    if absolute:
        bar = _fixed(error, decimals if decimals is not None else 0, up=True) if error > 0 else "0"
        text += f" ± {bar}" + (" each" if many else "")
    else:
        text += f" (± {_fixed(error, _decimals_of_error(error), up=True) if error > 0 else '0'} {accuracy.unit})"
    if accuracy.condition:
        text += f" (if {_short_condition(accuracy.condition)})"
    return text


def _join(path: str, label: str) -> str:
    return f"{path}/{label}" if path else label


def _typed_keys(node: object, value: object) -> object:
    """A dict released with str keys (as a certificate records it) given back the types of the query's public keys."""
    query = getattr(node, "query", None)
    if not isinstance(value, dict) or not isinstance(query, Query) or not query.keys:
        return value
    by_text = {str(k): k for k in query.keys}
    return {by_text.get(k, k) if isinstance(k, str) else k: v for k, v in value.items()}


def _rows(node: object, value: object, alpha: Fraction, path: str, out: list[ValueRow], limit: int) -> None:
    if len(out) >= limit:
        return
    match node:
        case Compose() if not node.names and isinstance(value, (tuple, list)) and len(value) == len(node.children):
            here = _join(path, "Compose")
            for i, (child, v) in enumerate(zip(node.children, value)):
                _rows(child, v, alpha, f"{here}/{i}", out, limit)
            return
        case Compose() if node.names and isinstance(value, dict) and list(value) == list(node.names):
            here = _join(path, "Compose")
            for name, child in zip(node.names, node.children):
                _rows(child, value[name], alpha, f"{here}/{name}", out, limit)
            return
        case Parallel() if isinstance(value, dict):
            here = _join(path, f"Parallel(by={node.by!r})")
            for key, child in node.parts:
                v = value[key] if key in value else value.get(str(key))
                _rows(child, v, alpha, f"{here}/{key!r}", out, limit)
            return
        case PureToApprox() | PureToZCDP() | ZCDPToApprox():
            _rows(node.child, value, alpha, _join(path, type(node).__name__), out, limit)
            return
        case GroupBy() if isinstance(value, dict):
            here = _join(path, f"GroupBy(by={node.by!r})")
            for key, per_group in value.items():
                _rows(node.plan, per_group, alpha, f"{here}/{key!r}", out, limit)
            return
        case GroupPrivacy():
            _rows(node.plan, value, alpha, _join(path, f"GroupPrivacy(unit={node.unit!r}, max_rows={node.max_rows})"), out, limit)
            return
        case Subsample():
            _rows(node.plan, value, alpha, _join(path, f"Subsample(rate={node.rate})"), out, limit)
            return
    accuracy: Accuracy | None = None
    if isinstance(node, AbstractMeasurement) and not isinstance(node, (Compose, Parallel, GroupBy)):
        try:
            accuracy = node.accuracy(alpha)
        except DPAlgError:  # Unsupported: the node gives no statement; the value is shown alone
            accuracy = None
    here = _join(path, type(node).__name__) if node is not None else "value"
    text = format_value(_typed_keys(node, value), accuracy)
    shown = accuracy is not None and not isinstance(value, Bottom)  # ⊥ has no error bar
    out.append(ValueRow(here, text, _percent(1 - alpha) if shown else ""))


def value_rows(plan: object, value: object, alpha: Fraction = Fraction(1, 20), limit: int = 200) -> tuple[ValueRow, ...]:
    """One row per released part of ``plan``'s ``value``, with the node's (1 − ``alpha``) error bar.

    A Compose's tuple is matched to its children, a Parallel's dict to its
    parts, a conversion or group-privacy node to its child; paths are the
    derivation's. ``plan=None`` (unknown plan): one row, no error bar. At most
    ``limit`` rows.

    Examples:
        >>> from dpalg import Compose, Query, Clip
        >>> from dpalg.mechanisms import Laplace
        >>> plan = Compose(Laplace(Query.count(), epsilon=1), Laplace(Query.sum("x") | Clip(0, 10), epsilon=1))
        >>> for row in value_rows(plan, (100, 412.59765625)):
        ...     print(row.path, "|", row.text, "|", row.confidence)
        Compose/0/Laplace | 100 ± 3 | 95%
        Compose/1/Laplace | 413 ± 30 | 95%
    """
    out: list[ValueRow] = []
    _rows(plan, value, alpha, "", out, limit)
    return tuple(out)


@final
@attrs.frozen
class GroupTable:
    """A GroupBy's release as a table: one row per released key, one column per aggregate.

    Attributes:
        path: the GroupBy's path in the derivation.
        names: the aggregates' names (the columns).
        rows: ``(key, cells)``: the key's text and each aggregate's value ± error.
        confidence: ``"95%"`` (1 − α) when some cell has an error bar, else ``""``.
    """

    path: str
    names: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    confidence: str


def group_tables(plan: object, value: object, alpha: Fraction = Fraction(1, 20), limit: int = 200) -> tuple[GroupTable, ...]:
    """A :class:`GroupTable` for every GroupBy of ``plan`` whose part of ``value`` is a dict (at most ``limit`` rows each).

    Examples:
        >>> from dpalg import GroupBy, KeySet, Query
        >>> from dpalg.mechanisms import Laplace
        >>> plan = GroupBy("g", keys=KeySet(["a", "b"]), aggregates={"n": Laplace(Query.count(), epsilon=1)})
        >>> table = group_tables(plan, {"a": {"n": 10}, "b": {"n": 4}})[0]
        >>> table.names, table.rows
        (('n',), (("'a'", ('10 ± 3',)), ("'b'", ('4 ± 3',))))
    """
    out: list[GroupTable] = []
    _tables(plan, value, alpha, "", out, limit)
    return tuple(out)


def _tables(node: object, value: object, alpha: Fraction, path: str, out: list[GroupTable], limit: int) -> None:
    match node:
        case Compose() if not node.names and isinstance(value, (tuple, list)) and len(value) == len(node.children):
            for i, (child, v) in enumerate(zip(node.children, value)):
                _tables(child, v, alpha, f"{_join(path, 'Compose')}/{i}", out, limit)
        case Compose() if node.names and isinstance(value, dict):
            for name, child in zip(node.names, node.children):
                _tables(child, value.get(name), alpha, f"{_join(path, 'Compose')}/{name}", out, limit)
        case PureToApprox() | PureToZCDP() | ZCDPToApprox():
            _tables(node.child, value, alpha, _join(path, type(node).__name__), out, limit)
        case GroupPrivacy():
            _tables(node.plan, value, alpha, _join(path, f"GroupPrivacy(unit={node.unit!r}, max_rows={node.max_rows})"), out, limit)
        case Subsample():
            _tables(node.plan, value, alpha, _join(path, f"Subsample(rate={node.rate})"), out, limit)
        case GroupBy() if isinstance(value, dict):
            names = node.plan.names
            rows: list[tuple[str, tuple[str, ...]]] = []
            shown = False
            # a certificate's JSON value holds keys as text: a public key is shown as the key it stands for
            by_text = {str(k): k for k in node.keys.labels} if isinstance(node.keys, KeySet) else {}
            for key, per_group in list(value.items())[:limit]:
                key = by_text.get(key, key) if isinstance(key, str) else key
                cells: list[str] = []
                for name, child in node.aggregates.items():
                    part = per_group.get(name) if isinstance(per_group, dict) else None
                    found = value_rows(child, part, alpha, limit=8)
                    shown = shown or any(r.confidence for r in found)
                    cells.append("; ".join(r.text for r in found))
                rows.append((repr(key), tuple(cells)))
            out.append(GroupTable(_join(path, f"GroupBy(by={node.by!r})"), names, tuple(rows), _percent(1 - alpha) if shown else ""))


VALUE_ROWS.provide(lambda plan, value: [(r.path, r.text, r.confidence) for r in value_rows(plan, value)])  # str(release)
