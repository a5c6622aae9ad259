"""Instants given on the command line: RFC 3339, `now`, or relative to now (`-7d`); the bounds
before and after any data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from pipelines.errors import ConfigError

FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
"""Before any data: a kept table or detector cut there is built again from all history."""

FAR_FUTURE = datetime(9000, 1, 1, tzinfo=UTC)
"""After any data: `$changed_from` when nothing was loaded since the last compute."""

_RELATIVE = re.compile(r"^-(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """RFC 3339 (`2026-11-23T00:00:00Z`), `now`, or relative to now (`-7d`, `-90m`), as UTC.

    A timestamp without an offset is taken as UTC.
    """
    now = now or datetime.now(UTC)
    text = text.strip()
    if text == "now":
        return now
    match = _RELATIVE.match(text)
    if match:
        return now - timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2)])
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise ConfigError(
            f"`{text}` is not a time.",
            "Use RFC 3339 (2026-11-23T00:00:00Z), `now`, or a relative time such as -7d, -12h, -30m.",
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
