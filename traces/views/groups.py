"""`/sessions` and `/users`: the session ids and end-user ids seen in a time range, with their
totals (`traces.selectors.trace_groups`), each opening the feed filtered to it; `/sessions/<id>`:
a session's calls in time order as a conversation."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse

from accounts.access import DashboardRequest, team_view
from traces.selectors import session_calls, trace_groups

from .conversation import prompt_text, reply_text
from .forms import FeedFilterForm
from .run_source import RunFilter, run_list

GROUPS_MAX = 100
CALLS_MAX = 500
SESSION_RUNS = 50
DEFAULT_RANGE = "24h"
KINDS = {
    "session_id": {"title": "Sessions", "noun": "session", "url": "trace-sessions"},
    "user_id": {"title": "Users", "noun": "user", "url": "trace-users"},
}


def _groups(request: DashboardRequest, field: str) -> HttpResponse:
    params = request.GET.copy()
    if not any(params.get(k) for k in ("time_range", "since", "until")):
        params["time_range"] = DEFAULT_RANGE  # always a bounded range
    form = FeedFilterForm(params)
    trace_filter = form.trace_filter()
    kind = KINDS[field]
    context: dict[str, Any] = {"form": form, "kind": kind, "field": field, "groups": []}
    if trace_filter is None:
        return render(request, "traces/groups.html", context, status=400)
    rows = trace_groups(team_id=request.team.pk, field=field, trace_filter=trace_filter, limit=GROUPS_MAX)
    range_query = {k: v for k, v in form.filter_params().items() if k in ("time_range", "since", "until")}
    feed = reverse("trace-feed")
    for row in rows:
        row["id"] = row[field]
        row["feed_url"] = f"{feed}?{urlencode({**range_query, field: row[field]}, doseq=True)}"
        if field == "session_id":
            row["session_url"] = reverse("trace-session", args=[row[field]])
            row["runs_url"] = f"{reverse('run-list')}?{urlencode({field: row[field]})}"
    context |= {"groups": rows, "capped": len(rows) == GROUPS_MAX}
    return render(request, "traces/groups.html", context)


@team_view()
def sessions(request: DashboardRequest) -> HttpResponse:
    return _groups(request, "session_id")


@team_view()
def users(request: DashboardRequest) -> HttpResponse:
    return _groups(request, "user_id")


@team_view()
def session_detail(request: DashboardRequest, session_id: str) -> HttpResponse:
    calls = session_calls(team_id=request.team.pk, session_id=session_id, limit=CALLS_MAX + 1)
    turns = [{"trace": t, "prompt": prompt_text(t.input), "reply": reply_text(t.output)} for t in calls[:CALLS_MAX]]
    query = QueryDict(mutable=True)
    query["session_id"] = session_id
    session_runs, more_runs = run_list(
        team_id=request.team.pk, run_filter=RunFilter(session_id=session_id), limit=SESSION_RUNS
    )
    runs_url = f"{reverse('run-list')}?{query.urlencode()}"
    for run in session_runs:
        run["url"] = reverse("run-detail", args=[run["run_id"]])
    context = {
        "session_id": session_id,
        "runs": session_runs,
        "more_runs": bool(more_runs),
        "runs_url": runs_url,
        "turns": turns,
        "capped": len(calls) > CALLS_MAX,
        "feed_url": f"{reverse('trace-feed')}?{query.urlencode()}",
        "errors": sum(1 for t in calls if t.status != "success"),
        "tokens": sum(t.total_tokens for t in calls),
    }
    return render(request, "traces/session.html", context)
