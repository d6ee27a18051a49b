"""Certificates name node classes by ``module:Class``; those written before the mechanisms were
grouped into framework packages name the old flat modules. Each old name must still lead the
decoder (``importlib.import_module`` then ``getattr``, as :mod:`dpalg.release._serialize` does)
to the same class, or such a certificate would be refuted as an unknown node."""

from __future__ import annotations

import importlib
import json

import pytest

import dpalg.mechanisms as mechanisms
from dpalg.release._serialize import decode, encode

#: every node class (or node field class) of the old flat modules, as certificates named them
OLD_PATHS = {
    "_global": ("Laplace", "Gaussian"),
    "_per_coordinate": ("CalibratedGaussianSum", "CalibratedLaplaceSum"),
    "_exponential": ("ExponentialQuantile", "NoisyMax"),
    "_ptr": ("ProposeTest", "PTRMode"),
    "_ls_at_distance": ("LocalSensAtDistance",),
    "_stable_histogram": ("StableHistogram",),
    "_smooth_bound": ("SmoothBound", "SmoothBoundCauchy"),
    "_sample_aggregate": ("SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode"),
    "_shifted_inverse": ("ShiftedInverse", "ShiftedInverseSearch", "ShiftedInverseSearchZCDP"),
    "_bounded_ls": ("BoundedLS", "NoisyCount"),
    "_ratio": ("PrivateRatio", "NaiveRatio", "KSWRatio", "BoundedLSRatio"),
    "_auto_clip": ("AutoClipSum",),
}


@pytest.mark.parametrize(("old", "names"), sorted(OLD_PATHS.items()))
def test_an_old_module_path_leads_to_the_same_class(old: str, names: tuple[str, ...]) -> None:
    module = importlib.import_module(f"dpalg.mechanisms.{old}")
    for name in names:
        assert getattr(module, name) is getattr(mechanisms, name), f"dpalg.mechanisms.{old}:{name}"


def test_every_exported_class_had_an_old_path_listed() -> None:
    listed = {name for names in OLD_PATHS.values() for name in names}
    classes = {name for name in mechanisms.__all__ if isinstance(getattr(mechanisms, name), type)} - {"PTRBoundSuggestion"}
    assert classes <= listed, sorted(classes - listed)


def test_a_plan_with_an_old_node_path_decodes_to_the_same_plan() -> None:
    from dpalg import Query

    node = mechanisms.Laplace(Query.count("x"), epsilon=1)
    encoded = json.loads(json.dumps(encode(node)))
    assert encoded["$node"] == "dpalg.mechanisms.global_noise._laplace_gaussian:Laplace"
    encoded["$node"] = "dpalg.mechanisms._global:Laplace"
    assert decode(encoded) == node
