"""Hostile files, round two: YAML bombs, invisible characters, timestamps, readers, limits.

Each test writes what an attacker with write access to a dataset or config folder (or a careless
exporter) would, and runs it through the real code path: `rag-eval validate`, the readers, the
loaders of `config/*.yaml`.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.datasets.errors import shown_value
from rag_eval_pipeline.defs.metadata import markdown_table
from rag_eval_pipeline.defs.resources import AlertsResource
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline.storage.yaml_files import YamlFileError, load_yaml_file
from rag_eval_pipeline_tests.conftest import DATASETS_DIR
from rag_eval_pipeline_tests.test_regression import Receiver
from rag_eval_pipeline_tests.test_report import D1, D2, D3, EVIL, regressions_of, scorecard
from rag_eval_pipeline_tests.test_report import report as report_of


def alias_bomb(levels: int = 8) -> str:
    """The billion-laughs document: `levels` levels of nine aliases each, used as a value."""
    lines = ['a0: &a0 "laugh"']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join([*lines, f"language: *a{levels}"]) + "\n"


def demo_copy(tmp_path: Path) -> Path:
    version = tmp_path / "demo-v1"
    shutil.copytree(DATASETS_DIR / "demo-v1", version)
    return version


def test_alias_bomb_in_dataset_yaml_is_refused_at_once_in_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    version = demo_copy(tmp_path)
    (version / "dataset.yaml").write_text(alias_bomb(), encoding="utf-8")
    assert len(alias_bomb().splitlines()) == 10  # 9**8 = 43M strings expanded
    started = time.perf_counter()
    assert main(["validate", str(version)]) == 1
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert elapsed < 5, elapsed
    assert len(err) < 400, err
    assert "dataset.yaml, line 1: invalid YAML" in err
    assert "anchors and aliases" in err


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ("weights:\n  mrr: &w 1.0\n  ndcg: *w\n", "anchors and aliases", 2),
        ("base: &b {mrr: 1}\nweights:\n  <<: *b\n", "anchors and aliases", 1),
        ("weights: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64 levels", 1),
    ],
)
def test_config_yaml_refuses_aliases_merge_keys_and_deep_nesting(
    tmp_path: Path, text: str, problem: str, line: int
) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(YamlFileError) as raised:
        load_yaml_file(path)
    message = str(raised.value)
    assert problem in message and f'"{path}", line {line}' in message
    with pytest.raises(ValueError, match=problem):
        load_weights(path)


def test_config_yaml_over_the_size_cap_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text("weights: {mrr: 1.0}\n# " + "x" * 2000 + "\n", encoding="utf-8")
    assert load_yaml_file(path) == {"weights": {"mrr": 1.0}}
    monkeypatch.setenv("RAG_EVAL_MAX_YAML_BYTES", "1000")
    with pytest.raises(yaml.YAMLError, match="larger than 1,000 bytes"):
        load_yaml_file(path)
    path.write_bytes(b"weights:\n  mrr: 1.0\n  \xff: 2\n")
    monkeypatch.delenv("RAG_EVAL_MAX_YAML_BYTES")
    with pytest.raises(YamlFileError, match="line 3: not valid UTF-8"):
        load_yaml_file(path)


def test_an_echoed_value_is_capped_then_its_length() -> None:
    assert shown_value("ab") == "'ab'"
    shown = shown_value("y" * 1_000_000)
    assert shown == repr("y" * 120) + "… (1,000,000 characters)"
    assert shown_value("a\u202eb\u200bc") == "'a\\u202eb\\u200bc'"


TROJAN = "prod\u202egnp.exe"  # displayed as "prodexe.png"
INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def test_validate_shows_a_bidi_run_file_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    version = demo_copy(tmp_path)
    (version / "runs" / f"{TROJAN}.trec").write_text("not a run line\n", encoding="utf-8")
    (version / "runs" / "zero\u200bwidth.trec").write_text("not a run\n", encoding="utf-8")
    assert main(["validate", str(version)]) == 1
    printed = "".join(capsys.readouterr())
    assert not INVISIBLE.search(printed)
    assert "prod\\u202egnp.exe.trec" in printed and "zero\\u200bwidth.trec" in printed


def test_report_metadata_and_alerts_show_invisible_characters_escaped(
    tmp_path: Path, receiver: Receiver
) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    for index, date in enumerate((D1, D2, D3)):
        card = scorecard("v1", index, date)
        card["system"] = card["system"].replace({EVIL: TROJAN, "dense": "den\u200bse\u2066"})
        write_parquet_atomically(card, store.scorecard_path("v1", date))
    regressions = regressions_of(store, D3)
    assert regressions["alert"].any()
    page = report_of(store)
    assert TROJAN not in page and not INVISIBLE.search(page)
    assert page.count("prod\\u202egnp.exe") > 5 and "den\\u200bse\\u2066" in page

    table = markdown_table(regressions[["system", "metric", "verdict"]])
    assert not INVISIBLE.search(table)
    assert "prod\\\\u202egnp.exe" in table  # markdown shows the backslash: `\\`

    alerted = regressions[regressions["alert"]]
    for style in ("slack", "json"):
        delivery = AlertsResource(webhook_url=receiver.url, style=style, backoff_s=0.01).deliver(
            alerted
        )
        assert delivery is not None and delivery.ok
    slack, generic = receiver.bodies
    assert not INVISIBLE.search(json.dumps(slack, ensure_ascii=False))
    assert not INVISIBLE.search(json.dumps(generic, ensure_ascii=False))
    assert "den\\u200bse\\u2066" in slack["text"]
    assert {r["system"] for r in generic["regressions"]} == {"den\\u200bse\\u2066"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver([])
    yield server
    server.server.shutdown()


def test_one_redaction_rule_for_urls_credentials_and_http_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_EVAL_HTTP_AUTH", "tenant-7f3a9c")
    monkeypatch.setenv("RAG_EVAL_JUDGE_API_BASE", "https://judge:p%40ss-word-42@proxy.example/v1")
    text = (
        "proxy https://judge:p%40ss-word-42@proxy.example/v1 said p@ss-word-42 and "
        "tenant-7f3a9c; https://u:x@other.example/ Authorization: Bearer eyJhbGciOi.J9 "
        "Basic dXNlcjpwYXNzd29yZA== sk-abcdefghijk; Basic principles, token limits."
    )
    assert redact(text) == (
        "proxy https://***@proxy.example/v1 said *** and ***; https://***@other.example/ "
        "Authorization: Bearer *** Basic *** ***; Basic principles, token limits."
    )
    assert redact("http://proxy.example/v1", urls=["http://a:longpassword@proxy.example/v1"]) == (
        "http://proxy.example/v1"
    )
