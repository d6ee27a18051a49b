"""The persistent budget ledger behind :meth:`dpalg.Session.open`: an SQLite file.

A session delegates to a ledger (``charge``, ``record_release``, ``totals``,
``history``: the protocol ``dpalg.graph._session.Ledger``); the in-memory one
lives beside the session, this one is shared by threads, processes and restarts
(``docs/ledger.md``). Every charge is one ``BEGIN IMMEDIATE`` transaction (the
write lock, taken *before* the spent total is read) that sums every recorded
cost exactly, checks the budget and inserts one row, so two writers can never
both see the same total. Amounts are exact ``"numerator/denominator"`` text,
never floating point. A connection is opened per call and closed before it
returns: none is shared between threads or inherited by a forked child, and a
deleted ledger file is never silently re-created by a later charge.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Final, Literal, final

import attrs

from dpalg._errors import DPAlgError, InvalidArgument
from dpalg.graph._accountant import add_measures, fits, subtract_measures
from dpalg.graph._derivation import BudgetExceeded, measure_from_json, measure_to_json, strip_addresses
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import decimal_measure as short_measure
from dpalg.measures._measures import exact_sum, zero_like

__all__ = ["FORMAT", "MAX_FAILURE", "LedgerEntry", "LedgerError", "LedgerReport", "budget_command", "failure_text", "now", "over_budget", "plan_digest", "read_ledger", "zero_like"]

FORMAT_VERSION: Final = 1
FORMAT: Final = f"dpalg-ledger/{FORMAT_VERSION}"
APPLICATION_ID: Final = 0x6470616C  # b"dpal": marks the SQLite file as a dpalg ledger
DEFAULT_TIMEOUT: Final = 30.0

# Added to the charges of a ledger made before the column existed (:func:`_add_failure_column`):
# the format stays dpalg-ledger/1, whose older readers select their columns by name and never see it.
_FAILURE_ONCE: Final = (
    "CREATE TRIGGER IF NOT EXISTS failure_recorded_once BEFORE UPDATE OF failure ON charges"
    " WHEN OLD.failure IS NOT NULL OR OLD.certificate_digest IS NOT NULL"
    " BEGIN SELECT RAISE(ABORT, 'dpalg ledger: a failure is recorded once, and never for a released charge'); END"
)

_COMPONENTS: Final = {"PureDP": ("epsilon",), "ApproxDP": ("epsilon", "delta"), "ZCDP": ("rho",)}
_EXACT: Final = re.compile(r"[0-9]{1,4000}/[1-9][0-9]{0,3999}")
_SQLITE_NOTADB: Final = 26

_SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    "CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, pid INTEGER NOT NULL,"
    " label TEXT NOT NULL, plan_digest TEXT, measure TEXT NOT NULL CHECK (measure IN ('PureDP', 'ApproxDP', 'ZCDP')),"
    " epsilon TEXT, delta TEXT, rho TEXT, certificate_digest TEXT, failure TEXT)",
    # Guards against slips (a hand-typed DELETE), not against an adversary, who can drop them.
    "CREATE TRIGGER charges_never_deleted BEFORE DELETE ON charges"
    " BEGIN SELECT RAISE(ABORT, 'dpalg ledger: charges are never deleted (no refunds)'); END",
    "CREATE TRIGGER charges_never_changed BEFORE UPDATE OF id, time, pid, label, plan_digest, measure, epsilon, delta, rho"
    " ON charges BEGIN SELECT RAISE(ABORT, 'dpalg ledger: a recorded charge is never changed'); END",
    "CREATE TRIGGER certificate_recorded_once BEFORE UPDATE OF certificate_digest ON charges"
    " WHEN OLD.certificate_digest IS NOT NULL"
    " BEGIN SELECT RAISE(ABORT, 'dpalg ledger: a certificate digest is recorded once'); END",
    _FAILURE_ONCE,
    "CREATE TRIGGER meta_never_changed BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'dpalg ledger: meta is fixed'); END",
    "CREATE TRIGGER meta_never_deleted BEFORE DELETE ON meta BEGIN SELECT RAISE(ABORT, 'dpalg ledger: meta is fixed'); END",
)


class LedgerError(DPAlgError, RuntimeError):
    """A ledger file cannot be used now: locked too long, unreadable, gone or damaged.

    A charge that raises this was not recorded and nothing was released.
    """


@final
@attrs.frozen
class LedgerEntry:
    """One charge, as the ledger recorded it.

    Attributes:
        id: 1, 2, ... in the order the charges were made.
        time: when (UTC, ISO 8601).
        pid: the process that made the charge.
        label: the plan's root path (``Session.run``) or the label given to ``Session.charge``.
        cost: the exact amount charged.
        plan_digest: SHA-256 (hex) of the plan's address-free repr (the certificate's
            ``plan_repr``), or None for a bare ``Session.charge``.
        certificate_digest: the released certificate's ``digest`` value, or None when
            nothing was released (a bare charge, or a run that raised after its charge).
        failure: why a run failed after its charge, or None (released, still
            running, a bare charge, or a ledger written before failures were
            recorded). ``"environment: ..."`` for a :class:`~dpalg.BackendError`
            (the backend failed: a job aborted, a lost executor, a result over
            ``spark.driver.maxResultSize``), with its message, which names the
            backend and the exception type only; ``"error: <type>"`` for any
            other exception (its type only). Never data. The charge stands either way.
    """

    id: int
    time: str
    pid: int
    label: str
    cost: Measure
    plan_digest: str | None
    certificate_digest: str | None
    failure: str | None = None


#: the longest failure text a ledger keeps (one line of ``dpalg budget``)
MAX_FAILURE: Final = 300


def failure_text(exc: BaseException) -> str:
    """What the ledger records of a run that raised after its charge: never data (:attr:`LedgerEntry.failure`).

    Examples:
        >>> from dpalg import BackendError
        >>> failure_text(BackendError("plan.run: the spark backend failed after the charge (Py4JJavaError)"))
        'environment: plan.run: the spark backend failed after the charge (Py4JJavaError)'
        >>> failure_text(ValueError("the secret row 4711"))
        'error: ValueError'
    """
    from dpalg._errors import BackendError

    if isinstance(exc, BackendError):  # its message names the backend and an exception type only (by construction)
        text = "environment: " + " ".join(str(exc).split())
    else:
        text = f"error: {type(exc).__name__}"
    return text if len(text) <= MAX_FAILURE else text[: MAX_FAILURE - 3] + "..."


def plan_digest(plan: object) -> str:
    """SHA-256 (hex) of ``plan``'s repr with memory addresses removed: the certificate's ``plan_repr``."""
    return hashlib.sha256(strip_addresses(repr(plan)).encode("utf-8")).hexdigest()


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


MAX_LABEL: Final = 200  # characters; a ledger label is one line of ``dpalg budget``


def run_label(label: object) -> str:
    """Validate the ``label`` given to ``Session.run``: a non-empty str of at most
    :data:`MAX_LABEL` printable characters (``dpalg budget`` prints it as one line).

    Examples:
        >>> run_label("weekly means")
        'weekly means'
        >>> run_label("a\\nb")
        Traceback (most recent call last):
        ...
        dpalg._errors.InvalidArgument: Session.run: label='a\\nb' must be a non-empty str of at most 200 printable characters (no control characters)
    """
    if not isinstance(label, str) or not label or len(label) > MAX_LABEL or not label.isprintable():
        shown: object = type(label).__name__ if not isinstance(label, str) else (label if len(label) <= 40 else label[:40] + "...")
        raise InvalidArgument("Session.run", "label", shown, f"must be a non-empty str of at most {MAX_LABEL} printable characters (no control characters)")
    return label


def default_label(plan: object) -> str:
    """A readable ledger label for ``plan``: its kind and, for a composition, its
    children's kinds (named children as ``name=Kind``), at most :data:`MAX_LABEL` characters.

    Examples:
        >>> from dpalg.graph._compose import Compose
        >>> from dpalg.graph._testing import Fixed
        >>> from dpalg import PureDP
        >>> default_label(Compose(Fixed(PureDP(1)), Compose(Fixed(PureDP(1)))))
        'Compose(Fixed, Compose)'
        >>> len(default_label(Compose(*[Fixed(PureDP(1))] * 1000))) <= MAX_LABEL
        True
    """
    kind = type(plan).__name__
    children = getattr(plan, "children", None)
    if not isinstance(children, tuple):
        return kind[:MAX_LABEL]
    names = getattr(plan, "names", ())
    if not isinstance(names, tuple) or len(names) != len(children):
        names = ("",) * len(children)
    parts: list[str] = []
    size = len(kind) + 2
    for name, child in zip(names, children):
        part = f"{name}={type(child).__name__}" if name else type(child).__name__
        if size + len(part) + 2 > MAX_LABEL - 5:
            parts.append("...")
            break
        parts.append(part)
        size += len(part) + 2
    return f"{kind}({', '.join(parts)})"


def over_budget(budget: Measure, spent: Measure, cost: Measure, label: str) -> BudgetExceeded:
    remaining = subtract_measures(budget, spent)
    return BudgetExceeded(
        f"session: {label} needs {short_measure(cost, 'up')}, only {short_measure(remaining, 'down')} remains",
        path=label, node_repr=label, required=cost, available=remaining,
    )


def _text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _fraction(text: object, where: str) -> Fraction:
    if not isinstance(text, str) or not _EXACT.fullmatch(text):
        raise LedgerError(f"{where} is not an exact 'numerator/denominator' text; the ledger was damaged or edited")
    numerator, denominator = text.split("/")
    return Fraction(int(numerator), int(denominator))


def _components(m: Measure) -> tuple[str, str | None, str | None, str | None]:
    if isinstance(m, PureDP):
        return "PureDP", _text(m.epsilon), None, None
    if isinstance(m, ApproxDP):
        return "ApproxDP", _text(m.epsilon), _text(m.delta), None
    return "ZCDP", None, None, _text(m.rho)


def _measure(kind: str, values: list[Fraction], where: str) -> Measure:
    try:
        if kind == "PureDP":
            return PureDP(values[0])
        if kind == "ApproxDP":
            return ApproxDP(values[0], values[1])
        return ZCDP(values[0])
    except InvalidArgument as exc:
        raise LedgerError(f"{where}: {exc}; the ledger was damaged or edited") from None


_ROW: Final = "SELECT id, time, pid, label, plan_digest, measure, epsilon, delta, rho, certificate_digest, {failure} FROM charges ORDER BY id"
_Row = tuple[object, ...]


def _rows(conn: sqlite3.Connection) -> str:
    """The query of every charge; a ledger made before the ``failure`` column reads it as NULL."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(charges)")}
    return _ROW.format(failure="failure" if "failure" in columns else "NULL")


def _add_failure_column(conn: sqlite3.Connection) -> None:
    """Give a ledger made before failures were recorded its ``failure`` column and trigger (additive; once)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(charges)")}
    if "failure" not in columns:
        conn.execute("ALTER TABLE charges ADD COLUMN failure TEXT")
    conn.execute(_FAILURE_ONCE)


def _entry(row: _Row, budget: Measure, where: str) -> LedgerEntry:
    charge_id, time, pid, label, digest, kind, eps, delta, rho, cert, failure = row
    here = f"{where}: charge {charge_id}"
    if kind != type(budget).__name__ or not isinstance(charge_id, int) or not isinstance(pid, int):
        raise LedgerError(f"{here} is not a {type(budget).__name__} charge; the ledger was damaged or edited")
    if not isinstance(time, str) or not isinstance(label, str) or not all(v is None or isinstance(v, str) for v in (digest, cert, failure)):
        raise LedgerError(f"{here} has a field of the wrong type; the ledger was damaged or edited")
    texts = {"epsilon": eps, "delta": delta, "rho": rho}
    names = _COMPONENTS[kind]
    if any(texts[name] is not None for name in texts if name not in names):
        raise LedgerError(f"{here} has amounts a {kind} does not have; the ledger was damaged or edited")
    cost = _measure(kind, [_fraction(texts[name], f"{here}: {name}") for name in names], here)
    plan = digest if isinstance(digest, str) else None
    certificate = cert if isinstance(cert, str) else None
    return LedgerEntry(charge_id, time, pid, label, cost, plan, certificate, failure if isinstance(failure, str) else None)


def _spent(entries: tuple[LedgerEntry, ...] | list[LedgerEntry], budget: Measure, where: str) -> Measure:
    """The exact sum of the recorded costs (one exact integer sum per component)."""
    if not entries:
        return zero_like(budget)
    kind = type(budget).__name__
    values = [exact_sum([getattr(e.cost, name) for e in entries]) for name in _COMPONENTS[kind]]
    spent = _measure(kind, values, where)
    if not fits(spent, budget):
        raise LedgerError(f"{where}: the recorded charges exceed the ledger's budget; the ledger was damaged or edited")
    return spent


def _not_a_ledger(path: str, why: str) -> InvalidArgument:
    return InvalidArgument("Session.open", "path", path, f"is not a dpalg ledger ({why})")


def _file_kind(conn: sqlite3.Connection, path: str) -> Literal["empty", "ledger"]:
    """Whether the database is a dpalg ledger or empty (fresh); anything else is refused, untouched."""
    # one statement, so one snapshot: read separately, a ledger another process commits in between
    # would show application_id 0 (before) and its tables (after), and look foreign
    application_id, tables = conn.execute(
        "SELECT (SELECT application_id FROM pragma_application_id()), (SELECT count(*) FROM sqlite_master)"
    ).fetchone()  # NOTADB: see _connection
    if application_id == APPLICATION_ID:
        return "ledger"
    if application_id == 0 and tables == 0:
        return "empty"
    raise _not_a_ledger(path, "an SQLite database of another application")


def _read_meta(conn: sqlite3.Connection, path: str) -> tuple[Measure, str]:
    """The ledger's budget and creation time, after checking its format."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"meta", "charges"} <= names:
        raise _not_a_ledger(path, "its tables are missing")
    meta = {str(k): v for k, v in conn.execute("SELECT key, value FROM meta")}
    fmt = meta.get("format")
    match = re.fullmatch(r"dpalg-ledger/([0-9]{1,6})", fmt) if isinstance(fmt, str) else None
    if match is None:
        raise _not_a_ledger(path, "no dpalg-ledger format in its meta table")
    if int(match.group(1)) > FORMAT_VERSION:
        raise InvalidArgument(
            "Session.open", "path", path, f"is a {fmt} ledger, newer than this dpalg reads ({FORMAT}); upgrade dpalg"
        )
    try:
        budget = measure_from_json(json.loads(str(meta.get("budget"))))
    except (ValueError, InvalidArgument):
        raise LedgerError(f"{path}: the ledger's budget is unreadable; the ledger was damaged or edited") from None
    return budget, str(meta.get("created", "?"))


def _initialise(conn: sqlite3.Connection, budget: Measure) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
    meta = [("format", FORMAT), ("budget", json.dumps(measure_to_json(budget), sort_keys=True)), ("created", now())]
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta)


def _try_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (persistent) if it is not yet. Only for concurrency: every charge is
    an IMMEDIATE transaction in any journal mode. Switching needs the file to itself; while another
    connection holds it SQLite may answer busy at once (no busy wait), so a later open retries."""
    try:
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError as exc:
        if not _is_busy(exc):
            raise


def _is_busy(exc: sqlite3.Error) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


@final
class _SQLiteLedger:
    """A ledger in an SQLite file (WAL mode), shared by threads, processes and restarts.

    Holds no connection: each call opens its own and closes it, so the object can
    be used from any thread, after ``fork``, or pickled to a spawned process.
    """

    def __init__(self, path: str, budget: Measure, timeout: float) -> None:
        self.path: str | None = path
        self.budget = budget
        self._file = path
        self._timeout = timeout

    @classmethod
    def open(cls, path: str | os.PathLike[str], budget: Measure, *, timeout: float = DEFAULT_TIMEOUT) -> _SQLiteLedger:
        """Open the ledger at ``path``, creating it with ``budget`` when the file is absent or empty."""
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout < float("inf"):
            raise InvalidArgument("Session.open", "timeout", timeout, "must be a finite number of seconds >= 0")
        full = os.path.abspath(os.fspath(path))
        ledger = cls(full, budget, float(timeout))
        with ledger._connection("rw" if os.path.exists(full) else "rwc") as conn:
            if _file_kind(conn, full) == "empty":
                conn.execute("BEGIN IMMEDIATE")  # the write lock (waits up to the timeout), then check again
                try:
                    if _file_kind(conn, full) == "empty":  # another process may have won the race
                        _initialise(conn, budget)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            _try_wal(conn)
            stored, _ = _read_meta(conn, full)
            if "failure" not in {str(row[1]) for row in conn.execute("PRAGMA table_info(charges)")}:
                conn.execute("BEGIN IMMEDIATE")  # a ledger of an earlier dpalg: the additive column, once
                try:
                    _add_failure_column(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        if stored != budget:
            raise InvalidArgument(
                "Session.open", "budget", budget,
                f"differs from the budget {short_measure(stored, 'down')} the ledger {full} was created with; "
                "a ledger keeps its budget: open it with that budget, or use another file",
            )
        return ledger

    @contextmanager
    def _connection(self, mode: str) -> Iterator[sqlite3.Connection]:
        """A fresh connection (``mode=rw`` never creates the file), closed on exit; sqlite errors become LedgerError."""
        try:
            conn = sqlite3.connect(
                Path(self._file).as_uri() + f"?mode={mode}", uri=True, timeout=self._timeout, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"{self._file}: cannot open the ledger ({exc})") from None
        try:
            conn.execute("PRAGMA synchronous = FULL")  # a committed charge survives a power cut
            yield conn
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) == _SQLITE_NOTADB or "not a database" in str(exc):
                raise _not_a_ledger(self._file, "not an SQLite database") from None
            if _is_busy(exc):
                raise LedgerError(
                    f"{self._file}: the ledger stayed locked by another writer for more than {self._timeout:g} s; "
                    "nothing was charged"
                ) from None
            raise LedgerError(f"{self._file}: {exc}") from None
        finally:
            conn.close()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._connection("rw") as conn:
            conn.execute(begin)
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _entries(self, conn: sqlite3.Connection) -> list[LedgerEntry]:
        return [_entry(row, self.budget, self._file) for row in conn.execute(_rows(conn))]

    def charge(self, cost: Measure, label: str, plan_digest: str | None) -> tuple[Measure, Measure, int]:
        # The write lock is taken first (IMMEDIATE), so the total read below cannot go stale before the insert.
        with self._transaction("BEGIN IMMEDIATE") as conn:
            before = _spent(self._entries(conn), self.budget, self._file)
            after = add_measures(before, cost)
            if not fits(after, self.budget):
                raise over_budget(self.budget, before, cost, label)
            charge_id = self._insert(conn, cost, label, plan_digest)
        return before, after, charge_id

    def _insert(self, conn: sqlite3.Connection, cost: Measure, label: str, plan_digest: str | None) -> int:
        kind, eps, delta, rho = _components(cost)
        cursor = conn.execute(
            "INSERT INTO charges (time, pid, label, plan_digest, measure, epsilon, delta, rho) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (now(), os.getpid(), label, plan_digest, kind, eps, delta, rho),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def record_release(self, charge_id: int, certificate_digest: str) -> None:
        with self._transaction("BEGIN IMMEDIATE") as conn:
            conn.execute(
                "UPDATE charges SET certificate_digest = ? WHERE id = ? AND certificate_digest IS NULL",
                (certificate_digest, charge_id),
            )

    def record_failure(self, charge_id: int, failure: str) -> None:
        with self._transaction("BEGIN IMMEDIATE") as conn:
            conn.execute(
                "UPDATE charges SET failure = ? WHERE id = ? AND failure IS NULL AND certificate_digest IS NULL",
                (failure, charge_id),
            )

    def totals(self) -> tuple[Measure, int]:
        with self._transaction("BEGIN") as conn:
            entries = self._entries(conn)
        return _spent(entries, self.budget, self._file), len(entries)

    def history(self) -> tuple[LedgerEntry, ...]:
        with self._transaction("BEGIN") as conn:
            return tuple(self._entries(conn))


@final
@attrs.frozen
class LedgerReport:
    """What ``dpalg budget`` shows: a ledger read once, read-only."""

    path: str
    created: str
    budget: Measure
    spent: Measure
    entries: tuple[LedgerEntry, ...]

    @property
    def remaining(self) -> Measure:
        """What is left of the budget."""
        return subtract_measures(self.budget, self.spent)


def read_ledger(path: str | os.PathLike[str]) -> LedgerReport:
    """Read a ledger without writing to it and without ever creating ``path``.

    Raises:
        LedgerError: no such file, unreadable, or damaged.
        InvalidArgument: not a dpalg ledger, or of a newer format.
    """
    full = os.path.abspath(os.fspath(path))
    if not os.path.exists(full):
        raise LedgerError(f"{full}: no such file")
    if not os.path.isfile(full):
        raise LedgerError(f"{full}: not a file")
    reader = _SQLiteLedger(full, PureDP(0), DEFAULT_TIMEOUT)
    with reader._connection("ro") as conn:
        if _file_kind(conn, full) == "empty":
            raise _not_a_ledger(full, "an empty file")
        conn.execute("BEGIN")
        budget, created = _read_meta(conn, full)
        entries = tuple(_entry(row, budget, full) for row in conn.execute(_rows(conn)))
        conn.execute("COMMIT")
    return LedgerReport(full, created, budget, _spent(entries, budget, full), entries)


def _shown(text: str) -> str:
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _report_json(report: LedgerReport) -> str:
    shown = {"budget": short_measure(report.budget, "down"), "spent": short_measure(report.spent, "up"),
             "remaining": short_measure(report.remaining, "down")}  # fmt: skip
    charges = [
        {"id": e.id, "time": e.time, "pid": e.pid, "label": e.label, "cost": measure_to_json(e.cost),
         "plan_digest": e.plan_digest, "certificate_digest": e.certificate_digest, "failure": e.failure}  # fmt: skip
        for e in report.entries
    ]
    doc = {"ledger": report.path, "format": FORMAT, "created": report.created, "budget": measure_to_json(report.budget),
           "spent": measure_to_json(report.spent), "remaining": measure_to_json(report.remaining), "shown": shown,
           "charges": charges}  # fmt: skip
    return json.dumps(doc, indent=2, ensure_ascii=False)


def _report_text(report: LedgerReport) -> str:
    lines = [
        f"ledger     {report.path} ({FORMAT}, created {report.created})",
        f"budget     {short_measure(report.budget, 'down')}",
        f"spent      {short_measure(report.spent, 'up')}",
        f"remaining  {short_measure(report.remaining, 'down')}",
        f"charges    {len(report.entries)}",
    ]
    for e in report.entries:
        plan = f"plan {e.plan_digest[:12]}" if e.plan_digest else "plan -"
        cert = f"certificate {e.certificate_digest[:12]}" if e.certificate_digest else "not released"
        if e.failure is not None:
            cert = f"failed after the charge ({_shown(e.failure)})"
        lines.append(f"  #{e.id}  {e.time}  {_shown(e.label)}  {short_measure(e.cost, 'up')}  {plan}  {cert}")
    return "\n".join(lines)


def budget_command(path: str, *, as_json: bool) -> int:
    """``dpalg budget PATH [--json]``: total, spent, remaining and every charge; 0 shown, 2 not a readable ledger."""
    try:
        report = read_ledger(path)
        text = _report_json(report) if as_json else _report_text(report)
    except InvalidArgument as exc:  # not a ledger, or a newer format: say so without the owner prefix
        message = f"{exc.value} {exc.constraint}"
        print(f"dpalg budget: {' '.join(message.split())}", file=sys.stderr)
        return 2
    except (DPAlgError, OSError, sqlite3.Error) as exc:
        message = " ".join(str(exc).split())
        print(f"dpalg budget: {message}", file=sys.stderr)
        return 2
    print(text)
    return 0
