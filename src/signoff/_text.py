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
