"""HTML rendering: Jinja2 templates with autoescaping on and undefined names refused.

Everything a model or a requester could have written (the rationale, a
refund reason, any preview text) is escaped by Jinja2 and passed through
``visible``, which shows bidirectional overrides and other invisible
characters as ``⟨U+202E⟩`` so text cannot be made to read differently
from what it says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from signoff._text import visible as shown

TEMPLATES = Path(__file__).parent / "templates"
# Status names as a person reads them; the machine name stays in the badge's class.
STATUS_NAMES = {
    "awaiting_confirmation": "Awaiting confirmation",
    "declined": "Rejected",
    "cancelled": "Cancelled",
    "expired": "Expired",
    "confirmed": "Confirmed",
    "revoked": "Revoked",
    "executing": "Running",
    "prepared": "Prepared",
    "running": "Running",
    "succeeded": "Succeeded",
    "failed_retryable": "Failed, can be retried",
    "failed_terminal": "Failed",
    "unknown": "Outcome unknown",
    "needs_attention": "Needs a person to check",
}


def visible(text: object) -> str:
    """Format and control characters (Unicode Cf/Cc, except newline and tab) made visible."""
    return shown(text, keep="\n\t")


def tokens(text: object) -> Markup:
    """Escaped visible text with each run of non-space in its own box, so lines wrap between
    tokens: an address or an id breaks only when it alone is wider than the line."""
    parts = re.split(r"(\S+)", visible(text))
    return Markup("").join(
        Markup('<span class="tok">{}</span>').format(part) if i % 2 else escape(part)
        for i, part in enumerate(parts)
    )


def machine(value: object) -> str:
    """The canonical value as JSON, exactly as the digest covers it."""
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True))


def human(status: object) -> str:
    """A status (enum or its value) in words."""
    value = str(getattr(status, "value", status))
    return STATUS_NAMES.get(value, value.replace("_", " ").capitalize())


def when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def remaining(until: datetime, now: datetime) -> str:
    """Time left in words; the countdown script refines it every second."""
    left = until - now
    if left <= timedelta(0):
        return "expired"
    minutes, seconds = divmod(int(left.total_seconds()), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min left"
    return f"{minutes} min {seconds} s left" if minutes else f"{seconds} s left"


class Renderer:
    """Renders a named template into an HTML response."""

    def __init__(self, directory: Path = TEMPLATES) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(directory),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(
            visible=visible, tokens=tokens, machine=machine, when=when, human=human
        )
        self.env.globals.update(remaining=remaining)

    def page(self, template: str, context: Mapping[str, Any], *, status: int = 200) -> HTMLResponse:
        html = self.env.get_template(template).render(context)
        return HTMLResponse(html, status_code=status)
