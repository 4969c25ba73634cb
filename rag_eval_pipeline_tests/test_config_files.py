"""Configuration files are pydantic models: a misspelt key is refused with one line naming the
file, the key, its value and the closest valid key, by the loaders, `rag-eval validate` and
`rag-eval run`; the JSON Schemas in docs/schemas/ are those of the models."""

from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.evaluation import config_schemas
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.config_schemas import SCHEMAS_DIR, schema_texts
from rag_eval_pipeline.evaluation.scorecard import Thresholds
from rag_eval_pipeline.judges.criteria import load_criteria
from rag_eval_pipeline.settings import PROJECT_ROOT

pytestmark = [pytest.mark.unit]

MISSPELT = [
    (Thresholds.load, "thresholds.yaml", "metrics:\n  mrr: {excelent: 0.9}\n", "excellent"),
    (Thresholds.load, "thresholds.yaml", "alert_budjet: {primary: 0.5}\n", "alert_budget"),
    (Thresholds.load, "thresholds.yaml", "roles: {defualt: primary}\n", "default"),
    (
        Thresholds.load,
        "thresholds.yaml",
        "versions:\n  v1:\n    mrr: {min_chnge: 3}\n",
        "min_change",
    ),
    (load_weights, "composite.yaml", "wieghts: {faithfulness: 1}\n", "weights"),
    (load_criteria, "criteria.yaml", "criteria:\n  - {name: tone, critrion: x}\n", "criterion"),
]


@pytest.mark.parametrize(("load", "name", "text", "closest"), MISSPELT)
def test_a_misspelt_key_names_file_key_value_and_the_closest_key(
    tmp_path: Path, load, name: str, text: str, closest: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        load(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert f"unknown key; did you mean {closest!r}?" in message


def test_the_keys_path_names_nested_keys_and_values(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text("roles:\n  tiers: {traffic: {primary: [error_rate], secundary: [x]}}\n")
    with pytest.raises(ValueError, match=r"roles\.tiers\.traffic\.secundary: unknown role"):
        Thresholds.load(path)
    path.write_text("metrics:\n  mrr: {good: high}\n")
    with pytest.raises(ValueError, match=r"metrics\.mrr\.good = 'high': Input should be"):
        Thresholds.load(path)


def test_the_shipped_files_are_valid_and_read_as_before() -> None:
    config_schemas.check_configuration()
    thresholds = Thresholds.load(PROJECT_ROOT / "config" / "thresholds.yaml")
    assert thresholds.metrics["latency_p95_ms"] == {
        "excellent": 2000,
        "good": 5000,
        "higher_is_better": False,
        "min_change": 100,
    }
    assert thresholds.tier_roles["tier3_e2e"]["primary"][0] == "avg_e2e_score"
    assert thresholds.baseline_systems == ("dense", "bm25", "hybrid-rrf")


def test_validate_and_run_refuse_a_misspelt_key_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text("metrics:\n  ndcg@10: {excellent: 0.8, godo: 0.5}\n")
    monkeypatch.setattr(config_schemas, "THRESHOLDS_FILE", path)
    expected = f"{path}: metrics.ndcg@10.godo = 0.5: unknown key; did you mean 'good'?\n"
    assert main(["validate", str(PROJECT_ROOT / "data" / "datasets" / "demo-v1")]) == 1
    assert capsys.readouterr().err == expected
    assert main(["run", "--dataset-version", "demo-v1"]) == 2
    assert capsys.readouterr().err == expected


def test_the_json_schemas_in_docs_are_current() -> None:
    """Regenerate with `python -m rag_eval_pipeline.evaluation.config_schemas`."""
    written = {p.name: p.read_text(encoding="utf-8") for p in SCHEMAS_DIR.glob("*.json")}
    assert written == schema_texts()
    for name in ("thresholds", "composite", "criteria", "variants"):
        first = (PROJECT_ROOT / "config" / f"{name}.yaml").read_text().splitlines()[0]
        assert first == f"# yaml-language-server: $schema=../docs/schemas/{name}.schema.json"
