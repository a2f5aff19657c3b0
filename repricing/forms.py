"""The re-pricing form: renders the fields and shows errors next to them; `parse_job` decides what is
valid (as for the API). Times are UTC."""

from __future__ import annotations

from typing import Any

from django import forms


class RepriceForm(forms.Form):
    since = forms.CharField(
        label="From (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Traces at or after this time.",
    )
    until = forms.CharField(
        label="To (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Traces before this time; at most 400 days after the start.",
    )
    model = forms.CharField(
        label="Model",
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "gpt-4o or gpt-4o*"}),
        help_text="Leave empty for every model; a trailing * takes every model starting so.",
    )
    redeliver = forms.BooleanField(
        label="Send traces whose cost changed to their destinations again",
        required=False,
        help_text="Off: destinations keep what they received.",
    )

    def job_data(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "since": d.get("since", ""),
            "until": d.get("until", ""),
            "model": d.get("model") or None,
            "redeliver": bool(d.get("redeliver")),
        }

    def add_job_errors(self, errors: dict[str, list[str]]) -> None:
        for key, messages in errors.items():
            for message in messages:
                self.add_error(key if key in self.fields else None, message)
