"""Escaping untrusted text per sink: what each hostile value becomes."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.text.escaping import (
    html_text,
    markdown_cell,
    one_line_text,
    slack_text,
    terminal_text,
)

pytestmark = [pytest.mark.unit]


def test_slack_text_neutralizes_mentions_and_links() -> None:
    assert slack_text("<!channel> sys.trec") == "&lt;!channel&gt; sys.trec"
    assert slack_text("<http://evil|click> & co") == "&lt;http://evil|click&gt; &amp; co"


def test_markdown_cell_keeps_one_cell_on_one_line() -> None:
    cell = markdown_cell("a|b\nc\r\nd <img src=x> *e*")
    assert "|" not in cell
    assert "\n" not in cell and "\r" not in cell
    assert cell == "a&#124;b<br>c<br>d &lt;img src=x&gt; \\*e\\*"


def test_terminal_text_shows_control_sequences() -> None:
    hostile = "run\x1b]0;pwned\x07\x1b[2J\x9b.trec\tok\n"
    assert terminal_text(hostile) == "run\\x1b]0;pwned\\x07\\x1b[2J\\x9b.trec\tok\n"


def test_html_text_escapes_attributes() -> None:
    assert html_text("\"'<&>") == "&quot;&#x27;&lt;&amp;&gt;"


def test_terminal_text_shows_bidirectional_controls() -> None:
    assert terminal_text("sys\u202etxt.trec\u2066") == "sys\\u202etxt.trec\\u2066"


def test_markdown_cell_escapes_only_underscores_that_can_open_emphasis() -> None:
    assert markdown_cell("context_precision") == "context_precision"
    assert markdown_cell("_x_ __init__") == "\\_x\\_ \\_\\_init\\_\\_"


def test_one_line_text_escapes_every_control_and_keeps_a_plain_path() -> None:
    assert one_line_text("/data/v1\u202egnp\t.exe\n\u2028x\u200b") == (
        "/data/v1\\u202egnp\\x09.exe\\x0a\\u2028x\\u200b"
    )
    assert one_line_text("/data/v1-2.0/2026-11-28.html") == "/data/v1-2.0/2026-11-28.html"
