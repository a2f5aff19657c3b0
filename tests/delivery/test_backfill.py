"""Backfill (delivery.backfill, docs/delivery.md "Backfill"): stored traces sent to an integration
added later, each once; rules, filters, runs, cancel, resume after a dead worker, quota, breaker,
backlog. The job runs in-process; the rows it publishes are delivered by the real engine to a
webhook receiver on loopback that checks the format."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from delivery.backfill import job as backfill_job
from delivery.backfill.job import run_slice, sweep_backfills
from delivery.breaker import CircuitBreaker
from delivery.engine import deliver_batch
from delivery.models import Backfill, BackfillStatus, Delivery, DeliveryStatus
from tests.e2e.sink import WebhookSink
from tests.factories import RoutingRuleFactory, TraceFactory

from .scripted import make_delivery, make_integration

pytestmark = pytest.mark.django_db

SECRET = "whsec_0123456789abcdef"


@pytest.fixture
def sink():
    with WebhookSink(secret=SECRET) as server:
        yield server


@pytest.fixture
def published(monkeypatch):
    """What the job publishes: its own tasks (job ids) and its rows (delivery ids)."""
    sent: dict[str, list[Any]] = {"jobs": [], "rows": []}
    monkeypatch.setattr(
        backfill_job, "publish_job", lambda backfill_id, countdown=None: sent["jobs"].append(backfill_id)
    )
    monkeypatch.setattr(backfill_job, "publish_rows", lambda ids: sent["rows"].append(list(ids)))
    # The engine's own publishing (retries) is not needed here.
    from delivery import outbox

    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: True)
    return sent


def deliver_published(published) -> None:
    while published["rows"]:
        deliver_batch(published["rows"].pop(0))


def drive(backfill_id: int, published, *, seconds: float = 30.0) -> Backfill:
    """Run the job as its worker would, delivering what it publishes while it waits."""
    while run_slice(backfill_id, seconds=seconds, sleep=lambda _s: deliver_published(published)):
        pass
    deliver_published(published)
    return Backfill.objects.get(pk=backfill_id)


def stored_traces(team, n: int, *, ago: timedelta = timedelta(hours=1), **kwargs: Any) -> list:
    start = timezone.now() - ago
    return [TraceFactory(team=team, timestamp=start + timedelta(seconds=i), **kwargs) for i in range(n)]


def body(**extra: Any) -> dict[str, Any]:
    now = timezone.now()
    return {"since": (now - timedelta(days=1)).isoformat(), "until": now.isoformat(), "apply_rules": False, **extra}


def start(api, integration, **extra: Any) -> dict[str, Any]:
    response = api.post(f"/api/v1/integrations/{integration.pk}/backfill", body(**extra), format="json")
    assert response.status_code == 202, response.content
    return response.json()


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    return response.json()


def test_a_webhook_added_after_50_traces_receives_all_50_and_a_second_backfill_sends_none(
    api, team, sink, published, django_capture_on_commit_callbacks
):
    traces = stored_traces(team, 50)
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})

    with django_capture_on_commit_callbacks(execute=True):
        first = start(api, hook)
    assert first["status"] == "pending"
    assert published["jobs"] == [first["id"]]
    done = drive(first["id"], published)

    assert sink.errors == []  # every request in the webhook's format, signed
    assert set(sink.stored) == {t.trace_id for t in traces}
    assert max(sink.sends.values()) == 1
    got = api.get(f"/api/v1/backfills/{first['id']}").json()
    assert (got["status"], got["total"], got["sent"], got["skipped"], got["failed"]) == ("succeeded", 50, 50, 0, 0)
    assert got["integration"] == hook.pk and got["apply_rules"] is False and got["finished_at"]
    assert done.started_at is not None
    assert Delivery.objects.filter(backfill=done, status=DeliveryStatus.DELIVERED).count() == 50
    assert AuditEvent.objects.filter(team=team, action="integration.backfill").count() == 1

    requests_before = len(sink.requests)
    second = start(api, hook)
    drive(second["id"], published)

    assert len(sink.requests) == requests_before  # nothing sent again
    again = api.get(f"/api/v1/backfills/{second['id']}").json()
    assert (again["status"], again["total"], again["sent"], again["skipped"]) == ("succeeded", 50, 0, 50)
    listed = api.get(f"/api/v1/integrations/{hook.pk}/backfills").json()["data"]
    assert [j["id"] for j in listed] == [second["id"], first["id"]]


def test_traces_the_destination_already_has_are_skipped_in_any_state(api, team, sink, published):
    traces = stored_traces(team, 5)
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    make_delivery(team, "hook", trace=traces[0], status=DeliveryStatus.DELIVERED)
    make_delivery(team, "hook", trace=traces[1], status=DeliveryStatus.PENDING)
    make_delivery(team, "webhook", trace=traces[2], status=DeliveryStatus.DEAD, integration=hook)  # by platform
    make_delivery(team, "webhook", trace=traces[3], status=DeliveryStatus.PENDING)  # by platform, not tried yet

    job = drive(start(api, hook)["id"], published)

    assert set(sink.stored) == {traces[4].trace_id}
    assert (job.total, job.sent, job.skipped) == (5, 1, 4)


def test_with_rules_it_sends_what_the_rules_route_here_and_without_everything(api, team, sink, published):
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    RoutingRuleFactory(
        team=team, name="gpt-4o", conditions={"model": "gpt-4o"}, destinations=[{"name": "hook", "tags": ["b"]}]
    )
    RoutingRuleFactory(team=team, name="elsewhere", destinations=[{"name": "other"}])
    routed = stored_traces(team, 6, model="gpt-4o")
    stored_traces(team, 4, model="claude-3-5-sonnet", provider="anthropic")

    by_rules = drive(start(api, hook, apply_rules=True)["id"], published)

    assert set(sink.stored) == {t.trace_id for t in routed}
    assert (by_rules.total, by_rules.sent, by_rules.skipped) == (10, 6, 4)
    row = Delivery.objects.filter(backfill=by_rules).first()
    assert row.rule_name == "gpt-4o" and row.spec["tags"] == ["b"]

    everything = drive(start(api, hook, apply_rules=False)["id"], published)

    assert len(sink.stored) == 10
    assert (everything.total, everything.sent, everything.skipped) == (10, 4, 6)


def test_rules_sample_as_ingest_does(api, team, sink, published):
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    RoutingRuleFactory(team=team, name="half", sample_rate=0.5, destinations=[{"name": "hook"}])
    traces = stored_traces(team, 40)
    from routing.router import sample_point

    kept = {t.trace_id for t in traces if sample_point(t.run_id or t.trace_id) < 0.5}

    job = drive(start(api, hook, apply_rules=True)["id"], published)

    assert set(sink.stored) == kept
    assert 0 < len(kept) < 40 and job.skipped == 40 - len(kept)


def test_filters_and_the_period_choose_the_traces(api, team, sink, published):
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    wanted = stored_traces(team, 3, model="gpt-4o-mini", environment="prod")
    stored_traces(team, 2, model="gpt-4o-mini", environment="staging")
    stored_traces(team, 2, model="claude-3-haiku", environment="prod")
    stored_traces(team, 2, model="gpt-4o-mini", environment="prod", ago=timedelta(days=3))  # before since

    job = drive(start(api, hook, filters={"model": "gpt-4o*", "environment": "prod"})["id"], published)

    assert set(sink.stored) == {t.trace_id for t in wanted}
    assert job.total == 3 and job.sent == 3


def test_a_run_goes_whole(api, team, sink, published):
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    now = timezone.now()
    root = TraceFactory(
        team=team, trace_id="run-root", run_id="run-1", kind="agent", model="", timestamp=now - timedelta(days=2)
    )
    tool = TraceFactory(
        team=team, trace_id="run-tool", run_id="run-1", parent_id="run-root", kind="tool", model="", timestamp=now
    )
    call = TraceFactory(team=team, trace_id="run-call", run_id="run-1", parent_id="run-root", model="gpt-4o")
    TraceFactory(team=team, trace_id="other-call", run_id="run-1", parent_id="run-root", model="claude-3-haiku")

    job = drive(start(api, hook, filters={"model": "gpt-4o"})["id"], published)

    # The call matched; its run's structural spans came along (the root from outside the period);
    # the run's other call did not.
    assert set(sink.stored) == {root.trace_id, tool.trace_id, call.trace_id}
    assert (job.total, job.sent) == (3, 3)


def test_bad_bodies_name_the_field_and_come_before_the_404(api, team):
    hook = make_integration(team, "hook")
    url = f"/api/v1/integrations/{hook.pk}/backfill"

    cases = [
        (body(filters={"status": "nope"}), "filters.status"),
        (body(filters={"since": "2025-01-01T00:00:00Z"}), "filters.since"),
        (body(filters={"colour": "red"}), "filters.colour"),
        (body(filters="model=gpt-4o"), "filters"),
        (body(max_per_second=0), "max_per_second"),
        (body(apply_rules="yes"), "apply_rules"),
        (body(since="yesterday"), "since"),
        (body(since=timezone.now().isoformat(), until=(timezone.now() - timedelta(hours=1)).isoformat()), "since"),
        (body(extra=1), "extra"),
        ({k: v for k, v in body().items() if k != "apply_rules"}, "apply_rules"),
    ]
    for payload, field in cases:
        problem = _problem(api.post(url, payload, format="json"), 400)
        assert field in problem["errors"], (payload, problem)
        # the same bad body to an integration that does not exist: still the 400
        assert _problem(api.post("/api/v1/integrations/999999/backfill", payload, format="json"), 400)

    _problem(api.post("/api/v1/integrations/999999/backfill", body(), format="json"), 404)
    _problem(api.post(url, "", content_type="application/json"), 400)
    _problem(api.get("/api/v1/backfills/999999"), 404)
    _problem(api.get("/api/v1/integrations/999999/backfills"), 404)
    assert not Backfill.objects.exists()


def test_writes_need_the_integrations_write_scope_and_teams_are_apart(dev_api, other_api, api, team):
    hook = make_integration(team, "hook")
    problem = _problem(dev_api.post(f"/api/v1/integrations/{hook.pk}/backfill", body(), format="json"), 403)
    assert problem["required_scope"] == "integrations:write"
    job = start(api, hook)
    _problem(other_api.get(f"/api/v1/backfills/{job['id']}"), 404)
    _problem(other_api.post(f"/api/v1/integrations/{hook.pk}/backfill", body(), format="json"), 404)


def test_cancel_stops_the_job_and_withdraws_what_was_not_sent(api, team, sink, published):
    stored_traces(team, 30)
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    job_id = start(api, hook, max_per_second=10)["id"]

    cancelled: list[dict] = []

    def cancel_once(_s: float) -> None:
        if not cancelled:  # after the first chunk: 10 rows written, none sent
            cancelled.append(api.delete(f"/api/v1/backfills/{job_id}").json())

    assert run_slice(job_id, seconds=5, sleep=cancel_once) is False
    assert cancelled[0]["status"] == "cancelled" and cancelled[0]["finished_at"]
    assert not Delivery.objects.filter(backfill_id=job_id).exists()  # withdrawn
    deliver_published(published)
    assert sink.stored == {}
    assert run_slice(job_id, seconds=1) is False  # a late task does nothing
    assert _problem(api.delete(f"/api/v1/backfills/{job_id}"), 409)["current_status"] == "cancelled"

    done = drive(start(api, hook)["id"], published)  # a later backfill sends those traces
    assert done.sent == 30


class WorkerDied(BaseException):
    pass


def test_a_job_whose_worker_died_is_taken_over_at_its_cursor(api, team, sink, published):
    traces = stored_traces(team, 30)
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    job_id = start(api, hook, max_per_second=10)["id"]

    def die(_s: float) -> None:
        raise WorkerDied  # after the first chunk, as a SIGKILL would

    with pytest.raises(WorkerDied):
        run_slice(job_id, seconds=5, sleep=die)
    job = Backfill.objects.get(pk=job_id)
    assert job.status == BackfillStatus.RUNNING and job.cursor is not None
    assert run_slice(job_id, seconds=1) is False  # its heartbeat is fresh: nobody else takes it
    published["jobs"].clear()
    assert sweep_backfills() == 0

    Backfill.objects.filter(pk=job_id).update(heartbeat_at=timezone.now() - timedelta(minutes=2))
    assert sweep_backfills() == 1 and published["jobs"] == [job_id]
    done = drive(job_id, published)

    assert done.status == BackfillStatus.SUCCEEDED
    assert set(sink.stored) == {t.trace_id for t in traces}
    assert max(sink.sends.values()) == 1
    assert (done.total, done.sent, done.skipped) == (30, 30, 0)


def test_a_job_whose_task_was_lost_is_published_again(team, published):
    hook = make_integration(team, "hook")
    now = timezone.now()
    lost = Backfill.objects.create(
        team=team,
        integration=hook,
        since=now - timedelta(days=1),
        until=now,
        max_per_second=5,
        created_at=now - timedelta(minutes=5),
    )
    Backfill.objects.create(team=team, integration=hook, since=now - timedelta(days=1), until=now, max_per_second=5)
    Backfill.objects.create(
        team=team,
        integration=hook,
        since=now - timedelta(days=1),
        until=now,
        max_per_second=5,
        created_at=now - timedelta(minutes=5),
        status=BackfillStatus.SUCCEEDED,
    )

    assert sweep_backfills() == 1
    assert published["jobs"] == [lost.pk]  # not the fresh one (its task is coming), not the finished one


def test_it_stays_within_the_integrations_quota(api, team, sink, published):
    stored_traces(team, 50)
    hook = make_integration(
        team,
        "hook",
        config={
            "url": sink.url,
            "headers": {},
            "secret": SECRET,
            "quota": {"max_per_minute": 20, "over_quota": "drop"},
        },
    )
    job_id = start(api, hook)["id"]

    assert run_slice(job_id, seconds=1.5, sleep=lambda _s: deliver_published(published)) is True

    job = Backfill.objects.get(pk=job_id)
    assert len(sink.stored) == 20
    assert not Delivery.objects.filter(status=DeliveryStatus.DROPPED).exists()  # waited, dropped nothing
    assert job.status == BackfillStatus.RUNNING and job.sent == 20
    assert Delivery.objects.filter(backfill=job).count() == 20


def test_it_pauses_while_the_circuit_is_open_and_while_live_delivery_is_busy(api, team, sink, published, settings):
    stored_traces(team, 10)
    hook = make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET})
    job_id = start(api, hook)["id"]
    breaker = CircuitBreaker(team.pk, "hook", threshold=1)
    breaker.record_failure()

    assert run_slice(job_id, seconds=0.5, sleep=lambda _s: None) is True
    assert not Delivery.objects.filter(backfill_id=job_id).exists()

    from django.core.cache import cache

    cache.delete_many([breaker.open_key, breaker.fails_key])
    settings.TRACERELAY_BACKFILL_MAX_BACKLOG = 3
    for _ in range(3):
        make_delivery(team, "hook")  # live rows waiting
    assert run_slice(job_id, seconds=0.5, sleep=lambda _s: None) is True
    assert not Delivery.objects.filter(backfill_id=job_id).exists()

    Delivery.objects.filter(backfill__isnull=True).update(status=DeliveryStatus.DELIVERED)
    done = drive(job_id, published)
    assert done.sent == 10


def test_a_job_fails_with_its_reason(api, team, published, monkeypatch):
    hook = make_integration(team, "hook")
    stored_traces(team, 2)
    job_id = start(api, hook)["id"]

    def broken(self):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(backfill_job._Runner, "step", broken)
    assert run_slice(job_id, seconds=1) is False
    job = api.get(f"/api/v1/backfills/{job_id}").json()
    assert job["status"] == "failed" and "the database went away" in job["error"]
    assert _problem(api.delete(f"/api/v1/backfills/{job_id}"), 409)["current_status"] == "failed"


class Enough(BaseException):
    pass


def test_it_writes_at_most_max_per_second(api, team, published):
    stored_traces(team, 250)
    hook = make_integration(team, "hook")
    job_id = start(api, hook, max_per_second=100)["id"]
    pauses: list[float] = []
    written: list[int] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        written.append(Delivery.objects.filter(backfill_id=job_id).count())
        if len(pauses) == 3:
            raise Enough

    with pytest.raises(Enough):
        run_slice(job_id, seconds=30, sleep=pause)

    assert written == [100, 200, 250]  # chunks of max_per_second
    # each chunk fills its share of a second: the pause is that share less the step's own time
    for pause_s, share in zip(pauses, [1.0, 1.0, 0.5], strict=True):
        assert share - 0.5 < pause_s <= share


def test_its_tasks_and_rows_go_to_the_backfill_queue(monkeypatch):
    from config.celery import app

    calls: list[tuple[str, dict]] = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: calls.append((name, kw)))

    backfill_job.publish_job(7)
    backfill_job.publish_rows(list(range(1, 901)))

    assert [(name, kw["queue"]) for name, kw in calls] == [
        ("delivery.backfill", "backfill"),
        ("routing.deliver", "backfill"),
        ("routing.deliver", "backfill"),
        ("routing.deliver", "backfill"),
    ]
    assert [len(kw["args"][0]) for _, kw in calls[1:]] == [400, 400, 100]


def test_beat_gets_the_stalled_backfills_sweep(settings):
    from django_celery_beat.models import PeriodicTask

    from delivery.tasks import BACKFILL_SWEEPER_NAME, ensure_sweeper_schedule

    settings.TRACERELAY_BACKFILL_SWEEP_INTERVAL_S = 9
    ensure_sweeper_schedule()
    ensure_sweeper_schedule()  # idempotent

    task = PeriodicTask.objects.get(name=BACKFILL_SWEEPER_NAME)
    assert (task.task, task.queue) == ("delivery.sweep_backfills", "backfill")
    assert (task.interval.every, task.interval.period) == (9, "seconds")
