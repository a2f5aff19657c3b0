"""The alert form: renders fields and shows errors next to them; `alerts.definition.parse_alert`
decides what is valid (as for the API)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms

from .definition import SCOPE_KEYS, AlertSpec

WINDOW_TYPES = [("rolling", "A rolling window (the last N minutes)"), ("calendar", "A calendar period (UTC)")]
PERIODS = [("day", "Day"), ("week", "Week (from Monday)"), ("month", "Month")]


def _text(label: str, placeholder: str = "") -> forms.CharField:
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs={"placeholder": placeholder}))


class AlertForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=200, widget=forms.TextInput(attrs={"placeholder": "Monthly budget"})
    )
    metric = forms.ChoiceField(
        label="Measure",
        choices=[
            ("cost", "Cost (USD)"),
            ("tokens", "Tokens"),
            ("delivery_failure_rate", "Delivery failure rate of an integration (0 to 1)"),
            ("dead_letters", "Dead letters of an integration"),
            ("oldest_pending_s", "Oldest waiting delivery of an integration (seconds)"),
        ],
        help_text="An integration's measures need its name below; a failure rate of 0.05 is 5%.",
    )
    threshold = forms.CharField(
        label="Threshold", widget=forms.TextInput(attrs={"inputmode": "decimal", "placeholder": "500"})
    )
    window_type = forms.ChoiceField(label="Over", choices=WINDOW_TYPES)
    minutes = forms.CharField(
        label="Minutes",
        required=False,
        widget=forms.TextInput(attrs={"inputmode": "numeric", "placeholder": "60"}),
        help_text="For a rolling window.",
    )
    period = forms.ChoiceField(label="Period", required=False, choices=PERIODS, help_text="For a calendar period.")
    model = _text("Model", "gpt-4o or gpt-4*")
    user_id = _text("User")
    tag = _text("Tag")
    environment = _text("Environment", "production")
    service_name = _text("Service")
    integration = forms.CharField(
        label="Integration",
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "langfuse-prod"}),
        help_text="For the delivery measures: the integration's name (and no other scope).",
    )
    emails = forms.CharField(
        label="Email to",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "oncall@example.com"}),
        help_text="Addresses separated by commas or lines.",
    )
    webhooks = forms.CharField(
        label="Webhooks",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "https://hooks.example.com/tracerelay"}),
        help_text="One URL per line; each POST is signed (X-Tracerelay-Signature) with the alert's secret.",
    )
    enabled = forms.BooleanField(label="Enabled", required=False, initial=True)

    def __init__(self, *args: Any, builtin: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if builtin:  # the built-in alert: its threshold, notifications and on/off only
            for name in ("name", "metric", "window_type", "minutes", "period", *SCOPE_KEYS):
                del self.fields[name]

    def alert_data(self) -> dict[str, Any]:
        d = self.cleaned_data
        data: dict[str, Any] = {
            "threshold": _number(d.get("threshold") or ""),
            "notify": {
                "emails": [a.strip() for a in (d.get("emails") or "").replace("\n", ",").split(",") if a.strip()],
                "webhooks": [{"url": u.strip()} for u in (d.get("webhooks") or "").splitlines() if u.strip()],
            },
            "enabled": bool(d.get("enabled")),
        }
        if "name" not in self.fields:
            return data
        minutes = (d.get("minutes") or "").strip()
        window: dict[str, Any] = (
            {"type": "rolling", "minutes": int(minutes) if minutes.isdigit() else minutes or None}
            if d.get("window_type") == "rolling"
            else {"type": "calendar", "period": d.get("period")}
        )
        return {
            **data,
            "name": d.get("name", ""),
            "metric": d.get("metric"),
            "window": window,
            "scope": {key: d[key].strip() for key in SCOPE_KEYS if d.get(key)},
        }

    def add_alert_errors(self, errors: dict[str, list[str]]) -> None:
        for key, messages in errors.items():
            target: str | None = key
            if key == "window.minutes":
                target = "minutes"
            elif key == "window.period":
                target = "period"
            elif key == "window":
                target = "window_type"
            elif key.startswith("scope."):
                target = key.split(".", 1)[1]
            elif key.startswith("notify.emails") or key == "notify":
                target = "emails"
            elif key.startswith("notify.webhooks"):
                target = "webhooks"
            for message in messages:
                self.add_error(target if target in self.fields else None, message)


def _number(text: str) -> Decimal | str:
    """The typed threshold as a number (the API takes JSON numbers only); text that is not one goes
    to parse_alert as it is, which refuses it with the message shown beside the field."""
    try:
        return Decimal(text.strip())
    except InvalidOperation:
        return text


def initial_for(spec: AlertSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "metric": spec.metric,
        "threshold": f"{spec.threshold.normalize():f}",
        "window_type": spec.window_type,
        "minutes": spec.window_minutes or "",
        "period": spec.period or "day",
        **{key: spec.scope.get(key, "") for key in SCOPE_KEYS},
        "emails": ", ".join(spec.emails),
        "webhooks": "\n".join(spec.webhooks),
        "enabled": spec.enabled,
    }
