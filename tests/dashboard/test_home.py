"""`/`: log-in for a visitor, "send your first trace" for a new team, the latest traces after."""

from __future__ import annotations

import pytest

from accounts.models import Membership

from ..factories import TraceFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_visitor_is_sent_to_log_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login"


@pytest.mark.parametrize("role", ["owner", "admin", "member", "viewer"])
def test_a_new_team_sees_how_to_send_its_first_trace(as_role, role):
    response = as_role(role).get("/", HTTP_HOST="localhost:8123")
    assert response.status_code == 200
    text = response.content.decode()
    assert "Send your first trace" in text
    assert "http://localhost:8123/api/v1/proxy" in text
    assert "curl http://localhost:8123/api/v1/traces" in text
    # the SDKs' two lines, Python and TypeScript side by side, aimed at this server
    assert "import tracerelay\ntracerelay.init(\n" in text and 'base_url="http://localhost:8123",' in text
    assert 'import { init } from "tracerelay";\ninit({\n  apiKey: "YOUR_TRACERELAY_KEY",' in text
    assert 'baseUrl: "http://localhost:8123",' in text
    assert ("Create an API key</a>" in text) == (role in ("owner", "admin"))
    assert ("cannot create keys" in text) == (role in ("member", "viewer"))


def test_the_team_with_traces_sees_its_latest_and_no_other_teams(as_role, team, other_team):
    TraceFactory(team=team, model="gpt-4o-mine")
    TraceFactory(team=other_team, model="claude-theirs")
    text = as_role("viewer").get("/", follow=True).content.decode()  # to the feed
    assert "gpt-4o-mine" in text and "claude-theirs" not in text
    other = as_role("outsider").get("/", follow=True).content.decode()
    assert "claude-theirs" in other and "gpt-4o-mine" not in other


def test_an_unpriced_trace_says_so(as_role, team):
    TraceFactory(team=team, model="mystery-model", unpriced=True, cost=None)
    assert "unpriced" in as_role("member").get("/", follow=True).content.decode()


def test_the_waiting_page_polls_and_reloads_when_the_first_trace_arrives(as_role, team):
    client = as_role("member")
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "first-trace-wait"}
    assert client.get("/", **headers).status_code == 204
    TraceFactory(team=team)
    response = client.get("/", **headers)
    assert response.status_code == 200 and response["HX-Refresh"] == "true"


def test_a_user_in_no_team_is_asked_to_make_one(login):
    user = UserFactory(username="lonely@example.com")
    assert login(user).get("/")["Location"] == "/teams/new"


def test_a_user_makes_a_team_and_owns_it(login):
    user = UserFactory(username="lonely@example.com")
    client = login(user)
    assert client.get("/teams/new").status_code == 200
    response = client.post("/teams/new", {"name": "Skunkworks"})
    assert response["Location"] == "/"
    assert Membership.objects.get(user=user).team.name == "Skunkworks"


def test_a_team_needs_a_name(login):
    client = login(UserFactory(username="lonely@example.com"))
    response = client.post("/teams/new", {"name": ""})
    assert response.status_code == 400 and response.context["form"].errors["name"]


def test_unknown_dashboard_pages_are_an_html_404(as_role):
    response = as_role("owner").get("/no-such-page")
    assert response.status_code == 404 and b"This page does not exist" in response.content


def test_static_assets_are_served_by_us(client):
    for path in (
        "/static/dashboard/app.css",
        "/static/dashboard/app.js",
        "/static/dashboard/vendor/htmx-2.0.11.min.js",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        b"".join(response.streaming_content)


def test_pages_load_no_asset_from_elsewhere(as_role):
    text = as_role("owner").get("/").content.decode()
    assert "https://" not in text.split("<body")[0]
