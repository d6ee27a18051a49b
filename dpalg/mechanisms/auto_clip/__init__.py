"""AutoClipSum: a user-level sum whose clip is chosen privately by the exponential mechanism.

:mod:`~dpalg.mechanisms.auto_clip._auto_clip` holds the node and its accuracy statement.
"""

from dpalg.mechanisms.auto_clip._auto_clip import AutoClipSum

__all__ = ["AutoClipSum"]
