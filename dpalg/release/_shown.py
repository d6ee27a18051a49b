"""Text from a certificate, made safe to show in a terminal or a page.

A certificate is a document anyone can write. Every string in it that dpalg
prints -- a claimed backend name or version, the randomness kind, the dpalg
version, a column name inside a plan -- is shown through :func:`shown`:

* cut to a limit, so a hostile document cannot flood the output;
* every character that is not printable (C0 and C1 controls, escape sequences,
  bidirectional overrides, line and paragraph separators, newlines) written as
  ``\\uXXXX``, so a string cannot move the cursor, erase a line, reorder the text
  or start a new line that looks like one of the audit's own.

Printable text, including non-ASCII letters, is shown unchanged.
"""

from __future__ import annotations

__all__ = ["shown"]


def shown(text: object, limit: int | None = 300) -> str:
    """``text`` (or its ``repr`` when not a str), cut to ``limit`` characters and with non-printable characters escaped.

    Examples:
        >>> shown("numpy\\x1b[2A\\x1b[2K VALID")
        'numpy\\\\u001b[2A\\\\u001b[2K VALID'
        >>> shown("a" * 10, limit=6)
        'aaaaa… (10 characters)'
        >>> shown("Zürich ⟂ ok")
        'Zürich ⟂ ok'
    """
    s = text if isinstance(text, str) else repr(text)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + f"… ({len(s)} characters)"
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in s)
