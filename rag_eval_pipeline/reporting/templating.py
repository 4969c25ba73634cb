"""The jinja2 environment of the HTML report (`reporting/templates/`).

Autoescaping is on for every template, and every value a template writes first has its
invisible and control characters shown as escapes (`finalize`: `shown`), so untrusted text is
escaped for HTML by jinja2 and for display by the house rule, whatever the template.
Undefined names fail loudly (`StrictUndefined`). The filters format chart coordinates: `f1` a
number with one decimal, `points` an SVG point list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jinja2
from markupsafe import Markup

from rag_eval_pipeline.reporting.charts import REGRESSION_COLOR
from rag_eval_pipeline.text.escaping import terminal_text


def shown(value: object) -> object:
    """A template value with its invisible and control characters shown as `\\uNNNN` and
    `\\xNN` escapes (`escaping.terminal_text`: a bidi control reorders a page as it does a
    terminal, an escape character hides in it and makes the SVG ill-formed XML). The output of
    a macro passes as it is: every value in it was shown already."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return terminal_text(value)
    return value


def one_decimal(value: float) -> str:
    """A coordinate with one decimal (`12.0`)."""
    return f"{value:.1f}"


def svg_points(points: Iterable[tuple[float, float]]) -> str:
    """An SVG `points` list: `x,y` pairs with one decimal, space-separated."""
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def environment() -> jinja2.Environment:
    """The report's environment: package templates, autoescape, `shown` on every value."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rag_eval_pipeline.reporting", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=shown,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(f1=one_decimal, points=svg_points)
    env.globals.update(regression_color=REGRESSION_COLOR)
    return env


TEMPLATES = environment()


def render(template: str, **context: Any) -> str:
    """The page `template` rendered with `context`."""
    return TEMPLATES.get_template(template).render(**context)


def render_macro(template: str, macro: str, *args: Any) -> str:
    """The output of `macro` of `template` called with `args` (one part of the page alone)."""
    return str(getattr(TEMPLATES.get_template(template).module, macro)(*args))
