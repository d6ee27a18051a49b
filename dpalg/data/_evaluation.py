"""A backend's input evaluated before the charge, and its failures after the charge told without their text.

"Releases are total" (docs/architecture.md, the invariants). A lazy input (a polars LazyFrame, a Spark
DataFrame) is a *plan* until something runs it, and the user's plan can fail on
one value: a strict cast of ``'abc'``, ``str.to_integer``, a Python function that
raises, Spark's ANSI casts. If the first run were after the charge, the release
would raise on x and succeed on x' (x without that row): a deterministic
membership signal, paid for but not private. And the backend's error text quotes
the value (``conversion from `str` to `i64` failed ... ["SECRET-4711"]``).

So the runner asks, before the charge and after the schema check
(:func:`evaluate_input`):

1. that every column the plan reads resolves to one column of the backend
   (a Spark frame with ``v`` and ``V`` under Spark's case-insensitive name
   resolution does not: the source's optional ``name_problem``);
2. that the backend computes those columns and the row count now, once, and
   keeps them for the run (the source's optional ``evaluate``: polars collects the
   read columns into a DataFrame that answers every reduction of the run; Spark
   persists the frame and runs one aggregate that reads every read column). A
   source without ``evaluate`` has each read column converted to numpy.

A failure there is refused with :class:`~dpalg.InvalidArgument`, nothing charged,
naming the columns and the backend's exception *type*: its text is withheld
(it may quote the data), and the backend's exception is not chained: with
``raise ... from None`` Python still keeps it as ``__context__`` (a debugger, or
code walking the chain, would find it), so the error is raised after the
handler has finished, with neither ``__cause__`` nor ``__context__``.

After the charge, :func:`guarded_run` gives every failure of a sourced run
(which the evaluation makes unlikely, but an executor lost, memory, a cache
evicted and recomputed through a non-deterministic function remain) the same
treatment as :class:`~dpalg.BackendError`: the release raises, as any failing
release does (the charge stands: it is never refunded), with the backend and the exception
type only. dpalg's own errors (:class:`~dpalg.DPAlgError`) name no data by
construction and pass unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from dpalg._errors import BackendError, DPAlgError, InvalidArgument
from dpalg.data._dataset import Dataset
from dpalg.data._schema import ColumnUse

__all__ = ["WITHHELD", "evaluate_input", "guarded_run"]

T = TypeVar("T")

#: why a backend's message is never shown (part of every message of this module)
WITHHELD = "its message is withheld: a backend's text may quote the data"


def evaluate_input(data: Dataset, uses: Iterable[tuple[str, ColumnUse]]) -> None:
    """Before the charge: the read columns resolve unambiguously, and the backend computes them (module docstring).

    Args:
        data: the run's dataset; one of numpy columns needs nothing.
        uses: ``(node path, column use)`` of every column the plan reads
            (:func:`dpalg.graph.plan_columns`), after the schema check.

    Raises:
        InvalidArgument: a read column that the backend would resolve to two
            columns (naming both: names are public); or the backend failed to
            compute the input (naming the columns, the backend and the
            exception type, never its text). Nothing is charged.

    Examples:
        >>> from dpalg.data import as_dataset
        >>> evaluate_input(as_dataset({"x": [1.0]}), [("Laplace", ColumnUse("x", "numeric"))])  # numpy: nothing to do
    """
    source = data.source
    if source is None:
        return
    listed = list(uses)
    problem_of = getattr(source, "name_problem", None)
    if callable(problem_of):
        for path, use in listed:
            problem = problem_of(use.name)
            if problem is not None:
                raise InvalidArgument(path, f"{use.role} column", use.name, str(problem))
    names = list(dict.fromkeys(use.name for _, use in listed))
    failure: str | None = None
    try:
        evaluate = getattr(source, "evaluate", None)
        if callable(evaluate):
            evaluate(tuple(names))
        else:  # a source that cannot keep its columns: the numpy conversion, cached by the dataset
            for name in names:
                data.column(name)
            data.n_rows  # noqa: B018 -- the row set may depend on the user's plan too
    except DPAlgError:
        raise
    except Exception as exc:  # noqa: BLE001 -- the user's plan failed in the backend: refused below, without its text
        failure = type(exc).__name__
    if failure is not None:  # raised outside the handler: the backend's exception is neither __cause__ nor __context__
        raise InvalidArgument(
            "Dataset", "columns", names,
            f"could not be computed by the {data.backend.name} backend ({failure}; {WITHHELD}): the input was "
            "evaluated before the charge, and nothing was charged",
        )  # fmt: skip


def guarded_run(data: Dataset, run: Callable[[], T], *, owner: str) -> T:
    """``run()``, after the charge; on a sourced dataset a backend failure becomes a :class:`~dpalg.BackendError` without its text.

    A dataset of numpy columns runs unguarded (no backend: an exception there
    is dpalg's own, and keeps its traceback).

    Examples:
        >>> from dpalg.data import as_dataset
        >>> guarded_run(as_dataset({"x": [1.0]}), lambda: 7, owner="plan.run")
        7
    """
    if data.source is None:
        return run()
    failure: str | None = None
    try:
        return run()
    except DPAlgError:
        raise
    except Exception as exc:  # noqa: BLE001 -- after the charge, a backend's text must not reach the caller
        failure = type(exc).__name__
    raise BackendError(
        f"{owner}: the {data.backend.name} backend failed after the charge ({failure}; {WITHHELD}); "
        "the charge stands (never refunded)"
    )
