"""A time on a page, one way everywhere: `{% load times %}{% at value %}`. The server knows only UTC; the
reader's browser shows it in their zone (base.html's script), with UTC on hover and without JavaScript."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template

register = template.Library()


def instant(value: Any) -> datetime | None:
    """A datetime, or an ISO 8601 text as the store and the snapshots write them, in UTC (None: none)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    value = value.replace(microsecond=0)  # shown to the minute; the second is enough for a machine
    return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)


@register.inclusion_tag("classroom/time.html")
def at(value: Any, empty: str = "never") -> dict[str, Any]:
    """`value` as a <time> the page's script shows in the reader's zone; `empty` when there is none."""
    return {"at": instant(value), "empty": empty}
