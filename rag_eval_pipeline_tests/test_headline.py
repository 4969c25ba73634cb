"""One verdict on every surface: the day's headline (`evaluation.headline`) read by the run
summary, the `--fail-on-regression` gate, the report, `rag-eval alerts` and the check."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.headline import (
    ALERT,
    FIRST,
    QUIET,
    UNDECIDED,
    change_kinds,
    headline,
)
from rag_eval_pipeline_tests.conftest import rag_eval, rag_eval_process
from rag_eval_pipeline_tests.flips import write_version

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def rows(**columns: list) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {
        "tier": ["tier1_retrieval"] * n,
        "system": ["prod"] * n,
        "metric": [f"m{i}" for i in range(n)],
        "role": ["primary"] * n,
        "higher_is_better": [True] * n,
        "threshold": [0.05] * n,
        "baseline_date": ["2026-11-20"] * n,
        "n_paired": [20] * n,
        "items_to_detect": [np.nan] * n,
    }
    return pd.DataFrame({**base, **columns})


def test_each_row_has_one_kind_and_monitor_rows_are_counted_apart() -> None:
    frame = rows(
        verdict=[
            "regressed",
            "untestable",
            "not comparable",
            "regressed",
            "improved",
            "untestable",
        ],
        alert=[True, True, True, False, False, False],
        role=["primary", "primary", "secondary", "monitor", "secondary", "secondary"],
        baseline_value=[0.8, 0.8, 0.5, 0.6, 0.5, 0.5],
        value=[0.6, 0.5, np.nan, 0.3, 0.6, 0.51],
        relative_change=[-0.25, -0.375, np.nan, -0.5, 0.2, 0.02],
    )
    assert change_kinds(frame).tolist() == [
        "regression",
        "regression",
        "outage",
        "monitored",
        "improvement",
        None,  # untestable but within its tolerance: not a change
    ]
    told = headline(frame)
    assert (told.n_alerts, told.state) == (3, ALERT)
    assert told.text == (
        "2 regressions, 1 outage, 1 improvement, 1 monitored change (never alerted)"
    )


def test_untestable_primary_drops_are_undecided_never_quiet() -> None:
    frame = rows(
        verdict=["untestable", "untestable", "untestable", "no significant change"],
        alert=[False] * 4,
        role=["primary", "primary", "secondary", "primary"],
        baseline_value=[1.0, 1.0, 1.0, 0.5],
        value=[0.85, 0.85, 0.85, 0.5],
        relative_change=[-0.15, -0.15, -0.15, 0.0],
        n_paired=[20, 18, 20, 20],
        items_to_detect=[34.0, 29.0, 34.0, np.nan],
    )
    told = headline(frame)
    assert told.state == UNDECIDED and told.n_alerts == 0
    assert told.text == (
        "untestable: 2 primary metrics moved the bad way on too few items, n = 18, about 34 needed"
    )
    improving = frame.assign(value=1.0, relative_change=0.0)
    assert headline(improving).state == QUIET
    assert headline(improving).text == "quiet: no significant change since 2026-11-20"
    assert headline(frame.assign(baseline_date=None)).state == FIRST


def test_an_untested_drop_is_said_on_every_surface_and_gates_with_exit_4(tmp_path: Path) -> None:
    """20 questions, 3 of which lose their relevant document on day 2 (hit_rate@5 and ndcg@10
    1.0 → 0.85, p = 1/8): the run's summary, its exit code and the report say "untestable"."""
    data, home = tmp_path / "data", tmp_path / "home"
    folder = data / "datasets" / "twenty"
    write_version(folder, {"prod": set()}, n=20)
    rag_eval(data, home, "run", "--date", "2026-11-20")
    write_version(folder, {"prod": {1, 2, 3}}, n=20)
    completed = rag_eval_process(data, home, "run", "--date", "2026-11-21", "--fail-on-regression")
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert "--fail-on-regression: twenty|2026-11-21" in completed.stderr
    line = next(x for x in completed.stdout.splitlines() if x.startswith("twenty|2026-11-21:"))
    found = re.fullmatch(
        r"twenty\|2026-11-21: needs a look: untestable: 2 primary metrics moved the bad way on "
        r"too few items, n = 20, about (\d+) needed",
        line,
    )
    assert found and int(found.group(1)) > 20, line
    assert "quiet" not in completed.stdout
    assert "tier1_retrieval · prod · hit_rate@5 [primary]: 1.0000 → 0.8500" in completed.stdout
    page = (data / "reports" / "twenty" / "2026-11-21.html").read_text()
    told = line.split(": ", 1)[1].removeprefix("needs a look: ")
    assert f'<p class="headline" id="headline">{told}</p>' in page
    kpis = page.split('<div class="kpis">')[1].split("</section>")[0]
    assert re.search(r'kpi-value">2</div><div class="kpi-label">Untestable primary', kpis)
    assert re.search(r'kpi-value">0</div><div class="kpi-label">Regressions', kpis)
