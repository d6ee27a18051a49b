"""``dpalg report``: the rendered certificate, its HTML structure, escaping and exit codes.

Hostile certificates: a certificate is untrusted input. A document with the
certificate's format and fields is *rendered* (exit 0) whatever its content,
with the audit's verdict on top (REFUTED when the strings were edited and the
digest recomputed, MALFORMED (tampered) when not), and every string inert;
only a document that is not a certificate at all exits 2.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from dpalg import ZCDP, ApproxDP, Clip, Compose, PureDP, PureToApprox, Query, Session, ZCDPToApprox
from dpalg.cli import main
from dpalg.mechanisms import Gaussian, Laplace, LocalSensAtDistance, ProposeTest
from dpalg.release import certificate_digest, generate_signing_key, seal
from dpalg.release._report import render_html, render_text
from dpalg.release._serialize import JSON

Cert = dict[str, JSON]
DATA = {"x": np.arange(100.0)}
HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "' onmouseover='alert(3)",
    "</code></li><svg onload=alert(4)>",
    "\x1b[2J\x1b]0;pwned\x07",
    "\u202eevil",
)


# --- helpers ----------------------------------------------------------------------------------------


class Page(HTMLParser):
    """Every start tag with its attributes, and every text chunk with the classes of the elements around it."""

    VOID = {"meta", "br", "img", "hr", "input", "link", "source", "wbr"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data: list[tuple[frozenset[str], str]] = []
        self._open: list[tuple[str, frozenset[str]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag not in self.VOID:
            self._open.append((tag, frozenset((attributes.get("class") or "").split())))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                return

    def handle_data(self, data: str) -> None:
        classes = frozenset().union(*(c for _, c in self._open)) if self._open else frozenset()
        self.data.append((classes, data))

    def with_class(self, name: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.tags if name in (a.get("class") or "").split()]

    def text(self, within: str | None = None) -> str:
        return "".join(d for c, d in self.data if within is None or within in c)


def count_nodes(node: JSON) -> int:
    assert isinstance(node, dict) and isinstance(node["children"], list)
    return 1 + sum(count_nodes(c) for c in node["children"])


def walk(node: JSON) -> Iterator[dict[str, JSON]]:
    assert isinstance(node, dict) and isinstance(node["children"], list)
    yield node
    for c in node["children"]:
        yield from walk(c)


def compose_plan() -> Compose[PureDP]:
    return Compose(Laplace(Query.count(), epsilon="0.1"), Laplace(Query.sum("x") | Clip(0, 100), epsilon="0.2"))


@functools.cache
def _certs() -> dict[str, Cert]:
    session = Session(PureDP(1))
    first = session.run(compose_plan(), DATA, rng=1)
    second = session.run(compose_plan(), DATA, rng=2)
    nested = Compose(
        PureToApprox(compose_plan()), ZCDPToApprox(Compose(Gaussian(Query.count(), rho="0.01")), delta="1e-7"),
    )  # fmt: skip
    ls = LocalSensAtDistance(Query.median("x") | Clip(0, 100), "(upper - lower) / Max(n - k, 1)")
    ptr = ProposeTest(ls, bound="0.5", epsilon="0.5", delta="1e-6")
    private, _ = generate_signing_key()
    return {
        "seeded": first.certificate,
        "second": second.certificate,
        "secure": Session(PureDP(1)).run(compose_plan(), DATA).certificate,
        "nested": Session(ApproxDP(3, "1e-5")).run(nested, DATA, rng=3).certificate,
        "zcdp": Session(ZCDP("1/2")).run(Gaussian(Query.count(), rho="0.1"), DATA, rng=4).certificate,
        "bottom": Session(ApproxDP(2, "1e-5")).run(ptr, {"x": np.array([0.0, 100.0] * 3)}, rng=5).certificate,
        "signed": first.signed(private).certificate,
    }


def cert(name: str) -> Cert:
    return copy.deepcopy(_certs()[name])


def write(tmp_path: Path, doc: object, name: str = "cert.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def hostile(sealed: bool) -> Cert:
    """A real certificate whose strings were replaced with markup and control characters."""
    doc = cert("nested")
    for i, node in enumerate(walk(doc["derivation"])):
        payload = HOSTILE[i % len(HOSTILE)]
        node["node"] = f"{payload}({payload})"
        node["path"] = f"Compose/{payload}"
        node["rule"] = payload
        node["inputs"] = [[payload, payload]]
    doc["symbolic_checks"] = [{"path": p, "status": "unproven", "detail": p} for p in HOSTILE]
    doc["randomness"] = {"kind": HOSTILE[0], "secure": True}
    doc["value"] = [{p: p for p in HOSTILE}, HOSTILE[1], [HOSTILE[2]]]
    doc["neighbouring"] = {"unit": HOSTILE[3], "relation": "add_remove", "description": HOSTILE[1]}
    doc["dpalg_version"] = HOSTILE[0]
    return seal(doc) if sealed else doc


# --- structure --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["seeded", "nested", "bottom", "zcdp"])
def test_the_tree_has_one_element_and_one_line_per_derivation_node(name: str) -> None:
    doc = cert(name)
    page = Page(render_html(doc))
    assert len(page.with_class("node")) == count_nodes(doc["derivation"])
    nodes = list(walk(doc["derivation"]))
    text = render_text(doc)
    tree = text.split("Plan (derivation tree")[1].split("\n\n")[0].splitlines()[1:]
    assert len(tree) == len(nodes)
    for line, node in zip(tree, nodes):  # pre-order, one line each, with the node's path
        assert f" at {node['path']} " in line


def test_costs_are_short_with_the_exact_fraction_in_a_tooltip() -> None:
    doc = cert("nested")
    page = Page(render_html(doc))
    convert = next(n for n in walk(doc["derivation"]) if str(n["path"]).endswith("ZCDPToApprox"))
    cost = convert["cost"]
    assert isinstance(cost, dict) and len(str(cost["epsilon"])) > 30  # the tight conversion is a long fraction
    titles = [a["title"] or "" for a in page.with_class("cost")]
    assert any(str(cost["epsilon"]) in t for t in titles)
    assert str(cost["epsilon"]) not in page.text("cost")  # shown short, rounded up
    assert any(t.startswith("ApproxDP(ε<=") for t in page.text("cost").split(")") if t)


def bar_widths(page: Page) -> list[tuple[str, str]]:
    before = [a.get("style") or "" for a in page.with_class("before")]
    this = [a.get("style") or "" for a in page.with_class("this")]
    return list(zip(before, this))


def test_the_budget_bar_shows_this_release_against_the_budget() -> None:
    page = Page(render_html(cert("seeded")))  # 3/10 of a session budget of 1, nothing spent before
    assert bar_widths(page) == [("width: 0.00%", "width: 30.00%")]
    assert page.text("name") == "epsilon"


def test_the_budget_bar_shows_the_session_spend_before_and_after() -> None:
    doc = cert("second")
    page = Page(render_html(doc))
    assert bar_widths(page) == [("width: 30.00%", "width: 30.00%")]
    assert "0.3 + 0.3 = 0.6 of 1 (60.00%); remaining 0.4" in page.text("amount")
    assert "epsilon [============############................] 0.3 + 0.3 = 0.6 of 1" in render_text(doc)


def test_approx_dp_has_a_bar_per_parameter_rounded_up() -> None:
    page = Page(render_html(cert("nested")))
    assert page.text("name") == "epsilondelta"
    # epsilon = 3/10 + 0.0...: cost 0.3 + the tight conversion of rho = 1/100, over a budget of 3
    (_, eps), (_, delta) = bar_widths(page)
    assert delta == "width: 1.00%"  # 1e-7 of 1e-5
    assert eps.startswith("width: ") and 10 < float(eps.removeprefix("width: ").rstrip("%")) < 100


def test_the_verdict_is_shown_first() -> None:
    doc = cert("seeded")
    page = Page(render_html(doc))
    assert page.text("head") == "CONFIRMED (COST ONLY)"
    assert page.with_class("verdict")[0]["class"] == "verdict partial"
    assert render_text(doc).startswith("VERDICT: CONFIRMED (COST ONLY)\n")


def test_not_secure_is_shown_for_a_seeded_run_and_not_for_a_secure_one() -> None:
    seeded_html, seeded_text = render_html(cert("seeded")), render_text(cert("seeded"))
    assert Page(seeded_html).with_class("insecure")
    assert "NOT SECURE randomness" in Page(seeded_html).text("insecure")
    assert "!!! NOT SECURE randomness" in seeded_text.splitlines()[2]
    secure_html, secure_text = render_html(cert("secure")), render_text(cert("secure"))
    assert "NOT SECURE" not in secure_html and "NOT SECURE" not in secure_text
    assert not Page(secure_html).with_class("insecure")
    assert "secure, as claimed: aes256-ctr" in secure_text


def test_bottom_is_shown_as_bottom() -> None:
    doc = cert("bottom")
    assert doc["value"] == {"$bottom": True}
    assert Page(render_html(doc)).text("value") == "⊥"
    assert "\n  ProposeTest: ⊥\n" in render_text(doc)


def test_values_of_a_compose_are_listed_by_child() -> None:
    text = render_text(cert("nested"))
    assert "  Compose/0/PureToApprox/Compose/0/Laplace: " in text
    assert "  Compose/1/ZCDPToApprox/Compose/0/Gaussian: " in text


def test_symbolic_checks_and_their_verdicts() -> None:
    doc = cert("bottom")  # a user LS_k formula: two proven checks and a note
    page = Page(render_html(doc))
    rows = page.with_class("check")
    assert [r["class"] for r in rows] == ["check proven", "check proven", "check note"]
    assert "PROVEN at ProposeTest: LS_k formula" in render_text(doc)
    # an edited record is shown as recorded, and the audit refutes it
    records = doc["symbolic_checks"]
    assert isinstance(records, list) and isinstance(records[0], dict)
    records[0]["status"] = "unproven"
    text = render_text(seal(doc))
    assert "UNPROVEN at ProposeTest" in text and text.startswith("VERDICT: REFUTED\n  REFUTED: the recorded symbolic checks differ")


def test_signature_presence_is_shown() -> None:
    assert "signature     absent (unsigned)" in render_text(cert("seeded"))
    text = render_text(cert("signed"))
    assert "signature     present: valid (not checked against a trusted key" in text
    assert text.startswith("VERDICT: CONFIRMED (COST ONLY)")  # no trusted key given: never plain CONFIRMED


def test_format_versions_timestamp_and_digest_are_shown() -> None:
    doc = cert("seeded")
    text = render_text(doc)
    digest = doc["digest"]
    assert isinstance(digest, dict)
    for expected in ("format        dpalg-certificate/2", f"created       {doc['created']}", f"sha256 {digest['value']} (matches the content)",
                     f"dpalg version {doc['dpalg_version']}"):
        assert expected in text


# --- untrusted input --------------------------------------------------------------------------------


def test_a_tampered_value_is_not_confirmed() -> None:
    doc = cert("seeded")
    doc["value"] = [1, 2]
    text = render_text(doc)
    assert text.startswith("VERDICT: MALFORMED\n  MALFORMED: TAMPERED")
    assert "nothing below is confirmed" in text
    page = Page(render_html(doc))
    assert page.text("head") == "MALFORMED" and page.with_class("verdict")[0]["class"] == "verdict bad"
    signed = cert("signed")
    signed["value"] = [1, 2]
    digest = signed["digest"]
    assert isinstance(digest, dict)
    digest["value"] = certificate_digest(signed)  # recomputed: only the signature now betrays the edit
    assert render_text(signed).startswith("VERDICT: MALFORMED\n  MALFORMED: signature:")


def test_a_value_edited_with_a_recomputed_digest_is_only_cost_confirmed() -> None:
    doc = cert("seeded")
    doc["value"] = [1, 2]
    text = render_text(seal(doc))
    assert text.startswith("VERDICT: CONFIRMED (COST ONLY)") and "value, randomness" in text.splitlines()[1]


def test_a_certificate_relabelled_secure_is_refuted_and_shown_not_secure() -> None:
    doc = cert("seeded")
    doc["randomness"] = {"kind": "seeded-pcg64(seed=1) NOT SECURE", "secure": True}
    text = render_text(seal(doc))
    assert text.startswith("VERDICT: REFUTED") and "NOT SECURE randomness" in text


@pytest.mark.parametrize("sealed", [True, False], ids=["digest recomputed", "digest stale"])
def test_hostile_strings_come_out_inert(sealed: bool) -> None:
    doc = hostile(sealed)
    out = render_html(doc)
    page = Page(out)
    tags = {tag for tag, _ in page.tags}
    assert "script" not in tags and "img" not in tags and "svg" not in tags
    handlers = [(tag, name) for tag, attrs in page.tags for name in attrs if name.lower().startswith("on")]
    assert not handlers
    assert not re.search(r"<\s*script", out, re.IGNORECASE)
    assert "javascript:" not in out.lower()
    shown = page.text()
    assert HOSTILE[0] in shown and HOSTILE[1] in shown and HOSTILE[3] in shown  # rendered as text, not dropped
    assert "\x1b" not in out and "\u202e" not in out and "\\u001b[2J" in shown
    assert page.text("head") == ("REFUTED" if sealed else "MALFORMED")
    assert len(page.with_class("node")) == count_nodes(doc["derivation"])


@pytest.mark.parametrize("sealed", [True, False], ids=["digest recomputed", "digest stale"])
def test_hostile_strings_cannot_drive_the_terminal(sealed: bool) -> None:
    doc = hostile(sealed)
    text = render_text(doc)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", text)
    assert text.startswith("VERDICT: REFUTED" if sealed else "VERDICT: MALFORMED")
    assert "NOT SECURE randomness, as far as this report can tell" in text  # claimed secure, but not confirmed: fail closed
    tree = text.split("Plan (derivation tree")[1].split("\n\n")[0].splitlines()[1:]
    assert len(tree) == count_nodes(doc["derivation"])  # a newline in a label cannot add a line


def test_the_template_has_no_script_and_forbids_scripts() -> None:
    out = render_html(cert("seeded"))
    assert "default-src 'none'; style-src 'unsafe-inline'" in out
    assert not any(tag == "script" for tag, _ in Page(out).tags)


def test_the_html_parses_without_errors_html5lib() -> None:
    html5lib = pytest.importorskip("html5lib")
    for doc in (cert("nested"), hostile(True)):
        html5lib.HTMLParser(strict=True).parse(render_html(doc))  # raises ParseError on any error


def _browser() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium (Debian: apt-get install chromium-headless-shell)")
def test_a_headless_browser_runs_no_script_from_a_hostile_certificate(tmp_path: Path) -> None:
    doc = hostile(True)
    page = tmp_path / "report.html"
    page.write_text(render_html(doc), encoding="utf-8")
    browser = _browser()
    assert browser is not None
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    dom = Page(done.stdout)  # the DOM after the browser parsed (and would have run) the page
    assert not any(tag in ("script", "img", "svg") for tag, _ in dom.tags)
    assert not any(name.startswith("on") for _, attrs in dom.tags for name in attrs)
    assert len(dom.with_class("node")) == count_nodes(doc["derivation"])


# --- the command ------------------------------------------------------------------------------------


def test_cli_renders_text_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", write(tmp_path, cert("second")), "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("VERDICT: CONFIRMED (COST ONLY)")
    assert captured.out.rstrip().endswith(f"HTML report: {out}")
    assert captured.err == ""
    assert Page(out.read_text(encoding="utf-8")).text("head") == "CONFIRMED (COST ONLY)"
    assert main(["report", write(tmp_path, cert("seeded"))]) == 0
    assert "Plan (derivation tree" in capsys.readouterr().out


def test_cli_renders_a_tampered_certificate_with_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", write(tmp_path, hostile(False))]) == 0  # rendered; the verdict says MALFORMED
    assert capsys.readouterr().out.startswith("VERDICT: MALFORMED")


def _deep() -> str:
    return "[" * 100 + "]" * 100


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "No such file"),
        ("{not json", "not JSON"),
        (_deep(), "nested more than 64 levels"),
        ('{"a": NaN}', "NaN is not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"format": "something-else/1"}', "not a dpalg certificate"),
        ('{"format": "dpalg-certificate/1"}', "field 'dpalg_version' is missing"),
        (b"\xff\xfe", "not UTF-8"),
    ],
    ids=["missing", "not-json", "deep", "nan", "array", "format", "fields", "bytes"],
)
def test_cli_exits_2_on_what_is_not_a_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "cert.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("dpalg: error: ") and message in captured.err
    assert "Traceback" not in captured.err


def test_cli_exits_2_on_a_file_too_large(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpalg.release._audit import MAX_CERTIFICATE_BYTES

    path = tmp_path / "big.json"
    path.write_bytes(b" " * (MAX_CERTIFICATE_BYTES + 1))
    assert main(["report", str(path)]) == 2
    assert "larger than the limit" in capsys.readouterr().err


def test_cli_exits_2_when_the_html_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", write(tmp_path, cert("seeded")), "--html", str(tmp_path / "no" / "such" / "dir.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpalg: error: --html ") and err.count("\n") == 1
