"""Text trimmed as Go's ``strings.TrimSpace`` trims it.

Volcano trims plugin arguments and annotation values with ``strings.TrimSpace``,
which strips what ``unicode.IsSpace`` calls space. Python's ``str.strip`` strips the
ASCII information separators U+001C to U+001F besides, so a value ending in one of
them would mean something else here.
"""

from __future__ import annotations

__all__ = ["GO_SPACE", "trim_space"]

#: What Go's ``strings.TrimSpace`` strips (``unicode.IsSpace``).
GO_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
            "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def trim_space(text: str) -> str:
    """Go's ``strings.TrimSpace(text)``.

    >>> trim_space(" gpu\\x1f ")
    'gpu\\x1f'
    """
    return text.strip(GO_SPACE)
