"""Smooth sensitivity (Nissim–Raskhodnikova–Smith 2007): SmoothBound and SmoothBoundCauchy.

* :mod:`~dpalg.mechanisms.smooth._smooth_bound` -- the two nodes, their release and their
  accuracy statements;
* :mod:`~dpalg.mechanisms.smooth._profile` -- truncated smooth bounds from an exact ``LS_k``
  profile (the clipped mean);
* :mod:`~dpalg.mechanisms.smooth._trimmed` -- the exact truncated smooth bound of the clipped
  trimmed mean;
* :mod:`~dpalg.mechanisms.smooth._formula` -- smooth bounds from a user's ``LS_k`` formula;
* :mod:`~dpalg.mechanisms.smooth._kinds` -- counts, sums and user-defined statistics.

The lattice release of a quantile is shared with sample-and-aggregate:
:mod:`dpalg.mechanisms._common.smooth_quantile`.
"""

from dpalg.mechanisms.smooth._smooth_bound import SmoothBound, SmoothBoundCauchy

__all__ = ["SmoothBound", "SmoothBoundCauchy"]
