"""The shipped instance settings: the UI opens without Dagster's community (NUX) modal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_instance_file_turns_the_community_modal_off(tmp_path: Path) -> None:
    for name in ("dagster.yaml", "deploy/dagster.postgres.yaml", "deploy/k8s/dagster.yaml"):
        assert yaml.safe_load((ROOT / name).read_text())["nux"] == {"enabled": False}, name
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.nux_enabled is False
