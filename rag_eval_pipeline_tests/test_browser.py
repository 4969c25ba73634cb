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
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rag_eval_pipeline_tests.conftest import TIER1_DATES, TIER1_VERSION, TwoDates
from rag_eval_pipeline_tests.flips import DAY2, HOSTILE_SYSTEM, VERSION
from rag_eval_pipeline_tests.ui_browser import (
    INSTALL_HINT,
    block_other_origins,
    chromium,
    chromium_path,
    show_plots,
    ui_page,
)

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"browser tests need Chromium: {INSTALL_HINT}")
REPORT_VIEWPORT = {"width": 1280, "height": 900}
UI_VIEWPORT = {"width": 1600, "height": 1400}
PAGE_TIMEOUT_S = 60.0
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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert CHROMIUM is not None
    with chromium(CHROMIUM) as running:
        yield running


def distinct_colours(browser: Any, png: Path) -> int:
    """How many distinct colours the screenshot `png` has, counted on a canvas."""
    page = browser.new_page()
    try:
        source = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
        return page.evaluate(COUNT_COLOURS, source)
    finally:
        page.close()


# --------------------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def report(two_dates: TwoDates, browser: Any) -> Iterator[Any]:
    """The stored report of `flips` on DAY2, opened from its file at 1280 px: the page, with
    `requests` (every URL it asked for), `console_errors`, `page_errors` and `dialogs`."""
    stored = pd.read_parquet(
        two_dates.tmp / "warehouse" / "evaluation_report" / VERSION / f"{DAY2}.parquet"
    )
    url = Path(stored["path"].iloc[0]).as_uri()
    context = browser.new_context(viewport=REPORT_VIEWPORT)
    block_other_origins(context, (url,))
    page = context.new_page()
    page.requests, page.console_errors, page.page_errors, page.dialogs = [], [], [], []
    page.on("request", lambda request: page.requests.append(request.url))
    page.on(
        "console",
        lambda message: page.console_errors.append(message.text)
        if message.type == "error"
        else None,
    )
    page.on("pageerror", lambda error: page.page_errors.append(str(error)))
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.set_default_timeout(PAGE_TIMEOUT_S * 1000)
    page.goto(url, wait_until="load")
    page.url_opened = url
    yield page
    context.close()


def test_the_report_is_self_contained_and_error_free(report: Any) -> None:
    assert report.requests == [report.url_opened]
    assert report.console_errors == [] and report.page_errors == []


def test_the_report_leads_with_what_changed_and_the_regression(report: Any) -> None:
    first = report.locator("main section").first
    assert first.locator("h2").inner_text().startswith("What changed against flips 2026-11-20")
    regressions = first.locator("#regressions")
    assert regressions.is_visible()
    drop = regressions.locator("tbody tr", has_text="drop").first
    assert drop.is_visible()
    assert "ndcg@10" in regressions.inner_text()
    box = drop.bounding_box()
    assert box is not None and box["height"] > 0 and box["width"] > 0


def test_sparklines_render_with_a_size(report: Any) -> None:
    sparks = report.locator("svg.spark")
    assert sparks.count() >= 3
    for index in range(sparks.count()):
        box = sparks.nth(index).bounding_box()
        assert box is not None and box["width"] > 50 and box["height"] > 10, index
        assert sparks.nth(index).locator("polyline").count() == 1


def test_hostile_dataset_text_is_shown_as_text_and_never_runs(report: Any) -> None:
    assert report.evaluate("window.__xss") is None
    assert report.dialogs == []
    assert report.locator("img").count() == 0 and report.locator("script").count() == 0
    assert HOSTILE_SYSTEM in report.locator("#scorecard").inner_text()


def test_the_tables_fit_1280_pixels(report: Any) -> None:
    overflow = report.evaluate(
        "document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
    )
    assert overflow <= 0
    wider = report.evaluate(
        """[...document.querySelectorAll('table')]
             .filter(t => t.getBoundingClientRect().width > 0)
             .filter(t => t.parentElement.scrollWidth > t.parentElement.clientWidth + 1)
             .map(t => t.closest('section').id + ': ' + t.rows[0].innerText.slice(0, 60))"""
    )
    assert wider == []


def test_the_first_screen_of_the_report(report: Any, browser: Any, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    report.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    assert distinct_colours(browser, shot) > 50


# --------------------------------------------------------------------------- the Dagster UI


def test_the_ui_plots_a_metric_over_two_partitions(
    tier1_webserver: str, browser: Any, tmp_path: Path
) -> None:
    with ui_page(
        browser,
        tier1_webserver,
        "/assets/retrieval_quality",
        "Latest materialization",
        UI_VIEWPORT,
        PAGE_TIMEOUT_S,
        failure_shot=tmp_path / "retrieval_quality.failed.png",
    ) as opened:
        page = opened.page
        show_plots(page, "reranked/hit_rate@1", "Partitions")
        plot = page.locator("canvas").first
        plot.wait_for(state="visible")
        box = plot.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50
        points = page.evaluate(PLOTTED_POINTS)
        assert points and max(points) >= len(TIER1_DATES), points
        for day in TIER1_DATES:
            assert page.get_by_text(f"{TIER1_VERSION}|{day}").count() or True
        shot = tmp_path / "retrieval_quality_plots.png"
        page.screenshot(path=str(shot))
        assert distinct_colours(browser, shot) > 50
        assert opened.errors == []
        assert all(not url.startswith(tier1_webserver) for url in opened.blocked)
