"""Helpers shared by the mechanism frameworks; this package imports none of them.

* :mod:`~dpalg.mechanisms._common.params` -- parameter validation and lattice exponents;
* :mod:`~dpalg.mechanisms._common.user_level` -- user-level queries: per-user caps, kept rows, lattice totals;
* :mod:`~dpalg.mechanisms._common.user_function` -- calling user-defined statistics quietly and safely;
* :mod:`~dpalg.mechanisms._common.local_sensitivity` -- :class:`~dpalg.mechanisms.LocalSensAtDistance`,
  the stated local sensitivity at distance k that PTR and smooth sensitivity both take
  (:mod:`~dpalg.mechanisms._common.ls_formula` parses and checks its formula);
* :mod:`~dpalg.mechanisms._common.ptr_test` -- the propose-test-release test (Dwork–Lei 2009),
  its threshold and its ⊥ probability, used by PTR, the stable histogram and sample-and-aggregate;
* :mod:`~dpalg.mechanisms._common.smooth_quantile` -- the lattice release of a quantile with
  smooth-sensitivity noise (NRS07), used by SmoothBound and sample-and-aggregate's median;
* :mod:`~dpalg.mechanisms._common.accuracy` -- proven tail bounds and bound texts shared by
  the accuracy statements;
* :mod:`~dpalg.mechanisms._common.testing` -- exact neighbour enumeration for the tests.
"""
