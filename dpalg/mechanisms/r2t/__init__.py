"""R2T: race to the top, a user-level sum or count by truncation at every power of two (Dong et al. 2022).

:mod:`~dpalg.mechanisms.r2t._r2t` holds the node.
"""

from dpalg.mechanisms.r2t._r2t import R2T

__all__ = ["R2T"]
