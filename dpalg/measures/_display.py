"""Text for privacy amounts shown to people: one import for every message writer.

Numbers (:func:`short_number`, :func:`decimal_text`) come from
:mod:`dpalg.measures._decimal`; measures (:func:`decimal_measure`,
:func:`short_measure`) from :mod:`dpalg.measures._measures`, which builds
``str(measure)`` with them. Exact values stay in ``repr`` and in certificates.
"""

from dpalg.measures._decimal import SHORT, Rounding, decimal_text, short_number
from dpalg.measures._measures import decimal_measure, short_measure

__all__ = ["SHORT", "Rounding", "decimal_measure", "decimal_text", "short_measure", "short_number"]
