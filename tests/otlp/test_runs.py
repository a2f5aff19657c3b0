"""OTLP keeps a run whole: every span stored with its parent, kind and name, whatever the export order
(issue 22, "Checked by": an `invoke_agent` root, a tool span, two chat spans of different models under
different parents, the root exported last in its own request)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from traces.models import Trace
from traces.otlp.mapping import trace_id_for

from .builders import PROTOBUF, START, protobuf, span

RUN = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
ROOT, TOOL, CHAT_A, CHAT_B = (bytes.fromhex(h) for h in ("00f067aa0ba902b7", "1111111111111111", "2222222222222222",
                                                         "3333333333333333"))  # fmt: skip
MS = 1_000_000


def post(client: Any, body: bytes) -> None:
    r = client.post("/api/v1/otlp/v1/traces", data=body, content_type=PROTOBUF)
    assert r.status_code == 200, r.content
    assert r.content == b"", "no span refused"


def agent_run(start: int = START) -> tuple[list[Any], Any]:
    """(the children, in the order an SDK ends them, and the root): the agent answers with gpt-4o-mini
    and calls a tool that asks claude. The root names a model and carries the whole run's usage, as
    agent frameworks' `invoke_agent` spans do."""
    root = span(
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage", "gen_ai.request.model": "gpt-4o-mini",
         "gen_ai.usage.input_tokens": 130, "gen_ai.usage.output_tokens": 25},
        name="invoke_agent triage", trace_id=RUN, span_id=ROOT, start=start, duration_ms=2500,
    )  # fmt: skip
    tool = span(
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
         "gen_ai.tool.call.arguments": '{"order": 42}', "gen_ai.tool.call.result": '{"status": "shipped"}'},
        name="execute_tool lookup_order", trace_id=RUN, span_id=TOOL, parent_span_id=ROOT,
        start=start + 100 * MS, duration_ms=1200,
    )  # fmt: skip
    chat_b = span(
        {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
         "gen_ai.request.model": "claude-3-5-haiku-20241022", "gen_ai.usage.input_tokens": 30,
         "gen_ai.usage.output_tokens": 5},
        name="chat claude-3-5-haiku-20241022", trace_id=RUN, span_id=CHAT_B, parent_span_id=TOOL,
        start=start + 200 * MS, duration_ms=900,
    )  # fmt: skip
    chat_a = span(
        {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
         "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20},
        name="chat gpt-4o-mini", trace_id=RUN, span_id=CHAT_A, parent_span_id=ROOT,
        start=start + 1400 * MS, duration_ms=1000,
    )  # fmt: skip
    return [chat_b, tool, chat_a], root


def item_id(span_id: bytes) -> str:
    return trace_id_for(RUN.hex(), span_id.hex())


def stored(team: Any) -> dict[str, Trace]:
    return {t.trace_id: t for t in Trace.objects.filter(team=team, run_id=RUN.hex())}


def test_an_agent_run_exported_root_last_is_stored_as_its_tree(api, team) -> None:
    children, root = agent_run(time.time_ns() - 60 * 1_000_000_000)  # a minute ago: in analytics' last hour
    post(api, protobuf(*children))
    early = stored(team)
    assert set(early) == {item_id(TOOL), item_id(CHAT_A), item_id(CHAT_B)}
    assert early[item_id(TOOL)].parent_id == item_id(ROOT)  # named before its parent arrives

    post(api, protobuf(root))  # the root ends last, in a request of its own
    spans = stored(team)
    assert len(spans) == 4
    tree = {t.trace_id: (t.parent_id, t.kind, t.name) for t in spans.values()}
    assert tree == {
        item_id(ROOT): ("", "agent", "invoke_agent triage"),
        item_id(TOOL): (item_id(ROOT), "tool", "execute_tool lookup_order"),
        item_id(CHAT_A): (item_id(ROOT), "llm", "chat gpt-4o-mini"),
        item_id(CHAT_B): (item_id(TOOL), "llm", "chat claude-3-5-haiku-20241022"),
    }
    for t in spans.values():  # every parent is a span of the same run: the tree is connected
        assert t.parent_id == "" or t.parent_id in spans
        assert t.source == "otlp" and t.service_name == "checkout"

    # Only the two chat spans are calls: priced with their own usage. The root's usage (the run's,
    # again) stays in its metadata and is never counted: the run costs what its calls cost.
    a, b, agent, tool = (spans[item_id(s)] for s in (CHAT_A, CHAT_B, ROOT, TOOL))
    assert (a.model, a.prompt_tokens, a.completion_tokens) == ("gpt-4o-mini", 100, 20)
    assert (b.model, b.provider, b.prompt_tokens) == ("claude-3-5-haiku-20241022", "anthropic", 30)
    assert a.cost and a.cost > 0 and b.cost and b.cost > 0 and not a.unpriced and not b.unpriced
    assert (agent.prompt_tokens, agent.completion_tokens, agent.cost, agent.unpriced) == (0, 0, None, False)
    assert agent.metadata["gen_ai.usage.input_tokens"] == 130 and agent.model == "gpt-4o-mini"
    assert (tool.cost, tool.unpriced, tool.model) == (None, False, "")
    assert (tool.input, tool.output) == ({"order": 42}, {"status": "shipped"})
    assert (agent.latency_ms, tool.latency_ms) == (2500, 1200)
    total = sum((t.cost or Decimal(0)) for t in spans.values())
    assert total == a.cost + b.cost

    # The run API returns the tree and its totals: the two chat spans are the run's calls.
    body = api.get(f"/api/v1/runs/{RUN.hex()}").json()
    assert {sp["id"]: (sp["parent_id"], sp["kind"]) for sp in body["spans"]} == {
        k: (v[0] or None, v[1]) for k, v in tree.items()
    }
    totals = body["totals"]
    assert (totals["spans"], totals["llm_calls"], totals["unpriced_calls"], totals["errors"]) == (4, 2, 0, 0)
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (130, 25)
    assert Decimal(str(totals["cost"])) == a.cost + b.cost and totals["duration_ms"] == 2500
    assert not any(sp["unpriced"] for sp in body["spans"])

    # Analytics count the two chat spans as the run's calls, nothing structural, nothing unpriced.
    totals = api.get("/api/v1/analytics", {"time_range": "1h"}).json()["totals"]
    assert (totals["count"], totals["unpriced"]) == (2, 0)
    assert totals["total_tokens"] == a.total_tokens + b.total_tokens


@pytest.mark.parametrize("order", ["one request, root first", "one request, root last", "span by span"])
def test_the_tree_is_the_same_whatever_the_export_order(api, team, order: str) -> None:
    children, root = agent_run()
    if order == "one request, root first":
        post(api, protobuf(root, *children))
    elif order == "one request, root last":
        post(api, protobuf(*children, root))
    else:
        for s in [*children, root]:
            post(api, protobuf(s))
    spans = stored(team)
    assert {k: (t.parent_id, t.kind) for k, t in spans.items()} == {
        item_id(ROOT): ("", "agent"),
        item_id(TOOL): (item_id(ROOT), "tool"),
        item_id(CHAT_A): (item_id(ROOT), "llm"),
        item_id(CHAT_B): (item_id(TOOL), "llm"),
    }
    assert {t.trace_id for t in spans.values() if t.cost} == {item_id(CHAT_A), item_id(CHAT_B)}


def test_a_run_sent_again_stores_nothing_twice(api, team) -> None:
    children, root = agent_run()
    body = protobuf(*children, root)
    post(api, body)
    post(api, body)  # an exporter's retry
    assert Trace.objects.filter(team=team, run_id=RUN.hex()).count() == 4


def test_a_call_wrapping_another_call_of_its_request_is_structural(api, team) -> None:
    """A framework's LLM span around the instrumented client's own (OpenInference LangChain + OpenAI):
    both name a model and carry the same usage; only the inner one is the call."""
    usage = {"llm.model_name": "gpt-4o-mini", "llm.token_count.prompt": 50, "llm.token_count.completion": 8}
    outer = span({"openinference.span.kind": "LLM", **usage}, name="ChatOpenAI", trace_id=RUN, span_id=ROOT)
    step = span({"openinference.span.kind": "CHAIN"}, name="step", trace_id=RUN, span_id=TOOL, parent_span_id=ROOT)
    inner = span({"openinference.span.kind": "LLM", **usage}, name="ChatCompletion", trace_id=RUN, span_id=CHAT_A,
                 parent_span_id=TOOL)  # fmt: skip
    post(api, protobuf(inner, step, outer))
    spans = stored(team)
    wrapper, call = spans[item_id(ROOT)], spans[item_id(CHAT_A)]
    assert (wrapper.kind, wrapper.prompt_tokens, wrapper.cost) == ("chain", 0, None)
    assert wrapper.metadata["llm.token_count.prompt"] == 50
    assert (call.kind, call.prompt_tokens) == ("llm", 50) and call.cost and call.cost > 0


def test_spans_of_no_known_kind_are_kept_as_other(api, team) -> None:
    http = span({"http.request.method": "POST", "http.route": "/answer"}, name="POST /answer", trace_id=RUN,
                span_id=ROOT)  # fmt: skip
    db = span({"db.system.name": "postgresql"}, name="SELECT orders", trace_id=RUN, span_id=TOOL, parent_span_id=ROOT)
    post(api, protobuf(db, http))
    spans = stored(team)
    assert {(t.kind, t.name, t.cost, t.unpriced) for t in spans.values()} == {
        ("other", "POST /answer", None, False),
        ("other", "SELECT orders", None, False),
    }
    assert spans[item_id(TOOL)].metadata["db.system.name"] == "postgresql"


def test_a_run_of_10000_spans_is_stored_whole(api, team) -> None:
    """Ten thousand spans of one trace (a tree three wide, every fourth leaf a chat call), exported
    children first in a BatchSpanProcessor's batches of 512: every span stored, every parent link resolves."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    n = 10_000
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 2}  # fmt: skip
    step = {"traceloop.span.kind": "task"}
    ids = [i.to_bytes(8, "big") for i in range(1, n + 1)]
    calls = {i for i in range(n) if 3 * i + 1 >= n and i % 4 == 3}  # leaves: a call wraps no other call
    spans: list[Span] = []
    for i in reversed(range(n)):  # the deepest end first; the root (0) last
        spans.append(
            span(chat if i in calls else step, name=f"span {i}", trace_id=RUN, span_id=ids[i],
                 parent_span_id=ids[(i - 1) // 3] if i else b"", start=START + i * MS, duration_ms=5)
        )  # fmt: skip
    for first in range(0, n, 512):
        post(api, protobuf(*spans[first : first + 512]))
    rows = list(Trace.objects.filter(team=team, run_id=RUN.hex()).values_list("trace_id", "parent_id", "kind"))
    assert len(rows) == n
    stored_ids = {trace_id for trace_id, _, _ in rows}
    assert all(parent == "" or parent in stored_ids for _, parent, _ in rows)
    assert sum(1 for _, parent, _ in rows if parent == "") == 1
    assert sum(1 for _, _, kind in rows if kind == "llm") == len(calls) > 1600
    body = api.get(f"/api/v1/runs/{RUN.hex()}").json()  # and the run API gives it back whole
    assert len(body["spans"]) == body["totals"]["spans"] == n and not body["truncated"]
    assert body["totals"]["llm_calls"] == len(calls)


def test_a_rule_on_one_chat_model_sends_it_with_its_run_to_a_webhook_once_each(api, team) -> None:
    """The OTLP run routed as a tree (docs/routing.md, "Runs"): the gpt-4o-mini call and the run's
    structure reach the webhook once each, root last; the claude call matched no rule and is not sent."""
    from delivery.engine import deliver_batch
    from delivery.models import Delivery, DeliveryStatus
    from tests.e2e.sink import WebhookSink
    from tests.factories import IntegrationFactory, RoutingRuleFactory

    def deliver() -> None:
        deliver_batch(list(Delivery.objects.filter(status=DeliveryStatus.PENDING).values_list("pk", flat=True)))

    with WebhookSink() as sink:
        IntegrationFactory(team=team, name="hook", platform="webhook", config={"url": sink.url, "headers": {}})
        rule = {"name": "hook", "sample_rate": 1.0, "tags": [], "fallback": []}
        RoutingRuleFactory(team=team, name="mini", conditions='kind == "llm" && model == "gpt-4o-mini"',
                           destinations=[rule])  # fmt: skip
        children, root = agent_run()
        post(api, protobuf(*children))
        deliver()
        post(api, protobuf(root))  # the root last, in its own request
        deliver()
        deliver()  # nothing is sent twice

        assert set(sink.stored) == {item_id(CHAT_A), item_id(TOOL), item_id(ROOT)}
        assert sink.duplicates == {} and sink.errors == []
        assert {p["run_id"] for p in sink.stored.values()} == {RUN.hex()}
        assert sink.stored[item_id(ROOT)]["parent_id"] is None
        assert sink.stored[item_id(CHAT_A)]["parent_id"] == item_id(ROOT)
        assert sink.stored[item_id(TOOL)]["kind"] == "tool"
    assert not Delivery.objects.filter(trace__trace_id=item_id(CHAT_B)).exists()
