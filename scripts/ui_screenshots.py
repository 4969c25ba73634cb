"""Screenshots of the Dagster UI as a user sees it, for the README and for reviewing the UI.

Starts `dagster-webserver` on a free 127.0.0.1 port against the persistent instance
(`DAGSTER_HOME`, default `.dagster_home/`), drives headless Chromium with Playwright and saves:

- `lineage_groups.png`, `lineage.png`: the global asset lineage, groups collapsed (one box per
  tier) and expanded (every asset);
- `<asset>_overview.png`, `<asset>_plots.png`, `<asset>_partitions.png`: a metric asset page
  (default `retrieval_quality`): its latest metadata, the plots of its float metadata over
  materializations (filtered to `--plot-filter`), and the dataset version × date partition grid;
- `evaluation_scorecard_overview.png`, `evaluation_scorecard_checks.png`: the scorecard page and
  its asset checks,

under `data/reports/ui/` (git-ignored). Run `make ui-screenshot`, or:

    DAGSTER_HOME=/tmp/dh_ui RAG_EVAL_WAREHOUSE=/tmp/wh_ui .venv/bin/python scripts/ui_screenshots.py

Needs a Chromium binary (`make browser` installs Debian's `chromium` when it may; `--chromium
PATH` or `$CHROMIUM` for another one) and, for the full set, Playwright (in the dev extra: `make
install`; its own browser download is not used). Without Playwright it falls back to `chromium
--headless --screenshot` (no clicks: overview, partitions, checks and lineage only). Every request
to a host other than the local webserver is blocked, so the script runs offline. The webserver
and browser helpers are `rag_eval_pipeline_tests/ui_browser.py`, shared with the browser tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval_pipeline_tests.ui_browser import (
    CHROMIUM_ARGS,
    DEFAULT_CHROMIUM,
    PROJECT_ROOT,
    UIError,
    chromium,
    find_chromium,
    free_port,
    graphql,
    settle,
    show_plots,
    ui_page,
    webserver,
)

DEFAULT_OUT = PROJECT_ROOT / "data" / "reports" / "ui"
# the UI scrolls inside its own panes (the page itself never scrolls), so a "full page"
# screenshot is the viewport: asset pages get a tall one
VIEWPORT = {"width": 1600, "height": 1000}
TALL = {"width": 1600, "height": 2200}
CLI_HOST_ALIAS = "dagster-ui.test"


@dataclass
class Shot:
    """One screenshot: a UI path, text that proves the page rendered, and optional clicks."""

    name: str
    path: str
    ready_text: str
    action: Callable[[object], None] | None = None
    viewport: dict = field(default_factory=lambda: dict(VIEWPORT))
    init_script: str = ""


# --------------------------------------------------------------------------- the webserver


def asset_catalog(url: str) -> tuple[dict[str, str | None], list[str]]:
    """(asset name → partition of its latest materialization or None, the asset groups)."""
    data = graphql(
        url,
        "{ assetNodes { assetKey { path } groupName "
        "assetMaterializations(limit: 1) { partition } } }",
    )
    latest = {
        "/".join(node["assetKey"]["path"]): (
            node["assetMaterializations"][0]["partition"] if node["assetMaterializations"] else None
        )
        for node in data["assetNodes"]
    }
    return latest, sorted({node["groupName"] for node in data["assetNodes"]})


# --------------------------------------------------------------------------- the browser


# the global graph's expanded groups, as the UI stores them in localStorage (Dagster 1.13);
# `expand_groups` falls back to the graph's own "Expand all groups" menu if the key changes
EXPANDED_GROUPS_KEY = "asset-graph-open-graph-nodes-global-__GLOBAL__"


def expand_groups_script(groups: list[str]) -> str:
    value = json.dumps({"expanded": ",".join(f"global@global:{group}" for group in groups)})
    return f"window.localStorage.setItem({json.dumps(EXPANDED_GROUPS_KEY)}, {json.dumps(value)});"


def expand_groups(page) -> None:  # type: ignore[no-untyped-def]
    """Make sure every group of the global graph is expanded (asset nodes visible)."""
    node = page.get_by_text("retrieval_quality", exact=True)
    with contextlib.suppress(Exception):
        node.first.wait_for(state="visible", timeout=10_000)
        return
    page.locator("[aria-label=settings]").last.click()
    page.get_by_role("menuitem", name="Expand all groups").click()
    page.reload(wait_until="domcontentloaded")
    node.first.wait_for(state="visible")


def plots(key_filter: str, x_axis: str) -> Callable[[object], None]:
    """`show_plots` as a shot's action."""
    return lambda page: show_plots(page, key_filter, x_axis)


def select_partition(date: str | None) -> Callable[[object], None]:
    """Click a date in the partitions tab so the right pane shows that partition's metadata."""

    def action(page) -> None:  # type: ignore[no-untyped-def]
        if date:
            page.get_by_text(date, exact=True).first.click()
            page.get_by_text("Latest materialization").first.wait_for(state="visible")
            page.wait_for_timeout(500)

    return action


def shots(
    metric_asset: str, plot_filter: str, latest_date: str | None, groups: list[str]
) -> list[Shot]:
    retrieval_group = next(g for g in groups if g.endswith("retrieval"))
    return [
        Shot("lineage_groups", "/asset-groups", retrieval_group),
        Shot(
            "lineage",
            "/asset-groups",
            retrieval_group,
            action=expand_groups,
            viewport={"width": 2000, "height": 2400},  # the whole expanded graph fits
            init_script=expand_groups_script(groups),
        ),
        Shot(
            f"{metric_asset}_overview",
            f"/assets/{metric_asset}",
            "Latest materialization",
            viewport=dict(TALL),
        ),
        Shot(
            f"{metric_asset}_plots",
            f"/assets/{metric_asset}",
            "Latest materialization",
            action=plots(plot_filter, "Partitions"),
            viewport=dict(TALL),
        ),
        Shot(
            f"{metric_asset}_plots_by_event",
            f"/assets/{metric_asset}",
            "Latest materialization",
            action=plots(plot_filter, "Events"),
            viewport=dict(TALL),
        ),
        Shot(
            f"{metric_asset}_partitions",
            f"/assets/{metric_asset}?view=partitions",
            "Partitions Selected",
            action=select_partition(latest_date),
        ),
        Shot(
            "evaluation_scorecard_overview",
            "/assets/evaluation_scorecard",
            "Latest materialization",
            viewport=dict(TALL),
        ),
        Shot(
            "evaluation_scorecard_checks",
            "/assets/evaluation_scorecard?view=checks",
            "scorecard_regressions",
        ),
    ]


def screenshot_with_playwright(
    url: str, executable: str, targets: list[Shot], out: Path, timeout_s: float
) -> list[Path]:
    saved = []
    with chromium(executable) as browser:
        for shot in targets:
            failed = out / f"{shot.name}.failed.png"
            with ui_page(
                browser,
                url,
                shot.path,
                shot.ready_text,
                shot.viewport,
                timeout_s,
                shot.init_script,
                failed,
            ) as opened:
                if shot.action:
                    try:
                        shot.action(opened.page)
                    except Exception as error:
                        opened.page.screenshot(path=str(failed))
                        raise UIError(
                            f"{shot.path}: could not prepare {shot.name} ({error}); see {failed}"
                        ) from error
                    settle(opened.page)
                opened.page.wait_for_timeout(1500)  # charts and graph layout animate in
                target = out / f"{shot.name}.png"
                opened.page.screenshot(path=str(target))
            saved.append(target)
            print(f"  {target}")
    return saved


def screenshot_with_cli(
    url: str, executable: str, targets: list[Shot], out: Path, timeout_s: float
) -> list[Path]:
    """Fallback without Playwright: `chromium --headless --screenshot`, no clicks.

    The UI shows its "Join the Dagster community" dialog only on a 127.0.0.1/localhost
    origin, and without a script it cannot be dismissed: Chromium reaches the webserver
    under another host name instead (resolved to 127.0.0.1 by `--host-resolver-rules`).
    """
    host = url.split("//", 1)[1].split(":", 1)[0]
    aliased = url.replace(f"//{host}", f"//{CLI_HOST_ALIAS}", 1)
    saved = []
    for shot in targets:
        if shot.action:
            print(f"  skipped {shot.name} (needs clicks: install Playwright)")
            continue
        target = out / f"{shot.name}.png"
        size = f"{shot.viewport['width']},{shot.viewport['height']}"
        command = [
            executable,
            *CHROMIUM_ARGS,
            "--hide-scrollbars",
            f"--window-size={size}",
            "--virtual-time-budget=30000",
            f"--host-resolver-rules=MAP {CLI_HOST_ALIAS} {host}",
            f"--screenshot={target}",
            aliased + shot.path,
        ]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s + 60, check=False
        )
        if result.returncode != 0 or not target.exists():
            raise UIError(
                f"chromium --screenshot failed for {shot.path} (code {result.returncode}):\n"
                f"{result.stderr[-2000:]}"
            )
        saved.append(target)
        print(f"  {target}")
    return saved


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dagster-home",
        type=Path,
        default=Path(os.environ.get("DAGSTER_HOME", PROJECT_ROOT / ".dagster_home")),
        help="Dagster instance folder (default: $DAGSTER_HOME or .dagster_home/)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--port", type=int, default=0, help="webserver port (default: free)")
    parser.add_argument(
        "--url", help="use an already running UI (e.g. http://127.0.0.1:3000 of `make ui`)"
    )
    parser.add_argument(
        "--chromium", help=f"Chromium binary (default: $CHROMIUM, {DEFAULT_CHROMIUM})"
    )
    parser.add_argument("--asset", default="retrieval_quality", help="the metric asset to show")
    parser.add_argument(
        "--plot-filter",
        default="hit_rate@1",
        help="metadata key filter for the plots screenshot ('' for every plot)",
    )
    parser.add_argument("--startup-timeout", type=float, default=180.0, help="seconds")
    parser.add_argument("--page-timeout", type=float, default=90.0, help="seconds per page")
    parser.add_argument(
        "--no-playwright", action="store_true", help="use chromium --screenshot directly"
    )
    args = parser.parse_args(argv)

    try:
        executable = find_chromium(args.chromium)
        use_playwright = not args.no_playwright
        if use_playwright:
            try:
                import playwright.sync_api  # noqa: F401
            except ImportError:
                print(
                    "Playwright is not installed (`make install` installs it): falling "
                    "back to `chromium --headless --screenshot` (no plots screenshot).",
                    file=sys.stderr,
                )
                use_playwright = False
        home = args.dagster_home.resolve()
        if not args.url and not home.is_dir():
            raise UIError(
                f"DAGSTER_HOME {home} does not exist: run `make demo` (or `rag-eval run`) first."
            )
        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        if args.url:
            server = contextlib.nullcontext(args.url.rstrip("/"))
        else:
            port = args.port or free_port()
            print(f"starting dagster-webserver on 127.0.0.1:{port} (DAGSTER_HOME={home}) ...")
            server = webserver(home, port, args.startup_timeout, out / "webserver.log")
        with server as url:
            latest, groups = asset_catalog(url)
            if args.asset not in latest:
                raise UIError(f"no asset {args.asset!r}; assets: {', '.join(latest)}")
            missing = [name for name in (args.asset, "evaluation_scorecard") if not latest[name]]
            if missing:
                print(
                    f"warning: never materialized on this instance: {', '.join(missing)} — "
                    "their pages will be empty (run `rag-eval run` first).",
                    file=sys.stderr,
                )
            print(f"screenshots ({'playwright' if use_playwright else 'chromium --screenshot'}):")
            take = screenshot_with_playwright if use_playwright else screenshot_with_cli
            partition = latest[args.asset]
            latest_date = partition.split("|")[-1] if partition else None
            targets = shots(args.asset, args.plot_filter, latest_date, groups)
            saved = take(url, executable, targets, out, args.page_timeout)
        print(f"{len(saved)} screenshot(s) in {out}")
        return 0
    except UIError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
