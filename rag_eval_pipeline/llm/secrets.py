"""Redacting secrets: by value (what the environment and the configuration hold) and by shape.

The one rule every place where outside text enters or a configuration value leaves applies:
provider replies, error texts and headers (`llm.client`), log records (`RedactingFilter`), model
identities and URLs stored in tables, metadata and the event log.

By value: a provider key can look like anything (`gsk_...`, `AIza...`, a bare hex string), and
litellm reads one from whichever variable its provider uses (`OPENAI_API_KEY`, `GROQ_API_KEY`,
`AWS_SECRET_ACCESS_KEY`, `AZURE_AD_TOKEN`, `HF_TOKEN`, `VERTEXAI_CREDENTIALS`, ...). So the
secrets are the values of every environment variable whose name has a segment (between `_`)
`KEY`, `APIKEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `CREDENTIAL(S)`, contains `WEBHOOK`
(a Slack webhook URL is itself a credential) or starts with `RAG_EVAL_HTTP_` (the HTTP system's
header values), plus the configured API key; and the user information (`user:password`, and the
password alone) of any URL among the environment's values and the configured ones (an
`api_base` of `https://user:password@proxy/v1`). Values shorter than `MIN_SECRET_CHARS` are
ignored (a `1` or `true` is no secret and would blank every digit).

By shape, whatever the environment holds: the user information of any URL
(`https://***@host`), the credential of an `Authorization` scheme (`Bearer ***`, `Basic ***`,
`Token ***`) and anything shaped like an `sk-...` key. Each becomes `***`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import unquote, urlsplit

REDACTED = "***"
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)|WEBHOOK"
    r"|^RAG_EVAL_HTTP_",
    re.IGNORECASE,
)
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@")
# A credential, unlike a word ("Basic principles"), holds a digit, a symbol or a capital letter
# after a small one.
_CREDENTIAL_CHARS = r"[A-Za-z0-9._~+/=-]"
_AUTH_CREDENTIAL = re.compile(
    rf"\b([Bb]earer|[Bb]asic|[Tt]oken)(:?\s+)"
    rf"(?={_CREDENTIAL_CHARS}*(?:\d|[+/=_~]|[a-z]{_CREDENTIAL_CHARS}*[A-Z])){_CREDENTIAL_CHARS}{{8,}}"
)


def secret_values(
    extra: Iterable[str | None] = (),
    environ: Mapping[str, str] | None = None,
    urls: Iterable[str | None] = (),
) -> tuple[str, ...]:
    """The values to redact: secret-named variables of `environ` (default: the process
    environment, read at each call), the `extra` values and the user information of every URL
    among `environ`'s values and `urls` (configured endpoints), longest first, at least
    `MIN_SECRET_CHARS` long."""
    environ = os.environ if environ is None else environ
    named = [value for name, value in environ.items() if _SECRET_NAME.search(name)]
    userinfo = _url_userinfo([*environ.values(), *(url for url in urls if url)])
    values = {
        value for value in (*named, *extra, *userinfo) if value and len(value) >= MIN_SECRET_CHARS
    }
    return tuple(sorted(values, key=len, reverse=True))


def _url_userinfo(values: Iterable[str]) -> Iterator[str]:
    """`user:password`, the user and the password (as written and percent-decoded) of every
    value that is a URL with user information."""
    for value in values:
        if "://" not in value or "@" not in value:
            continue
        try:
            parts = urlsplit(value.strip())
        except ValueError:
            continue
        userinfo = parts.netloc.rpartition("@")[0]
        if userinfo:
            user, _, password = userinfo.partition(":")
            yield from (userinfo, user, password, unquote(user), unquote(password))


def redact(text: str, extra: Iterable[str | None] = (), urls: Iterable[str | None] = ()) -> str:
    """`text` with every secret value (see `secret_values`: `extra` values are secrets, `urls`
    hold some in their user information), the user information of every URL, every
    `Authorization` credential and every `sk-...` key as `***`."""
    for secret in secret_values(extra, urls=urls):
        text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _AUTH_CREDENTIAL.sub(rf"\1\2{REDACTED}", text)
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
