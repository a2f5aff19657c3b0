"""Debug records end to end: a trace ingested through the API while debug mode is on records how
each rule evaluated it, and the delivery engine (the real webhook exporter, against a receiver on
loopback) records each request and answer with secrets masked. Off, nothing is recorded and the
exporter's client is never wrapped."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from debugmode import recording
from debugmode.masking import MASK
from debugmode.models import DebugRecord
from debugmode.services import debug_records_expire
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from tests.e2e.sink import WebhookSink
from tests.factories import IntegrationFactory
from traces.models import Trace

pytestmark = pytest.mark.django_db

SIGNING_SECRET = "whsec_debugmode_0123456789"
HEADER_SECRET = "hdr-secret-9f8e7d6c5b4a"
PASTED_KEY = "sk-proj-Zy98Xw76Vu54Ts32Rq10PoNmLkJi"

RULES = {
    "rules": [
        {"name": "errors-only", "priority": 10, "conditions": {"error": True}, "destinations": ["backup"]},
        {
            "name": "everything",
            "priority": 20,
            "destinations": [{"name": "hook", "fallback": ["backup"]}, {"name": "rare", "sample_rate": 0.0}],
        },
    ]
}


@pytest.fixture
def sinks():
    with WebhookSink(secret=SIGNING_SECRET) as hook, WebhookSink() as backup:
        yield hook, backup


@pytest.fixture
def integrations(team, sinks):
    hook, backup = sinks
    IntegrationFactory(
        team=team,
        name="hook",
        platform="webhook",
        config={"url": hook.url, "headers": {"X-Api-Key": HEADER_SECRET, "X-Team": "blue"}, "secret": SIGNING_SECRET},
        timeout_s=5,
    )
    IntegrationFactory(team=team, name="backup", platform="webhook", config={"url": backup.url, "headers": {}})
    IntegrationFactory(team=team, name="rare", platform="webhook", config={"url": backup.url, "headers": {}})


def _ingest(api, django_capture_on_commit_callbacks, **extra):
    assert api.put("/api/v1/routing/rules", RULES, format="json").status_code == 200
    body = {"model": "gpt-4o", "input": f"my key is {PASTED_KEY}", "output": "ok", **extra}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/traces", body, format="json")
    assert response.status_code == 201, response.content
    return Trace.objects.get(trace_id=response.json()["id"])


def _deliver(trace):
    ids = list(Delivery.objects.filter(trace=trace, status=DeliveryStatus.PENDING).values_list("pk", flat=True))
    return deliver_batch(ids)


def test_routing_steps_are_recorded_for_each_trace(
    api, team, integrations, debug_on, published, django_capture_on_commit_callbacks
):
    debug_on()
    trace = _ingest(api, django_capture_on_commit_callbacks)

    record = DebugRecord.objects.get(trace=trace, kind="routing")
    evaluations = {e["rule"]: e for e in record.data["evaluations"]}
    assert evaluations["errors-only"]["matched"] is False
    assert evaluations["errors-only"]["reason"] == "condition did not match"
    assert evaluations["everything"] == {
        "rule": "everything",
        "priority": 20,
        "matched": True,
        "reason": "no condition: matches every trace",
    }
    decisions = {d["destination"]: d for d in record.data["decisions"]}
    assert decisions["hook"]["kept"] is True and decisions["hook"]["fallback"] == ["backup"]
    assert decisions["rare"]["kept"] is False and decisions["rare"]["reason"].startswith("sampled out")
    assert record.data["policy"] == {"rate": 1.0, "reason": "default sample rate"}


def test_each_exporter_request_and_answer_is_recorded_masked(
    api, team, integrations, sinks, debug_on, published, django_capture_on_commit_callbacks
):
    debug_on()
    trace = _ingest(api, django_capture_on_commit_callbacks)
    report = _deliver(trace)
    assert report.delivered == 1

    record = DebugRecord.objects.get(trace=trace, kind="export", destination="hook")
    data = record.data
    assert data["outcome"]["ok"] is True and data["rule"] == "everything" and data["attempt"] == 1
    (exchange,) = data["exchanges"]
    assert exchange["method"] == "POST" and exchange["url"] == sinks[0].url
    assert exchange["status"] == 200 and exchange["duration_ms"] >= 0
    headers = {k.lower(): v for k, v in exchange["request_headers"].items()}
    assert headers["x-api-key"] == MASK and headers["x-tracerelay-signature"] == MASK
    assert headers["x-team"] == "blue"
    assert trace.trace_id in exchange["request_body"]["text"]
    assert exchange["request_body"]["size"] > 0
    text = json.dumps(data)
    for secret in (SIGNING_SECRET, HEADER_SECRET, PASTED_KEY):
        assert secret not in text
    assert f"my key is {MASK}" in exchange["request_body"]["text"]


def test_a_refusal_and_the_fallback_it_leads_to_are_recorded(
    api, team, integrations, sinks, debug_on, published, django_capture_on_commit_callbacks
):
    sinks[0].always(422)
    debug_on()
    trace = _ingest(api, django_capture_on_commit_callbacks)
    _deliver(trace)
    _deliver(trace)  # the fallback row made by the refusal

    refused = DebugRecord.objects.get(trace=trace, kind="export", destination="hook").data
    assert refused["outcome"]["ok"] is False and refused["outcome"]["permanent"] is True
    assert refused["outcome"]["status"] == 422 and refused["fallback"] == ["backup"]
    assert refused["exchanges"][0]["status"] == 422
    assert DebugRecord.objects.get(trace=trace, kind="export", destination="backup").data["outcome"]["ok"] is True


def test_the_trace_page_shows_the_debug_section(
    api, team, owner, integrations, sinks, debug_on, published, django_capture_on_commit_callbacks, client
):
    sinks[0].always(422)
    debug_on()
    trace = _ingest(api, django_capture_on_commit_callbacks)
    _deliver(trace)
    client.force_login(owner)
    page = client.get(f"/traces/{trace.trace_id}").content.decode()
    assert 'id="debug-title"' in page
    assert "errors-only" in page and "condition did not match" in page and "no condition: matches every trace" in page
    assert "refused" in page and "422" in page and "next: fallback backup" in page
    assert f"X-Api-Key: {MASK}" in page
    assert HEADER_SECRET not in page and SIGNING_SECRET not in page


def test_nothing_is_recorded_and_no_client_is_wrapped_when_off(
    api, team, owner, integrations, sinks, published, monkeypatch, django_capture_on_commit_callbacks, client
):
    def refuse(*args, **kwargs):
        raise AssertionError("debug recording ran with debug mode off")

    monkeypatch.setattr(recording, "routing_data", refuse)
    monkeypatch.setattr(recording.RecordingClient, "__init__", refuse)
    trace = _ingest(api, django_capture_on_commit_callbacks)
    assert _deliver(trace).delivered == 1
    assert not DebugRecord.objects.exists()
    client.force_login(owner)
    assert 'id="debug-title"' not in client.get(f"/traces/{trace.trace_id}").content.decode()


def test_records_expire_after_the_retention(
    api, team, integrations, debug_on, published, settings, django_capture_on_commit_callbacks
):
    settings.TRACERELAY_DEBUG_RETENTION_HOURS = 24
    debug_on()
    trace = _ingest(api, django_capture_on_commit_callbacks)
    _deliver(trace)
    assert DebugRecord.objects.filter(trace=trace).count() == 2
    DebugRecord.objects.filter(kind="routing").update(created_at=timezone.now() - timedelta(hours=25))
    assert debug_records_expire() == 1
    assert list(DebugRecord.objects.values_list("kind", flat=True)) == ["export"]


def test_the_retention_task_is_scheduled_hourly_when_beat_starts():
    from django_celery_beat.models import PeriodicTask

    from debugmode.tasks import RETENTION_TASK, RETENTION_TASK_NAME, ensure_schedule

    ensure_schedule()
    task = PeriodicTask.objects.get(name=RETENTION_TASK_NAME)
    assert (task.task, task.interval.every, task.interval.period, task.queue) == (
        RETENTION_TASK,
        3600,
        "seconds",
        "ingest",
    )
