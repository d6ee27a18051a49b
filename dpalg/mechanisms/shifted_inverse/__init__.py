"""The shifted inverse mechanism (Fang–Dong–Yi, CCS 2022) for monotone user-level queries.

:mod:`~dpalg.mechanisms.shifted_inverse._shifted_inverse` holds :class:`ShiftedInverse`
(the exponential mechanism on the shifted loss), :class:`ShiftedInverseSearch` and
:class:`ShiftedInverseSearchZCDP` (noisy binary search), with their accuracy statements.
"""

from dpalg.mechanisms.shifted_inverse._shifted_inverse import ShiftedInverse, ShiftedInverseSearch, ShiftedInverseSearchZCDP

__all__ = ["ShiftedInverse", "ShiftedInverseSearch", "ShiftedInverseSearchZCDP"]
