"""Running a checked plan: the Release, its certificate and the runner."""

from __future__ import annotations

import datetime
import json
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Union, assert_never, cast, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._bottom import BOTTOM, Bottom
from dpalg._errors import UncheckedPlan
from dpalg.data import Dataset, as_dataset
from dpalg.graph._accountant import KnownNode, _classify, check
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._derivation import Derivation, measure_to_json
from dpalg.graph._node import AbstractMeasurement, AbstractPrimitive
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng
from dpalg.release._serialize import encode

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.graph._node import M

__all__ = ["BOTTOM", "Bottom", "Release", "execute", "run_checked", "library_version"]

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]




def library_version() -> str:
    """The installed dpalg version (recorded in certificates)."""
    try:
        return version("dpalg")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


@final
@attrs.frozen
class Release:
    """Released values with the certificate that justifies them.

    Attributes:
        value: the plan's output: a number, an array, :data:`BOTTOM`, a tuple
            (for :class:`~dpalg.Compose`) or a dict (for :class:`~dpalg.Parallel`).
        certificate: JSON-ready dict; ``dpalg audit`` re-derives its claim.
    """

    value: object
    certificate: dict[str, JSON] = attrs.field(repr=False)

    def certificate_json(self) -> str:
        """The certificate as a JSON string."""
        return json.dumps(self.certificate, indent=2, sort_keys=True)


def _value_json(value: object) -> JSON:
    if isinstance(value, Bottom):
        return {"$bottom": True}
    if isinstance(value, tuple):
        return [_value_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value_json(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [_value_json(v) for v in value.tolist()]
    if isinstance(value, (np.integer, np.floating)):
        return cast(JSON, value.item())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def execute(
    plan: AbstractMeasurement[M],
    data: object,
    *,
    rng: RngLike,
    derivation: Derivation,
    budget: Measure,
    session: str | None = None,
) -> Release:
    """Run ``plan`` (already checked and, in a session, already charged)."""
    dataset = as_dataset(data)
    source = resolve_rng(rng)
    value = _exec(plan, dataset, source, "")
    notes = [note for d in derivation.walk() for note in d.notes]
    certificate: dict[str, JSON] = {
        "format": "dpalg-certificate/1",
        "dpalg_version": library_version(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "plan": encode(plan),
        "plan_repr": repr(plan),
        "neighbouring": plan.neighbouring.describe(),
        "claimed_cost": measure_to_json(derivation.cost),
        "budget": measure_to_json(budget),
        "derivation": derivation.to_json(),
        "symbolic_checks": cast(JSON, notes),
        "randomness": {"kind": source.kind, "secure": source.secure},
        "session": session,
        "value": _value_json(value),
    }
    return Release(value, certificate)


def run_checked(plan: AbstractMeasurement[M], data: object, *, rng: RngLike) -> Release:
    """``plan.run``: refuse unless ``plan.check(budget)`` passed; then run."""
    budget = plan.checked_budget()
    if budget is None:
        raise UncheckedPlan(
            f"{type(plan).__name__}: run() refused: call plan.check(budget) first (or run it in a dpalg.Session)"
        )
    derivation = check(plan, budget)
    return execute(plan, data, rng=rng, derivation=derivation, budget=budget)


def _exec(node: object, data: Dataset, rng: AbstractRandomness, path: str) -> object:
    known: KnownNode = _classify(node, path)
    match known:
        case Compose():
            return tuple(_exec(c, data, rng, f"{path}/{i}") for i, c in enumerate(known.children))
        case Parallel():
            return {key: _exec(child, sub, rng, f"{path}/{key!r}") for (key, child), sub in zip(known.parts, _split(known, data))}
        case PureToApprox() | PureToZCDP() | ZCDPToApprox():
            return _exec(known.child, data, rng, path)
        case AbstractPrimitive():
            return known.release(data, rng)
        case _:
            assert_never(known)


def _split(node: Parallel[PureDP] | Parallel[ApproxDP] | Parallel[ZCDP], data: Dataset) -> list[Dataset]:
    keys = [k for k, _ in node.parts]
    column = data.column(node.by)
    unit = node.neighbouring.unit
    if unit is None:
        return [data.take(np.asarray(column == k)) for k in keys]
    # user level: each user goes to the part of the smallest listed key among its rows
    rank = {k: i for i, k in enumerate(sorted(keys, key=lambda k: (isinstance(k, str), k)))}
    codes = np.array([rank.get(v, -1) if isinstance(v, (str, int)) else -1 for v in column.tolist()], dtype=np.int64)
    ids = data.column(unit)
    listed = codes >= 0
    _, inverse = np.unique(ids, return_inverse=True)
    best = np.full(inverse.max() + 1 if inverse.size else 0, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, inverse[listed], codes[listed])
    user_code = best[inverse]
    out: list[Dataset] = []
    for k in keys:
        mask: npt.NDArray[np.bool_] = (codes == rank[k]) & (user_code == rank[k])
        out.append(data.take(mask))
    return out


