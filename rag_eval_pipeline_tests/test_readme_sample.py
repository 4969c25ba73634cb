"""README's sample of what `make demo` prints, against what a short real `rag-eval run --days`
prints: every line of the sample has the shape of a printed line (dates, numbers and names
aside), and every verdict in it is worded as `evaluation.headline` words it. The same run
checks that the planner pooled the stored days' noise on a real instance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_eval_pipeline.evaluation.headline import KINDS, Headline
from rag_eval_pipeline.reporting.day_lines import DAY_LINE
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore
from rag_eval_pipeline_tests.conftest import rag_eval
from rag_eval_pipeline_tests.flips import write_version

pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = Path(__file__).resolve().parents[1] / "README.md"
DATE = r"\d{4}-\d{2}-\d{2}"
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# The names of the README's sample and of the run below: versions, systems, metrics.
NAMES = re.compile(r"\b(?:demo-v[12]|scifact-test|reference-rag|flips|flops|drop|same|swap)\b")
METRIC = re.compile(r"\b[a-z_]+@\d+\b")
VERSION_VERDICT = re.compile(r"([\w.-]+): (.+?)(?= · [\w.-]+: |$)")


def sample() -> list[str]:
    """The lines of README's first `text` block under "What the demo shows"."""
    text = README.read_text(encoding="utf-8").split("## What the demo shows", 1)[1]
    return text.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()


def verdicts(line: str) -> list[str]:
    """The verdicts of a day line (`DATE  v: ... · w: ...`) or a detail line (`v|DATE: ...`)."""
    if DAY_LINE.match(line):
        return [v for _, v in VERSION_VERDICT.findall(line.split("  ", 1)[1])]
    found = re.match(rf"^[\w.-]+\|{DATE}: (.+)$", line)
    return [found.group(1)] if found else []


def shape(line: str) -> str:
    """`line` with its verdicts, dates, numbers, names, roles and the `rag-eval` command as
    placeholders; a day line's versions collapse to one."""
    if DAY_LINE.match(line):
        return "<date>  <v>: <verdict>"
    if verdicts(line):
        return "<v>|<date>: <verdict>"
    line = re.sub(r"file://\S*/data/reports/", "file://…/data/reports/", line)
    line = re.sub(r"\S*rag-eval\b(?! run)", "<rag-eval>", line)
    line = re.sub(r"\[(primary|secondary)\]", "[<role>]", line)
    line = re.sub(DATE, "<date>", METRIC.sub("<metric>", NAMES.sub("<name>", line)))
    return NUMBER.sub("<n>", line)


def phrase_shape(phrase: str) -> str:
    return NUMBER.sub("<n>", re.sub(DATE, "<date>", phrase))


def headline_phrases() -> set[str]:
    """Every phrase `Headline` words, in the shape `phrase_shape` gives (one and two of each)."""
    shapes = {"needs a look: "}
    for n in (1, 2):
        counts = dict.fromkeys(KINDS, n)
        for told in (Headline("2026-11-20", counts, n, 20, 34), Headline(None, counts)):
            shapes |= {phrase_shape(p) for p in told.phrases()}
    shapes.add(phrase_shape(Headline("2026-11-20", dict.fromkeys(KINDS, 0)).text))
    return shapes


def test_readme_sample_is_what_a_real_run_prints(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    for name in ("flips", "flops"):
        write_version(data / "datasets" / name, {"drop": set(range(6)), "swap": set(range(12))})
    quiet_week = rag_eval(data, home, "run", "--days", "3", "--parallel", "2")
    write_version(data / "datasets" / "flips", {"drop": set(range(18)), "swap": set(range(3))})
    # one day: printed in full (a day line is printed by runs of several days, as above)
    staged_day = rag_eval(data, home, "run", "--days", "1")
    printed = quiet_week.splitlines() + staged_day.splitlines()
    # the planner pooled the stored quiet day with today's (the first day has no baseline)
    stored = WarehouseStore(str(data / "warehouse"))
    today = stored.partition_dates(REGRESSIONS_ASSET, "flips")[-1]
    rows = stored.read_partition(REGRESSIONS_ASSET, "flips", today)
    planned = rows[rows["items_needed"].notna()]
    assert len(planned) and planned["items_needed_basis"].str.endswith("pooled over 2 days").all()
    shown = [line for line in sample() if line.strip() != "..."]
    assert len(shown) >= 15, shown
    missing = {shape(line) for line in shown} - {shape(line) for line in printed}
    assert not missing, (missing, printed)
    words = headline_phrases()
    for line in shown:
        for verdict in verdicts(line):
            told = verdict.removeprefix("needs a look: ").split(", ")
            unknown = [p for p in told if phrase_shape(p) not in words]
            assert not unknown, (line, unknown)
    run_verdicts = {phrase_shape(v) for line in printed for v in verdicts(line)}
    readme_verdicts = {phrase_shape(v) for line in shown for v in verdicts(line)}
    for kind in ("first evaluation: no baseline yet", "quiet: no significant change since <date>"):
        assert kind in run_verdicts and kind in readme_verdicts, (kind, run_verdicts)
    looked = [v for v in run_verdicts if v.startswith("needs a look: <n> regressions, ")]
    assert looked and all(
        phrase_shape(p) in words for v in looked for p in v.split(": ", 1)[1].split(", ")
    ), run_verdicts
    # the staged day: its day line and the partition's line say the same; then the alerts
    start = shown.index(next(filter(alerted, shown)))
    assert verdicts(shown[start]) == verdicts(shown[start + 1]), shown[start : start + 2]
    block = [shape(line) for line in shown[start + 1 : start + 4]]
    printed_shapes = [shape(line) for line in printed]
    first = printed_shapes.index(block[0])
    assert printed_shapes[first : first + 3] == block, printed


def alerted(line: str) -> bool:
    """A day line that needs a look."""
    return bool(DAY_LINE.match(line)) and "needs a look" in line
