"""What a report asks for, checked once for the API and the dashboard form: `parse_definition`
returns a `Definition` or raises `DefinitionError` with errors per field (the shape the API's
problem+json and the form both show).

The period is either relative (``time_range``, e.g. ``7d``: the days before each run) or fixed
(``since``/``until``); a schedule needs a relative one. Filters are the trace feed's query
parameters (traces.filters) and are checked by the same parser the feed uses; the analytics
planner checks that the interval fits the period (at most `analytics.plan.MAX_POINTS` points).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import ParseException, crontab
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from analytics.plan import INTERVALS
from analytics.selectors import AnalyticsError, AnalyticsQuery, parse_query, plan_for
from analytics.slices import GROUP_BY
from config.fields import has_control_characters
from traces.filters import FILTER_PARAMS, FilterError
from traces.normalize import parse_datetime

from .models import Format

PERIOD_PARAMS = ("since", "until", "time_range")
FILTER_KEYS = tuple(p for p in FILTER_PARAMS if p not in PERIOD_PARAMS)
TIME_RANGE = re.compile(r"^([1-9][0-9]{0,3})([hdw])$")
TIME_RANGE_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
MAX_TIME_RANGE = timedelta(days=400)
DEFAULT_TIME_RANGE = "7d"
MAX_RECIPIENTS = 50
MAX_NAME = 200
MAX_SCHEDULE = 100
CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
CRONTAB_FIELD = re.compile(r"^[0-9A-Za-z*/,-]+$")  # ASCII only: int() would read other scripts' digits
LEAVE_OUT = "Use null (or leave it out), not an empty string."
GROUP_LIMIT = 20  # groups in a report's table and breakdown (largest cost first)
REPORT_HOURLY_UP_TO = timedelta(days=2)  # the longest period a report without an interval gives by hour


class DefinitionError(ValueError):
    """``errors``: field → messages; a filter's field is ``filters.<parameter>``."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__(errors)


@dataclass(frozen=True)
class Definition:
    name: str
    filters: dict[str, str] = field(default_factory=dict)
    group_by: str = ""
    interval: str = ""
    time_range: str = ""
    since: datetime | None = None
    until: datetime | None = None
    formats: tuple[str, ...] = (Format.CSV, Format.PDF)
    recipients: tuple[str, ...] = ()
    schedule: str = ""
    skip_empty_groups: bool = False

    def period(self, now: datetime) -> tuple[datetime, datetime]:
        """The period a run asked for at ``now`` covers."""
        if self.since is not None and self.until is not None:
            return self.since, self.until
        return now - time_range_delta(self.time_range or DEFAULT_TIME_RANGE), now

    def query(self, *, since: datetime, until: datetime, group_by: str | None = None) -> AnalyticsQuery:
        """The analytics question for one run's period (``group_by`` overrides the report's)."""
        params = {**self.filters, "since": since.isoformat(), "until": until.isoformat()}
        params["interval"] = self.interval or report_interval(since, until)
        chosen = self.group_by if group_by is None else group_by
        if chosen:
            params["group_by"] = chosen
        return parse_query(params, now=until, limit=GROUP_LIMIT)


def report_interval(since: datetime, until: datetime) -> str:
    """A report's interval when it names none: by hour up to two days (a daily report), by day past
    that (weekly, monthly: 7 or 30 rows a group, not 168 or 720 of mostly zeros)."""
    return "hour" if until - since <= REPORT_HOURLY_UP_TO else "day"


def time_range_delta(value: str) -> timedelta:
    match = TIME_RANGE.match(value)
    if match is None:
        raise ValueError(value)
    return int(match.group(1)) * TIME_RANGE_UNITS[match.group(2)]


def crontab_fields(schedule: str) -> dict[str, str]:
    """A five-field crontab as django-celery-beat's CrontabSchedule fields; ValueError if invalid."""
    parts = schedule.split()
    if len(parts) != 5:
        raise ValueError("Five fields: minute hour day-of-month month day-of-week, e.g. '0 8 * * 1'.")
    fields = dict(zip(CRONTAB_FIELDS, parts, strict=True))
    for name, value in fields.items():
        words = name.replace("_", " ")
        if not CRONTAB_FIELD.match(value):
            raise ValueError(f"The {words} field may hold digits, names, *, /, - and commas only.")
        if len(value) > CrontabSchedule._meta.get_field(name).max_length:  # type: ignore[operator]
            raise ValueError(f"The {words} field is too long.")
    try:
        parsed = crontab(**fields)
    except ParseException as exc:
        raise ValueError(str(exc))
    if not parsed.month_of_year <= set(range(1, 13)) or not parsed.day_of_month <= set(range(1, 32)):
        raise ValueError("Months are 1-12 and days of the month 1-31.")
    return fields


def parse_definition(data: Mapping[str, Any], *, base: Definition | None = None) -> Definition:
    """Check a definition: all of it (``base`` None) or the fields ``data`` holds over ``base``."""
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {} if base is None else dict(base.__dict__)
    unknown = sorted(set(data) - set(Definition.__dataclass_fields__))
    for key in unknown:
        errors[key] = ["Unknown field."]

    def take(key: str, check: Any) -> None:
        if key not in data:
            return
        try:
            values[key] = check(data[key])
        except ValueError as exc:
            detail = exc.args[0] if exc.args else str(exc)
            if isinstance(detail, dict):  # per filter: "filters.model"
                errors.update({f"{key}.{sub}": messages for sub, messages in detail.items()})
            else:
                errors[key] = [str(detail)]

    if base is None and "name" not in data:
        errors["name"] = ["This field is required."]
    take("name", _name)
    take("filters", _filters)
    take("group_by", lambda v: _choice(v, GROUP_BY, "group_by"))
    take("interval", lambda v: _choice(v, tuple(INTERVALS), "interval"))
    take("time_range", _time_range)
    take("since", _datetime)
    take("until", _datetime)
    take("formats", _formats)
    take("recipients", _recipients)
    take("schedule", _schedule)
    take("skip_empty_groups", _flag)
    if errors:
        raise DefinitionError(errors)
    if base is not None and ("since" in data or "until" in data) and "time_range" not in data:
        values["time_range"] = ""  # a fixed period given replaces a relative one
    if base is not None and "time_range" in data and values.get("time_range"):
        values["since"] = values["until"] = None
    definition = Definition(**values)
    _check_period(definition, errors)
    if errors:
        raise DefinitionError(errors)
    return definition


def _check_period(d: Definition, errors: dict[str, list[str]]) -> None:
    fixed = d.since is not None or d.until is not None
    if fixed and d.time_range:
        errors["time_range"] = ["Give time_range or since/until, not both."]
        return
    if fixed and (d.since is None or d.until is None):
        errors["since" if d.since is None else "until"] = ["A fixed period needs both since and until."]
        return
    if d.since is not None and d.until is not None and d.since >= d.until:
        errors["since"] = ["Must be earlier than until."]
        return
    if d.schedule and fixed:
        errors["schedule"] = ["A scheduled report needs a time_range (the period before each run), not since/until."]
        return
    since, until = d.period(timezone.now())
    try:
        plan_for(d.query(since=since, until=until), until)
    except FilterError as exc:
        errors[f"filters.{exc.param}"] = [exc.message]
    except AnalyticsError as exc:
        fields = ("interval", "group_by") + (("since", "until") if d.since is not None else ())
        errors[exc.param if exc.param in fields else "time_range"] = [exc.message]


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME or has_control_characters(value):
        raise ValueError("A name, 1-200 characters, on one line (no control characters).")
    return value.strip()


def _filters(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError('An object of trace feed filters, e.g. {"model": "gpt-4o*", "status": "error"}.')
    problems: dict[str, list[str]] = {}
    out: dict[str, str] = {}
    for key, raw in value.items():
        if key in PERIOD_PARAMS:
            problems[key] = ["Give the period as the report's time_range or since/until, not as a filter."]
        elif key not in FILTER_KEYS and not (isinstance(key, str) and key.startswith("metadata.")):
            problems[key] = [f"Unknown filter; known: {', '.join(FILTER_KEYS)}, metadata.<key>."]
        elif isinstance(raw, bool):
            out[key] = "true" if raw else "false"
        elif isinstance(raw, (str, int, float)):
            out[key] = str(raw)
        elif isinstance(raw, list) and all(isinstance(v, str) for v in raw):
            out[key] = ",".join(raw)
        else:
            problems[key] = ["A string, number or boolean."]
    if problems:
        raise ValueError(problems)
    try:
        parse_query(out, now=timezone.now(), limit=None)
    except FilterError as exc:
        raise ValueError({exc.param: [exc.message]})
    return out


def _choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    if value is None:
        return ""
    if value not in allowed:
        raise ValueError(f"Use one of {', '.join(allowed)} (or null, or leave it out).")
    return str(value)


def _time_range(value: Any) -> str:
    if value is None:
        return ""
    if value == "":
        raise ValueError(LEAVE_OUT)
    if not isinstance(value, str) or not TIME_RANGE.match(value):
        raise ValueError("A number and a unit: h, d or w, e.g. 24h, 7d, 4w.")
    if time_range_delta(value) > MAX_TIME_RANGE:
        raise ValueError("At most 400 days.")
    return value


def _datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if value == "":
        raise ValueError(LEAVE_OUT)
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError("An ISO 8601 date-time with a time zone, e.g. 2026-11-01T00:00:00Z.")
    return parsed


def _flag(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError("true or false.")
    return value


def _formats(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(v not in Format.values for v in value):
        raise ValueError("A non-empty list of csv and pdf.")
    return tuple(dict.fromkeys(value))


def _recipients(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
        raise ValueError("A list of email addresses.")
    if len(value) > MAX_RECIPIENTS:
        raise ValueError(f"At most {MAX_RECIPIENTS} recipients.")
    for address in value:
        try:
            validate_email(address)
        except ValidationError:
            raise ValueError(f"Not an email address: {address!r}.")
    return tuple(dict.fromkeys(value))


def _schedule(value: Any) -> str:
    if value is None:
        return ""
    if value == "":
        raise ValueError(LEAVE_OUT)
    if not isinstance(value, str) or len(value) > MAX_SCHEDULE:
        raise ValueError("A crontab string (UTC), e.g. '0 8 * * 1', or null.")
    try:
        crontab_fields(value)
    except ValueError as exc:
        raise ValueError(f"Not a valid crontab: {exc}")
    return " ".join(value.split())
