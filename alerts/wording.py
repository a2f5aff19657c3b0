"""How an alert reads, on its pages and in its e-mails alike: "Cost ≥ $0.50 this day (UTC), for
model gpt-4o". Amounts through the one money formatter (config.money)."""

from __future__ import annotations

from decimal import Decimal

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.money import usd

from .models import Alert, Metric, WindowType


def figure(metric: str, value: Decimal | float | int) -> str:
    """A value of the alert's measure: "$0.50", "1,200 tokens", "3 traces", "12.5%", "3 dead
    letters", "95 s"."""
    if metric == Metric.COST:
        return usd(value)
    if metric == Metric.DELIVERY_FAILURE_RATE:
        return f"{float(value) * 100:.4g}%"
    if metric == Metric.DEAD_LETTERS:
        return f"{int(value):,} dead letter" + ("" if int(value) == 1 else "s")
    if metric == Metric.OLDEST_PENDING_S:
        return f"{int(value):,} s"
    return f"{int(value):,}" + (" tokens" if metric == Metric.TOKENS else " traces")


def condition(alert: Alert) -> str:
    if alert.metric == Metric.COST:
        return f"Cost ≥ {usd(alert.threshold)}"
    if alert.metric == Metric.TOKENS:
        return f"Tokens ≥ {int(alert.threshold):,}"
    if alert.metric == Metric.DELIVERY_FAILURE_RATE:
        return f"Delivery failure rate ≥ {figure(alert.metric, alert.threshold)}"
    if alert.metric == Metric.DEAD_LETTERS:
        return f"{figure(alert.metric, alert.threshold)} or more"
    if alert.metric == Metric.OLDEST_PENDING_S:
        return f"A delivery waiting ≥ {figure(alert.metric, alert.threshold)}"
    return f"{int(alert.threshold):,}+ unpriced or usage-less traces"


def window_words(alert: Alert) -> str:
    if alert.metric == Metric.OLDEST_PENDING_S:
        return "now"
    if alert.window_type == WindowType.ROLLING:
        return f"in the last {alert.window_minutes} minutes"
    return f"this {alert.period} (UTC)"


def describe(alert: Alert) -> SafeString:
    """The whole condition as HTML, the scope's values in `<code>`."""
    scope = format_html_join(" and ", "{} <code>{}</code>", ((k, v) for k, v in (alert.scope or {}).items()))
    return format_html("{} {}{}{}", condition(alert), window_words(alert), ", for " if alert.scope else "", scope)


def describe_text(alert: Alert) -> str:
    """The same as plain text (e-mails)."""
    scope = " and ".join(f"{k} {v}" for k, v in (alert.scope or {}).items())
    return f"{condition(alert)} {window_words(alert)}" + (f", for {scope}" if scope else "")
