"""Template helpers shared by every dashboard page: `{% load dashboard %}`."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def timestamp(value: datetime | None, empty: str = "—") -> str:
    """A `<time>` the browser shows in its own time zone (static/dashboard/app.js), UTC on hover.

    Without JavaScript it reads as UTC, which is still right.
    """
    if value is None:
        return format_html('<span class="muted">{}</span>', empty)
    utc = value.astimezone(UTC) if timezone.is_aware(value) else value
    return format_html(
        '<time datetime="{}" title="{} UTC">{} UTC</time>',
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        utc.strftime("%Y-%m-%d %H:%M"),
    )
