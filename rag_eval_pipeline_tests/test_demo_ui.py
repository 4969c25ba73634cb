"""The demo's staged incident and a check's partitions as the Dagster UI shows them, in Chromium.

One temporary instance, served by `dagster-webserver`:

- demo-v2 (`make demo`'s version with the staged change), Tier 1 of its system under test's
  answers, on three dates: a quiet day, the staged day three days before today (the reference
  RAG's index loses the relevant documents of 15% of the questions) and the day after, which
  recovers. The asset's Plots tab draws its `hit_rate@10` as one line, quiet, dip, recovery, in
  date order, with no other version's point in it, over partitions and over events.
- `flips` (60 questions, no corpus: cheap through every tier) through `metric_regressions` and
  its checks: quiet, regressed, recovered. The Checks tab lists `scorecard_regressions` as
  failed (one partition failed) while its latest execution, the recovered day's, passed; its
  Partitions tab tells the days apart (docs/operations.md, "Checks in the UI").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests import flips
from rag_eval_pipeline_tests.conftest import (
    NEEDS_CHROMIUM,
    evaluation_resources,
    instance_with_webserver,
)
from rag_eval_pipeline_tests.ui_browser import (
    chart_data,
    graphql_answers,
    plot_canvas,
    settle,
    show_plots,
    ui_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow, NEEDS_CHROMIUM]
VERSION = "demo-v2"
SYSTEM, METRIC = "reference-rag", "hit_rate@10"
PLOTTED_KEY = f"{VERSION}/{SYSTEM}/{METRIC}"  # defs.shared.metadata.plotted_key
PLOTTED_ASSET = "system_retrieval_quality"  # Tier 1 of the system under test's answers
CHECK = "scorecard_regressions"
FLIPS_DAY3 = "2026-11-22"
VIEWPORT = {"width": 1600, "height": 1400}
PAGE_TIMEOUT_S = 60.0


@dataclass
class DemoWeek:
    url: str
    warehouse: Path
    days: tuple[str, str, str]  # quiet, staged, recovered

    def plotted(self) -> list[float]:
        """demo-v2's `hit_rate@10` of the reference RAG on each day, as stored."""
        values = []
        for day in self.days:
            quality = pd.read_parquet(self.warehouse / PLOTTED_ASSET / VERSION / f"{day}.parquet")
            row = quality[(quality["system"] == SYSTEM) & (quality["metric"] == METRIC)]
            values.append(float(row["mean"].iloc[0]))
        return values


# `flips` (60 questions, no corpus: cheap through every tier): quiet, `drop` regressed, back
FLIPS_DAYS = (
    (flips.DAY1, flips.DAY1_MISSES),
    (flips.DAY2, flips.DAY2_MISSES),
    (FLIPS_DAY3, flips.DAY1_MISSES),
)


@pytest.fixture(scope="module")
def demo_week(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, pinned_today: str
) -> Iterator[DemoWeek]:
    """demo-v2 through `PLOTTED_ASSET` on the staged day (3 days before `pinned_today`), the
    day before and the day after, and `flips` through `metric_regressions` and its checks on
    `FLIPS_DAYS`, oldest first as `rag-eval run --days` runs them, while the webserver starts."""
    tmp = tmp_path_factory.mktemp("demo-ui")
    today = pd.Timestamp(pinned_today)
    days = tuple((today - pd.Timedelta(days=n)).strftime("%Y-%m-%d") for n in (4, 3, 2))
    with instance_with_webserver(tmp) as (instance, ready):
        instance.add_dynamic_partitions(DATASET_VERSION, [VERSION, flips.VERSION])
        for day in days:
            evaluate(instance, VERSION, day, PLOTTED_ASSET, evaluation_resources(tmp, embedder))
        datasets = DatasetsResource(root=str(tmp / "datasets"))
        for day, misses in FLIPS_DAYS:
            flips.write_version(tmp / "datasets" / flips.VERSION, misses)
            resources = evaluation_resources(tmp, embedder, datasets=datasets)
            evaluate(instance, flips.VERSION, day, "metric_regressions", resources)
        yield DemoWeek(ready(), tmp / "warehouse", days)  # type: ignore[arg-type]


def evaluate(instance: DagsterInstance, version: str, day: str, last: str, resources: dict) -> None:
    """Materialize `last`, its upstream and their checks for `version` on `day`."""
    result = materialize(
        [*ALL_ASSETS, *ALL_CHECKS],
        selection=AssetSelection.assets(last).upstream(),
        partition_key=evaluation_partition_key(version, day),
        instance=instance,
        resources=resources,
    )
    assert result.success, (version, day)


def drawn_points(chart: dict) -> list[tuple[Any, float]]:
    """The points the chart's one dataset draws (gaps left out), as (x label or x, y)."""
    (dataset,) = chart["datasets"]
    labels = chart["labels"]
    return [(labels[x] if labels else x, y) for x, y in dataset["points"] if y is not None]


def test_the_plots_tab_draws_the_dip_and_the_recovery_as_one_line(
    demo_week: DemoWeek, browser: Any, tmp_path: Path
) -> None:
    quiet, staged, recovered = expected = demo_week.plotted()
    assert staged < 0.9 * quiet and recovered == quiet  # the staged incident, stored
    partitions = [str(evaluation_partition_key(VERSION, day)) for day in demo_week.days]
    with ui_page(
        browser,
        demo_week.url,
        f"/assets/{PLOTTED_ASSET}",
        "Latest materialization",
        VIEWPORT,
        PAGE_TIMEOUT_S,
        failure_shot=tmp_path / "demo_ui_plots.failed.png",
    ) as opened:
        page = opened.page
        show_plots(page, "", "Partitions")
        settle(page)
        canvas = plot_canvas(page, PLOTTED_KEY)
        canvas.wait_for(state="visible")
        by_partition = chart_data(canvas)
        assert by_partition["datasets"][0]["label"] == PLOTTED_KEY
        assert drawn_points(by_partition) == list(zip(partitions, expected, strict=True))
        # one unbroken line: the three partitions sit side by side on the x axis (the axis
        # holds every version's every date: flips' and the empty ones are gaps around it)
        drawn_x = [x for x, y in by_partition["datasets"][0]["points"] if y is not None]
        assert drawn_x == list(range(drawn_x[0], drawn_x[0] + 3))
        assert any(label.startswith(f"{flips.VERSION}|") for label in by_partition["labels"])
        canvas.locator("xpath=../../..").screenshot(path=str(tmp_path / "demo_ui_partitions.png"))
        show_plots(page, "", "Events")
        settle(page)
        canvas.wait_for(state="visible")
        by_time = drawn_points(chart_data(canvas))  # materialized oldest first
        assert [y for _, y in by_time] == expected
        assert [t for t, _ in by_time] == sorted(t for t, _ in by_time)
        canvas.locator("xpath=../../..").screenshot(path=str(tmp_path / "demo_ui_events.png"))
        assert opened.errors == []


PARTITION_HEALTH_QUERY = "AssetCheckPartitionHealthQuery"
STATUS_LISTS = {"succeededPartitions": "passed", "failedPartitions": "failed"}


def check_statuses(payload: dict) -> dict[tuple[str, str], str]:
    """(version, date) → `passed`/`failed` in the UI's `AssetCheckPartitionHealthQuery`
    answer: ranges of dates (the primary dimension), each with its versions by status."""
    check = payload["data"]["assetNodeOrError"]["assetCheckOrError"]
    dates = next(d for d in check["partitionKeysByDimension"] if d["name"] == "date")
    dates = dates["partitionKeys"]
    statuses = {}
    for span in check["partitionStatuses"]["ranges"]:
        first, last = dates.index(span["primaryDimStartKey"]), dates.index(span["primaryDimEndKey"])
        for field, status in STATUS_LISTS.items():
            for version in span["secondaryDim"][field]:
                statuses.update({(version, day): status for day in dates[first : last + 1]})
    return statuses


def test_the_checks_tab_lists_the_check_failed_while_its_latest_execution_passed(
    demo_week: DemoWeek, browser: Any, tmp_path: Path
) -> None:
    """What the user sees (docs/operations.md, "Checks in the UI"): Dagster's list of checks
    aggregates a partitioned check over its partitions (one failed: Failed); the Overview's
    latest execution is the newest partition's (passed); the Partitions tab counts them and
    shows each day's own status."""
    quiet, staged, recovered = (day for day, _ in FLIPS_DAYS)
    health, keep = graphql_answers(PARTITION_HEALTH_QUERY)
    with ui_page(
        browser,
        demo_week.url,
        "/assets/evaluation_scorecard?view=checks",
        CHECK,
        VIEWPORT,
        PAGE_TIMEOUT_S,
        failure_shot=tmp_path / "demo_ui_checks.failed.png",
        on_response=keep,
    ) as opened:
        page = opened.page
        listed = page.locator("[class*='checkRow']", has_text=CHECK)
        assert listed.inner_text().split("\n")[-1] == "Failed"
        listed.click()
        settle(page)
        result = page.locator('xpath=//*[text()="Evaluation result"]/following-sibling::*[1]')
        assert result.inner_text() == "Passed"
        partition = page.locator('xpath=//*[text()="Partition"]/following-sibling::*[1]')
        assert partition.inner_text() == f"{flips.VERSION}|{recovered}"
        page.screenshot(path=str(tmp_path / "demo_ui_checks.png"))
        page.locator("button[role=tab]#partitions").click()
        settle(page)
        page.get_by_text("Failed (1)").wait_for(state="visible")
        assert page.get_by_text("Passed (2)").is_visible()
        assert check_statuses(health[-1]) == {
            (flips.VERSION, quiet): "passed",
            (flips.VERSION, staged): "failed",
            (flips.VERSION, recovered): "passed",
        }
        page.get_by_text(flips.VERSION, exact=True).first.click()
        assert partition_status(page, flips.VERSION, staged) == "Failed"
        assert partition_status(page, flips.VERSION, recovered) == "Passed"
        page.screenshot(path=str(tmp_path / "demo_ui_check_partitions.png"))
        assert opened.errors == []


def partition_status(page: Any, version: str, day: str) -> str:
    """On a check's Partitions tab with `version` picked: pick `day`, and read the status
    shown beside the partition's name in its detail pane."""
    page.get_by_text(day, exact=True).first.click()
    key = f"{version}|{day}"
    page.get_by_text(key, exact=True).first.wait_for(state="visible")
    settle(page)
    shown = page.locator("body").inner_text().split("\n")
    after = shown[len(shown) - shown[::-1].index(key) :]  # the lines after the last name
    return next(line for line in after if line.strip())
