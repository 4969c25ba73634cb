"""The warehouse, the regression baseline and the alerts' webhook, from the environment."""

import os

from dagster import Definitions, definitions

from rag_eval_pipeline.defs.shared.resources import (
    AlertsResource,
    BaselineResource,
    WarehouseResource,
    env_var_if_set,
)

ALERT_WEBHOOK_ENV = "RAG_EVAL_ALERT_WEBHOOK"


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(
        resources={
            "warehouse": WarehouseResource(),
            "baseline": BaselineResource(
                version=os.environ.get("RAG_EVAL_BASELINE_VERSION"),
                date=os.environ.get("RAG_EVAL_BASELINE_DATE"),
            ),
            # An EnvVar: the URL (a credential for Slack) is read at run time, never stored in
            # the run's job snapshot or shown in the UI.
            "alerts": AlertsResource(
                webhook_url=env_var_if_set(ALERT_WEBHOOK_ENV),
                style=os.environ.get("RAG_EVAL_ALERT_STYLE", "json"),
                ui_url=os.environ.get("RAG_EVAL_UI_URL"),
            ),
        }
    )
