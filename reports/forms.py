"""The report form: it renders the fields and shows errors next to them. What a value means and
whether it is valid is `reports.definition.parse_definition`'s business (the API's too)."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from analytics.slices import GROUP_BY
from traces.views.saved_filter import FILTER_FIELDS as COMMON_FILTER_FIELDS
from traces.views.saved_filter import SavedFilterForm, checkboxes_field, saved_filter_initial
from traces.views.saved_filter import text_field as _text

from .definition import Definition

RANGE_CHOICES = [("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days"), ("fixed", "Fixed dates")]
INTERVAL_CHOICES = [
    ("", "From the period (hours up to 2 days, else days)"),
    ("minute", "Minute"),
    ("hour", "Hour"),
    ("day", "Day"),
]
FORMAT_CHOICES = [("csv", "CSV (spreadsheets)"), ("pdf", "PDF (people)")]
FILTER_FIELDS = (*COMMON_FILTER_FIELDS, "user_id")  # the rest go in other_filters
# A schedule is chosen as daily, weekly or monthly at a time (UTC); "custom" takes any crontab. All are
# stored as the report's crontab (django-celery-beat's CrontabSchedule underneath).
SCHEDULE_CHOICES = [
    ("", "None: run by hand"),
    ("daily", "Daily"),
    ("weekly", "Weekly"),
    ("monthly", "Monthly"),
    ("custom", "Custom (crontab)"),
]
WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")  # crontab 0-6
WEEKDAY_CHOICES = [(str(i), day) for i, day in list(enumerate(WEEKDAYS))[1:] + [(0, WEEKDAYS[0])]]
MONTH_DAY_CHOICES = [(str(d), str(d)) for d in range(1, 29)]  # every month has them
TIME_OF_DAY = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
PLAIN_SCHEDULE = re.compile(r"^([0-9]{1,2}) ([0-9]{1,2}) (\*|[0-9]{1,2}) \* (\*|[0-6])$")


def schedule_crontab(kind: str, time: str, weekday: str, day: str) -> str:
    """The crontab of a daily, weekly or monthly schedule at ``time`` ("08:30", UTC)."""
    match = TIME_OF_DAY.match(time.strip())
    if match is None:
        raise ValueError("A time of day as HH:MM, e.g. 08:00.")
    hour, minute = int(match.group(1)), int(match.group(2))
    return {
        "daily": f"{minute} {hour} * * *",
        "weekly": f"{minute} {hour} * * {weekday}",
        "monthly": f"{minute} {hour} {day} * *",
    }[kind]


def schedule_fields(schedule: str) -> dict[str, str]:
    """The form's schedule fields for a stored crontab: daily, weekly or monthly when it is one of
    those (as `schedule_crontab` writes them), else custom."""
    if not schedule:
        return {"schedule_kind": "", "schedule": ""}
    match = PLAIN_SCHEDULE.match(schedule)
    if match is not None:
        minute, hour, day, weekday = match.groups()
        time = f"{int(hour):02d}:{int(minute):02d}"
        valid = int(minute) < 60 and int(hour) < 24
        if valid and day == "*" and weekday == "*":
            return {"schedule_kind": "daily", "schedule_time": time, "schedule": ""}
        if valid and day == "*":
            return {"schedule_kind": "weekly", "schedule_time": time, "schedule_weekday": weekday, "schedule": ""}
        if valid and weekday == "*" and 1 <= int(day) <= 28:
            return {"schedule_kind": "monthly", "schedule_time": time, "schedule_day": str(int(day)), "schedule": ""}
    return {"schedule_kind": "custom", "schedule": schedule}


class ReportForm(SavedFilterForm):
    filter_fields = FILTER_FIELDS

    name = forms.CharField(
        label="Name", max_length=200, widget=forms.TextInput(attrs={"placeholder": "Weekly cost by model"})
    )
    time_range = forms.ChoiceField(label="Period", choices=RANGE_CHOICES, initial="7d", help_text="Before each run.")
    since = _text("From", "e.g. 2026-11-01T00:00Z", "With fixed dates (UTC unless an offset is given).")
    until = _text("Until", "e.g. 2026-11-08T00:00Z")
    group_by = forms.ChoiceField(
        label="Group by", required=False, choices=[("", "Nothing (totals only)"), *((g, g.title()) for g in GROUP_BY)]
    )
    interval = forms.ChoiceField(label="Interval", required=False, choices=INTERVAL_CHOICES)
    user_id = _text("User")
    formats = checkboxes_field("Formats", FORMAT_CHOICES, initial=["csv", "pdf"])
    recipients = forms.CharField(
        label="Email to",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "finance@example.com, ops@example.com"}),
        help_text="Addresses separated by commas or lines; empty: download only.",
    )
    skip_empty_groups = forms.BooleanField(
        label="Leave out groups with no traffic",
        required=False,
        help_text="With a group-by: a group's periods with no traces are not listed (CSV and PDF).",
    )
    schedule_kind = forms.ChoiceField(label="Schedule", required=False, choices=SCHEDULE_CHOICES)
    schedule_time = _text("At (UTC)", "08:00", "Hours and minutes, 24-hour clock, UTC.")
    schedule_weekday = forms.ChoiceField(label="Day of the week", required=False, choices=WEEKDAY_CHOICES, initial="1")
    schedule_day = forms.ChoiceField(
        label="Day of the month", required=False, choices=MONTH_DAY_CHOICES, initial="1", help_text="1 to 28."
    )
    schedule = _text(
        "Crontab",
        "0 8 * * 1",
        "A crontab in UTC (minute hour day month weekday): 0 8 * * 1 is Mondays at 08:00.",
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
        kind = data.get("schedule_kind") or ""
        if "schedule_kind" not in self.data and (data.get("schedule") or "").strip():
            kind = data["schedule_kind"] = "custom"  # a crontab posted alone (a form of before the choice)
        if kind == "custom" and not (data.get("schedule") or "").strip():
            self.add_error("schedule", "Type a crontab, or choose daily, weekly or monthly.")
        elif kind in ("daily", "weekly", "monthly"):
            try:
                data["crontab"] = schedule_crontab(
                    kind,
                    data.get("schedule_time") or "",
                    data.get("schedule_weekday") or "1",
                    data.get("schedule_day") or "1",
                )
            except ValueError as exc:
                self.add_error("schedule_time", str(exc))
        return data

    def definition_data(self) -> dict[str, Any]:
        """What the form says, in the API's shape (for parse_definition)."""
        d = self.cleaned_data
        fixed = d.get("time_range") == "fixed"
        recipients = [a.strip() for a in (d.get("recipients") or "").replace("\n", ",").split(",") if a.strip()]
        return {
            "name": d.get("name", ""),
            "filters": self.filters_data(),
            "group_by": d.get("group_by") or None,
            "interval": d.get("interval") or None,
            "time_range": None if fixed else d.get("time_range"),
            "since": (d.get("since") or None) if fixed else None,
            "until": (d.get("until") or None) if fixed else None,
            "formats": list(d.get("formats") or []),
            "recipients": recipients,
            "schedule": _chosen_schedule(d),
            "skip_empty_groups": bool(d.get("skip_empty_groups")),
        }

    def error_field(self, key: str) -> str | None:
        if key == "schedule" and self.cleaned_data.get("schedule_kind") != "custom":
            return "schedule_time"
        return key


def _chosen_schedule(d: dict[str, Any]) -> str | None:
    kind = d.get("schedule_kind") or ""
    if kind == "custom":
        return d.get("schedule") or None
    return d.get("crontab") or None


def initial_for(d: Definition) -> dict[str, Any]:
    fixed = d.since is not None
    return {
        **saved_filter_initial(d.filters, FILTER_FIELDS),
        "name": d.name,
        "time_range": "fixed" if fixed else (d.time_range or "7d"),
        "since": d.since.isoformat() if d.since else "",
        "until": d.until.isoformat() if d.until else "",
        "group_by": d.group_by,
        "interval": d.interval,
        "formats": list(d.formats),
        "recipients": ", ".join(d.recipients),
        **schedule_fields(d.schedule),
        "skip_empty_groups": d.skip_empty_groups,
    }
