"""Evaluating alerts: fire once when the value reaches the threshold, not again in the same window,
resolve when back under (or when a calendar period ends); scopes; the built-in unpriced alert;
email (real SMTP on loopback) and webhook (signed as the webhook destination) notifications."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from alerts import services
from alerts.definition import parse_alert
from alerts.models import Alert, AlertEvent, State
from alerts.notify import signing_secret
from integrations.exporters.webhook import verify_signature
from traces.models import Trace

from ..factories import MembershipFactory, TeamFactory, TraceFactory, UserFactory
from ..fakes.server import FakeServer, Reply
from ..fakes.smtp import smtp_server, use_smtp

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 18, 12, 0, 30, tzinfo=UTC)  # a Wednesday


@pytest.fixture(autouse=True)
def loopback_ok(settings):
    settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = True


@pytest.fixture
def team():
    return TeamFactory(name="spenders")


def make(team, **body):
    spec = parse_alert(
        {"name": "Budget", "metric": "cost", "threshold": 1, "window": {"type": "rolling", "minutes": 60}, **body}
    )
    alert, _secret = services.alert_create(team_id=team.id, spec=spec, actor="test")
    return alert


def spend(team, cost, at, **fields):
    return TraceFactory(team=team, cost=Decimal(str(cost)), timestamp=at, **fields)


def kinds(alert):
    return [e.kind for e in AlertEvent.objects.filter(alert=alert).order_by("at", "id")]


def test_fires_once_and_resolves_on_a_rolling_window(team):
    alert = make(team)
    spend(team, "0.6", NOW - timedelta(minutes=50))
    assert services.evaluate(alert.pk, NOW).event is None
    spend(team, "0.4", NOW - timedelta(minutes=10))  # 1.0: reaches the threshold
    assert services.evaluate(alert.pk, NOW).event == "fired"
    spend(team, "5", NOW - timedelta(minutes=5))
    assert services.evaluate(alert.pk, NOW + timedelta(seconds=20)).event is None  # still over: once
    alert.refresh_from_db()
    assert alert.state == State.FIRING and alert.last_value == Decimal("6")
    # an hour later the window holds nothing: resolved
    assert services.evaluate(alert.pk, NOW + timedelta(minutes=61)).event == "resolved"
    assert kinds(alert) == ["fired", "resolved"]
    fired = AlertEvent.objects.get(alert=alert, kind="fired")
    assert fired.value == Decimal("1.0") and fired.threshold == Decimal(1)
    assert fired.window_end - fired.window_start == timedelta(minutes=60)
    # and it may fire again on a new crossing
    spend(team, "2", NOW + timedelta(minutes=62))
    assert services.evaluate(alert.pk, NOW + timedelta(minutes=63)).event == "fired"


def test_a_calendar_day_fires_once_and_resolves_at_midnight(team):
    alert = make(team, window={"type": "calendar", "period": "day"}, metric="tokens", threshold=1000)
    spend(team, 0, NOW.replace(hour=1), total_tokens=600, prompt_tokens=600, completion_tokens=0)
    spend(team, 0, NOW.replace(hour=2), total_tokens=600, prompt_tokens=600, completion_tokens=0)
    spend(team, 0, NOW - timedelta(days=1), total_tokens=99999, prompt_tokens=99999, completion_tokens=0)  # yesterday
    assert services.evaluate(alert.pk, NOW).event == "fired"
    assert services.evaluate(alert.pk, NOW + timedelta(hours=1)).event is None
    tomorrow = NOW.replace(hour=0, minute=0, second=5) + timedelta(days=1)
    assert services.evaluate(alert.pk, tomorrow).event == "resolved"
    assert kinds(alert) == ["fired", "resolved"]
    event = AlertEvent.objects.get(alert=alert, kind="fired")
    assert event.window_start == NOW.replace(hour=0, minute=0, second=0) and event.value == 1200


@pytest.mark.parametrize(
    ("period", "start", "end"),
    [
        ("week", datetime(2026, 11, 16, tzinfo=UTC), datetime(2026, 11, 23, tzinfo=UTC)),
        ("month", datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
    ],
)
def test_calendar_windows(team, period, start, end):
    from alerts.windows import window_at

    alert = make(team, window={"type": "calendar", "period": period})
    assert window_at(alert, NOW) == (start, end)
    spend(team, "0.7", start + timedelta(hours=1))
    spend(team, "0.7", NOW - timedelta(minutes=1))
    spend(team, "9", start - timedelta(minutes=1))  # the period before
    outcome = services.evaluate(alert.pk, NOW)
    assert outcome.event == "fired" and outcome.value == Decimal("1.4")


@pytest.mark.parametrize(
    ("scope", "fields"),
    [
        ({"model": "gpt-4o*"}, {"model": "gpt-4o-mini"}),
        ({"user_id": "u-1"}, {"user_id": "u-1"}),
        ({"tag": "checkout"}, {"tags": ["checkout", "beta"]}),
        ({"environment": "production"}, {"environment": "production"}),
        ({"service_name": "billing"}, {"service_name": "billing"}),
    ],
)
@pytest.mark.parametrize("window", [{"type": "rolling", "minutes": 30}, {"type": "calendar", "period": "month"}])
def test_scopes_count_only_their_traces(team, scope, fields, window):
    alert = make(team, scope=scope, window=window)
    spend(team, "0.9", NOW - timedelta(minutes=5), **fields)
    spend(
        team,
        "5",
        NOW - timedelta(minutes=5),
        model="claude-sonnet-4",
        user_id="u-2",
        tags=[],
        environment="development",
        service_name="api",
    )
    assert services.evaluate(alert.pk, NOW).value == Decimal("0.9")
    spend(team, "0.1", NOW - timedelta(minutes=1), **fields)
    assert services.evaluate(alert.pk, NOW).event == "fired"


def test_another_teams_spend_never_counts(team):
    alert = make(team)
    spend(TeamFactory(name="others"), "50", NOW - timedelta(minutes=1))
    assert services.evaluate(alert.pk, NOW).value == 0


def test_unpriced_traces_are_not_zero_dollars_they_raise_the_builtin_alert(team, settings):
    owner = UserFactory(email="owner@example.com")
    MembershipFactory(team=team, user=owner, role="owner")
    MembershipFactory(team=team, user=UserFactory(email="viewer@example.com"), role="viewer")
    services.ensure_builtin_alerts()
    builtin = Alert.objects.get(team=team, builtin="unpriced")
    assert builtin.metric == "unpriced" and builtin.enabled
    assert services.ensure_builtin_alerts() == 0  # once per team
    TraceFactory(team=team, timestamp=NOW - timedelta(minutes=5), cost=None, unpriced=True, model="my-finetune")
    with smtp_server() as mailbox:
        use_smtp(settings, mailbox)
        assert services.evaluate(builtin.pk, NOW).event == "fired"
        message = mailbox.wait_for("owner@example.com")
    assert "viewer@example.com" not in message["X-Envelope-To"]
    assert "Unpriced traffic" in message["Subject"] and "1 traces" in mailbox.body(message)


def test_notifications_email_and_signed_webhook(team, settings):
    settings.TRACERELAY_PUBLIC_URL = "https://tracerelay.example.com/obs"
    with FakeServer() as hook, smtp_server() as mailbox:
        use_smtp(settings, mailbox)
        alert = make(team, notify={"emails": ["oncall@example.com"], "webhooks": [{"url": f"{hook.url}/alerts"}]})
        spend(team, "3", NOW - timedelta(minutes=1))
        services.evaluate(alert.pk, NOW)
        message = mailbox.wait_for("oncall@example.com")
        assert message["Subject"] == "[tracerelay] FIRING: Budget"
        text = mailbox.body(message).replace("\r\n", "\n")
        assert "Budget (spenders) crossed its threshold: Cost ≥ $1.00 in the last 60 minutes.\n" in text
        assert "Value:     $3.00\nThreshold: $1.00\n" in text
        assert f"Open the alert: https://tracerelay.example.com/obs/alerts/{alert.pk}\n" in text
        assert hook.wait_for(1)
        request = hook.requests[0]
        body = request.json()
        assert body == {
            "type": "alert.fired",
            "alert": {"id": alert.pk, "name": "Budget", "url": f"https://tracerelay.example.com/obs/alerts/{alert.pk}"},
            "value": 3.0,
            "threshold": 1.0,
            "window": {
                "type": "rolling",
                "minutes": 60,
                "start": "2026-11-18T11:00:30Z",
                "end": "2026-11-18T12:00:30Z",
            },
            "at": "2026-11-18T12:00:30Z",
        }
        secret = signing_secret(alert)
        assert secret.startswith("whsec_")
        assert verify_signature(secret, request.header("x-tracerelay-signature") or "", request.content)
        Trace.objects.all().delete()
        services.evaluate(alert.pk, NOW + timedelta(seconds=20))
        assert hook.wait_for(2) and hook.requests[1].json()["type"] == "alert.resolved"
    event = AlertEvent.objects.filter(alert=alert, kind="fired").get()
    assert event.notifications["email"] == "sent" and event.notifications["webhooks"][0]["ok"] is True


def test_an_email_to_no_mail_server_says_it_was_not_sent(team, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"  # no EMAIL_URL: the log
    alert = make(team, threshold=0.5, notify={"emails": ["oncall@example.com"]})
    spend(team, "0.0000035", NOW - timedelta(minutes=1))
    spend(team, "0.6", NOW - timedelta(minutes=2))
    assert services.evaluate(alert.pk, NOW).event == "fired"
    event = AlertEvent.objects.get(alert=alert)
    assert event.notifications["email"] == "not sent: no mail server is configured (EMAIL_URL); written to the log"


def test_small_amounts_keep_their_digits_in_the_email(team, mailoutbox):
    alert = make(team, threshold=0.000001, notify={"emails": ["oncall@example.com"]})
    spend(team, "0.0000035", NOW - timedelta(minutes=1))
    services.evaluate(alert.pk, NOW)
    (message,) = mailoutbox
    assert "Value:     $0.0000035\nThreshold: $0.000001\n" in message.body
    assert "Cost ≥ $0.000001 in the last 60 minutes" in message.body
    assert AlertEvent.objects.get(alert=alert).notifications["email"] == "sent"


def test_a_failing_webhook_is_retried_and_recorded(team, settings, monkeypatch):
    monkeypatch.setattr("alerts.notify.time.sleep", lambda s: None)
    with FakeServer(default=Reply(503)) as hook:
        alert = make(team, notify={"webhooks": [{"url": hook.url}]})
        spend(team, "3", NOW - timedelta(minutes=1))
        assert services.evaluate(alert.pk, NOW).event == "fired"  # a failed notification never stops it
        assert len(hook.requests) == 3
        url = hook.url
    result = AlertEvent.objects.get(alert=alert).notifications["webhooks"][0]
    assert result == {"url": url, "ok": False, "error": "HTTP 503"}


def test_disabled_alerts_are_not_evaluated(team):
    alert = make(team, enabled=False)
    spend(team, "3", NOW - timedelta(minutes=1))
    outcomes = services.evaluate_all(NOW)
    assert alert.pk not in [o.alert_id for o in outcomes]
    assert not AlertEvent.objects.filter(alert=alert).exists()
