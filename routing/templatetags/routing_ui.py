"""Template helpers for the routing pages: `{% load routing_ui %}`."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def percent(rate: Any) -> str:
    """0.25 → "25%", 0.125 → "12.5%", 1 → "100%"."""
    try:
        value = float(rate) * 100
    except (TypeError, ValueError):
        return str(rate)
    return f"{value:.4g}%"


@register.filter
def index_of(items: Any, i: int) -> Any:
    """``items|index_of:j``: the j-th item, or "" past the end."""
    try:
        return items[i]
    except (IndexError, KeyError, TypeError):
        return ""


@register.filter
def as_json(value: Any) -> str:
    """A condition value as the API spells it: ``true``, ``"gpt-4*"``, ``[">0.01", "<1"]``."""
    return json.dumps(value, ensure_ascii=False)


@register.filter
def short_id(trace_id: Any, keep: int = 12) -> str:
    """A long trace id as its prefix and last ``keep`` characters ("trc_…bbf5833537"; a UUIDv7's
    start is its time, alike for traces close together); short ids (typed ones) as they are. The
    page gives the whole id beside it (title, link, label)."""
    text = str(trace_id)
    prefix, _, rest = text.rpartition("_")
    if len(rest) <= keep + 4:
        return text
    return f"{prefix}_…{rest[-keep:]}" if prefix else f"…{rest[-keep:]}"
