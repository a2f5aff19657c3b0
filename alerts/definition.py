"""What an alert asks for, checked once for the API and the dashboard form: `parse_alert` returns
an `AlertSpec` or raises `AlertError` with errors per field (``window.minutes``, ``scope.model``,
``notify.webhooks[0].url`` …)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from config.fields import has_control_characters
from integrations.urlguard import url_refusal

from .models import DELIVERY_METRICS, Metric, Period, WindowType

SCOPE_KEYS = ("user_id", "model", "tag", "environment", "service_name", "integration")
TRACE_METRICS = (Metric.COST, Metric.TOKENS)
METRICS = (*TRACE_METRICS, Metric.DELIVERY_FAILURE_RATE, Metric.DEAD_LETTERS, Metric.OLDEST_PENDING_S)
FIELDS = frozenset({"name", "metric", "threshold", "window", "scope", "notify", "enabled"})
BUILTIN_FIXED = FIELDS - {"enabled", "notify", "threshold"}  # what the built-in alert keeps as it is
MAX_WINDOW_MINUTES = 31 * 24 * 60
MAX_EMAILS = 50
MAX_WEBHOOKS = 10
MAX_TEXT = 200
MAX_URL = 2000
# Thresholds are kept to 10 decimal places (the model's DecimalField): a smaller one would be stored
# as 0 and fire on nothing at all.
THRESHOLD_PLACES = Decimal("1e-10")
MIN_THRESHOLD = THRESHOLD_PLACES
MAX_THRESHOLD = Decimal("1e13")


class AlertError(ValueError):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__(errors)


@dataclass(frozen=True)
class AlertSpec:
    name: str
    metric: str
    threshold: Decimal
    window_type: str
    window_minutes: int | None = None
    period: str = ""
    scope: dict[str, str] = field(default_factory=dict)
    emails: tuple[str, ...] = ()
    webhooks: tuple[str, ...] = ()
    enabled: bool = True

    @property
    def window(self) -> dict[str, Any]:
        if self.window_type == WindowType.ROLLING:
            return {"type": "rolling", "minutes": self.window_minutes}
        return {"type": "calendar", "period": self.period}


def parse_alert(data: Mapping[str, Any], *, base: AlertSpec | None = None) -> AlertSpec:
    """Check all of an alert (``base`` None) or the fields ``data`` gives over ``base``."""
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {} if base is None else dict(base.__dict__)
    for key in sorted(set(data) - FIELDS):
        errors[key] = ["Unknown field."]
    if base is None:
        for key in ("name", "metric", "threshold", "window"):
            if key not in data:
                errors[key] = ["This field is required."]
    if "name" in data:
        name = data["name"]
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_TEXT or has_control_characters(name):
            errors["name"] = ["A name, 1-200 characters, on one line (no control characters)."]
        else:
            values["name"] = name.strip()
    if "metric" in data:
        if data["metric"] not in METRICS:
            errors["metric"] = [f"Use one of {', '.join(METRICS)}."]
        else:
            values["metric"] = data["metric"]
    if "threshold" in data:
        threshold = _threshold(data["threshold"])
        if threshold is None:
            errors["threshold"] = ["A number from 0.0000000001 to below 10^13 (a JSON number, not a string)."]
        else:
            values["threshold"] = threshold
    if "window" in data:
        _window(data["window"], values, errors)
    if "scope" in data:
        _scope(data["scope"], values, errors)
    if "notify" in data:
        _notify(data["notify"], values, errors)
    if "enabled" in data:
        if not isinstance(data["enabled"], bool):
            errors["enabled"] = ["true or false."]
        else:
            values["enabled"] = data["enabled"]
    if not errors:
        _metric_and_scope(values, errors)
    if errors:
        raise AlertError(errors)
    return AlertSpec(**values)


def _metric_and_scope(values: dict[str, Any], errors: dict[str, list[str]]) -> None:
    """A delivery metric measures one integration's deliveries: its scope is that integration and
    nothing else; a trace metric (cost, tokens) takes no integration. A failure rate is a fraction."""
    metric, scope = values.get("metric"), values.get("scope") or {}
    if metric in DELIVERY_METRICS:
        if not scope.get("integration"):
            errors["scope.integration"] = [f'{metric} measures one integration: give {{"integration": "<name>"}}.']
        for key in sorted(set(scope) - {"integration"}):
            errors[f"scope.{key}"] = [f"Not for {metric}: it measures deliveries, scoped by integration only."]
        if metric == Metric.DELIVERY_FAILURE_RATE and values.get("threshold", 0) > 1:
            errors["threshold"] = ["A failure rate is a fraction from 0 to 1 (0.05 is 5%)."]
    elif "integration" in scope and metric is not None:
        errors["scope.integration"] = [
            f"Only for {', '.join(sorted(DELIVERY_METRICS))}: {metric} measures traces, not deliveries."
        ]


def _threshold(value: Any) -> Decimal | None:
    """A JSON number (int or float; the dashboard form passes a Decimal) within the range, rounded to
    the 10 places the threshold is kept to; None otherwise (strings, booleans, NaN, infinities)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite() or not MIN_THRESHOLD <= number < MAX_THRESHOLD:
        return None
    return number.quantize(THRESHOLD_PLACES)


def _window(window: Any, values: dict[str, Any], errors: dict[str, list[str]]) -> None:
    if not isinstance(window, dict) or window.get("type") not in (WindowType.ROLLING, WindowType.CALENDAR):
        errors["window"] = [
            '{"type": "rolling", "minutes": N} or {"type": "calendar", "period": "day"|"week"|"month"}.'
        ]
        return
    extra = set(window) - {"type", "minutes" if window["type"] == WindowType.ROLLING else "period"}
    if extra:
        errors["window"] = [f"Unknown for a {window['type']} window: {', '.join(sorted(extra))}."]
        return
    if window["type"] == WindowType.ROLLING:
        minutes = window.get("minutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or not 1 <= minutes <= MAX_WINDOW_MINUTES:
            errors["window.minutes"] = [f"Whole minutes, 1 to {MAX_WINDOW_MINUTES} (31 days)."]
            return
        values.update(window_type=WindowType.ROLLING, window_minutes=minutes, period="")
    else:
        if window.get("period") not in Period.values:
            errors["window.period"] = ["day, week or month."]
            return
        values.update(window_type=WindowType.CALENDAR, window_minutes=None, period=window["period"])


def _scope(scope: Any, values: dict[str, Any], errors: dict[str, list[str]]) -> None:
    if scope is None:
        values["scope"] = {}
        return
    if not isinstance(scope, dict):
        errors["scope"] = [f"An object with any of {', '.join(SCOPE_KEYS)}."]
        return
    out = {}
    for key, value in scope.items():
        if key not in SCOPE_KEYS:
            errors[f"scope.{key}"] = [f"Unknown; use {', '.join(SCOPE_KEYS)}."]
        elif value is None or value == "":
            continue
        elif not isinstance(value, str) or len(value) > MAX_TEXT or "\x00" in value:
            errors[f"scope.{key}"] = ["A string of at most 200 characters."]
        else:
            out[key] = value
    values["scope"] = out


def _notify(notify: Any, values: dict[str, Any], errors: dict[str, list[str]]) -> None:
    if notify is None:
        values.update(emails=(), webhooks=())
        return
    if not isinstance(notify, dict) or set(notify) - {"emails", "webhooks"}:
        errors["notify"] = ['{"emails": [...], "webhooks": [{"url": ...}]}.']
        return
    emails = notify.get("emails")
    if emails is None:
        values["emails"] = ()
    elif not isinstance(emails, list) or len(emails) > MAX_EMAILS:
        errors["notify.emails"] = [f"A list of at most {MAX_EMAILS} addresses."]
    else:
        for i, address in enumerate(emails):
            try:
                validate_email(address if isinstance(address, str) else "")
            except ValidationError:
                errors[f"notify.emails[{i}]"] = [f"Not an email address: {address!r}."]
        values["emails"] = tuple(dict.fromkeys(a for a in emails if isinstance(a, str)))
    hooks = notify.get("webhooks")
    if hooks is None:
        values["webhooks"] = ()
        return
    if not isinstance(hooks, list) or len(hooks) > MAX_WEBHOOKS:
        errors["notify.webhooks"] = [f'A list of at most {MAX_WEBHOOKS} objects like {{"url": ...}}.']
        return
    urls = []
    for i, hook in enumerate(hooks):
        url = hook.get("url") if isinstance(hook, dict) and set(hook) == {"url"} else None
        if not isinstance(url, str) or len(url) > MAX_URL:
            errors[f"notify.webhooks[{i}]"] = ['An object like {"url": "https://…"}.']
            continue
        refusal = url_refusal(url)
        if refusal:
            errors[f"notify.webhooks[{i}].url"] = [refusal]
            continue
        urls.append(url)
    values["webhooks"] = tuple(dict.fromkeys(urls))
