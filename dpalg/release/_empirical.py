"""The empirical auditor: a statistical *lower* bound on a mechanism's ε (and δ).

Runs a primitive many times on two neighbouring datasets and looks for an event
S whose probabilities violate the claim, in the spirit of DP-Sniper (Bichsel et
al. 2021) and Delta-Siege (Lokna et al. 2023). It can never prove privacy; it can
refute a claim (a lower bound above the claimed ε, or above δ at the claimed ε,
means a bug), which is how the tests catch deliberately broken variants.

Method:

1. **Features.** Every output is projected to one number (⊥ → −∞; a dict or a
   vector is read at the pair's ``coordinate``; a missing key → −∞) or, for
   non-numeric outputs, to a category. Numbers get a second feature, their
   *granularity* (the exponent of the lowest set bit of the float): events on it
   catch floating-point noise whose set of reachable outputs depends on the data
   (Mironov 2012).
2. **Selection** (first half of the runs): over threshold events {f ≥ c} and
   their complements on each feature, histogram events (the categories, or the
   few distinct values, whose empirical ratio is largest), and both orders of
   the two datasets, pick the event with the best *approximate* bound.
3. **Estimation** (second half, independent of the choice): exact one-sided
   Clopper–Pearson bounds p_lo ≤ P[M(x) ∈ S] and q_hi ≥ P[M(x') ∈ S], each at
   level α/4 (a second event is selected for δ), so everything reported holds
   jointly with probability ≥ 1 − α. Then
   ε̂ = ln((p_lo − δ)/q_hi) and δ̂(ε) = p_lo − e^ε·q_hi.

Clopper–Pearson bounds are the quantiles of Beta distributions, found by
bisection on mpmath's regularised incomplete beta function
(:mod:`dpalg.release._clopper_pearson`). Only the noise layer draws randomness;
the auditor itself is deterministic given the samples.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal, Protocol, cast, final

import attrs
import numpy as np
import numpy.typing as npt

from dpalg._bottom import Bottom
from dpalg._errors import InvalidArgument, Unsupported
from dpalg.data import Dataset, as_dataset
from dpalg.graph._node import AbstractPrimitive
from dpalg.graph._schema import steps_data
from dpalg.measures import ZCDP, ApproxDP, PureDP
from dpalg.noise._random import AbstractRandomness, RngLike, resolve_rng
from dpalg.release._clopper_pearson import clopper_pearson_lower, clopper_pearson_upper

# tests/mechanisms/test_empirical_audit.py imports the Clopper–Pearson functions from here
from dpalg.release._clopper_pearson import regularized_beta as regularized_beta

__all__ = [
    "AnyPrimitive", "EmpiricalAudit", "Samples", "clopper_pearson_lower", "clopper_pearson_upper",
    "draw_samples", "empirical_epsilon_lower_bound", "evaluate_samples", "plot_audit", "regularized_beta",
]  # fmt: skip

AnyPrimitive = AbstractPrimitive[PureDP] | AbstractPrimitive[ApproxDP] | AbstractPrimitive[ZCDP]
FloatArray = npt.NDArray[np.float64]
Coordinate = str | int | None

_BOTTOM_LABEL = "⊥"
_MAX_THRESHOLDS = 512
_MAX_CATEGORIES = 64
_Z_SELECT = 2.326  # one-sided 99% normal quantile, for the *approximate* selection score only


# --- sampling -----------------------------------------------------------------------------


class _Progress(Protocol):
    def update(self, n: int) -> object: ...

    def close(self) -> None: ...


def _progress_bar(total: int, label: str, enabled: bool | None) -> _Progress | None:
    """A tqdm bar when tqdm is installed and progress is wanted (optional extra ``audit``)."""
    if enabled is False:
        return None
    try:
        tqdm = importlib.import_module("tqdm").tqdm
    except ImportError:
        if enabled:
            raise Unsupported("progress bars need the optional 'tqdm' package: pip install 'dpalg[audit]'") from None
        return None
    if enabled is None:
        return None
    return cast(_Progress, tqdm(total=total, desc=label, unit="run", leave=False, mininterval=0.5))


@final
@attrs.frozen(eq=False)
class Samples:
    """Outputs of a mechanism on a pair of neighbouring datasets, projected.

    Attributes:
        first, second: numeric projections (⊥ and missing keys are −∞), or
            ``None`` when the outputs are categorical.
        first_labels, second_labels: category labels (always present; for
            numbers they are the values as strings when there are few).
        categorical: whether the outputs are non-numeric.
    """

    first: FloatArray | None
    second: FloatArray | None
    first_labels: tuple[str, ...]
    second_labels: tuple[str, ...]
    categorical: bool

    @property
    def trials(self) -> int:
        """Runs per dataset."""
        return len(self.first_labels)


def _project(value: object, coordinate: Coordinate) -> object:
    if isinstance(value, Bottom):
        return value
    if isinstance(value, dict):
        if coordinate is None:  # the whole histogram as one category (pass a coordinate to audit one key)
            return repr(sorted(value.items(), key=repr))
        return value.get(coordinate, -math.inf)
    if isinstance(value, (tuple, list, np.ndarray)):
        index = coordinate if isinstance(coordinate, int) else 0
        return value[index] if len(value) > index else -math.inf
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def draw_samples(
    node: AnyPrimitive,
    data: object,
    neighbour: object,
    *,
    trials: int,
    rng: RngLike = None,
    coordinate: Coordinate = None,
    progress: bool | None = False,
    label: str = "audit",
) -> Samples:
    """Run ``node`` ``trials`` times on each dataset and project the outputs.

    Args:
        node: the primitive mechanism to audit.
        data, neighbour: two neighbouring datasets (under the node's relation).
        trials: runs per dataset.
        rng: the randomness of the runs (seed it for reproducible tests).
        coordinate: the key (dict outputs) or index (vector outputs) to look at.
        progress: ``True`` shows a tqdm bar (needs tqdm), ``None`` shows one if
            tqdm is installed, ``False`` never.
        label: the progress bar's label.
    """
    if not isinstance(node, AbstractPrimitive):
        raise InvalidArgument("draw_samples", "node", type(node).__name__, "must be a primitive mechanism (audit a plan's leaves one by one)")
    ds, ds2 = as_dataset(data), as_dataset(neighbour)
    source = resolve_rng(rng)
    bar = _progress_bar(2 * trials, label, progress)
    try:
        raw_a = _runs(node, ds, source, trials, bar)
        raw_b = _runs(node, ds2, source, trials, bar)
    finally:
        if bar is not None:
            bar.close()
    proj_a = [_project(v, coordinate) for v in raw_a]
    proj_b = [_project(v, coordinate) for v in raw_b]
    numeric = all(isinstance(v, Bottom) or _is_number(v) for v in proj_a + proj_b)
    if numeric:
        a = np.array([-math.inf if isinstance(v, Bottom) else float(cast(float, v)) for v in proj_a], dtype=np.float64)
        b = np.array([-math.inf if isinstance(v, Bottom) else float(cast(float, v)) for v in proj_b], dtype=np.float64)
        return Samples(a, b, tuple(_label(v) for v in proj_a), tuple(_label(v) for v in proj_b), False)
    return Samples(None, None, tuple(_label(v) for v in proj_a), tuple(_label(v) for v in proj_b), True)


def _label(value: object) -> str:
    if isinstance(value, Bottom):
        return _BOTTOM_LABEL
    if isinstance(value, (np.generic,)):
        value = value.item()
    return repr(value)


def _runs(node: AnyPrimitive, data: Dataset, rng: AbstractRandomness, trials: int, bar: _Progress | None) -> list[object]:
    out: list[object] = []
    step = max(1, trials // 100)
    data = steps_data(node, data)  # the node's queries' Where / derived columns, as a run applies them
    for i in range(trials):
        out.append(node.release(data, rng))
        if bar is not None and (i + 1) % step == 0:
            bar.update(step)
    if bar is not None and trials % step:
        bar.update(trials % step)
    return out


# --- events ---------------------------------------------------------------------------------


def granularity(values: FloatArray) -> FloatArray:
    """Exponent of the lowest set bit of each float (+inf for 0, ±inf and NaN).

    ``x`` is a multiple of ``2**g`` exactly when ``g <= granularity(x)``.

    Examples:
        >>> granularity(np.array([0.75, 8.0, 0.0])).tolist()
        [-2.0, 3.0, inf]
    """
    out = np.full(values.shape, math.inf)
    finite = np.isfinite(values) & (values != 0)
    mant, exp = np.frexp(values[finite])
    ints = (np.abs(mant) * 2.0**53).astype(np.int64)
    low = ints & -ints
    out[finite] = exp.astype(np.float64) - 53 + np.log2(low.astype(np.float64))
    return out


@final
@attrs.frozen
class Event:
    """An output event S, as chosen on the selection half.

    Attributes:
        feature: ``"value"``, ``"granularity"`` or ``"category"``.
        kind: ``"ge"`` (S = {f ≥ c}), ``"lt"`` (S = {f < c}) or ``"in"`` (S = a set of labels).
        threshold: c for threshold events.
        labels: the labels of S for ``"in"`` events.
        swapped: whether S is more likely under the *second* dataset (x′ plays x).
    """

    feature: str
    kind: Literal["ge", "lt", "in"]
    threshold: float = 0.0
    labels: tuple[str, ...] = ()
    swapped: bool = False

    def describe(self) -> str:
        """A short human-readable form, e.g. ``P[x'] vs P[x] of {value >= 3}``."""
        order = "x' vs x" if self.swapped else "x vs x'"
        if self.kind == "in":
            shown = ", ".join(self.labels[:6]) + (", ..." if len(self.labels) > 6 else "")
            return f"{order}: {self.feature} in {{{shown}}}"
        op = ">=" if self.kind == "ge" else "<"
        return f"{order}: {self.feature} {op} {self.threshold:.6g}"

    def contains(self, samples: Samples, which: Literal["first", "second"]) -> npt.NDArray[np.bool_]:
        """Membership of each run's output in S."""
        labels = samples.first_labels if which == "first" else samples.second_labels
        if self.kind == "in":
            chosen = set(self.labels)
            return np.array([lab in chosen for lab in labels], dtype=np.bool_)
        values = samples.first if which == "first" else samples.second
        assert values is not None
        feat = values if self.feature == "value" else granularity(values)
        return feat >= self.threshold if self.kind == "ge" else feat < self.threshold


def _lower_approx(p: FloatArray, n: int) -> FloatArray:
    return p - _Z_SELECT * np.sqrt(np.maximum(p * (1 - p), 1.0 / n) / n)


def _upper_approx(p: FloatArray, n: int) -> FloatArray:
    return cast(FloatArray, np.minimum(1.0, p + _Z_SELECT * np.sqrt(np.maximum(p * (1 - p), 1.0 / n) / n) + 1.0 / n))


Objective = Callable[[FloatArray, FloatArray, int], FloatArray]


def _eps_objective(delta: float) -> Objective:
    def score(p: FloatArray, q: FloatArray, n: int) -> FloatArray:
        lo, hi = _lower_approx(p, n) - delta, _upper_approx(q, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            return cast(FloatArray, np.where(lo > 0, np.log(np.maximum(lo, 1e-300) / hi), -np.inf))

    return score


def _delta_objective(epsilon: float) -> Objective:
    factor = math.exp(min(epsilon, 700.0))

    def score(p: FloatArray, q: FloatArray, n: int) -> FloatArray:
        return _lower_approx(p, n) - factor * _upper_approx(q, n)

    return score


def _threshold_events(feature: str, a: FloatArray, b: FloatArray, objective: Objective) -> Iterator[tuple[float, Event]]:
    n = a.size
    both = np.concatenate([a, b])
    cand = np.unique(both[~np.isnan(both)])
    if cand.size > _MAX_THRESHOLDS:
        finite = cand[np.isfinite(cand)]
        cand = np.unique(np.concatenate([np.quantile(finite, np.linspace(0, 1, _MAX_THRESHOLDS)), cand[~np.isfinite(cand)]]))
    sa, sb = np.sort(a), np.sort(b)
    ge_a = 1 - np.searchsorted(sa, cand, side="left") / n
    ge_b = 1 - np.searchsorted(sb, cand, side="left") / n
    for kind, pa, pb in (("ge", ge_a, ge_b), ("lt", 1 - ge_a, 1 - ge_b)):
        for swapped, p, q in ((False, pa, pb), (True, pb, pa)):
            scores = objective(p, q, n)
            i = int(np.argmax(scores))
            yield float(scores[i]), Event(feature, cast(Literal["ge", "lt"], kind), float(cand[i]), swapped=swapped)


def _label_events(feature: str, a: Sequence[str], b: Sequence[str], objective: Objective) -> Iterator[tuple[float, Event]]:
    n = len(a)
    labels = sorted(set(a) | set(b))
    if len(labels) > _MAX_CATEGORIES:
        return
    ca = {lab: 0 for lab in labels}
    cb = dict(ca)
    for lab in a:
        ca[lab] += 1
    for lab in b:
        cb[lab] += 1
    for swapped in (False, True):
        first, second = (cb, ca) if swapped else (ca, cb)
        order = sorted(labels, key=lambda lab: (first[lab] + 0.5) / (second[lab] + 0.5), reverse=True)
        p = np.cumsum([first[lab] for lab in order]) / n
        q = np.cumsum([second[lab] for lab in order]) / n
        scores = objective(p.astype(np.float64), q.astype(np.float64), n)
        i = int(np.argmax(scores))
        yield float(scores[i]), Event(feature, "in", labels=tuple(order[: i + 1]), swapped=swapped)


def _select(samples: Samples, objective: Objective) -> Event:
    best: tuple[float, Event] | None = None
    candidates: list[Iterable[tuple[float, Event]]] = [
        _label_events("category" if samples.categorical else "value", samples.first_labels, samples.second_labels, objective)
    ]
    if not samples.categorical:
        assert samples.first is not None and samples.second is not None
        candidates.append(_threshold_events("value", samples.first, samples.second, objective))
        candidates.append(_threshold_events("granularity", granularity(samples.first), granularity(samples.second), objective))
    for family in candidates:
        for score, event in family:
            if best is None or score > best[0]:
                best = (score, event)
    if best is None:  # too many distinct non-numeric outputs for a histogram event: nothing to test
        return Event("category", "in")
    return best[1]


def _half(samples: Samples, part: Literal[0, 1]) -> Samples:
    n = samples.trials // 2
    cut = slice(0, n) if part == 0 else slice(n, 2 * n)
    return Samples(
        None if samples.first is None else samples.first[cut],
        None if samples.second is None else samples.second[cut],
        samples.first_labels[cut], samples.second_labels[cut], samples.categorical,
    )


# --- the audit --------------------------------------------------------------------------------


@final
@attrs.frozen
class EmpiricalAudit:
    """Result of one empirical audit of a mechanism on one pair of neighbours.

    Attributes:
        epsilon_lower: a lower bound on the true ε at the audited δ, holding (with
            the other bounds reported) with probability ≥ 1 − α; 0 if none found.
        delta_lower: a lower bound on the true δ at the claimed ε (0 if none found,
            ``None`` when no ε was given).
        event: the event used for ``epsilon_lower``.
        delta_event: the event used for ``delta_lower``.
        p_lower, q_upper: the Clopper–Pearson bounds behind ``epsilon_lower``.
        trials: runs per dataset (half select the events, half estimate them).
        alpha: the overall confidence parameter.
        delta: the δ at which ``epsilon_lower`` was computed.
        samples: the projected outputs (for plots; not compared).
    """

    epsilon_lower: float
    delta_lower: float | None
    event: Event
    delta_event: Event | None
    p_lower: float
    q_upper: float
    trials: int
    alpha: float
    delta: float
    samples: Samples = attrs.field(repr=False, eq=False)

    @property
    def threshold(self) -> float:
        """The threshold c of the ε event (0 for histogram events)."""
        return self.event.threshold

    @property
    def direction(self) -> str:
        """``"ge"``, ``"lt"`` or ``"in"``, with ``"-swapped"`` when x′ plays x."""
        return self.event.kind + ("-swapped" if self.event.swapped else "")


def _bounds(event: Event, est: Samples, alpha: float) -> tuple[float, float]:
    first = int(np.count_nonzero(event.contains(est, "first")))
    second = int(np.count_nonzero(event.contains(est, "second")))
    if event.swapped:
        first, second = second, first
    n = est.trials
    return clopper_pearson_lower(first, n, alpha), clopper_pearson_upper(second, n, alpha)


def evaluate_samples(samples: Samples, *, delta: float = 0.0, epsilon: float | None = None, alpha: float = 0.01) -> EmpiricalAudit:
    """The bounds of :func:`empirical_epsilon_lower_bound` from already drawn samples.

    Args:
        samples: outputs on the two datasets (see :func:`draw_samples`).
        delta: the δ of the claim (ε̂ is computed at this δ).
        epsilon: the claimed ε (δ̂ is computed at it; ``None`` skips δ̂).
        alpha: the bounds hold jointly with probability ≥ 1 − α.
    """
    if not 0 < alpha < 1:
        raise InvalidArgument("evaluate_samples", "alpha", alpha, "must be in (0, 1)")
    if not 0 <= delta < 1:
        raise InvalidArgument("evaluate_samples", "delta", delta, "must be in [0, 1)")
    if samples.trials < 100:
        raise InvalidArgument("evaluate_samples", "trials", samples.trials, "must be >= 100")
    sel, est = _half(samples, 0), _half(samples, 1)
    level = alpha / 4  # two bounds (p_lo, q_hi) for each of the two events
    event = _select(sel, _eps_objective(delta))
    p_lo, q_hi = _bounds(event, est, level)
    eps_hat = math.log((p_lo - delta) / q_hi) if p_lo - delta > 0 and q_hi > 0 else 0.0
    delta_hat: float | None = None
    delta_event: Event | None = None
    if epsilon is not None:
        delta_event = _select(sel, _delta_objective(epsilon))
        dp_lo, dq_hi = _bounds(delta_event, est, level)
        delta_hat = max(0.0, dp_lo - math.exp(min(epsilon, 700.0)) * dq_hi)
    return EmpiricalAudit(max(0.0, eps_hat), delta_hat, event, delta_event, p_lo, q_hi, samples.trials, alpha, delta, samples)


def empirical_epsilon_lower_bound(
    node: AnyPrimitive,
    data: object,
    neighbour: object,
    *,
    trials: int = 20_000,
    delta: float = 0.0,
    epsilon: float | None = None,
    alpha: float = 0.01,
    rng: RngLike = None,
    coordinate: Coordinate = None,
    progress: bool | None = False,
) -> EmpiricalAudit:
    """A statistical lower bound on the ε (and δ) of ``node`` from two neighbouring datasets.

    Args:
        node: a primitive mechanism.
        data: a dataset; ``neighbour``: a neighbouring dataset under the node's relation.
        trials: runs per dataset (half choose the events, half estimate them).
        delta: the δ of the claim being audited (ε̂ is computed at this δ).
        epsilon: the claimed ε; when given, δ̂ at this ε is reported too.
        alpha: all bounds hold jointly with probability ≥ 1 − α.
        rng: randomness for the runs (seed it for reproducible tests).
        coordinate: the key or index to read in dict or vector outputs.
        progress: show a tqdm progress bar (``None``: if tqdm is installed).

    Returns:
        An :class:`EmpiricalAudit`; ``epsilon_lower`` above the claimed ε, or
        ``delta_lower`` above the claimed δ, refutes the claim.

    Examples:
        >>> from dpalg import Query
        >>> from dpalg.mechanisms import Laplace
        >>> audit = empirical_epsilon_lower_bound(
        ...     Laplace(Query.count(), epsilon=1), {"x": [0.0] * 5}, {"x": [0.0] * 6}, trials=2000, rng=1)
        >>> 0 <= audit.epsilon_lower <= 1
        True
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 100:
        raise InvalidArgument("empirical_epsilon_lower_bound", "trials", trials, "must be an int >= 100")
    samples = draw_samples(node, data, neighbour, trials=trials, rng=rng, coordinate=coordinate, progress=progress)
    return evaluate_samples(samples, delta=delta, epsilon=epsilon, alpha=alpha)


# --- plots ------------------------------------------------------------------------------------


def plot_audit(audit: EmpiricalAudit, path: str | Path, *, title: str = "") -> Path:
    """Write a PNG of the two output histograms with the chosen event shaded.

    Needs matplotlib (the optional extra ``audit`` or ``plots``).

    Raises:
        Unsupported: when matplotlib is not installed.
    """
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        raise Unsupported("plots need the optional 'matplotlib' package: pip install 'dpalg[audit]'") from None
    s = audit.samples
    event = audit.event
    fig, ax = plt.subplots(figsize=(7, 4))
    if s.categorical or event.feature in ("category",) or (event.kind == "in"):
        labels = sorted(set(s.first_labels) | set(s.second_labels))[:_MAX_CATEGORIES]
        xs = np.arange(len(labels))
        ca = [s.first_labels.count(lab) for lab in labels]
        cb = [s.second_labels.count(lab) for lab in labels]
        ax.bar(xs - 0.2, ca, width=0.4, label="M(x)")
        ax.bar(xs + 0.2, cb, width=0.4, label="M(x')")
        for i, lab in enumerate(labels):
            if lab in event.labels:
                ax.axvspan(i - 0.5, i + 0.5, color="red", alpha=0.12)
        ax.set_xticks(xs, labels, rotation=45, fontsize=7)
    else:
        assert s.first is not None and s.second is not None
        fa, fb = (s.first, s.second) if event.feature == "value" else (granularity(s.first), granularity(s.second))
        both = np.concatenate([fa, fb])
        finite = both[np.isfinite(both)]
        bins = np.histogram_bin_edges(finite, bins=60) if finite.size else np.linspace(-1, 1, 3)
        ax.hist(np.clip(fa, bins[0], bins[-1]), bins=bins, alpha=0.5, label="M(x)")
        ax.hist(np.clip(fb, bins[0], bins[-1]), bins=bins, alpha=0.5, label="M(x')")
        c = min(max(event.threshold, bins[0]), bins[-1])
        lo, hi = (c, bins[-1]) if event.kind == "ge" else (bins[0], c)
        ax.axvspan(lo, hi, color="red", alpha=0.12, label="event S")
        ax.set_xlabel(event.feature + (" (⊥ shown at the left edge)" if np.isneginf(both).any() else ""))
    ax.set_ylabel("runs")
    ax.set_title((title + "\n" if title else "") + f"eps_hat = {audit.epsilon_lower:.3f}; S: {event.describe()}", fontsize=8)
    ax.legend(fontsize=8)
    out = Path(path)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
