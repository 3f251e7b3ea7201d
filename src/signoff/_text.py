"""Showing text someone else wrote (a model, a requester) so it reads as what it is.

Unicode format and control characters — bidirectional overrides, zero-width
joiners, line breaks — are shown as ``⟨U+202E⟩`` instead of acting, so text
cannot be made to read differently from what it says, nor to fake a line of
the surrounding prompt. The page keeps line breaks it renders safely; a
one-line-per-field prompt keeps none.
"""

from __future__ import annotations

import unicodedata


def visible(text: object, *, keep: str = "") -> str:
    """``text`` with every Cf/Cc character (except those in ``keep``) made visible."""
    return "".join(
        f"⟨U+{ord(ch):04X}⟩" if unicodedata.category(ch) in ("Cf", "Cc") and ch not in keep else ch
        for ch in str(text)
    )


def escaped(text: str) -> str:
    """``text`` for one log line: control and format characters as ``\\x1b``/``\\u202e``.

    An ANSI escape or a line break in request data (a decoded path, a reason) can
    then neither colour a terminal nor forge a line of its own.
    """
    return "".join(
        (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs")
        else ch
        for ch in text
    )


def unstorable(value: object) -> str | None:
    """Why ``value`` (a string, or JSON made of them) cannot be stored, or None.

    PostgreSQL keeps no NUL (U+0000) in text or JSON, and UTF-8 has no lone surrogate
    (U+D800–U+DFFF, which a JSON ``\\ud800`` escape yields). Every store refuses both alike.
    """
    if isinstance(value, str):
        if "\x00" in value:
            return "text may not contain NUL (U+0000)"
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return "text may not contain a lone surrogate (U+D800–U+DFFF)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unstorable(key) or unstorable(item)
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for item in value:
            found = unstorable(item)
            if found:
                return found
    return None
