"""Public links: made through the API, opened without signing in, stopped by a revoke or by time;
tokens stored hashed; the page shows the call, never metadata, routing or deliveries; audited."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import AuditEvent
from delivery.models import Delivery
from privacy.models import PiiPolicy
from tests.factories import TraceFactory
from traces.models import ShareLink

pytestmark = pytest.mark.django_db


@pytest.fixture
def trace(team):
    return TraceFactory(
        team=team,
        trace_id="trc-shared",
        input={"messages": [{"role": "user", "content": "What is the capital of France? mail me at ann@example.com"}]},
        output={"role": "assistant", "content": "Paris is the capital."},
        metadata={"customer": "secret-customer-42"},
        tags=["internal-tag"],
        destinations=["langfuse-prod"],
        routing=[{"destination": "langfuse-prod", "rule": "rule-x", "kept": True, "rate": 1.0, "reason": "matched"}],
    )


def share(api, trace_id, body=None):
    if body is None:
        return api.post(f"/api/v1/traces/{trace_id}/share")
    return api.post(f"/api/v1/traces/{trace_id}/share", body, format="json")


def path_of(url):
    return urlparse(url).path


def test_a_shared_link_opens_without_login_and_stops_when_revoked(api, team, trace):
    Delivery.objects.create(team=team, trace=trace, destination="langfuse-prod", status="delivered")
    r = share(api, "trc-shared")
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"url", "expires_at"}
    expires = timezone.datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert abs((expires - timezone.now()) - timedelta(days=7)) < timedelta(minutes=1)

    anonymous = Client()
    page = anonymous.get(path_of(body["url"]))
    assert page.status_code == 200
    text = page.content.decode()
    for shown in ("What is the capital of France?", "Paris is the capital.", "gpt-4o", "100 in", "50 out", "420 ms"):
        assert shown in text
    for hidden in ("secret-customer-42", "internal-tag", "langfuse-prod", "rule-x", "trc-shared"):
        assert hidden not in text, hidden
    assert page["Referrer-Policy"] == "no-referrer"

    assert api.delete("/api/v1/traces/trc-shared/share").status_code == 204
    assert anonymous.get(path_of(body["url"])).status_code == 404


def test_the_token_is_long_and_stored_hashed(api, trace):
    url = share(api, "trc-shared").json()["url"]
    token = path_of(url).rsplit("/", 1)[1]
    assert len(token) >= 43  # 32 random bytes, URL-safe base64: 256 bits
    link = ShareLink.objects.get()
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(list(ShareLink.objects.values()))


def test_expiry_is_chosen_and_bounded(api, trace):
    r = share(api, "trc-shared", {"expires_in_days": 90})
    assert r.status_code == 201
    for bad in (0, 91, "7", 1.5, True, None):
        bad_r = share(api, "trc-shared", {"expires_in_days": bad})
        assert bad_r.status_code == 400 and bad_r["Content-Type"] == "application/problem+json"
        assert "expires_in_days" in bad_r.json()["errors"]
    assert share(api, "trc-shared", {"other": 1}).status_code == 400
    assert ShareLink.objects.count() == 1


def test_an_expired_link_does_not_open(api, trace):
    url = share(api, "trc-shared", {"expires_in_days": 1}).json()["url"]
    ShareLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(path_of(url)).status_code == 404
    assert Client().get("/share/not-a-token").status_code == 404


def test_one_link_is_revoked_alone_and_live_links_are_listed(api, trace):
    first = share(api, "trc-shared").json()["url"]
    second = share(api, "trc-shared").json()["url"]
    links = api.get("/api/v1/traces/trc-shared/share").json()
    assert len(links) == 2 and set(links[0]) == {"id", "created_at", "created_by", "expires_at"}
    oldest = min(link["id"] for link in links)

    assert api.delete(f"/api/v1/traces/trc-shared/share/{oldest}").status_code == 204
    assert api.delete(f"/api/v1/traces/trc-shared/share/{oldest}").status_code == 404

    assert Client().get(path_of(first)).status_code == 404
    assert Client().get(path_of(second)).status_code == 200
    assert [link["id"] for link in api.get("/api/v1/traces/trc-shared/share").json()] != [oldest]


def test_each_share_and_revoke_is_audited(api, team, trace):
    share(api, "trc-shared")
    api.delete("/api/v1/traces/trc-shared/share")
    actions = list(AuditEvent.objects.filter(team=team).order_by("id").values_list("action", "target"))
    assert actions[-2:] == [("trace.share", "trc-shared"), ("trace.unshare", "trc-shared")]


def test_another_teams_trace_cannot_be_shared(api, other_team):
    TraceFactory(team=other_team, trace_id="theirs")
    assert share(api, "theirs").status_code == 404
    assert api.delete("/api/v1/traces/theirs/share").status_code == 404


def test_the_page_applies_the_teams_pii_policy(api, team, trace):
    PiiPolicy.objects.create(team=team, stored_mode="redact", version=1)
    url = share(api, "trc-shared").json()["url"]
    text = Client().get(path_of(url)).content.decode()
    assert "ann@example.com" not in text
    assert "What is the capital of France?" in text


def test_a_span_of_a_run_shows_the_runs_tree(api, team):
    root = TraceFactory(team=team, trace_id="root", run_id="run-1", kind="agent", name="planner", model="")
    TraceFactory(team=team, trace_id="child", run_id="run-1", parent_id="root", name="ask-llm")
    url = share(api, root.trace_id).json()["url"]
    text = Client().get(path_of(url)).content.decode()
    assert "The run" in text and "planner" in text and "ask-llm" in text


def test_a_json_null_body_is_refused_while_no_body_takes_the_default(api, trace):
    refused = api.post("/api/v1/traces/trc-shared/share", b"null", content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert share(api, "trc-shared").status_code == 201
