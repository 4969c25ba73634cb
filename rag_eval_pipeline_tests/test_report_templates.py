"""The report's templates: packaged, the only place markup is written, hostile text escaped."""

from __future__ import annotations

import ast
import re
import tomllib
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.item_scores import empty_items
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.reporting import collect_report_data, render_report
from rag_eval_pipeline.reporting.html_report import Series, line_chart_svg, sparkline_svg
from rag_eval_pipeline.reporting.templating import TEMPLATES, render
from rag_eval_pipeline.storage.warehouse import WarehouseStore

pytestmark = [pytest.mark.unit]

REPORTING = Path(__file__).parents[1] / "rag_eval_pipeline" / "reporting"
HOSTILE = "<script>alert(1)</script>\u202egnp.exe\x1b[2J"
SHOWN = "&lt;script&gt;alert(1)&lt;/script&gt;\\u202egnp.exe\\x1b[2J"
TAG = re.compile(
    r"<(svg|div|table|tr|td|th|span|p|a|code|section|h\d|ul|li|line|circle|poly\w+|g|text|title|rect|figure)[\s>/]"
)


def test_every_template_is_in_the_package_data() -> None:
    pyproject = tomllib.loads((REPORTING.parents[1] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["rag_eval_pipeline.reporting"]
    packaged = {path for pattern in globs for path in REPORTING.glob(pattern)}
    templates = {p for p in (REPORTING / "templates").rglob("*") if p.is_file()}
    assert templates and templates <= packaged, templates - packaged
    assert set(TEMPLATES.list_templates()) == {
        str(p.relative_to(REPORTING / "templates")) for p in templates
    }


def test_no_markup_is_written_in_python() -> None:
    """Every tag of the report is in a template: no string of the reporting package (but
    docstrings) holds one."""
    found = []
    for path in REPORTING.glob("*.py"):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        found += [
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and TAG.search(node.value)
        ]
    assert found == []


def test_an_undefined_name_fails_loudly() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("sections/week.html.j2")


def test_hostile_names_reach_the_charts_escaped_and_the_svg_stays_xml() -> None:
    days = ["2026-11-19", "2026-11-20", "2026-11-21"]
    series = Series(HOSTILE, "#4e79a7", days, [0.5, 0.6, 0.4], [np.nan] * 3, [np.nan] * 3)
    chart = line_chart_svg(f"mrr of {HOSTILE}", [series])
    spark = sparkline_svg([0.5, 0.6, 0.4], [False, False, True], HOSTILE, series=HOSTILE)
    for svg in (chart, spark):
        assert HOSTILE not in svg and "<script" not in svg and "\x1b" not in svg
        assert "\u202e" not in svg and SHOWN.replace("&lt;", "<").replace("&gt;", ">") in (
            " ".join(e.text or "" for e in ET.fromstring(svg).iter())
        )


def test_a_hostile_system_reaches_the_page_escaped(tmp_path: Path) -> None:
    thresholds = Thresholds(metrics={"mrr": {"excellent": 0.8, "good": 0.5}})
    scores = pd.DataFrame(
        [
            {
                "tier": "tier1_retrieval",
                "system": system,
                "metric": "mrr",
                "mean": 0.6,
                "std": 0.1,
                "count": 20,
                "ci_low": 0.55,
                "ci_high": 0.65,
                "n_errors": 0,
                "error_rate": 0.0,
            }
            for system in (HOSTILE, "dense")
        ]
    )
    card = build_scorecard([scores], "v1", "2026-11-21", thresholds)
    verdicts = compare_partitions(
        PartitionScores("v1", "2026-11-21", card, empty_items()), None, RegressionRule()
    )
    data = collect_report_data(
        WarehouseStore(str(tmp_path)),
        "v1",
        "2026-11-21",
        card,
        None,
        ["mrr"],
        datetime(2026, 11, 22, tzinfo=UTC),
        verdicts,
    )
    page = render_report(data)
    assert "<script" not in page and "\x1b" not in page and "\u202e" not in page
    assert page.count(SHOWN) >= 3  # the tier table, the trend legend, the full scorecard
