"""The one prompt-template environment: every model prompt is a Jinja template in ``fastslow/prompts``.

Sage's planning and grounding prompts (SwiftSage / paper §3), the Critic's prompt (SRM §3.2), AMM's
delimited memory block (§3.1) and the Flan-T5 Swift input (§3) load from the same package directory
with the same undefined-variable policy: a variable a template names but the caller did not pass is an
error (``StrictUndefined``), never an empty string in a prompt. Prompts are plain text (no autoescape).

Two layout settings differ between templates and are kept as the prompts were written and measured
(token counts, cached prefixes): Sage's templates trim the newline after a block tag and the spaces
before it (``trim``); the Critic's prompt keeps its final newline (``keep_trailing_newline``). Each
combination is built once and cached, and so is each loaded template (prompts are rendered every step).
The HTML report (eval/report.py) has its own autoescaping environment: it renders a page, not a prompt.
"""

from __future__ import annotations

from functools import cache

import jinja2

PROMPTS_PACKAGE = "fastslow"
PROMPTS_DIR = "prompts"


@cache
def prompt_env(*, trim: bool = False, keep_trailing_newline: bool = False) -> jinja2.Environment:
    """The prompt environment with the given layout (one cached instance per combination)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(PROMPTS_PACKAGE, PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        trim_blocks=trim,
        lstrip_blocks=trim,
        keep_trailing_newline=keep_trailing_newline,
        autoescape=False,
    )


@cache
def prompt_template(name: str, *, trim: bool = False, keep_trailing_newline: bool = False) -> jinja2.Template:
    """The loaded template ``prompts/<name>`` (cached)."""
    return prompt_env(trim=trim, keep_trailing_newline=keep_trailing_newline).get_template(name)
