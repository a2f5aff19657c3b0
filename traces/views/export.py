"""`/traces/export`: the feed's Export menu (docs/export.md). The same stream as
`GET /api/v1/traces/export`, for a person signed in: every trace the feed lists for its filter."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse

from accounts.access import DashboardRequest, team_view
from traces.export import FORMATS, export_response

from .forms import FeedFilterForm


@team_view()  # type: ignore[type-var]  # typed for HttpResponse; a StreamingHttpResponse serves alike
def trace_export(request: DashboardRequest) -> HttpResponse | StreamingHttpResponse:
    """Anyone who can read the feed can export it: it shows the same traces, with what the trace page shows."""
    fmt = request.GET.get("format", "jsonl")
    if fmt not in FORMATS:
        return HttpResponse(f"Export as {' or '.join(FORMATS)}.", status=400, content_type="text/plain")
    params = request.GET.copy()
    params.pop("format", None)
    trace_filter = FeedFilterForm(params).trace_filter()
    if trace_filter is None:
        return HttpResponse("Fix the feed's filter, then export again.", status=400, content_type="text/plain")
    return export_response(request, team_id=request.team.pk, trace_filter=trace_filter, fmt=fmt)
