"""The HTML evaluation report: trend charts, regression marks, bands, escaping, the asset."""

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetSpec, DagsterInstance, ExecuteInProcessResult, materialize

from rag_eval_pipeline.defs.report.assets import ReportConfig, evaluation_report
from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
from rag_eval_pipeline.defs.shared.partitions import (
    DATASET_VERSION,
    evaluation_partition_key,
    evaluation_partitions,
)
from rag_eval_pipeline.defs.shared.resources import BaselineResource, WarehouseResource
from rag_eval_pipeline.evaluation.item_scores import empty_items
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.reporting import collect_report_data, render_report
from rag_eval_pipeline.reporting.charts import series_style
from rag_eval_pipeline.reporting.html_report import (
    PALETTE,
    TICK_CHAR_PX,
    Series,
    format_change,
    format_detectable,
    format_value,
    line_chart_svg,
    nice_ticks,
    series_styles,
)
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import WarehouseStore

pytestmark = [pytest.mark.integration]

SVG = "{http://www.w3.org/2000/svg}"
D1, D2, D3 = "2026-11-19", "2026-11-20", "2026-11-21"
EVIL = "<script>alert(1)</script>"
THRESHOLDS = Thresholds(
    metrics={
        "hit_rate@1": {"excellent": 0.8, "good": 0.5},
        "mrr": {"excellent": 0.8, "good": 0.5},
        "consistency_score": {"excellent": 0.95, "good": 0.85},
    }
)
# (system, metric) → value on D1, D2, D3: `dense` collapses on D3, EVIL stays flat.
VALUES = {
    ("dense", "hit_rate@1"): (0.85, 0.84, 0.40),
    ("dense", "mrr"): (0.88, 0.87, 0.52),
    (EVIL, "hit_rate@1"): (0.62, 0.63, 0.62),
    (EVIL, "mrr"): (0.70, 0.71, 0.70),
}


def scorecard(version: str, index: int, date: str) -> pd.DataFrame:
    """A scorecard of two retrieval systems, plus the models of the header and a dataset size."""
    rows = [
        {
            "tier": "tier1_retrieval",
            "system": system,
            "metric": metric,
            "mean": values[index],
            "std": 0.2,
            "count": 50,
            "ci_low": values[index] - 0.05,
            "ci_high": values[index] + 0.05,
            "n_errors": 0,
            "error_rate": 0.0,
        }
        for (system, metric), values in VALUES.items()
    ]
    singles = [
        ("dataset", version, "n_queries", 50.0),
        ("tier0_embedding", "packaged:all-MiniLM-L6-v2", "silhouette_score", 0.12),
        ("judge_reliability", "gpt-4o-mini & co", "consistency_score", 0.97),
    ]
    rows += [
        {
            "tier": tier,
            "system": system,
            "metric": metric,
            "mean": value,
            "std": np.nan,
            "count": 50,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "n_errors": 0,
            "error_rate": 0.0,
        }
        for tier, system, metric, value in singles
    ]
    return build_scorecard([pd.DataFrame(rows)], version, date, THRESHOLDS)


@pytest.fixture
def store(tmp_path: Path) -> WarehouseStore:
    """A warehouse with v1 on D1..D3 (drop on D3, alert recorded), v2 on D1, v3 after D3."""
    store = WarehouseStore(str(tmp_path / "warehouse"))
    for index, date in enumerate((D1, D2, D3)):
        write_parquet_atomically(scorecard("v1", index, date), store.scorecard_path("v1", date))
    write_parquet_atomically(scorecard("v2", 0, D1), store.scorecard_path("v2", D1))
    write_parquet_atomically(
        scorecard("v3", 0, "2026-11-30"), store.scorecard_path("v3", "2026-11-30")
    )
    store.record_alerts("v1", D3, regressions_of(store, D3)[lambda f: f["alert"]])
    return store


def regressions_of(store: WarehouseStore, date: str) -> pd.DataFrame:
    """The `metric_regressions` table of v1 on `date` (no per-item scores: the effect rule)."""
    current = store.read_scorecard("v1", date)
    chosen = store.baseline("v1", date)
    assert current is not None
    previous = (
        None
        if chosen is None
        else PartitionScores(chosen.version, chosen.date, chosen.scorecard, empty_items())
    )
    return compare_partitions(
        PartitionScores("v1", date, current, empty_items()), previous, RegressionRule()
    )


def report(store: WarehouseStore, date: str = D3, in_progress: tuple[str, ...] = ()) -> str:
    current = store.read_scorecard("v1", date)
    assert current is not None
    data = collect_report_data(
        store,
        "v1",
        date,
        current,
        store.baseline("v1", date),
        HEADLINE_METRICS,
        datetime(2026, 11, 22, 2, 0, tzinfo=UTC),
        regressions_of(store, date),
        in_progress,
    )
    return render_report(data)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def classes(self) -> set[str]:
        return {c for _, a in self.tags for c in (a.get("class") or "").split()}


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def charts(page: str) -> dict[str, ET.Element]:
    """metric → its chart, each SVG parsed as standalone XML (so it must be well-formed)."""
    figures = re.findall(r'<figure [^>]*data-metric="([^"]+)"[^>]*>.*?(<svg .*?</svg>)', page, re.S)
    return {metric: ET.fromstring(svg) for metric, svg in figures}


def series_points(chart: ET.Element) -> dict[str, int]:
    return {
        line.get("data-series"): len(line.get("points").split())
        for line in chart.iter(f"{SVG}polyline")
        if line.get("class") == "series"
    }


def test_trend_chart_has_a_line_per_system_and_marks_the_regression(
    store: WarehouseStore,
) -> None:
    found = charts(report(store))
    assert set(found) == {"hit_rate@1", "mrr", "silhouette_score", "consistency_score"}
    hit_rate = found["hit_rate@1"]
    assert series_points(hit_rate) == {"dense": 3, EVIL: 3}
    assert len([p for p in hit_rate.iter(f"{SVG}polygon") if p.get("class") == "ci"]) == 2
    marks = [g for g in hit_rate.iter(f"{SVG}g") if g.get("class") == "regression"]
    assert [(g.get("data-series"), g.get("data-date")) for g in marks] == [("dense", D3)]
    tooltip = marks[0].find(f"{SVG}title").text
    assert tooltip.startswith(f"Regression on {D3}: dense hit_rate@1 = 0.400")
    assert "−52.4% vs 0.840 on v1 2026-11-20" in tooltip
    labels = [t.text for t in hit_rate.iter(f"{SVG}text")]
    assert {D1, D3} <= set(labels) and "regression" in labels and EVIL in labels
    assert "1.0" in labels and "0.4" in labels


def test_systems_in_one_chart_never_share_a_colour() -> None:
    """19 systems over three charts of 7 (one in all three): 10 colours are enough."""
    charts = {f"m{c}": [f"s{c}_{i}" for i in range(6)] + ["shared"] for c in range(3)}
    history = pd.DataFrame(
        [{"metric": m, "system": s} for m, systems in charts.items() for s in systems]
    )
    styles = series_styles(history)
    assert set(styles) == {s for systems in charts.values() for s in systems}
    assert {style.color for style in styles.values()} <= set(PALETTE)
    assert {style.dash for style in styles.values()} == {""}  # solid while the palette lasts
    for systems in charts.values():
        assert len({styles[s] for s in systems}) == len(systems)


def test_more_systems_than_colours_get_distinct_stable_styles() -> None:
    """23 systems in one chart, past the palette's 10 colours: every line its own colour and
    dash pair (the SVG strokes drawn), the first 10 solid; the same history, the same styles."""
    systems = [f"system_{i:02d}" for i in range(23)]
    history = pd.DataFrame({"metric": "mrr", "system": systems})
    styles = series_styles(history)
    assert len(set(styles.values())) == len(systems)
    assert [styles[s].color for s in systems[:10]] == list(PALETTE)
    assert {styles[s].dash for s in systems[:10]} == {""}
    assert all(styles[s].dash for s in systems[10:])
    assert series_styles(history.iloc[::-1]) == styles
    days = [D1, D2]
    series = [
        Series(
            s, styles[s].color, days, [0.5, 0.6], [np.nan] * 2, [np.nan] * 2, dash=styles[s].dash
        )
        for s in systems
    ]
    root = ET.fromstring(line_chart_svg("mrr", series))
    drawn = {
        (line.get("stroke"), line.get("stroke-dasharray", ""))
        for line in root.iter(f"{SVG}polyline")
    }
    assert len(drawn) == len(systems)
    swatches = {
        (line.get("stroke"), line.get("stroke-dasharray", ""))
        for line in root.iter(f"{SVG}line")
        if line.get("stroke-width") == "2.5"
    }
    assert swatches == drawn  # the legend shows each line's colour and dash
    assert len({series_style(i) for i in range(500)}) == 500


def test_trends_stop_at_the_report_date(store: WarehouseStore) -> None:
    assert series_points(charts(report(store, D2))["hit_rate@1"]) == {"dense": 2, EVIL: 2}


def test_report_content_bands_regressions_and_cross_version(store: WarehouseStore) -> None:
    page = report(store)
    parsed = parse(page)
    text = " ".join(parsed.text)
    classes = parsed.classes()
    assert {"band-excellent", "band-good", "band-needs-attention"} <= classes
    assert "row-regressed" in classes
    assert "What changed against v1 2026-11-20" in text
    regressions = page.split('id="regressions"')[1].split("</table>")[0]
    assert regressions.count("<tr>") == 3  # header + dense hit_rate@1 and mrr
    assert "2, 0 primary" in text  # regressions, primary ones (hit_rate@1, mrr: secondary)
    assert regressions.index("hit_rate@1") < regressions.index("retrieval_metrics")
    week = page.split("day(s)</h3>")[1].split("</table>")[0]  # dates with stored verdicts
    assert f"<td>{D3}</td>" in week and "dense hit_rate@1 −52.4% (effect only)" in week
    assert page.index('id="changes"') < page.index('id="scorecard"') < page.index('id="judge"')
    assert "packaged:all-MiniLM-L6-v2" in text and "gpt-4o-mini & co" in text
    assert "50 questions" in text
    cross = page.split('id="versions"')[1].split("</section>")[0]
    assert "v2" in cross and D1 in cross and "v3" not in cross
    assert "2026-11-22 02:00:00 UTC" in text


def test_the_cross_version_table_marks_older_dates_and_runs_in_progress(
    store: WarehouseStore,
) -> None:
    def cross(page: str) -> str:
        return page.split('id="versions"')[1].split("</section>")[0]

    older = cross(report(store))
    assert D1 in older and older.count(f"older than {D3}") == 1  # v2's latest is D1
    assert "run in progress" not in older and "compare with care" in older
    running = cross(report(store, in_progress=("v1", "v2")))
    assert running.count("run in progress") == 1, "the report's own version is not marked"
    same_day = cross(report(store, D1))
    assert "older than" not in same_day and "compare with care" not in same_day


def test_user_strings_are_escaped(store: WarehouseStore) -> None:
    page = report(store)
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "gpt-4o-mini &amp; co" in page
    assert "script" not in {tag for tag, _ in parse(page).tags}


def test_first_evaluation_has_no_baseline(store: WarehouseStore) -> None:
    text = " ".join(parse(report(store, D1)).text)
    assert "No baseline yet" in text


def test_formatting_helpers() -> None:
    assert nice_ticks(0.4, 0.9) == [0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert nice_ticks(0.5, 0.5) == [0.44, 0.46, 0.48, 0.5, 0.52, 0.54, 0.56]  # a flat line
    assert nice_ticks(3.0, 97.0) == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    assert format_value(0.12345) == "0.123" and format_value(1234.5) == "1,234.5"
    assert format_value(float("nan")) == "—"
    assert format_change(-0.125) == "−12.5%" and format_change(0.03) == "+3.0%"
    assert format_detectable(0.125) == "≥ 12.5%" and format_detectable(363.6) == "≥ 364×"
    assert format_detectable(float("inf")) == "none at this n"
    assert format_detectable(float("nan")) == "—"


def materialized_report(
    tmp_path: Path, instance: DagsterInstance, reports: Path
) -> ExecuteInProcessResult:
    """`evaluation_report` of v1 on D3 (three days of scorecards, D3's regressions) into
    `reports`."""
    warehouse = tmp_path / "warehouse"
    store = WarehouseStore(str(warehouse))
    for index, date in enumerate((D1, D2, D3)):
        write_parquet_atomically(scorecard("v1", index, date), store.scorecard_path("v1", date))
    write_parquet_atomically(
        regressions_of(store, D3), store.partition_path("metric_regressions", "v1", D3)
    )
    instance.add_dynamic_partitions(DATASET_VERSION, ["v1"])
    return materialize(
        [
            AssetSpec("evaluation_scorecard", partitions_def=evaluation_partitions),
            AssetSpec("metric_regressions", partitions_def=evaluation_partitions),
            evaluation_report,
        ],
        partition_key=evaluation_partition_key("v1", D3),
        instance=instance,
        resources={
            "io_manager": ParquetIOManagerResource(base_path=str(warehouse)),
            "warehouse": WarehouseResource(base_path=str(warehouse)),
            "baseline": BaselineResource(),
        },
        run_config={"ops": {"evaluation_report": {"config": {"reports_dir": str(reports)}}}},
    )


def test_asset_writes_the_report(tmp_path: Path, dagster_instance: DagsterInstance) -> None:
    warehouse = tmp_path / "warehouse"
    reports = tmp_path / "reports"
    result = materialized_report(tmp_path, dagster_instance, reports)
    assert result.success
    path = reports / "v1" / f"{D3}.html"
    assert series_points(charts(path.read_text())["hit_rate@1"]) == {"dense": 3, EVIL: 3}
    assert not [p for p in path.parent.iterdir() if p.name != path.name]  # no temp file left
    output = result.output_for_node("evaluation_report")
    assert output.to_dict("records") == [
        {
            "version": "v1",
            "date": D3,
            "path": str(path),
            "n_alerts": 2,
            "n_regressions": 2,
            "n_metrics": 6,
        }
    ]
    stored = pd.read_parquet(warehouse / "evaluation_report" / "v1" / f"{D3}.parquet")
    assert stored["path"].tolist() == [str(path)]
    metadata = result.asset_materializations_for_node("evaluation_report")[0].metadata
    assert metadata["report_path"].value == str(path)
    assert metadata["report_url"].value == path.as_uri()
    assert "against v1 2026-11-20: 2 regressions." in metadata["summary"].value
    assert ReportConfig().reports_dir.endswith("reports")


def test_an_empty_scorecard_still_renders(tmp_path: Path) -> None:
    empty = build_scorecard([], "v9", D1, THRESHOLDS)
    data = collect_report_data(
        WarehouseStore(str(tmp_path)),
        "v9",
        D1,
        empty,
        None,
        HEADLINE_METRICS,
        datetime.now(UTC),
        compare_partitions(PartitionScores("v9", D1, empty, empty_items()), None, RegressionRule()),
    )
    text = " ".join(parse(render_report(data)).text)
    assert "No headline metric in the stored scorecards." in text
    assert "No thresholded or headline metric in this scorecard." in text
    assert "Full scorecard (0 rows)" in text


def test_a_model_change_is_shown_next_to_delta_not_as_a_regression(
    store: WarehouseStore,
) -> None:
    current, chosen = store.read_scorecard("v1", D3), store.baseline("v1", D3)
    assert current is not None and chosen is not None
    verdicts = compare_partitions(
        PartitionScores("v1", D3, current, empty_items(), {"judge": "offline"}),
        PartitionScores(
            chosen.version, chosen.date, chosen.scorecard, empty_items(), {"judge": "gpt-4o-mini"}
        ),
        RegressionRule(),
    )
    judged = verdicts[verdicts["tier"] == "judge_reliability"]
    assert set(judged["reason"]) == {"judge changed (gpt-4o-mini → offline)"}
    data = collect_report_data(
        store, "v1", D3, current, chosen, HEADLINE_METRICS, datetime.now(UTC), verdicts
    )
    judge = render_report(data).split('id="judge"')[1].split("</section>")[0]
    row = next(r for r in judge.split("<tr") if "consistency_score" in r)
    assert "(judge changed)" in row and "delta-regressed" not in row


def test_the_correlation_matrix_is_read_from_e2e_judgments_by_hand(
    store: WarehouseStore,
) -> None:
    scores = {
        "faithfulness": [1, 2, 3, 4],
        "answer_relevance": [1, 3, 2, 4],
        "answer_correctness": [4, 3, 2, 1],
        "context_recall": [4, 4, 4, 4],
        "coherence": [1, 1, 2, 2],
    }
    judgments = pd.DataFrame(
        [
            {"system": EVIL, "query_id": f"q{i}", "metric": metric, "score": value / 4}
            for metric, values in scores.items()
            for i, value in enumerate(values)
        ]
    )
    write_parquet_atomically(judgments, store.partition_path("e2e_judgments", "v1", D3))
    page = report(store)
    section = page[page.index('<section id="correlations">') :]
    section = section[: section.index("</section>")]
    assert "<h3>&lt;script&gt;alert(1)&lt;/script&gt;</h3>" in section and EVIL not in page
    # r(faithfulness, answer_relevance) = Σdx·dy / Σdx² = 4 / 5; correctness reverses faithfulness;
    # context_recall is constant (undefined); coherence is not a RAGAS-style metric
    expected = {
        "context_recall": ["—", "—", "—", "—"],
        "faithfulness": ["—", "1.000", "0.800", "-1.000"],
        "answer_relevance": ["—", "0.800", "1.000", "-0.800"],
        "answer_correctness": ["—", "-1.000", "-0.800", "1.000"],
    }
    rows = re.findall(r"<tr><th><code>(\w+)</code></th>(.*?)</tr>", section)
    assert {metric: re.findall(r">([^<]*)</td>", cells) for metric, cells in rows} == expected
    assert 'id="correlations"' not in report(store, D2)  # no e2e_judgments stored that day


def test_small_values_axis_labels_are_never_clipped() -> None:
    """Tick labels of tiny values (`0.000061`) fit inside the chart's left margin."""
    values = [0.000061, 0.000064, 0.000058]
    series = Series("s", "#4e79a7", [D1, D2, D3], values, [np.nan] * 3, [np.nan] * 3)
    svg = ET.fromstring(line_chart_svg("tiny", [series]))
    ticks = [t for t in svg.iter(f"{SVG}text") if t.get("class") == "tick"]
    numbers = [t for t in ticks if t.get("text-anchor") == "end"]
    assert numbers and any(len(t.text) >= 8 for t in numbers)  # e.g. 0.000058
    for tick in numbers:  # right-aligned at x: its longest possible width starts inside
        assert float(tick.get("x")) - TICK_CHAR_PX * len(tick.text) >= 0, tick.text


def test_each_system_has_one_colour_across_every_chart(tmp_path: Path) -> None:
    """Every SVG of the report (trend charts, the tier tables' sparklines of hit_rate@1, made
    primary): the strokes drawn for a system are one colour, the one `series_colors` gives it."""
    store = WarehouseStore(str(tmp_path / "warehouse"))
    for index, date in enumerate((D1, D2, D3)):
        card = scorecard("v1", index, date)
        card.loc[card["metric"] == "hit_rate@1", "role"] = "primary"
        write_parquet_atomically(card, store.scorecard_path("v1", date))
    page = report(store)
    drawn: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    for svg in re.findall(r"<svg .*?</svg>", page, re.S):
        root = ET.fromstring(svg)
        for line in root.iter(f"{SVG}polyline"):
            system = (line.get("data-series") or "").split(" (")[0]
            assert system, svg
            drawn.setdefault(system, set()).add(line.get("stroke"))
            kinds.setdefault(system, set()).add(root.get("class"))
    assert {"dense", EVIL} <= set(drawn)
    assert kinds["dense"] == {"chart", "spark"}  # both kinds of chart are compared
    assert all(len(colors) == 1 for colors in drawn.values()), drawn
    history = pd.concat([store.read_scorecard("v1", d) for d in (D1, D2, D3)], ignore_index=True)
    expected = series_styles(history)
    assert {s: c.pop() for s, c in drawn.items()} == {s: expected[s].color for s in drawn}
    assert len({expected["dense"], expected[EVIL]}) == 2
