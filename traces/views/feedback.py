"""The trace page's scores and public links (docs/scores.md, docs/sharing.md): a thumbs up or down
with a comment, and "Share" with the live links, each revocable. The same services as the API."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from config.problems import InvalidInput
from pipeline.scores import score_create
from traces.models import Trace
from traces.scores import parse_score, scores_of
from traces.selectors import trace_get
from traces.sharing import DEFAULT_DAYS, MAX_DAYS, PATH, live_links, parse_expiry, share_create, share_revoke

THUMBS = "thumbs"


def feedback_context(trace: Trace) -> dict[str, Any]:
    """What the trace page's partials (`traces/_scores.html`, `traces/_share.html`) show."""
    return {
        "scores": list(scores_of(trace)),
        "share_links": list(live_links(trace)),
        "share_default_days": DEFAULT_DAYS,
        "share_max_days": MAX_DAYS,
    }


def _trace_or_404(request: DashboardRequest, trace_id: str) -> Trace:
    trace = trace_get(team_id=request.team.pk, trace_id=trace_id)
    if trace is None:
        raise Http404("No such trace in this team.")
    return trace


@require_POST
@team_view(Permission.SEND_TEST_TRACES)
def trace_thumbs(request: DashboardRequest, trace_id: str) -> HttpResponse:
    trace = _trace_or_404(request, trace_id)
    vote = request.POST.get("value")
    body = {
        "name": THUMBS,
        "value": {"up": True, "down": False}.get(vote or "", vote),
        "comment": request.POST.get("comment", "").strip(),
        "source": "human",
    }
    try:
        data = parse_score(body)
        if not isinstance(data.value, bool):
            raise InvalidInput({"value": ["Choose thumbs up or thumbs down."]})
    except InvalidInput as exc:
        messages.error(request, "Not saved: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.errors.items()))
    else:
        score_create(trace=trace, data=data)
        messages.success(request, f"Thumbs {'up' if data.value else 'down'} saved; it goes wherever this trace went.")
    return redirect("trace-detail", trace_id=trace.trace_id)


@require_POST
@team_view(Permission.SEND_TEST_TRACES)
def trace_share(request: DashboardRequest, trace_id: str) -> HttpResponse:
    trace = _trace_or_404(request, trace_id)
    raw = request.POST.get("expires_in_days", "").strip()
    try:
        days = parse_expiry(
            {"expires_in_days": int(raw)} if raw.isdigit() else ({} if not raw else {"expires_in_days": raw})
        )
    except InvalidInput as exc:
        messages.error(request, "Not shared: " + " ".join(exc.errors.get("expires_in_days", ["invalid"])))
    else:
        link, token = share_create(trace=trace, days=days, actor=request_actor(request))
        url = request.build_absolute_uri(PATH + token)
        messages.success(request, f"Public link (copy it now, it is shown once; expires in {days} days): {url}")
    return redirect("trace-detail", trace_id=trace.trace_id)


@require_POST
@team_view(Permission.SEND_TEST_TRACES)
def trace_share_revoke(request: DashboardRequest, trace_id: str, link_id: int) -> HttpResponse:
    trace = _trace_or_404(request, trace_id)
    if share_revoke(trace=trace, actor=request_actor(request), link_id=link_id):
        messages.success(request, "Link revoked: it no longer opens.")
    else:
        messages.error(request, "That link was no longer live.")
    return redirect("trace-detail", trace_id=trace.trace_id)
