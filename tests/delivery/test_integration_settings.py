"""An integration's own settings in its config (environments, identity, transform, quota) as the
webhook receiver sees them: the real webhook exporter against a receiver on loopback that checks
the format (tests/e2e/sink.py)."""

from __future__ import annotations

import json
import time

import pytest
from django.utils import timezone

from delivery import admission
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from delivery.services import delivery_replay
from integrations.options import quota as quota_module
from integrations.options.quota import Quota, take, usage
from tests.e2e.sink import Answer, WebhookSink
from tests.factories import TraceFactory

from .scripted import make_delivery, make_integration

pytestmark = pytest.mark.django_db


@pytest.fixture
def sink():
    with WebhookSink() as server:
        yield server


def hook(team, sink, **settings):
    return make_integration(team, "hook", config={"url": sink.url, "headers": {}, **settings})


def rows_of(team, count, **trace):
    return [make_delivery(team, "hook", trace=TraceFactory(team=team, **trace)) for _ in range(count)]


def test_an_integration_limited_to_staging_gets_no_production_trace(team, sink, published):
    hook(team, sink, environments=["staging"])
    production = rows_of(team, 2, environment="production")
    staging = rows_of(team, 1, environment="staging")
    unnamed = rows_of(team, 1, environment="")

    report = deliver_batch([r.pk for r in production + staging + unnamed])

    assert set(sink.stored) == {staging[0].trace.trace_id}
    assert report.delivered == 1 and report.dropped == 3
    for row in production + unnamed:
        row.refresh_from_db()
        assert (row.status, row.reason) == (DeliveryStatus.DROPPED, "environment")
        assert "not among this integration's environments (staging)" in row.last_error


def test_environment_map_and_withheld_ids_are_what_the_receiver_gets(team, sink, published):
    hook(team, sink, environment_map={"prod": "production"}, send_user_id=False, send_session_id=False)
    row = rows_of(team, 1, environment="prod", user_id="u-42", session_id="s-7")[0]

    deliver_batch([row.pk])

    sent = sink.stored[row.trace.trace_id]
    assert (sent["environment"], sent["user_id"], sent["session_id"]) == ("production", "", "")


def test_ids_are_sent_by_default(team, sink, published):
    hook(team, sink)
    row = rows_of(team, 1, environment="dev", user_id="u-42", session_id="s-7")[0]

    deliver_batch([row.pk])

    sent = sink.stored[row.trace.trace_id]
    assert (sent["environment"], sent["user_id"], sent["session_id"]) == ("dev", "u-42", "s-7")


def test_a_transform_dropping_input_and_truncating_output_is_what_the_receiver_gets(team, sink, published):
    transform = [
        {"op": "drop", "path": "input"},
        {"op": "truncate", "path": "output", "max_chars": 10},
        {"op": "rename", "path": "metadata.customer", "to": "metadata.account"},
        {"op": "set", "path": "metadata.source", "value": "tracerelay"},
        {"op": "hash", "path": "user_id"},
    ]
    hook(team, sink, transform=transform)
    row = rows_of(
        team,
        1,
        input={"messages": [{"role": "user", "content": "secret prompt"}]},
        output="a long answer that goes on",
        metadata={"customer": "acme", "keep": 1},
        user_id="u-42",
    )[0]

    deliver_batch([row.pk])

    sent = sink.stored[row.trace.trace_id]
    assert sent["input"] is None
    assert sent["output"] == "a long ans"
    assert sent["metadata"] == {"account": "acme", "keep": 1, "source": "tracerelay"}
    assert len(sent["user_id"]) == 64 and sent["user_id"] != "u-42"
    stored = Delivery.objects.get(pk=row.pk).trace
    assert stored.input == {"messages": [{"role": "user", "content": "secret prompt"}]}  # only the export changes


def test_a_quota_of_5_a_minute_with_drop_lets_5_through_and_records_the_rest(team, sink, published):
    integration = hook(team, sink, quota={"max_per_minute": 5, "over_quota": "drop"})
    rows = rows_of(team, 8)

    first = deliver_batch([r.pk for r in rows[:3]])
    second = deliver_batch([r.pk for r in rows[3:]])  # another call (another worker): the same counter

    assert first.delivered + second.delivered == 5
    assert len(sink.stored) == 5
    dropped = Delivery.objects.filter(pk__in=[r.pk for r in rows], status=DeliveryStatus.DROPPED)
    assert dropped.count() == 3
    assert set(dropped.values_list("reason", flat=True)) == {"quota"}
    assert all("over 5 per minute" in d.last_error for d in dropped)
    assert usage(integration.pk, Quota.of(integration.config)) == {"max_per_minute": 5}

    replayed = delivery_replay(delivery=dropped.first(), actor="test")  # replayable
    assert (replayed.status, replayed.reason) == (DeliveryStatus.PENDING, "")


def test_a_quota_with_delay_holds_the_rest_without_spending_attempts(team, sink, published):
    hook(team, sink, quota={"max_per_minute": 2, "over_quota": "delay"})
    rows = rows_of(team, 5)
    before = time.time()

    report = deliver_batch([r.pk for r in rows])

    assert report.delivered == 2 and report.held == 3
    held = Delivery.objects.filter(pk__in=[r.pk for r in rows], status=DeliveryStatus.PENDING)
    assert held.count() == 3
    for row in held:
        assert row.attempts == 0 and row.batch_id is None
        assert row.next_attempt_at.timestamp() >= before + 59  # when the first sends leave the minute
    ids, countdown = published[-1]
    assert sorted(ids) == sorted(r.pk for r in held) and countdown >= 55


def test_a_quota_per_day_counts_across_calls(team, sink, published):
    hook(team, sink, quota={"max_per_day": 3, "over_quota": "drop"})
    rows = rows_of(team, 4)

    for row in rows:
        deliver_batch([row.pk])

    assert len(sink.stored) == 3
    assert Delivery.objects.filter(pk__in=[r.pk for r in rows], status=DeliveryStatus.DROPPED).count() == 1


def test_sampling_keeps_the_same_traces_whatever_the_order(team, sink, published, monkeypatch):
    integration = hook(team, sink, quota={"max_per_minute": 1000, "over_quota": "sample"})
    monkeypatch.setattr(admission, "demand_fraction", lambda *a, **k: 0.5)
    rows = rows_of(team, 40)

    deliver_batch([r.pk for r in rows])

    kept = {r.trace.trace_id for r in rows if quota_module.kept_by_sample(r.trace.trace_id, 0.5)}
    assert set(sink.stored) == kept
    assert 5 < len(kept) < 35
    dropped = Delivery.objects.filter(pk__in=[r.pk for r in rows], status=DeliveryStatus.DROPPED)
    assert dropped.count() == 40 - len(kept)
    assert all("sampled out" in d.last_error for d in dropped)
    assert integration.pk


def test_the_sample_fraction_is_the_quota_over_the_demand_of_the_minute_before(team):
    integration = make_integration(team, "sampled")
    quota = Quota({"m": 10}, "sample")
    now = 1_800_000_030.0
    take(integration.pk, quota, 10, demand=40, now=now - 60)  # the minute before: 40 wanted

    assert quota_module.demand_fraction(integration.pk, quota, now=now) == pytest.approx(0.25)


def test_an_unreachable_redis_holds_instead_of_dropping(team, sink, published, monkeypatch):
    hook(team, sink, quota={"max_per_minute": 5, "over_quota": "drop"})

    def down():
        raise ConnectionError("redis is down")

    monkeypatch.setattr(quota_module, "_client", down)
    rows = rows_of(team, 2)

    report = deliver_batch([r.pk for r in rows])

    assert report.held == 2 and report.dropped == 0 and sink.stored == {}
    assert all(
        d.status == DeliveryStatus.PENDING and d.next_attempt_at > timezone.now()
        for d in Delivery.objects.filter(pk__in=[r.pk for r in rows])
    )


def test_metrics_export_the_quota_and_its_usage(client, settings, team, sink, published):
    settings.METRICS_TOKEN = ""
    integration = hook(team, sink, quota={"max_per_minute": 5, "max_per_day": 50, "over_quota": "drop"})
    deliver_batch([r.pk for r in rows_of(team, 3)])

    body = client.get("/metrics").content.decode()

    labels = f'integration="{integration.name}",team="{team.pk}"'
    assert f'tracerelay_integration_quota_limit{{{labels},window="max_per_minute"}} 5.0' in body
    assert f'tracerelay_integration_quota_used{{{labels},window="max_per_minute"}} 3.0' in body
    assert f'tracerelay_integration_quota_used{{{labels},window="max_per_day"}} 3.0' in body


# --- response validation (the webhook's config.response_validation) ---------------------------------


def answer_always(sink, status: int, body: dict) -> None:
    sink.default = Answer(status, body=json.dumps(body).encode())


def test_a_200_whose_body_carries_errors_is_not_delivered(team, sink, published):
    make_integration(
        team,
        "hook",
        config={"url": sink.url, "headers": {}, "response_validation": {"json_path": "errors"}},
        retry_policy={"max_attempts": 2, "base_delay_s": 1, "max_delay_s": 10},
    )
    answer_always(sink, 200, {"errors": ["index is read-only"]})
    row = rows_of(team, 1)[0]

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert report.delivered == 0 and report.retried == 1
    assert row.status == DeliveryStatus.PENDING and row.last_status_code == 200
    assert 'with errors: ["index is read-only"]' in row.last_error

    Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())
    deliver_batch([row.pk])  # the last attempt: dead-lettered with the destination's reason

    row.refresh_from_db()
    assert row.status == DeliveryStatus.DEAD and "index is read-only" in row.last_error


def test_errors_naming_traces_refuse_only_those(team, sink, published):
    hook(team, sink, response_validation={"json_path": "errors"})
    rows = rows_of(team, 3)
    bad = rows[1].trace.trace_id
    answer_always(sink, 200, {"errors": [{"id": bad, "message": "payload too large"}]})

    report = deliver_batch([r.pk for r in rows])

    assert report.delivered == 2 and report.retried == 1
    refused = Delivery.objects.get(pk=rows[1].pk)
    assert refused.status == DeliveryStatus.PENDING
    assert "refused this trace" in refused.last_error and "payload too large" in refused.last_error
    assert {Delivery.objects.get(pk=r.pk).status for r in (rows[0], rows[2])} == {DeliveryStatus.DELIVERED}


@pytest.mark.parametrize(
    ("checks", "status", "body", "delivered"),
    [
        ({"status": [202]}, 200, {"ok": True}, False),
        ({"status": [200, 202]}, 202, {"ok": True}, True),
        ({"body_must_contain": '"ok": true'}, 200, {"ok": False}, False),
        ({"body_must_contain": '"ok": true'}, 200, {"ok": True}, True),
        ({"json_path": "result.errors"}, 200, {"result": {"errors": []}}, True),
        ({"json_path": "result.errors"}, 200, {"result": {"errors": {"x": 1}}}, False),
        ({}, 200, {"errors": ["refused even without checks"]}, False),
        ({}, 200, {"errors": []}, True),
        ({"status": [200]}, 200, {"errors": ["a status check alone ignores the body"]}, True),
    ],
)
def test_each_check(team, sink, published, checks, status, body, delivered):
    hook(team, sink, **({"response_validation": checks} if checks else {}))
    answer_always(sink, status, body)
    row = rows_of(team, 1)[0]

    deliver_batch([row.pk])

    assert (Delivery.objects.get(pk=row.pk).status == DeliveryStatus.DELIVERED) is delivered
