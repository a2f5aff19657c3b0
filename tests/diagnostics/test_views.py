"""/settings/advanced per role: everyone in the team sees debug mode's state; admins and owners turn
it on for a chosen period or off and download the bundle; bad input gets an error by its field."""

from __future__ import annotations

import pytest

from debugmode import state
from debugmode.models import DebugMode
from debugmode.services import debug_mode_enable

from ..dashboard.conftest import ROLES

pytestmark = pytest.mark.django_db

PAGE, SAVE, BUNDLE = "/settings/advanced", "/settings/advanced/debug", "/settings/advanced/bundle"
MANAGERS = ["owner", "admin"]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_state(as_role, role, team):
    debug_mode_enable(team_id=team.pk, duration="4h", actor="user:owner")
    page = as_role(role).get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="debug-state">On' in html and "turned on by user:owner" in html
    can_manage = role in MANAGERS
    assert ("Turn debug mode off" in html) is can_manage
    assert ("Download diagnostic bundle" in html) is can_manage
    assert ("admins and owners switch it" in html) is not can_manage


def test_the_page_says_off_and_offers_the_periods(as_role):
    html = as_role("admin").get(PAGE).content.decode()
    assert 'id="debug-state">Off' in html
    for label in ("15 minutes", "1 hour", "4 hours", "24 hours"):
        assert f">{label}</option>" in html


def test_the_settings_nav_lists_advanced(as_role):
    assert f'href="{PAGE}"' in as_role("viewer").get("/settings/privacy").content.decode()


@pytest.mark.parametrize("role", MANAGERS)
def test_admins_and_owners_turn_it_on_and_off(as_role, role, team, django_capture_on_commit_callbacks):
    client = as_role(role)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(SAVE, {"action": "on", "duration": "15m"}, follow=True)
    assert response.status_code == 200
    assert "Debug mode is on for" in response.content.decode()
    mode = DebugMode.objects.get(team=team)
    assert mode.duration_s == 900 and mode.changed_by.startswith("user:")
    assert state.active(team.pk) is True

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(SAVE, {"action": "off"}, follow=True)
    assert "Debug mode is off" in response.content.decode()
    assert DebugMode.objects.get(team=team).until is None
    assert state.active(team.pk) is False
    assert client.get(BUNDLE)["Content-Type"] == "application/zip"


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_other_roles_may_not_switch_it_or_download(as_role, role, team):
    client = as_role(role)
    assert client.post(SAVE, {"action": "on", "duration": "1h"}).status_code == 403
    assert client.get(BUNDLE).status_code == 403
    assert not DebugMode.objects.filter(team=team).exists()


def test_an_unknown_period_is_an_error_by_its_field(as_role, team):
    response = as_role("owner").post(SAVE, {"action": "on", "duration": "7d"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="debug-duration_error"' in html and "Choose one of 15 minutes, 1 hour, 4 hours, 24 hours." in html
    assert 'aria-invalid="true"' in html
    assert not DebugMode.objects.filter(team=team).exists()


def test_an_unknown_action_is_refused(as_role, team):
    response = as_role("owner").post(SAVE, {"action": "explode"})
    assert response.status_code == 400
    assert "Choose to turn debug mode on or off." in response.content.decode()


def test_a_get_of_the_switch_is_not_allowed(as_role):
    assert as_role("owner").get(SAVE).status_code == 405


def test_signed_out_visitors_go_to_the_login(client):
    for url in (PAGE, BUNDLE):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login")


def test_an_outsider_switches_only_their_own_team(as_role, team, other_team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        as_role("outsider").post(SAVE, {"action": "on", "duration": "1h"})
    assert DebugMode.objects.get(team=other_team).is_on()
    assert not DebugMode.objects.filter(team=team).exists()
    assert 'id="debug-state">Off' in as_role("owner").get(PAGE).content.decode()


def test_an_outsider_gets_a_404_for_a_trace_with_debug_records(as_role, team):
    from debugmode.models import DebugRecord
    from tests.factories import TraceFactory

    trace = TraceFactory(team=team)
    DebugRecord.objects.create(team=team, trace=trace, kind="routing", data={"evaluations": []})
    assert as_role("outsider").get(f"/traces/{trace.trace_id}").status_code == 404
    assert as_role("viewer").get(f"/traces/{trace.trace_id}").status_code == 200
