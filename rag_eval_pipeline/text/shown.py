"""How a message echoes a value it did not write: quoted and capped, never the whole of it."""

from __future__ import annotations

MAX_SHOWN_CHARS = 120


def capped(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, then its length: `abc… (312,000,000 characters)`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def shown_value(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """A value quoted for a message: `repr` of its first `limit` characters (control, bidi and
    zero-width characters escaped), then its length when it was longer. The one rule for every
    value a message echoes."""
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"
