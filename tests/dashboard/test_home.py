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
    assert (
        'import tracerelay\ntracerelay.init(api_key="YOUR_TRACERELAY_KEY", base_url="http://localhost:8123", '
        'service_name="my-app")</code>' in text
    )
    assert (
        'import { init } from "tracerelay";\ninit({ apiKey: "YOUR_TRACERELAY_KEY", baseUrl: "http://localhost:8123", '
        'serviceName: "my-app" });</code>' in text
    )
    assert ("Create an API key</button>" in text) == (role in ("owner", "admin"))
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
    assert response.status_code == 200 and response["HX-Redirect"] == "/traces"


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


def _step_one(text: str) -> str:
    return text[text.index('id="step-key"') : text.index("Send a trace</h2>")]


def test_a_key_made_on_the_page_ticks_step_one_and_fills_every_snippet(as_role, team):
    from accounts import keys
    from accounts.models import ApiKey

    client = as_role("admin")
    response = client.post("/start/key", {"environment": "production", "name": "laptop"})
    assert response.status_code == 201
    text = response.content.decode()
    key = ApiKey.objects.get(team=team)
    raw = text[text.index('<code id="new-key">') + len('<code id="new-key">') :].split("<", 1)[0]
    assert raw.startswith("tr_prod_") and key.key_hash == keys.digest(raw)  # the real key, not a copy
    step = _step_one(text)
    assert 'class="card step is-done"' in text and "Done: </span>Create an API key" in step
    assert "shown only this once" in step and "Your new production key “laptop”" in step
    assert text.count(raw) == 5  # the key itself, the proxy, Python, TypeScript and curl
    assert "YOUR_TRACERELAY_KEY" not in text
    # shown once: the next visit ticks step 1 (a key exists) but has no key to show
    again = client.get("/").content.decode()
    assert raw not in again and "is-done" in again and "alpha has 1 active key." in again
    assert "YOUR_TRACERELAY_KEY" in again and "Create another key</button>" in again


def test_a_bad_environment_is_a_form_error_and_makes_no_key(as_role, team):
    from accounts.models import ApiKey

    response = as_role("owner").post("/start/key", {"environment": "staging"})
    assert response.status_code == 400
    assert "Select a valid choice." in _step_one(response.content.decode())
    assert not ApiKey.objects.filter(team=team).exists()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_only_admins_and_owners_make_keys_from_the_page(as_role, team, role):
    from accounts.models import ApiKey

    assert as_role(role).post("/start/key", {"environment": "production"}).status_code == 403
    assert not ApiKey.objects.filter(team=team).exists()
