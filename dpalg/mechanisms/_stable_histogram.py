"""Stable histograms: counts over an unknown (or huge) key set, (ε, δ)-DP."""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, Key, Neighbouring
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common import positive_param, unit_interval_param
from dpalg.mechanisms._thresholds import ceil_log_inv_delta_over_eps
from dpalg.noise import AbstractRandomness, discrete_laplace
from dpalg.queries import Query

__all__ = ["StableHistogram", "stable_threshold"]


def stable_threshold(epsilon: Fraction, delta: Fraction) -> int:
    """The smallest noisy count that is kept: ceil(ln(1/δ)/ε) + 1.

    A key is kept when its noisy count a satisfies a ≥ T + 1 with
    T = ln(1/δ)/ε (seed 003); for an integer a that is a ≥ ceil(T) + 1. A key
    of true count 1 then survives with probability P[Z ≥ ceil(T)] =
    e^{−ε·ceil(T)}/(1 + e^{−ε}) < δ for Z discrete Laplace of scale 1/ε.
    """
    return ceil_log_inv_delta_over_eps(epsilon, delta) + 1


def _sh_query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind != "histogram" or value.user is not None:
        raise InvalidArgument("StableHistogram", "query", value, "must be a row-level Query.histogram(column[, keys])")
    return value


def _sh_eps(value: ExactLike) -> Fraction:
    return positive_param("StableHistogram", "epsilon", value)


def _sh_delta(value: ExactLike) -> Fraction:
    return unit_interval_param("StableHistogram", "delta", value)


@final
@attrs.frozen
class StableHistogram(AbstractPrimitive[ApproxDP]):
    """Noisy counts of the keys present in the data, thresholded.

    For every key x with count c_x > 0: a_x = c_x + Z_x (Z_x discrete Laplace
    of scale 1/ε); a_x is released only when a_x ≥ ceil(ln(1/δ)/ε) + 1
    (:func:`stable_threshold`). Keys with count 0 are never looked at, so the
    key set may be unknown or infinite; when ``keys`` are given on the query,
    rows with other keys are dropped first (a per-row map) and only listed keys
    can appear. Keys follow the data policy (:mod:`dpalg.data._dataset`): a
    missing key (None, NaN, ``pd.NA``) is counted under no key, ``True`` is not
    the key ``1``, and keys of mixed types never make the release fail.

    Privacy guarantee:
        (ε, δ)-DP for adding or removing one row (seed 003, "stable
        histograms"; Bun–Nissim–Stemmer 2016): one row changes one count by 1;
        if that count was positive in both datasets the change is covered by
        the ε-DP discrete Laplace noise; if it goes 0 → 1, the key appears with
        probability < δ. Substitution is not supported (it would touch two keys).
    """

    query: Query = attrs.field(converter=_sh_query)
    epsilon: Fraction = attrs.field(converter=_sh_eps)
    delta: Fraction = attrs.field(converter=_sh_delta)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row, add/remove."""
        return self.query.neighbouring("add_remove")

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "stable histogram, keep noisy counts >= ceil(ln(1/delta)/eps) + 1 (seed 003; Bun-Nissim-Stemmer 2016)",
            (("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("threshold", str(stable_threshold(self.epsilon, self.delta)))),
        )

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """``{key: noisy count}`` for the keys that pass the threshold."""
        assert self.query.column is not None
        if self.query.keys is not None:  # rows with other keys are dropped first (a per-row map)
            keys: tuple[Key, ...] = self.query.keys
            codes = data.key_codes(self.query.column, keys)
        else:  # the keys present, normalised and in key order (the data policy: no comparison raises)
            keys, codes = data.key_index(self.query.column)
        counts = np.bincount(codes[codes >= 0], minlength=len(keys)).tolist()
        pairs = [(k, int(c)) for k, c in zip(keys, counts) if c > 0]
        if not pairs:
            return {}
        noise = discrete_laplace(1 / self.epsilon, size=len(pairs), rng=rng)
        keep = stable_threshold(self.epsilon, self.delta)
        return {k: c + int(z) for (k, c), z in zip(pairs, noise.tolist()) if c + int(z) >= keep}
