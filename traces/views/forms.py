"""The feed's filter form: it only renders the fields and shows errors next to them. What a value
means, and whether it is valid, is `traces.filters.parse_trace_filter`'s business (the API's too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict

from traces.filters import FilterError, TraceFilter, parse_trace_filter
from traces.models import FeedColumn, Kind

STATUS_CHOICES = [
    ("", "Any status"),
    ("success", "Success"),
    ("error", "Failed"),
    ("rate_limited", "Rate limited"),
    ("error,rate_limited", "Failed or rate limited"),
]
KIND_CHOICES = [
    ("", "Any kind"),
    ("llm,embedding", "Calls (LLM and embedding)"),
    *((str(k), str(k)) for k in Kind),
]
RANGE_CHOICES = [
    ("", "Any time"),
    ("1h", "Last hour"),
    ("24h", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("custom", "Custom"),
]
# Query parameters of the feed that are not filters (pagination and the live poll).
PAGING = ("cursor", "after", "paused")
# The score filter's fields: one score's name and its value, or its min and max; the query says
# `score.<name>=<value>`, `score.<name>.min=<n>`, `score.<name>.max=<n>` (the API's filter).
SCORE_FIELDS = {"score_value": "", "score_min": ".min", "score_max": ".max"}


def _text(label: str, placeholder: str = "", **kwargs: Any) -> forms.CharField:
    attrs = {"placeholder": placeholder} if placeholder else {}
    return forms.CharField(label=label, required=False, widget=forms.TextInput(attrs=attrs), **kwargs)


class FlagInput(forms.CheckboxInput):
    """A checkbox that sends ``true`` (the API's spelling) when ticked, and nothing otherwise."""

    def __init__(self) -> None:
        super().__init__(check_test=lambda value: str(value).lower() in ("true", "1"))

    def format_value(self, value: Any) -> str:
        return "true"


def _flag(label: str) -> forms.CharField:
    return forms.CharField(label=label, required=False, widget=FlagInput())


class FeedFilterForm(forms.Form):
    model = _text("Model", "gpt-4o or gpt-4*")
    provider = _text("Provider", "openai")
    status = forms.CharField(label="Status", required=False, widget=forms.Select(choices=STATUS_CHOICES))
    time_range = forms.CharField(label="Time range", required=False, widget=forms.Select(choices=RANGE_CHOICES))
    since = _text("From", "e.g. 2026-01-31T12:00Z")
    until = _text("Until", "e.g. 2026-01-31T13:00Z")
    cost_min = _text("Cost from (USD)", "0.01")
    cost_max = _text("Cost up to (USD)")
    latency_min = _text("Latency from (ms)", "1000")
    latency_max = _text("Latency up to (ms)")
    destination = _text("Destination", "langfuse")
    tag = _text("Tag")
    metadata = _text("Metadata", "key=value")
    environment = _text("Environment", "production")
    session_id = _text("Session")
    user_id = _text("User")
    kind = forms.CharField(label="Span kind", required=False, widget=forms.Select(choices=KIND_CHOICES))
    run_id = _text("Run", "the run's id")
    unpriced = _flag("Unpriced only")
    usage_estimated = _flag("Estimated usage only")
    score_name = forms.CharField(label="Score", required=False, widget=forms.Select(choices=[("", "Any score")]))
    score_value = _text("Score equals", "0.8, true or a category")
    score_min = _text("Score from", "0.5")
    score_max = _text("Score up to", "1")

    def __init__(self, params: QueryDict, *, score_names: Sequence[str] = ()) -> None:
        data = params.copy()
        # `metadata.<key>=<value>` (the API's form, and what a shared URL carries) shows as "key=value".
        pairs = [f"{k[len('metadata.') :]}={v}" for k, v in params.items() if k.startswith("metadata.")]
        if pairs and not params.get("metadata"):
            data["metadata"] = pairs[0]
        # `score.<name>[.min|.max]=…` likewise shows in the score fields (the first score named).
        if not params.get("score_name"):
            named = [k for k in params if k.startswith("score.")]
            if named:
                name = _score_param(named[0])[0]
                data["score_name"] = name
                for field, suffix in SCORE_FIELDS.items():
                    value = params.get(f"score.{name}{suffix}")
                    if value:
                        data[field] = str(value)
        super().__init__(data)
        chosen = str(data.get("score_name") or "")
        names = list(dict.fromkeys([*score_names, *([chosen] if chosen else [])]))
        self.fields["score_name"].widget.choices = [("", "Any score"), *((n, n) for n in names)]  # type: ignore[attr-defined]

    def filter_params(self) -> dict[str, list[str]]:
        """The submitted filters as the API names them, blanks dropped (the shareable query)."""
        params = cast(QueryDict, self.data)
        out: dict[str, list[str]] = {}
        for name, values in params.lists():
            if name in PAGING or name == "metadata" or name == "score_name" or name in SCORE_FIELDS:
                continue
            kept = [v for v in values if v.strip()]
            if kept:
                out[name] = kept
        meta = params.get("metadata", "").strip()
        if meta:
            key, sep, value = meta.partition("=")
            for name in [n for n in out if n.startswith("metadata.")]:
                del out[name]  # the form's field replaces the URL's pair
            out[f"metadata.{key.strip()}" if sep else "metadata."] = [value.strip()]
        score = params.get("score_name", "").strip()
        given = {field: params.get(field, "").strip() for field in SCORE_FIELDS}
        if score:
            for name in [n for n in out if n.startswith("score.") and _score_param(n)[0] == score]:
                del out[name]  # the form's fields replace the URL's
            for field, suffix in SCORE_FIELDS.items():
                if given[field]:
                    out[f"score.{score}{suffix}"] = [given[field]]
        elif any(given.values()):
            out["score."] = [next(v for v in given.values() if v)]  # no name: parse_trace_filter says so
        return out

    def query(self) -> str:
        return urlencode(self.filter_params(), doseq=True)

    def trace_filter(self) -> TraceFilter | None:
        """The parsed filter, or None with the error added next to its field."""
        self.full_clean()  # the fields are free text: this only sets up the error lists
        params = self.filter_params()
        if "metadata." in params:
            self.add_error("metadata", "Write it as key=value.")
            return None
        if self.data.get("score_name", "").strip() and not any(k.startswith("score.") for k in params):
            self.add_error("score_value", "Give the score's value, or a minimum or maximum.")
            return None
        try:
            return parse_trace_filter(params, blank_is_absent=True)
        except FilterError as exc:
            field = "metadata" if exc.param.startswith("metadata.") else exc.param
            if exc.param.startswith("score."):
                field = _score_field(exc.param)
            self.add_error(field if field in self.fields else None, exc.message)
            return None


def _score_param(param: str) -> tuple[str, str]:
    """``score.<name>[.min|.max]`` → (name, "" | ".min" | ".max"), the API's reading of it."""
    name = param[len("score.") :]
    for suffix in (".min", ".max"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return name, ""


def _score_field(param: str) -> str:
    """Which score field shows a `score.…` parameter's error: its value's, min's or max's."""
    suffix = _score_param(param)[1]
    if param == "score.":
        return "score_name"
    return {"": "score_value", ".min": "score_min", ".max": "score_max"}[suffix]


class FeedColumnsForm(forms.Form):
    """The feed's optional columns (kept per user by `traces.services.feed_columns_save`); ``query``
    is the feed's filter to go back to."""

    columns = forms.MultipleChoiceField(
        label="Columns", choices=FeedColumn.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    query = forms.CharField(required=False, widget=forms.HiddenInput)
