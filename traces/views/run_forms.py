"""The run list's filter form: it renders the fields and shows errors next to them; what a value
means is `run_source.parse_run_filter`'s business (the run API's parameters, and the feed's time
ranges)."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict

from traces.filters import FilterError

from .forms import RANGE_CHOICES
from .run_source import RunFilter, parse_run_filter

RUN_STATUS_CHOICES = [("", "Any status"), ("success", "Succeeded"), ("error", "Failed (any span)")]
FIELDS = ("name", "status", "time_range", "since", "until", "user_id", "session_id")


def _text(label: str, placeholder: str = "") -> forms.CharField:
    attrs = {"placeholder": placeholder} if placeholder else {}
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs=attrs))


class RunFilterForm(forms.Form):
    name = _text("Name", "invoke_agent")
    status = forms.CharField(label="Status", required=False, widget=forms.Select(choices=RUN_STATUS_CHOICES))
    time_range = forms.CharField(label="Time range", required=False, widget=forms.Select(choices=RANGE_CHOICES))
    since = _text("From", "2026-01-31T12:00Z")
    until = _text("Until", "2026-01-31T13:00Z")
    user_id = _text("User")
    session_id = _text("Session")

    def filter_params(self) -> dict[str, str]:
        params = cast(QueryDict, self.data)
        values = {name: str(params.get(name, "")).strip() for name in FIELDS}
        return {name: value for name, value in values.items() if value}

    def query(self) -> str:
        return urlencode(self.filter_params())

    def run_filter(self) -> RunFilter | None:
        """The parsed filter, or None with the error added next to its field."""
        self.full_clean()
        try:
            return parse_run_filter(self.filter_params())
        except FilterError as exc:
            self.add_error(exc.param if exc.param in self.fields else None, exc.message)
            return None
