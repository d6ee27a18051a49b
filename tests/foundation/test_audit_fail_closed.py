"""Issue 14, §5 and §7: audits that hold, a command line that fails closed, short messages.

* an honest certificate of a plan whose long repr holds a user function is confirmed;
* a resealed, unsigned certificate is never plainly "confirmed": the verdict
  names its unverifiable claims, and ``--require-secure`` needs a trusted signature;
* hostile documents (deep JSON, huge number strings, large files) are MALFORMED, fast;
* ``dpalg demo --out DIR``; ``dpalg check`` on a crashing builder exits 2;
* conversion nodes refuse a child of the wrong measure at construction;
* messages show long exact numbers as short decimals, conservatively rounded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpalg import ApproxDP, BudgetExceeded, Clip, Compose, InvalidArgument, PureDP, PureToApprox, PureToZCDP, Query, ZCDP, ZCDPToApprox
from dpalg.cli import main
from dpalg.data import Dataset
from dpalg.graph._accountant import add_measures, max_measures, subtract_measures, sum_measures
from dpalg.graph._derivation import measure_from_json
from dpalg.measures._display import short_measure, short_number
from dpalg.mechanisms import Gaussian, Laplace, SampleAggregateMean, SmoothBound
from dpalg.release import audit_certificate
from dpalg.release._audit import MAX_JSON_DEPTH, parse_certificate
from dpalg.release._certificate import SEEDED_WARNING
from dpalg.release._serialize import CertificateMalformed

# --- helpers --------------------------------------------------------------------------------------


def _reseal(cert: dict[str, object]) -> dict[str, object]:
    """What a forger does: edit the JSON, then recompute the SHA-256 digest exactly as dpalg does."""
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return {**body, "digest": {"algorithm": "sha256", "value": hashlib.sha256(canonical).hexdigest()}}


def _certificate(rng: object = 7) -> dict[str, object]:
    plan = Compose(Laplace(Query.count(), epsilon="1/2"), Laplace(Query.mean("x") | Clip(0, 10), epsilon="1/4"))
    plan.check(PureDP(1))
    return json.loads(plan.run({"x": np.arange(20.0)}, rng=rng).certificate_json())  # type: ignore[arg-type, no-any-return]


def _audit_cli(tmp_path: Path, cert: object, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(cert))
    capsys.readouterr()
    code = main(["audit", str(path), *args])
    return code, capsys.readouterr().out


# --- 1. an honest certificate with a user function in a long Compose -----------------------------


def a_block_function_whose_name_is_long_enough_to_matter(data: Dataset) -> float:
    """Any number from a block (constant: the test is about the certificate, not the statistic)."""
    return 1.0


def test_a_long_compose_holding_a_user_function_is_confirmed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = Compose(
        SampleAggregateMean(a_block_function_whose_name_is_long_enough_to_matter, blocks=4, lower=0, upper=10, epsilon=1),
        Laplace(Query.count(), epsilon="1/2"),
    )
    text = repr(plan)
    assert len(text) > 200 and text.index(" at 0x") < 200  # the address sits inside the first 200 characters
    plan.check(PureDP(2))
    cert = json.loads(plan.run({"x": np.arange(40.0)}, rng=11).certificate_json())
    report = audit_certificate(cert)
    assert report.exit_code == 0, report.findings  # was REFUTED: "node differs" at the Compose
    assert report.status == "cost_confirmed" and "derivation re-derived node by node: identical" in report.findings
    code, out = _audit_cli(tmp_path, cert, capsys=capsys)
    assert code == 0 and "CONFIRMED" in out and "REFUTED" not in out


class _Scorer:
    def __call__(self, data: Dataset) -> float:
        return 1.0


def _two(data: Dataset, value: float = 1.0) -> float:
    return value


@pytest.mark.parametrize(
    "fn", [a_block_function_whose_name_is_long_enough_to_matter, lambda d: 1.0, functools.partial(_two, value=2.0), _Scorer()],
    ids=["function", "lambda", "partial", "callable-object"],
)
def test_honest_certificates_with_any_kind_of_callable_are_confirmed(fn: Callable[[Dataset], float]) -> None:
    # a partial or a callable object used to be REFUTED: the stub read "<function name>", not the callable's repr
    plan = Compose(SampleAggregateMean(fn, blocks=4, lower=0, upper=10, epsilon=1))
    plan.check(PureDP(1))
    cert = json.loads(plan.run({"x": np.arange(40.0)}, rng=3).certificate_json())
    report = audit_certificate(cert)
    assert report.exit_code == 0, report.findings
    assert " at 0x" not in json.dumps(cert)  # no memory address is recorded anywhere


# --- 2. resealed, unsigned certificates -----------------------------------------------------------


def test_an_unsigned_certificate_is_confirmed_for_its_cost_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert = _certificate(rng=None)  # honest, secure randomness, unsigned
    report = audit_certificate(cert)
    assert report.status == "cost_confirmed" and not report.confirmed and report.exit_code == 0
    assert set(report.unverifiable) >= {"value", "randomness", "budget", "session", "created"}
    code, out = _audit_cli(tmp_path, cert, capsys=capsys)
    assert code == 0
    last = out.strip().splitlines()[-1]
    assert last.startswith("CONFIRMED (COST ONLY)") and "UNVERIFIABLE CLAIMS" in last
    for field in ("value", "randomness", "budget", "session", "created"):
        assert field in last


@pytest.mark.parametrize("forgery", ["budget-raised", "value-changed", "seeded-relabelled-secure"])
def test_resealed_unsigned_forgeries_are_not_confirmed(forgery: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert = _certificate(rng=7)  # a seeded run
    assert cert["randomness"] == {"kind": "seeded-pcg64(seed=7) NOT SECURE", "secure": False}
    forged = json.loads(json.dumps(cert))
    if forgery == "budget-raised":
        forged["budget"] = {"measure": "PureDP", "epsilon": "100"}
        field = "budget"
    elif forgery == "value-changed":
        forged["value"] = [12345, 6.5]
        field = "value"
    else:
        forged["randomness"] = {"kind": "os-csprng", "secure": True}
        forged["warnings"] = [w for w in forged["warnings"] if w != SEEDED_WARNING]
        field = "randomness"
    forged = _reseal(forged)

    report = audit_certificate(forged)
    assert report.status == "cost_confirmed" and not report.confirmed  # was "confirmed"
    assert field in report.unverifiable and field in report.verdict and "UNVERIFIABLE" in report.verdict

    code, out = _audit_cli(tmp_path, forged, capsys=capsys)
    assert code == 0 and "UNVERIFIABLE CLAIMS" in out and "CONFIRMED (COST ONLY)" in out
    code, out = _audit_cli(tmp_path, forged, "--json", capsys=capsys)
    doc = json.loads(out)
    assert doc["status"] == "cost_confirmed" and field in doc["unverifiable_claims"] and doc["signature"] == "absent"

    # --require-secure cannot trust an unsigned randomness claim: exit 2, whatever the claim says
    code, out = _audit_cli(tmp_path, forged, "--require-secure", capsys=capsys)
    assert code == (1 if forgery != "seeded-relabelled-secure" else 2), out  # the seeded ones admit it: refuted
    assert audit_certificate(forged, require_secure=True).exit_code == code


def test_require_secure_demands_a_signature_by_the_trusted_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cryptography")
    from dpalg.release import generate_signing_key, sign_certificate

    honest = _certificate(rng=None)  # secure randomness
    code, out = _audit_cli(tmp_path, honest, "--require-secure", capsys=capsys)
    assert code == 2 and "UNVERIFIABLE (--require-secure)" in out  # unsigned: the claim cannot be checked

    private, public = generate_signing_key()
    signed = sign_certificate(honest, private)  # type: ignore[arg-type]
    code, out = _audit_cli(tmp_path, signed, "--require-secure", "--public-key", public.hex(), capsys=capsys)
    assert code == 0 and out.strip().splitlines()[-1].startswith("CONFIRMED: ")
    assert audit_certificate(signed, public_key=public).confirmed

    # a forger relabels a seeded run and signs it with a key of their own
    forged = _certificate(rng=7)
    forged["randomness"] = {"kind": "os-csprng", "secure": True}
    forged["warnings"] = [w for w in forged["warnings"] if w != SEEDED_WARNING]  # type: ignore[attr-defined]
    attacker, _ = generate_signing_key()
    self_signed = sign_certificate(forged, attacker)  # type: ignore[arg-type]
    code, out = _audit_cli(tmp_path, self_signed, "--require-secure", capsys=capsys)
    assert code == 2 and "anyone can sign" in out  # a key named inside the document proves nothing
    assert audit_certificate(self_signed).status == "cost_confirmed"
    code, _ = _audit_cli(tmp_path, self_signed, "--require-secure", "--public-key", public.hex(), capsys=capsys)
    assert code == 2  # signed, but not by the trusted key


def test_what_an_unsigned_audit_still_checks() -> None:
    cert = _certificate(rng=None)
    small = _reseal({**cert, "budget": {"measure": "PureDP", "epsilon": "1/2"}})  # below the plan's cost
    assert audit_certificate(small).status == "refuted"
    cheap = _reseal({**cert, "claimed_cost": {"measure": "PureDP", "epsilon": "1/2"}})
    assert audit_certificate(cheap).status == "refuted"


# --- 3. hostile documents -------------------------------------------------------------------------


def test_json_nested_100000_deep_is_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    capsys.readouterr()
    assert main(["audit", str(path)]) == 2  # was a RecursionError traceback, exit 1
    out = capsys.readouterr().out
    assert "MALFORMED" in out and "64 levels" in out
    path.write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    assert main(["audit", str(path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["status"] == "malformed"


def test_the_depth_limit_is_exact_and_ignores_strings() -> None:
    assert parse_certificate("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(CertificateMalformed, match="64 levels"):
        parse_certificate("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    assert parse_certificate(json.dumps({"a": "[" * 1000, "b\\\"[": "{" * 100})) == {"a": "[" * 1000, 'b\\"[': "{" * 100}
    with pytest.raises(CertificateMalformed, match="NaN"):
        parse_certificate('{"a": NaN}')


def test_a_deep_field_inside_a_resealed_certificate_is_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert = _certificate(rng=None)
    deep: object = 1
    for _ in range(MAX_JSON_DEPTH + 5):
        deep = {"x": deep}
    forged = _reseal({**cert, "value": deep})
    assert audit_certificate(forged).status == "malformed"
    code, out = _audit_cli(tmp_path, forged, capsys=capsys)
    assert code == 2 and "MALFORMED" in out


def test_a_certificate_larger_than_the_limit_is_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import dpalg.release._audit as audit_module

    monkeypatch.setattr(audit_module, "MAX_CERTIFICATE_BYTES", 1000)
    code, out = _audit_cli(tmp_path, _certificate(rng=None), capsys=capsys)
    assert code == 2 and "MALFORMED" in out and "larger than the limit" in out


@pytest.mark.parametrize("field", ["claimed_cost", "budget"])
def test_huge_exponent_numbers_in_a_certificate_are_refused_fast(field: str, tmp_path: Path) -> None:
    cert = _certificate(rng=None)
    forged = _reseal({**cert, field: {"measure": "PureDP", "epsilon": "1e999999999"}})
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(forged))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dpalg.cli", "audit", str(path)], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20  # interpreter start-up included; the check itself is instant
    assert done.returncode == 2 and "MALFORMED" in done.stdout and "Traceback" not in done.stderr, (done.stdout, done.stderr)


@pytest.mark.parametrize(
    "encoded",
    [
        {"measure": "PureDP", "epsilon": "1e999999999"},
        {"measure": "PureDP", "epsilon": "9" * 5000},
        {"measure": "PureDP", "epsilon": 1},
        {"measure": "PureDP", "epsilon": "nan"},
        {"measure": "PureDP", "epsilon": "1", "delta": "0"},
        {"measure": "ZCDP"},
        {"measure": "Free", "epsilon": "0"},
    ],
)
def test_measure_fields_accept_only_the_exact_text_dpalg_writes(encoded: dict[str, object]) -> None:
    start = time.monotonic()
    with pytest.raises(InvalidArgument) as info:
        measure_from_json(encoded)
    assert time.monotonic() - start < 1 and len(str(info.value)) < 400
    assert measure_from_json({"measure": "ApproxDP", "epsilon": "3/4", "delta": "1/1000000"}) == ApproxDP("0.75", "1e-6")


# --- 4. the demo writes its certificate where asked -----------------------------------------------


def test_demo_writes_its_certificate_into_out(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "results"
    assert main(["demo", "--rows", "300", "--seed", "1", "--out", str(out_dir)]) == 0
    written = out_dir / "dpalg-demo-certificate.json"
    assert written.is_file() and str(written) in capsys.readouterr().out
    assert main(["audit", str(written)]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--rows", "300", "--seed", "2"]) == 0  # default: the current directory
    assert (tmp_path / "dpalg-demo-certificate.json").is_file()


# --- 5. a crashing plan builder is bad input, not a crash -----------------------------------------


def test_check_on_a_crashing_builder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "crashing.py"
    path.write_text("def make_plan():\n    return 1 / 0\n\ndef make_pairs():\n    raise RuntimeError('no pairs today')\n")
    assert main(["check", f"{path}:make_plan", "--budget", "eps=1"]) == 2  # was: ZeroDivisionError, exit 1
    err = capsys.readouterr().err
    assert "building the plan failed: ZeroDivisionError" in err and "Traceback" not in err
    done = subprocess.run(
        [sys.executable, "-m", "dpalg.cli", "check", f"{path}:make_plan", "--budget", "eps=1"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr


# --- 6. conversions refuse a child of the wrong measure at construction ---------------------------


def test_conversions_refuse_a_child_of_the_wrong_measure() -> None:
    smooth = SmoothBound(Query.median("x") | Clip(0, 1), epsilon=1, delta="1e-6")
    with pytest.raises(InvalidArgument, match=r"PureToZCDP: child='SmoothBound' costs ApproxDP"):
        PureToZCDP(smooth)  # type: ignore[arg-type]  # mypy refuses it too
    with pytest.raises(InvalidArgument, match="PureToApprox: child='Gaussian' costs ZCDP"):
        PureToApprox(Gaussian(Query.count(), rho="0.1"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="ZCDPToApprox: child='Compose' costs PureDP"):
        ZCDPToApprox(Compose(Laplace(Query.count(), epsilon=1)), delta="1e-6")  # type: ignore[arg-type]
    assert PureToZCDP(Laplace(Query.count(), epsilon=1)).cost() == ZCDP("1/2")


def test_measure_arithmetic_refuses_mixed_types_without_assert() -> None:
    # explicit checks: `assert` disappears under `python -O`, and max(PureDP, ApproxDP) would drop delta
    for op in (add_measures, max_measures, subtract_measures):
        with pytest.raises(InvalidArgument):
            op(ApproxDP(1, "1e-6"), PureDP(1))
    with pytest.raises(InvalidArgument):
        sum_measures([ApproxDP(1, "1e-6"), PureDP(1)])


# --- 7. short numbers in messages -----------------------------------------------------------------

LONG_DIGITS = re.compile(r"\d{17}")  # 20-digit numerators already appear at two Gaussians


def _converted_plan() -> ZCDPToApprox:
    return ZCDPToApprox(Compose(Gaussian(Query.count(), rho="0.005"), Gaussian(Query.count(), rho="0.005")), delta="1e-7")


def test_budget_errors_show_short_conservative_numbers() -> None:
    plan = _converted_plan()
    exact = plan.cost()
    assert len(str(exact.epsilon)) > 30  # the tight conversion is a long rational
    with pytest.raises(BudgetExceeded) as info:
        plan.check(ApproxDP("0.4", "1e-5"))
    message = str(info.value)
    assert not LONG_DIGITS.search(message), message
    assert info.value.required == exact  # the exact value is kept
    shown = re.search(r"needs ApproxDP\(<=([0-9.e+-]+),", message)
    assert shown is not None and Fraction(shown.group(1)) >= exact.epsilon  # rounded up: never understated
    assert not LONG_DIGITS.search(plan.check(ApproxDP(1, "1e-5")).render())


def test_the_cli_shows_short_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conv.py"
    path.write_text(
        "from dpalg import Compose, ZCDPToApprox, Query\nfrom dpalg.mechanisms import Gaussian\n"
        "plan = ZCDPToApprox(Compose(Gaussian(Query.count(), rho='0.005'), Gaussian(Query.count(), rho='0.005')), delta='1e-7')\n"
    )
    capsys.readouterr()
    assert main(["check", f"{path}:plan", "--budget", "eps=1,delta=1e-5"]) == 0
    out = capsys.readouterr().out
    assert "OK: total ApproxDP(<=" in out and not LONG_DIGITS.search(out), out
    assert main(["check", f"{path}:plan", "--budget", "eps=0.4,delta=1e-5"]) == 1
    out = capsys.readouterr().out
    assert "OVER BUDGET" in out and not LONG_DIGITS.search(out), out
    assert main(["check", f"{path}:plan", "--budget", "eps=1,delta=1e-5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert Fraction(doc["cost"]["epsilon"]) == _converted_plan().cost().epsilon  # machine output stays exact


def test_short_numbers_round_in_the_safe_direction() -> None:
    x = Fraction(10**40 + 1, 3 * 10**40)
    assert short_number(x, "up") == "<=0.333334" and short_number(x, "down") == ">=0.333333"
    assert short_number(Fraction(3, 4)) == "3/4"
    assert short_measure(PureDP("3/4")) == repr(PureDP("3/4"))  # short values read as in a repr
    big = ApproxDP(x, "1e-7")
    assert short_measure(big, "up") == "ApproxDP(<=0.333334, '1/10000000')"
    assert repr(big).startswith("ApproxDP('")  # the repr stays exact: it reproduces construction


def test_invalid_argument_messages_are_bounded() -> None:
    with pytest.raises(InvalidArgument) as info:
        PureDP("x" * 100_000)
    assert len(str(info.value)) < 400 and "100000 characters" in str(info.value)
    with pytest.raises(InvalidArgument) as info2:
        ApproxDP(1, Fraction(10**60 + 1, 10**60))
    assert info2.value.value == Fraction(10**60 + 1, 10**60) and not LONG_DIGITS.search(str(info2.value))
    with pytest.raises(InvalidArgument) as info3:
        PureDP(1).fits_within(_converted_plan().cost())  # type: ignore[arg-type]
    assert "budget=ApproxDP(<=" in str(info3.value) and not LONG_DIGITS.search(str(info3.value))


def test_decoding_a_deep_plan_is_malformed_not_a_recursion_error() -> None:
    from dpalg.release import decode

    deep: object = {"$fraction": "1"}
    for _ in range(100_000):
        deep = {"$tuple": [deep]}
    with pytest.raises(CertificateMalformed, match="64 levels"):
        decode(deep)  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [" + 0*9**9**9", " + 0*len('a'*10**9)", " + __import__('os').system('true')"])
def test_a_resealed_certificate_with_a_hostile_formula_is_refused_fast(suffix: str, tmp_path: Path) -> None:
    """Issue 14 §2: the audit rebuilds the plan through the same formula parser, so a tower is refused, not run."""
    from dpalg.mechanisms import LocalSensAtDistance, ProposeTest

    formula = "(upper - lower) / Max(n - k - 1, 1)"
    plan = Compose(ProposeTest(LocalSensAtDistance(Query.mean("x") | Clip(0, 10), formula), bound=1, epsilon=1, delta="1e-6"))
    plan.check(ApproxDP(2, "1e-6"))
    text = plan.run({"x": np.arange(50.0) % 10}, rng=3).certificate_json()
    assert formula in text
    forged = _reseal(json.loads(text.replace(formula, formula + suffix)))
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(forged))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dpalg.cli", "audit", str(path)], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20  # interpreter start-up included; the refusal itself is instant
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr, (done.stdout, done.stderr)
    assert "REFUTED" in done.stdout or "MALFORMED" in done.stdout, done.stdout
