"""The trace page's scores and public links: a member votes thumbs up or down with a comment and
shares or revokes a link; a viewer sees them and may do neither; another team's trace is a 404."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import AuditEvent
from traces.models import Score, ShareLink

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def trace(team):
    return TraceFactory(team=team, trace_id="trc-fb", output={"role": "assistant", "content": "Hi"})


def test_a_member_gives_a_thumbs_down_with_a_comment(as_role, trace, django_capture_on_commit_callbacks):
    client = as_role("member")
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/traces/trc-fb/thumbs", {"value": "down", "comment": "made up a city"}, follow=True)
    assert r.status_code == 200
    score = Score.objects.get()
    assert (score.name, score.value, score.data_type, score.comment, score.source) == (
        "thumbs",
        False,
        "boolean",
        "made up a city",
        "human",
    )
    text = r.content.decode()
    assert "made up a city" in text and "Scores and feedback" in text


def test_a_vote_that_is_neither_up_nor_down_is_refused(as_role, trace):
    r = as_role("member").post("/traces/trc-fb/thumbs", {"value": "sideways"}, follow=True)
    assert "Not saved" in r.content.decode()
    assert not Score.objects.exists()


def test_a_member_shares_and_revokes_from_the_page(as_role, team, trace):
    client = as_role("member")
    r = client.post("/traces/trc-fb/share", {"expires_in_days": "3"}, follow=True)
    text = r.content.decode()
    url = re.search(r"(http://testserver/share/[A-Za-z0-9_-]+)", text).group(1)
    assert Client().get(url.removeprefix("http://testserver")).status_code == 200
    link = ShareLink.objects.get()
    assert f"Link {link.pk}" in text

    r = client.post(f"/traces/trc-fb/share/{link.pk}/revoke", follow=True)
    assert "Link revoked" in r.content.decode()
    assert Client().get(url.removeprefix("http://testserver")).status_code == 404
    assert AuditEvent.objects.filter(team=team, action="trace.unshare").exists()


def test_a_bad_expiry_is_a_message_not_a_link(as_role, trace):
    r = as_role("member").post("/traces/trc-fb/share", {"expires_in_days": "365"}, follow=True)
    assert "Not shared" in r.content.decode()
    assert not ShareLink.objects.exists()


def test_a_viewer_sees_but_may_not_vote_or_share(as_role, trace):
    client = as_role("viewer")
    page = client.get("/traces/trc-fb").content.decode()
    assert "Public links" in page and ">Share<" not in page
    assert client.post("/traces/trc-fb/thumbs", {"value": "up"}).status_code == 403
    assert client.post("/traces/trc-fb/share", {}).status_code == 403
    assert not Score.objects.exists() and not ShareLink.objects.exists()


def test_another_teams_trace_is_a_404(as_role, other_team):
    TraceFactory(team=other_team, trace_id="theirs")
    assert as_role("member").post("/traces/theirs/share", {}).status_code == 404


def test_the_integration_form_takes_score_mappings(as_role):
    from integrations.models import Integration

    from .integrations_setup import webhook_form

    client = as_role("admin")
    bad = client.post("/integrations/new/webhook", webhook_form(config_score_mappings="thumbs"))
    assert bad.status_code == 400 and "config_score_mappings" in bad.context["form"].errors
    bad = client.post("/integrations/new/webhook", webhook_form(config_score_mappings="has space = x"))
    assert bad.status_code == 400 and "config_score_mappings" in bad.context["form"].errors
    assert not Integration.objects.exists()

    client.post("/integrations/new/webhook", webhook_form(config_score_mappings="thumbs = feedback\ninternal ="))
    hook = Integration.objects.get()
    assert hook.config["score_mappings"] == {"thumbs": "feedback", "internal": None}
    page = client.get(f"/integrations/{hook.pk}/edit").content.decode()
    assert "thumbs = feedback" in page and "Score mappings" in page
