"""Stable histograms: counts over an unknown (or huge) key set, (ε, δ)-DP.

**Accuracy.** **Stable histogram** (:class:`StableHistogram`; seed 003, Bun–Nissim–Stemmer
2016). Each key with true count ``c > 0`` (after the per-user caps at user
level) gets ``a = c + Z`` with ``t = L1/ε`` (``Z`` independent per key), and
``a`` is released iff ``a >= T`` (``T`` = :meth:`StableHistogram.threshold`).

* *Count error, per key.* ``{released, |a − c| > m} ⊆ {|Z| > m}`` so with
  ``m`` the exact (1 − α) quantile of ``|Z|`` (:func:`~dpalg.noise._tails.laplace_tail_quantile`),
  each key is, with probability ``>= 1 − α``, either not released or released
  within ``±m``. It is tight over datasets: for large ``c`` the key is released
  whenever ``Z >= T − c`` and the excess probability tends to ``P[|Z| > m]``.
  For ``K`` keys at once use ``α/K`` (union bound; ``K`` = the listed keys, or
  a public bound on the keys present).
* *Threshold.* A key of true count ``c`` is released with probability exactly
  ``P[Z >= T − c]`` (L), increasing in ``c``; so a key with count ``>= c`` is
  released with at least, and one with count ``<= c`` with at most, that
  probability. The smallest ``c_α`` with ``P[Z >= T − c_α] >= 1 − α`` is the
  count released with probability ``>= 1 − α``; a key new to a neighbour
  (count ``<= L∞``) is released with probability ``< δ/L0`` (the privacy proof).

The law (L) of ``Z``: :mod:`dpalg.mechanisms._common.accuracy`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import final

import attrs

from dpalg._errors import InvalidArgument
from dpalg._numbers import ExactLike
from dpalg.data import Dataset, Key, Neighbouring, as_reductions
from dpalg.graph._accuracy import Accuracy, alpha_param
from dpalg.mechanisms._common.accuracy import down_text, int_param, laplace_at_least, percent_text, smallest, up_text
from dpalg.graph._node import AbstractPrimitive, PrivacyClaim
from dpalg.measures import ApproxDP
from dpalg.mechanisms._common.params import positive_param, unit_interval_param
from dpalg.mechanisms._common.ptr_test import ceil_log_inv_delta_over_eps
from dpalg.mechanisms._common.user_level import check_user_level, histogram_sensitivity, user_key_counts
from dpalg.noise import AbstractRandomness, discrete_laplace, prf_secret
from dpalg.noise._tails import laplace_tail_quantile
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

    When the keys are what matters (which groups exist, then statistics per group),
    :class:`~dpalg.GroupBy` with ``keys=PartitionSelection(epsilon, delta)`` is the
    better tool: it selects on the number of distinct *users* per key with the
    optimal keep probabilities (Desfontaines et al. 2022), keeping a key of 12 users
    with probability 0.76 at ε = 1, δ = 1e-5 where this threshold needs a noisy
    count of at least 13 (:func:`stable_threshold` at ε = 1, δ = 1e-5), and its per-group aggregates can be
    any node. ``StableHistogram`` stays as it is (certificates re-derive its cost by
    its own rule): a one-node noisy count of unknown keys.
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
        Bun–Nissim–Stemmer 2016. Proof in the module docstring.
        """
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
        else:  # the rows each user keeps under the caps (a key without a kept row has count 0: dropped below)
            keys, kept = user_key_counts(self.query, data, prf_secret(rng))
            counts = kept.tolist()
        pairs = [(k, int(c)) for k, c in zip(keys, counts) if c > 0]
        if not pairs:
            return {}
        l1 = _caps(self.query)[0]
        noise = discrete_laplace(l1 / self.epsilon, size=len(pairs), rng=rng)
        keep = self.threshold()
        return {k: c + int(z) for (k, c), z in zip(pairs, noise.tolist()) if c + int(z) >= keep}


def stable_release_count(scale: Fraction, threshold: int, alpha: Fraction) -> int:
    """The smallest count ``c >= 1`` released with probability proven ``>= 1 − α``: ``P[Z >= T − c] >= 1 − α``.

    Examples:
        >>> stable_release_count(Fraction(1), 4, Fraction(1, 20))  # P[Z >= -2] = 1 - e^-3/(1 + e^-1) = 0.964
        6
    """
    return smallest(lambda c: laplace_at_least(scale, threshold - c)[0] >= 1 - alpha, start=1)


def stable_histogram_accuracy(node: StableHistogram, alpha: ExactLike, count: int | None, keys: int | None) -> Accuracy:
    """:class:`StableHistogram`: per-key count error and the release threshold (module docstring)."""
    owner = "StableHistogram.accuracy"
    a = alpha_param(owner, alpha)
    l1 = _caps(node.query)[0]
    t = Fraction(l1) / node.epsilon
    threshold = node.threshold()
    m, tight = laplace_tail_quantile(t, a)
    noise = f"discrete Laplace, scale {up_text(t)}, per key; kept when the noisy count is >= {threshold}"
    counted = "after the per-user caps" if node.query.user is not None else "rows"
    c_alpha = stable_release_count(t, threshold, a)
    notes = [
        "each key present: not released, or released within this of its true count",
        f"released with probability >= {percent_text(1 - a)} once its true count ({counted}) is >= {c_alpha}; "
        f"at count c with probability exactly P[Z >= {threshold} - c]",
    ]
    if keys is not None:
        if isinstance(keys, bool) or not isinstance(keys, int) or keys < 1:
            raise InvalidArgument(owner, "keys", keys, "must be an int >= 1 (a public bound on the number of keys present)")
    elif node.query.keys is not None:
        keys = len(node.query.keys)  # only listed keys can be present
    if keys is not None:
        m_all, _ = laplace_tail_quantile(t, a / keys)
        c_all = stable_release_count(t, threshold, a / keys)
        notes.append(f"all {keys} keys at once (union bound, alpha/{keys}): ±{m_all}; every key with count >= {c_all} released")
    else:
        notes.append("for all K keys present at once use alpha/K (union bound); pass keys=K for a number")
    if count is not None:
        c = int_param(owner, "count", count, 0, "a true count")
        lo, hi = laplace_at_least(t, threshold - c)
        notes.append(f"a key with true count >= {c} is released with probability >= {down_text(lo)}; one with count <= {c} with <= {up_text(hi)}")
    return Accuracy(a, Fraction(m), "absolute, per key", noise, tight, None, tuple(notes))
