"""Structured (de)serialisation of plans for certificates (schema: docs/certificates.md).

A plan is encoded field by field from its attrs definition:

* ``None``, ``bool``, ``int``, ``str`` are themselves;
* a ``float`` is ``{"$float": float.hex()}`` (exact);
* a ``Fraction`` is ``{"$fraction": "p/q"}`` (exact);
* a ``datetime.date`` (a row expression's date literal) is ``{"$date": "YYYY-MM-DD"}``,
  read back strictly (exactly that form, a real calendar day);
* a ``tuple`` is ``{"$tuple": [...]}``;
* a dpalg attrs class is ``{"$node": "module:QualName", "fields": {...}}``;
* a field a certificate lacks takes its default, or, when the field says so
  (attrs metadata :data:`~dpalg.graph._node.ABSENT_IN_CERTIFICATE`), the value
  its absence meant before the field existed (``ExponentialQuantile.candidates``:
  absent means the grid, ``None``; new plans default to ``"auto"``);
* a user callable is ``{"$callable": "module:qualname", "repr": text}``: its name
  and its repr without the memory address (so that a plan rebuilt with a stub
  reads exactly like the original, for a ``functools.partial``, a callable object
  or a builtin too); the code itself is never recorded.

Decoding only ever instantiates attrs classes defined inside the ``dpalg``
package, through their ``__attrs_init__`` so that every converter, validator and
post-init check (including the sympy checks) runs again. User callables decode to
a :class:`CallableStub` that refuses to run: an audit re-derives the cost, which
never depends on them.

Reading a certificate must never run code named or written by the certificate.
Formula strings reach sympy only through dpalg's own whitelist parser
(:func:`dpalg.sensitivity.parse_formula`, the same one the API and the CLI use),
which the rebuilt nodes call. As a second wall, every string that does not sit in
a field known to hold a plain name (column names, relation names, ...) is vetted
before any constructor sees it: a string with ``__``, ``lambda``, ``import``,
``;``, an attribute access, or a call of anything but the functions of the
formula grammar is refused (the certificate is malformed).
"""

from __future__ import annotations

import datetime
import importlib
import json
import re
from fractions import Fraction
from typing import Union, final

import attrs

from dpalg._errors import DPAlgError, InvalidArgument
from dpalg._numbers import to_fraction
from dpalg.graph._derivation import strip_addresses
from dpalg.graph._node import ABSENT_IN_CERTIFICATE
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.mechanisms import CERTIFICATE_NAMES

__all__ = [
    "CallableStub", "CertificateMalformed", "JSON", "UnknownNodeKind", "canonical_json", "decode", "encode", "stable_repr",
]  # fmt: skip

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]

#: stable certificate name -> class, for the classes whose name is not their module's (a class
#: that moved keeps the name certificates first gave it: :data:`dpalg.mechanisms.CERTIFICATE_NAMES`)
_NAMED: dict[str, type] = {name: cls for cls, name in CERTIFICATE_NAMES.items()}


def certificate_name(cls: type) -> str:
    """The ``"module:Class"`` name a certificate records for a node class.

    The defining module for most classes; for a class that has moved since
    certificates first named it, the name they gave it then (so a move changes
    no certificate).

    Examples:
        >>> from dpalg.mechanisms import Laplace
        >>> from dpalg.graph import Compose
        >>> certificate_name(Laplace), certificate_name(Compose)
        ('dpalg.mechanisms._global:Laplace', 'dpalg.graph._compose:Compose')
    """
    return CERTIFICATE_NAMES.get(cls) or f"{cls.__module__}:{cls.__qualname__}"


class CertificateMalformed(DPAlgError, ValueError):
    """A certificate (or an encoded plan) is not well formed, or was tampered with.

    ``dpalg audit`` exits 2 on it. ``where`` names the place in the document.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class UnknownNodeKind(DPAlgError, TypeError):
    """An encoded plan names a dpalg class this version does not have.

    ``dpalg audit`` refutes such a certificate (exit 1): unknown nodes are never free.
    """

    def __init__(self, where: str, kind: str) -> None:
        self.where = where
        self.kind = kind
        super().__init__(f"{where}: node kind {kind!r} is unknown to this dpalg version; unknown nodes are never free")


@final
@attrs.frozen(repr=False)
class CallableStub:
    """Stands in for a user callable when a plan is rebuilt from a certificate.

    Its repr is the function's as recorded, without the address (see
    :func:`stable_repr`); certificates without a recorded repr read
    ``<function qualname>``.
    """

    name: str
    text: str | None = None

    def __call__(self, *args: object) -> object:
        raise InvalidArgument("CallableStub", "name", self.name, "is a recorded callable; it cannot run during an audit")

    def __repr__(self) -> str:
        if self.text is not None:
            return self.text
        return f"<function {self.name.partition(':')[2] or self.name}>"


def stable_repr(text: str) -> str:
    """A repr with memory addresses removed (``<function f at 0x7f..>`` -> ``<function f>``).

    Certificates record reprs this way so that a plan rebuilt with
    :class:`CallableStub` in place of user functions reads the same.

    Examples:
        >>> stable_repr("Node(fn=<function mean at 0x7f3a2c>)")
        'Node(fn=<function mean>)'
    """
    return strip_addresses(text)


def encode(value: object) -> JSON:
    """Encode a node, a measure or a parameter value as JSON-compatible data.

    Examples:
        >>> from dpalg import PureDP
        >>> encode(PureDP("1/2"))
        {'$node': 'dpalg.measures._measures:PureDP', 'fields': {'epsilon': {'$fraction': '1/2'}}}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, CallableStub):  # a rebuilt plan encodes like the original
        return {"$callable": value.name} if value.text is None else {"$callable": value.name, "repr": value.text}
    if isinstance(value, float):
        return {"$float": value.hex()}
    if isinstance(value, Fraction):
        return {"$fraction": str(value)}
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return {"$date": value.isoformat()}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (PureDP, ApproxDP, ZCDP)) or attrs.has(type(value)):
        cls: type = type(value)
        if not (cls.__module__ == "dpalg" or cls.__module__.startswith("dpalg.")):
            raise InvalidArgument("encode", "node", cls.__name__, "must be a dpalg class (plans are built from dpalg nodes)")
        fields = {f.name: encode(getattr(value, f.name)) for f in attrs.fields(cls)}
        return {"$node": certificate_name(cls), "fields": fields}
    if callable(value):
        name = getattr(value, "__qualname__", None) or type(value).__name__
        return {"$callable": f"{getattr(value, '__module__', '?')}:{name}", "repr": stable_repr(repr(value))}
    raise InvalidArgument("encode", "value", type(value).__name__, "cannot be recorded in a certificate")


# Fields that hold plain names (never parsed as expressions); every other string is vetted.
_NAME_FIELDS = frozenset({"column", "user", "unit", "by", "name", "where", "numerator", "relation", "kind", "calibration", "names"})  # Compose.names: identifiers, checked by Compose
_NAME_CLASSES = frozenset({
    "Query", "Clip", "Parallel", "KeySet", "Neighbouring", "NoisyCount", "PrivateRatio",
    # row expressions: their strings are column names, operators and literals, never parsed (dpalg.data._expr)
    "Col", "Lit", "Arith", "Unary", "MinMax", "Compare", "Logic", "Not", "IsNull", "IsIn", "Cast", "Bin", "Where",
    "Lookup", "JoinPublic", "From", "Join",
})
# sympy functions and constants dpalg formulas may use (dpalg/sensitivity/_sympy_check.py)
_SAFE_CALLS = frozenset({"Min", "Max", "exp", "log", "sqrt", "ceiling", "floor", "Abs", "sin", "cos"})  # the formula grammar
_CALL = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(")
_ATTRIBUTE = re.compile(r"[A-Za-z_)\]}'\"]\s*\.")
_BANNED = ("__", "lambda", "import", ";", "`", "\\", "[", "{", ":", "=", "'", '"', "@", "!", "~", "|", "&", "<", ">")
_MAX_STRING = 4096


def _vet(text: str, where: str) -> None:
    """Refuse strings that look like code before any node parses them (a second wall behind ``parse_formula``)."""
    if len(text) > _MAX_STRING:
        raise CertificateMalformed(where, f"string of {len(text)} characters is longer than {_MAX_STRING}")
    for bad in _BANNED:
        if bad in text:
            raise CertificateMalformed(where, f"string contains {bad!r}; refusing to rebuild it (it could run code when parsed)")
    if _ATTRIBUTE.search(text):
        raise CertificateMalformed(where, "string contains an attribute access; refusing to rebuild it")
    for name in _CALL.findall(text):
        if name not in _SAFE_CALLS:
            raise CertificateMalformed(where, f"string calls {name!r}, which is not an allowed formula function {sorted(_SAFE_CALLS)}")
    if "**" in text and re.search(r"\*\*\s*\(?\s*\d{4,}", text):
        raise CertificateMalformed(where, "string raises to a huge literal power; refusing to evaluate it")


def decode(obj: JSON, where: str = "plan") -> object:
    """Inverse of :func:`encode`; only dpalg attrs classes are instantiated.

    Args:
        obj: the encoded value.
        where: the place of ``obj`` in the certificate, used in error messages.

    Raises:
        CertificateMalformed: for an encoding error, a class outside dpalg or a
            string that could run code when parsed.
        UnknownNodeKind: for a dpalg class this version does not have.
        InvalidArgument: when the rebuilt node's own validation refuses it.
    """
    return _decode(obj, where, None, 0)


_MAX_DEPTH = 64  # as for a whole certificate (dpalg.release._audit.MAX_JSON_DEPTH)


def _decode(obj: JSON, where: str, field: tuple[str, str] | None, depth: int) -> object:
    if depth > _MAX_DEPTH:
        raise CertificateMalformed(where[:200], f"the encoded plan nests more than {_MAX_DEPTH} levels deep")
    if obj is None or isinstance(obj, (bool, int)):
        return obj
    if isinstance(obj, str):
        if field is None or not (field[1] in _NAME_FIELDS or field[0] in _NAME_CLASSES):
            _vet(obj, where)
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, list):
        raise CertificateMalformed(where, "bare lists do not occur in encoded plans")
    if not isinstance(obj, dict):  # pragma: no cover - JSON has no other types
        raise CertificateMalformed(where, f"unexpected {type(obj).__name__}")
    tags = [k for k in obj if k.startswith("$")]
    if len(tags) != 1:
        raise CertificateMalformed(where, f"an encoded value has exactly one $-tag; found {sorted(tags)}")
    tag = tags[0]
    allowed = {"$node": {"fields"}, "$callable": {"repr"}}.get(tag, set())
    extra = set(obj) - {tag} - allowed
    if extra:
        raise CertificateMalformed(where, f"unexpected keys {sorted(extra)} next to {tag}")
    payload = obj[tag]
    if tag == "$float":
        if not isinstance(payload, str):
            raise CertificateMalformed(where, "$float must be a hex string")
        try:
            return float.fromhex(payload)
        except (ValueError, OverflowError):  # "0x1p999999" overflows
            raise CertificateMalformed(where, "$float is not a float.hex() string") from None
    if tag == "$fraction":
        if not isinstance(payload, str) or not re.fullmatch(r"-?\d{1,4000}(/\d{1,4000})?", payload):
            raise CertificateMalformed(where, "$fraction must be a string 'p/q' of decimal integers")
        if payload.endswith("/0") or re.search(r"/0+$", payload):
            raise CertificateMalformed(where, "$fraction has a zero denominator")
        try:
            return to_fraction(payload, owner="certificate", field=where)
        except InvalidArgument as exc:
            raise CertificateMalformed(where, f"$fraction is refused: {exc.constraint}") from None
    if tag == "$date":
        if not isinstance(payload, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", payload):
            raise CertificateMalformed(where, "$date must be a string 'YYYY-MM-DD'")
        try:
            return datetime.date.fromisoformat(payload)
        except ValueError:
            raise CertificateMalformed(where, "$date is not a calendar day") from None
    if tag == "$tuple":
        if not isinstance(payload, list):
            raise CertificateMalformed(where, "$tuple must be a list")
        return tuple(_decode(v, f"{where}[{i}]", field, depth + 1) for i, v in enumerate(payload))
    if tag == "$callable":
        text = obj.get("repr")
        if not isinstance(payload, str) or not (text is None or isinstance(text, str)):
            raise CertificateMalformed(where, "$callable and its repr must be strings")
        if len(payload) > _MAX_STRING or (text is not None and len(text) > _MAX_STRING):
            raise CertificateMalformed(where, f"a recorded callable is longer than {_MAX_STRING} characters")
        return CallableStub(payload, text)
    if tag == "$node":
        return _decode_node(obj, where, depth)
    raise CertificateMalformed(where, f"unknown tag {tag!r}")


def _decode_node(obj: dict[str, JSON], where: str, depth: int) -> object:
    target = obj["$node"]
    if not isinstance(target, str):
        raise CertificateMalformed(where, "$node must be a string 'module:Class'")
    module_name, sep, qualname = target.partition(":")
    if not sep or not (module_name == "dpalg" or module_name.startswith("dpalg.")):
        raise CertificateMalformed(where, f"$node {target!r} must name a class inside the dpalg package")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*", module_name) or not qualname.isidentifier():
        raise CertificateMalformed(where, f"$node {target!r} is not a module path and a class name")
    cls = _NAMED.get(target)
    if cls is None:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise UnknownNodeKind(where, target) from None
        cls = getattr(module, qualname, None)
    if cls is None:
        raise UnknownNodeKind(where, target)
    if not isinstance(cls, type) or not attrs.has(cls):
        raise CertificateMalformed(where, f"$node {target!r} is not a dpalg attrs class")
    raw = obj.get("fields", {})
    if not isinstance(raw, dict):
        raise CertificateMalformed(where, "fields must be an object")
    known = {f.name for f in attrs.fields(cls)}
    unknown = sorted(set(raw) - known)
    missing = sorted(f.name for f in attrs.fields(cls) if f.name not in raw and f.default is attrs.NOTHING)
    if unknown or missing:
        raise CertificateMalformed(where, f"{qualname}: unknown fields {unknown}, missing fields {missing}")
    fields = {k: _decode(v, f"{where}.{qualname}.{k}", (qualname, k), depth + 2) for k, v in raw.items()}
    for f in attrs.fields(cls):  # a field added later whose default for new plans differs from what its absence meant
        if f.name not in raw and ABSENT_IN_CERTIFICATE in f.metadata:
            fields[f.name] = f.metadata[ABSENT_IN_CERTIFICATE]
    instance = cls.__new__(cls)
    init = getattr(instance, "__attrs_init__", None)
    try:
        if init is not None:
            init(**fields)  # runs converters, validators and post-init checks
            return instance
        return cls(**fields)
    except InvalidArgument:
        raise
    except (TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise CertificateMalformed(where, f"{qualname} cannot be rebuilt from its fields ({type(exc).__name__})") from None


def canonical_json(value: JSON) -> bytes:
    """The canonical UTF-8 JSON of ``value``: sorted keys, no spaces, no NaN.

    This is what the certificate digest and signature are computed over.

    Examples:
        >>> canonical_json({"b": 1, "a": [1.5, "x"]})
        b'{"a":[1.5,"x"],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
