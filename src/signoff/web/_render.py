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
from contextvars import ContextVar
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from signoff._i18n import Localizer
from signoff._text import visible as shown

TEMPLATES = Path(__file__).parent / "templates"
CURRENT: ContextVar[Localizer | None] = ContextVar("signoff_page_localizer", default=None)
"""The language and zone of the page being drawn (set by :meth:`Renderer.page`)."""


def N_(message: str) -> str:
    """Marks a string for the catalog; translated where it is shown."""
    return message


# Status names as a person reads them; the machine name stays in the badge's class.
STATUS_NAMES = {
    "awaiting_confirmation": N_("Awaiting confirmation"),
    "declined": N_("Rejected"),
    "changes_requested": N_("Changes requested"),
    "cancelled": N_("Cancelled"),
    "expired": N_("Expired"),
    "confirmed": N_("Confirmed"),
    "revoked": N_("Revoked"),
    "executing": N_("Running"),
    "prepared": N_("Prepared"),
    "running": N_("Running"),
    "succeeded": N_("Succeeded"),
    "failed_retryable": N_("Failed, can be retried"),
    "failed_terminal": N_("Failed"),
    "unknown": N_("Outcome unknown"),
    "needs_attention": N_("Needs a person to check"),
}
WORDS = (
    *(N_("low"), N_("medium"), N_("high"), N_("critical"), N_("approve"), N_("reject")),
    N_("request_changes"),
    *(N_("Wrong amount"), N_("Wrong target or recipient"), N_("Against policy")),
    *(N_("Looks suspicious"), N_("Other (explain below)")),
    *(N_("approving it needs the value re-typed"), N_("approving it needs the identity provider")),
    N_("approving it is signed with the approver's passkey"),
)
"""Machine names and the usual reject reasons, shown in words (``_(name)`` in templates)."""


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
    words = STATUS_NAMES.get(value)
    return _gettext(words) if words else value.replace("_", " ").capitalize()


def current() -> Localizer:
    return CURRENT.get() or Localizer()


def _gettext(message: str) -> str:
    return current().gettext(message)


def _ngettext(singular: str, plural: str, n: int) -> str:
    return current().ngettext(singular, plural, n)


def when(moment: datetime) -> str:
    """In the person's (or tenant's) zone, with the offset: ``2026-09-01 14:20:00 +08:00``."""
    return current().when(moment)


def money(minor: object, currency: object) -> str:
    """A minor-unit amount as the person's locale writes it (beside the recorded display)."""
    if isinstance(minor, bool) or not isinstance(minor, int) or not isinstance(currency, str):
        return ""
    try:
        return current().money(minor, currency)
    except (ValueError, LookupError):
        return ""  # a currency CLDR does not know: the recorded display value stands alone


def remaining(until: datetime, now: datetime) -> str:
    """Time left in words; the countdown script refines it every second."""
    left = until - now
    if left <= timedelta(0):
        return _gettext("expired")
    minutes, seconds = divmod(int(left.total_seconds()), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return _gettext("%(h)d h %(m)d min left") % {"h": hours, "m": minutes}
    if minutes:
        return _gettext("%(m)d min %(s)d s left") % {"m": minutes, "s": seconds}
    return _gettext("%(s)d s left") % {"s": seconds}


class Renderer:
    """Renders a named template into an HTML response."""

    def __init__(self, directory: Path = TEMPLATES) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(directory),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=["jinja2.ext.i18n"],
        )
        # gettext through the page's localizer (a context variable), so one environment
        # serves every request in its own language; newstyle: autoescaped %(name)s values.
        self.env.install_gettext_callables(  # type: ignore[attr-defined]
            _gettext, _ngettext, newstyle=True
        )
        self.env.filters.update(
            visible=visible, tokens=tokens, machine=machine, when=when, human=human
        )
        self.env.globals.update(remaining=remaining, money=money)

    def page(
        self,
        template: str,
        context: Mapping[str, Any],
        *,
        status: int = 200,
        localizer: Localizer | None = None,
    ) -> HTMLResponse:
        chosen = localizer or Localizer()
        token = CURRENT.set(chosen)
        try:
            html = self.env.get_template(template).render(
                {"html_lang": chosen.html_lang, **context}
            )
        finally:
            CURRENT.reset(token)
        response = HTMLResponse(html, status_code=status)
        response.headers["Content-Language"] = chosen.html_lang
        return response
