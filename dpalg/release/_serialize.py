"""Structured (de)serialisation of plans for certificates.

A plan is encoded field by field from its attrs definition; decoding only ever
instantiates attrs classes defined inside the ``dpalg`` package, so reading a
certificate never runs code named by the certificate. User callables (for
example a sample-and-aggregate block function) are recorded by name only and
decode to a stub that refuses to run: an audit re-derives the cost, which never
depends on them.
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import Union, final

import attrs

from dpalg._errors import InvalidArgument
from dpalg.measures import ZCDP, ApproxDP, PureDP

__all__ = ["decode", "encode", "CallableStub"]

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]


@final
@attrs.frozen
class CallableStub:
    """Stands in for a user callable when a plan is rebuilt from a certificate."""

    name: str

    def __call__(self, *args: object) -> object:
        raise InvalidArgument("CallableStub", "name", self.name, "is a recorded callable; it cannot run during an audit")


def encode(value: object) -> JSON:
    """Encode a node, a measure or a parameter value as JSON-compatible data."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"$float": value.hex()}
    if isinstance(value, Fraction):
        return {"$fraction": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (PureDP, ApproxDP, ZCDP)) or attrs.has(type(value)):
        cls: type = type(value)
        if not cls.__module__.startswith("dpalg"):
            raise InvalidArgument("encode", "node", cls.__name__, "must be a dpalg class")
        fields = {f.name: encode(getattr(value, f.name)) for f in attrs.fields(cls)}
        return {"$node": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if callable(value):
        name = getattr(value, "__qualname__", None) or type(value).__name__
        return {"$callable": f"{getattr(value, '__module__', '?')}:{name}"}
    raise InvalidArgument("encode", "value", type(value).__name__, "cannot be recorded in a certificate")


def decode(obj: JSON) -> object:
    """Inverse of :func:`encode`; only dpalg attrs classes are instantiated."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, list):
        raise InvalidArgument("decode", "obj", "list", "bare lists do not occur in encoded plans")
    if "$float" in obj:
        return float.fromhex(str(obj["$float"]))
    if "$fraction" in obj:
        return Fraction(str(obj["$fraction"]))
    if "$tuple" in obj:
        items = obj["$tuple"]
        if not isinstance(items, list):
            raise InvalidArgument("decode", "$tuple", type(items).__name__, "must be a list")
        return tuple(decode(v) for v in items)
    if "$callable" in obj:
        return CallableStub(str(obj["$callable"]))
    if "$node" in obj:
        target = str(obj["$node"])
        module_name, _, qualname = target.partition(":")
        if not (module_name == "dpalg" or module_name.startswith("dpalg.")) or "." in qualname:
            raise InvalidArgument("decode", "$node", target, "must name a class inside the dpalg package")
        cls = getattr(importlib.import_module(module_name), qualname, None)
        if not isinstance(cls, type) or not attrs.has(cls):
            raise InvalidArgument("decode", "$node", target, "must name a dpalg attrs class")
        raw = obj.get("fields", {})
        if not isinstance(raw, dict):
            raise InvalidArgument("decode", "fields", type(raw).__name__, "must be a dict")
        fields = {k: decode(v) for k, v in raw.items()}
        instance = cls.__new__(cls)
        init = getattr(instance, "__attrs_init__", None)
        if init is not None:
            init(**fields)  # runs converters, validators and post-init checks
            return instance
        return cls(**fields)
    raise InvalidArgument("decode", "obj", sorted(obj), "is not an encoded value")
