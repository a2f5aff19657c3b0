"""/api/v1/prices: create, list, change, delete; validation naming the field; scopes and roles; audit."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from accounts.services import user_token_issue
from traces.models import TeamPrice
from traces.prices import services

from ..factories import MembershipFactory

pytestmark = pytest.mark.django_db

FINE_TUNE = {"model": "ft:gpt-4o-mini:acme:*", "provider": "openai", "input_per_mtok": "0.30", "output_per_mtok": 1.2}


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    return response.json()


def token_api(team, role: str) -> APIClient:
    user = MembershipFactory(team=team, role=role).user
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {user_token_issue(user=user, name='t')[1]}", HTTP_X_TEAM=str(team.pk)
    )
    return client


def test_it_creates_a_price_with_decimal_strings_out_and_audits_it(api, team):
    response = api.post("/api/v1/prices", FINE_TUNE, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["model"] == "ft:gpt-4o-mini:acme:*" and body["provider"] == "openai"
    assert (body["input_per_mtok"], body["output_per_mtok"]) == ("0.3", "1.2")
    assert body["cached_input_per_mtok"] is None and body["reasoning_per_mtok"] is None
    assert body["effective_from"] is None and body["revision"] == 1
    assert set(body) == {
        "id", "model", "provider", "input_per_mtok", "output_per_mtok", "cached_input_per_mtok",
        "cache_write_per_mtok", "reasoning_per_mtok", "effective_from", "revision", "created_at", "updated_at",
    }  # fmt: skip
    event = AuditEvent.objects.get(team=team, action="price.create")
    assert event.target == "ft:gpt-4o-mini:acme:*" and event.data["input_per_mtok"] == "0.3"


def test_every_field_round_trips(api):
    body = {
        "model": "Acme-LLM",
        "input_per_mtok": "3",
        "output_per_mtok": "15.0000000001",
        "cached_input_per_mtok": 0.3,
        "cache_write_per_mtok": "3.75",
        "reasoning_per_mtok": 0,
        "effective_from": "2026-11-01T00:00:00+01:00",
    }
    out = api.post("/api/v1/prices", body, format="json").json()
    assert out["model"] == "acme-llm"  # names compare without case: stored lowercase
    assert out["provider"] is None
    assert [out[k] for k in services.PRICE_FIELDS] == ["3", "15.0000000001", "0.3", "3.75", "0"]
    assert out["effective_from"] == "2026-10-31T23:00:00+00:00"


def test_it_lists_only_the_teams_prices(api, other_api, team, other_team):
    services.price_create(team_id=other_team.pk, data=services.clean_price({**FINE_TUNE, "model": "x"}), actor="t")
    api.post("/api/v1/prices", FINE_TUNE, format="json")
    assert [p["model"] for p in api.get("/api/v1/prices").json()["data"]] == [FINE_TUNE["model"]]
    assert [p["model"] for p in other_api.get("/api/v1/prices").json()["data"]] == ["x"]


def test_patch_changes_the_fields_given_and_bumps_the_revision(api, other_api, team):
    created = api.post("/api/v1/prices", FINE_TUNE, format="json").json()
    url = f"/api/v1/prices/{created['id']}"

    patched = api.patch(url, {"output_per_mtok": "1.6", "provider": None, "reasoning_per_mtok": "2"}, format="json")

    assert patched.status_code == 200, patched.content
    body = patched.json()
    assert (body["output_per_mtok"], body["provider"], body["reasoning_per_mtok"]) == ("1.6", None, "2")
    assert body["input_per_mtok"] == "0.3" and body["revision"] == 2
    assert body["updated_at"] > created["updated_at"]
    event = AuditEvent.objects.get(team=team, action="price.update")
    assert event.data["changed"]["output_per_mtok"] == {"from": "1.2", "to": "1.6"}
    assert api.patch(url, {"reasoning_per_mtok": None}, format="json").json()["revision"] == 3
    assert other_api.patch(url, {"output_per_mtok": "1"}, format="json").status_code == 404
    assert other_api.delete(url).status_code == 404


def test_delete_removes_it_and_audits(api, team):
    created = api.post("/api/v1/prices", FINE_TUNE, format="json").json()
    assert api.delete(f"/api/v1/prices/{created['id']}").status_code == 204
    assert not TeamPrice.objects.filter(team=team).exists()
    assert AuditEvent.objects.filter(team=team, action="price.delete", target=FINE_TUNE["model"]).exists()
    problem(api.delete(f"/api/v1/prices/{created['id']}"), 404)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**FINE_TUNE, "input_per_mtok": "-1"}, "input_per_mtok"),
        ({**FINE_TUNE, "output_per_mtok": -0.5}, "output_per_mtok"),
        ({**FINE_TUNE, "cached_input_per_mtok": "cheap"}, "cached_input_per_mtok"),
        ({**FINE_TUNE, "cache_write_per_mtok": True}, "cache_write_per_mtok"),
        ({**FINE_TUNE, "reasoning_per_mtok": "1e3"}, "reasoning_per_mtok"),
        ({**FINE_TUNE, "input_per_mtok": "0.00000000001"}, "input_per_mtok"),
        ({**FINE_TUNE, "input_per_mtok": "10000000000"}, "input_per_mtok"),
        ({**FINE_TUNE, "model": "a*b"}, "model"),
        ({**FINE_TUNE, "model": "*"}, "model"),
        ({**FINE_TUNE, "model": "gpt 4o"}, "model"),
        ({**FINE_TUNE, "model": "m" * 201}, "model"),
        ({**FINE_TUNE, "model": 5}, "model"),
        ({**FINE_TUNE, "provider": "open*"}, "provider"),
        ({**FINE_TUNE, "effective_from": "yesterday"}, "effective_from"),
        ({**FINE_TUNE, "colour": "red"}, "colour"),
        ({"model": "m", "input_per_mtok": "1"}, "output_per_mtok"),
        ({"input_per_mtok": "1", "output_per_mtok": "1"}, "model"),
        ({**FINE_TUNE, "model": ""}, "model"),
        ({**FINE_TUNE, "effective_from": ""}, "effective_from"),
        ({**FINE_TUNE, "cached_input_per_mtok": ""}, "cached_input_per_mtok"),
    ],
)
def test_a_bad_price_is_a_400_naming_the_field(api, body, field):
    got = problem(api.post("/api/v1/prices", body, format="json"), 400)
    assert field in got["errors"], got
    assert not TeamPrice.objects.exists()


def test_a_bad_patch_is_answered_before_the_lookup_and_keeps_the_price(api):
    created = api.post("/api/v1/prices", FINE_TUNE, format="json").json()
    assert "model" in problem(api.patch("/api/v1/prices/999999", {"model": "a*b"}, format="json"), 400)["errors"]
    got = problem(api.patch(f"/api/v1/prices/{created['id']}", {"input_per_mtok": None}, format="json"), 400)
    assert "input_per_mtok" in got["errors"]
    problem(api.patch(f"/api/v1/prices/{created['id']}", b"", content_type="application/json"), 400)
    assert TeamPrice.objects.get().revision == 1


def test_the_same_model_provider_and_start_twice_is_a_409(api):
    assert api.post("/api/v1/prices", FINE_TUNE, format="json").status_code == 201
    assert "model" in problem(api.post("/api/v1/prices", FINE_TUNE, format="json"), 409)["errors"]
    later = {**FINE_TUNE, "effective_from": "2026-12-01T00:00:00Z"}
    created = api.post("/api/v1/prices", later, format="json").json()
    problem(api.patch(f"/api/v1/prices/{created['id']}", {"effective_from": None}, format="json"), 409)


def test_reprice_is_never_taken_for_a_price_id(api):
    assert api.patch("/api/v1/prices/reprice", {"model": "x"}, format="json").status_code in (404, 405)


def test_scopes_development_keys_read_ci_keys_nothing(dev_api, ci_api):
    assert dev_api.get("/api/v1/prices").status_code == 200
    assert problem(dev_api.post("/api/v1/prices", FINE_TUNE, format="json"), 403)["required_scope"] == "prices:write"
    problem(ci_api.get("/api/v1/prices"), 403)


def test_members_read_and_admins_write_with_a_user_token(team):
    member, admin = token_api(team, "member"), token_api(team, "admin")
    assert member.get("/api/v1/prices").status_code == 200
    problem(member.post("/api/v1/prices", FINE_TUNE, format="json"), 403)
    assert admin.post("/api/v1/prices", FINE_TUNE, format="json").status_code == 201
