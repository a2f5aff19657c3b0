"""POST/GET /api/v1/prices/reprice over HTTP: scopes, tenants, the body's checks (each names its
field, problem+json), the 202 and the job's shape, and the schema."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from accounts.services import user_token_issue
from repricing import services
from repricing.models import JobStatus, RepriceJob

pytestmark = pytest.mark.django_db
URL = "/api/v1/prices/reprice"
SINCE = "2026-11-01T00:00:00Z"
UNTIL = "2026-11-02T00:00:00Z"
KEYS = {
    "id",
    "status",
    "since",
    "until",
    "model",
    "redeliver",
    "traces_total",
    "traces_done",
    "traces_changed",
    "deliveries_requeued",
    "cost_before",
    "cost_after",
    "by_model",
    "created_at",
    "finished_at",
    "error",
}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(services, "dispatch", queued.append)
    return queued


def test_it_answers_202_with_a_pending_job(api, team, no_broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(URL, {"since": SINCE, "until": "2026-11-02T02:00:00+02:00", "model": "gpt-4o*"}, format="json")
    assert r.status_code == 202, r.content
    body = r.json()
    assert set(body) == KEYS
    assert body["status"] == "pending" and body["model"] == "gpt-4o*" and body["redeliver"] is False
    assert body["since"] == SINCE and body["until"] == UNTIL
    assert body["traces_total"] is None and body["traces_done"] == 0 and body["finished_at"] is None
    assert no_broker == [body["id"]]
    job = RepriceJob.objects.get(pk=body["id"])
    assert job.team_id == team.id and job.actor.startswith("key:")


def test_the_job_is_read_back_as_it_goes(api, team):
    job_id = api.post(URL, {"since": SINCE, "until": UNTIL, "redeliver": True}, format="json").json()["id"]
    services.job_run(job_id=job_id)
    r = api.get(f"{URL}/{job_id}")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == JobStatus.SUCCEEDED and body["traces_total"] == 0 and body["redeliver"] is True
    assert body["model"] is None and body["finished_at"] and body["error"] is None


def test_other_teams_and_unknown_jobs_are_404(api, other_api):
    job_id = api.post(URL, {"since": SINCE, "until": UNTIL}, format="json").json()["id"]
    for client, path in ((other_api, f"{URL}/{job_id}"), (api, f"{URL}/{job_id + 1000}")):
        r = client.get(path)
        assert r.status_code == 404 and r["Content-Type"] == "application/problem+json"


def test_keys_and_scopes(anon_api, dev_api, ci_api):
    assert anon_api.post(URL, {"since": SINCE, "until": UNTIL}, format="json").status_code == 401
    r = dev_api.post(URL, {"since": SINCE, "until": UNTIL}, format="json")
    assert r.status_code == 403 and r.json()["required_scope"] == "prices:write"
    assert dev_api.get(f"{URL}/1").status_code == 404  # a development key reads (prices:read)
    assert ci_api.get(f"{URL}/1").status_code == 403
    assert not RepriceJob.objects.exists()


def test_a_member_may_read_but_not_start_a_job(team, member, owner):
    clients = {}
    for user in (member, owner):
        _token, raw = user_token_issue(user=user, name="cli")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_X_TEAM=str(team.id))
        clients[user.username] = client
    assert clients["member"].post(URL, {"since": SINCE, "until": UNTIL}, format="json").status_code == 403
    r = clients["owner"].post(URL, {"since": SINCE, "until": UNTIL}, format="json")
    assert r.status_code == 202
    assert RepriceJob.objects.get().actor == "user:owner"
    assert clients["member"].get(f"{URL}/{r.json()['id']}").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"until": UNTIL}, "since"),
        ({"since": SINCE}, "until"),
        ({"since": "yesterday", "until": UNTIL}, "since"),
        ({"since": SINCE, "until": 20261102}, "until"),
        ({"since": SINCE, "until": "2026-13-01T00:00:00Z"}, "until"),
        ({"since": UNTIL, "until": SINCE}, "until"),
        ({"since": SINCE, "until": SINCE}, "until"),
        ({"since": "2025-01-01T00:00:00Z", "until": "2026-03-01T00:00:00Z"}, "until"),  # over 400 days
        ({"since": "2999-01-01T00:00:00Z", "until": "2999-01-02T00:00:00Z"}, "since"),
        ({"since": SINCE, "until": UNTIL, "model": 4}, "model"),
        ({"since": SINCE, "until": UNTIL, "model": "gpt*4o"}, "model"),
        ({"since": SINCE, "until": UNTIL, "model": "*"}, "model"),
        ({"since": SINCE, "until": UNTIL, "model": "x" * 201}, "model"),
        ({"since": SINCE, "until": UNTIL, "model": "gpt\u00014o"}, "model"),
        ({"since": SINCE, "until": UNTIL, "redeliver": "yes"}, "redeliver"),
        ({"since": SINCE, "until": UNTIL, "redeliver": None}, "redeliver"),
        ({"since": SINCE, "until": UNTIL, "colour": "red"}, "colour"),
    ],
)
def test_bad_bodies_name_the_field(api, body, field):
    r = api.post(URL, body, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == "application/problem+json"
    problem = r.json()
    assert field in problem["errors"] and problem["title"] == "Invalid re-pricing job"
    assert not RepriceJob.objects.exists()


@pytest.mark.parametrize(("raw", "kind"), [(b"", "empty-body"), (b"[1]", "validation"), (b"{", "")])
def test_a_body_that_is_no_object_is_refused(api, raw, kind):
    r = api.generic("POST", URL, raw, content_type="application/json")
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"
    if kind:
        assert r.json()["type"].endswith(kind)


def test_a_range_of_400_days_is_taken(api):
    since = datetime(2025, 10, 1, tzinfo=UTC)
    r = api.post(URL, {"since": since.isoformat(), "until": (since + timedelta(days=400)).isoformat()}, format="json")
    assert r.status_code == 202


def test_the_schema_documents_both_operations(schema):
    post = schema["paths"][URL]["post"]
    assert "202" in post["responses"] and "application/json" in post["requestBody"]["content"]
    assert set(post["requestBody"]["content"]["application/json"]["schema"]["properties"]) == {
        "since",
        "until",
        "model",
        "redeliver",
    }
    get = schema["paths"][URL + "/{job_id}"]["get"]
    assert set(get["responses"]["200"]["content"]["application/json"]["schema"]["required"]) == KEYS
