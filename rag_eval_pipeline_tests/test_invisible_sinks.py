"""Invisible characters, one test per sink: a bidi control (U+202E, U+2066) or a zero-width
character (U+200B) in a dataset-derived value (a run file name, a system name) reaches every sink
as a visible `\\uNNNN` escape, never raw (`text.escaping.visible_text`, the one rule)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from dagster import (
    AssetMaterialization,
    DagsterInstance,
    asset,
    build_sensor_context,
    instance_for_test,
    materialize,
)
from upath import UPath

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.cli import results as cli_results
from rag_eval_pipeline.defs.scorecard.sensors import regression_alert_sensor
from rag_eval_pipeline.defs.shared.metadata import (
    markdown_table,
    path_metadata,
    summary_metadata,
    text_metadata,
    url_metadata,
)
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import AlertsResource, WarehouseResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.reporting.paths import report_path
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore
from rag_eval_pipeline_tests.conftest import DATASETS_DIR
from rag_eval_pipeline_tests.test_regression import Receiver
from rag_eval_pipeline_tests.test_report import (
    D1,
    D2,
    D3,
    EVIL,
    materialized_report,
    regressions_of,
    scorecard,
)
from rag_eval_pipeline_tests.test_report import report as report_of

pytestmark = [pytest.mark.integration]

RUN_FILE = "prod\u202egnp.exe.trec"  # displayed reversed after U+202E: "prodcert.exe.png"
SYSTEM = "den\u200bse\u2066"  # looks like "dense"
SHOWN_RUN_FILE, SHOWN_SYSTEM = "prod\\u202egnp.exe.trec", "den\\u200bse\\u2066"
ALERTED = f"{RUN_FILE} {SYSTEM}"
# A version name (or data folder) shown reversed ("v1 exe.png") and on two lines when raw.
HOSTILE_VERSION = "v1\u202egnp.exe\n(2)\u200b"
SHOWN_VERSION = "v1\\u202egnp.exe\\x0a(2)\\u200b"
URL_CHARACTERS = re.compile(r"[A-Za-z0-9:/%._~-]+")  # a percent-encoded URL, nothing else
INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def assert_shown(text: str, *shown: str) -> None:
    assert not INVISIBLE.search(text), text
    for value in shown:
        assert value in text


def strings(body: object) -> str:
    """Every string of a JSON body, one a line."""
    if isinstance(body, dict):
        return "\n".join(map(strings, body.values()))
    if isinstance(body, list):
        return "\n".join(map(strings, body))
    return body if isinstance(body, str) else ""


@pytest.fixture
def hostile_store(tmp_path: Path) -> WarehouseStore:
    """Three days of v1 whose two retrieval systems are named `ALERTED` (it regresses on the
    third day, so it is alerted) and `SYSTEM`."""
    store = WarehouseStore(str(tmp_path / "warehouse"))
    for index, date in enumerate((D1, D2, D3)):
        card = scorecard("v1", index, date)
        card["system"] = card["system"].replace({EVIL: SYSTEM, "dense": ALERTED})
        write_parquet_atomically(card, store.scorecard_path("v1", date))
    return store


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver([])
    yield server
    server.server.shutdown()


def alerted(store: WarehouseStore) -> pd.DataFrame:
    regressions = regressions_of(store, D3)
    assert set(regressions.loc[regressions["alert"], "system"]) == {ALERTED}
    return regressions[regressions["alert"]]


def test_html_report(hostile_store: WarehouseStore) -> None:
    page = report_of(hostile_store)
    assert_shown(page, SHOWN_RUN_FILE, SHOWN_SYSTEM)


def test_dagster_markdown_metadata() -> None:
    summary = pd.DataFrame(
        {"system": [RUN_FILE, SYSTEM], "metric": ["mrr", "mrr"], "mean": [0.5, 0.6]}
    )
    metadata = summary_metadata(summary, "v\u200b1")
    table = metadata["summary"].value
    assert_shown(table, "prod\\\\u202egnp.exe.trec", "den\\\\u200bse\\\\u2066")  # `\\` in md
    assert_shown("\n".join(metadata), f"v\\u200b1/{SHOWN_RUN_FILE}/mrr", SHOWN_SYSTEM)
    assert_shown(markdown_table(summary.rename(columns={"system": SYSTEM})), "den\\\\u200bse")


def test_dagster_plain_text_metadata(tmp_path: Path) -> None:
    assert text_metadata(f"{RUN_FILE}, {SYSTEM}").value == f"{SHOWN_RUN_FILE}, {SHOWN_SYSTEM}"

    @asset
    def tier(context) -> pd.DataFrame:  # unannotated: Dagster reads a real annotation
        context.add_output_metadata({"variants": text_metadata(", ".join([SYSTEM, "bm25"]))})
        return skipped(context, f"no rows in {RUN_FILE}", pd.DataFrame())

    with instance_for_test() as instance:
        result = materialize([tier], instance=instance)
    metadata = result.asset_materializations_for_node("tier")[0].metadata
    assert metadata["skip_reason"].value == f"no rows in {SHOWN_RUN_FILE}"
    assert metadata["variants"].value == f"{SHOWN_SYSTEM}, bm25"


def test_slack_text(hostile_store: WarehouseStore, receiver: Receiver) -> None:
    delivery = AlertsResource(webhook_url=receiver.url, style="slack", backoff_s=0.01).deliver(
        alerted(hostile_store)
    )
    assert delivery is not None and delivery.ok
    (body,) = receiver.bodies
    assert_shown(strings(body), SHOWN_RUN_FILE, SHOWN_SYSTEM)
    assert_shown(body["text"], f"{SHOWN_RUN_FILE} {SHOWN_SYSTEM}")


def test_json_webhook_texts(hostile_store: WarehouseStore, receiver: Receiver) -> None:
    delivery = AlertsResource(webhook_url=receiver.url, style="json", backoff_s=0.01).deliver(
        alerted(hostile_store)
    )
    assert delivery is not None and delivery.ok
    (body,) = receiver.bodies
    assert_shown(strings(body), SHOWN_RUN_FILE, SHOWN_SYSTEM)
    assert {r["system"] for r in body["regressions"]} == {f"{SHOWN_RUN_FILE} {SHOWN_SYSTEM}"}


def test_terminal_output_of_rag_eval_commands(
    tmp_path: Path,
    hostile_store: WarehouseStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    version = tmp_path / "demo-v1"
    shutil.copytree(DATASETS_DIR / "demo-v1", version)
    (version / "runs" / RUN_FILE).write_text("not a run line\n", encoding="utf-8")
    (version / "runs" / f"{SYSTEM}.trec").write_text("not a run\n", encoding="utf-8")
    assert main(["validate", str(version)]) == 1
    assert_shown("".join(capsys.readouterr()), SHOWN_RUN_FILE, SHOWN_SYSTEM)

    monkeypatch.setattr(cli_results, "WAREHOUSE_URL", str(tmp_path / "warehouse"))
    assert main(["scorecard", "--dataset-version", "v1", "--date", D3, "--all"]) == 0
    printed = "".join(capsys.readouterr())  # a long name is cut to its column's width
    assert_shown(printed, "prod\\u202egnp.exe.tre…", f"{SHOWN_SYSTEM}  ")


def test_alert_sensor_message(
    tmp_path: Path,
    hostile_store: WarehouseStore,
    receiver: Receiver,
    capfd: pytest.CaptureFixture[str],
) -> None:
    write_parquet_atomically(
        regressions_of(hostile_store, D3),
        hostile_store.partition_path(REGRESSIONS_ASSET, "v1", D3),
    )
    resources = {
        "warehouse": WarehouseResource(base_path=str(tmp_path / "warehouse")),
        "alerts": AlertsResource(webhook_url=receiver.url, backoff_s=0.01),
    }
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, ["v1"])
        instance.report_runless_asset_event(
            AssetMaterialization(REGRESSIONS_ASSET, partition=evaluation_partition_key("v1", D3))
        )
        regression_alert_sensor(build_sensor_context(instance=instance, resources=resources))
    err = capfd.readouterr().err
    assert err.count("Regression: ") == 2
    assert_shown(err, SHOWN_RUN_FILE, SHOWN_SYSTEM)
    assert_shown(strings(receiver.bodies), SHOWN_RUN_FILE, SHOWN_SYSTEM)


def test_dagster_path_and_url_metadata(tmp_path: Path) -> None:
    local = report_path(tmp_path, HOSTILE_VERSION, D3)
    assert path_metadata(local).value == f"{tmp_path}/{SHOWN_VERSION}/{D3}.html"
    plain = tmp_path / "v1" / f"{D3}.html"
    assert path_metadata(plain).value == str(plain)  # a plain path stays the real, copyable one
    remote = UPath(f"s3://bucket/reports/{HOSTILE_VERSION}/{D3}.html")
    for path, raw in ((local, f"file://{local}"), (remote, f"s3://{remote.path}")):
        url = url_metadata(path).value
        assert URL_CHARACTERS.fullmatch(url), url
        assert unquote(url) == raw  # it decodes back to the real file


def test_report_asset_path_metadata(tmp_path: Path, dagster_instance: DagsterInstance) -> None:
    reports = tmp_path / HOSTILE_VERSION  # the reports folder: an operator's data dir
    result = materialized_report(tmp_path, dagster_instance, reports)
    metadata = result.asset_materializations_for_node("evaluation_report")[0].metadata
    assert metadata["report_path"].value == f"{tmp_path}/{SHOWN_VERSION}/v1/{D3}.html"
    url = metadata["report_url"].value
    assert URL_CHARACTERS.fullmatch(url), url
    assert unquote(url) == f"file://{reports}/v1/{D3}.html"
    link = re.search(r"\[Open the report\]\(([^)]*)\)", metadata["summary"].value)
    assert link is not None and link.group(1) == url
