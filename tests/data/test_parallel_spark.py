"""``Parallel(by=..., parts=...)`` on Spark: each part a filtered frame on the executors, bit for bit the numpy split.

* seeded releases of row-level and user-level ``Parallel`` plans on hypothesis
  frames (string, long and double keys with null, NaN, −0.0, 2**53 + 1; string,
  long and double ids) are identical on the dict and on the Spark frame under
  ``repartition(1)``, ``repartition(7)`` and ``repartition(7, "uid")``;
* no column is collected to the driver (the collecting reads of the source
  raise), and that check sees a collected column (the in-memory split);
* unit locality of the user-level split: adding a user and reordering the rows
  changes no other user's part (a positional rule fails this: checked by hand,
  see the test's docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from backend_support import NAN, comparable, seeded_release, spark_module_marks, USER_LAYOUTS, user_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = spark_module_marks()

from dpalg import Clip, ClipPerUser, MaxRowsPerUser, Parallel, PureDP, Query  # noqa: E402
from dpalg.data import as_dataset  # noqa: E402
from dpalg.data._grouping import key_parts  # noqa: E402
from dpalg.data._spark import SparkSource  # noqa: E402
from dpalg.mechanisms import Laplace  # noqa: E402

KEY_VALUES: dict[str, tuple[list[Any], tuple[str | int, ...]]] = {
    "string": ([None, "a", "b", "c", "", "ä"], ("b", "a", "")),
    "long": ([None, 0, 1, 2, -1, 2**53, 2**53 + 1], (2, 0, 2**53 + 1)),
    "double": ([None, NAN, 0.0, -0.0, 1.0, 2.5, 2.0], (2, 0, 1)),
}
ID_VALUES: dict[str, list[Any]] = {
    "string": [None, "u0", "u1", "u2", "u3", ""],
    "long": [None, 0, 1, 2, 3, 2**53 + 1],
    "double": [None, NAN, 0.0, -0.0, 1.0, 2.5],
}
X_VALUES: list[Any] = [None, NAN, 0.0, -0.0, 1.5, 2.5, 7.0, 12.0, -3.0, float("inf")]
LAYOUTS = USER_LAYOUTS


@attrs.frozen
class Frame:
    id_type: str
    uid: list[Any]
    key_type: str
    k: list[Any]
    x: list[Any]
    layout: str

    def as_dict(self) -> dict[str, list[Any]]:
        return {"uid": self.uid, "k": self.k, "x": self.x}

    def spark(self, session: Any) -> Any:
        frame = session.createDataFrame(list(zip(self.uid, self.k, self.x)), f"uid {self.id_type}, k {self.key_type}, x double")
        return user_layout(frame, self.layout)


@st.composite
def frames(draw: st.DrawFn, *, max_rows: int = 40) -> Frame:
    n = draw(st.integers(0, max_rows))
    id_type = draw(st.sampled_from(sorted(ID_VALUES)))
    key_type = draw(st.sampled_from(sorted(KEY_VALUES)))
    uid = draw(st.lists(st.sampled_from(ID_VALUES[id_type]), min_size=n, max_size=n))
    k = draw(st.lists(st.sampled_from(KEY_VALUES[key_type][0]), min_size=n, max_size=n))
    x = draw(st.lists(st.sampled_from(X_VALUES), min_size=n, max_size=n))
    return Frame(id_type, uid, key_type, k, x, draw(st.sampled_from(LAYOUTS)))


Child = Callable[[], Any]
CHILDREN: dict[str, Child] = {
    "row count": lambda: Laplace(Query.count(), epsilon=1),
    "row sum": lambda: Laplace(Query.sum("x") | Clip(0, 10), epsilon=1),
    "user count": lambda: Laplace(Query.count(user="uid") | MaxRowsPerUser(2), epsilon=1),
    "user sum": lambda: Laplace(Query.sum("x", user="uid") | ClipPerUser(0, 20), epsilon=1),
}


def parallel(keys: tuple[str | int, ...], child: Child) -> Any:
    parts: dict[Any, Any] = {key: child() for key in keys}  # str or int keys, as the frame's key column
    return Parallel(by="k", parts=parts)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=frames(), name=st.sampled_from(sorted(CHILDREN)))
def test_seeded_releases_equal_numpy_in_every_layout(spark: Any, frame: Frame, name: str) -> None:
    keys = KEY_VALUES[frame.key_type][1]
    want, certificate = seeded_release(parallel(keys, CHILDREN[name]), PureDP(1), frame.as_dict())
    got, got_certificate = seeded_release(parallel(keys, CHILDREN[name]), PureDP(1), frame.spark(spark))
    assert (got, comparable(got_certificate)) == (want, comparable(certificate)), (name, frame.layout)


# -- nothing collected -----------------------------------------------------------------------


def _refuse_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, name: str, **kwargs: object) -> object:
        raise AssertionError(f"column {name} collected")

    for read in ("values", "materialise", "numeric"):
        monkeypatch.setattr(SparkSource, read, refuse)


def _users() -> dict[str, list[Any]]:
    gen = np.random.default_rng(4)
    n = 600
    uid: list[Any] = [f"u{int(u)}" for u in gen.integers(0, 80, n)]
    k: list[Any] = [str(c) for c in gen.choice(list("abcd"), n)]
    x: list[Any] = [float(v) for v in np.round(gen.exponential(5, n), 1)]
    k[::41] = [None] * len(k[::41])
    return {"uid": uid, "k": k, "x": x}


def test_no_column_is_collected_to_the_driver(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    columns = _users()
    keys = ("c", "a", "b")
    want = [seeded_release(parallel(keys, child), PureDP(1), columns)[0] for child in CHILDREN.values()]
    _refuse_collection(monkeypatch)
    frame = spark.createDataFrame(list(zip(columns["uid"], columns["k"], columns["x"])), "uid string, k string, x double").repartition(5)
    got = [seeded_release(parallel(keys, child), PureDP(1), frame)[0] for child in CHILDREN.values()]
    assert got == want


def test_the_no_collect_check_sees_a_collected_column(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: with the split made in memory (the source offers no parts), the release fails."""
    columns = _users()
    _refuse_collection(monkeypatch)
    monkeypatch.setattr(SparkSource, "parts", lambda self, *args, **kwargs: None)
    frame = spark.createDataFrame(list(zip(columns["uid"], columns["k"], columns["x"])), "uid string, k string, x double")
    with pytest.raises(Exception, match="collected|BackendError|failed"):
        seeded_release(parallel(("a", "b"), CHILDREN["user count"]), PureDP(1), frame)


# -- unit locality ---------------------------------------------------------------------------


def _users_by_part(spark: Any, uid: list[int], k: list[str], keys: tuple[str, ...]) -> dict[int, str]:
    """Each user's part on the executors (the test reads the parts' ids itself)."""
    frame = spark.createDataFrame(list(zip(uid, k)), "uid long, k string").repartition(7)
    parts = key_parts(as_dataset(frame), "k", keys, unit="uid")
    assert parts is not None
    try:
        out: dict[int, str] = {}
        for key, part in zip(keys, parts.datasets):
            source = part.source
            assert isinstance(source, SparkSource)
            for row in source.frame.select("uid").distinct().collect():
                assert int(row[0]) not in out  # a user is in one part
                out[int(row[0])] = key
        return out
    finally:
        parts.close()


def test_the_user_level_split_is_unit_local(spark: Any) -> None:
    """Adding a user and reordering the rows changes no other user's part.

    Checked by hand: with the user's least rank replaced in
    :func:`dpalg.data._spark_grouping.spark_parts` by the rank of the user's first
    row in the partition's order (``F.first`` over the user's window), this test fails.
    """
    gen = np.random.default_rng(6)
    n = 800
    uid = [int(u) for u in gen.integers(0, 60, n)]
    k = [str(c) for c in gen.choice(list("abcde"), n)]
    keys = ("d", "b", "c")
    before = _users_by_part(spark, uid, k, keys)
    order = gen.permutation(n)
    after = _users_by_part(spark, [99] * 5 + [uid[i] for i in order], list("dcbba") + [k[i] for i in order], keys)
    assert {u: after[u] for u in before} == before
    assert after[99] == "b" and set(after) == set(before) | {99}  # the smallest listed key among its rows
    for u, key in before.items():  # the numpy rule: the smallest listed key among the user's rows
        assert key == min(c for v, c in zip(uid, k) if v == u and c in keys)
