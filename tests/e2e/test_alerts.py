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
from alerts.models import Alert, AlertEvent
from alerts.notify import signing_secret
from integrations.exporters.webhook import verify_signature
from traces.models import Trace

from ..factories import TeamFactory, TraceFactory
from ..fakes.server import FakeServer
from .conftest import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _evaluated(alert: Alert) -> Alert:
    alert.refresh_from_db(fields=["last_value", "last_evaluated_at", "state"])
    return alert


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
        # An evaluation saw the first trace: under the threshold, nothing fired.
        wait_for(lambda: _evaluated(alert).last_value == Decimal("0.75"), 120, f"an evaluation\n{worker.log_tail()}")
        assert not hook.requests and not AlertEvent.objects.filter(alert=alert).exists()
        crossed = time.monotonic()
        TraceFactory(team=team, cost=Decimal("0.5"), timestamp=timezone.now())
        assert hook.wait_for(1, timeout=60), worker.log_tail()
        took = time.monotonic() - crossed
        fired = hook.requests[0]
        assert fired.json()["type"] == "alert.fired" and fired.json()["value"] == 1.25
        assert verify_signature(signing_secret(alert), fired.header("x-tracerelay-signature") or "", fired.content)
        assert took < 60
        # A later evaluation, still over the threshold: no second event (it would commit with the
        # evaluation, before its notification is sent), so no second request.
        (event,) = AlertEvent.objects.filter(alert=alert)
        later = f"a later evaluation\n{worker.log_tail()}"
        wait_for(lambda: (_evaluated(alert).last_evaluated_at or event.at) > event.at, 120, later)
        assert AlertEvent.objects.filter(alert=alert).count() == 1 and len(hook.requests) == 1
        Trace.objects.filter(team=team).delete()
        assert hook.wait_for(2, timeout=60), worker.log_tail()
        assert hook.requests[1].json()["type"] == "alert.resolved"
    print(f"alert fired {took:.1f} s after the crossing")
