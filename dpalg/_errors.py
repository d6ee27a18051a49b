"""The narrow exception hierarchy of dpalg.

Every error dpalg raises on purpose is a :class:`DPAlgError`. Each one also
subclasses the builtin that fits it, so ``except ValueError`` keeps working.
No message ever contains private data: messages name parameters, node paths and
privacy amounts only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from fractions import Fraction

__all__ = ["BackendError", "DPAlgError", "InsecureRandomnessWarning", "InvalidArgument", "Unsupported", "UncheckedPlan", "register_short_form"]

_T = TypeVar("_T")


class DPAlgError(Exception):
    """Base class of every error dpalg raises deliberately."""


class InsecureRandomnessWarning(UserWarning):
    """A release was made with seeded (predictable) randomness: it is NOT private.

    Issued at run time by every release whose noise came from a seeded source
    (an ``int`` seed, :class:`~dpalg.noise.SeededRandomness` or a numpy
    ``Generator``); the certificate and ``repr(release)`` say the same. Tests
    that seed on purpose can filter it:
    ``warnings.simplefilter("ignore", InsecureRandomnessWarning)``.
    """


class InvalidArgument(DPAlgError, ValueError):
    """A parameter violates its constraint.

    The message names the owner (class or function), the field, the offending
    value and the constraint, e.g. ``Clip: lower=3 must be <= upper=1``.
    """

    def __init__(self, owner: str, field: str, value: object, constraint: str) -> None:
        self.owner = owner
        self.field = field
        self.value = value
        self.constraint = constraint
        super().__init__(f"{owner}: {field}={_short_value(value)} {constraint}")



def name_param(owner: str, field: str, value: object, constraint: str) -> str:
    """``value`` if it is a non-empty ``str`` (a column or id name); else ``InvalidArgument(owner, field, value, constraint)``."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument(owner, field, value, constraint)
    return value


def optional_name_param(owner: str, field: str, value: object, constraint: str) -> str | None:
    """:func:`name_param`, with ``None`` (no name) accepted as itself."""
    return None if value is None else name_param(owner, field, value, constraint)


_LONG = 120

# type -> its short text for messages. This module is the lowest floor: the types that
# want a short form (the privacy measures) register it from above, at their import.
_SHORT_FORMS: dict[type, Callable[[object], str]] = {}


def register_short_form(kind: type[_T], form: Callable[[_T], str]) -> None:
    """Show values of exactly type ``kind`` in error messages as ``form(value)``.

    The measures register their short text (a cost rounded up, see
    :func:`dpalg.measures._display.short_measure`), so that a 400-digit exact
    loss reads as ``ApproxDP(<=2.00001, ...)`` in a message.
    """

    def shown(value: object) -> str:
        assert isinstance(value, kind)  # looked up by exact type
        return form(value)

    _SHORT_FORMS[kind] = shown


def _short_value(value: object) -> str:
    """The offending value's repr for a message, shortened when long.

    A long fraction (a float converted exactly, a 400-digit conversion
    result) is shown to about 12 significant digits, a float likewise, and a
    huge string (a hostile formula, say) by its head and length; the exact
    value stays on :attr:`InvalidArgument.value`.

    Examples:
        >>> _short_value("eps")
        "'eps'"
        >>> _short_value("x" * 500)
        "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (500 characters)"
        >>> from fractions import Fraction
        >>> _short_value(Fraction(0.1))
        '~0.1'
        >>> _short_value(Fraction(2, 3) + Fraction(1, 10**40))
        '~0.666666666667'
        >>> _short_value(0.1 + 0.2)
        '0.3'
        >>> _short_value(Fraction(3, 7))
        'Fraction(3, 7)'
    """
    from fractions import Fraction

    if isinstance(value, Fraction) and value.numerator.bit_length() + value.denominator.bit_length() > 64:
        return f"~{_twelve_digits(value)}"
    if isinstance(value, float):
        return f"{value:.12g}"
    form = _SHORT_FORMS.get(type(value))
    if form is not None:
        return form(value)
    if isinstance(value, str) and len(value) > _LONG:
        return f"{value[:68]!r}... ({len(value)} characters)"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        return f"<{type(value).__name__}>"
    if len(text) > _LONG:
        return text[: _LONG - 3] + f"... ({len(text)} characters)"
    return text


def _twelve_digits(value: Fraction) -> str:
    """``value`` rounded to 12 significant digits (nearest), for messages only."""
    from decimal import Context, Decimal

    bits = value.numerator.bit_length() + value.denominator.bit_length()
    ctx = Context(prec=12, Emax=10**9, Emin=-(10**9))
    try:
        quotient = ctx.divide(Decimal(value.numerator), Decimal(value.denominator))
    except ValueError:  # beyond Python's int-to-str limit: say how big, not what
        return f"<Fraction of {bits} bits>"
    return f"{quotient.normalize(ctx):g}".replace("E", "e")


class Unsupported(DPAlgError, TypeError):
    """The accountant met a node it does not know; unknown nodes are never free."""


class BackendError(DPAlgError, RuntimeError):
    """A data backend (polars, Spark) failed while a release was running, after the charge.

    The message names the backend, what dpalg asked of it and the backend's
    exception *type* only: a backend's own text can quote the data (a failing
    cast names the value it could not convert), so it is withheld, and the
    backend's exception is not chained (neither ``__cause__`` nor
    ``__context__``: a traceback, or ``logging.exception``, would print it).
    The charge is not refunded (docs/architecture.md, the invariants). A failure found before the charge,
    when the input is evaluated, is an :class:`InvalidArgument` instead, and
    costs nothing.
    """


class UncheckedPlan(DPAlgError, RuntimeError):
    """``run`` was called on a plan whose budget check has not passed."""
