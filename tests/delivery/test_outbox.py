"""The outbox contract the ingest path relies on: rows per kept decision, dispatch after commit."""

from __future__ import annotations

import pytest
from django.db import transaction

from delivery import outbox
from delivery.models import DeliveryStatus
from routing.router import Decision, DestinationSpec, RoutingResult
from tests.factories import TraceFactory

pytestmark = pytest.mark.django_db


def _result() -> RoutingResult:
    kept = DestinationSpec("langfuse", tags=("prod",), fallback=(DestinationSpec("webhook", url="https://x.test/h"),))
    dropped = DestinationSpec("datadog", sample_rate=0.0)
    return RoutingResult(
        decisions=(
            Decision(kept, "errors", True, 1.0, "matched rule 'errors'"),
            Decision(dropped, "errors", False, 0.0, "sampled out"),
        )
    )


def test_it_makes_one_unsaved_row_per_kept_decision(team):
    trace = TraceFactory(team=team)

    rows = outbox.deliveries_for(trace, _result())

    assert len(rows) == 1
    row = rows[0]
    assert row.pk is None
    assert (row.team_id, row.trace_id, row.destination, row.rule_name) == (team.pk, trace.pk, "langfuse", "errors")
    assert row.status == DeliveryStatus.PENDING
    assert row.spec == {
        "name": "langfuse",
        "sample_rate": 1.0,
        "tags": ["prod"],
        "fallback": [{"name": "webhook", "sample_rate": 1.0, "tags": [], "url": "https://x.test/h", "fallback": []}],
    }


def test_it_publishes_after_the_commit_and_not_on_rollback(monkeypatch, django_capture_on_commit_callbacks):
    sent: list[list[int]] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: sent.append(list(ids)) or True)

    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            outbox.enqueue_on_commit([3, 4])
            assert sent == []
    assert sent == [[3, 4]]

    sent.clear()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        try:
            with transaction.atomic():
                outbox.enqueue_on_commit([5])
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
    assert callbacks == [] and sent == []


def test_publish_sends_chunks_of_ids(monkeypatch, settings):
    settings.TRACERELAY_DELIVERY_TASK_CHUNK = 2
    calls = []
    monkeypatch.setattr(outbox.app, "send_task", lambda name, **kw: calls.append(kw))
    monkeypatch.setattr(outbox, "_broker_down_until", 0.0)

    assert outbox.publish([1, 2, 3], countdown=4.0) is True
    assert [c["args"] for c in calls] == [[[1, 2]], [[3]]]
    assert {c["countdown"] for c in calls} == {4.0}


def test_a_broker_failure_is_logged_never_raised(monkeypatch, caplog):
    def down(name, **kw):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(outbox.app, "send_task", down)
    monkeypatch.setattr(outbox, "_broker_down_until", 0.0)

    assert outbox.publish([1, 2]) is False
    assert "could not publish 2 deliveries" in caplog.text
    # Within the back-off window it does not even try (no connect timeout on every ingest).
    monkeypatch.setattr(outbox.app, "send_task", lambda name, **kw: pytest.fail("published while backing off"))
    assert outbox.publish([3]) is False
