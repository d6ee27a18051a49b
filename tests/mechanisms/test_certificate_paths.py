"""Certificates name node classes by a stable ``module:Class`` name.

The classes defined before the mechanisms were grouped into framework packages
keep the name certificates first gave them (the old flat module,
``dpalg.mechanisms._ptr:ProposeTest``), listed in
:data:`dpalg.mechanisms.CERTIFICATE_NAMES`: a certificate made today is the same
as before the split, and every certificate made before still decodes to the same
class (else it would be refuted as an unknown node). The expected names below were
read off the classes' modules before the split.
"""

from __future__ import annotations

import json

import attrs
import pytest

import dpalg.mechanisms as mechanisms
from dpalg import Clip, Query
from dpalg.release._serialize import certificate_name, decode, encode

#: every node class (or node field class) of the old flat modules, as certificates named them
OLD_PATHS = {
    "_global": ("Laplace", "Gaussian"),
    "_per_coordinate": ("CalibratedGaussianSum", "CalibratedLaplaceSum"),
    "_exponential": ("ExponentialQuantile", "NoisyMax"),
    "_ptr": ("ProposeTest", "PTRMode"),
    "_ls_at_distance": ("LocalSensAtDistance",),
    "_stable_histogram": ("StableHistogram",),
    "_smooth_bound": ("SmoothBound", "SmoothBoundCauchy"),
    "_smooth_formula": ("FormulaEnvelope",),
    "_sample_aggregate": ("SampleAggregateMean", "SampleAggregateMedian", "SampleAggregateMode"),
    "_sample_aggregate_blocks": ("QueryStatistic",),
    "_shifted_inverse": ("ShiftedInverse", "ShiftedInverseSearch", "ShiftedInverseSearchZCDP"),
    "_bounded_ls": ("BoundedLS", "NoisyCount"),
    "_ratio": ("PrivateRatio", "NaiveRatio", "KSWRatio", "BoundedLSRatio"),
    "_auto_clip": ("AutoClipSum",),
}
_CLASSES = {cls.__name__: cls for cls in mechanisms.CERTIFICATE_NAMES}
#: classes added after the split: certificates name them by their own module, from the start
NEW_CLASSES = {"R2T": "dpalg.mechanisms.r2t._r2t:R2T"}


@pytest.mark.parametrize(("old", "names"), sorted(OLD_PATHS.items()))
def test_a_class_keeps_the_name_certificates_gave_it(old: str, names: tuple[str, ...]) -> None:
    for name in names:
        cls = _CLASSES[name]
        assert certificate_name(cls) == f"dpalg.mechanisms.{old}:{name}"
        if name in mechanisms.__all__:
            assert getattr(mechanisms, name) is cls


def test_every_exported_class_has_a_stable_name() -> None:
    listed = {name for names in OLD_PATHS.values() for name in names}
    classes = {name for name in mechanisms.__all__ if isinstance(getattr(mechanisms, name), type)} - {"PTRBoundSuggestion"}
    assert classes <= listed | set(NEW_CLASSES), sorted(classes - listed - set(NEW_CLASSES))
    assert set(_CLASSES) == listed
    for name, stable in NEW_CLASSES.items():
        assert certificate_name(getattr(mechanisms, name)) == stable


def test_a_plan_encodes_with_the_old_names_and_decodes_from_both() -> None:
    node = mechanisms.Laplace(Query.count("x"), epsilon=1)
    encoded = json.loads(json.dumps(encode(node)))
    assert encoded["$node"] == "dpalg.mechanisms._global:Laplace"  # as before the split
    assert decode(encoded) == node
    encoded["$node"] = f"{type(node).__module__}:Laplace"  # the defining module decodes too
    assert decode(encoded) == node


def test_every_listed_class_round_trips_through_its_name() -> None:
    plan = mechanisms.SmoothBound(Query.median("x") | Clip(0, 10), epsilon=1, delta="1e-6")
    assert decode(json.loads(json.dumps(encode(plan)))) == plan
    for cls, name in mechanisms.CERTIFICATE_NAMES.items():
        assert attrs.has(cls), name
        assert name.startswith("dpalg.mechanisms._") and name.endswith(":" + cls.__name__)
