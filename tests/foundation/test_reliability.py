"""The reliability suite: bad inputs, kept charges, tamper detection, round trips, empirical audits.

* a table of bad inputs across the public API, each refused with ``InvalidArgument``
  whose message names the problem and never contains a data value -- or handled by
  the documented data policy (NaN/None dropped, ±inf clipped, empty data valid);
* a run that raises mid-way keeps its charge;
* tampering with any field of a certificate is detected (digest -> exit 2; a forger
  who recomputes the digest is refuted by the re-derivation -> exit 1);
* every exported mechanism round-trips through its certificate encoding;
* the empirical auditor over every exported mechanism (fast settings here; more
  runs in the ``slow`` variant, which CI also runs).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from typing import cast
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpalg.mechanisms as mechanisms
from dpalg import (
    ZCDP,
    ApproxDP,
    Clip,
    ClipPerUser,
    MaxKeysPerUser,
    MaxRowsPerUser,
    Compose,
    InvalidArgument,
    Parallel,
    PureDP,
    PureToApprox,
    PureToZCDP,
    Query,
    Session,
    UncheckedPlan,
    ZCDPToApprox,
)
from dpalg.cli import main
from dpalg.data import Dataset, as_dataset
from dpalg.graph._node import AbstractPrimitive
from dpalg.mechanisms import (
    AutoClipSum,
    R2T,
    BoundedLS,
    BoundedLSRatio,
    CalibratedGaussianSum,
    CalibratedLaplaceSum,
    ExponentialQuantile,
    Gaussian,
    KSWRatio,
    Laplace,
    LocalSensAtDistance,
    NaiveRatio,
    NoisyCount,
    NoisyMax,
    PrivateRatio,
    ProposeTest,
    PTRMode,
    SampleAggregateMean,
    SampleAggregateMedian,
    SampleAggregateMode,
    ShiftedInverse,
    ShiftedInverseSearch,
    ShiftedInverseSearchZCDP,
    SmoothBound,
    SmoothBoundCauchy,
    StableHistogram,
)
from dpalg.noise import SeededRandomness
from dpalg.release import audit_certificate, decode, encode, seal
from dpalg.release._serialize import stable_repr
from dpalg.release._adversary import NeighbourPair, neighbour_candidates
from dpalg.release._auditor import audit_mechanism

SECRET = 987654.125  # a data value that must never appear in an error message
SECRET_TEXT = "SECRET-7731"

# --- bad inputs ------------------------------------------------------------------------------

M = Query.mean("x") | Clip(0, 1)


def _run(node: AbstractPrimitive[PureDP], data: object) -> tuple[object, ...]:
    plan = Compose(node)
    plan.check(PureDP(10**7))
    return cast(tuple[object, ...], plan.run(data, rng=0).value)


def _run_approx(node: AbstractPrimitive[ApproxDP], data: object) -> tuple[object, ...]:
    plan = Compose(node)
    plan.check(ApproxDP(10, "0.5"))
    return cast(tuple[object, ...], plan.run(data, rng=0).value)


BadInput = tuple[str, Callable[[], object], str]

BAD_INPUTS: list[BadInput] = [
    # (id, action, a fragment the message must contain)
    # privacy parameters
    ("eps-zero", lambda: Laplace(Query.count(), epsilon=0), "epsilon=0 must be > 0"),
    ("eps-negative", lambda: Laplace(Query.count(), epsilon=-1), "epsilon=-1"),
    ("eps-nan", lambda: Laplace(Query.count(), epsilon=float("nan")), "must be finite"),
    ("eps-inf", lambda: Laplace(Query.count(), epsilon=float("inf")), "must be finite"),
    ("eps-minus-inf", lambda: ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=float("-inf")), "must be finite"),
    ("eps-none", lambda: Laplace(Query.count(), epsilon=None), "epsilon=None"),  # type: ignore[arg-type]
    ("eps-string", lambda: Laplace(Query.count(), epsilon="lots"), "decimal or fraction string"),
    ("eps-bool", lambda: NoisyMax(Query.histogram("k", keys=("a",)), epsilon=True), "not a bool"),
    ("rho-zero", lambda: Gaussian(Query.count(), rho=0), "rho=0"),
    ("delta-one", lambda: ProposeTest(M, bound=1, epsilon=1, delta=1), "delta=1 must be in (0, 1)"),
    ("delta-above-one", lambda: StableHistogram(Query.histogram("k"), epsilon=1, delta="1.5"), "delta='1.5'"),
    ("delta-zero-ptr", lambda: ProposeTest(M, bound=1, epsilon=1, delta=0), "delta=0 must be in (0, 1)"),
    ("delta-zero-stable", lambda: StableHistogram(Query.histogram("k"), epsilon=1, delta=0), "delta=0"),
    ("delta-zero-mode", lambda: PTRMode(Query.mode("k"), epsilon=1, delta=0), "delta=0"),
    ("delta-zero-smooth", lambda: SmoothBound(Query.median("x") | Clip(0, 1), epsilon=1, delta=0), "delta=0"),
    ("delta-zero-zcdp-conversion", lambda: ZCDPToApprox(Gaussian(Query.count(), rho=1), delta=0), "delta=0"),
    ("delta-nan", lambda: BoundedLSRatio(PrivateRatio("c"), 1, 1, float("nan")), "must be finite"),
    ("measure-delta-one", lambda: ApproxDP(1, 1), "delta=1"),
    ("measure-eps-negative", lambda: PureDP(-1), "epsilon=-1"),
    ("measure-rho-nan", lambda: ZCDP(float("nan")), "must be finite"),
    # bounds
    ("clip-lower-above-upper", lambda: Clip(3, 1), "must be <= upper=1"),
    ("clip-nan", lambda: Clip(float("nan"), 1), "must be finite"),
    ("clip-inf", lambda: Clip(0, float("inf")), "must be finite"),
    ("sum-without-bounds", lambda: Laplace(Query.sum("x"), epsilon=1), "needs a clipping range"),
    ("mean-without-bounds", lambda: Gaussian(Query.mean("x"), rho=1), "needs a clipping range"),
    ("median-without-bounds", lambda: ExponentialQuantile(Query.median("x"), epsilon=1), "needs a clipping range"),
    ("ptr-without-bounds", lambda: ProposeTest(Query.median("x"), bound=1, epsilon=1, delta="1e-6"), "needs a clipping range"),
    ("quantile-degenerate-range", lambda: ExponentialQuantile(Query.median("x") | Clip(1, 1), epsilon=1), "lower < upper"),
    ("sample-aggregate-lower-above-upper", lambda: SampleAggregateMean(lambda d: 0.0, blocks=4, lower=2, upper=1, epsilon=1), "upper"),
    ("shifted-domain-reversed", lambda: ShiftedInverse(Query.user_sum("v", user="u"), domain=(5, 1), epsilon=1), "y_lo < y_hi"),
    ("shifted-domain-too-large", lambda: ShiftedInverse(Query.user_count(user="u"), domain=(0, 2**70), epsilon=1), "2**64"),
    # structure and parameters
    ("no-global-sensitivity", lambda: Laplace(Query.median("x") | Clip(0, 1), epsilon=1), "no useful global sensitivity"),
    ("histogram-without-keys", lambda: NoisyMax(Query.histogram("k"), epsilon=1), "public keys"),
    ("histogram-duplicate-keys", lambda: Query.histogram("k", keys=["a", "a"]), "distinct"),
    ("quantile-out-of-range", lambda: Query.quantile("x", "1.5"), "q="),
    ("relation-unknown", lambda: Laplace(Query.count(), epsilon=1, relation="swap"), "relation='swap'"),
    ("granularity-huge", lambda: Laplace(M, epsilon=1, granularity=5000), "granularity=5000"),
    ("ptr-bound-zero", lambda: ProposeTest(M, bound=0, epsilon=1, delta="1e-6"), "bound=0"),
    ("empty-compose", lambda: Compose(), "at least one node"),
    ("mixed-units", lambda: Compose(Laplace(Query.count(), epsilon=1), Laplace(Query.user_count(user="u"), epsilon=1)), "neighbouring"),
    ("parallel-substitution", lambda: Parallel("g", {"a": Laplace(Query.count(), epsilon=1, relation="substitution")}), "add_remove"),
    ("empty-vector-sum", lambda: CalibratedLaplaceSum((), epsilon=1), "at least one"),
    ("ratio-empty-column", lambda: PrivateRatio(""), "non-empty column name"),
    ("blocks-zero", lambda: SampleAggregateMean(lambda d: 0.0, blocks=0, lower=0, upper=1, epsilon=1), "blocks=0"),
    # a budget far from 1 is named as the budget, not as an internal lattice exponent
    ("mean-epsilon-1e400", lambda: Laplace(Query.mean("x") | Clip(0, 10), epsilon="1e400"), "epsilon=~1e+400"),
    ("mean-epsilon-1e-400", lambda: Laplace(Query.mean("x") | Clip(0, 10), epsilon="1e-400"), "epsilon=~1e-400"),
    ("sum-rho-1e400", lambda: Gaussian(Query.sum("x") | Clip(0, 10), rho="1e400"), "rho=~1e+400"),
    ("session-budget-not-a-measure", lambda: Session(1.0), "must be PureDP, ApproxDP or ZCDP"),  # type: ignore[type-var]
    ("check-budget-other-measure", lambda: Compose(Laplace(Query.count(), epsilon=1)).check(ZCDP(1)), "conversion"),  # type: ignore[arg-type]
    ("query-not-a-query", lambda: Laplace("count", epsilon=1), "must be a dpalg Query"),  # type: ignore[arg-type]
    # data (the message names the column or the shape, never a value)
    ("data-none", lambda: _run(Laplace(Query.count(), epsilon=1), None), "must be a mapping"),
    ("data-list", lambda: _run(Laplace(Query.count(), epsilon=1), [SECRET, 2.0]), "must be a mapping"),
    ("mismatched-lengths", lambda: _run(Laplace(Query.count(), epsilon=1), {"x": [SECRET, 1.0], "y": [1.0]}), "same length"),
    ("two-dimensional-column", lambda: _run(Laplace(Query.count(), epsilon=1), {"x": [[SECRET, 1.0]]}), "1-D"),
    ("strings-in-numeric-column", lambda: _run(Laplace(M, epsilon=1), {"x": np.array([SECRET_TEXT, "b"])}), "must be numeric"),
    # a str among numbers is missing, not an error (issue 14 §3): see test_data_policy_nan_none_inf_and_empty
    ("conversion-of-the-wrong-measure", lambda: PureToZCDP(SmoothBound(Query.median("x") | Clip(0, 1), epsilon=1, delta="1e-6")), "costs ApproxDP"),  # type: ignore[arg-type]
    ("dates-in-numeric-column", lambda: _run(Laplace(M, epsilon=1), {"x": np.array(["2020-01-01"], dtype="datetime64[D]")}), "must be numeric"),
    ("missing-column", lambda: _run(Laplace(M, epsilon=1), {"y": [SECRET]}), "is not a column"),
    ("fixed-point-lattice-too-fine", lambda: _run(Laplace(Query.sum("x") | Clip(0, 2**1000), epsilon=1, granularity=-100), {"x": [SECRET]}), "2**52"),
    ("ratio-strings", lambda: _run(PrivateRatio("c").ksw(1), {"c": np.array([SECRET_TEXT])}), "must be numeric"),
    ("user-sum-strings", lambda: _run(ShiftedInverse(Query.user_sum("v", user="u"), domain=(0, 10), epsilon=1), {"u": [1], "v": np.array([SECRET_TEXT])}), "must be numeric"),
    ("ptr-strings", lambda: _run_approx(ProposeTest(M, bound=1, epsilon=1, delta="1e-6"), {"x": np.array([SECRET_TEXT])}), "must be numeric"),
]


def test_the_table_is_large_enough() -> None:
    assert len(BAD_INPUTS) >= 40
    assert len({name for name, _, _ in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize(("name", "action", "fragment"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_refused_clearly(name: str, action: Callable[[], object], fragment: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        action()
    message = str(info.value)
    assert fragment in message, message
    assert info.value.owner and info.value.field  # names the owner and the field
    for secret in (repr(SECRET), str(SECRET), SECRET_TEXT, "987654"):
        assert secret not in message


def test_data_policy_nan_none_inf_and_empty() -> None:
    """The documented policy (dpalg/data/_dataset.py, README): NaN/None dropped, ±inf clipped, empty valid."""
    exact = Laplace(Query.count("x"), epsilon=10**6)  # scale 1e-6: the count itself
    assert _run(exact, {"x": [1.0, float("nan"), 2.0]}) == (2,)
    assert _run(exact, {"x": np.array([1.0, None, SECRET], dtype=object)}) == (2,)
    assert _run(exact, {"x": np.array([1.0, SECRET_TEXT, SECRET], dtype=object)}) == (2,)  # a str is missing too
    clipped = (Query.sum("x") | Clip(0, 1)).values(as_dataset({"x": [float("inf"), float("-inf"), 0.5]}))
    assert clipped.tolist() == [1.0, 0.0, 0.5]
    for node in (Laplace(Query.count(), epsilon=1), Laplace(M, epsilon=1), ExponentialQuantile(Query.median("x") | Clip(0, 1), epsilon=1)):
        value = _run(node, {"x": np.array([], dtype=np.float64)})[0]
        assert math.isfinite(float(cast(float, value)))
    value = _run_approx(ProposeTest(M, bound=1, epsilon=1, delta="1e-6"), {"x": []})[0]
    assert value is not None  # ⊥ or a number: defined on empty data


def test_sums_beyond_int64_are_exact_in_fixed_point() -> None:
    """Policy: fixed-point sums use Python integers, so values whose lattice sum overflows int64 are exact."""
    node = Laplace(Query.sum("x") | Clip(0, 2**62), epsilon=10**6)
    value = cast(float, _run(node, {"x": [2.0**62] * 8})[0])
    assert abs(float(value) - 2.0**65) <= 50 * 2.0**62 / 10**6  # 50 noise scales
    assert 2**65 > np.iinfo(np.int64).max


def test_run_without_check_is_refused_before_touching_data() -> None:
    with pytest.raises(UncheckedPlan):
        Compose(Laplace(Query.count(), epsilon=1)).run({"x": [SECRET]})


# --- charges are kept ---------------------------------------------------------------------------


def test_a_run_refused_by_the_public_schema_costs_nothing_and_charges_are_kept() -> None:
    # issue 14 §3: the schema (column names, dtypes, lengths) is checked before anything is charged,
    # so a string column or a ragged table costs nothing -- and never names a value
    session = Session(PureDP(2))
    plan = Compose(Laplace(Query.count(), epsilon="0.5"), Laplace(M, epsilon="0.25"))
    with pytest.raises(InvalidArgument) as info:
        session.run(plan, {"x": np.array([SECRET_TEXT, "b"])}, rng=0)
    assert SECRET_TEXT not in str(info.value)
    assert session.spent == PureDP(0) and session.charges == 0
    with pytest.raises(InvalidArgument):
        session.run(plan, {"x": [1.0], "y": [1.0, 2.0]}, rng=0)  # fails while reading the data
    assert session.spent == PureDP(0)
    session.run(plan, {"x": [1.0, 0.5]}, rng=0)
    assert session.spent == PureDP("0.75") and session.charges == 1
    session.run(plan, {"x": [1.0, 0.5]}, rng=0)
    assert session.spent == PureDP("1.5")
    release = session.run(Compose(Laplace(Query.count(), epsilon="0.5")), {"x": [1.0]}, rng=0)
    assert session.spent == PureDP(2)
    assert release.certificate["session"] == {
        "budget": {"measure": "PureDP", "epsilon": "2"},
        "spent_before": {"measure": "PureDP", "epsilon": "3/2"},
        "spent_after": {"measure": "PureDP", "epsilon": "2"},
    }


# --- certificates: tampering --------------------------------------------------------------------


def _demo_certificate() -> dict[str, object]:
    from dpalg._demo import DEMO_BUDGET, demo_plan, synthetic_data

    plan = demo_plan()
    session = Session(DEMO_BUDGET)
    release = session.run(plan, synthetic_data(300, seed=1), rng=SeededRandomness(1))
    return json.loads(release.certificate_json())  # type: ignore[no-any-return]


CERT = _demo_certificate()
FIELDS = sorted(CERT)


def _mutate(value: object) -> object:
    """A small, type-preserving change somewhere inside ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        if "/" in value and value.replace("/", "").isdigit():
            return value.replace("/", "1/", 1)
        return value + " "
    if value is None:
        return {"forged": True}
    if isinstance(value, list):
        return [_mutate(value[0]), *value[1:]] if value else ["forged"]
    assert isinstance(value, dict)
    for preferred in ("epsilon", "rho", "value", "kind", "$fraction", "spent_after", "fields", "children", "cost", "secure"):
        if preferred in value:
            key = preferred
            break
    else:
        key = sorted(value)[0]
    return {**value, key: _mutate(value[key])}


def test_the_certificate_has_every_documented_field() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "certificates.md").read_text()
    for field in FIELDS:
        assert f"| `{field}` |" in doc, field
    assert CERT["format"] == "dpalg-certificate/2"
    assert audit_certificate(CERT).status == "cost_confirmed"  # unsigned: the cost only


@pytest.mark.parametrize("field", FIELDS)
def test_tampering_with_any_field_is_detected(field: str) -> None:
    forged = json.loads(json.dumps(CERT))
    forged[field] = _mutate(forged[field])
    assert forged != CERT
    report = audit_certificate(forged)
    assert report.status == "malformed" and report.exit_code == 2
    assert any("TAMPERED" in f or "MALFORMED" in f for f in report.findings), report.findings


# fields whose content the audit re-derives: a forger who recomputes the digest is still refuted
REDERIVED = ["plan", "plan_repr", "neighbouring", "claimed_cost", "budget", "derivation", "symbolic_checks", "session", "randomness"]


@pytest.mark.parametrize("field", REDERIVED)
def test_resealed_forgeries_of_claims_are_refuted(field: str) -> None:
    forged = json.loads(json.dumps(CERT))
    if field == "randomness":
        forged[field] = {**forged[field], "secure": True}  # claim a secure source for a seeded run
    elif field == "budget":
        forged[field] = {"measure": "ApproxDP", "epsilon": "1", "delta": "1/100000"}  # too small for the claim
    else:
        forged[field] = _mutate(forged[field])
    report = audit_certificate(seal(forged))
    assert report.status in ("refuted", "malformed"), (field, report)
    assert report.status == "refuted" or field in ("session",)
    assert any(line.startswith("REFUTED") or "MALFORMED" in line for line in report.findings)


def test_the_cli_detects_a_changed_number(tmp_path: Path) -> None:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(CERT))
    assert main(["audit", str(path)]) == 0
    text = path.read_text().replace('"1/10"', '"1/20"', 1)
    path.write_text(text)
    assert main(["audit", str(path)]) in (1, 2)


def test_signatures_cover_every_field() -> None:
    pytest.importorskip("cryptography")
    from dpalg.release import generate_signing_key, sign_certificate, verify_signature

    private, public = generate_signing_key()
    signed = sign_certificate(CERT, private)  # type: ignore[arg-type]
    assert verify_signature(signed, public).status == "valid"
    assert audit_certificate(signed, public_key=public).status == "confirmed"
    for field in [*FIELDS, "signature"]:
        forged = json.loads(json.dumps(signed))
        if field == "signature":
            value = forged["signature"]["value"]
            forged["signature"]["value"] = ("0" if value[0] != "0" else "1") + value[1:]
        else:
            forged[field] = _mutate(forged[field])
        if field not in ("digest", "signature"):  # a forger recomputes the digest but cannot re-sign
            forged = {**seal(forged), "signature": signed["signature"]}
        assert audit_certificate(forged).exit_code == 2, field
        if field != "digest":
            assert verify_signature(forged).status == "invalid", field


def test_signing_without_cryptography_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from dpalg import Unsupported
    from dpalg.release import generate_signing_key, signing_available

    real_import = builtins.__import__

    def no_crypto(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("cryptography"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_crypto)
    monkeypatch.setattr("importlib.import_module", lambda name, *a: no_crypto(name))
    assert not signing_available()
    with pytest.raises(Unsupported, match="dpalg\\[sign\\]"):
        generate_signing_key()


def test_decoding_never_runs_code_from_a_certificate(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = f"exec(chr(111)) or open({str(marker)!r}, 'w') or k"
    plan = Compose(ProposeTest(LocalSensAtDistance(M, "(upper - lower) / Max(n - k, 1)"), bound=1, epsilon=1, delta="1e-6"))
    plan.check(ApproxDP(2, "1e-6"))
    cert = json.loads(plan.run({"x": [0.5]}, rng=0).certificate_json())
    text = json.dumps(cert).replace("(upper - lower) / Max(n - k, 1)", payload.replace("'", "\\u0027").replace('"', '\\"'))
    forged = seal(json.loads(text))
    report = audit_certificate(forged)
    assert report.exit_code == 2 and not marker.exists()
    for formula in ("__import__('os')", "a.b", "getattr(k, 'x')", "lambda: 1", "eval('1')", "k; 1"):
        bad = seal(json.loads(json.dumps(cert).replace("(upper - lower) / Max(n - k, 1)", formula.replace("'", "\\u0027"))))
        assert audit_certificate(bad).exit_code == 2, formula


# --- the catalog of exported mechanisms -----------------------------------------------------------


def _block_mean(data: Dataset) -> float:
    values = data.numeric("x")
    return float(np.mean(values)) if values.size else 0.0


def _block_round(data: Dataset) -> float:
    return float(round(_block_mean(data)))


CATALOG: dict[str, AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP]] = {
    "Laplace-count": Laplace(Query.count(), epsilon=1),
    "Laplace-mean": Laplace(Query.mean("x") | Clip(0, 10), epsilon=1),
    "Laplace-histogram": Laplace(Query.histogram("k", keys=("a", "b")), epsilon=1),
    "Gaussian-sum": Gaussian(Query.sum("x") | Clip(0, 1), rho="0.5"),
    "ExponentialQuantile": ExponentialQuantile(Query.median("x") | Clip(0, 10), epsilon=1, grid_bits=8),
    "NoisyMax": NoisyMax(Query.histogram("k", keys=("a", "b", "c")), epsilon=1),
    "ProposeTest": ProposeTest(Query.median("x") | Clip(0, 10), bound=1, epsilon=1, delta="0.01"),
    "ProposeTest-formula": ProposeTest(LocalSensAtDistance(Query.mean("x") | Clip(0, 1), "(upper - lower) / Max(n - k, 1)"), bound="0.25", epsilon=1, delta="0.01"),
    "PTRMode": PTRMode(Query.mode("x"), epsilon="0.5", delta="0.01"),
    "StableHistogram": StableHistogram(Query.histogram("k"), epsilon=1, delta="0.05"),
    "ShiftedInverse": ShiftedInverse(Query.user_sum("v", user="u") | Clip(0, 4), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearch": ShiftedInverseSearch(Query.user_count(user="u"), domain=(0, 63), epsilon=1),
    "ShiftedInverseSearchZCDP": ShiftedInverseSearchZCDP(Query.user_max("v", user="u"), domain=(0, 63), rho=1),
    "BoundedLS": BoundedLS("a/b", "1/(b_lo - 1)", (NoisyCount("a", where="c"), NoisyCount("b")),
                           epsilon_bound="0.5", epsilon_release="0.5", delta="0.01", domain={"b": 2}),
    "NaiveRatio": NaiveRatio(PrivateRatio("c"), 1),
    "KSWRatio": KSWRatio(PrivateRatio("c"), 1),
    "BoundedLSRatio": BoundedLSRatio(PrivateRatio("c"), "0.5", "0.5", "0.01"),
    "CalibratedGaussianSum": CalibratedGaussianSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), rho="0.5"),
    "CalibratedLaplaceSum": CalibratedLaplaceSum((Query.sum("x") | Clip(0, 1), Query.sum("y") | Clip(-4, 4)), epsilon=1),
    "SmoothBound": SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="0.01"),
    "SmoothBoundCauchy": SmoothBoundCauchy(Query.median("x") | Clip(0, 10), epsilon=1),
    "SampleAggregateMean": SampleAggregateMean(_block_mean, blocks=4, lower=0, upper=10, epsilon=1),
    "SampleAggregateMedian": SampleAggregateMedian(_block_mean, blocks=8, lower=0, upper=10, epsilon=1, delta="0.01"),
    "SampleAggregateMode": SampleAggregateMode(_block_round, blocks=8, epsilon=1, delta="0.01"),
    # user level (issue 15)
    "AutoClipSum": AutoClipSum(Query.sum("v", user="u"), epsilon=1, upper_limit=1024),
    "R2T": R2T(Query.sum("v", user="u"), epsilon=1, upper_limit=1024, thresholds=12),
    "R2T-count": R2T(Query.count(user="u"), epsilon=1, upper_limit=64, thresholds=7),
    "Laplace-user-sum": Laplace(Query.sum("v", user="u") | ClipPerUser(0, 8), epsilon=1),
    "Laplace-user-rows": Laplace(Query.count(user="u") | MaxRowsPerUser(3), epsilon=1),
    "NoisyMax-user": NoisyMax(Query.histogram("k", keys=("a", "b"), user="u") | MaxKeysPerUser(1, rows_per_key=2), epsilon=1),
    "ExponentialQuantile-user": ExponentialQuantile(Query.median("v", user="u") | ClipPerUser(0, 10), epsilon=1, grid_bits=8),
}  # fmt: skip

# user functions cannot be inspected: these nodes get explicit neighbours (one row at an extreme)
SA_PAIRS = (
    NeighbourPair("8 rows at 0; add one at 10", {"x": np.zeros(8)}, {"x": np.array([0.0] * 8 + [10.0])}),
    NeighbourPair("no rows; add one at 10", {"x": np.zeros(0)}, {"x": np.array([10.0])}),
)


def _exported_primitives() -> set[str]:
    return {
        name for name in mechanisms.__all__
        if inspect.isclass(getattr(mechanisms, name)) and issubclass(getattr(mechanisms, name), AbstractPrimitive)
    }  # fmt: skip


def test_the_catalog_covers_every_exported_mechanism() -> None:
    covered = {type(node).__name__ for node in CATALOG.values()}
    assert _exported_primitives() <= covered, sorted(_exported_primitives() - covered)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_mechanism_round_trips_through_its_certificate(name: str) -> None:
    node = CATALOG[name]
    plan = Compose(cast(AbstractPrimitive[PureDP], node))  # the measure type does not matter here
    encoded = json.loads(json.dumps(encode(plan)))
    rebuilt = decode(encoded)
    assert type(rebuilt) is Compose and type(rebuilt.children[0]) is type(node)
    assert encode(rebuilt) == encoded and stable_repr(repr(rebuilt)) == stable_repr(repr(plan))
    if name.startswith("SampleAggregate"):
        # a user function is recorded by name; everything else is identical
        assert all(getattr(rebuilt.children[0], f) == getattr(node, f) for f in ("blocks", "epsilon"))
        assert rebuilt.children[0].cost() == node.cost()
    else:
        assert rebuilt == plan


def test_structural_nodes_round_trip() -> None:
    plan = Compose(
        PureToApprox(Compose(Laplace(Query.count(), epsilon=1), NoisyMax(Query.histogram("k", keys=(1, 2)), epsilon=1))),
        ZCDPToApprox(Gaussian(Query.count(), rho=1), delta="1e-7"),
        PureToApprox(Parallel("g", {"a": Laplace(Query.count(), epsilon=1), "b": Laplace(Query.count(), epsilon=2)})),
    )
    assert decode(json.loads(json.dumps(encode(plan)))) == plan


def _pairs_for(name: str) -> tuple[NeighbourPair, ...] | None:
    return SA_PAIRS if name.startswith("SampleAggregate") else None


def test_candidates_are_neighbours() -> None:
    for name, node in CATALOG.items():
        pairs = _pairs_for(name) or neighbour_candidates(node)
        assert pairs, name
        unit = node.neighbouring.unit
        for pair in pairs:
            x, y = as_dataset(pair.data), as_dataset(pair.neighbour)
            if unit is not None:
                ux = set(x.column(unit).tolist())
                uy = set(y.column(unit).tolist())
                assert len(ux ^ uy) == 1, (name, pair.label)
            elif node.neighbouring.relation == "add_remove":
                assert abs(x.n_rows - y.n_rows) == 1, (name, pair.label)
            else:
                assert x.n_rows == y.n_rows, (name, pair.label)


# The fast variant checks that every catalog mechanism goes through the auditor end to
# end without a false refutation; it needs no power (a false refutation has probability
# at most alpha = 0.01 per pair at ANY number of trials, by the Clopper-Pearson bounds),
# so it runs the auditor's minimum of 100 releases per dataset. The power lives in the
# slow variant below (5000 trials) and in the broken-variant tests of
# tests/mechanisms/test_empirical_audit.py.
FAST_TRIALS = 100


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_empirical_audit_never_refutes_a_dpalg_mechanism(name: str) -> None:
    node = CATALOG[name]
    pairs = _pairs_for(name) or (neighbour_candidates(node)[: 1 if name == "ProposeTest-formula" else 2] if name.startswith("ProposeTest") else None)
    audit = audit_mechanism(node, pairs, trials=FAST_TRIALS, alpha=0.01, rng=SeededRandomness(11))
    assert audit.skipped is None and audit.results
    assert not audit.violation, (name, audit.epsilon_lower, audit.epsilon, audit.delta_lower, audit.delta)


SLOW_TRIALS = {"ProposeTest": 1500, "ProposeTest-formula": 400}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CATALOG))
def test_empirical_audit_never_refutes_a_dpalg_mechanism_slow(name: str) -> None:
    node = CATALOG[name]
    pairs = _pairs_for(name) or (neighbour_candidates(node)[:2] if name == "ProposeTest-formula" else None)
    audit = audit_mechanism(node, pairs, trials=SLOW_TRIALS.get(name, 5000), alpha=0.01, rng=SeededRandomness(12))
    assert not audit.violation, (name, audit.epsilon_lower, audit.epsilon, audit.delta_lower, audit.delta)


def test_a_release_with_a_user_function_is_audited(tmp_path: Path) -> None:
    plan = Compose(cast(SampleAggregateMean, CATALOG["SampleAggregateMean"]))
    plan.check(PureDP(1))
    cert = json.loads(plan.run({"x": np.arange(20.0)}, rng=0).certificate_json())
    assert "<function _block_mean>" in str(cert["plan_repr"])
    assert audit_certificate(cert).status == "cost_confirmed"


def test_fraction_parameters_survive_the_round_trip_exactly() -> None:
    node = Laplace(Query.mean("x") | Clip("-1/3", "0.1"), epsilon=Fraction(1, 3), granularity=-30)
    assert decode(json.loads(json.dumps(encode(node)))) == node


def _concurrent_releases(threads: int, per_thread: int) -> None:
    import threading

    from dpalg.graph._testing import Fixed

    step = Fraction(1, 1000)
    session = Session(PureDP(Fraction(threads * per_thread, 1000) - step))  # the very last release must be refused
    plan = Compose(Fixed(PureDP(step)))
    spends: list[tuple[Fraction, Fraction]] = []
    refused = [0]
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(per_thread):
            try:
                cert = session.run(plan, {"x": [1.0]}, rng=0).certificate
            except Exception:  # noqa: BLE001 - only BudgetExceeded is expected; counted below
                with lock:
                    refused[0] += 1
                continue
            spend = cert["session"]
            assert isinstance(spend, dict)
            before, after = spend["spent_before"], spend["spent_after"]
            assert isinstance(before, dict) and isinstance(after, dict)
            with lock:
                spends.append((Fraction(str(before["epsilon"])), Fraction(str(after["epsilon"]))))

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert refused[0] == 1 and len(spends) == threads * per_thread - 1 == session.charges
    assert session.spent == session.budget
    # every charge is recorded exactly once: the (before, after) intervals tile [0, budget]
    spends.sort()
    assert spends[0][0] == 0 and spends[-1][1] == session.budget.epsilon
    assert all(a[1] == b[0] and a[1] - a[0] == step for a, b in zip(spends, spends[1:]))


def test_concurrent_session_releases_record_every_charge() -> None:
    _concurrent_releases(8, 150)


@pytest.mark.slow
def test_concurrent_session_releases_record_every_charge_slow() -> None:
    _concurrent_releases(8, 10_000)  # 8 threads x 10^4 releases
