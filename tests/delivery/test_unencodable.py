"""One trace an exporter cannot encode is dead-lettered alone, with the reason; the rest of its
chunk is delivered. Through the engine and every real exporter, against the fake destinations of
tests/fakes (which check the platform's wire format and keep what they accept)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from integrations.registry import exporter_class
from tests.factories import TraceFactory
from tests.fakes.destinations import (
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
from tests.fakes.server import FakeServer

from .scripted import make_delivery, make_integration, transient

pytestmark = pytest.mark.django_db


def _otlp_ids(fake: Any) -> set[str]:
    return {s.attributes["tracerelay.trace_id"] for s in fake.spans}


# platform → (the fake, its config given the fake's URL, the trace ids the fake accepted)
PLATFORMS: dict[str, tuple[Callable[[], FakeServer], Callable[[str], dict], Callable[[Any], set[str]]]] = {
    "langfuse": (
        FakeLangfuse,
        lambda url: {"publicKey": "pk-lf-test", "secretKey": "sk-lf-test", "host": url},
        _otlp_ids,
    ),
    "langsmith": (
        FakeLangSmith,
        lambda url: {"apiKey": "lsv2-test", "endpoint": url},
        lambda fake: {r["extra"]["metadata"]["tracerelay_trace_id"] for r in fake.runs.values()},
    ),
    "helicone": (
        FakeHelicone,
        lambda url: {"apiKey": "sk-helicone-test", "endpoint": url},
        lambda fake: {
            log["providerRequest"]["meta"]["Helicone-Property-Tracerelay-Trace-Id"] for log in fake.logs.values()
        },
    ),
    "datadog": (
        FakeDatadog,
        lambda url: {"apiKey": "dd-test-key", "mlApp": "checkout", "endpoint": url},
        lambda fake: {s["meta"]["metadata"]["tracerelay_trace_id"] for s in fake.spans},
    ),
    "phoenix": (FakePhoenix, lambda url: {"host": url}, _otlp_ids),
    "weave": (FakeWeave, lambda url: {"apiKey": "wandb-key", "projectId": "team/proj", "host": url}, _otlp_ids),
    "mlflow": (lambda: FakeMlflow(experiments=("7",)), lambda url: {"host": url, "experimentId": "7"}, _otlp_ids),
    "otlp": (FakeOtlpCollector, lambda url: {"endpoint": url + "/v1/traces"}, _otlp_ids),
    "webhook": (FakeWebhookReceiver, lambda url: {"url": url + "/hook"}, lambda fake: {t["id"] for t in fake.traces}),
}

# Stored before ingest refused such values: a start in year 9999 whose latency ends past it.
PAST_9999 = {"timestamp": datetime(9999, 12, 31, 23, 0, tzinfo=UTC), "latency_ms": 2 * 3600 * 1000}


def _deliver_mixed(team, platform: str, bad: dict[str, Any]) -> tuple[set[str], list[Delivery], Delivery, Any]:
    make_fake, config, received = PLATFORMS[platform]
    with make_fake() as fake:
        make_integration(
            team, platform, platform=platform, config=exporter_class(platform).validate_config(config(fake.url))
        )
        good = [make_delivery(team, platform) for _ in range(3)]
        unencodable = make_delivery(team, platform, trace=TraceFactory(team=team, **bad))

        report = deliver_batch([good[0].pk, unencodable.pk, good[1].pk, good[2].pk])

        assert fake.problems == []
        assert report.delivered == 3 and report.dead == 1
        return received(fake), good, Delivery.objects.get(pk=unencodable.pk), fake


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_one_trace_past_year_9999_is_dead_and_the_rest_of_the_chunk_arrives(team, published, platform):
    received, good, bad, _ = _deliver_mixed(team, platform, PAST_9999)

    assert received == {row.trace.trace_id for row in good}
    assert {Delivery.objects.get(pk=row.pk).status for row in good} == {DeliveryStatus.DELIVERED}
    assert bad.status == DeliveryStatus.DEAD
    assert bad.last_error.startswith(exporter_class(platform).label)
    assert "cannot take this trace: its end time (9999-12-31T23:00:00+00:00 + latency_ms 7200000)" in bad.last_error
    assert "past year 9999" in bad.last_error
    assert bad.last_status_code is None


@pytest.mark.parametrize("platform", ["otlp", "phoenix", "langfuse", "helicone"])
def test_a_trace_before_1970_is_dead_where_times_count_from_1970(team, published, platform):
    received, good, bad, _ = _deliver_mixed(team, platform, {"timestamp": datetime(1969, 12, 31, 23, 0, tzinfo=UTC)})

    assert received == {row.trace.trace_id for row in good}
    assert bad.status == DeliveryStatus.DEAD
    assert "it starts at 1969-12-31T23:00:00.000000Z, before 1970-01-01" in bad.last_error


@pytest.mark.parametrize("platform", ["langsmith", "webhook"])
def test_a_trace_of_year_1_keeps_a_four_digit_year_where_the_format_takes_it(team, published, platform):
    make_fake, config, received = PLATFORMS[platform]
    with make_fake() as fake:
        make_integration(
            team, platform, platform=platform, config=exporter_class(platform).validate_config(config(fake.url))
        )
        row = make_delivery(team, platform, trace=TraceFactory(team=team, timestamp=datetime(1, 1, 1, tzinfo=UTC)))

        deliver_batch([row.pk])

        assert fake.problems == []
        assert received(fake) == {row.trace.trace_id}
    assert Delivery.objects.get(pk=row.pk).status == DeliveryStatus.DELIVERED


def test_datadog_dead_letters_the_span_older_than_a_day_and_sends_the_rest(team, published):
    old = {"timestamp": datetime.now(UTC) - timedelta(hours=25)}
    received, good, bad, fake = _deliver_mixed(team, "datadog", old)

    assert received == {row.trace.trace_id for row in good}
    assert len(fake.requests) == 1
    assert bad.status == DeliveryStatus.DEAD
    assert "more than 24 hours ago, and Datadog's intake accepts spans at most 24 hours old" in bad.last_error


def test_an_unencodable_trace_goes_to_its_fallback(team, published, scripted):
    make_integration(team, "primary")
    make_integration(team, "backup")
    row = make_delivery(team, "primary", fallback=["backup"])
    scripted["primary"].unencodable[row.trace.trace_id] = "its start is before the destination's epoch"

    deliver_batch([row.pk])
    fallback = Delivery.objects.get(fallback_of=row)
    deliver_batch([fallback.pk])

    assert Delivery.objects.get(pk=row.pk).status == DeliveryStatus.FAILED
    assert "its start is before the destination's epoch" in Delivery.objects.get(pk=row.pk).last_error
    assert scripted["primary"].calls == []  # nothing was sent for a chunk whose only trace was refused
    assert scripted["backup"].sent_ids == [row.trace.trace_id]
    assert Delivery.objects.get(pk=fallback.pk).status == DeliveryStatus.DELIVERED


def test_a_transient_failure_retries_the_encodable_rows_and_leaves_the_refused_one_dead(team, published, scripted):
    make_integration(team, "primary")
    rows = [make_delivery(team, "primary") for _ in range(3)]
    scripted["primary"].unencodable[rows[1].trace.trace_id] = "too old"
    scripted["primary"].outcomes = [transient()]

    deliver_batch([r.pk for r in rows])

    assert scripted["primary"].calls == [[rows[0].trace.trace_id, rows[2].trace.trace_id]]
    statuses = [Delivery.objects.get(pk=r.pk).status for r in rows]
    assert statuses == [DeliveryStatus.PENDING, DeliveryStatus.DEAD, DeliveryStatus.PENDING]
