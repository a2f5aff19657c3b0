"""/alerts pages: every role reads; admins and owners create, change, turn off and delete;
outsiders get 404; bad input shows next to its field and saves nothing."""

from __future__ import annotations

import pytest

from alerts import services
from alerts.definition import parse_alert
from alerts.models import Alert

from ..factories import MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
GOOD = {
    "name": "Monthly budget",
    "metric": "cost",
    "threshold": "500",
    "window_type": "calendar",
    "period": "month",
    "environment": "production",
    "emails": "oncall@example.com",
    "webhooks": "https://hooks.example.com/a",
    "enabled": "on",
}


@pytest.fixture(autouse=True)
def no_dns(monkeypatch):
    monkeypatch.setattr("integrations.urlguard.resolve_addresses", lambda host: [])


@pytest.fixture
def team():
    return TeamFactory(name="acme")


def login(client, team, role):
    user = UserFactory()
    MembershipFactory(user=user, team=team, role=role)
    client.force_login(user)


@pytest.fixture
def alert(team):
    spec = parse_alert(
        {"name": "Hourly", "metric": "tokens", "threshold": 1000, "window": {"type": "rolling", "minutes": 60}}
    )
    return services.alert_create(team_id=team.id, spec=spec, actor="test")[0]


def test_an_admin_creates_an_alert_and_sees_the_secret_once(client, team):
    login(client, team, "admin")
    r = client.post("/alerts/new", GOOD)
    alert = Alert.objects.get(team=team)
    assert r.status_code == 302 and r["Location"] == f"/alerts/{alert.pk}"
    assert (alert.window_type, alert.period, alert.scope) == ("calendar", "month", {"environment": "production"})
    assert alert.webhooks == [{"url": "https://hooks.example.com/a"}] and alert.emails == ["oncall@example.com"]
    first = client.get(r["Location"]).content.decode()
    assert "whsec_" in first and "shown only this once" in first
    assert "shown only this once" not in client.get(r["Location"]).content.decode()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": ""}, "name"),
        ({"threshold": "-1"}, "threshold"),
        ({"threshold": "abc"}, "threshold"),
        ({"window_type": "rolling", "minutes": ""}, "minutes"),
        ({"window_type": "rolling", "minutes": "99999999"}, "minutes"),
        ({"emails": "not-an-address"}, "emails"),
        ({"webhooks": "http://169.254.169.254/"}, "webhooks"),
        ({"model": "x" * 300}, "model"),
    ],
)
def test_bad_input_shows_next_to_the_field(client, team, changes, field):
    login(client, team, "owner")
    r = client.post("/alerts/new", {**GOOD, **changes})
    assert r.status_code == 400
    assert field in r.context["form"].errors, r.context["form"].errors
    assert not Alert.objects.exists()


def test_edit_toggle_delete(client, team, alert):
    login(client, team, "admin")
    page = client.get(f"/alerts/{alert.pk}/edit")
    assert page.context["form"].initial["minutes"] == 60
    r = client.post(
        f"/alerts/{alert.pk}/edit",
        {**GOOD, "name": "Hourly tokens", "metric": "tokens", "window_type": "rolling", "minutes": "30"},
    )
    assert r.status_code == 302
    alert.refresh_from_db()
    assert alert.name == "Hourly tokens" and alert.window_minutes == 30
    client.post(f"/alerts/{alert.pk}/toggle")
    alert.refresh_from_db()
    assert alert.enabled is False
    assert client.post(f"/alerts/{alert.pk}/delete").status_code == 302
    assert not Alert.objects.filter(pk=alert.pk).exists()


def test_the_builtin_alert_form_shows_only_its_own_settings(client, team):
    login(client, team, "owner")
    services.ensure_builtin_alerts()
    builtin = Alert.objects.get(team=team, builtin="unpriced")
    form = client.get(f"/alerts/{builtin.pk}/edit").context["form"]
    assert set(form.fields) == {"threshold", "emails", "webhooks", "enabled"}
    r = client.post(f"/alerts/{builtin.pk}/edit", {"threshold": "5", "emails": "", "webhooks": ""})
    assert r.status_code == 302
    builtin.refresh_from_db()
    assert builtin.threshold == 5 and builtin.enabled is False and builtin.metric == "unpriced"
    client.post(f"/alerts/{builtin.pk}/delete")
    assert Alert.objects.filter(pk=builtin.pk).exists()


def test_viewers_and_members_read_only(client, team, alert):
    for role in ("viewer", "member"):
        client.logout()
        login(client, team, role)
        assert "Hourly" in client.get("/alerts").content.decode()
        page = client.get(f"/alerts/{alert.pk}").content.decode()
        assert "Turn off" not in page and "Edit" not in page
        assert client.get("/alerts/new").status_code == 403
        assert client.post(f"/alerts/{alert.pk}/toggle").status_code == 403
        assert client.post(f"/alerts/{alert.pk}/delete").status_code == 403


def test_outsiders_get_404(client, alert):
    login(client, TeamFactory(name="others"), "owner")
    assert "Hourly" not in client.get("/alerts").content.decode()
    for url in (f"/alerts/{alert.pk}", f"/alerts/{alert.pk}/edit"):
        assert client.get(url).status_code == 404
    for url in (f"/alerts/{alert.pk}/toggle", f"/alerts/{alert.pk}/delete"):
        assert client.post(url).status_code == 404


def test_an_alert_reads_as_one_sentence_with_its_amounts_formatted(client, team):
    spec = parse_alert(
        {"name": "Daily", "metric": "cost", "threshold": 0.5, "window": {"type": "calendar", "period": "day"},
         "scope": {"model": "gpt-4o*", "environment": "<prod>"}}
    )  # fmt: skip
    alert = services.alert_create(team_id=team.id, spec=spec, actor="test")[0]
    login(client, team, "viewer")
    words = "Cost ≥ $0.50 this day (UTC), for model <code>gpt-4o*</code> and environment <code>&lt;prod&gt;</code>"
    assert f'<p class="lead">{words}.</p>' in client.get(f"/alerts/{alert.pk}").content.decode()  # no " ."
    assert f'<div class="sub">{words}</div>' in client.get("/alerts").content.decode()


def test_token_alerts_read_with_thousands(client, team, alert):
    login(client, team, "viewer")
    assert "Tokens ≥ 1,000 in the last 60 minutes.</p>" in client.get(f"/alerts/{alert.pk}").content.decode()


def test_the_alert_page_says_when_its_mail_would_reach_nobody(client, team, settings):
    spec = parse_alert(
        {"name": "Mailed", "metric": "cost", "threshold": 5, "window": {"type": "rolling", "minutes": 60},
         "notify": {"emails": ["oncall@example.com"]}}
    )  # fmt: skip
    alert = services.alert_create(team_id=team.id, spec=spec, actor="test")[0]
    login(client, team, "viewer")
    note = "Not emailed: no mail server is configured (EMAIL_URL); written to the log"
    assert note not in client.get(f"/alerts/{alert.pk}").content.decode()  # tests mail to memory: delivered
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    assert f'oncall@example.com<div class="sub">{note}</div>' in client.get(f"/alerts/{alert.pk}").content.decode()
