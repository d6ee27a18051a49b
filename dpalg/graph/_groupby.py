"""GROUP BY: the same statistics for every group of a key, over public or privately selected keys.

``GroupBy(by="dept", keys=KeySet(["math", "physics"]), aggregates={"n": ..., "mean": ...})``
runs every aggregate on the rows of each group and releases ``{key: {name: value}}``.

The groups are the values of the ``by`` column (or the tuples of several columns):

* :class:`KeySet` lists them publicly (optionally with one "other" group for the
  rows whose key is not listed); every listed key is released, whether or not the
  data holds it (an absent group runs its aggregates on no rows);
* :class:`PartitionSelection` selects them privately from the keys present in the
  data, by the optimal truncated-geometric rule on the number of distinct users of
  each key (:func:`dpalg.noise.sample_keep`); keys not selected are absent.

At user level (the aggregates protect a user, ``user=`` in their queries),
:class:`MaxGroupsPerUser` bounds how many groups one user's rows reach (the L0
bound); the aggregates' own bounds (``MaxRowsPerUser``, ``ClipPerUser``) bound
what the user does inside a group (the L∞ bound).

Cost rules (:func:`groupby_cost`), with ``c`` the aggregates' composed cost:

* row level: ``c`` (parallel composition over disjoint groups: McSherry 2009, Thm 4);
* user level: ``m · c`` (basic composition over the at most ``m`` groups one user
  changes: Dwork–Roth 2014, Thm 3.16; Bun–Steinke 2016, Lemma 2.3), with ``m`` the
  bound, or the number of public groups when that is smaller;
* private keys: plus the selection's ``(ε, δ)`` (DVGM 2022, Thm 1; KOV 2015, Thm 3.3
  for ``m`` keys per user), by basic composition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final, final, overload

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._errors import InvalidArgument, Unsupported, name_param
from dpalg._numbers import ExactLike, positive, to_fraction
from dpalg.data import Neighbouring
from dpalg.data._groups import GroupKey, group_key_order, normalise_group_key
from dpalg.graph._compose import Compose, _single_measure, measure_type, register_wrapper
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.graph._node import AbstractMeasurement, M
from dpalg.measures import ZCDP, ApproxDP, Measure, PureDP
from dpalg.graph._group import exp_upper
from dpalg.noise import AbstractRandomness, certain_keep_count, gaussian_selection_threshold, sample_keep, sample_keep_gaussian
from dpalg.queries._bounding import cap_param

__all__ = ["GaussianPartitionSelection", "GroupBy", "KeySet", "MaxGroupsPerUser", "PartitionSelection", "groupby_cost", "groups_per_user", "selected_keys"]

#: the most public keys a KeySet holds (each is listed in the plan and the certificate)
MAX_PUBLIC_KEYS: Final = 1 << 20

_OWNER: Final = "KeySet"


def _key_width(keys: tuple[object, ...]) -> int:
    widths = {len(k) if isinstance(k, tuple) else 1 for k in keys}
    if len(widths) > 1:
        raise InvalidArgument(_OWNER, "keys", sorted(widths), "must all have the same width (one value, or tuples of one length)")
    return widths.pop() if widths else 1


def _public_keys(values: Iterable[object]) -> tuple[GroupKey, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidArgument(_OWNER, "keys", type(values).__name__, "must be a list (or other iterable) of keys")
    raw = tuple(values)
    if len(raw) > MAX_PUBLIC_KEYS:
        raise InvalidArgument(_OWNER, "keys", len(raw), f"must hold at most {MAX_PUBLIC_KEYS} keys")
    width = _key_width(raw)
    out: dict[object, GroupKey] = {}
    for i, value in enumerate(raw):
        key = normalise_group_key(value, width)
        if key is not None and any(isinstance(part, bytes) for part in (key if isinstance(key, tuple) else (key,))):
            raise InvalidArgument(_OWNER, f"keys[{i}]", "bytes", "must not be bytes (a certificate records keys as text and numbers): decode them to str")
        if key is None:
            raise InvalidArgument(
                _OWNER, f"keys[{i}]", type(value).__name__,
                "must be a str, bytes, bool or finite-or-infinite number (or a tuple of them); a missing key (None, NaN) is in no group",
            )
        if group_key_order(key) in out:
            raise InvalidArgument(_OWNER, f"keys[{i}]", repr(key)[:100], "is listed twice (1 and 1.0 are the same key)")
        out[group_key_order(key)] = key
    return tuple(out.values())


def _other(value: str | int | None) -> str | int | None:
    if value is None or (isinstance(value, (str, int)) and not isinstance(value, bool)):
        return value
    raise InvalidArgument(_OWNER, "other", type(value).__name__, "must be a str or an int naming the 'other' group, or None")


@final
@attrs.frozen(init=False, repr=False)
class KeySet:
    """A public list of group keys, with an optional "other" group.

    Args:
        keys: the keys, in the order the release lists them (values of one
            column, or tuples of several columns' values); normalised under the
            key policy (``1.0`` is ``1``, ``True`` is not ``1``), each at most once.
        other: a label: rows whose present key is not listed form one more group,
            released under this label (it must not be a listed key). ``None``:
            such rows are in no group.

    The keys are public: they are in the plan, the certificate and the release,
    and must not be read off the private data (``KeySet.from_values`` takes
    values a public source gives, e.g. a published list of departments).

    Examples:
        >>> KeySet(["b", "a", 2.0]).keys
        ('b', 'a', 2)
        >>> len(KeySet.product(KeySet([2024, 2025]), KeySet(["north", "south"])).keys)
        4
    """

    keys: tuple[GroupKey, ...]
    other: str | int | None = None

    def __init__(self, keys: Iterable[object], other: str | int | None = None) -> None:
        self.__attrs_init__(_public_keys(keys), _other(other))

    def __attrs_post_init__(self) -> None:
        if self.other is not None:
            width = self.width
            if width != 1:
                raise InvalidArgument(_OWNER, "other", self.other, "is for one key column (a label that is a key of that column)")
            if group_key_order(self.other) in {group_key_order(k) for k in self.keys}:
                raise InvalidArgument(_OWNER, "other", self.other, "must not be one of the listed keys")

    @property
    def width(self) -> int:
        """How many columns a key spans (1 for plain keys)."""
        return _key_width(self.keys)

    @property
    def labels(self) -> tuple[GroupKey, ...]:
        """Every released group's key: the listed keys, then the "other" label if any."""
        return self.keys if self.other is None else (*self.keys, self.other)

    @classmethod
    def from_values(cls, values: Iterable[object], other: str | int | None = None) -> KeySet:
        """The distinct values of a public column (duplicates and missing values dropped), in key order."""
        seen: dict[object, GroupKey] = {}
        for value in values:
            key = normalise_group_key(value, len(value) if isinstance(value, tuple) else 1)
            if key is not None:
                seen.setdefault(group_key_order(key), key)
        return cls([seen[k] for k in sorted(seen)], other=other)  # type: ignore[type-var]  # tuples of comparable keys

    from_column_values = from_values

    @classmethod
    def product(cls, *parts: KeySet) -> KeySet:
        """The cross product of public key sets: every tuple of one key from each (for ``by=(a, b, ...)``)."""
        if not parts or not all(isinstance(p, KeySet) for p in parts):
            raise InvalidArgument(_OWNER, "product", len(parts), "needs one or more KeySets")
        if any(p.other is not None for p in parts):
            raise InvalidArgument(_OWNER, "product", "other", "takes KeySets without an 'other' group")
        combos: list[tuple[object, ...]] = [()]
        for part in parts:
            combos = [(*c, *(k if isinstance(k, tuple) else (k,))) for c in combos for k in part.keys]
            if len(combos) > MAX_PUBLIC_KEYS:
                raise InvalidArgument(_OWNER, "product", len(combos), f"must hold at most {MAX_PUBLIC_KEYS} keys")
        return cls(combos)

    def __repr__(self) -> str:
        shown = ", ".join(repr(k) for k in self.keys[:8]) + (", ..." if len(self.keys) > 8 else "")
        tail = "" if self.other is None else f", other={self.other!r}"
        return f"KeySet([{shown}]{tail})" if len(self.keys) <= 8 else f"KeySet([{shown}] ({len(self.keys)} keys){tail})"


def _sel_epsilon(value: ExactLike) -> Fraction:
    return positive(value, owner="PartitionSelection", field="epsilon")


def _below(owner: str, field: str, value: ExactLike, top: Fraction) -> Fraction:
    """``value`` as a Fraction in ``(0, top)``, or :class:`~dpalg.InvalidArgument` naming owner and field."""
    d = to_fraction(value, owner=owner, field=field)
    if not 0 < d < top:
        raise InvalidArgument(owner, field, value, f"must be in (0, {top})")
    return d


def _sel_delta(value: ExactLike) -> Fraction:
    return _below("PartitionSelection", "delta", value, Fraction(1))


@final
@attrs.frozen(repr=False)
class PartitionSelection:
    """Select the released keys privately: (ε, δ)-DP on the number of distinct users per key.

    Each key present in the data is kept independently with the optimal keep
    probability π(n) of its number n of distinct users (rows, at row level) after
    the per-user group bound (Desfontaines, Voss, Gipson, Mandayam, PoPETs 2022,
    Thm 1; :func:`dpalg.noise.sample_keep`, exact and in count-independent work).
    With at most m groups per user each key uses (ε/m, δ_m) (KOV 2015, Thm 3.3).

    Examples:
        >>> PartitionSelection(epsilon=1, delta="1e-5").cost()
        ApproxDP(1, '1/100000')
    """

    epsilon: Fraction = attrs.field(converter=_sel_epsilon)
    delta: Fraction = attrs.field(converter=_sel_delta)

    def cost(self) -> ApproxDP:
        """The selection's own cost: (ε, δ)."""
        return ApproxDP(self.epsilon, self.delta)

    def __repr__(self) -> str:
        return f"PartitionSelection(epsilon={_show(self.epsilon)}, delta={_show(self.delta)})"


def _sel_rho(value: ExactLike) -> Fraction:
    return positive(value, owner="GaussianPartitionSelection", field="rho")


def _sel_gdelta(value: ExactLike) -> Fraction:
    return _below("GaussianPartitionSelection", "delta", value, Fraction(1, 2))


def _sel_conversion(value: ExactLike) -> Fraction:
    return _below("GaussianPartitionSelection", "conversion_delta", value, Fraction(1))


@final
@attrs.frozen(repr=False)
class GaussianPartitionSelection:
    """Select the released keys of a zCDP plan by Gaussian thresholding of the distinct users per key.

    Each key present in the data gets ``n + Z`` with ``Z`` exact discrete Gaussian of
    variance ``σ² = m / (2ρ)`` (m groups per user: L2 sensitivity √m), and is kept when
    ``n + Z ≥ τ``, the least threshold with which a key held by one user alone is kept
    with probability at most ``delta / m`` (:func:`dpalg.noise.sample_keep_gaussian`,
    :func:`dpalg.noise.gaussian_selection_threshold`).

    Privacy guarantee:
        The selection, and the GroupBy around it with ρ_agg-zCDP aggregates, is
        ``delta``-approximately ``(ρ + m·ρ_agg)``-zCDP (Bun–Steinke 2016, Def. 8.1):
        with probability ≥ 1 − delta no key held only by the added user is kept,
        and then the release is a post-processing of the Gaussian counts and the
        aggregates on groups present in both neighbours (CKS 2020 Thm 4; zCDP
        composition). As (ε, δ)-DP: with ``(ε, δ_z)`` the tight conversion of that
        zCDP at ``conversion_delta`` (CKS 2020 Cor. 13, rounded up), the GroupBy is
        ``(ε, δ_z + e^ε·delta)``-DP (:func:`dpalg.noise.sample_keep_gaussian`
        derives the ``e^ε·delta`` term; ``e^ε`` rounded up). So a GroupBy with this
        selection costs ``ApproxDP`` although its aggregates are ``ZCDP``.

    Examples:
        >>> GaussianPartitionSelection(rho="0.1", delta="1e-6", conversion_delta="1e-6")
        GaussianPartitionSelection(rho='1/10', delta='1/1000000', conversion_delta='1/1000000')
    """

    rho: Fraction = attrs.field(converter=_sel_rho)
    delta: Fraction = attrs.field(converter=_sel_gdelta)
    conversion_delta: Fraction = attrs.field(converter=_sel_conversion)

    def sigma2(self, m: int) -> Fraction:
        """The noise variance for ``m`` groups per user: ``m / (2ρ)``."""
        return Fraction(m) / (2 * self.rho)

    def __repr__(self) -> str:
        return (
            f"GaussianPartitionSelection(rho={_show(self.rho)}, delta={_show(self.delta)}, "
            f"conversion_delta={_show(self.conversion_delta)})"
        )


def _show(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"'{x}'"


def _max_groups(value: int) -> int:
    return cap_param("MaxGroupsPerUser", "m", value)


@final
@attrs.frozen(repr=False)
class MaxGroupsPerUser:
    """The L0 bound of a user-level GroupBy: each user's rows reach at most ``m`` groups.

    A user with rows in more groups keeps the rows of ``m`` of them, chosen by a
    keyed hash of (user, group key) under a fresh secret on every run
    (:func:`dpalg.data.select_keys`): the choice depends only on that user's rows.

    Examples:
        >>> MaxGroupsPerUser(3)
        MaxGroupsPerUser(3)
    """

    m: int = attrs.field(converter=_max_groups)

    def __repr__(self) -> str:
        return f"MaxGroupsPerUser({self.m})"


def _by(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (tuple, list)) or not names:
        raise InvalidArgument("GroupBy", "by", type(value).__name__, "must be a column name or a non-empty tuple of column names")
    out = tuple(name_param("GroupBy", "by", n, "must name a column (a non-empty str)") for n in names)
    if len(set(out)) != len(out):
        raise InvalidArgument("GroupBy", "by", list(out), "must not name a column twice")
    return out


@final
@attrs.frozen(init=False, repr=False)
class GroupBy(AbstractMeasurement[M]):
    """Per-group statistics: run ``aggregates`` on the rows of every group of ``by``.

    Args:
        by: a column name, or a tuple of them (the group key is then the tuple).
        keys: a public :class:`KeySet`, or :class:`PartitionSelection` to select
            the keys present in the data privately.
        aggregates: name -> measurement node (any node: Laplace/Gaussian counts,
            sums, means; ExponentialQuantile; SmoothBound; ProposeTest;
            sample-and-aggregate; a Compose). Names are Python identifiers. All
            share one privacy measure and one add/remove neighbouring relation.
        bound: :class:`MaxGroupsPerUser` (user level). Required at user level
            with private keys; with public keys it defaults to the number of groups.

    The release is ``{key: {name: value}}`` (keys in the KeySet's order, or in key
    order when selected); a key that was not selected is absent.

    Privacy guarantee:
        Neighbouring relation: the aggregates' (one row, or one user with all
        their rows; add/remove). Each row is in at most one group. Row level:
        adding or removing a row changes one group by one row, so the cost is the
        aggregates' composed cost ``c`` (parallel composition, McSherry 2009 Thm 4).
        User level: after the L0 bound a user's rows lie in at most ``m`` groups
        and adding or removing the user adds or removes, in each of them, that
        user with their rows there (a user-level neighbour of that group), other
        users' kept rows unchanged; the groups' releases use independent
        randomness, so the cost is ``m·c`` by basic composition (Dwork–Roth 2014
        Thm 3.16; Bun–Steinke 2016 Lemma 2.3). For Laplace/Gaussian counts and
        sums this equals the L1 (Laplace: m·ε) and L2 (Gaussian: m·ρ) sensitivity
        argument across groups, so no better rule is lost. Private keys add the
        selection's (ε, δ) (DVGM 2022 Thm 1; KOV 2015 Thm 3.3 for m keys per
        user) by basic composition; an aggregate then runs only on selected keys
        (post-processing of the selection, on disjoint data).

    Examples:
        >>> from dpalg import Query, Clip
        >>> from dpalg.mechanisms import Laplace
        >>> plan = GroupBy("dept", keys=KeySet(["a", "b"]), aggregates={"n": Laplace(Query.count(), epsilon=1)})
        >>> plan.cost()
        PureDP(1)
    """

    by: tuple[str, ...]
    keys: KeySet | PartitionSelection | GaussianPartitionSelection
    plan: Compose[PureDP] | Compose[ApproxDP] | Compose[ZCDP]
    bound: MaxGroupsPerUser | None = None

    @overload
    def __init__(
        self: GroupBy[M], by: str | tuple[str, ...], *, keys: KeySet, aggregates: Mapping[str, AbstractMeasurement[M]],
        bound: MaxGroupsPerUser | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: GroupBy[ApproxDP], by: str | tuple[str, ...], *, keys: PartitionSelection,
        aggregates: Mapping[str, AbstractMeasurement[ApproxDP]], bound: MaxGroupsPerUser | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: GroupBy[ApproxDP], by: str | tuple[str, ...], *, keys: GaussianPartitionSelection,
        aggregates: Mapping[str, AbstractMeasurement[ZCDP]], bound: MaxGroupsPerUser | None = None,
    ) -> None: ...

    def __init__(
        self, by: str | tuple[str, ...], *, keys: KeySet | PartitionSelection | GaussianPartitionSelection,
        aggregates: Mapping[str, AbstractMeasurement[M]] | Mapping[str, AbstractMeasurement[ApproxDP]] | Mapping[str, AbstractMeasurement[ZCDP]],
        bound: MaxGroupsPerUser | None = None,
    ) -> None:
        if not isinstance(aggregates, Mapping) or not aggregates:
            raise InvalidArgument("GroupBy", "aggregates", type(aggregates).__name__, "must be a non-empty dict name -> node")
        for name, node in aggregates.items():
            if not isinstance(name, str):
                raise InvalidArgument("GroupBy", "aggregates", type(name).__name__, "names must be str")
            if not isinstance(node, AbstractMeasurement):
                raise InvalidArgument("GroupBy", f"aggregates[{name[:100]!r}]", type(node).__name__, "must be a dpalg node")
        _single_measure("GroupBy", tuple(aggregates.values()))
        self.__attrs_init__(_by(by), keys, Compose(**aggregates), bound)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.keys, (KeySet, PartitionSelection, GaussianPartitionSelection)):
            raise InvalidArgument(
                "GroupBy", "keys", type(self.keys).__name__,
                "must be a KeySet (public keys), PartitionSelection or GaussianPartitionSelection (private keys)",
            )
        if self.bound is not None and not isinstance(self.bound, MaxGroupsPerUser):
            raise InvalidArgument("GroupBy", "bound", type(self.bound).__name__, "must be MaxGroupsPerUser(m) or None")
        if not isinstance(self.plan, Compose) or not self.plan.names:
            raise InvalidArgument("GroupBy", "plan", type(self.plan).__name__, "must be a named Compose of the aggregates")
        nb = self.plan.neighbouring
        if nb.relation != "add_remove":
            raise InvalidArgument(
                "GroupBy", "aggregates.neighbouring", nb,
                "must be add/remove (substituting a row can move it to another group: two groups change)",
            )
        if isinstance(self.keys, KeySet):
            if self.keys.width != len(self.by):
                raise InvalidArgument("GroupBy", "keys", f"width {self.keys.width}", f"must match by ({len(self.by)} columns)")
        elif isinstance(self.keys, GaussianPartitionSelection):
            kind = measure_type(self.plan)
            if kind is not None and kind is not ZCDP:
                raise InvalidArgument(
                    "GroupBy", "aggregates", kind.__name__,
                    "must cost ZCDP with GaussianPartitionSelection (use PartitionSelection for (eps, delta) or pure aggregates)",
                )
            if nb.unit is not None and self.bound is None:
                raise InvalidArgument(
                    "GroupBy", "bound", None,
                    "must be MaxGroupsPerUser(m) at user level with private keys (a user could touch unboundedly many keys)",
                )
            gaussian_selection_threshold(self.keys.sigma2(groups_per_user(self)), self.keys.delta, max_partitions=groups_per_user(self))
            aggregates = scaled(self.plan.cost(), groups_per_user(self))
            assert isinstance(aggregates, ZCDP)  # checked above
            if _gaussian_total(self.keys, aggregates)[1] >= 1:
                raise InvalidArgument(
                    "GroupBy", "keys.delta", self.keys.delta,
                    "makes the total delta delta_z + e^eps * delta reach 1 (a vacuous guarantee); lower the rhos or delta",
                )
        else:
            kind = measure_type(self.plan)
            if kind is not None and kind is not ApproxDP:
                advice = (
                    "wrap each aggregate in PureToApprox (ε-DP is (ε, 0)-DP, no loss)" if kind is PureDP
                    else "convert each aggregate with ZCDPToApprox, or use public keys (a KeySet)"
                )
                raise InvalidArgument(
                    "GroupBy", "aggregates", kind.__name__,
                    f"must cost ApproxDP with PartitionSelection (private keys need delta > 0): {advice}",
                )
            if nb.unit is not None and self.bound is None:
                raise InvalidArgument(
                    "GroupBy", "bound", None,
                    "must be MaxGroupsPerUser(m) at user level with private keys (a user could touch unboundedly many keys)",
                )
            certain_keep_count(self.keys.epsilon, self.keys.delta, max_partitions=groups_per_user(self))  # refuses a budget whose table is too large
        if nb.unit is None and self.bound is not None:
            raise InvalidArgument("GroupBy", "bound", self.bound, "is for user-level aggregates (user= in their queries); at row level each row is in one group")

    @property
    def aggregates(self) -> dict[str, AbstractMeasurement[PureDP] | AbstractMeasurement[ApproxDP] | AbstractMeasurement[ZCDP]]:
        """The aggregates, by name."""
        return dict(zip(self.plan.names, self.plan.children))

    @property
    def neighbouring(self) -> Neighbouring:
        """The aggregates' neighbouring relation."""
        return self.plan.neighbouring

    def group_accuracy(self, alpha: ExactLike = Fraction(1, 20), *, simultaneous: bool = False) -> dict[str, Accuracy]:
        """Each aggregate's (1 − ``alpha``) error statement, which holds for every released group.

        The parameters of an aggregate are the same in every group, so one
        statement per aggregate serves all keys (per key: ``{key: statements}`` is
        this dict for each key). With ``simultaneous=True`` (public keys only),
        ``alpha`` is split evenly over every group and aggregate (a union bound),
        so that with probability ``≥ 1 − alpha`` *all* released values are within
        their errors at once. An aggregate without a statement is left out.

        Examples:
            >>> from dpalg import Query
            >>> from dpalg.mechanisms import Laplace
            >>> plan = GroupBy("g", keys=KeySet(["a", "b"]), aggregates={"n": Laplace(Query.count(), epsilon=1)})
            >>> plan.group_accuracy()["n"].error, plan.group_accuracy(simultaneous=True)["n"].error
            (Fraction(3, 1), Fraction(4, 1))
        """
        a = alpha_param("GroupBy.group_accuracy", alpha)
        if simultaneous:
            if not isinstance(self.keys, KeySet):
                raise InvalidArgument(
                    "GroupBy.group_accuracy", "simultaneous", True,
                    "needs public keys (with private keys the number of released groups is not known in advance)",
                )
            a = a / (len(self.keys.labels) * len(self.plan.children))
        out: dict[str, Accuracy] = {}
        for name, node in self.aggregates.items():
            try:
                out[name] = node.accuracy(a)
            except Unsupported:
                continue
        return out

    def __repr__(self) -> str:
        by = repr(self.by[0]) if len(self.by) == 1 else repr(self.by)
        aggs = ", ".join(f"{n!r}: {c!r}" for n, c in zip(self.plan.names, self.plan.children))
        tail = "" if self.bound is None else f", bound={self.bound!r}"
        return f"GroupBy({by}, keys={self.keys!r}, aggregates={{{aggs}}}{tail})"


register_wrapper(GroupBy, lambda node: ApproxDP if isinstance(getattr(node, "keys", None), GaussianPartitionSelection) else None)


def groups_per_user(node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP]) -> int:
    """m: how many groups one neighbouring step changes (1 at row level)."""
    if node.neighbouring.unit is None:
        return 1
    public = len(node.keys.labels) if isinstance(node.keys, KeySet) else None
    if node.bound is None:
        assert public is not None  # refused at construction otherwise
        return max(public, 1)
    return node.bound.m if public is None else max(1, min(node.bound.m, public))


def scaled(cost: Measure, m: int) -> Measure:
    """``m`` compositions of ``cost``: mε; (mε, mδ); mρ (Dwork–Roth Thm 3.16; Bun–Steinke Lemma 2.3)."""
    if isinstance(cost, PureDP):
        return PureDP(cost.epsilon * m)
    if isinstance(cost, ZCDP):
        return ZCDP(cost.rho * m)
    return ApproxDP(cost.epsilon * m, cost.delta * m)


def _gaussian_total(keys: GaussianPartitionSelection, aggregates: ZCDP) -> tuple[Fraction, Fraction]:
    """(ε, δ_z + e^ε·delta) from the delta-approximately (ρ_sel + m·ρ_agg)-zCDP release (GaussianPartitionSelection)."""
    z = ZCDP(aggregates.rho + keys.rho).to_approx(keys.conversion_delta)
    return z.epsilon, z.delta + exp_upper(z.epsilon) * keys.delta


def groupby_cost(node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP], aggregates_cost: Measure) -> Measure:
    """The GroupBy's cost from its aggregates' composed cost (module docstring)."""
    m = groups_per_user(node)
    total = scaled(aggregates_cost, m)
    if isinstance(node.keys, GaussianPartitionSelection):
        assert isinstance(total, ZCDP)  # checked at construction
        return ApproxDP(*_gaussian_total(node.keys, total))
    if isinstance(node.keys, PartitionSelection):
        assert isinstance(total, ApproxDP)  # checked at construction
        return ApproxDP(total.epsilon + node.keys.epsilon, total.delta + node.keys.delta)
    return total


def selected_keys(
    node: GroupBy[PureDP] | GroupBy[ApproxDP] | GroupBy[ZCDP], user_counts: npt.NDArray[np.int64], rng: AbstractRandomness,
) -> npt.NDArray[np.bool_]:
    """Which present keys a private GroupBy releases, from each key's distinct users (rows at row level).

    :class:`PartitionSelection`: the optimal keep probabilities (:func:`dpalg.noise.sample_keep`);
    :class:`GaussianPartitionSelection`: Gaussian thresholding (:func:`dpalg.noise.sample_keep_gaussian`).
    """
    keys = node.keys
    m = groups_per_user(node)
    if isinstance(keys, PartitionSelection):
        return sample_keep(user_counts, keys.epsilon, keys.delta, rng, max_partitions=m)
    if isinstance(keys, GaussianPartitionSelection):
        sigma2 = keys.sigma2(m)
        return sample_keep_gaussian(user_counts, sigma2, gaussian_selection_threshold(sigma2, keys.delta, max_partitions=m), rng)
    raise InvalidArgument("selected_keys", "node.keys", type(keys).__name__, "must be a private key selection")
