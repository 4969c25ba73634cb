"""The configuration of a system under test behind HTTP: request template and reply selectors.

The `http:` block of `dataset.yaml` (or the file named by `RAG_EVAL_SYSTEM_HTTP`, with the url
overridable by `RAG_EVAL_SYSTEM_URL`) is an `HttpSystemConfig`, a configuration file model
(`storage.config_files.ConfigModel`: a key it does not know is refused, naming the closest valid
one; its JSON Schema is `docs/schemas/http.schema.json`). It holds:

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
  (20), `breaker_min_calls` (10, 0: no breaker, at most `breaker_window`),
  `breaker_failure_ratio` (0.5), `breaker_cooldown_s` (30); and the system's `name` (default:
  the URL without credentials, query or fragment).

`http_config_problems` lists every problem of a block as (key, problem) pairs, the problem
naming the offending value (capped, and redacted: a URL's password never reaches a message);
`HttpSystemConfig.from_mapping` raises them as one line naming the source file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from string import Template
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import yaml
from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext import parse as parse_jsonpath
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from rag_eval_pipeline.llm.failures import RetryPolicy
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.storage.config_files import (
    ConfigError,
    ConfigModel,
    dotted,
    shown,
    unknown_key,
)
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


def _refused(problem: str, value: Any) -> ValueError:
    """A field validator's error: `<problem>, got <value>` (capped; redacted with the rest)."""
    return ValueError(f"{problem}, got {shown(value)}")


def _http_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _refused("must be an http:// or https:// URL with a host", url)
    return url


def _upper(method: Any) -> Any:
    return method.upper() if isinstance(method, str) else method


def _none_as_empty(mapping: Any) -> Any:
    return {} if mapping is None else mapping


def _header_name(name: str) -> str:
    if not _HEADER_NAME.fullmatch(name):
        raise _refused("is not a valid header name", name)
    return name


def _header_value(value: str) -> str:
    if _CONTROL.search(value):
        raise _refused("must be one line of text", value)
    bad = [v for v in referenced_variables(value) if not _VARIABLE_NAME.fullmatch(v)]
    if bad:
        raise ValueError(
            f"may reference only ${{{HEADER_VARIABLE_PREFIX}...}} variables (upper case), "
            f"got ${{{bad[0]}}}"
        )
    return value


def _scalar_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, bool | int | float) else value


def _template_text(text: str) -> str:
    problems = _template_problems(text, ())
    if problems:
        raise ValueError(problems[0][1])
    return text


def _jsonpath(selector: str) -> str:
    if not selector.strip():
        raise _refused("must be a JSONPath expression", selector)
    try:
        parse_jsonpath(selector)
    except JSONPathError as error:
        raise _refused(f"is not a valid JSONPath ({error})", selector) from None
    return selector


def _system_name(name: str) -> str:
    if not name.strip():
        raise _refused("must be a non-empty system name", name)
    return name


HeaderName = Annotated[StrictStr, AfterValidator(_header_name)]
HeaderValue = Annotated[StrictStr, AfterValidator(_header_value)]
ParamValue = Annotated[StrictStr, BeforeValidator(_scalar_as_text), AfterValidator(_template_text)]
Selector = Annotated[StrictStr, AfterValidator(_jsonpath)]
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]


def _setting(description: str, default: Any, **constraints: Any) -> Any:
    """A field: `description` completes its type error (`must be <description>, got <value>`)."""
    return Field(default, description=description, **constraints)


class HttpSystemConfig(ConfigModel):
    """A validated `http:` block (see the module docstring for each field)."""

    url: Annotated[StrictStr, AfterValidator(_http_url)] = Field(
        description="an http:// or https:// URL with a host"
    )
    method: Annotated[Literal[METHODS], BeforeValidator(_upper)] = _setting(  # type: ignore[valid-type]
        f"one of {', '.join(METHODS)}", "POST"
    )
    headers: Annotated[dict[HeaderName, HeaderValue], BeforeValidator(_none_as_empty)] = _setting(
        "a mapping of header names to one line of text each", {}
    )
    body: Any = _setting("a JSON object or array (or its JSON text), or null", DEFAULT_BODY)
    params: Annotated[dict[StrictStr, ParamValue], BeforeValidator(_none_as_empty)] = _setting(
        "a mapping of parameter names to text", {}
    )
    answer: Selector = _setting("a JSONPath expression", "$.answer")
    retrieved_doc_ids: Selector | None = _setting("a JSONPath expression", "$.retrieved_doc_ids")
    contexts: Selector | None = _setting("a JSONPath expression", "$.contexts")
    retrieval_latency_ms: Selector | None = _setting("a JSONPath expression", None)
    generation_latency_ms: Selector | None = _setting("a JSONPath expression", None)
    generator_model: Selector | None = _setting("a JSONPath expression", None)
    timeout_s: Number = _setting("a number > 0", 30.0, gt=0)
    max_concurrency: StrictInt = _setting("an integer >= 1", 4, ge=1)
    max_retries: StrictInt = _setting("an integer >= 0", 3, ge=0)
    backoff_base_s: Number = _setting("a number >= 0", 1.0, ge=0)
    rate_limit_budget_s: Number = _setting("a number >= 0", 300.0, ge=0)
    breaker_window: StrictInt = _setting("an integer >= 1", 20, ge=1)
    breaker_min_calls: StrictInt = _setting("an integer >= 0", 10, ge=0, validate_default=True)
    breaker_failure_ratio: Number = _setting("a number > 0 and <= 1", 0.5, gt=0, le=1)
    breaker_cooldown_s: Number = _setting("a number >= 0", 30.0, ge=0)
    name: Annotated[StrictStr, AfterValidator(_system_name)] | None = _setting(
        "a non-empty system name", None
    )

    @model_validator(mode="before")
    @classmethod
    def _no_body_for_get(cls, block: Any) -> Any:
        """A block without `body`: the default body, none for a GET."""
        if isinstance(block, Mapping) and "body" not in block:
            is_get = _upper(block.get("method")) == "GET"
            return {**block, "body": None if is_get else DEFAULT_BODY}
        return block

    @field_validator("body")
    @classmethod
    def _body_template(cls, body: Any, info: ValidationInfo) -> Any:
        """The body parsed (from JSON text), every string a template over `PLACEHOLDERS`."""
        if body is None:
            return None
        if info.data.get("method") == "GET":
            raise ValueError("a GET request has no body: use params")
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except json.JSONDecodeError as error:
                raise _refused(f"is not valid JSON ({error.msg})", body) from None
        if not isinstance(body, Mapping | list):
            raise _refused("must be a JSON object or array", body)
        problems = _template_problems(body, ())
        if problems:  # each at its place in the body: `http.body.meta.text`
            raise ValidationError.from_exception_data(
                "body",
                [
                    InitErrorDetails(type=_problem_error(text), loc=where, input=body)
                    for where, text in problems
                ],
            )
        return body

    @field_validator("breaker_min_calls")
    @classmethod
    def _within_window(cls, min_calls: int, info: ValidationInfo) -> int:
        window = info.data.get("breaker_window")
        if window is not None and min_calls > window:
            raise ValueError(
                f"breaker_min_calls ({min_calls}) must be at most breaker_window ({window})"
            )
        return min_calls

    @classmethod
    def from_mapping(cls, block: Any, source: str) -> HttpSystemConfig:
        """The configuration of `block`; `ConfigError` (one line) naming `source`, and each key
        and value wrong."""
        config, problems = _checked(block, require_url=True)
        if config is None:
            listed = "; ".join(f"{key}: {problem}" for key, problem in problems)
            raise ConfigError(f"{source}: invalid http system configuration: {listed}")
        return config

    @property
    def selectors(self) -> dict[str, str]:
        """Each configured selector's JSONPath, by key (`answer`, `contexts`, ...)."""
        chosen = {key: getattr(self, key) for key in SELECTOR_KEYS}
        return {key: path for key, path in chosen.items() if path is not None}

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
    """What is wrong with an `http:` block: (key, problem naming the value) pairs; without
    `require_url` the url may be absent (`RAG_EVAL_SYSTEM_URL` may give it)."""
    return _checked(block, require_url=require_url)[1]


def http_block_schema() -> dict[str, Any]:
    """The JSON Schema of `dataset.yaml`'s `http:` block: the configuration's, its url optional
    (`RAG_EVAL_SYSTEM_URL` may give it)."""
    schema = HttpSystemConfig.model_json_schema()
    return {key: value for key, value in schema.items() if key not in ("required", "title")}


def _checked(
    block: object, *, require_url: bool
) -> tuple[HttpSystemConfig | None, list[tuple[str, str]]]:
    """`block` validated, or None and its problems (every one, each redacted)."""
    try:
        return HttpSystemConfig.model_validate(block), []
    except ValidationError as error:
        problems = [
            _problem(problem)
            for problem in sorted(
                error.errors(include_url=False), key=lambda p: p["type"] != "extra_forbidden"
            )
            if require_url or (problem["type"], tuple(problem["loc"])) != ("missing", ("url",))
        ]
        return (None, problems) if problems or require_url else (None, [])


def _problem(problem: ErrorDetails) -> tuple[str, str]:
    """One validation problem as (`http.<key>`, its text), redacted."""
    location = tuple(problem["loc"])
    key = f"http.{dotted(location)}" if location else "http"
    kind, value = problem["type"], problem.get("input")
    if kind == "extra_forbidden":
        name = str(location[-1])
        text = RETIRED_KEYS.get(name) or unknown_key(HttpSystemConfig, location)
    elif kind == "missing":
        text = "is required"
    elif kind == "value_error":
        text = str(problem["msg"]).removeprefix("Value error, ")
    elif not location:
        text = f"must be a mapping of http settings, got {shown(value)}"
    else:
        field = HttpSystemConfig.model_fields.get(str(location[0]))
        nested = len(location) > 1 or field is None or field.description is None
        expected = str(problem["msg"]).removeprefix("Input should be ") if nested else None
        text = f"must be {expected or field.description}, got {shown(value)}"  # type: ignore[union-attr]
    return key, redact(text)


def _problem_error(text: str) -> PydanticCustomError:
    """A problem found inside a field as a validation error of type `value_error`."""
    return PydanticCustomError("value_error", "{problem}", {"problem": text})


def resolve_headers(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The header values with their `${RAG_EVAL_HTTP_*}` references replaced from `environ`;
    `ValueError` naming the header and the variable (never a value) when one is unset."""
    resolved = {}
    for name, template in headers.items():
        missing = [v for v in referenced_variables(template) if v not in environ]
        if missing:
            raise ValueError(
                f"http header {redact(shown(name))} references environment variable(s) "
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


def _template_problems(template: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """Every string of `template` (parsed JSON) must be a valid `string.Template` over
    `PLACEHOLDERS`, every number finite, every key text: (location, problem) pairs."""
    if isinstance(template, Mapping):
        keys = [
            (path, f"has a key that is not text: {shown(key)}")
            for key in template
            if not isinstance(key, str)
        ]
        return keys + [p for k, v in template.items() for p in _template_problems(v, (*path, k))]
    if isinstance(template, list):
        return [p for i, v in enumerate(template) for p in _template_problems(v, (*path, i))]
    if isinstance(template, float) and not math.isfinite(template):
        return [(path, f"must be a finite number, got {shown(template)}")]
    if not isinstance(template, str):
        if template is None or isinstance(template, bool | int | float):
            return []
        return [(path, f"must be JSON (text, number, true/false, null), got {shown(template)}")]
    parsed = Template(template)
    unknown = [name for name in parsed.get_identifiers() if name not in PLACEHOLDERS]
    if not parsed.is_valid() or unknown:
        allowed = ", ".join(f"${name}" for name in PLACEHOLDERS)
        return [(path, f"may use only {allowed} (and $$ for $), got {shown(template)}")]
    return []
