"""One property-based conformance suite over the in-process backends (issue 17, part 4).

Hypothesis draws whole data frames -- a numeric column ``x`` (float, int or bool;
NaN, None, ±inf, −0.0, ±1e308, 2**53 + 1, ties at .5 on the lattice, duplicates,
empty) and an id column ``id`` (int, float, bool or string, with missing ids and
repeats) -- and asks every reduction of :class:`~dpalg.data.Reductions` on

* numpy: the frame as a dict of Python lists (the reference),
* a pandas DataFrame (nullable ``Int64``/``boolean`` where a column has a missing value),
* a polars DataFrame and the same frame as a LazyFrame.

Every answer must be bit-equal to the dict's: arrays by dtype, shape and bytes,
floats by their hex (so the sign of a zero counts, as the contract fixes it when
the row order is the same), keys with their type, and an error by its type and
message. ``tests/data/test_polars_backend.py`` and ``test_spark_backend.py`` hold
the hand-picked cases; this file is the generated one, and
``test_backend_conformance_spark.py`` asks the same questions of Spark.

A seeded plan (a Laplace sum, a SmoothBound median and a Laplace histogram, in
one ``Compose``) gives the same value and the same certificate on every backend,
except ``backend`` (which names the backend and its versions), ``created`` and
the digest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
from backend_support import CLIP_BOUNDS, COMPOSE_BUDGET, ID_VALUES, INF, INT64_BOUNDS, KEYS, NAN, Ask, Question
from backend_support import answer, ask_strategy, bool_values, comparable, compose_plan, float_values, int_values, square_specs
from backend_support import people, seeded_release, window_buckets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("polars")
pytest.importorskip("pandas")

import pandas as pd  # noqa: E402
import polars as pl  # noqa: E402

from dpalg import InvalidArgument  # noqa: E402
from dpalg.data import SumSpec, as_dataset, as_reductions  # noqa: E402
from dpalg.data import _numpy_reductions as nr  # noqa: E402
from dpalg.release import audit_certificate, seal  # noqa: E402

# -- frames (the adversarial values and ids: backend_support) -------------------------------

_values: dict[str, st.SearchStrategy[Any]] = {"float": float_values, "int": int_values, "bool": bool_values}
_ids: dict[str, st.SearchStrategy[Any]] = {kind: st.sampled_from(ids) for kind, ids in ID_VALUES.items()}
_POLARS = {"float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean, "str": pl.String}


@attrs.frozen
class Frame:
    """Two columns of one length: ``x`` of kind ``x_kind`` and ``id`` of kind ``id_kind``."""

    x_kind: str
    x: list[Any]
    id_kind: str
    id: list[Any]

    def as_dict(self) -> dict[str, list[Any]]:
        return {"x": self.x, "id": self.id}

    def pandas(self) -> pd.DataFrame:
        def series(values: list[Any], kind: str) -> pd.Series:
            missing = any(v is None for v in values)
            dtype = {"float": "float64", "int": "Int64" if missing else "int64", "bool": "boolean" if missing else "bool", "str": object}[kind]
            return pd.Series(values, dtype=dtype)

        return pd.DataFrame({"x": series(self.x, self.x_kind), "id": series(self.id, self.id_kind)})

    def polars(self) -> pl.DataFrame:
        return pl.DataFrame([pl.Series("x", self.x, dtype=_POLARS[self.x_kind]), pl.Series("id", self.id, dtype=_POLARS[self.id_kind])])

    def backends(self) -> Iterator[tuple[str, object]]:
        """The same frame in every in-process form but the reference dict."""
        yield "pandas", self.pandas()
        frame = self.polars()
        yield "polars DataFrame", frame
        yield "polars LazyFrame", frame.lazy()


@st.composite
def frames(draw: st.DrawFn, *, max_rows: int = 24, x_kinds: tuple[str, ...] = ("float", "float", "int", "bool")) -> Frame:
    n = draw(st.integers(0, max_rows))
    x_kind = draw(st.sampled_from(x_kinds))
    id_kind = draw(st.sampled_from(sorted(_ids)))
    x = draw(st.lists(_values[x_kind], min_size=n, max_size=n))
    ids = draw(st.lists(_ids[id_kind], min_size=n, max_size=n))
    return Frame(x_kind, x, id_kind, ids)


# -- questions -----------------------------------------------------------------------------

BOUNDS = [*CLIP_BOUNDS, INT64_BOUNDS]
UNIT_BOUNDS: list[tuple[float | None, float | None]] = [
    (None, None), (0.0, 10.0), (-2.5, 7.25), (None, 5.0), (0.0, None), (-1e308, 1e308), (3.0, 3.0), (0.1, 0.5), (-0.0, 0.0),
]  # fmt: skip
asks = ask_strategy(BOUNDS, [1, 2, 3, 4, 10], UNIT_BOUNDS)


def numeric_questions(column: str, ask: Ask) -> list[Question]:
    lower, upper = ask.bounds
    specs = [SumSpec(column, lower, upper, k) for k in ask.ks]
    squares = square_specs(column, lower, upper, ask.ks)
    out: list[Question] = [
        (f"count({column})", lambda r: r.count(column)),
        (f"count_distinct({column})", lambda r: r.count_distinct(column)),
        (f"clipped_sums({column}, {lower}, {upper}, ks={ask.ks})", lambda r: r.clipped_sums(specs)),
        (f"clipped_sums({column}, {lower}, {upper}, squares, ks={ask.ks})", lambda r: r.clipped_sums(squares)),
        (f"order_window({column}, {lower}, {upper}, {ask.first}..+{ask.width})",
         lambda r: r.order_window(column, lower, upper, ask.first, ask.first + ask.width)),
        (f"order_window({column}) all", lambda r: r.order_window(column, lower, upper, -3, 10**6)),
        (f"extremes({column}, k={ask.k})", lambda r: r.extremes(column, lower, upper, ask.k)),
    ]  # fmt: skip
    if lower < upper:
        out.append((f"grid_counts({column}, bits={ask.bits})", lambda r: r.grid_counts(column, lower, upper, ask.bits)))
    return out


def key_questions(column: str) -> list[Question]:
    return [
        (f"key_counts({column})", lambda r: r.key_counts(column, KEYS)),
        (f"key_histogram({column})", lambda r: r.key_histogram(column)),
        (f"unit_count({column})", lambda r: r.unit_count(column)),
    ]


def questions(frame: Frame, ask: Ask) -> list[Question]:
    out: list[Question] = [("n_rows", lambda r: r.n_rows)]
    out += numeric_questions("x", ask) + key_questions("x") + key_questions("id")
    if frame.id_kind != "str":  # a string column is not numeric: refused by its type (polars) or missing by value (a list)
        out += numeric_questions("id", ask)
    return out + per_unit_questions(frame, ask)


def per_unit_questions(frame: Frame, ask: Ask) -> list[Question]:
    """The per-unit reductions of the user-level mechanisms (ascending entries, one per unit), when the backends have them."""
    if not hasattr(nr.NumpyReductions, "per_unit_sums"):
        return []
    lower, upper = ask.unit_bounds
    out: list[Question] = [
        (f"per_unit_sums(id, x, {lower}, {upper}, k={ask.unit_k})", lambda r: r.per_unit_sums("id", "x", lower, upper, ask.unit_k)),
        ("per_unit_row_counts(id)", lambda r: r.per_unit_row_counts("id", None)),
        ("per_unit_row_counts(id, x)", lambda r: r.per_unit_row_counts("id", "x")),
        (f"per_unit_max(id, x, {lower}, {upper})", lambda r: r.per_unit_max("id", "x", lower, upper)),
        ("per_unit_row_counts(x)", lambda r: r.per_unit_row_counts("x", None)),
    ]
    if frame.id_kind != "str":  # the id column as the values, the numeric column as the units
        out.append((f"per_unit_sums(x, id, k={ask.unit_k})", lambda r: r.per_unit_sums("x", "id", lower, upper, ask.unit_k)))
        out.append(("per_unit_max(x, id)", lambda r: r.per_unit_max("x", "id", lower, upper)))
    return out


def assert_conformant(frame: Frame, ask: Ask, *, buckets: int | None = None) -> None:
    with window_buckets(buckets):
        reference = as_reductions(as_dataset(frame.as_dict()))
        assert isinstance(reference, nr.NumpyReductions)
        asked = questions(frame, ask)
        want = [answer(lambda: q(reference)) for _, q in asked]
        for label, data in frame.backends():
            backend = as_reductions(as_dataset(data))
            for (name, q), expected in zip(asked, want):
                got = answer(lambda: q(backend))
                assert got == expected, f"{label} {name}: {got} != dict {expected}"


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(frames(), asks, st.sampled_from([None, None, 4]))
def test_every_reduction_is_bit_equal_on_dict_pandas_and_polars(frame: Frame, ask: Ask, buckets: int | None) -> None:
    assert_conformant(frame, ask, buckets=buckets)


@pytest.mark.parametrize(
    "frame",
    [
        Frame("float", [], "str", []),
        Frame("float", [None, NAN, None], "int", [None, None, 1]),
        Frame("float", [0.0, -0.0, -0.0, 0.0, 1.0], "float", [-0.0, 0.0, 0.0, NAN, 1.0]),
        Frame("float", [2.5, 2.5, 0.5, -0.5, 1.5, INF, -INF, 1e308, -1e308, 5e-324], "bool", [True, None, False, True, True, None, False, False, True, True]),
        Frame("int", [2**53, 2**53 + 1, None, 2**63 - 1, -(2**63), 3], "int", [2**53, 2**53 + 1, None, 2**63 - 1, 2**53, 2**53 + 1]),
        Frame("bool", [True, None, False, True], "str", ["a", None, "", "a"]),
    ],
    ids=["empty", "all-missing", "zeros", "specials", "huge-ints", "bools"],
)
@pytest.mark.parametrize("bounds", [BOUNDS[1], BOUNDS[4], BOUNDS[7]], ids=["-2.5..7.25", "1e308", "2^63"])
def test_chosen_frames_are_bit_equal(frame: Frame, bounds: tuple[Fraction, Fraction]) -> None:
    for buckets in (None, 4):
        unit_bounds = UNIT_BOUNDS[0] if buckets is None else UNIT_BOUNDS[2]
        assert_conformant(frame, Ask(bounds, [-1, 0, 2, -1074], 3, 1, 3, 3, unit_bounds, -20), buckets=buckets)


def test_nullable_pandas_ints_keep_large_ids_apart() -> None:
    """pandas turns a nullable Int64 column with a missing value into float64 in ``to_numpy()``;
    2**53 and 2**53 + 1 would then be one user. The adapter keeps them exact, as a dict and polars do."""
    ids: list[Any] = [2**53, 2**53 + 1, None]
    for dtype in ("Int64", "int64[pyarrow]", "UInt64"):
        if dtype.endswith("[pyarrow]"):
            pytest.importorskip("pyarrow")
        data = pd.DataFrame({"id": pd.Series(ids, dtype=dtype)})
        r = as_reductions(as_dataset(data))
        assert r.unit_count("id") == 2, dtype
        assert answer(lambda: r.key_histogram("id")) == answer(lambda: as_reductions(as_dataset({"id": ids})).key_histogram("id"))


# -- a seeded plan, end to end -------------------------------------------------------------

# histogram keys are str or int (1 is the float id 1.0); no bool id is ever an int key, so listing keys for a
# bool column is refused before the charge (docs/data_policy.md): a bool column is counted instead (None)
KEYS_BY_KIND: dict[str, tuple[Any, ...] | None] = {"int": (0, 1, 2, 2**53 + 1), "float": (0, 1, 2), "bool": None, "str": ("a", "b", "", "zz")}


def release(frame_keys: tuple[Any, ...] | None, data: object) -> tuple[str, dict[str, Any]]:
    return seeded_release(compose_plan(frame_keys), COMPOSE_BUDGET, data)


def assert_same_release(frame: Frame) -> None:
    keys = KEYS_BY_KIND[frame.id_kind]
    value, certificate = release(keys, frame.as_dict())
    assert certificate["backend"]["name"] == "numpy" and set(certificate["backend"]["versions"]) == {"numpy"}
    for label, data in frame.backends():
        got_value, got = release(keys, data)
        assert got_value == value, label
        assert comparable(got) == comparable(certificate), label
        name = "numpy" if label == "pandas" else "polars"
        assert got["backend"]["name"] == name, label
        assert set(got["backend"]["versions"]) == ({"numpy"} if name == "numpy" else {"numpy", "polars"}), label


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames(max_rows=40, x_kinds=("float", "int")))
def test_a_seeded_plan_gives_the_same_release_and_certificate_on_every_backend(frame: Frame) -> None:
    assert_same_release(frame)


def test_a_seeded_plan_on_a_larger_frame() -> None:
    x, ids, _ = people(3000, 11, ("a", "b", "", "c"))  # synthetic data only
    assert_same_release(Frame("float", x, "str", ids))


# -- the certificate's backend field -----------------------------------------------------------

def test_the_backend_is_part_of_the_digest_and_old_certificates_still_audit() -> None:
    _, certificate = release(KEYS_BY_KIND["str"], Frame("float", [1.0, 2.0], "str", ["a", "b"]).polars())
    assert audit_certificate(certificate).status == "cost_confirmed"
    report = audit_certificate(certificate)
    assert "backend" in report.unverifiable and any(f.startswith("backend: polars (") for f in report.findings)

    relabelled = {**certificate, "backend": {"name": "numpy", "versions": {"numpy": "2.0"}}}
    assert audit_certificate(relabelled).status == "malformed"  # the digest covers the backend
    assert audit_certificate(seal(relabelled)).status == "cost_confirmed"  # resealed: a claim, like the value

    old = seal({k: v for k, v in certificate.items() if k != "backend"})  # a certificate made before the field existed
    report = audit_certificate(old)
    assert report.status == "cost_confirmed" and "backend" not in report.unverifiable


@pytest.mark.parametrize(
    "backend",
    [
        "polars",
        {"name": "polars"},
        {"name": "", "versions": {}},
        {"name": "polars", "versions": {"polars": 1}},
        {"name": "polars", "versions": ["polars"]},
        {"name": "polars", "versions": {str(i): "1" for i in range(17)}},
        {"name": "polars", "versions": {}, "extra": True},
    ],
)
def test_a_malformed_backend_is_malformed(backend: Any) -> None:
    _, certificate = release(KEYS_BY_KIND["str"], {"x": [1.0], "id": ["a"]})
    report = audit_certificate(seal({**certificate, "backend": backend}))
    assert report.status == "malformed" and report.exit_code == 2
    assert report.findings[-1].startswith("MALFORMED: backend ")


def test_a_dict_run_records_numpy_without_loading_polars_pandas_or_pyspark(tmp_path: Any) -> None:
    code = (
        "import json, sys, warnings\nwarnings.simplefilter('ignore')\nfrom dpalg import PureDP, Query\nfrom dpalg.mechanisms import Laplace\n"
        "p = Laplace(Query.count(), epsilon=1)\np.check(PureDP(1))\nc = p.run({'x': [1.0]}, rng=1).certificate\n"
        "print(json.dumps([c['backend'], [m for m in ('polars', 'pandas', 'pyspark') if m in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    backend, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert backend == {"name": "numpy", "versions": {"numpy": np.__version__}} and loaded == [], done.stderr[-2000:]


def test_sources_describe_their_backend_without_reading_a_row() -> None:
    from dpalg.data._dataset import BackendInfo
    from dpalg.data._spark import SparkSource  # imports pyspark only when it computes

    frame = pl.DataFrame({"x": [1.0, 2.0]})
    polars = as_dataset(frame.lazy()).backend
    assert polars.name == "polars" and dict(polars.versions) == {"polars": pl.__version__, "numpy": np.__version__}
    assert as_dataset(frame).take(np.array([True, False])).backend == as_dataset(frame).backend  # rows of a polars frame

    class Session:
        version = "4.0.1"

    class Broken:
        @property
        def version(self) -> str:
            raise RuntimeError("the session is gone")

    def fake_frame(module: str, session: object) -> object:  # a Spark DataFrame as SparkSource sees it, with no JVM
        kind = type("DataFrame", (), {"schema": type("Schema", (), {"fields": ()})(), "sparkSession": session})
        kind.__module__ = module
        return kind()

    classic = SparkSource(fake_frame("pyspark.sql.classic.dataframe", Session())).backend
    assert classic.name == "spark" and set(dict(classic.versions)) == {"pyspark", "spark", "numpy"}
    assert dict(classic.versions)["spark"] == "4.0.1"
    connect = SparkSource(fake_frame("pyspark.sql.connect.dataframe", Broken())).backend
    assert connect.name == "spark-connect" and set(dict(connect.versions)) == {"pyspark", "numpy"}  # no session version: left out

    with pytest.raises(InvalidArgument, match="name"):
        BackendInfo("", {})
    with pytest.raises(InvalidArgument, match="each package once"):
        BackendInfo("numpy", [("numpy", "1"), ("numpy", "2")])
