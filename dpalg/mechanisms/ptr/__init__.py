"""Propose-test-release (Dwork–Lei 2009): ProposeTest, PTRMode, StableHistogram and bound guidance.

* :mod:`~dpalg.mechanisms.ptr._propose_test` -- :class:`ProposeTest` (a proposed bound on the
  local sensitivity, tested privately) and :class:`PTRMode`, with their accuracy statements;
* :mod:`~dpalg.mechanisms.ptr._summary` -- the distance to instability and the value of the
  row-level kinds from a summary of the data (the reductions seam);
* :mod:`~dpalg.mechanisms.ptr._stable_histogram` -- :class:`StableHistogram`
  (Bun–Nissim–Stemmer 2016), counts over an unknown key set;
* :mod:`~dpalg.mechanisms.ptr._guidance` -- :func:`suggest_ptr_bound`, a bound to propose;
* :mod:`~dpalg.mechanisms.ptr._testing` -- exact hockey-stick checks of ProposeTest for the tests.

The test itself, its threshold and its ⊥ probability are shared with
sample-and-aggregate: :mod:`dpalg.mechanisms._common.ptr_test`.
"""

from dpalg.mechanisms._common.local_sensitivity import LocalSensAtDistance
from dpalg.mechanisms.ptr._guidance import PTRBoundSuggestion, suggest_ptr_bound
from dpalg.mechanisms.ptr._propose_test import ProposeTest, PTRMode
from dpalg.mechanisms.ptr._stable_histogram import StableHistogram

__all__ = ["LocalSensAtDistance", "PTRBoundSuggestion", "PTRMode", "ProposeTest", "StableHistogram", "suggest_ptr_bound"]
