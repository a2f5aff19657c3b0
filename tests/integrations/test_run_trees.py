"""A run of three levels (an agent, a tool under it, a chat call under the tool) at every destination,
checked by the fakes against each one's documented schema: one trace, each span naming its parent."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from integrations.exporters import ids
from tests.factories import TeamFactory, TraceFactory
from tests.fakes import (
    FakeDatadog,
    FakeHelicone,
    FakeLangfuse,
    FakeLangSmith,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeWeave,
    FakeWebhookReceiver,
)
from traces.records import TraceRecord

from .conftest import make_exporter, make_record

RUN = "run-9"
AGENT, TOOL, CHAT = "run-9-agent", "run-9-tool", "run-9-chat"
START = datetime.now(UTC).replace(microsecond=250000) - timedelta(minutes=3)


def tree(team_id: int) -> list[TraceRecord]:
    """Root agent → tool → chat call, in the order OpenTelemetry exports them (children first)."""
    structural = {"model": "", "provider": "", "cost": None, "prompt_tokens": 0, "completion_tokens": 0}
    structural |= {"total_tokens": 0, "time_to_first_token_ms": None}
    agent = make_record(
        trace_id=AGENT,
        team_id=team_id,
        run_id=RUN,
        kind="agent",
        name="planner",
        timestamp=START,
        latency_ms=9000,
        input={"task": "find flights"},
        output="Booked.",
        **structural,
    )
    tool = make_record(
        trace_id=TOOL,
        team_id=team_id,
        run_id=RUN,
        parent_id=AGENT,
        kind="tool",
        name="search_flights",
        timestamp=START + timedelta(seconds=1),
        latency_ms=5000,
        input={"to": "OSL"},
        output=[{"flight": "SK1"}],
        **structural,
    )
    chat = make_record(
        trace_id=CHAT,
        team_id=team_id,
        run_id=RUN,
        parent_id=TOOL,
        kind="llm",
        name="chat gpt-4o-mini",
        timestamp=START + timedelta(seconds=2),
    )
    return [chat, tool, agent]


def stored(records: list[TraceRecord]) -> None:
    """The run's spans as ingest stored them (LangSmith reads a span's ancestors from there)."""
    for r in records:
        fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
        fields["tags"] = list(r.tags)
        for gone in ("team_id", "is_call"):
            fields.pop(gone, None)
        TraceFactory(team_id=r.team_id, **{k: v for k, v in fields.items() if k != "cost" or v is not None})


OTLP_FAMILY = {
    "otlp": (lambda: FakeOtlpCollector(), lambda url: {"endpoint": url}),
    "phoenix": (lambda: FakePhoenix(), lambda url: {"host": url, "projectName": "trips"}),
    "mlflow": (lambda: FakeMlflow(experiments=("3",)), lambda url: {"host": url, "experimentId": "3"}),
    "langfuse": (
        lambda: FakeLangfuse(public_key="pk", secret_key="sk"),
        lambda url: {"publicKey": "pk", "secretKey": "sk", "host": url},
    ),
    "weave": (
        lambda: FakeWeave(api_key="k", project_id="acme/trips"),
        lambda url: {"apiKey": "k", "projectId": "acme/trips", "host": url},
    ),
}


@pytest.mark.parametrize("platform", sorted(OTLP_FAMILY))
def test_the_otlp_family_gets_one_trace_whose_spans_name_their_parents(platform, http) -> None:
    make_server, config = OTLP_FAMILY[platform]
    with make_server() as server:
        make_exporter(platform, config(server.url), http).export(tree(7))

    assert server.problems == []
    spans = {s.attributes["tracerelay.trace_id"]: s for s in server.spans}
    assert {s.trace_id for s in spans.values()} == {ids.otel_trace_id(7, RUN).hex()}
    assert spans[AGENT].parent_span_id == ""
    assert spans[TOOL].parent_span_id == spans[AGENT].span_id
    assert spans[CHAT].parent_span_id == spans[TOOL].span_id
    assert (spans[AGENT].kind, spans[TOOL].kind, spans[CHAT].kind) == (1, 1, 3)  # INTERNAL, INTERNAL, CLIENT
    assert (spans[AGENT].name, spans[TOOL].name, spans[CHAT].name) == ("planner", "search_flights", "chat gpt-4o-mini")
    agent, tool = spans[AGENT].attributes, spans[TOOL].attributes
    assert agent["gen_ai.operation.name"] == "invoke_agent" and agent["gen_ai.agent.name"] == "planner"
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "search_flights"
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"to": "OSL"}
    assert "gen_ai.request.model" not in agent and "tracerelay.cost_usd" not in agent
    assert agent["tracerelay.run_id"] == RUN and tool["tracerelay.kind"] == "tool"
    if platform == "langfuse":
        types = [spans[k].attributes["langfuse.observation.type"] for k in (AGENT, TOOL, CHAT)]
        assert types == ["agent", "tool", "generation"]
        assert agent["langfuse.trace.name"] == "planner"  # the root names the trace …
        assert "langfuse.trace.name" not in spans[CHAT].attributes  # … and a child does not rename it
        assert json.loads(agent["langfuse.trace.input"]) == {"task": "find flights"}
    if platform in ("phoenix", "weave"):
        kinds = [spans[k].attributes["openinference.span.kind"] for k in (AGENT, TOOL)]
        assert kinds == ["AGENT", "TOOL"]
    if platform == "mlflow":
        kinds = [json.loads(spans[k].attributes["mlflow.spanType"]) for k in (AGENT, TOOL, CHAT)]
        assert kinds == ["AGENT", "TOOL", "LLM"]


@pytest.mark.django_db
def test_langsmith_gets_runs_with_trace_id_parent_run_id_and_dotted_order(http) -> None:
    team = TeamFactory()
    records = tree(team.pk)
    stored(records)
    with FakeLangSmith(api_key="k") as server:
        make_exporter("langsmith", {"apiKey": "k", "endpoint": server.url}, http).export(records)

    assert server.problems == []
    agent_id, tool_id, chat_id = (str(ids.run_uuid(team.pk, t)) for t in (AGENT, TOOL, CHAT))
    agent, tool, chat = server.runs[agent_id], server.runs[tool_id], server.runs[chat_id]
    assert {r["trace_id"] for r in (agent, tool, chat)} == {agent_id}
    assert "parent_run_id" not in agent
    assert (tool["parent_run_id"], chat["parent_run_id"]) == (agent_id, tool_id)
    assert chat["dotted_order"] == ".".join(
        [
            f"{(START + timedelta(seconds=s)):%Y%m%dT%H%M%S%f}Z{i}"
            for s, i in ((0, agent_id), (1, tool_id), (2, chat_id))
        ]
    )
    assert (agent["run_type"], tool["run_type"], chat["run_type"]) == ("chain", "tool", "llm")
    assert tool["inputs"] == {"to": "OSL"} and tool["outputs"] == {"output": [{"flight": "SK1"}]}


@pytest.mark.django_db
def test_langsmith_waits_for_a_parent_that_has_not_arrived_and_gives_up_after_an_hour(http) -> None:
    team = TeamFactory()
    chat, tool, agent = tree(team.pk)
    stored([chat, tool])  # the root agent is not stored yet
    exporter = make_exporter("langsmith", {"apiKey": "k", "endpoint": "http://127.0.0.1:9"}, http)

    encoded, refused = exporter.encode_batch([chat, tool])
    assert (encoded, refused) == ([], {})
    assert exporter.waiting == {
        0: f"LangSmith (dest) waits: its parent span '{TOOL}' (or an ancestor) has not arrived yet",
        1: f"LangSmith (dest) waits: its parent span '{AGENT}' (or an ancestor) has not arrived yet",
    }
    old = dataclasses.replace(tool, timestamp=datetime.now(UTC) - timedelta(hours=2))
    _, refused = exporter.encode_batch([old])
    assert "never arrived" in refused[0] and exporter.waiting == {}


def test_datadog_gets_spans_of_its_kinds_under_one_trace_with_parent_ids(http) -> None:
    with FakeDatadog(api_key="dd") as server:
        make_exporter("datadog", {"apiKey": "dd", "mlApp": "trips", "endpoint": server.url}, http).export(tree(7))

    assert server.problems == []
    spans = {s["meta"]["metadata"]["tracerelay_trace_id"]: s for s in server.spans}
    assert {s["trace_id"] for s in spans.values()} == {ids.otel_trace_id(7, RUN).hex()}
    assert spans[AGENT]["parent_id"] == "undefined"
    assert spans[TOOL]["parent_id"] == spans[AGENT]["span_id"]
    assert spans[CHAT]["parent_id"] == spans[TOOL]["span_id"]
    assert [spans[k]["meta"]["kind"] for k in (AGENT, TOOL, CHAT)] == ["agent", "tool", "llm"]
    assert spans[TOOL]["meta"]["input"] == {"value": '{"to":"OSL"}'}
    assert "model_name" not in spans[AGENT]["meta"] and spans[AGENT]["metrics"] == {}


def test_the_webhook_carries_run_id_parent_id_kind_and_name(http) -> None:
    with FakeWebhookReceiver() as server:
        make_exporter("webhook", {"url": server.url + "/hook"}, http).export(tree(7))

    assert server.problems == []
    sent = {t["id"]: t for t in server.traces}
    assert {t["run_id"] for t in sent.values()} == {RUN}
    assert [sent[k]["parent_id"] for k in (AGENT, TOOL, CHAT)] == [None, AGENT, TOOL]
    assert [sent[k]["kind"] for k in (AGENT, TOOL, CHAT)] == ["agent", "tool", "llm"]
    assert sent[TOOL]["name"] == "search_flights" and sent[AGENT]["model"] == ""


def test_helicone_logs_the_call_in_its_runs_session_and_skips_the_structure(http) -> None:
    with FakeHelicone(api_key="hk") as server:
        exporter = make_exporter("helicone", {"apiKey": "hk", "endpoint": server.url, "apiUrl": server.url}, http)
        for record in tree(7):
            exporter.export([record])  # one per request, as delivery sends them

    assert server.problems == []
    [log] = server.logs.values()
    meta = log["providerRequest"]["meta"]
    assert meta["Helicone-Request-Id"] == str(ids.run_uuid(7, CHAT))
    assert meta["Helicone-Session-Id"] == "sess-42"  # its own session first; else the run
    assert meta["Helicone-Property-Tracerelay-Run-Id"] == RUN
