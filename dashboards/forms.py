"""The board and widget forms: they render the fields and show errors next to them. Whether a value
is valid is `dashboards.definition`'s business (the API's too)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django import forms

from analytics.slices import GROUP_BY

from .definition import CHART_LABELS, DEFAULT_TIME_RANGE, MAX_NAME, METRIC_LABELS, filter_params

RANGE_CHOICES = [("1h", "Last hour"), ("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days")]
INTERVAL_CHOICES = [("", "Automatic (from the range)"), ("minute", "Minute"), ("hour", "Hour"), ("day", "Day")]
STATUS_CHOICES = [("success", "Success"), ("error", "Failed"), ("rate_limited", "Rate limited")]
FILTER_FIELDS = ("model", "provider", "environment", "tag")  # the rest go in other_filters


def _text(label: str, placeholder: str = "", help_text: str = "") -> forms.CharField:
    attrs = {"placeholder": placeholder} if placeholder else {}
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs=attrs), help_text=help_text)


class BoardForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=MAX_NAME, widget=forms.TextInput(attrs={"placeholder": "Spend and errors"})
    )
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)


class WidgetForm(forms.Form):
    title = forms.CharField(
        label="Title", max_length=200, widget=forms.TextInput(attrs={"placeholder": "Cost by model"})
    )
    metric = forms.ChoiceField(
        label="Figure",
        choices=list(METRIC_LABELS.items()),
        help_text="Lines (and bars or tables over time) show the totals and latency p50/p95 per interval; "
        "the other percentiles are for a number, or bars or a table per group.",
    )
    score = _text("Score", "helpfulness", "For Score average or Scores: the score's name (numeric or boolean).")
    chart = forms.ChoiceField(label="Drawn as", choices=list(CHART_LABELS.items()))
    time_range = forms.ChoiceField(label="Range", choices=RANGE_CHOICES, initial=DEFAULT_TIME_RANGE)
    interval = forms.ChoiceField(label="Interval", required=False, choices=INTERVAL_CHOICES)
    group_by = forms.ChoiceField(
        label="Group by",
        required=False,
        choices=[("", "Nothing"), *((g, g.title()) for g in GROUP_BY)],
        help_text="A line per group (6 largest by cost), or a bar or row per group (10 largest).",
    )
    model = _text("Model", "gpt-4o or gpt-4*")
    provider = _text("Provider", "openai")
    environment = _text("Environment", "production")
    tag = _text("Tag")
    status = forms.MultipleChoiceField(
        label="Status",
        required=False,
        choices=STATUS_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        help_text="None: all.",
    )
    other_filters = _text(
        "Other filters", "cost_min=0.01&metadata.customer=acme", "Any other trace feed filter, as a query string."
    )
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def widget_data(self) -> dict[str, Any]:
        """What the form says, in the API's shape (for `check_widget`)."""
        d = self.cleaned_data
        filters: dict[str, Any] = dict(parse_qsl(d.get("other_filters") or "", keep_blank_values=True))
        for name in FILTER_FIELDS:
            if d.get(name):
                filters[name] = d[name].strip()
        if d.get("status"):
            filters["status"] = ",".join(d["status"])
        return {
            "title": d.get("title", ""),
            "metric": d.get("metric"),
            "filters": filters,
            "group_by": d.get("group_by") or None,
            "interval": d.get("interval") or None,
            "time_range": d.get("time_range") or None,
            "chart": d.get("chart"),
            **({"score": d["score"].strip()} if (d.get("score") or "").strip() else {}),
        }

    def add_widget_errors(self, errors: dict[str, list[str]]) -> None:
        for key, messages in errors.items():
            field: str | None = key
            if key.startswith("filters."):
                name = key.split(".", 1)[1]
                field = name if name in FILTER_FIELDS or name == "status" else "other_filters"
                messages = [m if field != "other_filters" else f"{name}: {m}" for m in messages]
            elif key == "filters":
                field = "other_filters"
            if field not in self.fields:
                field = None
            for message in messages:
                self.add_error(field, message)


def widget_initial(widget: dict[str, Any]) -> dict[str, Any]:
    filters = filter_params(widget.get("filters") or {})
    initial: dict[str, Any] = {name: filters.pop(name, "") for name in FILTER_FIELDS}
    status = filters.pop("status", "")
    return {
        **initial,
        "title": widget.get("title", ""),
        "metric": widget.get("metric"),
        "score": widget.get("score") or "",
        "chart": widget.get("chart"),
        "time_range": widget.get("time_range") or DEFAULT_TIME_RANGE,
        "interval": widget.get("interval") or "",
        "group_by": widget.get("group_by") or "",
        "status": [s for s in status.split(",") if s],
        "other_filters": urlencode(filters),
    }
