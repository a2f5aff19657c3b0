"""`/routing/test`: where would a trace go, and why? The API's dry run (`routing_dry_run`) on a
trace typed into the form, or on the team's most recent stored traces (`routing_dry_run_stored`),
under the saved rules and sampling policy. Nothing is stored or sent."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
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
TRACE_FIELDS += ("completion_tokens", "latency_ms", "tags", "metadata")
INTEGER_FIELDS = ("prompt_tokens", "completion_tokens", "latency_ms")
TRACE_INPUTS = (  # (field, label, placeholder); status and environment are selects
    ("model", "Model", "gpt-4o"),
    ("provider", "Provider", "from the model"),
    ("prompt_tokens", "Prompt tokens", "0"),
    ("completion_tokens", "Completion tokens", "0"),
    ("latency_ms", "Latency (ms)", "0"),
    ("tags", "Tags", "beta, eu"),
    ("id", "Trace id", "a new one"),
)


def _blank_trace() -> dict[str, str]:
    return {
        "model": "gpt-4o",
        "status": "success",
        "environment": "production",
        "prompt_tokens": "1200",
        "completion_tokens": "300",
    }


def _page(request: DashboardRequest, status: int = 200, **extra: Any) -> HttpResponse:
    team_id = request.team.pk
    context = {
        "tab": "test",
        "trace": _blank_trace(),
        "errors": {},
        "statuses": STATUSES,
        "trace_inputs": TRACE_INPUTS,
        "environments": ENVIRONMENTS,
        "recent_choices": RECENT_CHOICES,
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


def _posted_trace(request: DashboardRequest) -> tuple[dict[str, str], dict[str, Any], dict[str, list[str]]]:
    """(what was typed, the trace object for the dry run, errors found before it)."""
    typed = {name: request.POST.get(name, "").strip() for name in TRACE_FIELDS}
    typed["metadata"] = request.POST.get("metadata", "")
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


def _typed(request: DashboardRequest) -> HttpResponse:
    typed, trace, errors = _posted_trace(request)
    if errors:
        return _page(request, status=400, trace=typed, errors=errors)
    principal = KeyPrincipal(
        key_id=0,
        team_id=request.team.pk,
        environment=typed["environment"] or "production",
        prefix="",
        scopes=frozenset(),
    )
    try:
        result = routing_dry_run(
            principal=principal, items=[trace], rules=None, sampling=None, prefix="trace", single=True
        )
    except Problem as exc:
        errors = {
            path.removeprefix("trace").lstrip(".") or "": messages for path, messages in (exc.errors or {}).items()
        }
        if not errors:
            errors = {"": [str(exc.detail)]}
        return _page(request, status=400, trace=typed, errors=errors)
    return _page(request, trace=typed, result=_shown(result), source="typed")


def _recent(request: DashboardRequest) -> HttpResponse:
    try:
        count = int(request.POST.get("count", RECENT_CHOICES[0]))
    except ValueError:
        count = 0
    if count not in RECENT_CHOICES:
        return _page(
            request,
            status=400,
            errors={"count": [f"Choose {', '.join(map(str, RECENT_CHOICES))} traces."]},
        )
    rows = list(Trace.objects.filter(team_id=request.team.pk).order_by("-timestamp", "-id")[:count])
    records = [TraceRecord.from_trace(row) for row in rows]
    result = routing_dry_run_stored(team_id=request.team.pk, records=records)
    return _page(request, result=_shown(result), source="recent", recent=count, stored={r.trace_id: r for r in rows})


def _shown(result: dict[str, Any]) -> dict[str, Any]:
    """The dry run's answer, with what the page needs at hand per trace."""
    for item in result["results"]:
        ctx = item["trace"]
        item["kept"] = [d for d in item["decisions"] if d["kept"]]
        item["matched"] = [e for e in item["evaluations"] if e["matched"]]
        item["cost_unknown"] = ctx.get("cost") is None
    return result
