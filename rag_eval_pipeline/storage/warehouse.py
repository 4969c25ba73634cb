"""Read stored scorecards and the regression-alert history from the warehouse (any fsspec URL).

The layout is the Parquet IO manager's: `<base>/evaluation_scorecard/<version>/<date>.parquet`;
alerts are kept in `<base>/regression_alerts/<version>/<date>.parquet`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from upath import UPath

from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.parquet import read_parquet, read_tables, write_parquet_atomically

SCORECARD_ASSET = "evaluation_scorecard"
REGRESSIONS_ASSET = "metric_regressions"
REPORT_ASSET = "evaluation_report"
ALERTS_FOLDER = "regression_alerts"


@dataclass(frozen=True)
class Baseline:
    """The scorecard a partition is compared with, and where it came from."""

    version: str
    date: str
    scorecard: pd.DataFrame


class WarehouseStore:
    """Scorecards and alerts under one warehouse base path."""

    def __init__(self, base_path: str) -> None:
        self.base = storage_path(base_path)

    def partition_path(self, asset: str, version: str, date: str) -> UPath:
        """Where the IO manager stores one partition of `asset`."""
        return self.base / asset / version / f"{date}.parquet"

    def read_partition(self, asset: str, version: str, date: str) -> pd.DataFrame | None:
        """The stored table of one partition of `asset`, or None if it was never materialized."""
        path = self.partition_path(asset, version, date)
        return read_parquet(path) if path.exists() else None

    def read_table_folder(
        self, asset: str, version: str, date: str
    ) -> dict[str, pd.DataFrame | TableBatches] | None:
        """The stored tables of one partition of an asset whose value is a mapping of tables
        (the `golden_dataset` snapshot: `<date>/<table>.parquet`), or None if it was never
        materialized."""
        folder = self.partition_path(asset, version, date).with_suffix("")
        return read_tables(folder) if folder.exists() else None

    def scorecard_path(self, version: str, date: str) -> UPath:
        """Where the scorecard of one partition is stored."""
        return self.partition_path(SCORECARD_ASSET, version, date)

    def read_scorecard(self, version: str, date: str) -> pd.DataFrame | None:
        """The stored scorecard of one partition, or None if it was never materialized."""
        return self.read_partition(SCORECARD_ASSET, version, date)

    def scorecard_dates(self, version: str) -> list[str]:
        """Dates with a stored scorecard for `version`, ascending."""
        return self.partition_dates(SCORECARD_ASSET, version)

    def partition_versions(self, asset: str) -> list[str]:
        """Dataset versions with a stored partition folder of `asset`, sorted."""
        root = self.base / asset
        if not root.exists():
            return []
        return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def partition_dates(self, asset: str, version: str) -> list[str]:
        """Dates with a stored partition of `asset` for `version`, ascending."""
        folder = self.base / asset / version
        if not folder.exists():
            return []
        return sorted(
            p.name.removesuffix(".parquet")
            for p in folder.iterdir()
            if p.name.endswith(".parquet") and not p.name.startswith(".")
        )

    def baseline(
        self,
        version: str,
        date: str,
        pinned_version: str | None = None,
        pinned_date: str | None = None,
    ) -> Baseline | None:
        """The baseline of (`version`, `date`).

        Default: the latest earlier date of the same version that has a scorecard (the previous
        day when the schedule ran daily). A pinned version and/or date replaces it: the pinned
        date of the pinned version, or that version's latest date before `date` (any date when
        the pinned version is another one). None when nothing qualifies.
        """
        base_version = pinned_version or version
        if pinned_date is not None:
            candidates = [pinned_date] if pinned_date in self.scorecard_dates(base_version) else []
        else:
            dates = self.scorecard_dates(base_version)
            candidates = [d for d in dates if d < date] if base_version == version else dates
        if not candidates:
            return None
        chosen = candidates[-1]
        scorecard = self.read_scorecard(base_version, chosen)
        return None if scorecard is None else Baseline(base_version, chosen, scorecard)

    def alerts_path(self, version: str, date: str) -> UPath:
        """Where the alerts raised for one partition are recorded."""
        return self.base / ALERTS_FOLDER / version / f"{date}.parquet"

    def read_alerts(self, version: str | None = None) -> pd.DataFrame:
        """Every recorded alert (of one version, or all), oldest first."""
        root = self.base / ALERTS_FOLDER
        if not root.exists():
            return pd.DataFrame()
        folders = [root / version] if version else [p for p in root.iterdir() if p.is_dir()]
        frames = [
            read_parquet(path)
            for folder in folders
            if folder.exists()
            for path in sorted(folder.iterdir(), key=lambda p: p.name)
            if path.name.endswith(".parquet") and not path.name.startswith(".")
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def record_alerts(self, version: str, date: str, alerts: pd.DataFrame) -> None:
        """Append `alerts` to the partition's alert record (atomic rewrite of one file)."""
        path = self.alerts_path(version, date)
        previous = read_parquet(path) if path.exists() else None
        combined = alerts if previous is None else pd.concat([previous, alerts], ignore_index=True)
        write_parquet_atomically(combined, path)
