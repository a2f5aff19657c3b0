"""Template helpers shared by every dashboard page: `{% load dashboard %}`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from config import money
from config.jsoncodec import shown
from config.money import Amount

register = template.Library()


@register.simple_tag
def timestamp(value: datetime | None, empty: str = "—", short: bool = False) -> str:
    """A `<time>` the browser shows in its own time zone (static/dashboard/app.js), UTC on hover.

    ``short``: as a dense list wants it (the feed): the time with seconds when it is today, else
    the day and the time. Without JavaScript it reads as UTC, which is still right.
    """
    if value is None:
        return format_html('<span class="muted">{}</span>', empty)
    utc = value.astimezone(UTC) if timezone.is_aware(value) else value
    return format_html(
        '<time datetime="{}" title="{} UTC"{}>{} UTC</time>',
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        mark_safe(" data-short") if short else "",
        utc.strftime("%Y-%m-%d %H:%M"),
    )


@register.filter
def usd(value: Amount | None, exact: str = "") -> str:
    """``{{ cost|usd }}``: money as every page shows it (config.money); ``{{ cost|usd:"exact" }}`` keeps
    every stored digit."""
    return money.usd(value, exact=exact == "exact")


@register.simple_tag
def cost_text(cost: Amount | None, count: int, unpriced: int) -> str:
    """``{% cost_text cost count unpriced %}``: a sum of costs as far as it is known ("3 unpriced",
    "$1.20 (2 of 5 unpriced)")."""
    return money.cost_text(cost, count=count or 0, unpriced=unpriced or 0)


@register.filter
def as_shown(value: Any) -> str:
    """``{{ value|as_shown }}``: a JSON value (a metadata value) as text, never Python's repr."""
    return shown(value)


@register.filter
def thousands(value: int | None) -> str:
    """``12,345``: a count people read (no locale: the pages are in English)."""
    return "—" if value is None else f"{value:,}"
