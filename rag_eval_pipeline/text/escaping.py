"""Escaping untrusted text (dataset ids, questions, answers, file names) for each output sink.

Dataset text reaches Slack, markdown tables in the Dagster UI, HTML reports and terminals. Each
sink has its own metacharacters, so each has one function here, and every place that writes to a
sink calls it on every untrusted value:

- `slack_text`: Slack mrkdwn control characters (`&`, `<`, `>`) become entities, so `<!channel>`
  or `<http://evil|click>` in a value is shown, never a ping or a disguised link.
- `markdown_cell`: one cell of a GitHub-style markdown table; `|` cannot split the row, a line
  break cannot end it, and HTML or markdown syntax is shown as text.
- `terminal_text`: control characters (C0 but tab and newline, DEL, C1), which drive the
  terminal through escape sequences, are shown as `\\xNN` escapes.
- `one_line_text`: a file path or name displayed on one line (Dagster path metadata): every
  control character, tab and line break included, is shown as an escape.
- `html_text`: `&`, `<`, `>`, `"` and `'` as entities (text and attribute values).
- `xml_text`: `&`, `<`, `>` as entities, for text between the XML-like tags of an LLM prompt:
  a value cannot close its tag or open another.

Every sink but the prompt also shows invisible characters as `\\uNNNN` escapes
(`visible_text`): Unicode bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F,
U+061C), which reorder what is displayed ("Trojan Source": `prod\\u202egnp.exe` is displayed
as `prodexe.png`), and zero-width characters (U+200B-U+200D, U+2060-U+2064, U+FEFF), which make
two different names look the same. The HTML report's templates apply `terminal_text` to every
value before autoescaping (control characters hide in a page too).
"""

from __future__ import annotations

import html
import re

_SLACK = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_MARKDOWN = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "&#124;",
        "\\": "\\\\",
        "`": "\\`",
        "*": "\\*",
        "[": "\\[",
        "]": "\\]",
        "~": "\\~",
    }
)
# `_` opens emphasis only at a word boundary; inside a word (`context_precision`) it stays as is.
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x85\u2028\u2029]")
_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_INVISIBLE = re.compile(r"[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible_text(value: object) -> str:
    """`value` with every bidirectional control and zero-width character shown as a `\\uNNNN`
    escape (the rule every sink applies)."""
    return _INVISIBLE.sub(_escape_control, str(value))


def slack_text(value: object) -> str:
    """`value` as literal text in a Slack mrkdwn message (Slack's own escaping rules)."""
    return visible_text(value).translate(_SLACK)


def markdown_cell(value: object) -> str:
    """`value` as the literal content of one markdown table cell: line breaks become `<br>`."""
    escaped = _EMPHASIS_UNDERSCORE.sub(r"\\_", visible_text(value).translate(_MARKDOWN))
    return _LINE_BREAKS.sub("<br>", escaped)


def terminal_text(value: object) -> str:
    """`value` with every terminal control character shown as a `\\xNN` escape and every
    invisible character as a `\\uNNNN` escape."""
    return _TERMINAL_CONTROL.sub(_escape_control, visible_text(value))


def one_line_text(value: object) -> str:
    """`value` with every control character (C0 with tab and line feed, DEL, C1), line and
    paragraph separator (U+2028, U+2029) and invisible character shown as a `\\xNN` or `\\uNNNN`
    escape: a path without any comes back unchanged."""
    return _ANY_CONTROL.sub(_escape_control, visible_text(value))


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def html_text(value: object) -> str:
    """`value` as literal HTML text or attribute content."""
    return html.escape(visible_text(value), quote=True)


def xml_text(value: object) -> str:
    """`value` as literal text between XML tags (quotes kept: they need no escaping there)."""
    return html.escape(str(value), quote=False)
