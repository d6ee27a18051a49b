"""The ``dpalg`` command line: ``check``, ``audit``, ``demo``, ``budget`` and ``report``.

Exit codes:

* ``dpalg check PLAN --budget B [--strict] [--json]``: 0 within budget, 1 over
  budget (or, with ``--strict``, relying on an unproven symbolic check), 2 bad
  usage (unreadable file, unknown object, a plan builder that crashes,
  malformed budget, measure mismatch);
* ``dpalg audit CERT.json``: 0 confirmed (signed by ``--public-key``) or
  confirmed *cost only* (unsigned: the verdict lists the unverifiable claims),
  1 refuted (the first differing node is named), 2 malformed, tampered, too
  large or too deep, or ``--require-secure`` without a trusted signature;
* ``dpalg audit --empirical PLAN|--demo``: 0 no violation found, 1 a violation
  (ε̂ > ε or δ̂ > δ), 2 bad usage or mechanisms that could not be audited;
* ``dpalg budget LEDGER [--json]``: 0 shown, 2 not a ledger (unreadable, malformed);
* ``dpalg report CERT.json [--html OUT]``: 0 rendered, 2 unreadable or malformed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from fractions import Fraction
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Sequence, cast

from dpalg._errors import DPAlgError, InvalidArgument
from dpalg.graph._accountant import check, derive, fits
from dpalg.graph._derivation import BudgetExceeded, Derivation, measure_to_json
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._tight import TIGHT_RULE
from dpalg._numbers import to_fraction
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import short_measure
from dpalg.release._serialize import JSON
from dpalg.release._shown import shown
from dpalg._commands import UsageError, audit_certificate

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.release._adversary import NeighbourPair
    from dpalg.release._audit import AuditReport
    from dpalg.release._auditor import MechanismAudit

__all__ = ["main", "parse_budget", "load_object"]


def parse_budget(text: str) -> Measure:
    """``"eps=1"`` -> PureDP, ``"eps=1,delta=1e-6"`` -> ApproxDP, ``"rho=0.5"`` -> ZCDP.

    Numbers are parsed exactly as decimals ("1e-6" is exactly 10**-6).

    Examples:
        >>> parse_budget("eps=1,delta=1e-6")
        ApproxDP(1, '1/1000000')
        >>> parse_budget("rho=0.5")
        ZCDP('1/2')
    """
    parts: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("eps", "epsilon", "delta", "rho"):
            raise UsageError(f"--budget: cannot read {item!r}; use eps=..., eps=...,delta=... or rho=...")
        parts["eps" if key == "epsilon" else key] = value.strip()
    try:
        if set(parts) == {"eps"}:
            return PureDP(parts["eps"])
        if set(parts) == {"eps", "delta"}:
            return ApproxDP(parts["eps"], parts["delta"])
        if set(parts) == {"rho"}:
            return ZCDP(parts["rho"])
    except InvalidArgument as exc:
        raise UsageError(f"--budget: {exc}") from None
    raise UsageError(f"--budget: {text!r} must be 'eps=E', 'eps=E,delta=D' or 'rho=R'")


def load_object(spec: str) -> object:
    """Load ``path/to/file.py:NAME`` or ``package.module:NAME``."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise UsageError(f"{spec!r}: expected FILE_OR_MODULE:NAME")
    path = Path(target)
    try:
        if target.endswith(".py") or path.exists():
            if not path.is_file():
                raise UsageError(f"{target}: no such file")
            module_spec = importlib.util.spec_from_file_location(f"_dpalg_user_{path.stem}", path)
            if module_spec is None or module_spec.loader is None:
                raise UsageError(f"{target}: cannot be imported")
            module = importlib.util.module_from_spec(module_spec)
            sys.path.insert(0, str(path.parent.resolve()))
            try:
                module_spec.loader.exec_module(module)
            finally:
                sys.path.pop(0)
        else:
            module = importlib.import_module(target)
    except UsageError:
        raise
    except Exception as exc:  # the user's module failed to import
        raise UsageError(f"{target}: import failed: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, name):
        raise UsageError(f"{target} has no attribute {name!r}")
    return getattr(module, name)


def _call_user(spec: str, fn: Callable[[], object], what: str) -> object:
    """Call the user's builder; any failure is a usage error (exit 2) with a one-line message, never a traceback."""
    try:
        return fn()
    except DPAlgError as exc:
        raise UsageError(f"{spec}: {what} failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code crashed: bad input, not a dpalg failure
        raise UsageError(f"{spec}: {what} failed: {type(exc).__name__}: {_clip(str(exc))}") from None


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + f"... ({len(text)} characters)"


def _load_plan(spec: str) -> AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]:
    plan = load_object(spec)
    if callable(plan) and not isinstance(plan, AbstractMeasurement):
        plan = _call_user(spec, plan, "building the plan")
    if not isinstance(plan, AbstractMeasurement):
        raise UsageError(f"{spec} is a {type(plan).__name__}, not a dpalg plan")
    return plan


def _short(m: object, rounding: Literal["up", "down"]) -> str:
    return short_measure(m, rounding) if isinstance(m, (PureDP, ApproxDP, ZCDP)) else _clip(str(m), 200)


def _check_json(plan: object, budget: Measure, derivation: Derivation, status: str, failing: BudgetExceeded | None) -> str:
    from dpalg.release._certificate import symbolic_check_records

    doc: dict[str, JSON] = {
        "format": "dpalg-check/1",
        "status": status,
        "plan": repr(plan),
        "budget": measure_to_json(budget),
        "cost": measure_to_json(derivation.cost),
        "fits": status != "over_budget" and type(derivation.cost) is type(budget) and fits(derivation.cost, budget),
        "derivation": derivation.to_json(),
        "symbolic_checks": symbolic_check_records(derivation),
        "failing_node": None if failing is None else {
            "path": failing.path, "node": failing.node_repr,
            "required": measure_to_json(failing.required) if isinstance(failing.required, (PureDP, ApproxDP, ZCDP)) else str(failing.required),
            "available": measure_to_json(failing.available) if isinstance(failing.available, (PureDP, ApproxDP, ZCDP)) else str(failing.available),
        },
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)


def parse_assumptions(items: Sequence[str]) -> dict[str, object]:
    """``--assume`` values as :func:`~dpalg.graph._summary.summarise` takes them.

    ``NAME=VALUE`` is plan-wide; ``PATH:NAME=VALUE`` is for the node at ``PATH``.
    A value is an int when it is one, else an exact fraction.

    Examples:
        >>> parse_assumptions(["n=15000", "Compose/1:denominator=500", "Compose/2:distance=3"])
        {'n': 15000, 'Compose/1': {'denominator': 500}, 'Compose/2': {'distance': 3}}
    """
    out: dict[str, object] = {}
    for item in items:
        target, sep, value = item.partition("=")
        path, colon, name = target.rpartition(":")
        if not sep or not name.isidentifier() or (colon and not path):
            raise UsageError(f"--assume {item!r}: expected NAME=VALUE or PATH:NAME=VALUE")
        text = value.strip()
        number: object = int(text) if text.lstrip("-").isdigit() else to_fraction(text, owner="--assume", field=name)
        if colon:
            node = out.setdefault(path, {})
            if not isinstance(node, dict):
                raise UsageError(f"--assume {item!r}: {path!r} is already a plan-wide name")
            node[name] = number
        else:
            out[name] = number
    return out


_SUMMARY_NODES = 200  # larger plans: the summary is one call away (plan.summary()), not a screenful


def _print_summary(args: argparse.Namespace, plan: AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]) -> None:
    """The plan's cost/noise/accuracy table (docs/accuracy.md), after the derivation."""
    from dpalg.graph._summary import PlanSummary, summarise

    alpha = _call_user(args.plan, lambda: to_fraction(args.alpha, owner="--alpha", field="alpha"), "reading --alpha")
    assume = parse_assumptions(args.assume)
    summary = cast(PlanSummary, _call_user(args.plan, lambda: summarise(plan, cast(Fraction, alpha), assume=assume), "summarising the plan"))
    rows = summary.rows
    print()
    if len(rows) > _SUMMARY_NODES:
        print(f"summary: {len(rows)} nodes (more than {_SUMMARY_NODES}); see plan.summary() in Python")
    else:
        print(summary)
    print()


def _cmd_check(args: argparse.Namespace) -> int:
    from dpalg.release._certificate import symbolic_check_records

    plan = _load_plan(args.plan)
    budget = parse_budget(args.budget)
    derivation = cast(Derivation, _call_user(args.plan, lambda: derive(plan), "deriving the plan's cost"))
    if type(derivation.cost) is not type(budget):
        raise UsageError(
            f"the plan's cost is {type(derivation.cost).__name__} but the budget is {type(budget).__name__}; "
            "wrap the plan in an explicit conversion node (PureToApprox, PureToZCDP, ZCDPToApprox)"
        )
    checks = [c for c in symbolic_check_records(derivation) if isinstance(c, dict) and c["status"] in ("unproven", "refuted")]
    failing: BudgetExceeded | None = None
    try:
        derivation = check(plan, budget)  # the sum, or the tighter rule that certified the plan (dpalg.graph._tight)
    except BudgetExceeded as exc:
        failing = exc
    status = "over_budget" if failing is not None else ("unproven" if checks and args.strict else "ok")
    if args.json:
        print(_check_json(plan, budget, derivation, status, failing))
        return 0 if status == "ok" else 1
    print(derivation.render())
    for c in checks:
        print(f"{'STRICT: refusing' if args.strict else 'WARNING:'} {c['status']} symbolic check at {c['path']}: {c['detail']}")
    if failing is not None:
        print(f"OVER BUDGET: {failing}")
        print(f"failing node: {failing.path}\n  {failing.node_repr}\n  needs {_short(failing.required, 'up')}; available {_short(failing.available, 'down')}")
        return 1
    if status == "unproven":
        print("REFUSED (--strict): the plan relies on symbolic checks sympy could not prove")
        return 1
    _print_summary(args, plan)
    rule = dict(derivation.inputs).get("rule") if derivation.rule.startswith(TIGHT_RULE) else None
    how = "" if rule is None else f" (certified by {rule} composition; the sum is {short_measure(derivation.children[0].cost, 'up')})"
    print(f"OK: total {short_measure(derivation.cost, 'up')} fits within {short_measure(budget, 'down')}{how}")
    return 0


def _read_key(text: str) -> bytes:
    path = Path(text)
    try:
        if path.is_file():
            with path.open("rb") as handle:  # a key file holds 64 hex digits: never read more than a little
                raw = handle.read(4096).decode("ascii", "replace").strip()
        else:
            raw = text.strip()
    except OSError as exc:
        raise UsageError(f"--public-key: {exc}") from None
    try:
        key = bytes.fromhex(raw)
    except ValueError:
        raise UsageError("--public-key: expected 64 hex digits (or a file holding them)") from None
    if len(key) != 32:
        raise UsageError("--public-key: an Ed25519 public key is 32 bytes (64 hex digits)")
    return key


def _cmd_audit(args: argparse.Namespace) -> int:
    if args.empirical or args.demo:
        return _cmd_audit_empirical(args)
    if args.target is None:
        raise UsageError("audit: give a certificate file (or --empirical PLAN)")
    from dpalg.release._audit import MAX_CERTIFICATE_BYTES, parse_certificate
    from dpalg.release._audit import audit_certificate as _audit
    from dpalg.release._serialize import CertificateMalformed

    key = _read_key(args.public_key) if args.public_key else None
    path = Path(args.target)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CERTIFICATE_BYTES + 1)  # never more than the limit, whatever the file's size
    except OSError as exc:
        raise UsageError(f"{args.target}: {exc}") from None
    try:
        cert = parse_certificate(data)
    except CertificateMalformed as exc:
        return _audit_output(args, None, f"MALFORMED: {args.target}: {exc.problem}")
    if not isinstance(cert, dict):
        return _audit_output(args, None, f"MALFORMED: {args.target} is not a certificate object")
    report = _audit(cert, strict=args.strict, require_secure=args.require_secure, public_key=key)
    return _audit_output(args, report, None)


def _audit_output(args: argparse.Namespace, report: AuditReport | None, malformed: str | None) -> int:
    """Print an audit report (or a document that could not be read) as text or ``--json``; the exit code."""
    if report is None:
        from dpalg.release._audit import AuditReport as _Report

        report = _Report("malformed", (str(malformed),))
    # Every line may quote the certificate, which anyone can write: non-printable characters are
    # escaped (text) or written as \\uXXXX (JSON, ensure_ascii), so no claimed string can move the
    # cursor, erase or reorder what the audit prints.
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=True))
        return report.exit_code
    for warning in report.warnings:
        print(shown(f"WARNING: {warning}", None))
    for line in report.findings:
        print(shown(line, None))
    print(shown(report.verdict, None))
    return report.exit_code


def _neighbour_pairs(spec: str) -> list[NeighbourPair]:
    from dpalg.release._adversary import NeighbourPair

    obj = load_object(spec)
    if callable(obj):
        obj = _call_user(spec, obj, "building the neighbour pairs")
    if isinstance(obj, NeighbourPair):
        return [obj]
    if isinstance(obj, tuple) and len(obj) == 2 and not isinstance(obj[0], (tuple, NeighbourPair)):
        obj = [obj]
    if not isinstance(obj, (list, tuple)) or not obj:
        raise UsageError(f"--neighbours {spec}: expected a pair (x, x'), a list of pairs or of NeighbourPair")
    out: list[NeighbourPair] = []
    for i, item in enumerate(obj):
        if isinstance(item, NeighbourPair):
            out.append(item)
        elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
            label = f"{spec}[{i}]"
            if len(item) == 3:
                label, x, y = str(item[0]), item[1], item[2]
            else:
                x, y = item
            out.append(NeighbourPair(label, x, y))
        else:
            raise UsageError(f"--neighbours {spec}: item {i} is not a pair (x, x') or (label, x, x')")
    return out


def _cmd_audit_empirical(args: argparse.Namespace) -> int:
    from dpalg.release._auditor import audit_plan, format_table, plot_mechanism

    if args.demo:
        from dpalg._demo import demo_plan, user_plan

        plans: list[tuple[str, AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]]] = [
            ("demo_plan", demo_plan()), ("user_plan", user_plan()),
        ]
    elif args.target is None:
        raise UsageError("audit --empirical: give PLAN (FILE.py:NAME or module:NAME) or --demo")
    else:
        plans = [(args.target, _load_plan(args.target))]
    pairs = None if args.neighbours in (None, "auto") else _neighbour_pairs(args.neighbours)
    if args.trials < 200:
        raise UsageError("--trials must be >= 200")
    if not 0 < args.alpha < 1:
        raise UsageError("--alpha must be in (0, 1)")
    try:
        zdelta = to_fraction(args.zcdp_delta, owner="dpalg audit", field="--zcdp-delta")
    except InvalidArgument:
        raise UsageError("--zcdp-delta must be a number in (0, 1)") from None
    if not 0 < zdelta < 1:
        raise UsageError("--zcdp-delta must be in (0, 1)")
    progress: bool | None = False if args.no_progress else (None if sys.stderr.isatty() else False)
    audits: list[MechanismAudit] = []
    for name, plan in plans:
        print(f"== empirical audit of {name}: {args.trials} runs per dataset and pair, alpha={args.alpha} "
              f"(split over mechanisms and pairs); {'given' if pairs else 'dpalg-derived'} neighbours ==", flush=True)
        found = audit_plan(plan, pairs, trials=args.trials, alpha=args.alpha / len(plans), rng=args.seed, zcdp_delta=zdelta, progress=progress)
        print(format_table(found), flush=True)
        audits.extend(found)
    if args.plot:
        for i, a in enumerate(audits):
            path = plot_mechanism(a, args.plot, i)
            if path is not None:
                print(f"plot: {path}")
    if args.seed is not None:
        print("note: --seed makes the audit reproducible (the auditor's randomness is not a release)")
    violations = [a for a in audits if a.violation]
    skipped = [a for a in audits if a.skipped is not None]
    for a in violations:
        print(f"VIOLATION: {a.label}: eps_hat={a.epsilon_lower:.4g} > eps={a.epsilon:.4g} or delta_hat={a.delta_lower:.3g} > delta={a.delta:.3g}")
    if violations:
        return 1
    if skipped:
        print(f"INCONCLUSIVE: {len(skipped)} mechanism(s) could not be audited (give --neighbours)")
        return 2
    print("OK: eps_hat <= eps (and delta_hat <= delta) for every mechanism; an empirical audit can refute, never prove, privacy")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from dpalg._demo import run_demo

    return run_demo(seed=args.seed, rows=args.rows, out=Path(args.out))


def _cmd_budget(args: argparse.Namespace) -> int:
    from dpalg.graph._ledger import budget_command

    return budget_command(args.path, as_json=args.json)


def _cmd_report(args: argparse.Namespace) -> int:
    from dpalg.release._report import report_command

    return report_command(args.certificate, html=args.html)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpalg", description="differential privacy beyond global sensitivity")
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="prove a plan's cost against a budget (no data touched)")
    p_check.add_argument("plan", help="FILE.py:NAME or package.module:NAME (a plan, or a function returning one)")
    p_check.add_argument("--budget", required=True, help='"eps=1", "eps=1,delta=1e-6" or "rho=0.5"')
    p_check.add_argument("--strict", action="store_true", help="refuse (exit 1) a plan relying on an unproven symbolic check")
    p_check.add_argument("--json", action="store_true", help="print the derivation as JSON (machine-readable, for CI)")
    p_check.add_argument("--alpha", default="0.05", help="failure probability of the accuracy column (default 0.05)")
    p_check.add_argument(
        "--assume", action="append", default=[], metavar="[PATH:]NAME=VALUE",
        help="a public assumption for conditional accuracy statements, e.g. n=15000 (every node that needs n) "
        "or Compose/1:denominator=500 (one node); repeatable",
    )
    p_check.set_defaults(func=_cmd_check)
    p_audit = sub.add_parser(
        "audit", help="re-derive a certificate's claim, or audit mechanisms empirically",
        description="dpalg audit CERT.json: 0 confirmed (or, unsigned, confirmed cost only: the verdict lists the unverifiable claims), "
        "1 refuted, 2 malformed/tampered (or --require-secure without a trusted signature). "
        "dpalg audit --empirical PLAN [--neighbours SPEC] or --empirical --demo: 0 no violation, 1 violation, 2 usage/inconclusive.",
    )
    p_audit.add_argument("target", nargs="?", help="certificate JSON file; with --empirical: FILE.py:NAME of a plan or mechanism")
    p_audit.add_argument("--strict", action="store_true", help="refute certificates relying on unproven symbolic checks")
    p_audit.add_argument(
        "--require-secure", action="store_true",
        help="refute releases made with seeded (insecure) randomness; needs a valid signature by --public-key (exit 2 without one)",
    )
    p_audit.add_argument("--public-key", help="require an Ed25519 signature by this key (64 hex digits, or a file)")
    p_audit.add_argument("--json", action="store_true", help="machine-readable report (certificate audits)")
    p_audit.add_argument("--empirical", action="store_true", help="run the empirical auditor instead (lower-bounds eps)")
    p_audit.add_argument("--demo", action="store_true", help="with --empirical: audit every mechanism of the demo's plans")
    p_audit.add_argument("--neighbours", help="'auto' (default: dpalg derives adversarial pairs) or FILE.py:NAME of (x, x') pairs")
    p_audit.add_argument("--trials", type=int, default=10_000, help="runs per dataset and pair (default 10000)")
    p_audit.add_argument("--alpha", type=float, default=0.01, help="all bounds hold jointly with probability 1 - alpha")
    p_audit.add_argument("--zcdp-delta", default="1e-6", help="delta at which zCDP claims are converted (default 1e-6)")
    p_audit.add_argument("--seed", type=int, default=None, help="seed the auditor's runs (reproducible audits)")
    p_audit.add_argument("--plot", metavar="DIR", help="write one PNG per mechanism: both output histograms and the event")
    p_audit.add_argument("--no-progress", action="store_true", help="no progress bars")
    p_audit.set_defaults(func=_cmd_audit)
    p_demo = sub.add_parser("demo", help="run the main job on built-in synthetic data")
    p_demo.add_argument("--seed", type=int, default=None, help="seed for the synthetic data AND the noise (insecure; for reproducible demos)")
    p_demo.add_argument("--rows", type=int, default=100_000, help="rows of synthetic data")
    p_demo.add_argument("--out", default=".", metavar="DIR", help="directory for the certificate (default: the current directory)")
    p_demo.set_defaults(func=_cmd_demo)
    p_budget = sub.add_parser("budget", help="show a budget ledger (Session.open): total, spent, remaining and the history")
    p_budget.add_argument("path", help="the ledger's SQLite file")
    p_budget.add_argument("--json", action="store_true", help="machine-readable output")
    p_budget.set_defaults(func=_cmd_budget)
    p_report = sub.add_parser("report", help="render a certificate for a person (text, or HTML with --html)")
    p_report.add_argument("certificate", help="certificate JSON file")
    p_report.add_argument("--html", metavar="OUT", help="write a self-contained HTML report to OUT")
    p_report.set_defaults(func=_cmd_report)
    return parser


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of a closed pipe raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (captured, replaced): nothing to silence
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpalg`` console script."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    try:
        result: int = args.func(args)
    except BrokenPipeError:  # the reader went away (``dpalg budget --json | head``): stop quietly, as a filter does
        _silence_stdout()
        return 1
    except UsageError as exc:
        print(f"dpalg: error: {exc}", file=sys.stderr)
        return 2
    except DPAlgError as exc:  # InvalidArgument, Unsupported, ...: bad input, never a traceback
        print(f"dpalg: error: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
