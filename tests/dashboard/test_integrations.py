"""/integrations and /integrations/<id>: every role reads the list (with the last 24 h of
deliveries) and an integration's page (secrets masked); admins and owners test, disable and delete;
members and up replay dead letters; another team's integration is a 404. The form: test_integration_form."""

from __future__ import annotations

from datetime import timedelta

import pytest

from accounts.models import AuditEvent
from delivery.models import Delivery, DeliveryStatus
from integrations.models import Integration
from tests.fakes import FakeWebhookReceiver

from ..factories import IntegrationFactory
from .conftest import ROLES
from .integrations_setup import MANAGERS, NOT_MANAGERS, SECRET, delivery, make_hook

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(team):
    return make_hook(team)


# --- the list ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_list_with_counts(as_role, role, team, hook):
    for status in ["delivered", "delivered", "failed", "dead", "pending", "sending"]:
        delivery(team, hook, status)
    delivery(team, hook, "delivered", age=timedelta(hours=25))  # older than the window
    delivery(team, hook, "pending", resolved=False)  # routed by name, not tried yet
    response = as_role(role).get("/integrations")
    assert response.status_code == 200
    row = response.context["rows"][0]
    assert row["counts"] == {"delivered": 2, "failed": 1, "dead": 1, "pending": 3, "dropped": 0}
    text = response.content.decode()
    assert "orders-hook" in text and SECRET not in text
    assert ('href="/integrations/new"' in text) == (role in MANAGERS)


def test_the_list_is_in_the_top_navigation(as_role):
    assert 'href="/integrations">Integrations</a>' in as_role("viewer").get("/traces").content.decode()


def test_an_outsider_does_not_see_the_teams_integrations(as_role, hook):
    response = as_role("outsider").get("/integrations")
    assert response.status_code == 200 and "orders-hook" not in response.content.decode()


def test_counts_follow_the_platform_alias_routing(team, as_role):
    """A delivery routed to "webhook" (the platform) counts for the integration it resolved to."""
    integration = IntegrationFactory(team=team, name="ops")
    delivery(team, integration, "dead", name="webhook")
    response = as_role("viewer").get(f"/integrations/{integration.pk}")
    assert response.context["counts"]["dead"] == 1
    assert "routed as webhook" in response.content.decode()


# --- one integration -----------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_an_integration_with_secrets_masked(as_role, role, hook):
    response = as_role(role).get(f"/integrations/{hook.pk}")
    assert response.status_code == 200
    text = response.content.decode()
    assert SECRET not in text and "set (****7788)" in text
    assert "X-Team: search" in text and "relay" in text and "customer" in text
    assert (f"/integrations/{hook.pk}/edit" in text) == (role in MANAGERS)
    assert (f"/integrations/{hook.pk}/delete" in text) == (role in MANAGERS)
    assert ("Test connection" in text) == (role in MANAGERS)


def test_another_teams_integration_is_a_404(as_role, other_team):
    theirs = IntegrationFactory(team=other_team)
    client = as_role("owner")
    assert client.get(f"/integrations/{theirs.pk}").status_code == 404
    assert client.get(f"/integrations/{theirs.pk}/edit").status_code == 404
    for action in ["test", "toggle", "delete", "dead-letters/replay"]:
        assert client.post(f"/integrations/{theirs.pk}/{action}").status_code == 404
    assert Integration.objects.filter(pk=theirs.pk, enabled=True).exists()


def test_an_outsider_gets_404_for_every_action(as_role, hook):
    client = as_role("outsider")
    assert client.get(f"/integrations/{hook.pk}").status_code == 404
    for action in ["test", "toggle", "delete", "dead-letters/replay"]:
        assert client.post(f"/integrations/{hook.pk}/{action}").status_code == 404
    assert Integration.objects.filter(pk=hook.pk).exists()


def test_a_visitor_is_sent_to_log_in(client, hook):
    assert client.get("/integrations")["Location"].startswith("/login")
    assert client.post(f"/integrations/{hook.pk}/delete")["Location"].startswith("/login")
    assert Integration.objects.filter(pk=hook.pk).exists()


# --- test connection ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_test_a_saved_integration(as_role, role, team):
    with FakeWebhookReceiver() as fake:
        integration = IntegrationFactory(team=team, config={"url": fake.url + "/hook", "headers": {}})
        response = as_role(role).post(f"/integrations/{integration.pk}/test")
        assert response.status_code == 200 and response.context["check"]["ok"] is True
        assert len(fake.pings) == 1


def test_a_failing_check_says_why(as_role, team):
    integration = IntegrationFactory(team=team, config={"url": "http://127.0.0.1:9/hook", "headers": {}})
    response = as_role("owner").post(f"/integrations/{integration.pk}/test", HTTP_HX_REQUEST="true")
    text = response.content.decode()
    assert text.lstrip().startswith('<div id="check-result"') and "<html" not in text
    assert "Connection failed" in text and response.context["check"]["ok"] is False


@pytest.mark.parametrize("role", NOT_MANAGERS)
def test_members_and_viewers_cannot_test(as_role, role, hook):
    assert as_role(role).post(f"/integrations/{hook.pk}/test").status_code == 403


# --- enable, disable, delete -------------------------------------------------------------------------


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_disable_and_enable(as_role, role, hook):
    client = as_role(role)
    assert client.post(f"/integrations/{hook.pk}/toggle").status_code == 302
    hook.refresh_from_db()
    assert hook.enabled is False
    client.post(f"/integrations/{hook.pk}/toggle")
    hook.refresh_from_db()
    assert hook.enabled is True


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_delete(as_role, role, team, hook):
    response = as_role(role).post(f"/integrations/{hook.pk}/delete")
    assert response.status_code == 302 and response["Location"] == "/integrations"
    assert not Integration.objects.filter(pk=hook.pk).exists()
    assert AuditEvent.objects.filter(team=team, action="integration.delete", target="orders-hook").exists()


@pytest.mark.parametrize("role", NOT_MANAGERS)
def test_members_and_viewers_cannot_disable_or_delete(as_role, role, hook):
    client = as_role(role)
    assert client.post(f"/integrations/{hook.pk}/toggle").status_code == 403
    assert client.post(f"/integrations/{hook.pk}/delete").status_code == 403
    hook.refresh_from_db()
    assert hook.enabled is True


def test_actions_are_posts(as_role, hook):
    client = as_role("owner")
    for action in ["test", "toggle", "delete", "dead-letters/replay"]:
        assert client.get(f"/integrations/{hook.pk}/{action}").status_code == 405


# --- dead letters -------------------------------------------------------------------------------------


def test_dead_letters_newest_first_with_the_reason(as_role, team, hook):
    old = delivery(team, hook, "dead", error="HTTP 500: upstream broke", code=500)
    new = delivery(team, hook, "dead", error="connection refused")
    delivery(team, hook, "delivered")
    response = as_role("viewer").get(f"/integrations/{hook.pk}")
    assert [d.pk for d in response.context["dead"]] == [new.pk, old.pk]
    text = response.content.decode()
    assert "HTTP 500: upstream broke" in text and "connection refused" in text
    assert f"/integrations/{hook.pk}/deliveries/{new.pk}/replay" not in text  # a viewer has no Replay
    member_text = as_role("member").get(f"/integrations/{hook.pk}").content.decode()
    assert f"/integrations/{hook.pk}/deliveries/{new.pk}/replay" in member_text and "Replay all 2" in member_text


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_members_and_up_replay_one(as_role, role, team, hook):
    dead = delivery(team, hook, "dead", error="boom")
    response = as_role(role).post(f"/integrations/{hook.pk}/deliveries/{dead.pk}/replay", follow=True)
    assert response.status_code == 200 and "queued again" in response.content.decode()
    dead.refresh_from_db()
    assert dead.status == DeliveryStatus.PENDING and dead.replay_count == 1
    assert AuditEvent.objects.get(team=team, action="delivery.replay", target=str(dead.pk)).actor.startswith("user:")


def test_a_viewer_cannot_replay(as_role, team, hook):
    dead = delivery(team, hook, "dead")
    assert as_role("viewer").post(f"/integrations/{hook.pk}/deliveries/{dead.pk}/replay").status_code == 403
    assert as_role("viewer").post(f"/integrations/{hook.pk}/dead-letters/replay").status_code == 403
    dead.refresh_from_db()
    assert dead.status == DeliveryStatus.DEAD


def test_another_integrations_delivery_is_a_404(as_role, team, hook):
    other = IntegrationFactory(team=team, name="other")
    dead = delivery(team, other, "dead")
    assert as_role("owner").post(f"/integrations/{hook.pk}/deliveries/{dead.pk}/replay").status_code == 404
    dead.refresh_from_db()
    assert dead.status == DeliveryStatus.DEAD


def test_replaying_a_delivered_one_says_it_is_not_replayable(as_role, team, hook):
    done = delivery(team, hook, "delivered")
    response = as_role("member").post(f"/integrations/{hook.pk}/deliveries/{done.pk}/replay", follow=True)
    assert "Not replayed: only dead, failed or dropped deliveries can be replayed" in response.content.decode()


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_members_and_up_replay_all(as_role, role, team, hook):
    mine = [delivery(team, hook, "dead"), delivery(team, hook, "dead", name="webhook")]
    other = delivery(team, IntegrationFactory(team=team, name="other"), "dead")
    response = as_role(role).post(f"/integrations/{hook.pk}/dead-letters/replay", follow=True)
    assert "2 dead letters queued again" in response.content.decode()
    assert {d.status for d in Delivery.objects.filter(pk__in=[d.pk for d in mine])} == {DeliveryStatus.PENDING}
    other.refresh_from_db()
    assert other.status == DeliveryStatus.DEAD
    event = AuditEvent.objects.get(team=team, action="delivery.replay_dead")
    assert event.data["replayed"] == 2 and event.data["integration"] == "orders-hook"
