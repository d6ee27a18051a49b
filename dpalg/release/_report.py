"""``dpalg report``: a release certificate rendered for a person, as text or HTML.

A certificate is untrusted input: anyone can write one. So the report

* runs the same audit as ``dpalg audit`` first and shows its verdict at the
  top (``CONFIRMED``, ``CONFIRMED (COST ONLY)``, ``REFUTED``, ``MALFORMED``):
  whatever the rest shows, a tampered or refuted certificate is never
  presented as fine;
* escapes every string taken from the certificate (:func:`html.escape`) and
  replaces control and bidi characters with ``\\uXXXX`` (in the terminal too),
  and clips long strings: a hostile label renders as inert text;
* shows each released value with its (1 − α) error bar, re-derived from the
  plan rebuilt from its parameters (never a claimed bar), rounded to what the
  error and the lattice make meaningful (:mod:`dpalg.graph._readable`);
* shows amounts short (:mod:`dpalg.measures._display`): costs rounded up,
  budgets and what remains rounded down; the exact fractions are in the HTML
  as tooltips and in ``<details>``.

The HTML is one small template (``report.html``, no JavaScript, a
Content-Security-Policy that forbids scripts) filled with :class:`string.Template`.
The command exits 0 when it rendered the document, whatever the verdict (use
``dpalg audit`` as a gate), and 2 when the file is not a certificate.
"""

from __future__ import annotations

import importlib.resources
import math
import string
import sys
from collections.abc import Mapping
from fractions import Fraction
from html import escape
from pathlib import Path
from typing import Literal, final

import attrs

from dpalg._bottom import BOTTOM
from dpalg._errors import DPAlgError
from dpalg.graph._accountant import derive
from dpalg.graph._derivation import measure_from_json
from dpalg.graph._node import AbstractMeasurement
from dpalg.graph._schema import schema_choices
from dpalg.graph._readable import GroupTable, group_tables, value_rows
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.measures._display import decimal_measure as short_measure, decimal_text as short_number
from dpalg.release._audit import _FIELDS, MAX_CERTIFICATE_BYTES, MAX_JSON_DEPTH, audit_certificate, parse_certificate
from dpalg.release._certificate import CERTIFICATE_FORMATS, certificate_digest, library_version, verify_signature
from dpalg.release._serialize import JSON, CertificateMalformed, decode
from dpalg.release._shown import shown

__all__ = ["load_certificate", "render_html", "render_text", "report_command"]

_HEADLINES = {
    "confirmed": "CONFIRMED", "cost_confirmed": "CONFIRMED (COST ONLY)", "refuted": "REFUTED",
    "malformed": "MALFORMED", "unverifiable": "UNVERIFIABLE", "error": "NOT AUDITED",
}  # fmt: skip
_COST_ONLY = (
    "the plan, its derivation and its cost re-derive from the plan alone; no trusted signature covers the rest, so the "
    "value, randomness, budget, session, created and dpalg_version fields are UNVERIFIABLE CLAIMS "
    "(check a signature with: dpalg audit CERT.json --public-key KEY)"
)
_MAX_ROWS = 200  # released values listed one per row before "... more"
_BAR = 40  # characters of a text budget bar


def _clean(text: object, limit: int = 300) -> str:
    """Certificate text made safe to show: clipped, control and bidi characters as ``\\uXXXX``."""
    return shown(text, limit)


def _measure(obj: JSON) -> Measure | None:
    try:
        return measure_from_json(obj)
    except (DPAlgError, KeyError, ValueError, ZeroDivisionError):
        return None


def _components(m: Measure) -> list[tuple[str, Fraction]]:
    match m:
        case PureDP():
            return [("epsilon", m.epsilon)]
        case ApproxDP():
            return [("epsilon", m.epsilon), ("delta", m.delta)]
        case ZCDP():
            return [("rho", m.rho)]


def _exact(m: Measure | None) -> str:
    return "unreadable" if m is None else ", ".join(f"{k} = {v}" for k, v in _components(m))


def _short(m: Measure | None, rounding: Literal["up", "down"]) -> str:
    return "(unreadable measure)" if m is None else short_measure(m, rounding)


@final
@attrs.frozen
class _Node:
    kind: str
    path: str
    rule: str
    cost: str
    exact: str
    repr: str
    inputs: str
    combine: str
    children: tuple[_Node, ...]
    resolved: str = ""  # what the node chose from the public schema (format 2), e.g. "candidates: integers (column 'p' is int)"


@final
@attrs.frozen
class _Bar:
    name: str
    before: Fraction  # share of the budget spent before this release (0 outside a session)
    this: Fraction  # share of this release
    text: str
    exact: str


@final
@attrs.frozen
class _Model:
    status: str
    reason: str
    findings: tuple[str, ...]
    warnings: tuple[str, ...]
    facts: tuple[tuple[str, str, str], ...]  # (label, shown, exact or "")
    secure: bool
    randomness: str
    bars: tuple[_Bar, ...]
    budget_lines: tuple[str, ...]
    checks: tuple[tuple[str, str, str], ...]  # (status, path, detail)
    values: tuple[tuple[str, str, str], ...]  # (path, value ± error, confidence)
    tree: _Node | None
    groups: tuple[GroupTable, ...] = ()  # every GroupBy's release as a table (key x aggregate)
    curve: tuple[tuple[float, float], ...] = ()  # (delta, eps) certified for the rebuilt plan, eps rounded up

    @property
    def passed(self) -> bool:
        return self.status in ("confirmed", "cost_confirmed")


def _node(obj: JSON, resolved: Mapping[str, str], depth: int = 0) -> _Node:
    d = obj if isinstance(obj, dict) else {}
    cost = _measure(d.get("cost"))
    text = d.get("node")
    kind = text.split("(", 1)[0] if isinstance(text, str) and text.split("(", 1)[0] else "?"
    inputs = d.get("inputs")
    pairs = [f"{p[0]}={p[1]}" for p in inputs if isinstance(p, list) and len(p) == 2] if isinstance(inputs, list) else []
    raw = d.get("children")
    kids = raw if isinstance(raw, list) and depth < MAX_JSON_DEPTH else []
    return _Node(
        _clean(kind, 60), _clean(d.get("path", "?"), 200), _clean(d.get("rule", "?"), 200), _short(cost, "up"), _exact(cost),
        _clean(text if text is not None else "?", 1000), _clean(", ".join(pairs), 500), _clean(d.get("combine", "?"), 20),
        tuple(_node(c, resolved, depth + 1) for c in kids),
        _clean(resolved.get(str(d.get("path")), "") if d.get("combine") == "leaf" else "", 300),
    )  # fmt: skip


def _resolved(cert: Mapping[str, JSON], plan: object) -> dict[str, str]:
    """path -> what the node chose from the recorded schema, for the plan tree (format 2; empty for format 1).

    The recorded choice is shown with its reason re-derived from the rebuilt
    ``plan`` and the recorded schema; a recorded choice that does not re-derive
    is shown as such (the audit refutes it).
    """
    recorded, schema = cert.get("resolved"), cert.get("schema")
    if not isinstance(recorded, list):
        return {}
    derived = {}
    if isinstance(plan, AbstractMeasurement) and isinstance(schema, list):
        kinds = {str(e.get("column")): str(e.get("type")) for e in schema if isinstance(e, dict)}
        try:
            derived = dict(schema_choices(derive(plan), kinds))
        except Exception:  # noqa: BLE001 - a schema that misses a column, a plan that cannot be derived: the audit says why
            derived = {}
    out: dict[str, str] = {}
    for entry in recorded:
        if not isinstance(entry, dict):
            continue
        path, choice = str(entry.get("path")), str(entry.get("choice"))
        again = derived.get(path)
        if again is not None and again.choice == choice:
            out[path] = again.describe()
        elif again is not None:
            out[path] = f"{again.field}: {choice} (recorded, but the plan and the recorded schema give {again.choice})"
        else:
            out[path] = f"resolved: {choice} (recorded; not re-derived)"
    return out


def _schema_text(schema: JSON) -> str:
    """The recorded schema in one line: ``'price' int, 'city' str``."""
    if not isinstance(schema, list):
        return "not recorded (format 1)"
    return ", ".join(f"{e.get('column')!r} {e.get('type')}" for e in schema if isinstance(e, dict)) or "no column"


def _python(v: JSON, depth: int = 0) -> object:
    """A certificate's value as Python: ⊥ for ``{"$bottom": true}``, floats from ``{"$float": hex}``."""
    if isinstance(v, dict) and v == {"$bottom": True}:
        return BOTTOM
    if isinstance(v, dict) and set(v) == {"$float"} and isinstance(v["$float"], str):
        try:
            return float.fromhex(v["$float"])
        except (ValueError, OverflowError):
            return v["$float"]
    if depth > MAX_JSON_DEPTH:
        return "…"
    if isinstance(v, list):
        return [_python(x, depth + 1) for x in v]
    if isinstance(v, dict) and set(v) == {"$pairs"} and isinstance(v["$pairs"], list):
        pairs = [p for p in v["$pairs"] if isinstance(p, list) and len(p) == 2]
        return {_key(_python(k, depth + 1)): _python(x, depth + 1) for k, x in pairs}
    if isinstance(v, dict):
        return {k: _python(x, depth + 1) for k, x in v.items()}
    return v


def _key(value: object) -> object:
    """A released key read back from JSON: a list (a tuple key) as a tuple, anything unhashable as its text."""
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _rebuilt(cert: Mapping[str, JSON]) -> object:
    """The plan rebuilt from its parameters (:func:`decode`, as the audit does), or ``None`` when it cannot be."""
    try:
        return decode(cert.get("plan"))
    except Exception:  # noqa: BLE001 - a hostile plan: no error bars, the value is still shown (and the audit says why)
        return None


def _values(cert: Mapping[str, JSON], plan: object) -> tuple[tuple[str, str, str], ...]:
    """One row per released part (path, value ± error, confidence), the error bars re-derived from the rebuilt ``plan``.

    A plan that could not be rebuilt (``None``) gives one row with the value and
    no error bar. Nothing the certificate says about accuracy is read.
    """
    try:
        rows = value_rows(plan, _python(cert.get("value")), limit=_MAX_ROWS)
    except Exception:  # noqa: BLE001 - a value that does not fit its plan's shape: shown alone
        rows = value_rows(None, _python(cert.get("value")))
    return tuple((_clean(r.path, 200), _clean(r.text, 340), r.confidence) for r in rows)


def _curve(plan: object) -> tuple[tuple[float, float], ...]:
    """The rebuilt plan's certified privacy curve at δ = 10⁻², 10⁻⁴, … 10⁻¹² (``plan.privacy_curve``; ε rounded up)."""
    if not isinstance(plan, AbstractMeasurement):
        return ()
    try:
        return tuple((float(d), float(e)) for d, e in plan.privacy_curve(Fraction(1, 10**i) for i in range(2, 13, 2)))
    except Exception:  # noqa: BLE001 - a plan whose curve cannot be formed: no plot (the audit says why it fails, if it does)
        return ()


def _curve_bars(points: tuple[tuple[float, float], ...]) -> str:
    """The curve as rows of bars (ε at each δ), drawn with CSS: no SVG, image or script in the report."""
    top = max((e for _, e in points), default=0.0) or 1.0
    return "".join(
        f'<div class="curve-row"><span class="at">δ = {d:.0e}</span><div class="curve-bar">'
        f'<span style="width: {min(100.0, 100 * e / top):.2f}%"></span></div>'
        f'<span class="amount">ε ≤ {e:.4g}</span></div>'
        for d, e in points
    )


def _groups(cert: Mapping[str, JSON], plan: object) -> tuple[GroupTable, ...]:
    """Each GroupBy's release as a table, error bars re-derived from the rebuilt ``plan`` (none when it is ``None``)."""
    if plan is None:
        return ()
    try:
        tables = group_tables(plan, _python(cert.get("value")), limit=_MAX_ROWS)
    except Exception:  # noqa: BLE001 - a value of another shape: the flat rows still show the value
        return ()
    return tuple(
        GroupTable(_clean(t.path, 200), tuple(_clean(n, 100) for n in t.names),
                   tuple((_clean(k, 200), tuple(_clean(c, 200) for c in cells)) for k, cells in t.rows), t.confidence)
        for t in tables
    )  # fmt: skip


def _pct(share: Fraction) -> str:
    """A share of the budget as a percentage with 2 decimals, rounded up (a spend is never understated)."""
    n = math.ceil(min(max(share, Fraction(0)), Fraction(1)) * 10000)
    return f"{n // 100}.{n % 100:02d}"


def _share(x: Fraction, total: Fraction) -> Fraction:
    return (Fraction(0) if x == 0 else Fraction(1)) if total == 0 else x / total


def _budget(cost: Measure | None, budget: Measure | None, session: JSON) -> tuple[tuple[_Bar, ...], tuple[str, ...]]:
    if cost is None or budget is None or type(cost) is not type(budget):
        return (), ("cost and budget cannot be compared (unreadable, or different measures)",)
    lines = [f"this release costs {short_measure(cost, 'up')} of the budget {short_measure(budget, 'down')}"]
    before: Measure | None = None
    if isinstance(session, dict):
        before, after = _measure(session.get("spent_before")), _measure(session.get("spent_after"))
        if before is None or after is None or type(before) is not type(cost):
            lines.append("session: spend unreadable")
            before = None
        else:
            lines.append(f"session: spent {short_measure(before, 'up')} before this release, {short_measure(after, 'up')} after")
    bars: list[_Bar] = []
    spent = dict(_components(before)) if before is not None else {}
    for (name, c), (_, b) in zip(_components(cost), _components(budget)):
        s = spent.get(name, Fraction(0))
        used = s + c
        text = (f"{short_number(c, 'up')} of {short_number(b, 'down')}" if before is None else
                f"{short_number(s, 'up')} + {short_number(c, 'up')} = {short_number(used, 'up')} of {short_number(b, 'down')}")
        over = " OVER BUDGET" if used > b else ""
        text += f" ({_pct(_share(used, b))}%{over}); remaining {short_number(max(b - used, Fraction(0)), 'down')}"
        exact = f"{name}: before {s}, this release {c}, budget {b}" if before is not None else f"{name}: cost {c}, budget {b}"
        bars.append(_Bar(name, _share(s, b), _share(c, b), text, exact))
    return tuple(bars), tuple(lines)


def _randomness(rnd: JSON) -> tuple[bool, str]:
    """Fail closed: secure only when recorded as a bool ``True`` and the kind does not say otherwise."""
    if not isinstance(rnd, dict) or not isinstance(rnd.get("kind"), str):
        return False, "unreadable randomness record"
    kind = str(rnd["kind"])
    return rnd.get("secure") is True and "NOT SECURE" not in kind.upper(), _clean(kind, 200)


def _audit(cert: Mapping[str, JSON]) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    try:
        report = audit_certificate(cert)
    except Exception as exc:  # noqa: BLE001 - a hostile document must not crash the report; it is then not confirmed
        return "error", f"the audit failed ({type(exc).__name__}): nothing in this certificate is confirmed", (), ()
    findings = tuple(_clean(f, 600) for f in report.findings)
    reasons = [f for f in findings if f.startswith(("REFUTED", "MALFORMED", "UNVERIFIABLE"))]
    if report.status == "cost_confirmed":
        reason = _COST_ONLY
    elif report.status == "confirmed":
        reason = report.verdict
    else:
        reason = reasons[0] if reasons else report.verdict
    return report.status, reason, findings, tuple(_clean(w, 600) for w in report.warnings)


def _model(cert: Mapping[str, JSON]) -> _Model:
    status, reason, findings, warnings = _audit(cert)
    passed = status in ("confirmed", "cost_confirmed")
    secure, kind = _randomness(cert.get("randomness"))
    cost, budget = _measure(cert.get("claimed_cost")), _measure(cert.get("budget"))
    bars, budget_lines = _budget(cost, budget, cert.get("session"))
    digest = cert.get("digest")
    try:
        matches = isinstance(digest, dict) and str(digest.get("value", "")).lower() == certificate_digest(cert)
    except (TypeError, ValueError):  # not canonical JSON (a NaN, a non-JSON value): it cannot match
        matches = False
    digest_text = f"{digest.get('algorithm')} {digest.get('value')}" if isinstance(digest, dict) else "absent"
    sig = verify_signature(cert) if isinstance(cert.get("signature"), dict) else None
    signature = "absent (unsigned)" if sig is None else (
        f"present: {sig.status}" + (" (not checked against a trusted key: dpalg audit --public-key KEY)" if sig.status == "valid" else "")
        + (f"; key {sig.public_key}" if sig.public_key else "")
    )  # fmt: skip
    nb = cert.get("neighbouring")
    version = _clean(cert.get("dpalg_version", "?"), 40)
    facts = (
        ("randomness", f"secure, as claimed: {kind}" if secure and passed else f"NOT SECURE: {kind}" + (
            "" if not secure else " (claimed secure, but the audit did not pass)"), ""),
        ("cost", _short(cost, "up"), _exact(cost)),
        ("budget", _short(budget, "down"), _exact(budget)),
        ("privacy unit", _clean(nb.get("description", "?") if isinstance(nb, dict) else "?", 200), ""),
        ("format", _clean(cert.get("format", "?"), 60), ""),
        ("schema", _clean(_schema_text(cert.get("schema")), 300) + ("" if "schema" not in cert else " (as claimed)"), ""),
        ("dpalg version", version + ("" if version == library_version() else f" (this dpalg: {library_version()})"), ""),
        ("created", _clean(cert.get("created", "?"), 60), ""),
        ("digest", _clean(digest_text, 120) + (" (matches the content)" if matches else " (DOES NOT MATCH the content: tampered)"), ""),
        ("signature", _clean(signature, 300), ""),
    )  # fmt: skip
    raw_checks = cert.get("symbolic_checks")
    checks = tuple(
        (str(c["status"]) if c.get("status") in ("proven", "unproven", "refuted", "note") else "?",
         _clean(c.get("path", "?"), 200), _clean(c.get("detail", "?"), 600))
        for c in (raw_checks if isinstance(raw_checks, list) else []) if isinstance(c, dict)
    )  # fmt: skip
    plan = _rebuilt(cert)  # once, for the value rows and the group tables
    values = _values(cert, plan)
    tree = _node(cert["derivation"], _resolved(cert, plan)) if isinstance(cert.get("derivation"), dict) else None
    return _Model(
        status, _clean(reason, 800), findings, warnings, facts, secure and passed, kind, bars, budget_lines, checks, values, tree, _groups(cert, plan), _curve(plan),
    )


def _group_html(table: GroupTable) -> str:
    head = "".join(f"<th>{escape(n)}</th>" for n in ("key", *table.names))
    body = "".join(
        "<tr>" + f"<td><code>{escape(k)}</code></td>" + "".join(f'<td class="value">{escape(c)}</td>' for c in cells) + "</tr>"
        for k, cells in table.rows
    )
    note = f" ({escape(table.confidence)})" if table.confidence else ""
    return f'<h3>Per group: <code>{escape(table.path)}</code>{note}</h3><table class="values groups"><tr>{head}</tr>{body}</table>'


def _insecure(m: _Model) -> str:
    if m.passed:
        return (f"NOT SECURE randomness ({m.randomness}): anyone who knows the seed can remove the noise; "
                "this release is NOT differentially private")
    return f"NOT SECURE randomness, as far as this report can tell ({m.randomness}): the audit did not pass, so no claim is confirmed"


# --- text -------------------------------------------------------------------------------------------


def _tree_lines(node: _Node, lead: str, branch: str, out: list[str]) -> None:
    out.append(f"{lead}{branch}{node.kind}  {node.cost}  at {node.path}  <- {node.rule}" + (f"  [{node.resolved}]" if node.resolved else ""))
    rest = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
    for i, child in enumerate(node.children):
        _tree_lines(child, rest, "└─ " if i == len(node.children) - 1 else "├─ ", out)


def _text(m: _Model) -> str:
    out = [f"VERDICT: {_HEADLINES.get(m.status, m.status.upper())}", f"  {m.reason}"]
    if not m.passed:
        out.append("  !!! nothing below is confirmed: the audit did not pass !!!")
    if not m.secure:
        out.append(f"!!! {_insecure(m)} !!!")
    out += ["", "Released value (± the plan's (1 − α) error bar, re-derived from the rebuilt plan)"]
    out += [f"  {path}: {v}" + (f"  ({c})" if c else "") for path, v, c in m.values]
    if len(m.values) >= _MAX_ROWS:
        out.append("  … (more values not shown)")
    for table in m.groups:
        out += ["", f"Per group: {table.path}" + (f" ({table.confidence})" if table.confidence else "")]
        widths = [max([len("key")] + [len(k) for k, _ in table.rows])] + [
            max([len(n)] + [len(cells[i]) for _, cells in table.rows]) for i, n in enumerate(table.names)
        ]
        out.append("  " + "  ".join(h.ljust(w) for h, w in zip(("key", *table.names), widths)).rstrip())
        out += ["  " + "  ".join(c.ljust(w) for c, w in zip((k, *cells), widths)).rstrip() for k, cells in table.rows]
    if m.curve:
        out += ["", "Privacy curve (the smallest eps any composition rule certifies at each delta, rounded up)"]
        out.append("  " + ", ".join(f"delta {d:.0e}: eps {e:.4g}" for d, e in m.curve))
    out += ["", "Budget (costs rounded up, budgets and remaining rounded down)"] + [f"  {line}" for line in m.budget_lines]
    for bar in m.bars:
        start = math.floor(min(bar.before, Fraction(1)) * _BAR)
        end = max(start, min(math.ceil(min(bar.before + bar.this, Fraction(1)) * _BAR), _BAR))
        out.append(f"  {bar.name:<7} [{'=' * start}{'#' * (end - start)}{'.' * (_BAR - end)}] {bar.text}")
    out += ["", "Plan (derivation tree: node, cost rounded up, path, theorem)"]
    if m.tree is None:
        out.append("  (no readable derivation)")
    else:
        _tree_lines(m.tree, "  ", "", out)
    out += ["", "Symbolic checks"] + ([f"  {s.upper()} at {p}: {d}" for s, p, d in m.checks] or ["  (none)"])
    out += ["", "Certificate"] + [f"  {label:<13} {shown}" for label, shown, _ in m.facts]
    out += ["", "Audit (as dpalg audit CERT.json)"] + [f"  WARNING: {w}" for w in m.warnings] + [f"  {f}" for f in m.findings]
    return "\n".join(out) + "\n"


# --- HTML -------------------------------------------------------------------------------------------


def _tree_html(node: _Node) -> str:
    kids = "".join(_tree_html(c) for c in node.children)
    return (
        f'<li class="node"><span class="kind">{escape(node.kind)}</span> '
        f'<span class="cost" title="exact: {escape(node.exact)}">{escape(node.cost)}</span> '
        f'<code class="path">{escape(node.path)}</code> <span class="rule">{escape(node.rule)}</span>'
        + (f' <span class="resolved">{escape(node.resolved)}</span>' if node.resolved else "") +
        f"<details><summary>exact</summary><dl><dt>node</dt><dd><code>{escape(node.repr)}</code></dd>"
        f"<dt>inputs</dt><dd>{escape(node.inputs) or '(none)'}</dd><dt>cost</dt><dd>{escape(node.exact)}</dd>"
        f"<dt>combine</dt><dd>{escape(node.combine)}</dd></dl></details>"
        + (f'<ul class="tree">{kids}</ul>' if kids else "") + "</li>"
    )  # fmt: skip


def _html(m: _Model) -> str:
    bars = "".join(
        f'<div class="budget-row"><span class="name">{escape(b.name)}</span>'
        f'<div class="bar" title="{escape(b.exact)}"><span class="before" style="width: {_pct(b.before)}%"></span>'
        f'<span class="this" style="width: {_pct(b.this)}%"></span></div>'
        f'<span class="amount">{escape(b.text)}</span></div>'
        for b in m.bars
    )
    cls = "ok" if m.status == "confirmed" else "partial" if m.passed else "bad"
    secure = f'<p class="insecure">{escape(_insecure(m))}</p>' if not m.secure else ""
    fields = {
        "verdict_class": cls,
        "verdict": escape(_HEADLINES.get(m.status, m.status.upper())),
        "reason": escape(m.reason) + ("" if m.passed else "<br><strong>Nothing below is confirmed.</strong>"),
        "secure": secure,
        "values": "".join(
            f'<tr><td><code>{escape(p)}</code></td><td class="value">{escape(v)}</td><td class="confidence">{escape(c)}</td></tr>'
            for p, v, c in m.values
        ),
        "groups": "".join(_group_html(t) for t in m.groups),
        "curve": (
            "<p>The plan's certified privacy curve: the smallest ε any composition rule proves at each δ "
            "(<code>plan.epsilon_at(delta)</code>, rounded up; re-derived from the rebuilt plan).</p>" + _curve_bars(m.curve)
        ) if m.curve else "",
        "budget_lines": "".join(f"<li>{escape(line)}</li>" for line in m.budget_lines),
        "bars": bars,
        "tree": f'<ul class="tree root">{_tree_html(m.tree)}</ul>' if m.tree else "<p>(no readable derivation)</p>",
        "checks": "".join(
            f'<tr class="check {escape(s)}"><td>{escape(s.upper())}</td><td><code>{escape(p)}</code></td><td>{escape(d)}</td></tr>'
            for s, p, d in m.checks
        ) or '<tr><td colspan="3">(none)</td></tr>',
        "facts": "".join(
            f"<tr><th>{escape(label)}</th><td" + (f' title="{escape(exact)}"' if exact else "") + f">{escape(shown)}</td></tr>"
            for label, shown, exact in m.facts
        ),
        "audit": "".join(f'<li class="warning">WARNING: {escape(w)}</li>' for w in m.warnings) + "".join(f"<li>{escape(f)}</li>" for f in m.findings),
    }  # fmt: skip
    template = importlib.resources.files("dpalg.release").joinpath("report.html").read_text(encoding="utf-8")
    return string.Template(template).substitute(fields)


def render_text(cert: Mapping[str, JSON]) -> str:
    """The certificate as plain text: the audit verdict first, then value, budget, plan tree, checks and facts.

    Control and bidi characters in the certificate are shown as ``\\uXXXX``, so
    a hostile label cannot drive the terminal or break a line.
    """
    return _text(_model(cert))


def render_html(cert: Mapping[str, JSON]) -> str:
    """The certificate as a self-contained HTML page (no JavaScript; every certificate string escaped)."""
    return _html(_model(cert))


def load_certificate(path: str) -> dict[str, JSON]:
    """Read a certificate file with ``dpalg audit``'s limits (size, depth, no NaN) and check it is one.

    A document that has the certificate's format and fields is returned even
    if it is tampered or refuted: the report shows the audit's verdict.

    Raises:
        CertificateMalformed: unreadable, not JSON, too large or too deep, or not a certificate.
    """
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_CERTIFICATE_BYTES + 1)  # never more than the limit, whatever the file's size
    except OSError as exc:
        raise CertificateMalformed(path, exc.strerror or type(exc).__name__) from None
    doc = parse_certificate(data)
    if not isinstance(doc, dict):
        raise CertificateMalformed(path, "not a dpalg certificate (not a JSON object)")
    if doc.get("format") not in CERTIFICATE_FORMATS:
        expected = " or ".join(CERTIFICATE_FORMATS)
        raise CertificateMalformed(path, f"not a dpalg certificate (format {_clean(doc.get('format'), 60)}, expected {expected})")
    for name, types in _FIELDS.items():
        if name not in doc or not isinstance(doc[name], types):
            raise CertificateMalformed(path, f"not a dpalg certificate: field {name!r} is missing or has the wrong type")
    return doc


def report_command(path: str, *, html: str | None) -> int:
    """``dpalg report CERT.json [--html OUT]``: 0 rendered (whatever the verdict), 2 not a certificate."""
    try:
        cert = load_certificate(path)
    except CertificateMalformed as exc:
        print(f"dpalg: error: {_clean(path, 200)}: {exc.problem}", file=sys.stderr)
        return 2
    model = _model(cert)
    text = _text(model)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(text.encode(encoding, "replace").decode(encoding))  # ⊥ and the tree glyphs, in any locale
    if html is not None:
        try:
            Path(html).write_text(_html(model), encoding="utf-8")
        except OSError as exc:
            print(f"dpalg: error: --html {_clean(html, 200)}: {exc.strerror or type(exc).__name__}", file=sys.stderr)
            return 2
        print(f"HTML report: {html}")
    return 0
