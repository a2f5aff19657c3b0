"""`/routing/test`: where would a trace go, and why? The API's dry run (`routing_dry_run`) on a
trace typed into the form, or on the team's most recent stored traces (`routing_dry_run_stored`),
under the saved rules and sampling policy. Nothing is stored or sent. The rule form's "Test this
rule" (`trial.py`) reads its trace and shows its answer with the helpers here."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from accounts.access import DashboardRequest, team_view
from accounts.principals import KeyPrincipal
from accounts.roles import Permission
from config.problems import Problem
from traces.models import Trace
from traces.records import TraceRecord

from .. import selectors
from ..dry_run import routing_dry_run, routing_dry_run_stored

RECENT_CHOICES = (10, 25, 50)
STATUSES = (("success", "Success"), ("error", "Failed"), ("rate_limited", "Rate limited"))
ENVIRONMENTS = ("production", "development", "ci")
TRACE_FIELDS: tuple[str, ...] = ("id", "model", "provider", "status", "environment", "prompt_tokens")
TRACE_FIELDS += ("completion_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens")
TRACE_FIELDS += ("latency_ms", "tags", "metadata")
INTEGER_FIELDS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens")
INTEGER_FIELDS += ("reasoning_tokens",)
INTEGER_FIELDS += ("latency_ms",)
TRACE_INPUTS = (  # (field, label, placeholder); status and environment are selects
    ("model", "Model", "gpt-4o"),
    ("provider", "Provider", "from the model"),
    ("prompt_tokens", "Prompt tokens", "0"),
    ("completion_tokens", "Completion tokens", "0"),
    ("cached_tokens", "Cached tokens", "0"),
    ("cache_write_tokens", "Cache write tokens", "0"),
    ("reasoning_tokens", "Reasoning tokens", "0"),
    ("latency_ms", "Latency (ms)", "0"),
    ("tags", "Tags", "beta, eu"),
    ("id", "Trace id", "a new one"),
)


def blank_trace() -> dict[str, str]:
    return {
        "model": "gpt-4o",
        "status": "success",
        "environment": "production",
        "prompt_tokens": "1200",
        "completion_tokens": "300",
    }


def trace_choices() -> dict[str, Any]:
    """What the trace form (``routing/_trace_fields.html``) and the recent-traces choice offer."""
    return {
        "statuses": STATUSES,
        "trace_inputs": TRACE_INPUTS,
        "environments": ENVIRONMENTS,
        "recent_choices": RECENT_CHOICES,
    }


def _page(request: DashboardRequest, status: int = 200, **extra: Any) -> HttpResponse:
    team_id = request.team.pk
    context = {
        "tab": "test",
        "trace": blank_trace(),
        "errors": {},
        **trace_choices(),
        "recent": RECENT_CHOICES[0],
        "header": selectors.rule_set(team_id),
        "policy": selectors.sampling_policy(team_id),
        "rule_count": selectors.routing_rules(team_id).count(),
        **extra,
    }
    template = "routing/test.html#results" if request.htmx and request.method == "POST" else "routing/test.html"
    return render(request, template, context, status=status)


@team_view(Permission.READ, write=Permission.SEND_TEST_TRACES)
def routing_test(request: DashboardRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request)
    if request.POST.get("source") == "recent":
        return _recent(request)
    return _typed(request)


def posted_trace(post: QueryDict, prefix: str = "") -> tuple[dict[str, str], dict[str, Any], dict[str, list[str]]]:
    """(what was typed, the trace object for the dry run, errors found before it); the form's
    field names are the trace's, after ``prefix``."""
    typed = {name: post.get(prefix + name, "").strip() for name in TRACE_FIELDS}
    typed["metadata"] = post.get(prefix + "metadata", "")
    errors: dict[str, list[str]] = {}
    trace: dict[str, Any] = {}
    for name, value in typed.items():
        if not value.strip():
            continue
        if name in INTEGER_FIELDS:
            trace[name] = int(value) if value.isdigit() else value  # the dry run refuses what is not a count
        elif name == "tags":
            trace[name] = [t.strip() for t in value.split(",") if t.strip()]
        elif name == "metadata":
            try:
                trace[name] = json.loads(value)
            except ValueError as exc:
                errors["metadata"] = [f"Not valid JSON: {exc}."]
        else:
            trace[name] = value
    return typed, trace, errors


class TraceInvalid(ValueError):
    """The dry run refused the typed trace: ``errors`` by the form's field name ("" for the whole)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(next(iter(errors.values()))[0])
        self.errors = errors


def typed_dry_run(
    team_id: int, typed: dict[str, str], trace: dict[str, Any], rule: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`routing_dry_run` on one typed trace, in the typed environment (``rule``: tried in, see there).
    A bad trace raises `TraceInvalid` with the errors by field."""
    principal = KeyPrincipal(
        key_id=0, team_id=team_id, environment=typed["environment"] or "production", prefix="", scopes=frozenset()
    )
    try:
        result = routing_dry_run(
            principal=principal, items=[trace], rules=None, sampling=None, prefix="trace", single=True, rule=rule
        )
    except Problem as exc:
        errors = {
            path.removeprefix("trace").lstrip(".") or "": messages for path, messages in (exc.errors or {}).items()
        }
        raise TraceInvalid(errors or {"": [str(exc.detail)]}) from None
    return shown(result)


def blank_trial() -> dict[str, Any]:
    """The rule form's "Test this rule" before it ran: a trace to type, the recent-traces choice."""
    return {"source": "typed", "trace": blank_trace(), "errors": {}, "recent": RECENT_CHOICES[0], "result": None}


def posted_count(post: QueryDict, name: str = "count") -> int | None:
    """How many recent traces, if one of `RECENT_CHOICES`."""
    try:
        count = int(post.get(name, RECENT_CHOICES[0]))
    except ValueError:
        return None
    return count if count in RECENT_CHOICES else None


COUNT_ERROR = f"Choose {', '.join(map(str, RECENT_CHOICES))} traces."


def recent_dry_run(team_id: int, count: int, rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """`routing_dry_run_stored` on the team's ``count`` latest traces (``rule``: tried in)."""
    rows = list(Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id")[:count])
    records = [TraceRecord.from_trace(row) for row in rows]
    return shown(routing_dry_run_stored(team_id=team_id, records=records, rule=rule))


def _typed(request: DashboardRequest) -> HttpResponse:
    typed, trace, errors = posted_trace(request.POST)
    if errors:
        return _page(request, status=400, trace=typed, errors=errors)
    try:
        result = typed_dry_run(request.team.pk, typed, trace)
    except TraceInvalid as exc:
        return _page(request, status=400, trace=typed, errors=exc.errors)
    return _page(request, trace=typed, result=result, source="typed")


def _recent(request: DashboardRequest) -> HttpResponse:
    count = posted_count(request.POST)
    if count is None:
        return _page(request, status=400, errors={"count": [COUNT_ERROR]})
    return _page(request, result=recent_dry_run(request.team.pk, count), source="recent", recent=count)


def shown(result: dict[str, Any]) -> dict[str, Any]:
    """The dry run's answer, with what the page needs at hand per trace: the destinations it would
    send to, the matched rules, and the sampling in words (`sampling_words`)."""
    for item in result["results"]:
        ctx = item["trace"]
        item["kept"] = [d for d in item["decisions"] if d["kept"]]
        item["dropped"] = [d for d in item["decisions"] if not d["kept"]]
        item["matched"] = [e for e in item["evaluations"] if e["matched"]]
        item["cost_unknown"] = ctx.get("cost") is None
        several = len(item["decisions"]) > 1
        for d in item["decisions"]:
            d["words"] = sampling_words(item["sample_point"], d["rate"], d["kept"])
            if d["words"] and several:
                d["words"] = f"{d['destination']} {d['words']}"
        item["why"] = [d["words"] for d in item["decisions"] if d["words"]]
        if not item["matched"]:
            item["why"].insert(0, "no rule's condition matched")
        elif not item["decisions"]:
            item["why"].insert(0, "the matched rules send nowhere")
        elif not item["why"]:
            item["why"].append("rate 1: nothing sampled out")
        if item["policy"]["rate"] != 1 and item["decisions"]:
            item["why"].append(f"policy rate {item['policy']['rate']:g} ({item['policy']['reason']})")
    return result


def sampling_words(point: float, rate: float, kept: bool) -> str:
    """A destination's sampling decision in words: "kept: 0.68 is under the rate 0.9", "sampled out:
    0.68 is not under the rate 0.5"; "" when nothing is sampled (rate 1 keeps every trace). The point
    has two decimals, more where two would read wrongly (0.8951 under 0.9 is not "0.90")."""
    if kept and rate >= 1:
        return ""
    digits = 2
    while digits < 6 and (round(point, digits) < rate) != kept:
        digits += 1
    shown_point = f"{point:.{digits}f}"
    if kept:
        return f"kept: {shown_point} is under the rate {rate:g}"
    return f"sampled out: {shown_point} is not under the rate {rate:g}"
