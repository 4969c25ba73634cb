"""The HTML report and the Dagster UI in a real browser: Debian's Chromium driven by Playwright.

The report is the one the pipeline wrote for `flips` on its second date (`two_dates`: `drop`
regressed; a run file named `<img onerror>` and a `<script>` question). The UI is
`dagster-webserver` over two dates of Tier 1 (`tier1_webserver`). Requests that would leave the
page (beyond the report's file or the local webserver) are refused and recorded. Skipped only
when Chromium is absent.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rag_eval_pipeline_tests.conftest import NEEDS_CHROMIUM, TIER1_DATES, TIER1_VERSION, TwoDates
from rag_eval_pipeline_tests.flips import DAY2, HOSTILE_SYSTEM, VERSION
from rag_eval_pipeline_tests.ui_browser import (
    block_other_origins,
    graphql_answers,
    plot_canvas,
    settle,
    show_plots,
    ui_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration, NEEDS_CHROMIUM]
REPORT_VIEWPORT = {"width": 1280, "height": 900}
UI_VIEWPORT = {"width": 1600, "height": 1400}
PAGE_TIMEOUT_S = 60.0
# the plot of a float metadata key over partitions, and the UI's query that feeds it
# a metric of one version: each version is its own series (`defs.shared.metadata.plotted_key`)
PLOTTED_KEY = f"{TIER1_VERSION}/reranked/hit_rate@1"
PARTITION_EVENTS_QUERY = "AssetPartitionEventsQuery"
# the community dialog's heading, and the query the UI asks whether to show it with
COMMUNITY_DIALOG = "Join the Dagster community"
SHOULD_SHOW_NUX_QUERY = "ShouldShowNux"
# the pixels of a canvas in the UI's series colour (a saturated blue-violet) and how wide
# they spread
SERIES_EXTENT = """(canvas) => {
  const {width, height} = canvas;
  const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
  let pixels = 0, left = width, right = -1;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 2] > 150 && data[i] < 130 && data[i + 1] < 110 && data[i + 3] > 200) {
      const x = (i / 4) % width;
      pixels += 1; left = Math.min(left, x); right = Math.max(right, x);
    }
  }
  return {pixels, width: right - left};
}"""
# distinct colours in a screenshot: a blank or single-colour page has one or two
COUNT_COLOURS = """async (src) => {
  const image = new Image();
  image.src = src;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width;
  canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const pixels = new Uint32Array(context.getImageData(0, 0, image.width, image.height).data.buffer);
  return new Set(pixels).size;
}"""


def distinct_colours(browser: Any, png: Path) -> int:
    """How many distinct colours the screenshot `png` has, counted on a canvas."""
    page = browser.new_page()
    try:
        source = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
        return page.evaluate(COUNT_COLOURS, source)
    finally:
        page.close()


# --------------------------------------------------------------------------- the report


@dataclass
class OpenReport:
    """The report opened from its file: the page, every URL it asked for, its console errors,
    uncaught errors and dialogs."""

    url: str
    page: Any
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def report(two_dates: TwoDates, browser: Any) -> Iterator[OpenReport]:
    """The stored report of `flips` on DAY2, opened from its file at 1280 px."""
    stored = pd.read_parquet(
        two_dates.tmp / "warehouse" / "evaluation_report" / VERSION / f"{DAY2}.parquet"
    )
    url = Path(stored["path"].iloc[0]).as_uri()
    context = browser.new_context(viewport=REPORT_VIEWPORT)
    block_other_origins(context, (url,))
    opened = OpenReport(url, context.new_page())
    page = opened.page
    page.on("request", lambda request: opened.requests.append(request.url))
    page.on(
        "console",
        lambda message: (
            opened.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: opened.page_errors.append(str(error)))
    page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    page.set_default_timeout(PAGE_TIMEOUT_S * 1000)
    page.goto(url, wait_until="load")
    yield opened
    context.close()


def test_the_report_is_self_contained_and_error_free(report: OpenReport) -> None:
    assert report.requests == [report.url]
    assert report.console_errors == [] and report.page_errors == []


def test_the_report_leads_with_what_changed_and_the_regression(report: OpenReport) -> None:
    page = report.page
    first = page.locator("main section").first
    assert first.locator("h2").inner_text().startswith("What changed against flips 2026-11-20")
    regressions = first.locator("#regressions")
    assert regressions.is_visible()
    drop = regressions.locator("tbody tr", has_text="drop").first
    assert drop.is_visible()
    assert "ndcg@10" in regressions.inner_text()
    box = drop.bounding_box()  # on the first screen, without scrolling
    assert box is not None and box["height"] > 0 and box["width"] > 0
    assert box["y"] + box["height"] <= REPORT_VIEWPORT["height"]


def test_sparklines_render_with_a_size(report: OpenReport) -> None:
    page = report.page
    sparks = page.locator("svg.spark")
    assert sparks.count() >= 3
    for index in range(sparks.count()):
        box = sparks.nth(index).bounding_box()
        assert box is not None and box["width"] > 50 and box["height"] > 10, index
        assert sparks.nth(index).locator("polyline").count() == 1


def test_hostile_dataset_text_is_shown_as_text_and_never_runs(report: OpenReport) -> None:
    """The run-file name is shown (as text); the report shows no question text today, so the
    `<script>` question only guards a future one."""
    page = report.page
    assert page.evaluate("window.__xss") is None
    assert report.dialogs == []
    assert page.locator("img").count() == 0 and page.locator("script").count() == 0
    assert HOSTILE_SYSTEM in page.locator("#scorecard").inner_text()


def test_the_tables_fit_1280_pixels(report: OpenReport) -> None:
    page = report.page
    overflow = page.evaluate(
        "document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
    )
    assert overflow <= 0
    wider = page.evaluate(
        """[...document.querySelectorAll('table')]
             .filter(t => t.getBoundingClientRect().width > 0)
             .filter(t => t.parentElement.scrollWidth > t.parentElement.clientWidth + 1)
             .map(t => t.closest('section').id + ': ' + t.rows[0].innerText.slice(0, 60))"""
    )
    assert wider == []


def test_the_first_screen_of_the_report(report: OpenReport, browser: Any, tmp_path: Path) -> None:
    page = report.page
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    assert distinct_colours(browser, shot) > 50


# --------------------------------------------------------------------------- the Dagster UI


def plotted_partitions(payloads: list[dict], key: str) -> set[str]:
    """The partitions whose latest materialization carries the float metadata `key`, in the
    `AssetPartitionEventsQuery` answers the UI fetched for its plots over partitions."""
    return {
        event["partition"]
        for payload in payloads
        for event in payload["data"]["assetNodeOrError"]["latestMaterializationByPartition"]
        if event
        for entry in event["metadataEntries"]
        if entry["label"] == key and entry["__typename"] == "FloatMetadataEntry"
    }


def test_the_ui_plots_a_metric_over_two_partitions(
    tier1_webserver: str, browser: Any, tmp_path: Path
) -> None:
    payloads, keep = graphql_answers(PARTITION_EVENTS_QUERY)
    with ui_page(
        browser,
        tier1_webserver,
        "/assets/retrieval_quality",
        "Latest materialization",
        UI_VIEWPORT,
        PAGE_TIMEOUT_S,
        failure_shot=tmp_path / "retrieval_quality.failed.png",
        on_response=keep,
    ) as opened:
        page = opened.page
        show_plots(page, "", "Partitions")
        settle(page)
        plot = plot_canvas(page, PLOTTED_KEY)
        plot.wait_for(state="visible")
        page.wait_for_timeout(1000)  # the chart animates in
        box = plot.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100
        expected = {f"{TIER1_VERSION}|{day}" for day in TIER1_DATES}
        assert plotted_partitions(payloads, PLOTTED_KEY) == expected
        series = plot.evaluate(SERIES_EXTENT)
        assert series["pixels"] > 20 and series["width"] > 10, series  # two points apart
        shot = tmp_path / "retrieval_quality_plots.png"
        page.screenshot(path=str(shot))
        assert distinct_colours(browser, shot) > 50
        assert opened.errors == []
        assert not [url for url in opened.blocked if url.startswith(tier1_webserver)]


def test_the_ui_opens_without_the_community_dialog(tier1_webserver: str, browser: Any) -> None:
    """The shipped dagster.yaml (`nux: enabled: false`) keeps the dialog off on a fresh
    instance, with nothing marked seen in the browser: the UI asks the webserver, which says
    no, and the dialog never opens (it would after 1 s)."""
    answers, keep = graphql_answers(SHOULD_SHOW_NUX_QUERY)
    with ui_page(
        browser,
        tier1_webserver,
        "/assets/retrieval_quality",
        "Latest materialization",
        UI_VIEWPORT,
        PAGE_TIMEOUT_S,
        on_response=keep,
        community_dialog_seen=False,
    ) as opened:
        page = opened.page
        page.wait_for_timeout(2000)
        assert [answer["data"]["shouldShowNux"] for answer in answers] == [False]
        assert page.get_by_text(COMMUNITY_DIALOG).count() == 0
        assert page.get_by_role("dialog").count() == 0
