"""Times in tool arguments: one instant, one canonical form, or a question (PROTOCOL rule 2).

A tool's ``normalize`` turns what a model wrote into the UTC RFC 3339 form the digest
covers, so ``2026-09-01T14:20:00+08:00``, ``2026-09-01 06:20Z`` and
``2026-09-01T14:20:00[Asia/Shanghai]`` are one instant and one digest. A time that does not
name one instant — no offset or zone, an unknown or abbreviated zone (``CST`` is three
zones), a wall time a zone's clock skips or shows twice, a date without a time of day, or
words — is a :class:`Clarification`, never a guess. An impossible date (February 30) is
:class:`~signoff.exceptions.InvalidArguments`.

Written by hand: RFC 3339 itself is a small grammar, and the parsers at hand either accept
naive times silently (``datetime.fromisoformat``) or guess zones (``dateutil``), which is
exactly what must not happen here. Zones come from the IANA database (``zoneinfo``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from signoff.catalog._types import Clarification
from signoff.exceptions import InvalidArguments

MAX_TIME_TEXT = 64
_TIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,6}))?)?"
    r"\s*(?P<offset>[Zz]|[+-]\d{2}:\d{2})?"
    r"(?:\s*\[(?P<zone>[^\]]{1,64})\])?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}")
_EXAMPLE = "2026-09-01T14:20:00+08:00, 2026-09-01T06:20:00Z or 2026-09-01T14:20:00[Asia/Shanghai]"


def normalize_time(text: str, *, field: str) -> str | Clarification:
    """``text`` as UTC RFC 3339 (``2026-09-01T06:20:00Z``), or the question to ask.

    Accepted: RFC 3339 with ``Z`` or an offset (a space for ``T`` and seconds left out
    are tolerated), or a wall time with an IANA zone in brackets (RFC 9557), with or
    without an offset that must then agree with the zone.
    """
    if len(text) > MAX_TIME_TEXT:
        raise InvalidArguments(f"{field} is longer than {MAX_TIME_TEXT} characters", field=field)
    written = text.strip()
    match = _TIME.fullmatch(written)
    if match is None:
        what = "has no time of day" if _DATE.fullmatch(written) else "is not a date and time"
        return Clarification(f"{field} {what} ({text!r}). Give it as {_EXAMPLE}.", field=field)
    wall = _wall_time(match, field)
    offset, zone_name = match["offset"], match["zone"]
    if zone_name is not None:
        return _in_zone(wall, offset, zone_name, text, field)
    if offset is None:
        return Clarification(
            f"{field} {text!r} names no time zone: which one is it in? Give it as {_EXAMPLE}.",
            field=field,
        )
    return utc_text(wall.replace(tzinfo=_fixed(offset, field)))


def utc_text(moment: datetime) -> str:
    """An aware time in the canonical form: UTC, seconds always, microseconds when set."""
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def parse_utc(text: str) -> datetime:
    """A canonical time (as :func:`normalize_time` writes it) back to an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def display_time(text: str, zone: str) -> str:
    """A canonical time as a person in ``zone`` reads it, offset shown:
    ``2026-09-01 14:20:00 +08:00``."""
    local = parse_utc(text).astimezone(ZoneInfo(zone))
    return f"{local:%Y-%m-%d %H:%M:%S} {_offset_text(local.utcoffset())}"


def _wall_time(match: re.Match[str], field: str) -> datetime:
    fraction = (match["fraction"] or "").ljust(6, "0")
    try:
        year, month, day = (int(part) for part in match["date"].split("-"))
        return datetime(
            year,
            month,
            day,
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"] or 0),
            int(fraction or 0),
        )
    except ValueError as exc:
        raise InvalidArguments(f"{field} is not a real date and time: {exc}", field=field) from None


def _fixed(offset: str, field: str) -> tzinfo:
    if offset in ("Z", "z"):
        return UTC
    sign = -1 if offset[0] == "-" else 1
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise InvalidArguments(f"{field} has an impossible offset {offset}", field=field)
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _in_zone(
    wall: datetime, offset: str | None, zone_name: str, text: str, field: str
) -> str | Clarification:
    zone = _zone(zone_name)
    if zone is None:
        return Clarification(
            f"{field} names the time zone {zone_name!r}, which is not an IANA zone name "
            f"(abbreviations such as CST name several zones). Give it as {_EXAMPLE}.",
            field=field,
        )
    if offset is not None:
        moment = wall.replace(tzinfo=_fixed(offset, field))
        if moment.utcoffset() != moment.astimezone(zone).utcoffset():
            return Clarification(
                f"{field} {text!r}: the offset {offset} is not {zone_name}'s at that time. "
                "Which one is meant?",
                field=field,
            )
        return utc_text(moment)
    early, late = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    if early.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
        return Clarification(
            f"{field} {text!r} does not exist in {zone_name} (the clocks skip it): "
            "which time is meant?",
            field=field,
        )
    if early.utcoffset() != late.utcoffset():
        return Clarification(
            f"{field} {text!r} happens twice in {zone_name} (the clocks go back): give the "
            f"offset, {_offset_text(early.utcoffset())} or {_offset_text(late.utcoffset())}.",
            field=field,
        )
    return utc_text(early)


def _zone(name: str) -> ZoneInfo | None:
    """The IANA zone ``name``, or None for anything else (never a file path)."""
    if name == "UTC":
        return ZoneInfo("UTC")
    if not _ZONE_NAME.fullmatch(name) or (name.upper() == name and "/" not in name):
        return None  # bare upper-case names (CST, IST, EST) are abbreviations, not zones
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _offset_text(offset: timedelta | None) -> str:
    total = int((offset or timedelta(0)).total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    hours, minutes = divmod(abs(total), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"
