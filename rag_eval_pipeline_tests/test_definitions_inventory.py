"""What users see of the code location, pinned: asset keys with their group, kinds, partitions,
IO manager and pool; checks, jobs, schedules, sensors, resource keys, loggers and executor.

The UI, the stored warehouse paths (`<asset>/<version>/<date>`) and past runs depend on these
names, so moving code between `defs/` folders must leave them as they are; and the layout rules
of issue 36: the defs folder loaded as a whole, asset defaults set in one place.
"""

import ast
import importlib
from pathlib import Path

import pytest

from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS, defs, load_defs_folder
from rag_eval_pipeline.defs.shared.partitions import evaluation_partitions

pytestmark = [pytest.mark.unit]

DEFS = Path(__file__).resolve().parent.parent / "rag_eval_pipeline" / "defs"

PARQUET = ("pandas", "parquet")
# asset → (group, kinds, pool)
ASSETS = {
    "corpus_embeddings": ("1_embedding", PARQUET, None),
    "e2e_generations": ("4_end_to_end", PARQUET, "llm_generator"),
    "e2e_judgments": ("4_end_to_end", PARQUET, "llm_judge"),
    "e2e_quality": ("4_end_to_end", PARQUET, None),
    "embedding_quality": ("1_embedding", PARQUET, None),
    "evaluation_report": ("7_scorecard", ("html", "pandas"), None),
    "evaluation_scorecard": ("7_scorecard", PARQUET, None),
    "generation_judgments": ("3_generation", PARQUET, "llm_judge"),
    "generation_quality": ("3_generation", PARQUET, None),
    "golden_dataset": ("0_dataset", PARQUET, None),
    "ideal_context_generations": ("3_generation", PARQUET, "llm_generator"),
    "judge_corrected_quality": ("5_judges", PARQUET, "llm_judge"),
    "judge_reliability": ("5_judges", PARQUET, "llm_judge"),
    "metric_regressions": ("7_scorecard", PARQUET, "llm_judge"),
    "rater_export": ("5_judges", ("csv", "pandas"), None),
    "retrieval_metrics": ("2_retrieval", PARQUET, None),
    "retrieval_quality": ("2_retrieval", PARQUET, None),
    "retrieval_runs": ("2_retrieval", PARQUET, None),
    "show_judge_quality": ("5_judges", PARQUET, "llm_judge"),
    "system_comparison": ("8_comparison", PARQUET, "llm_judge"),
    "system_retrieval_metrics": ("4_end_to_end", PARQUET, None),
    "system_retrieval_quality": ("4_end_to_end", PARQUET, None),
    "traffic_judgments": ("6_traffic", PARQUET, "llm_judge"),
    "traffic_metrics": ("6_traffic", PARQUET, None),
    "traffic_quality": ("6_traffic", PARQUET, None),
    "ux_metrics": ("6_ux", PARQUET, None),
}
CHECKS = [
    "e2e_judgments:e2e_judgments_error_rate",
    "evaluation_scorecard:scorecard_regressions",
    "evaluation_scorecard:scorecard_thresholds",
    "generation_judgments:generation_judgments_error_rate",
    "traffic_judgments:traffic_judgments_error_rate",
]
SENSORS = {
    "dataset_version_sensor": ("evaluation_job", 60),
    "dead_owner_run_sensor": (None, 30),
    "regression_alert_sensor": (None, 30),
    "run_cost_sensor": (None, 30),
}
RESOURCES = [
    "alerts",
    "baseline",
    "datasets",
    "embedder",
    "generator_llm",
    "io_manager",
    "judge_llm",
    "rag_system",
    "result_cache",
    "warehouse",
]


def test_assets_keep_their_keys_groups_kinds_partitions_io_manager_and_pool() -> None:
    seen = {}
    for assets in ALL_ASSETS:
        for key in assets.keys:
            spec = assets.specs_by_key[key]
            assert assets.partitions_def is evaluation_partitions, key
            assert assets.get_io_manager_key_for_asset_key(key) == "io_manager", key
            seen[key.to_user_string()] = (
                spec.group_name,
                tuple(sorted(spec.kinds)),
                assets.op.pool,
            )
    assert seen == ASSETS


def test_checks_jobs_schedules_sensors_resources_loggers_executor_keep_their_names() -> None:
    repo = defs.get_repository_def()
    checks = sorted(key.to_user_string() for c in ALL_CHECKS for key in c.check_keys)
    assert checks == CHECKS
    for check in ALL_CHECKS:
        for spec in check.check_specs:
            assert spec.partitions_def is evaluation_partitions, spec.key
    assert sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")) == [
        "evaluation_job"
    ]
    job = repo.get_job("evaluation_job")
    assert job.executor_def.name == "in_process"
    assert job.tags == {"rag_eval/kind": "evaluation"}
    assert {(s.name, s.job_name, s.cron_schedule) for s in repo.schedule_defs} == {
        ("daily_evaluation_schedule", "evaluation_job", "0 2 * * *")
    }
    sensors = {
        s.name: (s.job_name if s.has_jobs else None, s.minimum_interval_seconds)
        for s in repo.sensor_defs
    }
    assert sensors == SENSORS
    assert sorted(defs.resources or {}) == RESOURCES
    assert sorted(defs.loggers or {}) == ["console"]
    assert defs.executor is not None and defs.executor.name == "in_process"


def test_each_folder_brings_its_own_resources_and_none_is_bound_twice() -> None:
    owners: dict[str, list[str]] = {}
    for module in sorted(DEFS.glob("*/resources.py")):
        folder = module.parent.name
        loaded = importlib.import_module(f"rag_eval_pipeline.defs.{folder}.resources")
        for key in loaded.resources().resources or {}:
            owners.setdefault(key, []).append(folder)
    assert owners == {
        "alerts": ["scorecard"],
        "baseline": ["scorecard"],
        "datasets": ["dataset"],
        "embedder": ["tier0_embedding"],
        "generator_llm": ["tier2_generation"],
        "io_manager": ["shared"],
        "judge_llm": ["judges"],
        "rag_system": ["tier3_e2e"],
        "result_cache": ["shared"],
        "warehouse": ["scorecard"],
    }
    assert sorted(load_defs_folder().resources or {}) == RESOURCES


def test_asset_defaults_are_written_once_and_the_top_level_lists_nothing_by_hand() -> None:
    """`partitions_def=`, `kinds=` and `group_name=` appear only in `defs/shared/assets.py` and the
    folders' `__init__.py` (a kind differing from Parquet may be set on its asset); the top-level
    `definitions.py` names no job, schedule, sensor or asset."""
    for module in DEFS.rglob("*.py"):
        text = module.read_text()
        where = module.relative_to(DEFS).as_posix()
        if where != "shared/assets.py":
            assert "partitions_def=evaluation_partitions" not in text, where
            assert "group_name=" not in text, where
        assert 'kinds={"pandas", "parquet"}' not in text, where
    top = ast.parse((DEFS.parent / "definitions.py").read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(top)
        if isinstance(node, ast.ImportFrom)
        and (node.module == "rag_eval_pipeline" or node.module.startswith("rag_eval_pipeline.defs"))
        for alias in node.names
    }
    assert imported == {
        ("rag_eval_pipeline", "defs"),
        ("rag_eval_pipeline.defs.runs.machine_failures", "console_logger"),
    }
    assert [p.name for p in DEFS.glob("*.py")] == ["__init__.py"]
