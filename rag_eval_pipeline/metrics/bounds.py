"""How much of one untrusted text any metric or judge reads."""

MAX_JUDGED_CHARS = 20_000
"""Characters of a text that are read (sentences, tokens, regex matches); the rest is ignored."""
