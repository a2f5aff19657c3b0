"""The PII endpoints in the OpenAPI document, and the read-only admin page."""

from __future__ import annotations

import pytest

from privacy.models import PiiPolicy
from tests.factories import UserFactory

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "method", "codes"),
    [
        ("/api/v1/pii/policy", "get", {"200", "401", "403"}),
        ("/api/v1/pii/policy", "put", {"200", "400", "401", "403", "415"}),
        ("/api/v1/pii/scan", "post", {"200", "400", "401", "403", "413", "415"}),
    ],
)
def test_each_operation_documents_its_answers(schema, path, method, codes):
    operation = schema["paths"][path][method]
    assert codes <= set(operation["responses"])
    assert operation["tags"] == ["Privacy"]
    for code in codes - {"200"}:
        assert PROBLEM in operation["responses"][code]["content"]


@pytest.mark.django_db
def test_the_policy_body_is_the_issues_shape(schema):
    body = schema["components"]["schemas"]["PiiPolicyRequest"]["properties"]
    assert set(body) == {"stored", "destinations", "kinds", "custom_patterns"}
    out = schema["components"]["schemas"]["PiiPolicyOut"]["properties"]
    assert {"version", "updated_at", "applies_to"} <= set(out)


@pytest.fixture
def admin_client(client, db):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def test_the_admin_lists_and_shows_policies_read_only(admin_client, team):
    policy = PiiPolicy.objects.create(team=team, stored_mode="redact", destinations={"x": "hash"}, version=3)
    listing = admin_client.get("/admin/privacy/piipolicy/")
    assert listing.status_code == 200
    assert b"redact" in listing.content
    page = admin_client.get(f"/admin/privacy/piipolicy/{policy.pk}/change/")
    assert page.status_code == 200
    assert b'name="stored_mode"' not in page.content  # shown, not editable
    assert admin_client.get("/admin/privacy/piipolicy/add/").status_code == 403
