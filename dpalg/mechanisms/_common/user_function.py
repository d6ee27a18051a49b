"""User functions inside a release: tried at construction, total at release.

"Releases are total" (docs/architecture.md, the invariants): a user function (a sample-and-aggregate block
function, a :class:`~dpalg.mechanisms.BoundedLS` value or bound function) is
arbitrary Python code that may fail on some data and not on its neighbour. An
exception, a warning or a non-numeric result after the charge would then be an
output outside the mechanism's proof. So:

* **at construction** the function is called on a small *public* synthetic
  input (:func:`trial_dataset`, :data:`TRIAL_VALUES`); if it raises, or returns
  something that is not a finite real number, the node is refused with
  :class:`~dpalg.InvalidArgument` naming the function and the exception *type*
  (never a message, never a value). A function rebuilt from a certificate
  (:class:`~dpalg.release.CallableStub`) cannot run and is not tried;
* **at release** every call goes through :func:`call_quietly`: any
  :class:`Exception` (this includes ``RecursionError``, ``MemoryError``,
  ``FloatingPointError`` and dpalg's own errors) becomes :data:`FAILED`, and
  warnings are silenced; the caller maps a failure, or a result that
  :func:`as_real` / :func:`as_exact` rejects, to the mechanism's documented
  fallback. ``KeyboardInterrupt``, ``SystemExit`` and ``GeneratorExit`` (plain
  ``BaseException``) propagate: they stop the process, they are not a result of
  the computation.

The run time of a user function is its own business: a function that fails
early on some data and late on other data, or whose run time depends on the
data, leaks through timing, which dpalg cannot bound (documented in the
mechanism pages).
"""

from __future__ import annotations

import math
import numbers
import threading
import warnings
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Final, final

import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument
from dpalg.data import Dataset

__all__ = [
    "FAILED",
    "TRIAL_VALUES",
    "as_exact",
    "as_real",
    "call_quietly",
    "describe",
    "discover_columns",
    "is_recorded_stub",
    "statistic_value",
    "trial_dataset",
]

#: the public synthetic values every trial column holds (eight small positive numbers)
TRIAL_VALUES: Final = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
_MAX_DISCOVERED = 32  # a function reading more undeclared columns than this is refused


@final
class _Failed:
    """The result of a user call that raised (see :func:`call_quietly`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FAILED"


#: what :func:`call_quietly` returns when the function raised
FAILED: Final = _Failed()

# warnings.catch_warnings swaps the process-wide filter list (CPython < 3.14): entries and
# exits of dpalg's own quiet sections are serialised so that they restore it in order
_QUIET_LOCK = threading.RLock()


class _Quiet:
    """Silence warnings and numpy floating-point reports around user code."""

    def __enter__(self) -> None:
        _QUIET_LOCK.acquire()
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._errstate = np.errstate(all="ignore")
        self._errstate.__enter__()

    def __exit__(self, *exc: object) -> None:
        try:
            self._errstate.__exit__(None, None, None)
            self._warnings.__exit__(None, None, None)
        finally:
            _QUIET_LOCK.release()


def quiet() -> _Quiet:
    """A context in which warnings (Python's and numpy's) are silenced; hold it around a loop of user calls."""
    return _Quiet()


def call_quietly(fn: Callable[[object], object], arg: object) -> object:
    """``fn(arg)``, or :data:`FAILED` if it raised an :class:`Exception`. Call inside :func:`quiet`."""
    try:
        return fn(arg)
    except Exception:  # noqa: BLE001 - arbitrary user code: a failure is mapped to a documented fallback
        return FAILED


def as_real(value: object) -> float | None:
    """``value`` as a float if it is a real number, else ``None``; NaN is ``None``, ``±inf`` is kept.

    Accepted: ``bool``, ``int``, ``float``, ``Fraction``, ``Decimal``, numpy real
    scalars and 0-d real arrays. A real too large for a float becomes ``±inf``
    (never an ``OverflowError``). Strings (even ``"3"``), ``None``, sequences
    and complex numbers are not numbers here.

    Examples:
        >>> as_real(3), as_real(Fraction(1, 4)), as_real("3"), as_real(float("nan"))
        (3.0, 0.25, None, None)
        >>> as_real(10**400)
        inf
    """
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "biuf":
            return None
        value = value[()]
    if isinstance(value, np.generic) and value.dtype.kind not in "biuf":
        return None
    if not isinstance(value, (numbers.Real, Decimal, np.bool_)):
        return None
    try:
        out = float(value)
    except OverflowError:  # an int or Fraction beyond the float range
        out = math.inf if Fraction(value) > 0 else -math.inf  # type: ignore[arg-type]
    except (TypeError, ValueError, ArithmeticError):
        return None
    return None if math.isnan(out) else out


def as_exact(value: object) -> Fraction | None:
    """``value`` as an exact Fraction if it is a *finite* real number, else ``None``.

    Accepts what :func:`as_real` accepts (floats exactly, ints of any size).

    Examples:
        >>> as_exact(Fraction(1, 3)), as_exact(0.5), as_exact(float("inf")), as_exact("1/3")
        (Fraction(1, 3), Fraction(1, 2), None, None)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        value = value[()]
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biuf":
            return None
        value = value.item()
    if isinstance(value, (bool, int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return Fraction(value) if value.is_finite() else None
    if isinstance(value, numbers.Rational):
        try:
            return Fraction(int(value.numerator), int(value.denominator))
        except (TypeError, ValueError, ArithmeticError):
            return None
    return None


def describe(fn: object) -> str:
    """A short public name of a function for messages (its qualified name, never its repr's address)."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return str(name)


def is_recorded_stub(fn: object) -> bool:
    """True for a callable rebuilt from a certificate (it refuses to run; it is never tried)."""
    cls = type(fn)
    return cls.__name__ == "CallableStub" and cls.__module__.startswith("dpalg.release")


def trial_dataset(columns: Sequence[str]) -> Dataset:
    """The public synthetic block: every column in ``columns`` holds :data:`TRIAL_VALUES`."""
    return Dataset({name: np.array(TRIAL_VALUES, dtype=np.float64) for name in columns})


def _missing_column(exc: Exception) -> str | None:
    """The column name when ``exc`` is dpalg's "not a column" error (schema, not data)."""
    if isinstance(exc, InvalidArgument) and exc.owner == "Dataset" and exc.field == "column" and isinstance(exc.value, str):
        return exc.value
    return None


def discover_columns(
    fn: Callable[[Dataset], object], declared: Sequence[str], owner: str, field: str, fixed: Sequence[str] = (),
    *, type_hint: str = "",
) -> tuple[tuple[str, ...], object]:
    """Try ``fn`` on the public trial block; return the columns it read and its result.

    With ``declared`` empty, a column the function asks for and the trial block
    lacks is added and the trial repeated (at most 32 columns): the columns are
    discovered from the function's own requests on public data. With
    ``declared`` given, asking for another column is a failure. ``fixed`` columns
    (e.g. the counts' columns) are always in the trial block. ``type_hint`` is
    appended to the message of a ``TypeError`` or ``AttributeError`` (a function
    that expected another argument type).

    Raises:
        InvalidArgument: naming ``owner``, ``field``, the function and the
            exception type, when the function raises on the trial block.
    """
    columns = list(dict.fromkeys([*fixed, *declared]))
    discovered: list[str] = []
    for _ in range(_MAX_DISCOVERED + 1):
        try:
            with quiet():
                result = fn(trial_dataset(columns))
        except Exception as exc:  # noqa: BLE001 - user code; only its type is shown
            name = _missing_column(exc)
            if name is not None and not declared and name not in columns and len(discovered) < _MAX_DISCOVERED:
                columns.append(name)
                discovered.append(name)
                continue
            hint = f"; it reads column {name!r}, which is not declared" if name is not None and declared else ""
            if isinstance(exc, (TypeError, AttributeError)):
                hint += type_hint
            raise InvalidArgument(
                owner, field, describe(fn),
                f"raised {type(exc).__name__} on the public trial block (columns {columns}, {len(TRIAL_VALUES)} rows "
                f"of small numbers): it must return a finite number there{hint}",
            ) from None  # fmt: skip
        return tuple(declared) if declared else tuple(discovered), result
    raise InvalidArgument(owner, field, describe(fn), f"reads more than {_MAX_DISCOVERED} columns on the trial block")  # pragma: no cover


def refuse_result(owner: str, field: str, fn: object, result: object, *, finite: bool = True) -> None:
    """Refuse a trial result that is not a (finite) real number; the message names its type only."""
    real = as_real(result)
    if real is None or (finite and not math.isfinite(real)):
        what = "a non-finite number" if real is not None or isinstance(result, (float, np.floating)) else f"a {type(result).__name__}"
        raise InvalidArgument(owner, field, describe(fn), f"returned {what} on the public trial block: it must return a finite number there")


def trial_array() -> npt.NDArray[np.float64]:
    """The public synthetic 1-D block of the column form."""
    return np.array(TRIAL_VALUES, dtype=np.float64)


def statistic_value(fn: Callable[[npt.NDArray[np.float64]], object], values: npt.NDArray[np.float64], fallback: float) -> float:
    """f̃(x): ``fn`` of the sorted, read-only values if that is a finite real number, else ``fallback``.

    This is the value of a ``Query.function`` (what a release estimates and what
    an LS_k promise is about). Total: a raise, a warning, NaN, ±inf or a
    non-number all give the public ``fallback``; nothing escapes.

    Examples:
        >>> statistic_value(lambda x: x[0], np.array([3.0, 1.0]), 0.0)
        1.0
        >>> statistic_value(lambda x: 1 / 0, np.array([3.0]), 0.5), statistic_value(np.mean, np.array([]), 0.5)
        (0.5, 0.5)
    """
    block = np.sort(np.asarray(values, dtype=np.float64))  # a copy: fn sees the multiset, never the caller's array
    block.setflags(write=False)
    with quiet():
        result = call_quietly(fn, block)  # type: ignore[arg-type]
        try:  # a user Real subclass's __float__ is user code too
            real = None if result is FAILED else as_real(result)
        except Exception:  # noqa: BLE001 - mapped to the fallback
            real = None
    return real if real is not None and math.isfinite(real) else fallback
