"""The configuration of a system under test behind HTTP: request template and reply selectors.

The `http:` block of `dataset.yaml` (or the file named by `RAG_EVAL_SYSTEM_HTTP`, with the url
overridable by `RAG_EVAL_SYSTEM_URL`) holds:

- `url` (http or https), `method` (`POST` by default; `GET`, `PUT`, `PATCH`);
- `headers`: name → value; a value may reference environment variables as `${RAG_EVAL_HTTP_X}`
  (only `RAG_EVAL_HTTP_*` names: a dataset folder must not be able to send any other variable,
  such as a provider key, to a URL it chooses). Resolved values are secrets, redacted by value;
- `body`: the JSON request body (a mapping, a list or a JSON text; null or a GET: none);
  `params`: query-string parameters. Their strings are `string.Template`s over `$question`,
  `$session_id`, `$turn` and `$query_id`. A string that is exactly one placeholder becomes the
  typed value (`"$turn"` → 3, a missing session → null); inside a longer string the value is
  inserted as text. Values are put into the parsed structure, which is then serialized with
  `json.dumps`: no question, with any quotes, backslashes or line breaks, can change the JSON
  around it;
- selectors, JSONPath expressions (`jsonpath-ng`, with its extensions: filters, `len`) over the
  JSON reply: `answer` (the first match; default `$.answer`), `retrieved_doc_ids` and
  `contexts` (every match, a matched list flattened; defaults `$.retrieved_doc_ids`,
  `$.contexts`), and optional `retrieval_latency_ms`, `generation_latency_ms`,
  `generator_model`;
- `timeout_s` per attempt (30: each wait to connect, send or read, and the whole reply body),
  `max_concurrency` requests in flight (4), and the settings of the project's one failure
  policy, with the names and defaults of the LLM client's (`llm.client.LLMConfig`):
  `max_retries` (3), `backoff_base_s` (1.0), `rate_limit_budget_s` (300), `breaker_window`
  (20), `breaker_min_calls` (10, 0: no breaker), `breaker_failure_ratio` (0.5),
  `breaker_cooldown_s` (30); and the system's `name` (default: the URL without credentials,
  query or fragment).

`http_config_problems` lists what is wrong with a block as (key, problem) pairs, the problem
naming the offending value; `HttpSystemConfig.from_mapping` raises them as one `ValueError`
naming the source file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from string import Template
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

import yaml
from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext import parse as parse_jsonpath

from rag_eval_pipeline.llm.failures import RetryPolicy
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.storage.config_files import shown
from rag_eval_pipeline.storage.yaml_files import load_yaml_file

HTTP_CONFIG_ENV = "RAG_EVAL_SYSTEM_HTTP"
HTTP_URL_ENV = "RAG_EVAL_SYSTEM_URL"
PLACEHOLDERS = ("question", "session_id", "turn", "query_id")
METHODS = ("GET", "POST", "PUT", "PATCH")
HEADER_VARIABLE_PREFIX = "RAG_EVAL_HTTP_"
DEFAULT_BODY = {"question": "$question", "session_id": "$session_id", "turn": "$turn"}
SELECTOR_KEYS = (
    "answer",
    "retrieved_doc_ids",
    "contexts",
    "retrieval_latency_ms",
    "generation_latency_ms",
    "generator_model",
)
DEFAULT_SELECTORS = {
    "answer": "$.answer",
    "retrieved_doc_ids": "$.retrieved_doc_ids",
    "contexts": "$.contexts",
}


class NumberSetting(NamedTuple):
    """A numeric setting: its default and the values allowed (`minimum` excluded when
    `exclusive`, `maximum` included)."""

    default: float
    minimum: float
    integer: bool
    exclusive: bool = False
    maximum: float | None = None


NUMBER_KEYS = {
    "timeout_s": NumberSetting(30.0, 0.0, False, exclusive=True),
    "max_concurrency": NumberSetting(4, 1, True),
    "max_retries": NumberSetting(3, 0, True),
    "backoff_base_s": NumberSetting(1.0, 0.0, False),
    "rate_limit_budget_s": NumberSetting(300.0, 0.0, False),
    "breaker_window": NumberSetting(20, 1, True),
    "breaker_min_calls": NumberSetting(10, 0, True),
    "breaker_failure_ratio": NumberSetting(0.5, 0.0, False, exclusive=True, maximum=1.0),
    "breaker_cooldown_s": NumberSetting(30.0, 0.0, False),
}
KEYS = ("url", "method", "headers", "body", "params", "name", *SELECTOR_KEYS, *NUMBER_KEYS)
RETIRED_KEYS = {
    "breaker_failures": "no longer a setting: the breaker counts a failure ratio over recent "
    "calls (breaker_window, breaker_min_calls, breaker_failure_ratio, breaker_cooldown_s; "
    "docs/http-system.md)",
}
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_VARIABLE_NAME = re.compile(rf"{HEADER_VARIABLE_PREFIX}[A-Z0-9_]+")
_WHOLE_PLACEHOLDER = re.compile(r"\$(?:([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\})", re.I)


@dataclass(frozen=True)
class HttpSystemConfig:
    """A validated `http:` block (see the module docstring for each field)."""

    url: str
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = field(default_factory=lambda: dict(DEFAULT_BODY))  # None: no body
    params: Mapping[str, str] = field(default_factory=dict)
    selectors: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SELECTORS))
    timeout_s: float = 30.0
    max_concurrency: int = 4
    max_retries: int = 3
    backoff_base_s: float = 1.0
    rate_limit_budget_s: float = 300.0
    breaker_window: int = 20
    breaker_min_calls: int = 10
    breaker_failure_ratio: float = 0.5
    breaker_cooldown_s: float = 30.0
    name: str | None = None

    @classmethod
    def from_mapping(cls, block: Mapping[str, Any], source: str) -> HttpSystemConfig:
        """The configuration of `block`; `ValueError` naming `source`, each key and value."""
        problems = http_config_problems(block, require_url=True)
        if problems:
            listed = "; ".join(f"{key}: {problem}" for key, problem in problems)
            raise ValueError(f"{source}: invalid http system configuration: {listed}")
        method = str(block.get("method", "POST")).upper()
        body = block.get("body", None if method == "GET" else DEFAULT_BODY)
        selectors = {**DEFAULT_SELECTORS, **{k: block[k] for k in SELECTOR_KEYS if k in block}}
        numbers = {key: block.get(key, number.default) for key, number in NUMBER_KEYS.items()}
        return cls(
            url=block["url"],
            method=method,
            headers=dict(block.get("headers") or {}),
            body=json.loads(body) if isinstance(body, str) else body,
            params=dict(block.get("params") or {}),
            selectors={k: v for k, v in selectors.items() if v is not None},
            name=block.get("name"),
            **numbers,
        )

    @property
    def system_name(self) -> str:
        """`name`, else the URL without credentials, query or fragment."""
        if self.name:
            return self.name
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def compiled_selectors(self) -> dict[str, JSONPath]:
        """Each configured selector, parsed."""
        return {key: parse_jsonpath(path) for key, path in self.selectors.items()}

    def retry_policy(self) -> RetryPolicy:
        """The retry policy of each question (`timeout_s` is the HTTP client's, per attempt)."""
        return RetryPolicy(self.max_retries, self.backoff_base_s, self.rate_limit_budget_s)


def resolve_http_config(
    block: Mapping[str, Any] | None,
    *,
    block_source: str,
    config_file: str | None = None,
    url: str | None = None,
) -> HttpSystemConfig:
    """The configuration in effect: the `config_file` (`RAG_EVAL_SYSTEM_HTTP`) if given, else
    the dataset's `block`; `url` (`RAG_EVAL_SYSTEM_URL`) replaces its url."""
    source = block_source
    if config_file:
        source = config_file
        try:
            block = load_yaml_file(config_file)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise ValueError(f"{HTTP_CONFIG_ENV}={config_file}: cannot read it: {error}") from error
        if not isinstance(block, Mapping):
            raise ValueError(f"{config_file}: must be a mapping of http settings (url: ...)")
    block = dict(block or {})
    if url:
        block["url"], source = url, f"{source} with {HTTP_URL_ENV}"
    if "url" not in block:
        raise ValueError(
            f"{source}: the http system needs a url: set http.url in dataset.yaml, or "
            f"{HTTP_URL_ENV}, or url in the file named by {HTTP_CONFIG_ENV}"
        )
    return HttpSystemConfig.from_mapping(block, source)


def http_config_problems(block: object, *, require_url: bool = False) -> list[tuple[str, str]]:
    """What is wrong with an `http:` block: (key, problem naming the value) pairs."""
    if not isinstance(block, Mapping):
        return [("http", f"must be a mapping of http settings, got {_shown(block)}")]
    problems = [
        (f"http.{key}", RETIRED_KEYS.get(key, f"unknown setting (known: {', '.join(KEYS)})"))
        for key in block
        if key not in KEYS
    ]
    if require_url and "url" not in block:
        problems.append(("http.url", "is required"))
    if "url" in block:
        problems += _url_problems(block["url"])
    method = block.get("method", "POST")
    if not isinstance(method, str) or method.upper() not in METHODS:
        problems.append(
            ("http.method", f"must be one of {', '.join(METHODS)}, got {_shown(method)}")
        )
    problems += _header_problems(block.get("headers"))
    if block.get("body") is not None:
        if isinstance(method, str) and method.upper() == "GET":
            problems.append(("http.body", "a GET request has no body: use params"))
        problems += _body_problems(block["body"])
    params = block.get("params")
    if params is not None:
        if not isinstance(params, Mapping) or not all(
            isinstance(v, str | int | float) for v in params.values()
        ):
            problems.append(("http.params", f"must map names to text, got {_shown(params)}"))
        else:
            problems += _template_problems({str(k): str(v) for k, v in params.items()}, "params")
    for key in SELECTOR_KEYS:
        if key in block:
            problems += _selector_problems(key, block[key])
    for key in NUMBER_KEYS:
        if key in block:
            problems += _number_problems(key, block[key], NUMBER_KEYS[key])
    if not {"http.breaker_window", "http.breaker_min_calls"} & {key for key, _ in problems}:
        problems += _breaker_problems(block)
    name = block.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        problems.append(("http.name", f"must be a non-empty system name, got {_shown(name)}"))
    return problems


def resolve_headers(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The header values with their `${RAG_EVAL_HTTP_*}` references replaced from `environ`;
    `ValueError` naming the header and the variable (never a value) when one is unset."""
    resolved = {}
    for name, template in headers.items():
        missing = [v for v in referenced_variables(template) if v not in environ]
        if missing:
            raise ValueError(
                f"http header {_shown(name)} references environment variable(s) "
                f"{', '.join(missing)}, not set"
            )
        resolved[name] = _VARIABLE.sub(lambda m: environ[m.group(1)], template)
    return resolved


def referenced_variables(template: str) -> list[str]:
    """The environment variables a header value references as `${NAME}`."""
    return _VARIABLE.findall(template)


def render_template(template: Any, values: Mapping[str, Any]) -> Any:
    """`template` (parsed JSON) with its placeholders replaced by `values` (see the module
    docstring): a whole-placeholder string takes the typed value, others the value's text."""
    if isinstance(template, str):
        whole = _WHOLE_PLACEHOLDER.fullmatch(template)
        if whole:
            return values[whole.group(1) or whole.group(2)]
        texts = {key: "" if value is None else str(value) for key, value in values.items()}
        return Template(template).substitute(texts)
    if isinstance(template, Mapping):
        return {key: render_template(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(value, values) for value in template]
    return template


def _url_problems(url: object) -> list[tuple[str, str]]:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return [("http.url", f"must be an http:// or https:// URL with a host, got {_shown(url)}")]
    return []


def _header_problems(headers: object) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if not isinstance(headers, Mapping):
        return [("http.headers", f"must map header names to text, got {_shown(headers)}")]
    problems = []
    for name, value in headers.items():
        key = f"http.headers.{name}"
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            problems.append((key, f"is not a valid header name: {_shown(name)}"))
            continue
        if not isinstance(value, str) or _CONTROL.search(value):
            problems.append((key, f"must be one line of text, got {_shown(value)}"))
            continue
        bad = [v for v in referenced_variables(value) if not _VARIABLE_NAME.fullmatch(v)]
        if bad:
            problems.append(
                (
                    key,
                    f"may reference only ${{{HEADER_VARIABLE_PREFIX}...}} variables "
                    f"(upper case), got ${{{bad[0]}}}",
                )
            )
    return problems


def _body_problems(body: object) -> list[tuple[str, str]]:
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except json.JSONDecodeError as error:
            return [("http.body", f"is not valid JSON ({error.msg}): {_shown(body)}")]
    if not isinstance(body, Mapping | list):
        return [("http.body", f"must be a JSON object or array, got {_shown(body)}")]
    return _template_problems(body, "body")


def _template_problems(template: Any, path: str) -> list[tuple[str, str]]:
    """Every string of `template` must be a valid `string.Template` over `PLACEHOLDERS`."""
    if isinstance(template, Mapping):
        keys = [
            (f"http.{path}", f"has a key that is not text: {_shown(key)}")
            for key in template
            if not isinstance(key, str)
        ]
        return keys + [p for k, v in template.items() for p in _template_problems(v, f"{path}.{k}")]
    if isinstance(template, list):
        return [p for i, v in enumerate(template) for p in _template_problems(v, f"{path}[{i}]")]
    if isinstance(template, float) and not math.isfinite(template):
        return [(f"http.{path}", f"must be a finite number, got {_shown(template)}")]
    if not isinstance(template, str):
        if template is None or isinstance(template, bool | int | float):
            return []
        return [
            (
                f"http.{path}",
                f"must be JSON (text, number, true/false, null), got {_shown(template)}",
            )
        ]
    parsed = Template(template)
    unknown = [name for name in parsed.get_identifiers() if name not in PLACEHOLDERS]
    if not parsed.is_valid() or unknown:
        allowed = ", ".join(f"${name}" for name in PLACEHOLDERS)
        return [(f"http.{path}", f"may use only {allowed} (and $$ for $), got {_shown(template)}")]
    return []


def _selector_problems(key: str, selector: object) -> list[tuple[str, str]]:
    if selector is None:
        return [] if key != "answer" else [("http.answer", "the answer selector is required")]
    if not isinstance(selector, str) or not selector.strip():
        return [(f"http.{key}", f"must be a JSONPath expression, got {_shown(selector)}")]
    try:
        parse_jsonpath(selector)
    except JSONPathError as error:
        return [(f"http.{key}", f"is not a valid JSONPath ({error}): {_shown(selector)}")]
    return []


def _number_problems(key: str, value: object, setting: NumberSetting) -> list[tuple[str, str]]:
    kind = "an integer" if setting.integer else "a number"
    bound = f"{'>' if setting.exclusive else '>='} {setting.minimum:g}"
    if setting.maximum is not None:
        bound += f" and <= {setting.maximum:g}"
    integer = setting.integer
    number = not isinstance(value, bool) and isinstance(value, int if integer else int | float)
    if (
        not number
        or not math.isfinite(value)  # type: ignore[arg-type]
        or value < setting.minimum  # type: ignore[operator]
        or (setting.exclusive and value == setting.minimum)
        or (setting.maximum is not None and value > setting.maximum)  # type: ignore[operator]
    ):
        return [(f"http.{key}", f"must be {kind} {bound}, got {_shown(value)}")]
    return []


def _breaker_problems(block: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`breaker_min_calls` may not exceed `breaker_window` (both valid numbers)."""
    window = block.get("breaker_window", NUMBER_KEYS["breaker_window"].default)
    min_calls = block.get("breaker_min_calls", NUMBER_KEYS["breaker_min_calls"].default)
    if min_calls <= window:
        return []
    key = "breaker_min_calls" if "breaker_min_calls" in block else "breaker_window"
    problem = (
        f"breaker_min_calls ({_shown(min_calls)}) must be at most breaker_window ({_shown(window)})"
    )
    return [(f"http.{key}", problem)]


def _shown(value: Any) -> str:
    """A configured value as a problem echoes it: capped (`config_files.shown`), and with every
    secret the redaction rule knows (URL user information, credential variables' values, bearer
    and `sk-` keys) as `***`, so a URL's password never reaches a message."""
    return redact(shown(value))
