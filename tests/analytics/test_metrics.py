"""/metrics: who may read it, what it counts (ingest by path and status, deliveries, the queues,
alert evaluations), and several processes writing while one scrape adds them up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from config import metrics
from tests.delivery.scripted import make_delivery

pytestmark = pytest.mark.django_db
URL = "/metrics"
ROOT = Path(__file__).resolve().parents[2]


def _samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_loopback_reads_it_without_a_token(client, settings):
    settings.METRICS_TOKEN = ""
    response = client.get(URL)  # the test client's REMOTE_ADDR is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"tracerelay_traces_ingested", "tracerelay_proxy_added_latency_seconds", "tracerelay_deliveries",
            "tracerelay_alert_evaluations", "tracerelay_delivery_queue_depth",
            "tracerelay_delivery_claims_taken_over", "tracerelay_delivery_workers"} <= names  # fmt: skip


@pytest.mark.parametrize("address", ["10.1.2.3", "192.168.0.9", "::1", "::ffff:127.0.0.1"])
def test_internal_addresses_read_it(client, settings, address):
    settings.METRICS_TOKEN = ""
    assert client.get(URL, REMOTE_ADDR=address).status_code == 200


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", ""])
def test_outside_addresses_are_refused_without_a_token(client, settings, address):
    settings.METRICS_TOKEN = ""
    response = client.get(URL, REMOTE_ADDR=address)
    assert response.status_code == 403
    assert b"METRICS_TOKEN" in response.content


def test_a_request_through_a_reverse_proxy_is_refused_without_a_token(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get(URL, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403
    assert client.get(URL, HTTP_FORWARDED="for=203.0.113.9").status_code == 403


def test_with_a_token_set_only_the_bearer_token_reads_it(client, settings):
    settings.METRICS_TOKEN = "s3cret-scrape"
    refused = client.get(URL)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert client.get(URL, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get(URL, HTTP_AUTHORIZATION="Basic s3cret-scrape").status_code == 401
    ok = client.get(URL, HTTP_AUTHORIZATION="Bearer s3cret-scrape", REMOTE_ADDR="8.8.8.8")
    assert ok.status_code == 200


def test_post_is_not_allowed(client):
    assert client.post(URL).status_code == 405


def test_ingest_counts_by_path_and_status(api, django_capture_on_commit_callbacks):
    rest = _value("tracerelay_traces_ingested_total", path="rest", status="success")
    batch_error = _value("tracerelay_traces_ingested_total", path="batch", status="error")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/traces", {"model": "gpt-4o"}, format="json").status_code == 201
        items = [{"model": "gpt-4o", "status": "error"}, {"model": "gpt-4o", "status": "error"}, {"model": 5}]
        assert api.post("/api/v1/traces/batch", {"traces": items}, format="json").status_code in (200, 207)
    assert _value("tracerelay_traces_ingested_total", path="rest", status="success") == rest + 1
    assert _value("tracerelay_traces_ingested_total", path="batch", status="error") == batch_error + 2


def test_a_rolled_back_ingest_is_not_counted(api):
    # Without on-commit callbacks run (the test's transaction never commits), nothing is counted.
    before = _value("tracerelay_traces_ingested_total", path="rest", status="success")
    assert api.post("/api/v1/traces", {"model": "gpt-4o"}, format="json").status_code == 201
    assert _value("tracerelay_traces_ingested_total", path="rest", status="success") == before


def test_queue_depth_is_computed_at_scrape(client, team, settings):
    settings.METRICS_TOKEN = ""
    make_delivery(team, "langfuse-main")
    make_delivery(team, "langfuse-main")
    make_delivery(team, "langfuse-main", attempts=2)
    make_delivery(team, "webhook", status="dead")
    samples = _samples(client.get(URL).content)
    depth = "tracerelay_delivery_queue_depth"
    assert samples[(depth, (("destination", "langfuse-main"), ("state", "pending")))] == 2
    assert samples[(depth, (("destination", "langfuse-main"), ("state", "retrying")))] == 1
    assert samples[(depth, (("destination", "webhook"), ("state", "dead")))] == 1


def test_delivery_workers_are_counted_by_lease_at_scrape(client, settings):
    from datetime import timedelta
    from uuid import uuid4

    from django.utils import timezone

    from delivery.models import DeliveryWorker

    settings.METRICS_TOKEN = ""
    settings.TRACERELAY_DELIVERY_LEASE_S = 20
    now = timezone.now()
    for seconds_ago in (1, 5, 60):
        beat = now - timedelta(seconds=seconds_ago)
        DeliveryWorker.objects.create(id=uuid4(), hostname="h", pid=1, started_at=beat, heartbeat_at=beat)
    samples = _samples(client.get(URL).content)
    assert samples[("tracerelay_delivery_workers", (("state", "alive"),))] == 2
    assert samples[("tracerelay_delivery_workers", (("state", "expired"),))] == 1


def test_alert_evaluations_take_a_known_outcome():
    before = _value("tracerelay_alert_evaluations_total", outcome="fired")
    metrics.record_alert_evaluation("fired")
    assert _value("tracerelay_alert_evaluations_total", outcome="fired") == before + 1
    with pytest.raises(ValueError, match="outcome"):
        metrics.record_alert_evaluation("exploded")


WRITER = """
import sys
from config import metrics
metrics.record_alert_evaluation("fired")
metrics.observe_proxy_added_latency(float(sys.argv[1]))
metrics.DELIVERIES.labels("primary", "delivered").inc(int(sys.argv[2]))
"""


def test_two_processes_write_and_one_scrape_sees_both(client, settings, tmp_path):
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, seconds, count], env=env, cwd=ROOT)
        for seconds, count in (("0.0003", "3"), ("0.02", "4"))
    ]
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    assert len(list(tmp_path.glob("*.db"))) >= 2  # a file per process and kind

    settings.METRICS_TOKEN = ""
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path)
    samples = _samples(client.get(URL).content)
    assert samples[("tracerelay_alert_evaluations_total", (("outcome", "fired"),))] == 2
    assert samples[("tracerelay_deliveries_total", (("destination", "primary"), ("outcome", "delivered")))] == 7
    histogram = "tracerelay_proxy_added_latency_seconds"
    assert samples[(f"{histogram}_count", ())] == 2
    assert samples[(f"{histogram}_bucket", (("le", "0.0005"),))] == 1
    assert samples[(f"{histogram}_bucket", (("le", "0.025"),))] == 2
    assert samples[(f"{histogram}_sum", ())] == pytest.approx(0.0203)
