"""Redacting secrets by value: what the environment and the configuration hold, not key shapes.

A provider key can look like anything (`gsk_...`, `AIza...`, a bare hex string), and litellm reads
one from whichever variable its provider uses (`OPENAI_API_KEY`, `GROQ_API_KEY`,
`AWS_SECRET_ACCESS_KEY`, `AZURE_AD_TOKEN`, `HF_TOKEN`, `VERTEXAI_CREDENTIALS`, ...). So the
secrets are the values of every environment variable whose name has a segment (between `_`)
`KEY`, `APIKEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `CREDENTIAL(S)` or contains `WEBHOOK`
(a Slack webhook URL is itself a credential), plus the configured API key; values shorter than
`MIN_SECRET_CHARS` are ignored (a `1` or `true` is no secret and would blank every digit).
`redact` replaces each such value, and anything shaped like an `sk-...` key, by `***`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "***"
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)|WEBHOOK",
    re.IGNORECASE,
)
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def secret_values(
    extra: Iterable[str | None] = (), environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The values to redact: secret-named variables of `environ` (default: the process
    environment, read at each call) and the `extra` values, longest first, at least
    `MIN_SECRET_CHARS` long."""
    environ = os.environ if environ is None else environ
    named = (value for name, value in environ.items() if _SECRET_NAME.search(name))
    values = {value for value in (*named, *extra) if value and len(value) >= MIN_SECRET_CHARS}
    return tuple(sorted(values, key=len, reverse=True))


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every secret value (see `secret_values`) and every `sk-...` key as `***`."""
    for secret in secret_values(extra):
        text = text.replace(secret, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """A logging filter that renders each record's message and redacts secrets from it (and from
    the exception text), so no handler downstream writes a key."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format: keep both
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info:
            formatter = logging.Formatter()
            record.exc_text = redact(formatter.formatException(record.exc_info))
            record.exc_info = None
        return True
