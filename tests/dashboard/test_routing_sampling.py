"""/routing/sampling: every role reads the sampling policy; admins and owners change it through the
API's serializer and service; errors next to the field; a stale page says so and keeps the input."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from accounts.models import AuditEvent
from routing import edits, selectors
from routing.models import SamplingPolicy

from .conftest import ROLES

pytestmark = pytest.mark.django_db

VALID = {
    "default_sample_rate": "0.5",
    "rule-0-condition": 'environment == "development"',
    "rule-0-sample_rate": "0.1",
    "rule-1-condition": "",
    "rule-1-sample_rate": "",
}


def _version(team) -> int:
    return selectors.sampling_policy(team.pk).version


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_policy(as_role, role, team):
    edits.sampling_save(
        team_id=team.pk,
        document={"default_sample_rate": 0.25, "rules": [{"condition": "!error", "sample_rate": 0.5}]},
        version=0,
        actor="test",
    )
    text = as_role(role).get("/routing/sampling").content.decode()
    assert 'value="0.25"' in text and 'value="!error"' in text
    manage = role in ("owner", "admin")
    assert ("Save policy" in text) == manage
    assert ('<fieldset class="plain stack" disabled>' in text) == (not manage)


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_saves_the_policy(as_role, role, team):
    client = as_role(role)
    response = client.post("/routing/sampling", {**VALID, "version": 0})
    assert response.status_code == 302
    policy = SamplingPolicy.objects.get(team=team)
    assert (policy.default_sample_rate, policy.version) == (0.5, 1)
    assert policy.rules == [{"condition": 'environment == "development"', "sample_rate": 0.1}]
    assert AuditEvent.objects.filter(team=team, action="routing.sampling.replace").exists()
    assert "Sampling policy saved (version 1)" in client.get("/routing/sampling").content.decode()
    # A cleared row removes its rule.
    post = {"default_sample_rate": "1", "rule-0-condition": "", "rule-0-sample_rate": "", "version": 1}
    assert client.post("/routing/sampling", post).status_code == 302
    assert SamplingPolicy.objects.get(team=team).rules == []


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_a_member_or_viewer_may_not_change_it(as_role, role, team):
    assert as_role(role).post("/routing/sampling", {**VALID, "version": 0}).status_code == 403
    assert not SamplingPolicy.objects.filter(team=team).exists()


def test_an_outsider_changes_only_their_own_teams_policy(as_role, team, other_team):
    assert as_role("outsider").post("/routing/sampling", {**VALID, "version": 0}).status_code == 302
    assert not SamplingPolicy.objects.filter(team=team).exists()
    assert SamplingPolicy.objects.get(team=other_team).default_sample_rate == 0.5


@pytest.mark.parametrize(
    "changes,field,message",
    [
        ({"default_sample_rate": "2"}, "id_default_sample_rate_error", "less than or equal to 1"),
        ({"rule-0-sample_rate": "-1"}, "rule-0-sample_rate_error", "greater than or equal to 0"),
        ({"rule-0-condition": "environment = 1"}, "rule-0-condition_error", "Syntax error at column 13"),
        ({"rule-0-condition": ""}, "rule-0-condition_error", "needs a condition"),
    ],
)
def test_bad_input_is_an_error_next_to_its_field(as_role, team, changes, field, message):
    response = as_role("admin").post("/routing/sampling", {**VALID, **changes, "version": 0})
    assert response.status_code == 400
    text = response.content.decode()
    assert f'id="{field}"' in text and message in text
    assert not SamplingPolicy.objects.filter(team=team).exists()


def test_a_stale_page_says_so_and_keeps_the_input(as_role, team):
    edits.sampling_save(team_id=team.pk, document={"default_sample_rate": 0.9}, version=0, actor="user:bob")
    response = as_role("admin").post("/routing/sampling", {**VALID, "version": 0})
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed by someone else since you opened it" in text and "default 90%" in text
    assert 'value="0.5"' in text and 'value="environment == &quot;development&quot;"' in text
    assert SamplingPolicy.objects.get(team=team).default_sample_rate == 0.9
    assert as_role("admin").post("/routing/sampling", {**VALID, "version": 1}).status_code == 302
    assert SamplingPolicy.objects.get(team=team).default_sample_rate == 0.5


@pytest.mark.parametrize("role", ROLES)
def test_the_page_offers_example_conditions_that_save(as_role, role, team):
    from routing.views.sampling import EXAMPLES

    text = as_role(role).get("/routing/sampling").content.decode()
    assert "Example conditions" in text
    for condition, rate, _ in EXAMPLES:
        assert f'data-example-condition="{escape(condition)}" data-example-rate="{rate}"' in text or role not in (
            "owner",
            "admin",
        )
        assert escape(condition) in text
    assert ("data-example-condition" in text) == (role in ("owner", "admin"))  # "Use" for those who edit
    # Every example is a condition the policy takes, as offered.
    document = {"rules": [{"condition": c, "sample_rate": float(r)} for c, r, _ in EXAMPLES]}
    policy = edits.sampling_save(team_id=team.pk, document=document, version=_version(team), actor="test")
    assert [r["condition"] for r in policy.rules] == [c for c, _, _ in EXAMPLES]
