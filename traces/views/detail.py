"""`/traces/<id>`: one trace and the retry of a delivery, through `delivery.services.delivery_replay`
as the API's replay (audited there).

The conversation comes first (`messages.conversation`: system, user, assistant, tool calls and their
results), then cost, routing and deliveries, then the request and response as pretty, foldable JSON,
tags and metadata, and debug mode's records with their bodies formatted."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from config.money import usd
from debugmode.selectors import trace_debug_records
from delivery.selectors import trace_deliveries
from delivery.services import REPLAYABLE, NotReplayable, delivery_replay
from integrations.selectors import trace_links
from traces.kinds import CALL_KINDS
from traces.models import Trace
from traces.pricing import PRICE_SOURCE, TEAM_SOURCE, breakdown, team_breakdown
from traces.selectors import trace_get
from traces.usage import TokenDetails

from .feedback import feedback_context
from .messages import conversation
from .rows import run_url

FOLD_LINES = 40  # longer JSON (or longer than FOLD_CHARS) is folded in a <details>
FOLD_CHARS = 3000


def pretty(value: Any) -> dict[str, Any]:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    lines = text.count("\n") + 1
    return {
        "text": text,
        "lines": lines,
        "folded": lines > FOLD_LINES or len(text) > FOLD_CHARS,
        "empty": value is None,
    }


def routing_line(decision: dict[str, Any]) -> dict[str, Any]:
    """A decision as the page says it: the destination, the deciding rule named once, and what the
    router's reason adds to that (the sampling that kept or dropped it); its text names the rule
    itself ("matched rule 'x', kept by sampling (…)"), which the page already says."""
    rule = decision.get("rule") or ""
    reason = str(decision.get("reason") or "")
    if rule:
        reason = re.sub(rf"^matched rule '{re.escape(rule)}'(, )?", "", reason)
    reason = re.sub(r"^sampled out: ", "", reason)
    if reason.startswith("(") and reason.endswith(")"):
        reason = reason[1:-1]
    return {**decision, "rule": rule, "detail": reason}


def formatted_body(text: str | None) -> str | None:
    """A recorded request or response body for people: JSON (or JSON lines) indented, else as it is."""
    if not text:
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    lines = text.splitlines()
    if len(lines) > 1:
        try:
            return "\n".join(
                json.dumps(json.loads(line), indent=2, ensure_ascii=False) for line in lines if line.strip()
            )
        except ValueError:
            pass
    return text


def _debug(trace: Trace) -> dict[str, Any]:
    debug = trace_debug_records(trace.pk)
    for record in debug.get("export", ()):
        for exchange in record.data.get("exchanges") or ():
            for side in ("request_body", "response_body"):
                body = exchange.get(side)
                if isinstance(body, dict) and body.get("text") is not None:
                    body["shown"] = formatted_body(body["text"])
    return debug


def _trace_or_404(request: DashboardRequest, trace_id: str) -> Trace:
    trace = trace_get(team_id=request.team.pk, trace_id=trace_id)
    if trace is None:
        raise Http404("No such trace in this team.")
    return trace


def cost_parts(trace: Trace) -> dict[str, Any] | None:
    """The cost breakdown of a priced call (input, cached, cache write, output, reasoning, audio,
    image), each part's tokens and cost; None for a span that is no call or an unpriced one."""
    if trace.kind not in CALL_KINDS or trace.unpriced or trace.cost is None:
        return None
    usage: dict[str, Any] = {
        "model": trace.model,
        "provider": trace.provider,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "timestamp": trace.timestamp,
        "details": TokenDetails.of(trace),
    }
    if trace.price_source == PRICE_SOURCE:
        parts = breakdown(**usage)
    elif trace.price_source == TEAM_SOURCE:
        parts = team_breakdown(team_id=trace.team_id, version=trace.price_version, **usage)
    else:
        return None
    if not parts:
        return None
    reasoning_apart = any(p.key == "output_reasoning_tokens" for p in parts)
    return {
        "rows": [
            {"label": p.label, "key": p.key, "tokens": f"{p.tokens:,}", "cost": usd(p.cost, exact=True)} for p in parts
        ],
        # Reasoning priced at the output rate is part of the Output row: said there.
        "reasoning_in_output": trace.reasoning_tokens if trace.reasoning_tokens and not reasoning_apart else 0,
    }


@team_view()
def trace_detail(request: DashboardRequest, trace_id: str) -> HttpResponse:
    trace = _trace_or_404(request, trace_id)
    decisions = [routing_line(d) for d in trace.routing or () if isinstance(d, dict)]
    deliveries = trace_deliveries(trace.pk)
    # "Open in <tool>": where a destination that has the trace shows it, when its config says enough.
    delivered = [d.integration_id for d in deliveries if d.status == "delivered" and d.integration_id]
    links = (
        trace_links(team_id=trace.team_id, trace_id=trace.trace_id, run_id=trace.run_id, integration_ids=delivered)
        if delivered
        else {}
    )
    for d in deliveries:
        d.open_in = links.get(d.integration_id or 0) if d.status == "delivered" else None  # type: ignore[attr-defined]

    context = {
        "trace": trace,
        # One trace's cost with every stored digit: $0.00006, not $0.0000600000 (the column keeps ten places).
        "cost": usd(trace.cost, exact=True),
        "client_cost": usd(trace.client_cost, exact=True),
        "conversation": conversation(trace.input, trace.output),  # not "messages": Django's own
        "input": pretty(trace.input),
        "output": pretty(trace.output),
        "metadata": pretty(trace.metadata) if trace.metadata else None,
        "kept": [d for d in decisions if d.get("kept")],
        "sampled_out": [d for d in decisions if not d.get("kept")],
        "deliveries": deliveries,
        "replayable": {str(s) for s in REPLAYABLE},
        "debug": _debug(trace),
        "run_url": run_url(trace),
        **feedback_context(trace),
        "cost_parts": cost_parts(trace),
    }
    return render(request, "traces/detail.html", context)


@require_POST
@team_view(Permission.REPLAY_DELIVERIES)
def delivery_retry(request: DashboardRequest, trace_id: str, delivery_id: int) -> HttpResponse:
    trace = _trace_or_404(request, trace_id)
    delivery = next((d for d in trace_deliveries(trace.pk) if d.pk == delivery_id), None)
    if delivery is None:
        raise Http404("No such delivery of this trace.")
    try:
        delivery_replay(delivery=delivery, actor=request_actor(request))
    except NotReplayable as exc:
        messages.error(request, f"Not retried: {exc}.")
    else:
        messages.success(request, f"Delivery to {delivery.destination} queued again.")
    return redirect("trace-detail", trace_id=trace.trace_id)
