"""Stable histograms: counts over an unknown (or huge) key set, (ε, δ)-DP."""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs
import numpy as np

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, Key, Neighbouring, as_reductions
from dpalg.graph._accuracy import Accuracy
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common.params import positive_param, unit_interval_param
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.mechanisms._common.user_level import check_user_level, histogram_sensitivity, kept_rows
from dpalg.noise import AbstractRandomness, discrete_laplace, prf_secret
from dpalg.queries import Query

__all__ = ["StableHistogram", "stable_threshold"]


def stable_threshold(epsilon: Fraction, delta: Fraction, l1: int = 1, linf: int = 1, l0: int = 1) -> int:
    """The smallest noisy count that is kept: ``linf + ceil(l1·ln(l0/δ)/ε)``.

    Row level (``l1 = linf = l0 = 1``) this is ceil(ln(1/δ)/ε) + 1 (seed 003): a
    key is kept when its noisy count a ≥ T + 1 with T = ln(1/δ)/ε; a key of true
    count 1 then survives with probability P[Z ≥ ceil(T)] =
    e^{−ε·ceil(T)}/(1 + e^{−ε}) < δ for Z discrete Laplace of scale 1/ε.

    One user of a bounded user-level histogram adds at most ``l1`` rows, at most
    ``linf`` to one key, over at most ``l0`` keys; the noise scale is t = l1/ε. A
    key new to the data has count ≤ linf and is kept with probability
    P[Z ≥ J] = e^{−J/t}/(1 + e^{−1/t}) < e^{−J/t} ≤ δ/l0 for
    J = ceil(t·ln(l0/δ)); by the union bound over the ≤ l0 new keys, with
    probability ≥ 1 − δ none appears.
    """
    return linf + ceil_log_inv_delta_over_eps(epsilon / l1, delta / l0)


def _sh_query(value: Query) -> Query:
    if not isinstance(value, Query) or value.kind != "histogram":
        raise InvalidArgument("StableHistogram", "query", value, "must be a Query.histogram(column[, keys])")
    check_user_level("StableHistogram", value, "add_remove", ("histogram",))
    return value


def _caps(query: Query) -> tuple[int, int, int]:
    """(L1, L∞, L0): rows, rows in one key and keys one row (user) adds."""
    l1, _, linf = histogram_sensitivity(query)
    l0 = l1 if query.max_keys is None else min(query.max_keys, l1)
    return l1, linf, l0


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
        User level (``user=`` with ``| MaxKeysPerUser(m, rows_per_key=c)`` and/or
        ``| MaxRowsPerUser(k)``): one user adds at most L1 = min(k, m·c) rows, at
        most L∞ = min(k, c) to a key, over at most L0 = min(m, L1) keys; the
        noise has scale L1/ε (ε-DP on the keys present in both datasets) and
        the threshold of :func:`stable_threshold` keeps each of the ≤ L0 new
        keys with probability < δ/L0.
    """

    query: Query = attrs.field(converter=_sh_query)
    epsilon: Fraction = attrs.field(converter=_sh_eps)
    delta: Fraction = attrs.field(converter=_sh_delta)

    @property
    def neighbouring(self) -> Neighbouring:
        """One row (or one user, for a user-level histogram), add/remove."""
        return self.query.neighbouring("add_remove")

    def threshold(self) -> int:
        """The smallest noisy count released (:func:`stable_threshold`)."""
        l1, linf, l0 = _caps(self.query)
        return stable_threshold(self.epsilon, self.delta, l1, linf, l0)

    def privacy(self) -> PrivacyClaim[ApproxDP]:
        """(ε, δ)."""
        l1, linf, l0 = _caps(self.query)
        return PrivacyClaim(
            ApproxDP(self.epsilon, self.delta),
            "stable histogram, scale L1/eps, keep noisy counts >= Linf + ceil(L1 ln(L0/delta)/eps) (seed 003; Bun-Nissim-Stemmer 2016)",
            (
                ("epsilon", str(self.epsilon)), ("delta", str(self.delta)), ("L1", str(l1)), ("Linf", str(linf)),
                ("L0", str(l0)), ("threshold", str(self.threshold())),
            ),
        )

    def accuracy(
        self, alpha: ExactLike = Fraction(1, 20), *, count: int | None = None, keys: int | None = None
    ) -> Accuracy:
        """The (1 − ``alpha``) per-key count error and the release threshold (no data touched).

        Each key present is, with probability ≥ 1 − α, either not released or
        released within the exact (1 − α) quantile of its discrete Laplace noise
        (scale L1/ε; tight). A key of true count c is released with probability
        exactly ``P[Z >= threshold − c]``: the notes give the count released with
        probability ≥ 1 − α, and with ``count=`` the probability at that count;
        ``keys=``: a public bound on the number of keys present, for the union
        bound (default: the listed keys). Seed 003 "stable histograms";
        Bun–Nissim–Stemmer 2016. Proof in :mod:`dpalg.mechanisms._accuracy_more`.
        """
        from dpalg.mechanisms._accuracy_more import stable_histogram_accuracy

        return stable_histogram_accuracy(self, alpha, count, keys)

    def release(self, data: Dataset, rng: AbstractRandomness) -> object:
        """``{key: noisy count}`` for the keys that pass the threshold."""
        assert self.query.column is not None
        counts: list[int]
        if self.query.user is None:  # row level: counts through the reductions seam
            reductions = as_reductions(data)
            if self.query.keys is not None:  # rows with other keys are dropped first (a per-row map)
                keys: tuple[Key, ...] = self.query.keys
                counts = reductions.key_counts(self.query.column, keys).tolist()
            else:  # the keys present, normalised and in key order (the data policy: no comparison raises)
                keys, present = reductions.key_histogram(self.query.column)
                counts = present.tolist()
        else:
            if self.query.keys is not None:
                keys = self.query.keys
                codes = data.key_codes(self.query.column, keys)
            else:
                keys, codes = data.key_index(self.query.column)
            codes = codes[kept_rows(self.query, data, prf_secret(rng))[2]]  # the rows each user keeps under the caps
            counts = np.bincount(codes[codes >= 0], minlength=len(keys)).tolist()
        pairs = [(k, int(c)) for k, c in zip(keys, counts) if c > 0]
        if not pairs:
            return {}
        l1 = _caps(self.query)[0]
        noise = discrete_laplace(l1 / self.epsilon, size=len(pairs), rng=rng)
        keep = self.threshold()
        return {k: c + int(z) for (k, c), z in zip(pairs, noise.tolist()) if c + int(z) >= keep}
