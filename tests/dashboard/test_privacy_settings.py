"""/settings/privacy: every role reads the team's PII policy; admins and owners change it (the same
validation as the API, errors next to the field); the "try it" box scans with the saved policy."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from privacy.models import PiiPolicy
from privacy.selectors import compiled_policy

from ..factories import IntegrationFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db

VALID = {
    "stored": "detect",
    "destination-langfuse-cloud": "redact",
    "destination-phoenix-local": "",
    "kinds": ["EMAIL", "SECRET"],
    "pattern-0-name": "EMPLOYEE_ID",
    "pattern-0-regex": "EMP-[0-9]{6}",
    "pattern-1-name": "",
    "pattern-1-regex": "",
}


@pytest.fixture
def integrations(team):
    return [IntegrationFactory(team=team, name="langfuse-cloud"), IntegrationFactory(team=team, name="phoenix-local")]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_policy_and_its_integrations(as_role, role, team, integrations):
    PiiPolicy.objects.create(team=team, stored_mode="redact", destinations={"langfuse-cloud": "hash"}, version=3)
    response = as_role(role).get("/settings/privacy")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'value="redact" checked' in text and "langfuse-cloud" in text and "phoenix-local" in text
    assert '<option value="hash" selected>' in text
    assert ("Save policy" in text) == (role in ("owner", "admin"))


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_saves_the_policy_and_ingest_gets_it_at_once(as_role, role, team, integrations):
    compiled_policy(team.pk)  # this process holds the old ("off") policy
    client = as_role(role)
    response = client.post("/settings/privacy/save", VALID)
    assert response.status_code == 302
    row = PiiPolicy.objects.get(team=team)
    assert (row.stored_mode, row.destinations, row.kinds, row.version) == (
        "detect",
        {"langfuse-cloud": "redact"},
        ["EMAIL", "SECRET"],
        1,
    )
    assert row.custom_patterns == [{"name": "EMPLOYEE_ID", "regex": "EMP-[0-9]{6}"}]
    assert compiled_policy(team.pk, max_age=0).stored == "detect"
    assert AuditEvent.objects.filter(team=team, action="pii_policy.replace").exists()
    page = client.get("/settings/privacy").content.decode()
    assert "applies to every trace ingested from now on" in page and 'value="EMP-[0-9]{6}"' in page


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_a_member_or_viewer_may_not_change_it(as_role, role, team, integrations):
    response = as_role(role).post("/settings/privacy/save", VALID)
    assert response.status_code == 403
    assert not PiiPolicy.objects.filter(team=team).exists()


def test_an_outsider_neither_sees_nor_changes_this_teams_policy(as_role, team, integrations):
    PiiPolicy.objects.create(team=team, stored_mode="hash", version=1)
    client = as_role("outsider")
    assert "langfuse-cloud" not in client.get("/settings/privacy").content.decode()
    client.post("/settings/privacy/save", {"stored": "drop"})
    assert PiiPolicy.objects.get(team=team).stored_mode == "hash"  # the outsider changed their own team's


def test_a_visitor_is_sent_to_log_in(client):
    assert client.get("/settings/privacy")["Location"].startswith("/login")


def test_errors_are_shown_next_to_their_field_and_nothing_changes(as_role, team, integrations):
    bad = {
        **VALID,
        "stored": "mask",
        "pattern-0-regex": "(?=lookahead)",
        "pattern-1-name": "EMAIL",
        "pattern-1-regex": "x+",
    }
    response = as_role("admin").post("/settings/privacy/save", bad)
    assert response.status_code == 400
    text = response.content.decode()
    assert "Unknown mode &#x27;mask&#x27;" in text
    assert 'id="pattern-0-regex_error"' in text and "lookaround" in text
    assert 'id="pattern-1-name_error"' in text and "built-in kind" in text
    assert 'value="(?=lookahead)"' in text  # what was typed is kept
    assert not PiiPolicy.objects.filter(team=team).exists()


def test_a_destination_that_is_not_an_integration_is_ignored(as_role, team, integrations):
    response = as_role("admin").post("/settings/privacy/save", {**VALID, "destination-gone": "redact"})
    assert response.status_code == 302
    assert PiiPolicy.objects.get(team=team).destinations == {"langfuse-cloud": "redact"}


@pytest.mark.parametrize("role", ROLES)
def test_try_it_scans_with_the_saved_policy(as_role, role, team):
    PiiPolicy.objects.create(team=team, custom_patterns=[{"name": "EMPLOYEE_ID", "regex": "EMP-[0-9]{6}"}], version=1)
    text = "Mail ada@example.com about EMP-123456"
    response = as_role(role).post("/settings/privacy/try", {"text": text}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Mail [EMAIL] about [EMPLOYEE_ID]" in body and "ada@example.com" not in body.split("try-redacted")[1]
    assert "<html" not in body  # the htmx partial only


def test_try_it_works_without_javascript_and_refuses_long_text(as_role, team):
    response = as_role("viewer").post("/settings/privacy/try", {"text": "call +49 30 12345678"})
    assert response.status_code == 200 and "call [PHONE]" in response.content.decode()
    assert "<html" in response.content.decode()
    response = as_role("viewer").post("/settings/privacy/try", {"text": "x" * 20_001}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "At most 20,000 characters" in response.content.decode()
