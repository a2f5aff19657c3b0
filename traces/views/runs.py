"""`/runs` and `/runs/<run_id>`: agent runs, each a tree of spans (issue 22, docs/dashboard.md).

The list is the feed's kind of table over runs (newest first, filters in the URL, cursor pages). A
run's page renders its header (name, status, totals) on the server and loads the spans as JSON once
(`/runs/<run_id>/spans.json`, one array per span); `static/dashboard/runtree.js` builds the tree,
rolls totals up per subtree and renders only the rows on screen, so 10,000 spans open at once. A
span's input, output and metadata come from `/runs/<run_id>/spans/<span_id>` (a panel for the page,
or a page of its own without JavaScript).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.access import DashboardRequest, team_view
from config.money import usd
from traces.filters import FilterError
from traces.models import CALL_KINDS, Trace

from .detail import pretty
from .messages import conversation
from .run_forms import RunFilterForm
from .run_source import run_list, run_spans, run_summary

PAGE = 50
# A span's kind as the pages name it (runtree.js has the same words).
KIND_LABELS = {
    "llm": "LLM",
    "embedding": "Embedding",
    "agent": "Agent",
    "tool": "Tool",
    "retrieval": "Retrieval",
    "chain": "Chain",
    "workflow": "Workflow",
    "guardrail": "Guardrail",
    "event": "Event",
    "other": "Other",
}


def _url(name: str, query: str, **extra: str) -> str:
    parts = [query] if query else []
    if extra:
        parts.append(urlencode(extra))
    return reverse(name) + ("?" + "&".join(parts) if parts else "")


def run_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list's rows with their link and the duration as people read it."""
    for row in rows:
        row["url"] = reverse("run-detail", args=[row["run_id"]])
        row["duration"] = duration_text(row["duration_ms"])
        row["tokens"] = row["prompt_tokens"] + row["completion_tokens"]
    return rows


def duration_text(ms: int | None) -> str:
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s" if ms < 10_000 else f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


@team_view()
def runs(request: DashboardRequest) -> HttpResponse:
    form = RunFilterForm(request.GET)
    query = form.query()
    has_blanks = any(not v.strip() for _, vs in request.GET.lists() for v in vs)
    if has_blanks and not request.htmx:
        return redirect(_url("run-list", query))  # a GET form sends its empty fields: share a clean URL
    context: dict[str, Any] = {"form": form, "query": query, "filtered": bool(query)}
    run_filter = form.run_filter()
    if run_filter is None:
        return render(request, "traces/runs.html", {**context, "invalid": True}, status=400)
    cursor = request.GET.get("cursor") or None
    try:
        rows, next_cursor = run_list(team_id=request.team.pk, run_filter=run_filter, limit=PAGE, cursor=cursor)
    except FilterError as exc:
        form.add_error(None, exc.message)
        return render(request, "traces/runs.html", {**context, "invalid": True}, status=400)
    context |= {
        "rows": run_rows(rows),
        "paged": bool(cursor),
        "more_url": _url("run-list", query, cursor=next_cursor) if next_cursor else "",
    }
    template = "traces/runs.html#more" if request.htmx.target == "runs-more" else "traces/runs.html"
    return render(request, template, context)


@team_view()
def run_page(request: DashboardRequest, run_id: str) -> HttpResponse:
    summary = run_summary(team_id=request.team.pk, run_id=run_id)
    if summary is None:
        raise Http404("No such run in this team.")
    selected = request.GET.get("span", "")
    panel = _panel_context(request, run_id, selected) if selected else None
    context = {
        "run": run_rows([summary])[0],
        "panel": panel,
        "selected": selected if panel else "",
        "spans_url": reverse("run-spans", args=[run_id]),
        "span_url": reverse("run-span", args=[run_id, "__SPAN__"]),
        "page_url": reverse("run-detail", args=[run_id]),
        "noscript_spans": _noscript_spans(request.team.pk, run_id),
    }
    return render(request, "traces/run.html", context)


NOSCRIPT_SPANS = 200


def _noscript_spans(team_id: int, run_id: str) -> list[Any]:
    """Without JavaScript the tree cannot be drawn: the first spans in time order, as links."""
    qs = Trace.objects.filter(team_id=team_id, run_id=run_id).order_by("timestamp", "id")
    return list(qs.values("trace_id", "kind", "name", "model", "status")[:NOSCRIPT_SPANS])


@team_view()
def run_spans_json(request: DashboardRequest, run_id: str) -> HttpResponse:
    """Every span of the run and its totals, in one JSON document (`run_source.run_spans`)."""
    body = run_spans(team_id=request.team.pk, run_id=run_id)
    if body is None:
        raise Http404("No such run in this team.")
    return HttpResponse(body, content_type="application/json")


def _panel_context(request: DashboardRequest, run_id: str, span_id: str) -> dict[str, Any] | None:
    span = Trace.objects.filter(team_id=request.team.pk, run_id=run_id, trace_id=span_id).first()
    if span is None:
        return None
    messages = conversation(span.input, span.output)
    is_call = span.kind in CALL_KINDS
    return {
        "span": span,
        "kind_label": KIND_LABELS.get(span.kind, span.kind),
        "is_call": is_call,
        "cost": usd(span.cost, exact=True) if is_call and not span.unpriced and span.cost is not None else "",
        "duration": duration_text(span.latency_ms),
        "messages": messages,
        "input": None if messages else pretty(span.input),
        "output": None if messages else pretty(span.output),
        "metadata": pretty(span.metadata) if span.metadata else None,
        "trace_url": reverse("trace-detail", args=[span.trace_id]),
        "run_url": reverse("run-detail", args=[run_id]) + "?" + urlencode({"span": span.trace_id}),
    }


@team_view()
def run_span(request: DashboardRequest, run_id: str, span_id: str) -> HttpResponse:
    """One span's input, output and metadata: the run page's side panel (htmx), or a page of its own."""
    panel = _panel_context(request, run_id, span_id)
    if panel is None:
        raise Http404("No such span in this run.")
    template = "traces/run_span.html#panel" if request.htmx else "traces/run_span.html"
    return render(request, template, {"panel": panel, "run_id": run_id})
