"""Reports API shapes, for the OpenAPI document (reports.definition does the checking). The
request shape is closed (``closed = True``: unknown fields are refused, as `parse_definition`
refuses them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from analytics.plan import INTERVALS
from analytics.slices import GROUP_BY
from config.fields import NAME_PATTERN
from traces.serializers import FILTER_VALUE_SCHEMA

from .definition import FILTER_KEYS, MAX_NAME, MAX_RECIPIENTS, MAX_SCHEDULE
from .models import Format, RunStatus

CRONTAB_HELP = (
    "Five-field crontab in UTC (minute hour day-of-month month day-of-week), e.g. `0 8 * * 1`: digits, "
    "names (`mon`, `jan`), `*`, `/`, `-` and commas; null: run by hand only."
)
SKIP_EMPTY_HELP = (
    "Leave out the groups with no traces in the period: from the CSV (and its rows with no traces) "
    "and the PDF's tables. The PDF never lists periods with no traces."
)
FILTERS_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": "Trace feed filter parameters, checked as the feed checks them: "
    f"{', '.join(FILTER_KEYS)}, and `metadata.<key>`; other names are refused. Values are strings as in "
    "the feed's query string (numbers and booleans are taken as their text). null: none.",
    "properties": {key: FILTER_VALUE_SCHEMA for key in FILTER_KEYS},
    "additionalProperties": FILTER_VALUE_SCHEMA,
}


@extend_schema_field(FILTERS_SCHEMA)
class FiltersField(serializers.JSONField):
    pass


class ReportInSerializer(serializers.Serializer):
    closed = True
    name = serializers.RegexField(
        NAME_PATTERN, max_length=MAX_NAME, help_text="1-200 characters, no control characters."
    )
    filters = FiltersField(required=False)
    group_by = serializers.ChoiceField(choices=list(GROUP_BY), required=False, allow_null=True)
    interval = serializers.ChoiceField(
        choices=list(INTERVALS),
        required=False,
        allow_null=True,
        help_text="Default: chosen from the period: by hour up to 2 days (a daily report), by day past that.",
    )
    time_range = serializers.RegexField(
        r"^[1-9][0-9]{0,3}[hdw]$",
        required=False,
        allow_null=True,
        help_text="The period before each run, e.g. `24h`, `7d`, `4w` (at most 400 days). Default `7d` "
        "when neither it nor since/until is given. Not with since/until.",
    )
    since = serializers.DateTimeField(required=False, allow_null=True, help_text="A fixed period's start (with until).")
    until = serializers.DateTimeField(required=False, allow_null=True)
    formats = serializers.ListField(child=serializers.ChoiceField(choices=Format.values), min_length=1, required=False)
    recipients = serializers.ListField(
        child=serializers.EmailField(),
        max_length=MAX_RECIPIENTS,
        required=False,
        allow_null=True,
        help_text="null: none.",
    )
    schedule = serializers.CharField(max_length=MAX_SCHEDULE, required=False, allow_null=True, help_text=CRONTAB_HELP)
    skip_empty_groups = serializers.BooleanField(
        required=False, allow_null=True, help_text=SKIP_EMPTY_HELP + " Default false; null: false."
    )


class ReportOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    filters = serializers.DictField(child=serializers.CharField())
    group_by = serializers.CharField(allow_null=True)
    interval = serializers.CharField(allow_null=True)
    time_range = serializers.CharField(allow_null=True)
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True)
    formats = serializers.ListField(child=serializers.CharField())
    recipients = serializers.ListField(child=serializers.CharField())
    schedule = serializers.CharField(allow_null=True)
    skip_empty_groups = serializers.BooleanField(help_text=SKIP_EMPTY_HELP)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ReportListSerializer(serializers.Serializer):
    data = ReportOutSerializer(many=True)  # type: ignore[assignment]


class RunFilesSerializer(serializers.Serializer):
    csv = serializers.URLField(allow_null=True, required=False, help_text="Download URL once the run succeeded.")
    pdf = serializers.URLField(allow_null=True, required=False)


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    report_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.values)
    trigger = serializers.ChoiceField(choices=["manual", "schedule"])
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    attempts = serializers.IntegerField()
    error = serializers.CharField(allow_null=True, help_text="The last attempt's error (a failed run keeps it).")
    files = RunFilesSerializer()
    emailed_to = serializers.ListField(
        child=serializers.CharField(), help_text="Who the files were mailed to (empty when `not_emailed` says why not)."
    )
    not_emailed = serializers.CharField(
        allow_null=True,
        help_text="Why the report's recipients got no mail although the run succeeded, e.g. "
        '"no mail server is configured (EMAIL_URL); written to the log"; null otherwise.',
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunListSerializer(serializers.Serializer):
    data = RunSerializer(many=True)  # type: ignore[assignment]
