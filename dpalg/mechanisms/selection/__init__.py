"""Selection by the exponential mechanism or permute-and-flip: ExponentialQuantile and NoisyMax.

:mod:`~dpalg.mechanisms.selection._exponential` holds both nodes, their candidate
scores and their accuracy statements (McSherry–Talwar 2007; McKenna–Sheldon 2020).
"""

from dpalg.mechanisms.selection._exponential import ExponentialQuantile, NoisyMax

__all__ = ["ExponentialQuantile", "NoisyMax"]
