"""The person's language and time zone: gettext catalogs (Babel), CLDR amounts, local times.

Catalogs are the ``.po`` files under ``signoff/locale/`` read with Babel and compiled
in memory on first use, so no build step can leave them stale. English is the source
language. Only what a person reads changes with the locale — machine values,
digests, ids, codes and the recorded display values never do.

Times are shown in the person's IANA zone (the identity token's ``zoneinfo`` claim)
or the tenant's, always with the offset: ``2026-09-01 14:20:00 +08:00``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_currency, format_decimal, get_currency_precision
from babel.support import NullTranslations, Translations

LOCALE_DIR = Path(__file__).parent / "locale"
DEFAULT_LOCALE = "en"
SUPPORTED = ("en", "zh_CN")
UTC_ZONE = "UTC"
MAX_HEADER = 512


@cache
def translations(locale: str) -> NullTranslations:
    """The catalog of ``locale`` (English: none, the source strings)."""
    path = LOCALE_DIR / locale / "LC_MESSAGES" / "messages.po"
    if locale == DEFAULT_LOCALE or not path.is_file():
        return NullTranslations()
    with path.open("rb") as source:
        catalog = read_po(source, locale=locale)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(fp=compiled)


def supported(tag: str | None) -> str | None:
    """The supported locale a BCP 47 tag (``zh-CN``, ``zh_Hans``, ``en-GB``) asks for."""
    if not tag:
        return None
    parts = tag.strip().replace("_", "-").lower().split("-")
    if parts[0] == "en":
        return "en"
    if parts[0] == "zh" and not {"tw", "hk", "mo", "hant"} & set(parts[1:]):
        return "zh_CN"  # Simplified Chinese: zh, zh-CN, zh-Hans, zh-SG
    return None


def negotiate(claim: str | None = None, accept_language: str | None = None) -> str:
    """The identity token's ``locale`` claim if supported, else the browser's first match."""
    chosen = supported(claim)
    if chosen is not None:
        return chosen
    weighted: list[tuple[float, int, str]] = []
    for position, item in enumerate((accept_language or "")[:MAX_HEADER].split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            weighted.append((-quality, position, tag))
    for _, _, tag in sorted(weighted):
        chosen = supported(tag)
        if chosen is not None:
            return chosen
    return DEFAULT_LOCALE


def zone(name: str | None) -> ZoneInfo | None:
    """An IANA zone by name, or None when the name is not one."""
    if not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Localizer:
    """One person's language and zone: gettext for words, and the formats of times and money."""

    locale: str = DEFAULT_LOCALE
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo(UTC_ZONE))

    @property
    def html_lang(self) -> str:
        return self.locale.replace("_", "-")

    def gettext(self, message: str) -> str:
        return translations(self.locale).gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return translations(self.locale).ngettext(singular, plural, n)

    def when(self, moment: datetime) -> str:
        """``2026-09-01 14:20:00 +08:00``: local time with its offset, the same in every locale."""
        local = moment.astimezone(self.zone)
        offset = local.strftime("%z")
        return f"{local:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:]}"

    def money(self, minor: int, currency: str) -> str:
        """An amount in minor units as this locale writes it: CLDR's form (``CN¥199.00``,
        ``¥199.00``), and in Chinese the written form for yuan (``人民币 199.00 元``)."""
        digits = get_currency_precision(currency)
        amount = Decimal(minor).scaleb(-digits)
        if self.locale == "zh_CN" and currency == "CNY":
            words = format_decimal(amount, format="#,##0.00", locale=self.locale)
            return f"人民币 {words} 元"
        return format_currency(amount, currency, locale=self.locale)


def localizer(
    locale: str | None = None,
    zone_name: str | None = None,
    *,
    tenant_zone: str | None = None,
) -> Localizer:
    """The person's zone if it is a valid IANA name, else the tenant's, else UTC."""
    found = zone(zone_name) or zone(tenant_zone) or ZoneInfo(UTC_ZONE)
    return Localizer(locale if locale in SUPPORTED else DEFAULT_LOCALE, found)
