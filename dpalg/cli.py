"""The ``dpalg`` command line: ``check``, ``audit`` and ``demo``.

Exit codes: 0 success (within budget / certificate confirmed), 1 failure (over
budget / certificate refuted), 2 bad usage (unreadable file, unknown object,
malformed budget, measure mismatch).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Sequence

from dpalg._errors import BudgetExceeded, DPAlgError, InvalidArgument
from dpalg.graph._accountant import check, derive
from dpalg.graph._node import AbstractMeasurement
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = ["main", "parse_budget", "load_object"]


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


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


def _cmd_check(args: argparse.Namespace) -> int:
    plan = load_object(args.plan)
    if callable(plan) and not isinstance(plan, AbstractMeasurement):
        plan = plan()
    if not isinstance(plan, AbstractMeasurement):
        raise UsageError(f"{args.plan} is a {type(plan).__name__}, not a dpalg plan")
    budget = parse_budget(args.budget)
    derivation = derive(plan)
    print(derivation.render())
    if type(derivation.cost) is not type(budget):
        raise UsageError(
            f"the plan's cost is {type(derivation.cost).__name__} but the budget is {type(budget).__name__}; "
            "wrap the plan in an explicit conversion node (PureToApprox, PureToZCDP, ZCDPToApprox)"
        )
    try:
        check(plan, budget)
    except BudgetExceeded as exc:
        print(f"OVER BUDGET: {exc}")
        print(f"failing node: {exc.path}\n  {exc.node_repr}\n  needs {exc.required!r}; available {exc.available!r}")
        return 1
    print(f"OK: total {derivation.cost!r} fits within {budget!r}")
    return 0


def audit_certificate(cert: dict[str, object]) -> tuple[bool, list[str]]:
    """Re-derive a certificate's claim from its plan alone.

    Returns:
        ``(confirmed, findings)``: confirmed when the re-derived cost equals the
        claimed cost, the derivation matches and the cost fits the budget.
    """
    from dpalg.graph._accountant import fits
    from dpalg.graph._derivation import measure_from_json, measure_to_json
    from dpalg.release._serialize import decode

    findings: list[str] = []
    if cert.get("format") != "dpalg-certificate/1":
        raise UsageError(f"unknown certificate format {cert.get('format')!r}")
    try:
        plan = decode(cert["plan"])  # type: ignore[arg-type]
    except (DPAlgError, KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"the plan cannot be rebuilt: {exc}") from None
    if not isinstance(plan, AbstractMeasurement):
        raise UsageError("the certificate's plan is not a dpalg plan")
    derivation = derive(plan)
    claimed = measure_from_json(cert.get("claimed_cost"))
    budget = measure_from_json(cert.get("budget"))
    ok = True
    if derivation.cost != claimed:
        ok = False
        findings.append(f"REFUTED: re-derived cost {derivation.cost!r} != claimed {claimed!r}")
    else:
        findings.append(f"cost re-derived: {derivation.cost!r} equals the claim")
    if json.dumps(derivation.to_json(), sort_keys=True) != json.dumps(cert.get("derivation"), sort_keys=True):
        ok = False
        findings.append("REFUTED: the recorded derivation differs from the re-derived one")
    if type(claimed) is not type(budget) or not fits(claimed, budget):
        ok = False
        findings.append(f"REFUTED: claimed cost {claimed!r} does not fit the recorded budget {budget!r}")
    else:
        findings.append(f"fits the recorded budget {budget!r}")
    if measure_to_json(derivation.cost) != cert.get("claimed_cost"):
        ok = False
        findings.append("REFUTED: claimed_cost serialisation differs")
    rnd = cert.get("randomness")
    if isinstance(rnd, dict) and not rnd.get("secure", False):
        findings.append(f"WARNING: released with insecure randomness ({rnd.get('kind')})")
    notes = cert.get("symbolic_checks")
    if isinstance(notes, list):
        findings.extend(f"note: {n}" for n in notes)
    return ok, findings


def _cmd_audit(args: argparse.Namespace) -> int:
    try:
        cert = json.loads(Path(args.certificate).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{args.certificate}: {exc}") from None
    if not isinstance(cert, dict):
        raise UsageError(f"{args.certificate}: not a certificate object")
    ok, findings = audit_certificate(cert)
    for line in findings:
        print(line)
    print("CONFIRMED" if ok else "REFUTED")
    return 0 if ok else 1


def _cmd_demo(args: argparse.Namespace) -> int:
    from dpalg._demo import run_demo

    return run_demo(seed=args.seed, rows=args.rows)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpalg", description="differential privacy beyond global sensitivity")
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="prove a plan's cost against a budget (no data touched)")
    p_check.add_argument("plan", help="FILE.py:NAME or package.module:NAME (a plan, or a function returning one)")
    p_check.add_argument("--budget", required=True, help='"eps=1", "eps=1,delta=1e-6" or "rho=0.5"')
    p_check.set_defaults(func=_cmd_check)
    p_audit = sub.add_parser("audit", help="re-derive a release certificate's claim from its plan")
    p_audit.add_argument("certificate", help="certificate JSON file")
    p_audit.set_defaults(func=_cmd_audit)
    p_demo = sub.add_parser("demo", help="run the main job on built-in synthetic data")
    p_demo.add_argument("--seed", type=int, default=None, help="seed for the synthetic data AND the noise (insecure; for reproducible demos)")
    p_demo.add_argument("--rows", type=int, default=100_000, help="rows of synthetic data")
    p_demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpalg`` console script."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    try:
        result: int = args.func(args)
    except UsageError as exc:
        print(f"dpalg: error: {exc}", file=sys.stderr)
        return 2
    except InvalidArgument as exc:
        print(f"dpalg: error: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
