"""`/metrics`: Prometheus text format for operators (docs/deployment.md).

The counters and the histogram come from every process (`config.metrics`, added up from
PROMETHEUS_MULTIPROC_DIR when set); the queue depths are computed at scrape time from the
delivery outbox and the broker, for all teams together.

Who may read it: with METRICS_TOKEN set, a request with ``Authorization: Bearer <token>``;
unset, a request from a loopback or private address that did not come through a reverse proxy
(no X-Forwarded-For, Forwarded or X-Real-IP header), so a scraper next to the server reads it
and the internet does not.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from config import metrics  # noqa: F401  (defines the metrics in this process)
from delivery.models import Delivery, DeliveryStatus
from delivery.selectors import worker_counts
from integrations.models import Integration
from integrations.options.quota import WINDOWS, Quota, usage_many

from .live import broker_queue_lengths

PROXY_HEADERS = ("X-Forwarded-For", "Forwarded", "X-Real-IP")


class QueueCollector:
    """Delivery outbox rows waiting per destination name and state, delivery workers by lease, and
    the broker's queues."""

    def collect(self) -> Iterator[Metric]:
        waiting = [DeliveryStatus.PENDING, DeliveryStatus.SENDING]
        rows = (
            Delivery.objects.filter(status__in=[*waiting, DeliveryStatus.DEAD])
            .values("destination")
            .annotate(
                pending=Count("id", filter=Q(status__in=waiting, attempts=0) | Q(status=DeliveryStatus.SENDING)),
                retrying=Count("id", filter=Q(status=DeliveryStatus.PENDING, attempts__gt=0)),
                dead=Count("id", filter=Q(status=DeliveryStatus.DEAD)),
            )
            .order_by("destination")
        )
        depth = GaugeMetricFamily(
            "tracerelay_delivery_queue_depth",
            "Deliveries waiting now, by destination name (all teams) and state: pending (first attempt or "
            "being sent), retrying (failed, waiting for the retry), dead (dead-lettered).",
            labels=["destination", "state"],
        )
        for row in rows:
            for state in ("pending", "retrying", "dead"):
                depth.add_metric([row["destination"], state], row[state])
        yield depth
        workers = GaugeMetricFamily(
            "tracerelay_delivery_workers",
            "Delivery worker processes by lease: alive (renewed within TRACERELAY_DELIVERY_LEASE_S), expired "
            "(stopped renewing: died or stopped; the deliveries they held are taken over by live workers).",
            labels=["state"],
        )
        for state, count in worker_counts().items():
            workers.add_metric([state], count)
        yield workers
        yield from quota_metrics()
        lengths = broker_queue_lengths()
        if lengths is not None:
            broker = GaugeMetricFamily(
                "tracerelay_broker_queue_length", "Messages waiting in each Celery queue (Redis).", labels=["queue"]
            )
            for queue, length in sorted(lengths.items()):
                broker.add_metric([queue], length)
            yield broker


def quota_metrics() -> Iterator[Metric]:
    """Each integration with a ``config.quota``: its limits, and the sends counted now in each
    window (the shared Redis counters the delivery workers draw from)."""
    limit = GaugeMetricFamily(
        "tracerelay_integration_quota_limit",
        "An integration's quota (config.quota) by team id, integration name and window (max_per_minute: "
        "any 60 seconds; max_per_day: the UTC day).",
        labels=["team", "integration", "window"],
    )
    used = GaugeMetricFamily(
        "tracerelay_integration_quota_used",
        "Traces sent to an integration within its quota's window now (the same labels as the limit).",
        labels=["team", "integration", "window"],
    )
    rows = Integration.objects.filter(config__has_key="quota").values_list("pk", "team_id", "name", "config")
    quotas = [(pk, team, name, quota) for pk, team, name, config in rows if (quota := Quota.of(config)) is not None]
    counted = usage_many([(pk, quota) for pk, _, _, quota in quotas])
    for pk, team, name, quota in quotas:
        for window, letter, _ in WINDOWS:
            if letter in quota.limits:
                limit.add_metric([str(team), name, window], quota.limits[letter])
                if pk in counted:
                    used.add_metric([str(team), name, window], counted[pk][window])
    yield limit
    yield used


def exposition() -> bytes:
    """The whole scrape: every process's metrics, then the queue depths."""
    folder = settings.PROMETHEUS_MULTIPROC_DIR
    if folder:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=folder)
        counted = generate_latest(registry)
    else:
        counted = generate_latest(REGISTRY)
    queues = CollectorRegistry()
    queues.register(QueueCollector())
    return counted + generate_latest(queues)


def refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the request may read the metrics, else the response that says why not."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return None
        response = HttpResponse("Send the metrics token: Authorization: Bearer <METRICS_TOKEN>.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    internal = address is not None and (address.is_loopback or address.is_private)
    if internal and not any(name in request.headers for name in PROXY_HEADERS):
        return None
    return HttpResponse(
        "Metrics are served to internal addresses only (set METRICS_TOKEN to scrape from elsewhere).\n",
        status=403,
        content_type="text/plain; charset=utf-8",
    )


@require_GET
def metrics_endpoint(request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
