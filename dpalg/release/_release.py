"""Running a checked plan: the runner that makes a :class:`~dpalg.Release` and its certificate.

The :class:`Release` class itself sits on the graph floor (:mod:`dpalg.graph._result`,
so that ``plan.run`` can name its result); it is re-exported here and from :mod:`dpalg`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, assert_never

import numpy as np
import numpy.typing as npt

from dpalg._bottom import BOTTOM, Bottom
from dpalg._errors import InsecureRandomnessWarning, UncheckedPlan
from dpalg.data import Dataset, as_dataset, key_codes, key_order, unit_index
from dpalg.data._grouping import ReleasedGroups, group_coding, key_parts
from dpalg.data._dataset import run_data
from dpalg.data._evaluation import guarded_run
from dpalg.graph._accountant import KnownNode, _classify
from dpalg.graph._compose import Compose, Parallel, PureToApprox, PureToZCDP, ZCDPToApprox
from dpalg.graph._group import GroupPrivacy, bounded_rows
from dpalg.graph._groupby import GroupBy, KeySet, groups_per_user, selected_keys
from dpalg.graph._subsample import Subsample, sampled_rows
from dpalg.graph._derivation import Derivation
from dpalg.graph._node import RUN, AbstractMeasurement, AbstractPrimitive, take_checked
from dpalg.graph._result import SIGN, Release
from dpalg.graph._schema import group_data, plan_columns, plan_schema, read_columns, relation_data, steps_data, validate_schema
from dpalg.graph._session import EXECUTE, SessionSpend
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.noise import prf_secret
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng
from dpalg.release._certificate import SEEDED_WARNING, build_certificate, sign_certificate
from dpalg.release._serialize import JSON

if TYPE_CHECKING:  # pragma: no cover
    from dpalg.graph._node import M

__all__ = ["BOTTOM", "Bottom", "Release", "SessionSpend", "execute", "run_checked"]


def _value_json(value: object) -> JSON:
    if isinstance(value, Bottom):
        return {"$bottom": True}
    if isinstance(value, tuple):
        return [_value_json(v) for v in value]
    if isinstance(value, dict):
        texts = [str(k) for k in value]
        if len(set(texts)) == len(texts):
            return {t: _value_json(v) for t, v in zip(texts, value.values())}
        # keys whose text collides (1 and "1" in one GroupBy): pairs, so that no group is lost
        return {"$pairs": [[_value_json(k), _value_json(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return [_value_json(v) for v in value.tolist()]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return _value_json(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": value.hex()}
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
    session: SessionSpend | None = None,
    schema: tuple[tuple[str, str], ...] | None = None,
) -> Release:
    """Run ``plan`` (already checked and, in a session, already charged).

    ``schema`` is the public schema of the columns the plan reads, taken before
    the charge (:func:`~dpalg.graph._schema.plan_schema`); the certificate records
    it. Without one it is read here (names and dtypes only, never a row: the
    same answer as before the charge).
    """
    dataset = as_dataset(data)
    if schema is None:
        schema = plan_schema(plan, dataset)
    source = resolve_rng(rng)
    if not source.secure:  # depends on the caller's rng only, never on the data
        warnings.warn(f"{SEEDED_WARNING} (randomness: {source.kind})", InsecureRandomnessWarning, stacklevel=3)
    # after the charge: a backend's failure is reported by its type only (its text may quote the data)
    value = guarded_run(dataset, lambda: _exec(plan, dataset, source, ""), owner=type(plan).__name__)
    spend = None if session is None else (session.budget, session.spent_before, session.spent_after)
    certificate = build_certificate(
        plan, derivation, budget, kind=source.kind, secure=source.secure, session=spend, value=_value_json(value),
        backend=dataset.backend, schema=schema,
    )
    return Release(value, certificate, plan)


def run_checked(plan: AbstractMeasurement[M], data: object, *, rng: RngLike) -> Release:
    """``plan.run``: refuse unless ``plan.check(budget)`` passed and its one run is unused; then run.

    Order (schema before the charge, ``docs/architecture.md``): the data is adapted and the plan's schema validated
    first, so a column typo costs nothing; then the check's one run is used
    (atomically, so concurrent calls cannot both run); then the plan runs. The
    certificate carries the derivation that check proved against that budget
    (the same plan object, frozen, so the same derivation), not a second one.
    """
    budget = plan.checked_budget()
    if budget is None:
        raise UncheckedPlan(
            f"{type(plan).__name__}: run() refused: call plan.check(budget) first (or run it in a dpalg.Session)"
        )
    with run_data(data) as dataset:
        validate_schema(plan, dataset)
        schema = plan_schema(plan, dataset)  # recorded in the certificate as it was before the charge
        budget, derivation = take_checked(plan)
        return execute(plan, dataset, rng=rng, derivation=derivation, budget=budget, schema=schema)


def _exec(node: object, data: Dataset, rng: AbstractRandomness, path: str, applied: bool = False) -> object:
    """Run ``node`` on ``data``; ``applied``: the rows are already its queries' relation and row steps (inside a GroupBy)."""
    known: KnownNode = _classify(node, path)
    match known:
        case Compose():
            if known.names:
                return {n: _exec(c, data, rng, f"{path}/{n}", applied) for n, c in zip(known.names, known.children)}
            return tuple(_exec(c, data, rng, f"{path}/{i}", applied) for i, c in enumerate(known.children))
        case Parallel():
            data = relation_data(known, data, read_columns(known))  # several tables: the parts' relation, joined once
            return _parallel(known, data, rng, path, applied)
        case PureToApprox() | PureToZCDP() | ZCDPToApprox():
            return _exec(known.child, data, rng, path, applied)
        case GroupPrivacy():
            columns = [use.name for _, use in plan_columns(known.plan)]
            return _exec(known.plan, data.take(bounded_rows(known, data, rng, columns)), rng, path, applied)
        case GroupBy():
            return _group_by(known, data, rng, path, applied)
        case Subsample():  # a fresh sample (a fresh PRF key) on every run of every Subsample node
            data = relation_data(known, data, read_columns(known))  # several tables: the relation, joined once, is sampled
            columns = [use.name for _, use in plan_columns(known.plan)]
            return _exec(known.plan, data.take(sampled_rows(known, data, rng, columns)), rng, path, applied)
        case AbstractPrimitive():
            if applied:
                return known.release(data, rng)
            return known.release(steps_data(known, data), rng)  # its queries' Where / derived columns, where the data is
        case _:
            assert_never(known)


def _group_by(
    node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP], data: Dataset, rng: AbstractRandomness, path: str, applied: bool,
) -> dict[object, object]:
    """Run the aggregates on every released group: ``{key: {name: value}}``.

    The rows are grouped through the grouping seam (:func:`~dpalg.data._grouping.group_coding`):
    in memory, or where a backend holds them (Spark: on the executors). In order:
    the groups of the rows (public keys, or the keys present); at user
    level, each user's rows cut to ``m`` groups (a keyed hash: one fresh secret);
    private keys: one exact Bernoulli(pi(n)) per present key on its number of
    distinct users (:func:`dpalg.noise.sample_keep`); then the aggregates, one
    after the other, each over all released groups (in key order). An aggregate
    whose node releases all groups at once (:meth:`AbstractPrimitive.release_groups`)
    does so; any other runs on each group's rows in turn. Randomness is drawn in
    that order, which depends on the plan and the number of released groups only.
    """
    here = f"{path}/GroupBy(by={node.by!r})"
    keys = node.keys
    owner = f"GroupBy(by={node.by!r})"
    public = isinstance(keys, KeySet)
    unit = node.neighbouring.unit
    reads = tuple(dict.fromkeys([*node.by, *([unit] if unit is not None else []), *(use.name for _, use in plan_columns(node.plan))]))
    if not applied:  # the aggregates' relation and row steps, once, before grouping (group_relation)
        data, applied = group_data(node, data, reads)
    if applied:  # the relation or the transformed rows: their columns are what the aggregates read (derived ones too)
        reads = data.names
    coding = group_coding(
        data, node.by, keys.keys if isinstance(keys, KeySet) else None, other=isinstance(keys, KeySet) and keys.other is not None,
        labels=keys.labels if isinstance(keys, KeySet) else None, unit=unit, reads=reads, owner=owner,
    )  # fmt: skip
    try:
        labels = coding.labels
        m = groups_per_user(node)
        if unit is not None and (not public or m < len(labels)):
            bounded = coding.bounded(unit, m, prf_secret(rng))
            coding.close()
            coding = bounded
        if isinstance(keys, KeySet):
            chosen = list(range(len(labels)))
        else:
            users = coding.distinct_units(unit)
            chosen = np.flatnonzero(selected_keys(node, users, rng)).tolist()
        groups = coding.released(chosen)
        released = [labels[i] for i in chosen]
        names = node.plan.names
        values = [_aggregate_groups(child, groups, released, rng, here, name, applied) for name, child in zip(names, node.plan.children)]
    finally:
        coding.close()
    return {key: dict(zip(names, row)) for key, row in zip(released, zip(*values))}


def _aggregate_groups(
    child: object, groups: ReleasedGroups, released: Sequence[object], rng: AbstractRandomness, here: str, name: str, applied: bool,
) -> list[object]:
    """One aggregate's value for every released group: all at once when its node can, else group by group."""
    inner = child
    while isinstance(inner, (PureToApprox, PureToZCDP, ZCDPToApprox)):  # conversions leave the value as it is
        inner = inner.child
    if isinstance(inner, AbstractPrimitive):
        values = inner.release_groups(groups, rng)
        if values is not None:
            return values
    return [_exec(child, groups.rows(i), rng, f"{here}/{key!r}/{name}", applied) for i, key in enumerate(released)]


def _parallel(node: Parallel[PureDP] | Parallel[ApproxDP] | Parallel[ZCDP], data: Dataset, rng: AbstractRandomness, path: str, applied: bool) -> object:
    """Each part's plan on its rows: split where the rows are (a Spark frame: one filtered frame per key), else in memory."""
    keys = [k for k, _ in node.parts]
    held = key_parts(data, node.by, keys, unit=node.neighbouring.unit)
    if held is None:
        return {key: _exec(child, sub, rng, f"{path}/{key!r}", applied) for (key, child), sub in zip(node.parts, _split(node, data))}
    try:
        return {key: _exec(child, sub, rng, f"{path}/{key!r}", applied) for (key, child), sub in zip(node.parts, held.datasets)}
    finally:
        held.close()


def _split(node: Parallel[PureDP] | Parallel[ApproxDP] | Parallel[ZCDP], data: Dataset) -> list[Dataset]:
    """The parts' rows. Keys follow the data policy (a missing key is in no part;
    ``True`` is not the key ``1``); rows with a missing user id are in no part."""
    keys = [k for k, _ in node.parts]
    codes = key_codes(data.column(node.by), keys, owner=f"Parallel(by={node.by!r})")
    unit = node.neighbouring.unit
    if unit is None:
        return [data.take(codes == i) for i in range(len(keys))]
    # user level: each user goes to the part of the smallest listed key (in key order) among its rows
    rank_of_part = np.empty(len(keys), dtype=np.int64)
    for rank, i in enumerate(sorted(range(len(keys)), key=lambda j: key_order(keys[j]))):
        rank_of_part[i] = rank
    ranks = np.where(codes >= 0, rank_of_part[np.maximum(codes, 0)], -1)
    n_units, users = unit_index(data.column(unit), owner=f"Parallel(by={node.by!r})")
    listed = (ranks >= 0) & (users >= 0)
    best = np.full(n_units, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, users[listed], ranks[listed])
    user_rank = np.where(users >= 0, best[np.maximum(users, 0)], -1) if n_units else np.full(users.shape[0], -1, dtype=np.int64)
    out: list[Dataset] = []
    for i in range(len(keys)):
        mask: npt.NDArray[np.bool_] = (ranks == rank_of_part[i]) & (user_rank == rank_of_part[i])
        out.append(data.take(mask))
    return out


RUN.provide(run_checked)  # plan.run(data): the node classes sit a floor below the certificate
EXECUTE.provide(execute)  # Session.run(plan, data), likewise
SIGN.provide(sign_certificate)  # release.signed(key): the Release class sits on the graph floor
