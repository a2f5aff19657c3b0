"""The fields of a saved feed filter in a form (a report's or a dashboard widget's): a few common
filters as their own fields, the status as checkboxes, and every other feed filter as a query string.

`SavedFilterForm` is the base both forms derive from: it folds the fields into the filter dict the
API takes (`filters_data`), puts the API's errors about that dict back next to the fields
(`add_api_errors`), and `saved_filter_initial` does the reverse of `filters_data` for a stored
filter. What a filter means and whether it is valid stays `traces.filters`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode

from django import forms

STATUS_CHOICES = [("success", "Success"), ("error", "Failed"), ("rate_limited", "Rate limited")]
FILTER_FIELDS = ("model", "provider", "environment", "tag")  # the rest go in other_filters


def text_field(label: str, placeholder: str = "", help_text: str = "") -> forms.CharField:
    attrs = {"placeholder": placeholder} if placeholder else {}
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs=attrs), help_text=help_text)


def checkboxes_field(label: str, choices: list[tuple[str, str]], **kwargs: Any) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        label=label, required=False, choices=choices, widget=forms.CheckboxSelectMultiple, **kwargs
    )


class SavedFilterForm(forms.Form):
    """A subclass may add filter fields (declare them and list them in ``filter_fields``) and say
    whether ``other_filters``' blank values are kept (``keep_blank_filters``)."""

    filter_fields: ClassVar[tuple[str, ...]] = FILTER_FIELDS
    keep_blank_filters: ClassVar[bool] = False

    model = text_field("Model", "gpt-4o or gpt-4*")
    provider = text_field("Provider", "openai")
    environment = text_field("Environment", "production")
    tag = text_field("Tag")
    status = checkboxes_field("Status", STATUS_CHOICES, help_text="None: all.")
    other_filters = text_field(
        "Other filters", "cost_min=0.01&metadata.customer=acme", "Any other trace feed filter, as a query string."
    )

    def filter_grid(self) -> list[forms.BoundField]:
        """The filter fields in the order the forms show them (`dashboard/saved_filter_fields.html`)."""
        return [self[name] for name in (*self.filter_fields, "status")]

    def filters_data(self) -> dict[str, Any]:
        """The filter the fields say, in the API's shape: ``other_filters`` first, the named fields
        over it."""
        d = self.cleaned_data
        pairs = parse_qsl(d.get("other_filters") or "", keep_blank_values=self.keep_blank_filters)
        filters: dict[str, Any] = dict(pairs)
        for name in self.filter_fields:
            if d.get(name):
                filters[name] = d[name].strip()
        if d.get("status"):
            filters["status"] = ",".join(d["status"])
        return filters

    def error_field(self, key: str) -> str | None:
        """The field that shows the API's errors under ``key`` (a subclass may move some)."""
        return key

    def add_api_errors(self, errors: Mapping[str, list[str]]) -> None:
        """Show the API's validation errors next to their fields: ``filters.<name>`` at that filter's
        field, or in other_filters named; what no field shows, above the form."""
        for key, messages in errors.items():
            field: str | None = self.error_field(key)
            if key.startswith("filters."):
                name = key.split(".", 1)[1]
                field = name if name in self.filter_fields or name == "status" else "other_filters"
                messages = [m if field != "other_filters" else f"{name}: {m}" for m in messages]
            elif key == "filters":
                field = "other_filters"
            if field not in self.fields:
                field = None
            for message in messages:
                self.add_error(field, message)


def saved_filter_initial(filters: Mapping[str, str], filter_fields: tuple[str, ...] = FILTER_FIELDS) -> dict[str, Any]:
    """The initial values of a `SavedFilterForm`'s filter fields for a stored filter (values as text)."""
    rest = dict(filters)
    initial: dict[str, Any] = {name: rest.pop(name, "") for name in filter_fields}
    status = rest.pop("status", "")
    return {**initial, "status": [s for s in status.split(",") if s], "other_filters": urlencode(rest)}
