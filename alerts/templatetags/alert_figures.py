"""``{% load alert_figures %}``: an alert's value in its measure's words on its pages
(`alerts.wording.figure`: "12.5%", "3 dead letters", "95 s")."""

from __future__ import annotations

from decimal import Decimal

from django import template

from alerts.models import DELIVERY_METRICS
from alerts.wording import figure

register = template.Library()


@register.filter
def is_delivery_metric(metric: str) -> bool:
    return metric in DELIVERY_METRICS


@register.filter(name="figure")
def figure_filter(value: Decimal | float | int, metric: str) -> str:
    return figure(metric, value)
