"""The project's pages in a real browser: `dagster-webserver` on a free 127.0.0.1 port, and
Debian's Chromium driven by Playwright (its own browser download is never used), offline.

Shared by the browser tests (`test_browser.py`), the webserver tests and
`scripts/ui_screenshots.py`. Imports neither Dagster nor Playwright at module level, so the
script starts fast and the tests can skip when Chromium is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = (
    "install Debian's Chromium (`sudo apt-get update && sudo apt-get install -y chromium`; "
    "`make test` does it when run as root) and Playwright (`make install`), or set $CHROMIUM"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# the "Join the Dagster community" dialog the UI shows on localhost: mark it seen in the browser
# (not in the instance, so the user's own UI still shows it once)
COMMUNITY_DIALOG_SEEN = "window.localStorage.setItem('communityNux', JSON.stringify('1'));"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "TOKENIZERS_PARALLELISM": "false",
}


class UIError(RuntimeError):
    """A problem the user can fix (no browser, no webserver, a GraphQL error)."""


# --------------------------------------------------------------------------- the webserver


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def graphql(url: str, query: str, variables: Mapping[str, Any] | None = None) -> dict:
    """The `data` of a GraphQL query to the webserver at `url`; `UIError` on GraphQL errors."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query, "variables": dict(variables or {})}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = json.loads(response.read())
    if "errors" in payload:
        raise UIError(f"GraphQL error: {payload['errors']}")
    return payload["data"]


def start_webserver(
    dagster_home: Path, port: int, log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """`dagster-webserver -w workspace.yaml` on 127.0.0.1:`port` for the instance in
    `dagster_home`, its output in `log`, in its own process group (its code server stops with
    it: `stop_process_group`). Returns at once; `wait_until_ready` waits for it."""
    executable = Path(sys.executable).with_name("dagster-webserver")
    if not executable.exists():
        found = shutil.which("dagster-webserver")
        if not found:
            raise UIError("dagster-webserver not found: run `make install` first.")
        executable = Path(found)
    environment = {**OFFLINE_ENV, **os.environ, **(env or {})}
    environment.update(DAGSTER_HOME=str(dagster_home), PYTHONUNBUFFERED="1")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        return subprocess.Popen(
            [str(executable), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_until_ready(url: str, process: subprocess.Popen, log: Path, deadline: float) -> None:
    """Poll `/server_info` until the webserver answers (before the `time.monotonic()`
    `deadline`), failing fast with the end of its log if it exits."""
    while True:
        if process.poll() is not None:
            raise UIError(
                f"dagster-webserver exited with code {process.returncode}; its log ({log}):\n"
                f"{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise UIError(
                f"dagster-webserver not ready in time; its log ({log}):\n"
                f"{log.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.5)


def stop_process_group(process: subprocess.Popen) -> None:
    """SIGTERM the process group `process` leads (started with `start_new_session=True`, e.g. a
    webserver or daemon with its code server), SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):  # a code server still shutting down
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def webserver(dagster_home: Path, port: int, timeout_s: float, log: Path) -> Iterator[str]:
    """The webserver's URL once it answers; stopped on exit."""
    started = time.monotonic()
    process = start_webserver(dagster_home, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, process, log, started + timeout_s)
        yield url
    finally:
        stop_process_group(process)


# --------------------------------------------------------------------------- the browser


def chromium_candidates(requested: str | None = None) -> list[str]:
    """Where Chromium is looked for: `requested`, else $CHROMIUM, Debian's path, the PATH."""
    if requested:
        return [requested]
    found = [
        os.environ.get("CHROMIUM"),
        DEFAULT_CHROMIUM,
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    return [candidate for candidate in found if candidate]


def chromium_path(requested: str | None = None) -> str | None:
    """The first executable Chromium of `chromium_candidates`, or None."""
    return next(
        (
            candidate
            for candidate in chromium_candidates(requested)
            if Path(candidate).is_file() and os.access(candidate, os.X_OK)
        ),
        None,
    )


def find_chromium(requested: str | None = None) -> str:
    """`chromium_path`, or a `UIError` saying how to install it."""
    found = chromium_path(requested)
    if found is None:
        looked = ", ".join(chromium_candidates(requested)) or "nothing"
        raise UIError(f"Chromium not found (looked for {looked}): {INSTALL_HINT}.")
    return found


@contextlib.contextmanager
def chromium(executable: str) -> Iterator[Any]:
    """A headless Playwright `Browser` on the Chromium binary `executable`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=executable, headless=True, args=CHROMIUM_ARGS
            )
        except Exception as error:  # any launch failure is reported the same way
            raise UIError(f"could not start Chromium {executable}: {error}") from error
        try:
            yield browser
        finally:
            browser.close()


def block_other_origins(context: Any, allowed: tuple[str, ...]) -> list[str]:
    """Abort every request of the Playwright `context` whose URL starts with none of `allowed`
    (`data:` URLs are always allowed); returns the list the blocked URLs are appended to."""
    blocked: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith((*allowed, "data:")):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    return blocked


@dataclass
class OpenPage:
    """A Playwright page of the UI, the requests it was refused and its uncaught errors."""

    page: Any
    blocked: list[str]
    errors: list[str]


@contextlib.contextmanager
def ui_page(
    browser: Any,
    url: str,
    path: str,
    ready_text: str,
    viewport: Mapping[str, int],
    timeout_s: float,
    init_script: str = "",
    failure_shot: Path | None = None,
    on_response: Callable[[Any], None] | None = None,
    community_dialog_seen: bool = True,
) -> Iterator[OpenPage]:
    """The UI page `url + path` in a fresh offline context (only `url` is reachable: the UI
    embeds dagster.io iframes and Google fonts), once `ready_text` is visible, the community
    dialog marked seen in the browser unless `community_dialog_seen` is False; `UIError` if it
    never renders (the page saved as `failure_shot`). `on_response` sees every response from
    the first one on."""
    context = browser.new_context(viewport=dict(viewport))
    try:
        context.add_init_script(
            (COMMUNITY_DIALOG_SEEN if community_dialog_seen else "") + init_script
        )
        opened = OpenPage(context.new_page(), block_other_origins(context, (url,)), [])
        opened.page.on("pageerror", lambda error: opened.errors.append(str(error)))
        if on_response:
            opened.page.on("response", on_response)
        opened.page.set_default_timeout(timeout_s * 1000)
        opened.page.goto(url + path, wait_until="domcontentloaded")
        try:
            opened.page.get_by_text(ready_text).first.wait_for(state="visible")
        except Exception as error:
            if failure_shot:
                opened.page.screenshot(path=str(failure_shot))
            raise UIError(
                f"{path}: {ready_text!r} did not appear within {timeout_s:.0f} s"
                + (f" (see {failure_shot})" if failure_shot else "")
            ) from error
        settle(opened.page)
        skip = opened.page.get_by_role("button", name="Skip")
        if community_dialog_seen and skip.count():
            skip.first.click()
        yield opened
    finally:
        context.close()


def graphql_answers(operation: str) -> tuple[list[dict], Callable[[Any], None]]:
    """A list, and an `on_response` callback (`ui_page`) appending to it the JSON answer of
    every GraphQL request called `operation` the page sends."""
    answers: list[dict] = []

    def keep(response: Any) -> None:
        body = response.request.post_data_json or {}
        if body.get("operationName") == operation:
            answers.append(response.json())

    return answers, keep


def settle(page: Any) -> None:
    """Wait (up to 15 s) until the page has no request in flight."""
    with contextlib.suppress(Exception):
        page.wait_for_load_state("networkidle", timeout=15_000)


def show_plots(page: Any, key_filter: str, x_axis: str) -> None:
    """On an asset page: filter the metadata keys, switch the metadata section's Table/Plots
    toggle to Plots and its x axis to `x_axis` (`Partitions` or `Events`)."""
    if key_filter:
        page.get_by_placeholder("Filter metadata keys").first.fill(key_filter)
        page.wait_for_timeout(500)
    page.get_by_role("button").filter(has_text="Plots").first.click()
    page.wait_for_timeout(500)
    page.get_by_role("button").filter(has_text=x_axis).first.click()
    page.wait_for_timeout(500)


# What a Chart.js line of the UI draws, read from the props React gave the chart component that
# owns the canvas: its x labels (partition keys in the partitions view, else null) and each
# dataset's label and points as [x, y] (y null where the chart leaves a gap).
CHART_DATA = """(canvas) => {
  const fiberKey = Object.keys(canvas).find((key) => key.startsWith('__reactFiber'));
  for (let fiber = fiberKey && canvas[fiberKey]; fiber; fiber = fiber.return) {
    const data = fiber.memoizedProps && fiber.memoizedProps.data;
    if (data && data.datasets) {
      return {
        labels: data.labels || null,
        datasets: data.datasets.map((set) => ({
          label: set.label,
          points: set.data.map((p) => [p.x, Number.isFinite(p.y) ? p.y : null]),
        })),
      };
    }
  }
  return null;
}"""


def plot_canvas(page: Any, key: str) -> Any:
    """The canvas of the metadata plot titled `key` on an asset page showing its Plots."""
    return page.locator(f'xpath=//span[text()="{key}"]/../following-sibling::div//canvas')


def chart_data(canvas: Any) -> dict:
    """`CHART_DATA` of the Playwright locator `canvas`; `UIError` if no chart owns it."""
    data = canvas.evaluate(CHART_DATA)
    if data is None:
        raise UIError("no Chart.js chart found behind the canvas")
    return data
