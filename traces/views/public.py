"""`/share/<token>`: a trace's public, read-only page (docs/sharing.md), open without signing in.

It shows what the call was (conversation, model, tokens, cost, latency, status) or the run's spans,
with the team's stored PII policy applied as it stands now; never metadata, tags, keys, routing,
deliveries or anything about the team. An unknown, expired or revoked token is a plain 404.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from config.money import usd
from privacy.records import stored_records
from traces.records import TraceRecord
from traces.sharing import run_spans, shared_trace

from .conversation import prompt_text, reply_text


def _shown(records: list[TraceRecord]) -> list[TraceRecord]:
    if not records:
        return records
    shown, _found = stored_records(records[0].team_id, records)
    return shown


@never_cache
def shared_trace_page(request: HttpRequest, token: str) -> HttpResponse:
    trace = shared_trace(token)
    if trace is None:
        response = render(request, "traces/shared_gone.html", status=404)
    else:
        spans = run_spans(trace)
        others = [s for s in spans if s.pk != trace.pk]
        shown = _shown([TraceRecord.from_trace(trace), *(TraceRecord.from_trace(s) for s in others)])
        record, run = shown[0], shown[1:]
        context = {
            "record": record,
            "cost": usd(record.cost, exact=True) if record.cost is not None else None,
            "prompt": prompt_text(record.input),
            "reply": reply_text(record.output),
            "spans": sorted([record, *run], key=lambda r: (r.timestamp is None, r.timestamp)) if run else [],
        }
        response = render(request, "traces/shared.html", context)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"  # the token is in the URL: never pass it on
    return response
