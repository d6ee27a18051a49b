"""The local sensitivity of a ratio of counts ``a/b``, exactly and as a bound over a box of counts.

Used by :class:`~dpalg.mechanisms.BoundedLSRatio` (its private bound ĝ, seed 000
Theorem 2) and by the tests that check it against brute force.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpalg._errors import InvalidArgument
from dpalg.data import Relation

__all__ = ["ratio_local_sensitivity", "ratio_ls_bound"]


def ratio_local_sensitivity(a: int, b: int, relation: Relation = "add_remove") -> Fraction:
    """The local-sensitivity formula of a/b at (a, b), valid for b ≥ 2.

    Add/remove (seed 000): the neighbours are (a+1, b+1), (a, b+1), (a−1, b−1)
    and (a, b−1); the removals dominate, so LS ≤ max(b − a, a)/(b² − b), with
    equality when 1 ≤ a ≤ b − 1 (both removals exist). Substitution: one row
    may also switch membership, (a ± 1, b), or become missing (a removal), so
    LS ≤ max(max(b − a, a)/(b² − b), 1/b).

    Examples:
        >>> ratio_local_sensitivity(3, 10)
        Fraction(7, 90)
        >>> ratio_local_sensitivity(5, 10, "substitution")
        Fraction(1, 10)
    """
    if b < 2 or not 0 <= a <= b:
        raise InvalidArgument("ratio_local_sensitivity", "(a, b)", (a, b), "must satisfy 0 <= a <= b and b >= 2")
    ls = Fraction(max(a, b - a), b * b - b)
    return max(ls, Fraction(1, b)) if relation == "substitution" else ls


def ratio_ls_bound(a_lo: int, a_hi: int, b_lo: int, b_hi: int, relation: Relation = "add_remove") -> Fraction:
    """ĝ: the largest value of the LS formula over a ∈ [a_lo, a_hi], b ∈ [b_lo, b_hi] (b_lo ≥ 2).

    a/(b² − b) grows with a and falls with b (b ≥ 2): its maximum is
    a_hi/(b_lo² − b_lo). (b − a)/(b² − b) falls with a, so a = a_lo; as a function
    of b its derivative has the sign of a(2b − 1) − b², positive between the
    roots a ± sqrt(a² − a) and negative outside, so on integers b ≥ 2 the maximum
    is at an end of [b_lo, b_hi] or next to b_x = a + sqrt(a² − a) (floor and
    ceiling, from an exact integer square root). Note: the seed's code listing
    uses a_lower in the first term and a_upper in the second -- swapped relative
    to this derivation (and unsafe, see the tests).

    Examples:
        >>> ratio_ls_bound(3, 3, 10, 10) == ratio_local_sensitivity(3, 10)
        True
        >>> ratio_ls_bound(100, 140, 380, 420)
        Fraction(14, 7201)
    """
    if b_lo < 2 or a_lo < 0 or a_lo > a_hi or b_lo > b_hi:
        raise InvalidArgument("ratio_ls_bound", "bounds", (a_lo, a_hi, b_lo, b_hi), "must satisfy 0 <= a_lo <= a_hi, 2 <= b_lo <= b_hi")
    term_a = Fraction(a_hi, b_lo * b_lo - b_lo)
    root = math.isqrt(a_lo * a_lo - a_lo) if a_lo >= 1 else 0
    candidates = {b_lo, b_hi, a_lo + root, a_lo + root + 1}
    term_rest = max(Fraction(b - a_lo, b * b - b) for b in candidates if b_lo <= b <= b_hi)
    g = max(term_a, term_rest)
    return max(g, Fraction(1, b_lo)) if relation == "substitution" else g
