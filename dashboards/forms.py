"""The board and widget forms: they render the fields and show errors next to them. Whether a value
is valid is `dashboards.definition`'s business (the API's too)."""

from __future__ import annotations

from typing import Any

from django import forms

from analytics.slices import GROUP_BY
from traces.views.saved_filter import SavedFilterForm, saved_filter_initial, text_field

from .definition import CHART_LABELS, DEFAULT_TIME_RANGE, MAX_NAME, METRIC_LABELS, filter_params

RANGE_CHOICES = [("1h", "Last hour"), ("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days")]
INTERVAL_CHOICES = [("", "Automatic (from the range)"), ("minute", "Minute"), ("hour", "Hour"), ("day", "Day")]


class BoardForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=MAX_NAME, widget=forms.TextInput(attrs={"placeholder": "Spend and errors"})
    )
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)


class WidgetForm(SavedFilterForm):
    keep_blank_filters = True

    title = forms.CharField(
        label="Title", max_length=200, widget=forms.TextInput(attrs={"placeholder": "Cost by model"})
    )
    metric = forms.ChoiceField(
        label="Figure",
        choices=list(METRIC_LABELS.items()),
        help_text="Lines (and bars or tables over time) show the totals and latency p50/p95 per interval; "
        "the other percentiles are for a number, or bars or a table per group.",
    )
    score = text_field("Score", "helpfulness", "For Score average or Scores: the score's name (numeric or boolean).")
    chart = forms.ChoiceField(label="Drawn as", choices=list(CHART_LABELS.items()))
    time_range = forms.ChoiceField(label="Range", choices=RANGE_CHOICES, initial=DEFAULT_TIME_RANGE)
    interval = forms.ChoiceField(label="Interval", required=False, choices=INTERVAL_CHOICES)
    group_by = forms.ChoiceField(
        label="Group by",
        required=False,
        choices=[("", "Nothing"), *((g, g.title()) for g in GROUP_BY)],
        help_text="A line per group (6 largest by cost), or a bar or row per group (10 largest).",
    )
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def widget_data(self) -> dict[str, Any]:
        """What the form says, in the API's shape (for `check_widget`)."""
        d = self.cleaned_data
        return {
            "title": d.get("title", ""),
            "metric": d.get("metric"),
            "filters": self.filters_data(),
            "group_by": d.get("group_by") or None,
            "interval": d.get("interval") or None,
            "time_range": d.get("time_range") or None,
            "chart": d.get("chart"),
            **({"score": d["score"].strip()} if (d.get("score") or "").strip() else {}),
        }


def widget_initial(widget: dict[str, Any]) -> dict[str, Any]:
    return {
        **saved_filter_initial(filter_params(widget.get("filters") or {})),
        "title": widget.get("title", ""),
        "metric": widget.get("metric"),
        "score": widget.get("score") or "",
        "chart": widget.get("chart"),
        "time_range": widget.get("time_range") or DEFAULT_TIME_RANGE,
        "interval": widget.get("interval") or "",
        "group_by": widget.get("group_by") or "",
    }
