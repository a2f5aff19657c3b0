"""A spend alert, for real: beat evaluates every alert on its schedule, a worker on the reports
queue does it, and the signed webhook arrives within 60 s of the crossing; then it resolves."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from alerts import services
from alerts.definition import parse_alert
from alerts.notify import signing_secret
from integrations.exporters.webhook import verify_signature
from traces.models import Trace

from ..factories import TeamFactory, TraceFactory
from ..fakes.server import FakeServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_alert_fires_and_resolves_within_a_minute(start_worker, settings):
    settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = True
    team = TeamFactory(name="burning")
    with FakeServer() as hook:
        spec = parse_alert(
            {
                "name": "Hour budget",
                "metric": "cost",
                "threshold": 1,
                "window": {"type": "rolling", "minutes": 60},
                "notify": {"webhooks": [{"url": f"{hook.url}/alerts"}]},
            }
        )
        alert, _ = services.alert_create(team_id=team.id, spec=spec, actor="test")
        worker = start_worker(
            queues="reports", TRACERELAY_ALERT_EVALUATE_INTERVAL_S="2", TRACERELAY_ALLOW_PRIVATE_DESTINATIONS="true"
        )
        TraceFactory(team=team, cost=Decimal("0.75"), timestamp=timezone.now() - timedelta(minutes=1))
        time.sleep(5)
        assert not hook.requests  # under the threshold
        crossed = time.monotonic()
        TraceFactory(team=team, cost=Decimal("0.5"), timestamp=timezone.now())
        assert hook.wait_for(1, timeout=60), worker.log_tail()
        took = time.monotonic() - crossed
        fired = hook.requests[0]
        assert fired.json()["type"] == "alert.fired" and fired.json()["value"] == 1.25
        assert verify_signature(signing_secret(alert), fired.header("x-tracerelay-signature") or "", fired.content)
        assert took < 60
        time.sleep(5)
        assert len(hook.requests) == 1  # once, not again while still over
        Trace.objects.filter(team=team).delete()
        assert hook.wait_for(2, timeout=60), worker.log_tail()
        assert hook.requests[1].json()["type"] == "alert.resolved"
    print(f"alert fired {took:.1f} s after the crossing")
