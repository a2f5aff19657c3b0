"""Runs routed as trees (delivery.runs, docs/routing.md "Runs"): a structural span follows its run to
every destination a span of the run was routed to, whichever arrives first; a call goes only where
its own rules send it; each span reaches each destination once, retries and replays included."""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from accounts.principals import KeyPrincipal
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus, RunRoute
from delivery.services import deliveries_replay_dead
from pipeline.services import PendingTrace, traces_store
from tests.e2e.sink import WebhookSink
from tests.factories import ApiKeyFactory, RoutingRuleFactory, TeamFactory
from traces.models import Trace
from traces.normalize import normalize_trace

from .scripted import make_integration

pytestmark = pytest.mark.django_db


def principal_for(team) -> KeyPrincipal:
    key = ApiKeyFactory(team=team, environment="production")
    return KeyPrincipal(key.id, team.id, "production", key.prefix, key.scopes)


def span(
    principal: KeyPrincipal,
    id: str,
    run: str,
    kind: str,
    *,
    parent: str = "",
    model: str = "",
    name: str = "",
    start: Any = None,
    **item: Any,
) -> PendingTrace:
    """A span as the doors hand it to the pipeline (normalised and priced, with its run fields)."""
    item = {"id": id, "model": model or "structural", "timestamp": (start or timezone.now()).isoformat(), **item}
    record = normalize_trace(item, team_id=principal.team_id, environment=principal.environment, source="otlp")
    record = dataclasses.replace(record, run_id=run, parent_id=parent, kind=kind, name=name or id)
    if kind not in ("llm", "embedding"):
        record = dataclasses.replace(record, model="", provider="", cost=None, unpriced=False, price_source="")
    return PendingTrace(0, record, principal, True)


def store(*spans: PendingTrace) -> list[Trace]:
    return [row for row, _ in traces_store(list(spans))]


def dest(name: str, rate: float = 1.0) -> dict[str, Any]:
    return {"name": name, "sample_rate": rate, "tags": [], "fallback": []}


def deliver_all() -> None:
    ids = list(Delivery.objects.filter(status=DeliveryStatus.PENDING).values_list("pk", flat=True))
    if ids:
        deliver_batch(ids)


def routed(destination: str) -> set[str]:
    return set(Delivery.objects.filter(destination=destination).values_list("trace__trace_id", flat=True))


@pytest.fixture
def sink():
    with WebhookSink() as server:
        yield server


@pytest.fixture
def team_hook(sink, published):
    team = TeamFactory()
    make_integration(team, "hook", config={"url": sink.url, "headers": {}})
    return team


def agent_run(principal: KeyPrincipal, run: str = "run-1") -> dict[str, PendingTrace]:
    """An agent run as OpenTelemetry exports it: ``agent`` root, a ``tool`` under it, ``chat-a``
    (gpt-4o) under the root and ``chat-b`` (claude) under the tool."""
    t0 = timezone.now() - timedelta(seconds=5)
    return {
        "agent": span(principal, f"{run}-agent", run, "agent", name="invoke_agent planner", start=t0),
        "tool": span(
            principal,
            f"{run}-tool",
            run,
            "tool",
            parent=f"{run}-agent",
            name="execute_tool search",
            start=t0 + timedelta(seconds=1),
        ),
        "chat-a": span(
            principal,
            f"{run}-chat-a",
            run,
            "llm",
            parent=f"{run}-agent",
            model="gpt-4o",
            start=t0 + timedelta(seconds=2),
        ),
        "chat-b": span(
            principal,
            f"{run}-chat-b",
            run,
            "llm",
            parent=f"{run}-tool",
            model="claude-sonnet-4-5",
            start=t0 + timedelta(seconds=3),
        ),
    }


def test_a_rule_on_one_chat_model_sends_that_span_and_its_ancestors_once_with_the_root_last(team_hook, sink):
    RoutingRuleFactory(team=team_hook, name="gpt-4o", conditions='model == "gpt-4o"', destinations=[dest("hook")])
    principal = principal_for(team_hook)
    spans = agent_run(principal)

    # OpenTelemetry exports children first; the root comes last, in a request of its own.
    store(spans["chat-b"], spans["chat-a"])
    deliver_all()
    store(spans["tool"])
    deliver_all()
    store(spans["agent"])
    deliver_all()

    assert set(sink.stored) == {"run-1-chat-a", "run-1-tool", "run-1-agent"}
    assert sink.duplicates == {} and sink.errors == []
    assert sink.stored["run-1-agent"]["parent_id"] is None
    assert sink.stored["run-1-chat-a"]["parent_id"] == "run-1-agent"
    assert {t["run_id"] for t in sink.stored.values()} == {"run-1"}
    assert sink.stored["run-1-tool"]["kind"] == "tool" and sink.stored["run-1-tool"]["name"] == "execute_tool search"
    # The other chat span matched no rule: never sent.
    assert Delivery.objects.filter(trace__trace_id="run-1-chat-b").count() == 0
    agent = Trace.objects.get(trace_id="run-1-agent")
    assert agent.destinations == ["hook"]
    assert agent.routing[-1]["reason"] == "follows its run: span 'run-1-chat-a' was routed here by rule 'gpt-4o'"


def test_structural_spans_stored_before_the_call_are_sent_when_it_is_routed(team_hook, sink):
    RoutingRuleFactory(team=team_hook, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("hook")])
    principal = principal_for(team_hook)
    spans = agent_run(principal)

    store(spans["agent"], spans["tool"])  # the structure first: nothing to send yet
    assert not Delivery.objects.exists()
    assert Trace.objects.get(trace_id="run-1-tool").destinations == []
    store(spans["chat-a"])
    deliver_all()

    assert set(sink.stored) == {"run-1-chat-a", "run-1-tool", "run-1-agent"}
    assert Trace.objects.get(trace_id="run-1-tool").destinations == ["hook"]
    assert Trace.objects.get(trace_id="run-1-agent").routing[-1]["destination"] == "hook"


def test_a_second_destination_brings_the_whole_structure_and_only_its_own_call(
    team_hook, sink, published, django_capture_on_commit_callbacks
):
    make_integration(team_hook, "audit", config={"url": sink.url, "headers": {}})
    RoutingRuleFactory(
        team=team_hook, name="gpt", priority=1, conditions={"model": "gpt-4o"}, destinations=[dest("hook")]
    )
    RoutingRuleFactory(
        team=team_hook, name="claude", priority=2, conditions={"model": "claude*"}, destinations=[dest("audit")]
    )
    principal = principal_for(team_hook)
    spans = agent_run(principal)

    with django_capture_on_commit_callbacks(execute=True):
        store(spans["chat-a"], spans["agent"])
        store(spans["tool"])
        store(spans["chat-b"])

    assert routed("hook") == {"run-1-chat-a", "run-1-agent", "run-1-tool"}
    assert routed("audit") == {"run-1-chat-b", "run-1-agent", "run-1-tool"}
    assert set(RunRoute.objects.get(run_id="run-1").destinations) == {"hook", "audit"}
    assert sorted(Trace.objects.get(trace_id="run-1-tool").destinations) == ["audit", "hook"]
    # Every outbox row was published once.
    ids = [i for batch, _ in published for i in batch]
    assert sorted(ids) == sorted(Delivery.objects.values_list("pk", flat=True))


def test_a_run_nobody_routed_goes_nowhere_and_a_call_without_a_run_takes_no_part(team_hook, sink):
    RoutingRuleFactory(team=team_hook, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("hook")])
    principal = principal_for(team_hook)
    spans = agent_run(principal)
    store(spans["agent"], spans["tool"], spans["chat-b"])
    assert not Delivery.objects.exists()

    # A plain call (its run is itself, no parent): routed as ever, and no run row.
    [call] = store(span(principal, "solo", "solo", "llm", model="gpt-4o"))
    assert call.run_id == "solo" and routed("hook") == {"solo"}
    assert not RunRoute.objects.filter(run_id="solo").exists()


def test_a_structural_span_own_rule_sends_the_structure_but_no_call(team_hook, sink):
    RoutingRuleFactory(
        team=team_hook,
        name="agents",
        conditions='kind == "agent" && name.startsWith("invoke_agent")',
        destinations=[dest("hook")],
    )
    principal = principal_for(team_hook)
    spans = agent_run(principal)
    store(*spans.values())
    assert routed("hook") == {"run-1-agent", "run-1-tool"}


def test_retries_and_replays_send_each_span_once(team_hook, sink):
    RoutingRuleFactory(team=team_hook, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("hook")])
    principal = principal_for(team_hook)
    spans = agent_run(principal)
    store(spans["tool"], spans["agent"])
    sink.answer(503)
    store(spans["chat-a"])
    deliver_all()  # the first request fails: its rows wait for a retry
    Delivery.objects.update(next_attempt_at=timezone.now())
    deliver_all()
    store(spans["chat-a"], spans["agent"])  # sent again by the client: already stored, nothing new

    assert Delivery.objects.count() == 3
    assert set(sink.stored) == {"run-1-chat-a", "run-1-tool", "run-1-agent"}
    assert sink.duplicates == {}
    Delivery.objects.update(status=DeliveryStatus.DEAD)
    assert deliveries_replay_dead(team_id=team_hook.id, actor="test") == 3
    deliver_all()
    assert Delivery.objects.count() == 3
    assert set(sink.sends) == {"run-1-chat-a", "run-1-tool", "run-1-agent"}


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_of_one_run_never_lose_a_structural_span(published):
    """The call and the structural spans of a run stored at the same moment by different workers:
    whichever commits first, every structural span ends up with the call's destination."""
    team = TeamFactory()
    make_integration(team, "hook")
    RoutingRuleFactory(team=team, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("hook")])
    principal = principal_for(team)
    rounds = 12
    for n in range(rounds):
        spans = agent_run(principal, run=f"race-{n}")
        barrier = threading.Barrier(3)
        errors: list[BaseException] = []

        def worker(*batch: PendingTrace, barrier: threading.Barrier = barrier, errors: list = errors) -> None:
            try:
                barrier.wait(10)
                store(*batch)
            except BaseException as exc:  # reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [
            threading.Thread(target=worker, args=(spans["chat-a"],)),
            threading.Thread(target=worker, args=(spans["tool"],)),
            threading.Thread(target=worker, args=(spans["agent"], spans["chat-b"])),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
        assert routed("hook") >= {f"race-{n}-chat-a", f"race-{n}-tool", f"race-{n}-agent"}
    assert Delivery.objects.filter(destination="hook").count() == 3 * rounds


def test_langsmith_spans_wait_for_their_ancestors_without_spending_attempts(published):
    from integrations.registry import exporter_class
    from tests.fakes import FakeLangSmith

    team = TeamFactory()
    principal = principal_for(team)
    with FakeLangSmith(api_key="ls-key") as server:
        config = exporter_class("langsmith").validate_config({"apiKey": "ls-key", "endpoint": server.url})
        make_integration(team, "ls", platform="langsmith", config=config)
        RoutingRuleFactory(team=team, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("ls")])
        spans = agent_run(principal)
        store(spans["chat-a"], spans["tool"])  # the root agent comes last
        deliver_all()

        waiting = Delivery.objects.get(trace__trace_id="run-1-chat-a")
        assert (waiting.status, waiting.attempts) == (DeliveryStatus.PENDING, 0)
        assert "has not arrived yet" in waiting.last_error
        assert server.runs == {}  # neither span could name its root yet

        store(spans["agent"])
        Delivery.objects.update(next_attempt_at=timezone.now())
        deliver_all()

        assert server.problems == []
        assert set(Delivery.objects.values_list("status", flat=True)) == {DeliveryStatus.DELIVERED}
        assert len(server.runs) == 3
        root = [r for r in server.runs.values() if "parent_run_id" not in r]
        assert [r["name"] for r in root] == ["invoke_agent planner"]
        assert {r["trace_id"] for r in server.runs.values()} == {root[0]["id"]}


def test_the_admin_lists_a_runs_destinations_read_only(team_hook, admin_client):
    RoutingRuleFactory(team=team_hook, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[dest("hook")])
    spans = agent_run(principal_for(team_hook))
    store(spans["chat-a"], spans["agent"])
    route = RunRoute.objects.get(run_id="run-1")

    page = admin_client.get("/admin/delivery/runroute/?q=run-1").content.decode()

    assert "run-1" in page and "hook" in page
    assert admin_client.get("/admin/delivery/runroute/add/").status_code == 403
    assert admin_client.post(f"/admin/delivery/runroute/{route.pk}/change/", {"run_id": "x"}).status_code == 403


def test_sampling_keeps_or_drops_each_run_whole(team_hook):
    RoutingRuleFactory(team=team_hook, name="all", sample_rate=0.5, destinations=[dest("hook")])
    principal = principal_for(team_hook)
    runs = [f"s-{n}" for n in range(40)]
    for run in runs:
        store(*agent_run(principal, run=run).values())
    kept = {run for run in runs if Trace.objects.filter(run_id=run).exclude(destinations=[]).exists()}
    for run in runs:
        spans = Trace.objects.filter(run_id=run)
        expected = 4 if run in kept else 0
        assert Delivery.objects.filter(trace__in=spans).count() == expected, run
        assert all(d["rate"] == 0.5 for s in spans for d in s.routing)
    assert 8 < len(kept) < 32
