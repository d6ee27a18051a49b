"""Loud insecure runs (issue 20 item 3): a seeded run warns, says NOT SECURE, and is recorded as insecure."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from dpalg import InsecureRandomnessWarning, PureDP, Query, Session
from dpalg.cli import main
from dpalg.mechanisms import Laplace
from dpalg.noise import GeneratorRandomness, RngLike, SeededRandomness, resolve_rng

_DATA = {"x": np.arange(10.0)}


def _node() -> Laplace:
    return Laplace(Query.count(), epsilon=Fraction(1, 10))


@pytest.mark.parametrize("rng", [7, SeededRandomness(7), np.random.default_rng(7)], ids=["int", "seeded", "numpy"])
def test_seeded_runs_warn_and_say_not_secure(rng: RngLike) -> None:
    with pytest.warns(InsecureRandomnessWarning, match="NOT SECURE"):
        release = Session(PureDP(1)).run(_node(), _DATA, rng=rng)
    assert not release.secure
    assert "NOT SECURE" in repr(release)
    randomness = release.certificate["randomness"]
    assert isinstance(randomness, dict) and randomness["secure"] is False and "NOT SECURE" in str(randomness["kind"])


def test_plan_run_warns_too() -> None:
    node = _node()
    node.check(PureDP(1))
    with pytest.warns(InsecureRandomnessWarning):
        node.run(_DATA, rng=1)


def test_secure_runs_are_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRandomnessWarning)
        release = Session(PureDP(1)).run(_node(), _DATA)
    assert release.secure
    assert repr(release) == f"Release(value={release.value!r})"


def test_a_numpy_generator_is_used_as_given_and_recorded() -> None:
    """The words come from the caller's generator (same seed, same release) and its kind is recorded."""
    source = resolve_rng(np.random.default_rng(5))
    assert isinstance(source, GeneratorRandomness) and not source.secure
    assert source.kind == "numpy-generator(PCG64) NOT SECURE"
    a = Session(PureDP(1)).run(_node(), _DATA, rng=np.random.default_rng(5)).value
    b = Session(PureDP(1)).run(_node(), _DATA, rng=np.random.default_rng(5)).value
    assert a == b


def test_check_prints_the_summary(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    plan_file = tmp_path / "plan.py"
    plan_file.write_text(
        "from dpalg import Compose, Query\nfrom dpalg.mechanisms import Laplace\n"
        "plan = Compose(Laplace(Query.count(), epsilon='0.5'), Laplace(Query.count(), epsilon='0.5'))\n"
    )
    assert main(["check", f"{plan_file}:plan", "--budget", "eps=1", "--alpha", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "accuracy (99%)" in out and "±9 absolute (99%, tight)" in out
    assert main(["check", f"{plan_file}:plan", "--budget", "eps=1", "--alpha", "2"]) == 2
