from __future__ import annotations

import threading

import pytest
from django.db import connection

from accounts.principals import KeyPrincipal
from delivery import outbox
from delivery.models import Delivery
from pipeline.services import traces_ingest
from traces.models import Trace

from ..factories import ApiKeyFactory, RoutingRuleFactory, TeamFactory

pytestmark = pytest.mark.django_db


def principal_for(team, environment="production") -> KeyPrincipal:
    key = ApiKeyFactory(team=team, environment=environment)
    return KeyPrincipal(key.id, team.id, environment, key.prefix, key.scopes)


def dest(name, rate=1.0):
    return {"name": name, "sample_rate": rate, "tags": [], "fallback": []}


def test_it_stores_the_trace_its_routing_and_one_outbox_row_per_destination():
    team = TeamFactory()
    RoutingRuleFactory(team=team, name="errors", conditions={"status": "error"}, destinations=[dest("langfuse")])
    RoutingRuleFactory(team=team, name="all", priority=200, destinations=[dest("webhook"), dest("langfuse")])
    [result] = traces_ingest(principal=principal_for(team), items=[{"model": "gpt-4o", "error": "boom"}], source="api")
    assert (result.status, result.created, result.errors) == (201, True, None)
    trace = Trace.objects.get(pk=result.trace.pk)
    assert trace.status == "error"
    assert trace.destinations == ["langfuse", "webhook"]
    assert [d["rule"] for d in trace.routing] == ["errors", "all"]
    assert trace.environment == "production" and trace.source == "api"
    deliveries = Delivery.objects.filter(trace=trace).order_by("destination")
    assert [(d.destination, d.rule_name, d.status) for d in deliveries] == [
        ("langfuse", "errors", "pending"),
        ("webhook", "all", "pending"),
    ]


def test_it_records_sampled_out_decisions_without_outbox_rows():
    team = TeamFactory()
    RoutingRuleFactory(team=team, destinations=[dest("langfuse", rate=0.0)])
    [result] = traces_ingest(principal=principal_for(team), items=[{"model": "gpt-4o"}], source="api")
    assert result.trace.destinations == []
    assert result.trace.routing[0]["kept"] is False
    assert not Delivery.objects.filter(trace=result.trace).exists()


def test_it_returns_the_stored_trace_for_an_id_sent_again():
    team = TeamFactory()
    RoutingRuleFactory(team=team, destinations=[dest("webhook")])
    principal = principal_for(team)
    [first] = traces_ingest(principal=principal, items=[{"id": "abc", "model": "gpt-4o"}], source="api")
    [again] = traces_ingest(principal=principal, items=[{"id": "abc", "model": "other"}], source="api")
    assert (again.status, again.created) == (200, False)
    assert again.trace.pk == first.trace.pk and again.trace.model == "gpt-4o"
    assert Trace.objects.filter(team=team).count() == 1
    assert Delivery.objects.filter(trace__team=team).count() == 1


def test_the_same_id_in_one_batch_is_stored_once():
    team = TeamFactory()
    results = traces_ingest(
        principal=principal_for(team),
        items=[{"id": "dup", "model": "a"}, {"id": "dup", "model": "b"}],
        source="batch",
    )
    assert [(r.status, r.created) for r in results] == [(201, True), (200, False)]
    assert results[0].trace is results[1].trace
    assert Trace.objects.filter(team=team).count() == 1


def test_ids_are_per_team():
    one, two = TeamFactory(), TeamFactory()
    traces_ingest(principal=principal_for(one), items=[{"id": "same", "model": "a"}], source="api")
    [result] = traces_ingest(principal=principal_for(two), items=[{"id": "same", "model": "a"}], source="api")
    assert result.created and result.trace.team_id == two.id


def test_it_stores_valid_items_when_others_fail():
    team = TeamFactory()
    results = traces_ingest(
        principal=principal_for(team),
        items=[{"model": "a"}, {"model": "b", "prompt_tokens": -1}, "not an object", {"model": "c"}],
        source="batch",
    )
    assert [r.status for r in results] == [201, 400, 400, 201]
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert results[1].errors == {"prompt_tokens": ["Must not be negative."]}
    assert set(Trace.objects.filter(team=team).values_list("model", flat=True)) == {"a", "c"}


def test_it_stamps_the_key_environment_unless_the_trace_names_one():
    team = TeamFactory()
    principal = principal_for(team, "ci")
    results = traces_ingest(
        principal=principal, items=[{"model": "a"}, {"model": "b", "environment": "staging"}], source="batch"
    )
    assert [r.trace.environment for r in results] == ["ci", "staging"]
    assert results[0].trace.api_key_id == principal.key_id


def test_it_publishes_the_outbox_rows_after_commit(monkeypatch, django_capture_on_commit_callbacks):
    published: list[list[int]] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: published.append(list(ids)) or True)
    team = TeamFactory()
    RoutingRuleFactory(team=team, destinations=[dest("webhook"), dest("langfuse")])
    with django_capture_on_commit_callbacks(execute=True):
        [result] = traces_ingest(principal=principal_for(team), items=[{"model": "gpt-4o"}], source="api")
        assert published == []  # not before the commit
    ids = sorted(Delivery.objects.filter(trace=result.trace).values_list("id", flat=True))
    assert [sorted(p) for p in published] == [ids]


@pytest.mark.django_db(transaction=True)
def test_it_works_from_a_background_thread_outside_any_request():
    team = TeamFactory()
    principal = principal_for(team)
    outcome: list = []

    def write() -> None:
        try:
            outcome.extend(traces_ingest(principal=principal, items=[{"model": "gpt-4o"}] * 3, source="proxy"))
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(30)
    assert [r.status for r in outcome] == [201, 201, 201]
    assert Trace.objects.filter(team=team, source="proxy").count() == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_sends_of_one_id_store_it_once():
    team = TeamFactory()
    principal = principal_for(team)
    barrier = threading.Barrier(4)
    statuses: list[int] = []

    def send() -> None:
        try:
            barrier.wait(5)
            statuses.extend(
                r.status for r in traces_ingest(principal=principal, items=[{"id": "race", "model": "m"}], source="api")
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(statuses) == [200, 200, 200, 201]
    assert Trace.objects.filter(team=team, trace_id="race").count() == 1
