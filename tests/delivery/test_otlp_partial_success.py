"""An OTLP partial success through the delivery engine, against the fake collector: a batch whose
every span was rejected gives up with the collector's message; a batch partly rejected (the
collector does not say which spans) is delivered, not sent again, with the warning on each row."""

from __future__ import annotations

import copy
import uuid

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from delivery import engine, outbox
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from tests.delivery.scripted import make_delivery, make_integration
from tests.fakes import FakeOtlpCollector, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _isolated(settings, monkeypatch):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-partial-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    engine.forget_resolved()
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: True)
    yield
    engine.forget_resolved()


def partial(rejected: int, message: str) -> Reply:
    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = rejected
    response.partial_success.error_message = message
    return Reply(200, response.SerializeToString(), {"Content-Type": "application/x-protobuf"})


@pytest.fixture
def collector(team):
    with FakeOtlpCollector() as server:
        make_integration(team, "collector", platform="otlp", config={"endpoint": f"{server.url}/v1/traces"})
        yield server


def rows(team, count: int) -> list[Delivery]:
    return [make_delivery(team, "collector") for _ in range(count)]


def test_a_partly_rejected_batch_is_delivered_once_with_the_collectors_word(team, collector) -> None:
    batch = rows(team, 3)
    collector.queue(partial(1, "span exceeds 1 MiB"))

    report = deliver_batch([r.pk for r in batch])

    assert collector.problems == [] and len(collector.requests) == 1  # not sent again
    assert report.delivered == 3
    stored = list(Delivery.objects.filter(pk__in=[r.pk for r in batch]))
    assert {d.status for d in stored} == {DeliveryStatus.DELIVERED}
    for d in stored:
        assert d.last_error.startswith("delivered with a warning: OTLP endpoint (collector) rejected 1 of the 3 spans")
        assert d.last_error.endswith(": span exceeds 1 MiB")


def test_a_batch_with_every_span_rejected_gives_up_with_the_collectors_message(team, collector) -> None:
    batch = rows(team, 2)
    collector.queue(partial(2, "tenant over its span limit"))

    report = deliver_batch([r.pk for r in batch])

    assert report.delivered == 0
    stored = list(Delivery.objects.filter(pk__in=[r.pk for r in batch]))
    assert {d.status for d in stored} == {DeliveryStatus.DEAD}
    assert all("rejected 2 of 2 spans: tenant over its span limit" in d.last_error for d in stored)
    assert len(collector.requests) == 1


def test_a_clean_answer_leaves_no_warning(team, collector) -> None:
    batch = rows(team, 2)
    assert deliver_batch([r.pk for r in batch]).delivered == 2
    assert set(Delivery.objects.filter(pk__in=[r.pk for r in batch]).values_list("last_error", flat=True)) == {""}
    assert len(collector.spans) == 2
