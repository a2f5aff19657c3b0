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
