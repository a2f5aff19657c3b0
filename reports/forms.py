"""The report form: it renders the fields and shows errors next to them. What a value means and
whether it is valid is `reports.definition.parse_definition`'s business (the API's too)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django import forms

from analytics.slices import GROUP_BY

from .definition import Definition

RANGE_CHOICES = [("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days"), ("fixed", "Fixed dates")]
INTERVAL_CHOICES = [("", "Chosen from the period"), ("minute", "Minute"), ("hour", "Hour"), ("day", "Day")]
STATUS_CHOICES = [("success", "Success"), ("error", "Failed"), ("rate_limited", "Rate limited")]
FORMAT_CHOICES = [("csv", "CSV (spreadsheets)"), ("pdf", "PDF (people)")]
FILTER_FIELDS = ("model", "provider", "environment", "tag", "user_id")  # the rest go in other_filters


def _text(label: str, placeholder: str = "", help_text: str = "") -> forms.CharField:
    attrs = {"placeholder": placeholder} if placeholder else {}
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs=attrs), help_text=help_text)


class ReportForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=200, widget=forms.TextInput(attrs={"placeholder": "Weekly cost by model"})
    )
    time_range = forms.ChoiceField(label="Period", choices=RANGE_CHOICES, initial="7d", help_text="Before each run.")
    since = _text("From", "2026-11-01T00:00Z", "With fixed dates (UTC unless an offset is given).")
    until = _text("Until", "2026-11-08T00:00Z")
    group_by = forms.ChoiceField(
        label="Group by", required=False, choices=[("", "Nothing (totals only)"), *((g, g.title()) for g in GROUP_BY)]
    )
    interval = forms.ChoiceField(label="Interval", required=False, choices=INTERVAL_CHOICES)
    model = _text("Model", "gpt-4o or gpt-4*")
    provider = _text("Provider", "openai")
    environment = _text("Environment", "production")
    tag = _text("Tag")
    user_id = _text("User")
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
    formats = forms.MultipleChoiceField(
        label="Formats",
        required=False,
        choices=FORMAT_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        initial=["csv", "pdf"],
    )
    recipients = forms.CharField(
        label="Email to",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "finance@example.com, ops@example.com"}),
        help_text="Addresses separated by commas or lines; empty: download only.",
    )
    schedule = _text(
        "Schedule",
        "0 8 * * 1",
        "A crontab in UTC (minute hour day month weekday): 0 8 * * 1 is Mondays at 08:00. Empty: run by hand.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = (self.data.get("time_range") if self.is_bound else self.initial.get("time_range")) or ""
        if current and current not in dict(RANGE_CHOICES):  # a period set through the API, e.g. 4w
            field = self.fields["time_range"]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [(current, f"Last {current}"), *RANGE_CHOICES]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("time_range") == "fixed":
            for name in ("since", "until"):
                if not data.get(name):
                    self.add_error(name, "A fixed period needs both since and until.")
        return data

    def definition_data(self) -> dict[str, Any]:
        """What the form says, in the API's shape (for parse_definition)."""
        d = self.cleaned_data
        filters: dict[str, Any] = dict(parse_qsl(d.get("other_filters") or "", keep_blank_values=False))
        for name in FILTER_FIELDS:
            if d.get(name):
                filters[name] = d[name].strip()
        if d.get("status"):
            filters["status"] = ",".join(d["status"])
        fixed = d.get("time_range") == "fixed"
        recipients = [a.strip() for a in (d.get("recipients") or "").replace("\n", ",").split(",") if a.strip()]
        return {
            "name": d.get("name", ""),
            "filters": filters,
            "group_by": d.get("group_by") or None,
            "interval": d.get("interval") or None,
            "time_range": None if fixed else d.get("time_range"),
            "since": (d.get("since") or None) if fixed else None,
            "until": (d.get("until") or None) if fixed else None,
            "formats": list(d.get("formats") or []),
            "recipients": recipients,
            "schedule": d.get("schedule") or None,
        }

    def add_definition_errors(self, errors: dict[str, list[str]]) -> None:
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


def initial_for(d: Definition) -> dict[str, Any]:
    filters = dict(d.filters)
    initial: dict[str, Any] = {name: filters.pop(name, "") for name in FILTER_FIELDS}
    status = filters.pop("status", "")
    fixed = d.since is not None
    return {
        **initial,
        "name": d.name,
        "time_range": "fixed" if fixed else (d.time_range or "7d"),
        "since": d.since.isoformat() if d.since else "",
        "until": d.until.isoformat() if d.until else "",
        "group_by": d.group_by,
        "interval": d.interval,
        "status": [s for s in status.split(",") if s],
        "other_filters": urlencode(filters),
        "formats": list(d.formats),
        "recipients": ", ".join(d.recipients),
        "schedule": d.schedule,
    }
