"""The engine with the OTLP-family exporters against the fake destinations of tests/fakes, which
check every request against the platform's real format and keep spans once per (trace, span) id."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from integrations.registry import exporter_class
from tests.fakes.destinations import FakeMlflow, FakeOtlpCollector, FakePhoenix
from tests.fakes.server import Reply

from .scripted import make_delivery, make_integration

pytestmark = pytest.mark.django_db


def _integration(team, name: str, platform: str, config: dict, **kwargs):
    return make_integration(
        team, name, platform=platform, config=exporter_class(platform).validate_config(config), **kwargs
    )


def test_phoenix_gets_one_span_per_trace_with_stable_ids(team, published):
    with FakePhoenix() as phoenix:
        _integration(team, "phoenix", "phoenix", {"host": phoenix.url, "projectName": "prod"})
        phoenix.queue(Reply(503))
        rows = [make_delivery(team, "phoenix") for _ in range(3)]

        deliver_batch([r.pk for r in rows])  # 503: retry
        Delivery.objects.filter(pk__in=[r.pk for r in rows]).update(next_attempt_at=timezone.now())
        deliver_batch([r.pk for r in rows])

        assert phoenix.problems == []
        assert len(phoenix.requests) == 2
        assert len(phoenix.spans) == 3
        assert {s.attributes["tracerelay.trace_id"] for s in phoenix.spans} == {r.trace.trace_id for r in rows}
        assert set(Delivery.objects.values_list("status", flat=True)) == {DeliveryStatus.DELIVERED}


def test_a_resend_to_mlflow_keeps_one_span(team, published):
    with FakeMlflow(experiments=("7",)) as mlflow:
        _integration(team, "mlflow", "mlflow", {"host": mlflow.url, "experimentId": "7"})
        row = make_delivery(team, "mlflow")

        deliver_batch([row.pk])
        Delivery.objects.filter(pk=row.pk).update(status=DeliveryStatus.PENDING)  # sent again (a replay)
        deliver_batch([row.pk])

        assert mlflow.problems == []
        assert mlflow.exports == 2
        assert len(mlflow.spans) == 1


def test_mlflow_rate_limiting_is_retried_after_its_retry_after(team, published):
    with FakeMlflow(experiments=("7",)) as mlflow:
        _integration(team, "mlflow", "mlflow", {"host": mlflow.url, "experimentId": "7"})
        mlflow.queue(Reply(429, headers={"Retry-After": "12"}))
        row = make_delivery(team, "mlflow")

        deliver_batch([row.pk])

        row.refresh_from_db()
        assert row.status == DeliveryStatus.PENDING
        assert row.last_status_code == 429
        assert (row.next_attempt_at - row.updated_at).total_seconds() >= 12
        assert published[-1][1] >= 12


def test_a_wrong_experiment_is_permanent_and_dead_lettered(team, published):
    with FakeMlflow(experiments=("7",)) as mlflow:
        _integration(team, "mlflow", "mlflow", {"host": mlflow.url, "experimentId": "8"})
        row = make_delivery(team, "mlflow")

        deliver_batch([row.pk])

        row.refresh_from_db()
        assert row.status == DeliveryStatus.DEAD
        assert row.attempts == 1
        assert row.last_status_code == 404


def test_bad_credentials_at_a_collector_go_to_the_fallback(team, published):
    with FakeOtlpCollector(required_headers={"x-api-key": "right"}) as collector, FakePhoenix() as backup:
        _integration(
            team, "collector", "otlp", {"endpoint": collector.url + "/v1/traces", "headers": {"x-api-key": "wrong"}}
        )
        _integration(team, "backup", "phoenix", {"host": backup.url})
        row = make_delivery(team, "collector", fallback=["backup"])

        deliver_batch([row.pk])
        fallback = Delivery.objects.get(fallback_of=row)
        deliver_batch([fallback.pk])

        assert Delivery.objects.get(pk=row.pk).last_status_code == 401
        assert Delivery.objects.get(pk=fallback.pk).status == DeliveryStatus.DELIVERED
        assert collector.spans == [] and len(backup.spans) == 1
