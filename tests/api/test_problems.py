"""Every API failure is RFC 9457 problem+json with the right status: never HTML, never a 500."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from accounts import keys
from accounts.services import api_key_revoke

from ..factories import PlantFactory, TraceFactory

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def assert_problem(r, status: int) -> dict:
    assert r.status_code == status, r.content[:500]
    assert r["Content-Type"] == PROBLEM
    body = r.json()
    assert body["status"] == status
    assert body["type"].startswith("https://tracerelay.dev/problems/")
    assert body["title"] and body["detail"]
    return body


def raw_post(client, path, data: str | bytes, content_type="application/json"):
    return client.generic("POST", path, data, content_type=content_type)


@pytest.mark.parametrize("path", ["/api/v1/traces", "/api/v1/traces/batch"])
def test_malformed_json_is_a_400(api, path):
    body = assert_problem(raw_post(api, path, '{"model": "gpt-4o",'), 400)
    assert "not valid JSON" in body["detail"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", ""])
def test_a_body_that_is_not_json_is_a_415(api, content_type):
    assert_problem(raw_post(api, "/api/v1/traces", '{"model": "x"}', content_type=content_type), 415)
    assert_problem(raw_post(api, "/api/v1/traces/batch", '{"traces": []}', content_type=content_type), 415)


def test_json_with_a_charset_is_fine(api):
    r = raw_post(api, "/api/v1/traces", '{"model": "x"}', content_type="application/json; charset=utf-8")
    assert r.status_code == 201


@pytest.mark.parametrize(
    ("trace", "field"),
    [
        ({"model": 42}, "model"),
        ({"model": "m", "prompt_tokens": "100"}, "prompt_tokens"),
        ({"model": "m", "tags": "a"}, "tags"),
        ({"model": "m", "metadata": "x"}, "metadata"),
        ({"model": "m", "prompt_tokens": -5}, "prompt_tokens"),
        ({"model": "m", "completion_tokens": -1}, "completion_tokens"),
        ({"model": "m", "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 3}, "total_tokens"),
        ({"model": "m", "status": "exploded"}, "status"),
        ({"prompt_tokens": 1}, "model"),
        ({"model": "m", "timestamp": "31/01/2025"}, "timestamp"),
        ({"model": "m", "input": "a\x00b"}, "input"),  # NUL: one rule for every field (a 400)
        ({"model": "m", "metadata": {"k": "\x00"}}, "metadata.k"),
        ({"model": "m", "user_id": "\x00"}, "user_id"),
    ],
)
def test_bad_fields_are_a_400_naming_the_field(api, trace, field):
    body = assert_problem(api.post("/api/v1/traces", trace, format="json"), 400)
    assert field in body["errors"]
    assert body["detail"].startswith(field)


@pytest.mark.parametrize("body", ["[]", '"x"', "5", "null"])
def test_a_body_that_is_not_an_object_is_a_400(api, body):
    assert_problem(raw_post(api, "/api/v1/traces", body), 400)


@pytest.mark.parametrize("body", ["[]", "{}", '{"traces": {}}', '{"traces": "x"}'])
def test_a_batch_that_is_not_a_list_of_traces_is_a_400(api, body):
    problem = assert_problem(raw_post(api, "/api/v1/traces/batch", body), 400)
    assert "traces" in problem["errors"]


def test_an_oversized_trace_is_a_413(api, settings):
    big = json.dumps({"model": "m", "input": "x" * (settings.TRACE_MAX_BYTES + 10)})
    body = assert_problem(raw_post(api, "/api/v1/traces", big), 413)
    assert str(settings.TRACE_MAX_BYTES) in body["detail"]


def test_an_oversized_item_in_a_batch_is_refused_alone(api, settings):
    settings.TRACE_MAX_BYTES = 2000
    r = api.post(
        "/api/v1/traces/batch", {"traces": [{"model": "m", "input": "x" * 3000}, {"model": "m"}]}, format="json"
    )
    assert r.status_code == 207
    assert [x["status"] for x in r.json()["results"]] == [413, 201]


def test_a_batch_of_more_than_1000_traces_is_a_413(api):
    body = assert_problem(api.post("/api/v1/traces/batch", {"traces": [{"model": "m"}] * 1001}, format="json"), 413)
    assert "1000" in body["detail"]


def test_a_batch_over_10_mib_is_a_413(api, settings):
    size = settings.BATCH_MAX_BYTES + 1
    payload = '{"traces": [{"model": "m", "input": "' + "x" * size + '"}]}'
    body = assert_problem(raw_post(api, "/api/v1/traces/batch", payload), 413)
    assert str(settings.BATCH_MAX_BYTES) in body["detail"]


def test_a_missing_key_is_a_401(anon_api):
    for r in (
        anon_api.get("/api/v1/traces"),
        anon_api.post("/api/v1/traces", {"model": "m"}, format="json"),
        anon_api.get("/plants"),
    ):
        assert_problem(r, 401)
        assert r["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token tr_prod_abc",
        "Bearer tr_prod_short",
        "Bearer not-a-key-at-all",
        "broken checksum",
    ],
)
def test_a_malformed_key_is_a_401(header, django_assert_num_queries):
    if header == "broken checksum":
        raw = keys.generate("production")
        header = "Bearer " + raw[:-1] + ("0" if raw[-1] != "0" else "1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    with django_assert_num_queries(0):  # refused without touching the database
        assert_problem(client.get("/api/v1/traces"), 401)


def test_an_unknown_key_is_a_401():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer " + keys.generate("production"))
    assert_problem(client.get("/api/v1/traces"), 401)


def test_a_revoked_key_is_a_401_at_once(api):
    assert api.get("/api/v1/traces").status_code == 200  # now cached
    api_key_revoke(key=api.key)
    assert_problem(api.get("/api/v1/traces"), 401)
    assert_problem(api.post("/api/v1/traces", {"model": "m"}, format="json"), 401)


def test_team_a_cannot_read_team_b_traces_or_plants(api, other_api):
    theirs = TraceFactory(team=other_api.key.team, trace_id="b-secret", model="secret-model")
    PlantFactory(team=other_api.key.team, name="their-fern")
    assert_problem(api.get(f"/api/v1/traces/{theirs.trace_id}"), 404)
    assert api.get("/api/v1/traces").json()["data"] == []
    assert api.get("/api/v1/traces", {"model": "secret-model"}).json()["data"] == []
    assert api.get("/plants").json() == []


def test_djangos_own_404_and_405_under_the_api_are_problems(api):
    assert_problem(api.get("/api/v1/no-such-thing"), 404)
    assert_problem(api.get("/api/v2/traces"), 404)
    assert_problem(api.delete("/api/v1/traces"), 405)
    assert_problem(api.put("/api/v1/traces/batch", {}, format="json"), 405)
    assert_problem(api.post("/plants", {}, format="json"), 405)


def test_an_internal_error_is_a_problem_too(api, monkeypatch):
    from traces import api as trace_api

    def explode(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(trace_api.selectors, "trace_get", explode)
    api.raise_request_exception = False
    assert_problem(api.get("/api/v1/traces/x"), 500)
