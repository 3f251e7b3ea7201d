"""Policy file durations: seconds as an integer, or text such as ``90s``, ``15m``, ``1h30m``."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+)([smhd])")
_WHOLE = re.compile(r"^(?:\d+[smhd])+$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_SECONDS = 366 * 86400


def parse_duration(value: object) -> int:
    """Whole seconds, at least 1 and at most a year; a ValueError says what is accepted."""
    if isinstance(value, bool):
        raise ValueError("a duration is seconds (an integer) or text like 15m, 2h, 1h30m")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str) and _WHOLE.match(value.strip()):
        seconds = sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(value))
    else:
        raise ValueError("a duration is seconds (an integer) or text like 15m, 2h, 1h30m")
    if not 1 <= seconds <= MAX_SECONDS:
        raise ValueError("a duration is between 1 second and 366 days")
    return seconds
