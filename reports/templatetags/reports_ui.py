"""Template helpers for the report pages: `{% load reports_ui %}`."""

from __future__ import annotations

from django import template

from ..forms import WEEKDAYS, schedule_fields

register = template.Library()


@register.filter
def schedule_words(schedule: str) -> str:
    """A report's crontab in words when it is a plain daily, weekly or monthly one ("Mondays at
    08:00 UTC"), else the crontab itself ("custom: 0 */6 * * *")."""
    fields = schedule_fields(schedule or "")
    kind = fields["schedule_kind"]
    if kind == "daily":
        return f"Daily at {fields['schedule_time']} UTC"
    if kind == "weekly":
        return f"{WEEKDAYS[int(fields['schedule_weekday'])]}s at {fields['schedule_time']} UTC"
    if kind == "monthly":
        return f"Monthly on day {fields['schedule_day']} at {fields['schedule_time']} UTC"
    if kind == "custom":
        return f"custom: {schedule} (UTC)"
    return "by hand"
